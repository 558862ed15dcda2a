//! Our emulated tool verdicts against the real parted, fdisk and sgdisk on
//! the same loop devices, over many generated layouts (fixed seed).

mod common;
use common::*;
use serde_json::Value;

/// xorshift64*: small, deterministic, good enough to spread layouts.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Random GPT partitions (first, last) in `lbs` sectors on a disk of `sectors`.
fn layout(rng: &mut Rng, lbs: u64, sectors: u64) -> Vec<(u64, u64)> {
    let first_usable = 2 + 16384 / lbs;
    let last_usable = sectors - first_usable - 1;
    let mib = (1 << 20) / lbs;
    let mut cursor = first_usable + rng.below(mib);
    let mut parts = Vec::new();
    for _ in 0..1 + rng.below(4) {
        let mut start = cursor + rng.below(64);
        match rng.below(3) {
            0 => {}
            1 => start = start.div_ceil(8) * 8,
            _ => start = start.div_ceil(mib) * mib,
        }
        let mut size = 64 + rng.below(4 * mib);
        if rng.below(2) == 0 {
            size = size.div_ceil(8) * 8;
        }
        let end = start + size - 1;
        if end > last_usable {
            break;
        }
        parts.push((start, end));
        cursor = end + 1;
    }
    parts
}

struct RealVerdicts {
    parted_optimal: bool,
    parted_minimal: bool,
    fdisk: bool,
    sgdisk: bool,
}

fn real_verdicts(dev: &str, n: usize, fdisk_out: &str, sgdisk_out: &str) -> RealVerdicts {
    let num = n.to_string();
    let (opt, _) = sh_status("parted", &["-s", dev, "align-check", "opt", &num]);
    let (min, _) = sh_status("parted", &["-s", dev, "align-check", "min", &num]);
    RealVerdicts {
        parted_optimal: opt == 0,
        parted_minimal: min == 0,
        fdisk: !fdisk_out.contains(&format!(
            "Partition {n} does not start on physical sector boundary"
        )),
        sgdisk: !sgdisk_out.contains(&format!("Partition {n} doesn't begin"))
            && !sgdisk_out.contains(&format!("Partition {n} doesn't end")),
    }
}

fn compare(dev: &str, parts: &[(u64, u64)], label: &str) {
    let (_, fdisk_out) = sh_status("fdisk", &["-l", dev]);
    let (_, sgdisk_out) = sh_status("sgdisk", &["-v", dev]);
    let (doc, _) = run_json(&["check", dev]);
    for (i, (first, last)) in parts.iter().enumerate() {
        let n = i + 1;
        let ours: &Value = &partition(&doc, n as u64)["tools"];
        let real = real_verdicts(dev, n, &fdisk_out, &sgdisk_out);
        let ctx = format!("{label} partition {n} ({first}..={last}) of {parts:?}\nfdisk:\n{fdisk_out}\nsgdisk:\n{sgdisk_out}");
        assert_eq!(
            ours["parted_optimal"], real.parted_optimal,
            "parted opt: {ctx}"
        );
        assert_eq!(
            ours["parted_minimal"], real.parted_minimal,
            "parted min: {ctx}"
        );
        assert_eq!(ours["fdisk"], real.fdisk, "fdisk: {ctx}");
        assert_eq!(ours["sgdisk"], real.sgdisk, "sgdisk: {ctx}");
    }
}

fn run_layouts(lbs: u32, disk_bytes: u64, count: usize, seed: u64) {
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let sectors = disk_bytes / u64::from(lbs);
    for round in 0..count {
        let parts = layout(&mut rng, u64::from(lbs), sectors);
        let img = image(dir.path(), &format!("d{round}.img"), disk_bytes);
        let lo = LoopDev::attach(&img, Some(lbs));
        let mut args: Vec<String> = vec!["-a".into(), "1".into()];
        for (i, (f, l)) in parts.iter().enumerate() {
            args.push("-n".into());
            args.push(format!("{}:{f}:{l}", i + 1));
        }
        args.push(lo.dev.clone());
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        sh("sgdisk", &a);
        compare(&lo.dev, &parts, &format!("lbs {lbs} round {round}"));
    }
}

#[test]
fn verdicts_match_on_512_byte_loops() {
    run_layouts(512, 64 << 20, 10, 0x5eed_0001);
}

#[test]
fn verdicts_match_on_4096_byte_loops() {
    run_layouts(4096, 64 << 20, 8, 0x5eed_0002);
}

#[test]
fn verdicts_match_on_a_large_disk() {
    // >= 585937500 sectors: sgdisk insists on 8-sector alignment.
    run_layouts(512, 300 << 30, 3, 0x5eed_0003);
}

/// The first start each real tool picks on an empty disk.
#[test]
fn first_starts_match_the_real_tools() {
    for lbs in [512u32, 4096] {
        let dir = tempfile::tempdir().unwrap();
        // 1 GiB: parted resolves "0%" within ±0.5 % of the disk, which must reach 1 MiB.
        let img = image(dir.path(), "empty.img", 1 << 30);
        let lo = LoopDev::attach(&img, Some(lbs));
        let (doc, _) = run_json(&["check", &lo.dev]);
        let ours = &doc["targets"][0]["first_start_bytes"];
        let start_of = |dev: &str| -> u64 {
            let (_, out) = sh_status("sfdisk", &["--dump", dev]);
            let line = out
                .lines()
                .find(|l| l.contains("start="))
                .unwrap_or_else(|| panic!("{out}"));
            let s = line
                .split("start=")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap()
                .trim();
            s.parse::<u64>().unwrap() * u64::from(lbs)
        };
        sh("sgdisk", &["-n", "1:0:+1M", &lo.dev]);
        assert_eq!(ours["sgdisk"], start_of(&lo.dev), "sgdisk, lbs {lbs}");
        sh("sgdisk", &["-Z", &lo.dev]);
        sfdisk(std::path::Path::new(&lo.dev), "label: gpt\nsize=1M\n");
        assert_eq!(ours["fdisk"], start_of(&lo.dev), "sfdisk, lbs {lbs}");
        sh("sgdisk", &["-Z", &lo.dev]);
        sh(
            "parted",
            &[
                "-s", "-a", "optimal", &lo.dev, "mklabel", "gpt", "mkpart", "p", "0%", "10MiB",
            ],
        );
        assert_eq!(ours["parted"], start_of(&lo.dev), "parted, lbs {lbs}");
    }
}
