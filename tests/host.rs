//! The host under an image file (issue 52), on real loop devices: a host
//! disk with an ext4 or XFS (`-d su=64k,sw=2`) in a partition at sector
//! 63 and another at 1 MiB, a 4 KiB filler file, then a preallocated raw
//! image whose guest partition is at 1 MiB, and a qcow2 image; an image on
//! btrfs is not judged, and says why. Every extent is compared with
//! `filefrag -v` (physical block × filesystem block) plus the host
//! partition's start from sysfs.

mod common;

use common::{require_tool, run, run_json, sfdisk, sh, LoopDev, Mounted};
use serde_json::Value;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// `filefrag -v FILE`: (logical, physical, length) of each extent in
/// bytes, contiguous ones joined, as diskalign collapses them.
fn filefrag(file: &Path) -> Vec<(u64, u64, u64)> {
    let out = sh("filefrag", &["-v", &file.display().to_string()]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // "File size of F is N (B blocks of S bytes)"
    let block: u64 = text
        .split(" blocks of ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no block size in {text}"));
    let mut out: Vec<(u64, u64, u64)> = Vec::new();
    for line in text.lines() {
        // "   0:        0..   16383:   18157568..  18173951:  16384: ..."
        let f: Vec<&str> = line.split(':').map(str::trim).collect();
        if f.len() < 4 || f[0].parse::<u64>().is_err() {
            continue;
        }
        let start = |s: &str| -> u64 { s.split("..").next().unwrap().trim().parse().unwrap() };
        let (l, p, n) = (
            start(f[1]) * block,
            start(f[2]) * block,
            f[3].parse::<u64>().unwrap() * block,
        );
        match out.last_mut() {
            Some(last) if last.0 + last.2 == l && last.1 + last.2 == p => last.2 += n,
            _ => out.push((l, p, n)),
        }
    }
    out
}

/// A sysfs partition's start in bytes.
fn start_of(part: &str) -> u64 {
    let name = part.trim_start_matches("/dev/");
    let s = std::fs::read_to_string(format!("/sys/class/block/{name}/start")).unwrap();
    s.trim().parse::<u64>().unwrap() * 512
}

/// The filler, then a preallocated raw image with a guest partition at
/// 1 MiB, written to the device (fsync) so no extent is delayed.
fn raw_image(dir: &Path) -> std::path::PathBuf {
    let filler = dir.join("filler");
    std::fs::write(&filler, vec![7u8; 4096]).unwrap();
    let img = dir.join("guest.img");
    sh(
        "qemu-img",
        &[
            "create",
            "-q",
            "-f",
            "raw",
            "-o",
            "preallocation=full",
            &img.display().to_string(),
            "24M",
        ],
    );
    sfdisk(&img, "label: dos\nstart=2048, type=83\n");
    sync(&img);
    img
}

fn sync(file: &Path) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(file)
        .unwrap()
        .sync_all()
        .unwrap();
}

fn host_of(doc: &Value) -> &Value {
    &doc["targets"][0]["host"]
}

fn host_findings<'a>(doc: &'a Value, code: &str) -> Vec<&'a Value> {
    doc["targets"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == code)
        .collect()
}

/// The facts equal filefrag's plus the partition's start; the guest
/// partition lands where its extent says.
fn assert_facts(img: &Path, part: &str, doc: &Value) {
    let h = host_of(doc);
    let base = start_of(part);
    assert_eq!(h["device_offset_bytes"], base, "{h}");
    assert_eq!(h["device"], part.trim_start_matches("/dev/"), "{h}");
    let got: Vec<(u64, u64, u64)> = h["extents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let p = e["physical_bytes"].as_u64().unwrap();
            assert_eq!(e["host_bytes"].as_u64().unwrap(), p + base, "{e}");
            (
                e["logical_bytes"].as_u64().unwrap(),
                p,
                e["length_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        filefrag(img),
        "diskalign's extents against filefrag -v"
    );
    let unit = &h["units"][0];
    assert_eq!(unit["what"], "partition 1");
    let file = unit["file_offset_bytes"].as_u64().unwrap();
    let (l, p, _) = got
        .iter()
        .find(|(l, _, n)| *l <= file && file < l + n)
        .unwrap();
    assert_eq!(
        unit["host_offset_bytes"].as_u64().unwrap(),
        base + p + (file - l)
    );
}

/// On a partition at sector 63: aligned in the image, 3584 bytes off on
/// the host, every block straddling; the exit status says so in every
/// form. On 1 MiB: nothing to say, exit 0.
fn judge(img: &Path, part: &str, at_63: bool) {
    let path = img.display().to_string();
    let (doc, code) = run_json(&["check", &path]);
    assert_facts(img, part, &doc);
    let off = host_findings(&doc, "host-misaligned");
    let not_unknown = |text: &str| assert!(!text.contains("real device is unknown"), "{text}");
    let (human, human_code) = run(&["check", &path]);
    not_unknown(&human);
    let (quiet, quiet_code) = run(&["check", "-q", &path]);
    let (csv, csv_code) = run(&["check", "--format", "csv", &path]);
    let prom_file = img.with_extension("prom");
    let (_, prom_code) = run(&[
        "check",
        "--prometheus",
        &prom_file.display().to_string(),
        &path,
    ]);
    let prom = std::fs::read_to_string(&prom_file).unwrap();
    let html_file = img.with_extension("html");
    let (_, html_code) = run(&["check", "--html", &html_file.display().to_string(), &path]);
    let html = std::fs::read_to_string(&html_file).unwrap();
    for c in [human_code, quiet_code, csv_code, prom_code, html_code] {
        assert_eq!(c, code, "every form exits alike");
    }
    if at_63 {
        assert_eq!(off.len(), 1, "{doc}");
        let f = &off[0]["facts"];
        assert_eq!(f["misalignment_bytes"], 3584, "{f}");
        assert_eq!(f["share"], 1.0);
        assert_eq!(f["guest_offset_bytes"], MIB);
        assert_eq!(code, 1);
        assert!(human.contains("host-misaligned"), "{human}");
        assert!(
            quiet.contains("untidy") || quiet.contains("warning"),
            "{quiet}"
        );
        assert!(csv.contains("host-misaligned"), "{csv}");
        assert!(prom.contains("host-misaligned"), "{prom}");
        assert!(html.contains("host-misaligned"), "the HTML page names it");
    } else {
        assert!(off.is_empty(), "{doc}");
        assert!(host_findings(&doc, "host-not-judged").is_empty(), "{doc}");
        assert_eq!(code, 0, "{human}");
    }
}

#[test]
fn an_image_is_judged_where_its_extents_lie_on_the_host_disk() {
    for t in [
        "mkfs.ext4",
        "mkfs.xfs",
        "mkfs.btrfs",
        "filefrag",
        "qemu-img",
    ] {
        require_tool(t);
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("host.img");
    std::fs::File::create(&disk)
        .unwrap()
        .set_len(2000 * MIB)
        .unwrap();
    // p1 at sector 63, p2 at 660 MiB, p3 (btrfs) after; XFS wants
    // 64 MiB of log, so 660 MiB each. Sparse: nothing is written but
    // the filesystems' metadata and the images.
    sfdisk(
        &disk,
        "label: dos\nstart=63, size=1351617\nstart=1351680, size=1351680\nstart=2703360, type=83\n",
    );
    let lo = LoopDev::attach(&disk, None);
    for fs in ["ext4", "xfs"] {
        for (part, at_63) in [(lo.part(1), true), (lo.part(2), false)] {
            match fs {
                // 4 KiB blocks: mke2fs picks 1 KiB for a small filesystem,
                // whose extents are then off 4 KiB on any partition.
                "ext4" => sh("mkfs.ext4", &["-q", "-F", "-b", "4096", &part]),
                _ => sh("mkfs.xfs", &["-q", "-f", "-d", "su=64k,sw=2", &part]),
            };
            let m = Mounted::new(&part);
            let img = raw_image(m.dir.path());
            judge(&img, &part, at_63);
            if fs == "ext4" && at_63 {
                qcow2_on(m.dir.path(), &img, &part);
                probe_lands(&img);
            }
        }
    }
    let part = lo.part(3);
    sh("mkfs.btrfs", &["-q", "-f", &part]);
    let m = Mounted::new(&part);
    let img = raw_image(m.dir.path());
    let (doc, _) = run_json(&["check", &img.display().to_string()]);
    let nj = host_findings(&doc, "host-not-judged");
    assert_eq!(nj.len(), 1, "{doc}");
    let msg = nj[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("btrfs maps extents to its own logical"),
        "{msg}"
    );
    assert!(host_findings(&doc, "host-misaligned").is_empty());
}

/// A qcow2 image of the raw one (its clusters preallocated): the guest
/// partition's start goes through the cluster map to the file, then to
/// the host; the same 3584 bytes off.
fn qcow2_on(dir: &Path, raw: &Path, part: &str) {
    let q = dir.join("guest.qcow2");
    sh(
        "qemu-img",
        &[
            "convert",
            "-q",
            "-O",
            "qcow2",
            "-o",
            "preallocation=full",
            &raw.display().to_string(),
            &q.display().to_string(),
        ],
    );
    sync(&q);
    let (doc, code) = run_json(&["check", &q.display().to_string()]);
    assert_facts(&q, part, &doc);
    let unit = &host_of(&doc)["units"][0];
    assert_ne!(
        unit["file_offset_bytes"], unit["guest_offset_bytes"],
        "through the map: {unit}"
    );
    let off = host_findings(&doc, "host-misaligned");
    assert_eq!(off.len(), 1, "{doc}");
    assert_eq!(off[0]["facts"]["misalignment_bytes"], 3584);
    assert_eq!(code, 1);
}

/// `probe` of a file states where its offsets land on the host disk: the
/// first extent's host byte, 3584 bytes off 4 KiB, in JSON and in words.
fn probe_lands(img: &Path) {
    let path = img.display().to_string();
    let (check, _) = run_json(&["check", &path]);
    let first = &host_of(&check)["extents"][0];
    let quick = [&["probe", path.as_str()], common::QUICK_PROBE].concat();
    let (doc, _) = run_json(&quick);
    let h = &doc["environment"]["host"];
    assert_eq!(h["first_host_bytes"], first["host_bytes"], "{h}");
    assert_eq!(h["misalignment_bytes"], 3584, "{h}");
    assert_eq!(h["uniform"], true, "{h}");
    let (human, _) = run(&quick);
    assert!(
        human.contains(&format!(
            "host: file byte 0 lands at byte {}",
            first["host_bytes"]
        )),
        "{human}"
    );
    assert!(human.contains("3584 bytes off its 4 KiB grain"), "{human}");
}
