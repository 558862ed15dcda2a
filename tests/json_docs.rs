//! docs/json.md stays true to what is serialized: every key of the JSON
//! that `topology`, `check` (tables, stack layers, assembled arrays),
//! `probe` and `compare` (of those probe and check runs) print is
//! documented there, in backticks.

mod common;
use common::md::{self, Member};
use common::*;
use diskalign::check::CheckRun;
use diskalign::schema::Document;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const MIB: u64 = 1 << 20;

fn keys(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.insert(k.clone());
                keys(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
        _ => {}
    }
}

fn md_member(path: &Path, role: u32) {
    md::write(
        path,
        &Member {
            version: "1.2",
            level: 0,
            layout: 0,
            chunk_bytes: 65536,
            raid_disks: 2,
            role,
            data_offset_sectors: 2048,
            data_size_sectors: 16 << 11,
            uuid: [0x5a; 16],
            name: "docs:0",
        },
    );
}

/// The `compare --json` document of two saved runs.
fn compared(a: &Value, b: &Value) -> Value {
    use diskalign::saved::Saved;
    let saved = |v: &Value, name: &str| Saved::parse(&v.to_string(), name).unwrap();
    let c = diskalign::saved::compare(&saved(a, "a.json"), &saved(b, "b.json")).unwrap();
    let stamp = diskalign::report::Stamp {
        host: "docs".into(),
        started: std::time::SystemTime::now(),
    };
    serde_json::from_str(&diskalign::report::compare_json(&c, &stamp)).unwrap()
}

#[test]
fn every_serialized_key_is_in_docs_json_md() {
    let mut seen = BTreeSet::new();
    // Each document's keys by kind, for the other direction (every
    // documented key is in some real document of its kind).
    let mut by_kind: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    let mut add = |kind: &'static str, doc: &Value, seen: &mut BTreeSet<String>| {
        keys(doc, seen);
        keys(doc, by_kind.entry(kind).or_default());
    };
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs");
    for e in std::fs::read_dir(&fixtures).unwrap().flatten() {
        if e.path().is_dir() {
            let (doc, _) = run_json(&["--sysfs-root", e.path().to_str().unwrap(), "topology"]);
            add("topology", &doc, &mut seen);
            // A disk that is not there: an `errors` entry.
            let root = e.path().display().to_string();
            let (doc, _) = run_json(&["--sysfs-root", &root, "topology", "nosuch"]);
            add("topology", &doc, &mut seen);
        }
    }
    // What devices say: the identify fixtures read as a disk's answers.
    add("topology", &identify_document(), &mut seen);
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    // Tables, a GPT with names, LUKS, bcache, ext4 and an md array over two members.
    let gpt = image(dir.path(), "gpt.img", 256 * MIB);
    sh(
        "sgdisk",
        &[
            "-n",
            "1:2048:+64M",
            "-c",
            "1:data",
            "-n",
            "2:0:+64M",
            &p("gpt.img"),
        ],
    );
    let dos = image(dir.path(), "dos.img", 64 * MIB);
    sfdisk(
        &dos,
        "label: dos\nstart=63, size=1985\nstart=2048, type=5\nsize=8192\n",
    );
    let bc = image(dir.path(), "bcache.img", 64 * MIB);
    sh("make-bcache", &["-C", &p("bcache.img")]);
    let fs = image(dir.path(), "ext4.img", 64 * MIB);
    sh(
        "mkfs.ext4",
        &[
            "-q",
            "-F",
            "-E",
            "stride=16,stripe_width=32",
            &p("ext4.img"),
        ],
    );
    let (m0, m1) = (
        image(dir.path(), "m0.img", 20 * MIB),
        image(dir.path(), "m1.img", 20 * MIB),
    );
    md_member(&m0, 0);
    md_member(&m1, 1);
    let luks = image(dir.path(), "luks.img", 32 * MIB);
    luks_format(&luks, &dir.path().join("key"), &["--type", "luks2"]);
    // A DOS extended container off 4 KiB, and a striped LV whose second
    // PV starts 7 sectors off (its legs' facts).
    let ext = image(dir.path(), "ext.img", 64 * MIB);
    sfdisk(
        &ext,
        "label: dos\nstart=2049, size=20000, type=5\nstart=4096, size=8192\n",
    );
    // A FAT32 in a DOS partition (mkfs.fat) whose backup boot sector is
    // zeroed (its `volume`, and `backup_state`), and a GPT inside the
    // second partition: read by no layer format, an `unread` layer with
    // its `signature`.
    let fat = image(dir.path(), "fat.img", 64 * MIB);
    sfdisk(
        &fat,
        "start=2048, size=73728, type=c\nstart=75776, size=8192, type=83\n",
    );
    sh(
        "mkfs.fat",
        &[
            "-F",
            "32",
            "-n",
            "DOCS",
            "--offset",
            "2048",
            &p("fat.img"),
            "36864",
        ],
    );
    sh(
        "dd",
        &[
            "if=/dev/zero",
            &format!("of={}", p("fat.img")),
            "bs=512",
            "seek=2054",
            "count=1",
            "conv=notrunc",
            "status=none",
        ],
    );
    let nested = image(dir.path(), "nested.img", 4 * MIB);
    sh("sgdisk", &["-o", &p("nested.img")]);
    sh(
        "dd",
        &[
            &format!("if={}", nested.display()),
            &format!("of={}", p("fat.img")),
            "bs=512",
            "seek=75776",
            "conv=notrunc",
            "status=none",
        ],
    );
    // An f2fs (its `f2fs` areas), judged as on a card of 4 MiB units.
    let f2 = image(dir.path(), "f2fs.img", 64 * MIB);
    sh("mkfs.f2fs", &["-q", "-f", &p("f2fs.img")]);
    let lv = common::lvm::striped_image(&dir, 2048 + 24 * 2048 + 7);
    // ZFS members: zfs-fuse's raidz label in all four copies, its mirror
    // label in L0 only (the others damaged), and a synthetic pool of
    // version 5000 (tests/zfs.rs drives zfs-fuse itself).
    let zfs_phys = common::zfs::fixture_phys("raidz1-ashift13-v23.label0");
    let zr = common::zfs::image_with(dir.path(), "zr.img", 64 * MIB, &zfs_phys, &[0, 1, 2, 3]);
    let zfs_phys = common::zfs::fixture_phys("mirror-ashift12-v23.label0");
    let zm = common::zfs::image_with(dir.path(), "zm.img", 64 * MIB, &zfs_phys, &[0]);
    let zs = common::zfs::image_with(
        dir.path(),
        "zs.img",
        64 * MIB,
        &common::zfs::synthetic_v5000(),
        &[0, 1, 2, 3],
    );
    // A BlueStore OSD's label (ceph-osd's, tests/fixtures/bluestore; made
    // afresh in tests/bluestore.rs) judged on a 16 KiB physical block: its
    // `bluestore` object and a finding's `grain_source`.
    let bs = image(dir.path(), "bluestore.img", 16 * MIB);
    let label =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bluestore/osd0-alloc4096.label");
    std::os::unix::fs::FileExt::write_all_at(
        &std::fs::OpenOptions::new().write(true).open(&bs).unwrap(),
        &std::fs::read(label).unwrap(),
        0,
    )
    .unwrap();
    // A live disk (the kernel's own values): a loop device over a copy.
    let live = dir.path().join("live.img");
    std::fs::copy(&dos, &live).unwrap();
    let l = LoopDev::attach(&live, None);
    let dev = std::path::PathBuf::from(&l.dev);
    let mut checks = Vec::new();
    for (targets, extra) in [
        (vec![&gpt], vec!["--topology", "pbs=4096,opt=33553920"]),
        (vec![&dos, &fat], vec![]),
        (vec![&bc, &fs, &luks], vec!["--topology", "pbs=4096"]),
        (vec![&m0, &m1], vec![]),
        (vec![&m0], vec![]),
        (vec![&dos, &ext], vec!["--topology", "pbs=4096"]),
        (vec![&lv], vec![]),
        (vec![&f2], vec!["--topology", "erase=4M"]),
        (vec![&zr, &zm, &zs], vec![]),
        (vec![&bs], vec!["--topology", "pbs=16384"]),
        // Stripe hints (64 KiB, 128 KiB) that miss the disk's (128, 256).
        (
            vec![&fs],
            vec!["--topology", "pbs=4096,min=131072,opt=262144"],
        ),
        (vec![&dev], vec![]),
    ] {
        let mut args: Vec<String> = vec!["check".into()];
        args.extend(targets.iter().map(|t| t.display().to_string()));
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push("/nonexistent".into()); // an `errors` entry
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (doc, _) = run_json(&a);
        // Read back through its one type (see documents_read_back_as_written).
        round_trip::<Document<CheckRun>>(&doc, &mut seen);
        add("check", &doc, &mut seen);
        checks.push(doc);
    }
    // An image container (a qcow2 overlay over a DOS image, declared
    // raw): `container` with its backing chain; and its plan, which
    // writes no script (`script_refused`).
    let base = image(dir.path(), "base.img", 64 * MIB);
    sfdisk(&base, "label: dos\nstart=63, size=40000\n");
    let overlay = dir.path().join("overlay.qcow2");
    sh(
        "qemu-img",
        &[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            &p("base.img"),
            "-F",
            "raw",
            overlay.to_str().unwrap(),
        ],
    );
    let (doc, _) = run_json(&["check", overlay.to_str().unwrap()]);
    round_trip::<Document<CheckRun>>(&doc, &mut seen);
    add("check", &doc, &mut seen);
    let (planned, _) = run_json(&["plan", overlay.to_str().unwrap()]);
    assert!(
        planned.to_string().contains("script_refused"),
        "{planned:#}"
    );
    add("plan", &planned, &mut seen);
    // An image on tmpfs: not judged on the host, and why (`not_judged`).
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let on_tmpfs = image(shm.path(), "tmpfs.img", 4 * MIB);
    let (doc, _) = run_json(&["check", on_tmpfs.to_str().unwrap()]);
    assert!(doc.to_string().contains("host-not-judged"), "{doc:#}");
    round_trip::<Document<CheckRun>>(&doc, &mut seen);
    add("check", &doc, &mut seen);
    // Many paths, one disk: the multipath fixture's map with its `paths`,
    // and a path named, with its `multipath-path` facts.
    let mpath = fixtures.join("multipath").display().to_string();
    let (doc, _) = run_json(&["--sysfs-root", &mpath, "check", "dm-0", "sdb"]);
    assert!(doc.to_string().contains("multipath-path"), "{doc:#}");
    round_trip::<Document<CheckRun>>(&doc, &mut seen);
    add("check", &doc, &mut seen);
    // What the disk declares, judged: images given the identify fixtures'
    // answers as their disk's (a start off NPWG, a LUKS2 sector of 512,
    // a namespace in 512-byte blocks with a 4096-byte format).
    let declared = declared_check(dir.path());
    round_trip::<Document<CheckRun>>(&declared, &mut seen);
    add("check", &declared, &mut seen);
    // A probe of a filled file, the smallest grid.
    let file = dir.path().join("probe.img");
    filled_file(&file, 16 << 20, 1);
    let (doc, _) = run_json(&[
        "probe",
        file.to_str().unwrap(),
        "--bs",
        "4k",
        "--offsets",
        "0,512",
        "--runtime",
        "50ms",
        "--warmup",
        "10ms",
        "--rounds",
        "2",
        "--qd",
        "4",
    ]);
    add("probe", &doc, &mut seen);
    // Two targets: `targets` and `versus`.
    let copy = dir.path().join("copy.img");
    filled_file(&copy, 16 << 20, 1);
    let (two, _) = run_json(&[
        "probe",
        file.to_str().unwrap(),
        copy.to_str().unwrap(),
        "--bs",
        "4k",
        "--offsets",
        "0,512",
        "--runtime",
        "50ms",
        "--warmup",
        "10ms",
        "--rounds",
        "2",
    ]);
    add("probe", &two, &mut seen);
    // The erase-unit search on the same file, a few short rounds:
    // `erase_unit` (its verdict whatever the file's timing says).
    let (erase, _) = run_json(&[
        "probe",
        "--erase-unit",
        file.to_str().unwrap(),
        "--runtime",
        "20ms",
        "--warmup",
        "5ms",
        "--rounds",
        "3",
    ]);
    add("probe", &erase, &mut seen);
    // That probe's run made to say it bracketed 16 KiB on the ZFS mirror
    // member (synthetic evidence, real reading): `measured_by`.
    let mut measured = doc.clone();
    measured["target"]["path"] = zm.display().to_string().into();
    measured["inference"]["confidence"] = "bracketed".into();
    measured["inference"]["effective_unit_bytes"] = 16384.into();
    let run = dir.path().join("measured.json");
    std::fs::write(&run, measured.to_string()).unwrap();
    let (evidenced, _) = run_json(&[
        "check",
        zm.to_str().unwrap(),
        "--probe",
        run.to_str().unwrap(),
    ]);
    assert!(
        evidenced.to_string().contains("measured_by"),
        "{evidenced:#}"
    );
    round_trip::<Document<CheckRun>>(&evidenced, &mut seen);
    add("check", &evidenced, &mut seen);
    drop(l);
    // plan: a layout with a move, a resize, a refusal, a shrink, and --new.
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "plan.img", 64 << 20);
    sfdisk(
        &img,
        "label: gpt\nstart=2049, size=20000\nstart=40960, size=20001\n",
    );
    let (planned, _) = run_json(&["plan", img.to_str().unwrap()]);
    add("plan", &planned, &mut seen);
    // sgdisk's default layout: an empty partition's end comes down over
    // zeros (a table step's zero_tail).
    let sg = image(dir.path(), "sgdisk.img", 64 << 20);
    sh(
        "sgdisk",
        &["-o", "-n1:0:+20M", "-n2:0:0", sg.to_str().unwrap()],
    );
    let (planned, _) = run_json(&["plan", sg.to_str().unwrap()]);
    assert!(planned.to_string().contains("zero_tail"), "{planned:#}");
    add("plan", &planned, &mut seen);
    let full = image(dir.path(), "full.img", 8 << 20);
    sfdisk(&full, "label: dos\nstart=63\n");
    let (planned, _) = run_json(&["plan", full.to_str().unwrap()]);
    add("plan", &planned, &mut seen);
    // An ext4 filling the disk from 63 (made in place with mke2fs's
    // offset): the plan shrinks it first.
    let shrink = image(dir.path(), "shrink.img", 16 << 20);
    sfdisk(&shrink, "label: dos\nstart=63\n");
    sh(
        "mkfs.ext4",
        &[
            "-q",
            "-F",
            "-E",
            "offset=32256",
            shrink.to_str().unwrap(),
            "16000k",
        ],
    );
    let (planned, _) = run_json(&["plan", shrink.to_str().unwrap()]);
    assert_eq!(
        planned["targets"][0]["steps"][1]["step"], "shrink",
        "{planned:#}"
    );
    add("plan", &planned, &mut seen);
    // A FAT32 at sector 63 whose boot sectors record it (mkfs.fat -h):
    // its move step rewrites them (`hidden_sectors`).
    let fat = image(dir.path(), "fat.img", 64 << 20);
    sfdisk(&fat, "label: dos\nstart=63, size=81920, type=c\n");
    sh(
        "mkfs.fat",
        &[
            "-F",
            "32",
            "-h",
            "63",
            "--offset",
            "63",
            fat.to_str().unwrap(),
            "40960",
        ],
    );
    let (planned, _) = run_json(&["plan", fat.to_str().unwrap()]);
    assert!(
        planned["targets"][0]["steps"][1]["hidden_sectors"].is_object(),
        "{planned:#}"
    );
    add("plan", &planned, &mut seen);
    // A GPT whose primary header is damaged: the plan repairs it.
    let damaged = image(dir.path(), "damaged.img", 16 << 20);
    sh("sgdisk", &["-n", "1:2048:+4M", damaged.to_str().unwrap()]);
    std::fs::write(&damaged, {
        let mut b = std::fs::read(&damaged).unwrap();
        b[520..528].copy_from_slice(b"damaged!");
        b
    })
    .unwrap();
    let (planned, _) = run_json(&["plan", damaged.to_str().unwrap()]);
    assert_eq!(
        planned["targets"][0]["steps"][1]["step"], "repair-gpt",
        "{planned:#}"
    );
    add("plan", &planned, &mut seen);
    let new = image(dir.path(), "new.img", 64 << 20);
    let (planned, _) = run_json(&["plan", "--new", new.to_str().unwrap(), "--sizes", "8M,rest"]);
    add("plan", &planned, &mut seen);
    // A striped LV over the disk's two PVs holding an ext4 with the wrong
    // stripe hints: what is assembled across them, said once, and the
    // disk it is part of.
    let other = tempfile::tempdir().unwrap();
    let lv2 = common::lvm::striped_image(&other, 53248);
    let leg0 = format!("offset={},stride=4,stripe_width=8", 2048 * 512 + (1 << 20));
    mkfs_ext4(&lv2, 4096, &leg0, Some("8M"));
    let (planned, _) = run_json(&["plan", lv2.to_str().unwrap()]);
    assert!(planned["targets"][0]["part_of"].is_array(), "{planned:#}");
    add("plan", &planned, &mut seen);
    // compare: the probe run with itself, and two of the check runs.
    for (a, b) in [(&doc, &doc), (&checks[0], &checks[1])] {
        add("compare", &compared(a, b), &mut seen);
    }
    // One image checked, its table made again (another PTUUID), checked
    // again: `different_disk`.
    let again = image(dir.path(), "again.img", 64 << 20);
    sfdisk(
        &again,
        "label: dos
start=2048, size=8192
",
    );
    let (first, _) = run_json(&["check", again.to_str().unwrap()]);
    sfdisk(
        &again,
        "label: dos
start=2048, size=8192
",
    );
    let (second, _) = run_json(&["check", again.to_str().unwrap()]);
    let relabelled = compared(&first, &second);
    assert!(
        relabelled.to_string().contains("different_disk"),
        "{relabelled:#}"
    );
    add("compare", &relabelled, &mut seen);
    let watches = watched();
    for doc in &watches {
        add("watch", doc, &mut seen);
    }
    add("compare", &compared(&watches[0], &watches[1]), &mut seen);
    every_documented_key_is_written(&by_kind);

    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json.md"))
        .unwrap();
    let missing: Vec<&String> = seen
        .iter()
        .filter(|k| !docs.contains(&format!("`{k}`")) && !docs.contains(&format!("\"{k}\"")))
        .collect();
    assert!(
        missing.is_empty(),
        "keys serialized but not in docs/json.md: {missing:?}"
    );
    assert!(
        seen.len() > 100,
        "only {} keys seen: the inputs lost their layers?",
        seen.len()
    );
}

/// The keys docs/json.md documents for each document, by the kind its
/// `## \`KIND --json\`` section names (the text before the first section
/// documents every kind): the quoted keys of its JSON examples and the
/// backticked names in the first column of its tables. A quoted name
/// there (`"backup"`) is a value, not a key. The prose lists (topology's
/// DISK, plan's `--new` document) mix keys and values and are not read.
fn documented(docs: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let (mut kind, mut in_json) = (String::from("*"), false);
    for line in docs.lines() {
        if let Some(h) = line.strip_prefix("## `") {
            kind = h.split_whitespace().next().unwrap_or_default().to_string();
        } else if line.starts_with("```") {
            in_json = line == "```json";
        } else if in_json {
            out.entry(kind.clone()).or_default().extend(json_keys(line));
        } else if let Some(first) = line.strip_prefix('|').and_then(|r| r.split('|').next()) {
            let names = first.split('`').skip(1).step_by(2);
            let keys = names.filter(|n| !n.starts_with('"') && !n.is_empty());
            out.entry(kind.clone())
                .or_default()
                .extend(keys.map(str::to_string));
        }
    }
    out
}

/// The `"key":` names of one line of a JSON example.
fn json_keys(line: &str) -> Vec<String> {
    let line = line.split("//").next().unwrap_or_default();
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find('"') {
        let Some(len) = rest[start + 1..].find('"') else {
            break;
        };
        let name = &rest[start + 1..start + 1 + len];
        rest = &rest[start + len + 2..];
        if rest.trim_start().starts_with(':') {
            out.push(name.to_string());
        }
    }
    out
}

/// A topology document of two disks whose `device_says` is read from the
/// identify fixtures (tests/fixtures/identify): the seed's SATA drive
/// behind a USB bridge (IDENTIFY, READ CAPACITY(16), both VPD pages) and an
/// NVMe namespace with NPWG and NOWS. No device on the test machine
/// answers these commands; the VM tests read real ones.
fn identify_document() -> Value {
    use diskalign::iolimits::Topology;
    use diskalign::topology::Answers;
    use diskalign::topology::{Disk, Survey};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/identify");
    let bytes = |n: &str| std::fs::read(dir.join(n)).unwrap();
    let seed = Answers {
        ata: Some(Ok(bytes("ata-identify-512n.bin"))),
        read_capacity: Some(Ok(bytes("read-capacity16-bridge.bin"))),
        vpd_b0: Some(bytes("vpd-b0-bridge.bin")),
        vpd_83: Some(bytes("vpd-83-naa5.bin")),
        usb: true,
        ..Answers::default()
    };
    let nvme = Answers {
        nvme: Some(Ok(bytes("nvme-id-ns-optperf.bin"))),
        ..Answers::default()
    };
    let disks = [
        ("sda", seed, [512, 4096, 4096, 33553920]),
        ("nvme0n1", nvme, [4096, 16384, 16384, 131072]),
    ]
    .into_iter()
    .map(|(name, answers, [lbs, pbs, min, opt])| {
        let topology = Topology {
            logical_block_size: lbs,
            physical_block_size: pbs,
            minimum_io_size: min,
            optimal_io_size: opt,
            ..Topology::plain(lbs)
        };
        Disk {
            name: name.into(),
            topology,
            declared: Some(diskalign::topology::read_declared(&answers, &topology).unwrap()),
            ..Disk::default()
        }
    })
    .collect();
    let survey = Survey {
        disks,
        errors: vec![],
    };
    let stamp = diskalign::report::Stamp {
        host: "docs".into(),
        started: std::time::SystemTime::now(),
    };
    serde_json::from_str(&diskalign::report::topology_json(&survey, &stamp)).unwrap()
}

/// A check document of three real images (made by sfdisk and
/// cryptsetup), each judged as the disk whose identify answers are a
/// fixture of tests/fixtures/identify (synthetic bytes): the findings that
/// only what a device declares gives.
fn declared_check(dir: &Path) -> Value {
    use diskalign::findings::{Code, FailOn};
    use diskalign::topology::Answers;
    use diskalign::topology::Disk;
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/identify");
    let says = |name: &str| {
        let a = Answers {
            nvme: Some(Ok(std::fs::read(fixtures.join(name)).unwrap())),
            ..Answers::default()
        };
        diskalign::topology::read_declared(&a, &diskalign::iolimits::Topology::plain(512)).unwrap()
    };
    let part = image(dir, "npwg.img", 16 * MIB);
    sfdisk(&part, "label: dos\nstart=2056, size=8192\n");
    let luks = image(dir, "luks512.img", 32 * MIB);
    luks_format(
        &luks,
        &dir.join("key512"),
        &["--type", "luks2", "--sector-size", "512"],
    );
    let plain = image(dir, "plain.img", 16 * MIB);
    let paths = vec![part.clone(), luks.clone(), plain.clone()];
    let mut i = diskalign::inspect::inspect(&paths, &Default::default());
    for (t, fixture) in i.targets.iter_mut().zip([
        "nvme-id-ns-optperf.bin",
        "nvme-id-ns-optperf.bin",
        "nvme-id-ns-plain.bin",
    ]) {
        t.disk = Some(Disk {
            name: "nvme0n1".into(),
            device: t.path.clone(),
            declared: Some(says(fixture)),
            ..Disk::default()
        });
    }
    let run = diskalign::check::judge(i, FailOn::default());
    let codes: Vec<Code> = run
        .targets
        .iter()
        .flat_map(|t| {
            let parts = t.partitions.iter().flat_map(|p| p.findings.iter());
            let layers = t
                .stack
                .iter()
                .flat_map(|l| l.walk())
                .flat_map(|l| l.findings.iter());
            t.findings.iter().chain(parts).chain(layers)
        })
        .map(|f| f.code)
        .collect();
    for want in [
        Code::StartNotPreferredWrite,
        Code::LuksSectorBelowDeclared,
        Code::NvmeFormat4kAvailable,
    ] {
        assert!(codes.contains(&want), "{want} not in {codes:?}");
    }
    let stamp = diskalign::report::Stamp {
        host: "docs".into(),
        started: std::time::SystemTime::now(),
    };
    serde_json::from_str(&diskalign::report::check_json(&run, &stamp)).unwrap()
}

/// Documented keys no document in the test holds, each with why.
const DOCUMENTED_NOT_WRITTEN: &[(&str, &str, &str)] = &[
    (
        "check",
        "lv.segments[].thin_pool",
        "an LVM thin pool: lvcreate cannot make one without device-mapper; tests/thin.rs (vgcfgrestore, thin_restore) and the VM scenario 31 check it",
    ),
    (
        "check",
        "lv.segments[].thin",
        "a thin LV: as lv.segments[].thin_pool",
    ),
    (
        "check",
        "lv.pool_chunk_bytes",
        "a thin pool or thin LV: as lv.segments[].thin_pool",
    ),
    (
        "check",
        "holder",
        "a live dm or md device activated over the target: only the VM tests (tests/vm) set one up",
    ),
    (
        "check",
        "kernel_value",
        "the kernel disagreeing with diskalign (a node's block size set since, an alignment_offset of its own): not made on demand",
    ),
    (
        "check",
        "zone_size_bytes",
        "a zoned disk with a partition table read from it: only the VM tests (tests/vm, scenario 22) set one up",
    ),
    (
        "check",
        "units_judged",
        "a host-misaligned finding: an image on a host partition off 4 KiB, made on loop devices by tests/host.rs",
    ),
    (
        "check",
        "units_misaligned",
        "a host-misaligned finding: an image on a host partition off 4 KiB, made on loop devices by tests/host.rs",
    ),
    (
        "probe",
        "not_judged",
        "a probed file on a filesystem without device offsets (btrfs, tmpfs): the probe here reads an ext4 file",
    ),
    // A penalty needs a device that is really slower off its unit; the
    // file probed here has none to find on every machine.
    ("probe", "worst_offset", "a penalty"),
    ("probe", "offsets", "a penalty"),
    ("probe", "slower_pct", "a penalty"),
    ("probe", "ci95_pct", "a penalty"),
    ("probe", "not_aligned_to", "a penalty with a bracketed unit"),
    ("probe", "pays", "a unit the fit names: inference.patterns is empty without one"),
    ("probe", "ci_pct", "a unit the fit names: inference.patterns is empty without one"),
    ("probe", "reason", "a focus: pacing.focus is empty while no unit is pointed at"),
    // The watch documents here play a recording over a sysfs fixture:
    // nothing of their disks is read, and a table not read plans nothing.
    // tests/blocktrace watches a live loop disk and holds both.
    ("watch", "read_before_bytes", "a live watch"),
    ("watch", "next", "a live watch of a disk whose plan has work"),
];

/// The other direction of `every_serialized_key_is_in_docs_json_md`:
/// every key docs/json.md documents for a document is in some real
/// document of that kind, so the docs name no key the types lost or
/// never had; the few no test input makes are listed with why.
fn every_documented_key_is_written(by_kind: &BTreeMap<&str, BTreeSet<String>>) {
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json.md"))
        .unwrap();
    let documented = documented(&docs);
    assert!(
        ["*", "check", "topology", "probe", "plan", "compare", "watch"]
            .iter()
            .all(|k| documented.get(*k).is_some_and(|s| !s.is_empty())),
        "docs/json.md lost a section: {:?}",
        documented.keys().collect::<Vec<_>>()
    );
    let mut unwritten = Vec::new();
    for (kind, names) in &documented {
        let kinds: Vec<&str> = match kind.as_str() {
            "*" => by_kind.keys().copied().collect(),
            k => vec![k],
        };
        for k in kinds {
            let written = &by_kind[k];
            for n in names.iter().filter(|n| !written.contains(*n)) {
                let listed = DOCUMENTED_NOT_WRITTEN
                    .iter()
                    .any(|(lk, ln, _)| *lk == k && ln == n);
                if !listed {
                    unwritten.push(format!("{k}: {n}"));
                }
            }
        }
    }
    assert!(
        unwritten.is_empty(),
        "keys docs/json.md documents that no document of the test holds: {unwritten:?}"
    );
}

/// Removes `names` from every object in `v`.
fn strip(v: &mut Value, names: &[&str]) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !names.contains(&k.as_str()));
            m.values_mut().for_each(|x| strip(x, names));
        }
        Value::Array(a) => a.iter_mut().for_each(|x| strip(x, names)),
        _ => {}
    }
}

/// `doc` read back through `T`, the one type that writes it, and written
/// again: the same JSON, so the type reads every key it writes and loses
/// nothing on the way. Its keys are added to `seen`.
fn round_trip<T>(doc: &Value, seen: &mut BTreeSet<String>)
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let text = serde_json::to_string_pretty(doc).unwrap();
    let read: T = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{e}: the document does not read back:\n{text}"));
    let again = serde_json::to_value(&read).unwrap();
    assert_eq!(&again, doc, "written again, the document differs:\n{text}");
    keys(doc, seen);
}

/// Every document that is read back (topology, check, probe, compare), made
/// by the real commands, through its one type (`schema::Document<Body>`,
/// written and read by the same code): each reads back as written, and
/// every key it holds is documented.
#[test]
fn documents_read_back_as_written() {
    use diskalign::compare::Comparison;
    use diskalign::probe::ProbeRun;
    use diskalign::topology::TopologyDocument;
    let mut seen = BTreeSet::new();
    // topology: every fixture tree, and a live loop device (ioctls read).
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs");
    for e in std::fs::read_dir(&fixtures).unwrap().flatten() {
        if e.path().is_dir() {
            let (doc, _) = run_json(&["--sysfs-root", e.path().to_str().unwrap(), "topology"]);
            round_trip::<TopologyDocument>(&doc, &mut seen);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "live.img", 32 * MIB);
    sfdisk(&img, "label: gpt\nstart=2048, size=8192\nstart=12345\n");
    let l = LoopDev::attach(&img, Some(4096));
    let (live, _) = run_json(&["topology", &l.dev, "/nonexistent"]);
    assert!(live["disks"][0]["ioctl"].is_object(), "{live:#}");
    round_trip::<TopologyDocument>(&live, &mut seen);
    // compare: two check runs of the image, and a probe run with itself.
    let (a, _) = run_json(&["check", img.to_str().unwrap()]);
    let (b, _) = run_json(&["check", img.to_str().unwrap(), "--topology", "pbs=4096"]);
    round_trip::<Document<CheckRun>>(&a, &mut seen);
    round_trip::<Document<CheckRun>>(&b, &mut seen);
    round_trip::<Document<Comparison>>(&compared(&a, &b), &mut seen);
    let file = dir.path().join("probe.img");
    filled_file(&file, 16 << 20, 1);
    let (probe, _) = run_json(&[
        "probe",
        file.to_str().unwrap(),
        "--bs",
        "4k",
        "--offsets",
        "0,512",
        "--runtime",
        "50ms",
        "--warmup",
        "10ms",
        "--rounds",
        "2",
    ]);
    round_trip::<Document<Comparison>>(&compared(&probe, &probe), &mut seen);
    // probe: that run, one round (its contrasts' intervals are null), two
    // targets.
    round_trip::<Document<ProbeRun>>(&probe, &mut seen);
    // Another version's method reads back as it was written.
    let mut other = probe.clone();
    other["inference"]["method"] = "another method".into();
    round_trip::<Document<ProbeRun>>(&other, &mut seen);
    let copy = dir.path().join("copy.img");
    filled_file(&copy, 16 << 20, 1);
    let quick = |extra: &[&str]| {
        let mut args = vec!["probe", "--bs", "4k", "--offsets", "0,512"];
        args.extend(["--runtime", "50ms", "--warmup", "10ms"]);
        args.extend(extra);
        run_json(&args).0
    };
    let one = quick(&[file.to_str().unwrap(), "--rounds", "1"]);
    assert!(one["contrasts"][0]["ci95"][1].is_null(), "{one:#}");
    round_trip::<Document<ProbeRun>>(&one, &mut seen);
    // `report` and `compare` read it too (its nulls are no interval).
    round_trip::<Document<Comparison>>(&compared(&probe, &one), &mut seen);
    let two = quick(&[
        file.to_str().unwrap(),
        copy.to_str().unwrap(),
        "--rounds",
        "2",
    ]);
    assert_eq!(two["targets"].as_array().map(Vec::len), Some(2), "{two:#}");
    round_trip::<Document<ProbeRun>>(&two, &mut seen);
    // watch: the synthetic recordings played over the ao-3584 and zoned-hm trees.
    let watches = watched();
    for doc in &watches {
        round_trip::<Document<diskalign::watch::WatchRun>>(doc, &mut seen);
    }
    round_trip::<Document<Comparison>>(&compared(&watches[0], &watches[1]), &mut seen);
    drop(l);
    // A document made before the keys added to schema 1 since still reads.
    let older = |doc: &Value, added: &[&str]| {
        let mut doc = doc.clone();
        strip(&mut doc, &[&["host", "started_at"], added].concat());
        doc
    };
    // What devices say (identify data) reads back as written, and a
    // topology document from before it still reads.
    let says = identify_document();
    round_trip::<TopologyDocument>(&says, &mut seen);
    let old = older(&says, &["device_says", "device_says_note"]);
    serde_json::from_value::<TopologyDocument>(old.clone())
        .unwrap_or_else(|e| panic!("{e}: an older topology document does not read:\n{old:#}"));
    let added_to_probe = [
        "out_of_time",
        "zoomed",
        "zoom",
        "unit_fit",
        "max_time",
        "round_numbers",
        "retries",
        "broken_rounds",
        "outliers",
        "min_rounds",
        "max_runtime",
        "min_completions",
        "reference_block_size",
        "reference_target",
        "not_aligned_to",
        "undecided",
        "advice",
        "noise",
        "started_unix",
        "elapsed_s",
        "usb_bridge",
        "loop_direct_io",
        "loop_backing_file",
        "loop_backing_fs",
    ];
    for doc in [&probe, &one, &two] {
        let old = older(doc, &added_to_probe);
        serde_json::from_value::<Document<ProbeRun>>(old.clone())
            .unwrap_or_else(|e| panic!("{e}: an older probe document does not read:\n{old:#}"));
    }
    let added_to_check = [
        "summary",
        "subject",
        "same_cause_as",
        "inherits_from",
        "status",
        "assembled",
        "ptuuid",
        "partuuid",
        "serial",
        "wwn",
        "model",
        "portable",
    ];
    for doc in [&a, &b] {
        let old = older(doc, &added_to_check);
        serde_json::from_value::<Document<CheckRun>>(old.clone())
            .unwrap_or_else(|e| panic!("{e}: an older check document does not read:\n{old:#}"));
    }

    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json.md"))
        .unwrap();
    let missing: Vec<&String> = seen
        .iter()
        .filter(|k| !docs.contains(&format!("`{k}`")) && !docs.contains(&format!("\"{k}\"")))
        .collect();
    assert!(missing.is_empty(), "keys not in docs/json.md: {missing:?}");
}

/// `watch` documents made by the real command, playing the synthetic
/// recordings of tests/fixtures/watch (made up by make.py there, not
/// traced): ao-3584.json over the ao-3584 fixture tree, with a target
/// that is not there (an `errors` entry), `--unit`, and a COMMAND; and
/// zoned-hm.json over the zoned-hm tree (writes across zone boundaries).
fn watched() -> Vec<Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let runs: [(&str, &[&str]); 3] = [
        ("ao-3584", &["sdb", "nosuch"]),
        ("ao-3584", &["sdb1", "--unit", "64k", "--", "true"]),
        ("zoned-hm", &["sdb"]),
    ];
    runs.iter()
        .map(|(name, extra)| {
            let tree = root.join("sysfs").join(name).display().to_string();
            let rec = root
                .join(format!("watch/{name}.json"))
                .display()
                .to_string();
            let base = [
                "--sysfs-root",
                tree.as_str(),
                "watch",
                "--replay",
                rec.as_str(),
            ];
            // --format json, since `--json` after `--` would be COMMAND's.
            let (out, code) = run(&[&base[..], &["--format", "json"], extra].concat());
            let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
            assert!(code & 1 == 1, "{doc:#}");
            doc
        })
        .collect()
}

/// Every object of `v` that has `key`, wherever it sits.
fn objects_with<'v>(v: &'v Value, key: &str, out: &mut Vec<&'v Value>) {
    match v {
        Value::Object(m) => {
            if m.contains_key(key) {
                out.push(v);
            }
            m.values().for_each(|x| objects_with(x, key, out));
        }
        Value::Array(a) => a.iter().for_each(|x| objects_with(x, key, out)),
        _ => {}
    }
}

/// `end_bytes` has one meaning, the last byte, wherever it is written
/// (partitions, the CSV); one past it is `end_exclusive_bytes` in a
/// finding's facts. A DOS table at 63 whose ends are off 4 KiB, one
/// partition past the disk's end, and a GPT entry outside its usable area.
#[test]
fn end_bytes_is_the_last_byte_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let dos = image(dir.path(), "dos.img", 64 * MIB);
    sfdisk(
        &dos,
        "label: dos\nstart=63, size=20417\nstart=20480, size=40961\n",
    );
    // Partition 2 ends past the image once it is cut short.
    let short = dir.path().join("short.img");
    std::fs::copy(&dos, &short).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&short)
        .unwrap()
        .set_len(32 * MIB)
        .unwrap();
    let gpt = image(dir.path(), "gpt.img", 64 * MIB);
    sh(
        "sgdisk",
        &["-a", "1", "-n", "1:2048:+20481", gpt.to_str().unwrap()],
    );
    let mut ends = 0;
    for img in [&dos, &short, &gpt] {
        let (doc, _) = run_json(&["check", img.to_str().unwrap(), "--topology", "pbs=4096"]);
        let mut with_end = Vec::new();
        objects_with(&doc, "end_bytes", &mut with_end);
        assert!(!with_end.is_empty(), "{doc:#}");
        for o in with_end {
            let (start, size, end) = (&o["start_bytes"], &o["size_bytes"], &o["end_bytes"]);
            let (s, z, e) = (start.as_u64(), size.as_u64(), end.as_u64());
            assert!(
                s.is_some() && z.is_some(),
                "an end_bytes without its partition: {o:#}"
            );
            assert_eq!(
                e,
                Some(s.unwrap() + z.unwrap() - 1),
                "not the last byte: {o:#}"
            );
        }
        for p in doc["targets"][0]["partitions"].as_array().unwrap() {
            for f in p["findings"].as_array().unwrap() {
                let facts = &f["facts"];
                assert!(facts.get("end_bytes").is_none(), "{f:#}");
                if let Some(x) = facts.get("end_exclusive_bytes") {
                    assert_eq!(x.as_u64(), p["end_bytes"].as_u64().map(|e| e + 1), "{f:#}");
                    ends += 1;
                }
            }
        }
        let mut facts = Vec::new();
        objects_with(&doc, "facts", &mut facts);
        for f in facts {
            assert!(f["facts"].get("end_bytes").is_none(), "{f:#}");
        }
        // The CSV's end_bytes is the JSON's.
        let (csv, _) = run(&[
            "check",
            img.to_str().unwrap(),
            "--format",
            "csv",
            "-o",
            "end_bytes",
        ]);
        let rows: Vec<&str> = csv.lines().skip(1).filter(|l| !l.is_empty()).collect();
        for (row, p) in rows
            .iter()
            .zip(doc["targets"][0]["partitions"].as_array().unwrap())
        {
            assert_eq!(row.to_string(), p["end_bytes"].to_string());
        }
    }
    assert!(
        ends >= 3,
        "end-not-4k and partition-outside-disk carry end_exclusive_bytes"
    );
}
