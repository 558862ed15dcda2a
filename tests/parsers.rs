//! Bad input never panics: random bytes, flipped bytes and truncations of
//! real tables, and mutations with a re-fixed header CRC so the deeper GPT
//! checks (entry counts, LBAs) are reached too.

mod common;
use common::*;
use diskalign::layout::read_table;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn fix_header_crc(b: &mut [u8], at: usize) {
    if b.len() < at + 92 {
        return;
    }
    let size =
        (u32::from_le_bytes(b[at + 12..at + 16].try_into().unwrap()) as usize).clamp(92, 512);
    b[at + 16..at + 20].fill(0);
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&b[at..at + size]);
    b[at + 16..at + 20].copy_from_slice(&crc.to_le_bytes());
}

fn exercise(bytes: &[u8]) {
    for lbs in [512, 4096] {
        for known in [false, true] {
            let _ = read_table(bytes, lbs, known);
        }
    }
}

fn real_images() -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    let gpt = image(dir.path(), "g.img", 1 << 20);
    sh(
        "sgdisk",
        &["-n", "1:40:+100", "-n", "2:0:+200", gpt.to_str().unwrap()],
    );
    let dos = image(dir.path(), "m.img", 4 << 20);
    sfdisk(&dos, "label: dos\nstart=2048, size=1024, type=83\nstart=4096, type=5\nsize=512, type=83\nsize=512, type=83\n");
    vec![std::fs::read(gpt).unwrap(), std::fs::read(dos).unwrap()]
}

#[test]
fn random_bytes() {
    let mut rng = Rng(0x1234_5678);
    for len in [0usize, 1, 100, 511, 512, 513, 4096, 8192, 65536] {
        for _ in 0..20 {
            let b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            exercise(&b);
        }
    }
}

#[test]
fn mutated_real_tables() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for base in real_images() {
        for round in 0..1500 {
            let mut b = base.clone();
            // Mostly the first 64 KiB (MBR, GPT header and entries), else
            // anywhere (EBRs, the backup GPT).
            for _ in 0..1 + rng.next() % 8 {
                let span = if rng.next() % 2 == 0 {
                    65536
                } else {
                    b.len() as u64
                };
                let at = (rng.next() % span) as usize;
                b[at] = rng.next() as u8;
            }
            if round % 2 == 0 {
                // Keep the header CRC valid so the checks behind it run.
                fix_header_crc(&mut b, 512);
            }
            if round % 5 == 0 {
                b.truncate((rng.next() % b.len() as u64) as usize);
            }
            exercise(&b);
            if round % 10 == 0 {
                check_whole(&b);
            }
        }
    }
}

/// The whole in-process check (rules, tool emulation) on an image.
fn check_whole(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.img");
    std::fs::write(&p, bytes).unwrap();
    let mut opts = diskalign::check::CheckOptions::default();
    let _ = diskalign::check::check(&p, &opts);
    opts.topology = Some(
        "lbs=512,pbs=4096,min=65536,opt=196608,ao=3584,discard=8192"
            .parse()
            .unwrap(),
    );
    let _ = diskalign::check::check(&p, &opts);
}

#[test]
fn hostile_gpt_fields() {
    let base = &real_images()[0];
    // entries LBA, entry count, entry size, my LBA, usable range: extreme values.
    let fields: [(usize, usize); 6] = [(72, 8), (80, 4), (84, 4), (24, 8), (40, 8), (48, 8)];
    let values = [
        0u64,
        1,
        2,
        127,
        128,
        129,
        u32::MAX as u64,
        u64::MAX,
        u64::MAX / 512,
        1 << 40,
    ];
    for (off, len) in fields {
        for v in values {
            let mut b = base.clone();
            b[512 + off..512 + off + len].copy_from_slice(&v.to_le_bytes()[..len]);
            fix_header_crc(&mut b, 512);
            exercise(&b);
            check_whole(&b);
        }
    }
}

/// Every spelled enum says what its JSON says.
#[test]
fn enums_spell_themselves_as_their_serde_name() {
    use clap::ValueEnum;
    use diskalign::probe::Preset;
    use diskalign::probe::{Pattern, ENGINES};
    fn same<T: serde::Serialize + std::fmt::Display>(v: &T) {
        let json = serde_json::to_value(v).unwrap();
        assert_eq!(json.as_str(), Some(v.to_string().as_str()));
        assert_ne!(v.to_string(), "?");
    }
    Preset::value_variants().iter().for_each(same);
    ENGINES.iter().for_each(|d| same(&d.kind));
    Pattern::value_variants().iter().for_each(same);
    use diskalign::topology::Transport::*;
    for t in [
        Nvme, Sata, Scsi, UsbUas, UsbStorage, Usb, Virtio, Mmc, Loop, Dm, Md, Zram, Nbd, Xen,
        Unknown,
    ] {
        same(&t);
    }
    use diskalign::stack::LayerKind;
    for k in [
        LayerKind::LvmPv,
        LayerKind::MdMember,
        LayerKind::MdArray,
        LayerKind::LvmLv,
    ] {
        same(&k);
    }
    same(&diskalign::findings::Severity::Warning);
    same(&diskalign::layout::PartKind::Extended);
    same(&diskalign::check::TopologySource::ImageDefault);
    same(&diskalign::report::Format::Csv);
    same(&diskalign::probe::DioRule::Statx);
    same(&diskalign::probe::DioRule::LogicalBlockSize);
    use diskalign::probe::Confidence;
    for c in [
        Confidence::Bracketed,
        Confidence::Likely,
        Confidence::LowerBound,
        Confidence::NoDifference,
        Confidence::Inconclusive,
        Confidence::Inconsistent,
        Confidence::Untested,
    ] {
        same(&c);
    }
}

/// PTUUID and PARTUUID as libblkid spells them: `blkid -p` on the loop
/// device and its partition nodes, for images made by sgdisk and sfdisk
/// (GPT, and DOS with logical partitions), gives the strings our reader
/// does. Fleets join on these (/dev/disk/by-partuuid).
#[test]
fn table_and_partition_ids_match_blkid() {
    require_tool("blkid");
    let dir = tempfile::tempdir().unwrap();
    let gpt = image(dir.path(), "g.img", 4 << 20);
    sh(
        "sgdisk",
        &["-n", "1:2048:+100", "-n", "2:0:+200", gpt.to_str().unwrap()],
    );
    let dos = image(dir.path(), "m.img", 4 << 20);
    sfdisk(&dos, "label: dos\nlabel-id: 0x1234abcd\nstart=2048, size=1024, type=83\nstart=4096, type=5\nsize=512, type=83\nsize=512, type=83\n");
    let blkid = |tag: &str, dev: &str| {
        let out = sh("blkid", &["-p", "-o", "value", "-s", tag, dev]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    for img in [&gpt, &dos] {
        let table = read_table(&std::fs::read(img).unwrap()[..], 512, false).unwrap();
        let l = LoopDev::attach(img, None);
        assert_eq!(table.id.as_deref(), Some(blkid("PTUUID", &l.dev).as_str()));
        assert!(table.partitions.len() >= 2);
        for p in &table.partitions {
            let want = blkid("PART_ENTRY_UUID", &l.part(p.number));
            assert_eq!(
                p.uuid.as_deref(),
                Some(want.as_str()),
                "{} #{}",
                img.display(),
                p.number
            );
        }
    }
}
