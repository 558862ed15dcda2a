//! The whole-stack check on metadata written by the real tools: LVM
//! (pvcreate/vgcreate/lvcreate without device-mapper), md superblocks
//! (`mdadm --examine` must accept them), LUKS1/LUKS2 (cryptsetup), ext4,
//! XFS and btrfs (mkfs.*), and damaged metadata that must never panic.

mod common;

use common::lvm::{pvs_pe_start, striped_image};
use common::md::{self, member};
use common::*;
use serde_json::Value;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// Every finding code anywhere in the document (targets, partitions, stack, assembled).
fn all_codes(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    fn visit(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::Array(fs)) = m.get("findings") {
                    out.extend(
                        fs.iter()
                            .filter_map(|f| f["code"].as_str().map(String::from)),
                    );
                }
                m.values().for_each(|x| visit(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| visit(x, out)),
            _ => {}
        }
    }
    visit(v, &mut out);
    out
}

/// All findings with `code`, as (message) strings.
/// Every finding with `code` anywhere in `v`.
fn findings(v: &Value, code: &str) -> Vec<Value> {
    let mut out = Vec::new();
    fn visit(v: &Value, code: &str, out: &mut Vec<Value>) {
        match v {
            Value::Object(m) => {
                if m.get("code").and_then(|c| c.as_str()) == Some(code) {
                    out.push(v.clone());
                }
                m.values().for_each(|x| visit(x, code, out));
            }
            Value::Array(a) => a.iter().for_each(|x| visit(x, code, out)),
            _ => {}
        }
    }
    visit(v, code, &mut out);
    out
}

fn messages(v: &Value, code: &str) -> Vec<String> {
    let mut out = Vec::new();
    fn visit(v: &Value, code: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if m.get("code").and_then(|c| c.as_str()) == Some(code) {
                    out.push(m["message"].as_str().unwrap_or_default().to_string());
                }
                m.values().for_each(|x| visit(x, code, out));
            }
            Value::Array(a) => a.iter().for_each(|x| visit(x, code, out)),
            _ => {}
        }
    }
    visit(v, code, &mut out);
    out
}

/// The first layer of `kind` anywhere in the document.
fn layer<'a>(v: &'a Value, kind: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => {
            if m.get("kind").and_then(|k| k.as_str()) == Some(kind) && m.contains_key("below") {
                return Some(v);
            }
            m.values().find_map(|x| layer(x, kind))
        }
        Value::Array(a) => a.iter().find_map(|x| layer(x, kind)),
        _ => None,
    }
}

fn check_json(targets: &[&Path], extra: &[&str]) -> (Value, i32) {
    let mut args: Vec<String> = vec!["check".into()];
    args.extend(targets.iter().map(|p| p.display().to_string()));
    args.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    run_json(&a)
}

#[test]
fn striped_lv_with_a_leg_1536_bytes_off_is_found_with_its_factor() {
    let dir = TempDir::new().unwrap();
    // 53251 sectors = 27264512 bytes = 1536 past a 4 KiB boundary.
    let img = striped_image(&dir, 53251);
    let (doc, code) = check_json(&[&img], &[]);
    assert_eq!(code, 1);
    let msgs = messages(&doc, "lvm-stripe-misaligned");
    assert_eq!(msgs.len(), 1, "{doc:#}");
    assert!(
        msgs[0].contains("each 8 KiB stripe write touches 3 × 4 KiB units instead of 2: 1.5×"),
        "{}",
        msgs[0]
    );
    // The same numbers as facts, and what the finding is about.
    let f = &findings(&doc, "lvm-stripe-misaligned")[0];
    assert_eq!(f["facts"]["amplification"], 1.5, "{f:#}");
    assert_eq!(f["facts"]["units_touched"], 3.0);
    assert_eq!(f["facts"]["units_ideal"], 2);
    assert_eq!(f["facts"]["grain_bytes"], 4096);
    assert_eq!(f["facts"]["chunk_bytes"], 8192);
    assert_eq!(f["facts"]["legs"][1]["misalignment_bytes"], 1536);
    assert!(f["subject"]["target"].is_null(), "assembled: {f:#}");
    assert!(f["subject"]["layer"]
        .as_str()
        .unwrap()
        .ends_with("LV vg0/lv0"));
    // The PV on partition 2 starts on its grid inside the partition: the
    // cause is the partition's start, said once there; the PV inherits it.
    let p2 = findings(&doc["targets"][0]["partitions"], "start-not-4k");
    assert_eq!(p2.len(), 1, "{doc:#}");
    assert_eq!(p2[0]["facts"]["misalignment_bytes"], 1536);
    assert_eq!(p2[0]["subject"]["partition"], 2);
    assert_eq!(p2[0]["subject"]["target"], img.to_str().unwrap());
    assert!(
        findings(&doc["targets"][0]["stack"], "layer-start-not-4k").is_empty(),
        "{doc:#}"
    );
    let root2 = doc["targets"][0]["stack"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "partition 2")
        .unwrap();
    let pv = layer(root2, "lvm-pv").unwrap();
    assert_eq!(pv["status"], "inherits", "{pv:#}");
    assert_eq!(pv["aligned"], false);
    assert_eq!(pv["inherits_from"], "partition 2");
    assert_eq!(pv["offset_bytes"].as_u64().unwrap() + (1 << 20), 28313088);
    // The legs sit at partition start + pe_start + extent, in absolute bytes.
    let lv = layer(&doc, "lvm-lv").unwrap();
    let legs: Vec<u64> = lv["children"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "lvm-leg")
        .map(|c| c["offset_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(legs, vec![2048 * 512 + (1 << 20), 53251 * 512 + (1 << 20)]);
    assert_eq!(lv["exposes"]["minimum_io_size"], 8192);
    assert_eq!(lv["exposes"]["optimal_io_size"], 16384);
    // The leg on partition 2 inherits that partition's start too.
    let leg2 = lv["children"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["offset_bytes"] == 53251 * 512 + (1 << 20))
        .unwrap();
    assert_eq!(leg2["status"], "inherits", "{leg2:#}");
    assert_eq!(
        leg2["inherits_from"],
        format!("{}: partition 2", img.display())
    );
    let (human, _) = run(&["check", img.to_str().unwrap()]);
    assert!(
        human.contains("assembled from the targets:") && human.contains("LV vg0/lv0"),
        "{human}"
    );
}

#[test]
fn striped_lv_on_aligned_partitions_is_clean() {
    let dir = TempDir::new().unwrap();
    let img = striped_image(&dir, 53248);
    let (doc, code) = check_json(&[&img], &[]);
    let codes = all_codes(&doc);
    assert!(
        !codes
            .iter()
            .any(|c| c.starts_with("lvm-") || c.starts_with("layer-")),
        "{codes:?}"
    );
    assert_eq!(code, 0, "{doc:#}");
    let vg = layer(&doc, "lvm-vg").unwrap();
    assert_eq!(vg["vg"]["extent_size_bytes"], 1 << 20);
    assert_eq!(
        vg["children"][0]["lv"]["segments"][0]["stripe_size_bytes"],
        8192
    );
}

#[test]
fn pvcreate_data_alignment_variants() {
    let dir = TempDir::new().unwrap();
    // (pvcreate options, expected pe_start, finding expected with opt = 192 KiB)
    let cases: [(&[&str], u64, Option<&str>); 3] = [
        (&[], 1 << 20, Some("layer-start-not-optimal")),
        (&["--dataalignment", "192k"], 6 * 196608, None),
        (
            &["--dataalignmentoffset", "7s"],
            (1 << 20) + 3584,
            Some("layer-start-misaligned"),
        ),
    ];
    for (i, (opts, pe_start, finding)) in cases.iter().enumerate() {
        let img = image(dir.path(), &format!("pv{i}.img"), 16 << 20);
        {
            let l = LoopDev::attach(&img, None);
            let mut a = opts.to_vec();
            a.push(&l.dev);
            lvm("pvcreate", &l.dev, &a);
            assert_eq!(pvs_pe_start(&l.dev, &l.dev), *pe_start, "{opts:?}");
        }
        let topo = "--topology=pbs=4096,min=65536,opt=196608";
        let (doc, _) = check_json(&[&img], &[topo]);
        let pv = layer(&doc, "lvm-pv").expect("a PV");
        assert_eq!(pv["pv"]["pe_start_bytes"], *pe_start, "{opts:?}");
        let codes = common::codes(pv);
        match finding {
            Some(c) => assert!(codes.iter().any(|x| x == c), "{opts:?}: {codes:?}"),
            None => assert!(
                pv["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|f| f["severity"] == "info"),
                "{opts:?}: {codes:?}"
            ),
        }
    }
}

#[test]
fn a_vg_over_two_images_is_assembled_or_names_the_missing_pv() {
    let dir = TempDir::new().unwrap();
    let a = image(dir.path(), "a.img", 16 << 20);
    let b = image(dir.path(), "b.img", 16 << 20);
    {
        let (la, lb) = (LoopDev::attach(&a, None), LoopDev::attach(&b, None));
        let prefix = "/dev/loop";
        lvm("pvcreate", prefix, &[&la.dev, &lb.dev]);
        lvm("vgcreate", prefix, &["-s", "1M", "vgx", &la.dev, &lb.dev]);
        lvm(
            "lvcreate",
            prefix,
            &[
                "--driverloaded",
                "n",
                "-an",
                "--zero",
                "n",
                "-l",
                "20",
                "-n",
                "lin",
                "vgx",
            ],
        );
    }
    let (doc, _) = check_json(&[&a, &b], &[]);
    let vg = layer(&doc, "lvm-vg").unwrap();
    assert!(
        vg["vg"]["pvs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["found_on"].is_string()),
        "{vg:#}"
    );
    assert!(!all_codes(&doc).contains(&"lvm-pv-missing".to_string()));
    // A 20-extent linear LV over two 15-extent PVs has two segments.
    assert_eq!(
        vg["children"][0]["lv"]["segments"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let (doc, code) = check_json(&[&a], &[]);
    let msgs = messages(&doc, "lvm-pv-missing");
    assert_eq!(msgs.len(), 1, "{doc:#}");
    assert!(
        msgs[0].contains("pv1") && msgs[0].contains("last seen as /dev/loop"),
        "{}",
        msgs[0]
    );
    assert!(messages(&doc, "layer-not-followed")
        .iter()
        .any(|m| m.contains("segment 2")));
    // A missing PV leaves the VG incomplete: not misaligned, not a failure.
    assert_eq!(layer(&doc, "lvm-vg").unwrap()["status"], "incomplete");
    assert_eq!(doc["summary"]["incomplete"], 1, "{:#}", doc["summary"]);
    assert_eq!(doc["summary"]["status"], "incomplete");
    assert_eq!(code, 0);
}

/// A RAID0 of two members holding an ext4 made with `mkfs_opts`.
fn raid0(dir: &TempDir, version: &str, offsets: [u64; 2], mkfs_opts: &[&str]) -> Vec<PathBuf> {
    let fsimg = image(dir.path(), "fs.img", 32 << 20);
    let mut a = vec!["-q", "-F", "-b", "4096"];
    a.extend_from_slice(mkfs_opts);
    a.push(fsimg.to_str().unwrap());
    sh("mkfs.ext4", &a);
    md::raid0_members(
        dir.path(),
        version,
        &offsets,
        &std::fs::read(&fsimg).unwrap(),
    )
}

#[test]
fn a_pv_on_md_is_judged_against_the_stripe_width() {
    let dir = TempDir::new().unwrap();
    // The array's contents: a PV made by pvcreate (default pe_start 1 MiB).
    let arr = image(dir.path(), "array.img", 48 << 20);
    {
        let l = LoopDev::attach(&arr, None);
        lvm("pvcreate", &l.dev, &[&l.dev]);
        lvm("vgcreate", &l.dev, &["vgmd", &l.dev]);
    }
    let data = std::fs::read(&arr).unwrap();
    // Three data disks: stripe width 192 KiB, which 1 MiB is not a multiple of.
    let m = md::raid0_members(dir.path(), "1.2", &[2048, 2048, 2048], &data);
    let refs: Vec<&Path> = m.iter().map(PathBuf::as_path).collect();
    let (doc, code) = check_json(&refs, &[]);
    let array = layer(&doc, "md-array").unwrap();
    assert_eq!(array["exposes"]["optimal_io_size"], 3 * 65536);
    let pv = layer(array, "lvm-pv").unwrap_or_else(|| panic!("{array:#}"));
    assert_eq!(pv["device"], "md:test:0");
    let msgs = messages(pv, "layer-start-not-optimal");
    assert!(msgs[0].contains("196608"), "{msgs:?}");
    assert_eq!(code, 1);
    // The VG is assembled from the PV inside the array.
    assert_eq!(
        layer(&doc, "lvm-vg").unwrap()["vg"]["pvs"][0]["found_on"],
        "md:test:0"
    );
    // Two data disks: 128 KiB divides 1 MiB, so the same PV is fine.
    let m = md::raid0_members(dir.path(), "1.2", &[2048, 2048], &data[..32 << 20]);
    let refs: Vec<&Path> = m.iter().map(PathBuf::as_path).collect();
    let (doc, _) = check_json(&refs, &[]);
    assert!(
        messages(&doc, "layer-start-not-optimal").is_empty(),
        "{doc:#}"
    );
}

#[test]
fn md_superblocks_of_every_version_are_read_and_the_array_is_assembled() {
    let dir = TempDir::new().unwrap();
    for version in ["0.90", "1.0", "1.1", "1.2"] {
        let off = if version == "1.1" || version == "1.2" {
            2048
        } else {
            0
        };
        let m = raid0(
            &dir,
            version,
            [off, off],
            &["-E", "stride=16,stripe_width=32"],
        );
        for p in &m {
            let (code, text) = sh_status("mdadm", &["--examine", p.to_str().unwrap()]);
            assert_eq!(code, 0, "mdadm rejects our {version} superblock: {text}");
            assert!(text.contains("raid0"), "{text}");
        }
        let (doc, code) = check_json(&[&m[0], &m[1]], &[]);
        let member = layer(&doc, "md-member").unwrap();
        assert_eq!(member["md"]["version"], version);
        assert_eq!(member["md"]["chunk_bytes"], 65536);
        assert_eq!(member["md"]["data_offset_bytes"], off * 512);
        let array = layer(&doc, "md-array").unwrap();
        assert_eq!(array["array"]["readable"], true, "{version}: {array:#}");
        assert_eq!(array["exposes"]["minimum_io_size"], 65536);
        assert_eq!(array["exposes"]["optimal_io_size"], 131072);
        let fs =
            layer(array, "filesystem").unwrap_or_else(|| panic!("{version}: no fs in {array:#}"));
        assert_eq!(fs["filesystem"]["stripe_unit_blocks"], 16);
        assert_eq!(fs["filesystem"]["stripe_width_blocks"], 32);
        assert_eq!(code, 0, "{version}: {:?}", all_codes(&doc));
        for p in &m {
            std::fs::remove_file(p).unwrap();
        }
    }
}

#[test]
fn md_rules_hints_missing_misaligned_member_and_missing_member() {
    let dir = TempDir::new().unwrap();
    // No stripe hints on a striped array.
    let m = raid0(
        &dir,
        "1.2",
        [2048, 2048],
        &["-E", "stride=0,stripe_width=0"],
    );
    let (doc, code) = check_json(&[&m[0], &m[1]], &[]);
    let msgs = messages(&doc, "fs-stripe-hints-missing");
    assert_eq!(msgs.len(), 1, "{doc:#}");
    assert!(msgs[0].contains("stride=16,stripe_width=32"), "{}", msgs[0]);
    assert_eq!(code, 1);
    // Wrong hints.
    let m = raid0(
        &dir,
        "1.2",
        [2048, 2048],
        &["-E", "stride=8,stripe_width=16"],
    );
    let (doc, _) = check_json(&[&m[0], &m[1]], &[]);
    assert_eq!(messages(&doc, "fs-stripe-hints-mismatch").len(), 1);
    // Member 1's data 1536 bytes off 4 KiB.
    let m = raid0(
        &dir,
        "1.2",
        [2048, 2051],
        &["-E", "stride=16,stripe_width=32"],
    );
    let (doc, _) = check_json(&[&m[0], &m[1]], &[]);
    assert!(messages(&doc, "layer-start-not-4k")
        .iter()
        .any(|x| x.contains("md data area")));
    assert_eq!(
        messages(&doc, "md-members-inconsistent").len(),
        1,
        "{doc:#}"
    );
    assert_eq!(
        layer(&doc, "md-array").unwrap()["exposes"]["alignment_offset"],
        0
    );
    // Only one member given.
    let (doc, code) = check_json(&[&m[0]], &[]);
    assert!(messages(&doc, "md-member-missing")[0].contains("roles 1"));
    assert!(!messages(&doc, "layer-not-followed").is_empty());
    assert_eq!(layer(&doc, "md-array").unwrap()["status"], "incomplete");
    assert_eq!(doc["summary"]["incomplete"], 1, "{:#}", doc["summary"]);
    assert_eq!(code, 0, "{:#}", doc["summary"]);
}

/// LUKS on an image, its key file beside it.
fn luks_format_image(img: &Path, extra: &[&str]) {
    luks_format(img, &img.with_extension("key"), extra);
}

#[test]
fn luks1_and_luks2_payload_offsets_and_sector_sizes() {
    let dir = TempDir::new().unwrap();
    // (format options, payload offset expected, finding expected)
    let cases: [(&[&str], u64, Option<&str>); 4] = [
        (&["--type", "luks1"], 4096 * 512, None),
        // cryptsetup rounds the payload up to a multiple of 2049 past the header.
        (
            &["--type", "luks1", "--align-payload", "2049"],
            2 * 2049 * 512,
            Some("layer-start-misaligned"),
        ),
        (&["--type", "luks2"], 16 << 20, None),
        (
            &["--type", "luks2", "--align-payload", "32771"],
            32771 * 512,
            Some("layer-start-misaligned"),
        ),
    ];
    for (i, (opts, payload, finding)) in cases.iter().enumerate() {
        let img = image(dir.path(), &format!("luks{i}.img"), 40 << 20);
        luks_format_image(&img, opts);
        let (_, dump) = sh_status("cryptsetup", &["luksDump", img.to_str().unwrap()]);
        let (doc, _) = check_json(&[&img], &["--topology=pbs=4096"]);
        let l = layer(&doc, "luks").unwrap_or_else(|| panic!("{opts:?}: {doc:#}"));
        assert_eq!(
            l["luks"]["payload_offset_bytes"], *payload,
            "{opts:?}\n{dump}"
        );
        // luksDump agrees: LUKS1 in sectors, LUKS2 in bytes.
        let dumped = if opts.contains(&"luks1") {
            format!("Payload offset:\t{}", payload / 512)
        } else {
            format!("offset: {payload} [bytes]")
        };
        assert!(dump.contains(&dumped), "{dumped:?} not in\n{dump}");
        let codes = common::codes(l);
        assert!(
            codes.contains(&"luks-contents-unchecked".to_string()),
            "{codes:?}"
        );
        match finding {
            Some(c) => assert!(codes.iter().any(|x| x == c), "{opts:?}: {codes:?}"),
            None => assert!(
                !codes.iter().any(|x| x.starts_with("layer-start")),
                "{opts:?}: {codes:?}"
            ),
        }
    }
    // LUKS2 with 512-byte encryption sectors on a 4K-physical disk.
    let img = image(dir.path(), "ss.img", 40 << 20);
    luks_format_image(&img, &["--type", "luks2", "--sector-size", "512"]);
    let (doc, _) = check_json(&[&img], &["--topology=pbs=4096"]);
    let l = layer(&doc, "luks").unwrap();
    assert_eq!(l["luks"]["sector_size"], 512);
    assert!(messages(l, "luks-sector-size")[0].contains("--sector-size 4096"));
    assert_eq!(l["exposes"]["physical_block_size"], 4096);
}

#[test]
fn filesystems_geometry_ext4_xfs_btrfs() {
    let dir = TempDir::new().unwrap();
    // ext4 with hints, on a device that reports a matching stripe geometry.
    let img = image(dir.path(), "e.img", 64 << 20);
    sh(
        "mkfs.ext4",
        &[
            "-q",
            "-F",
            "-b",
            "4096",
            "-E",
            "stride=16,stripe_width=64",
            img.to_str().unwrap(),
        ],
    );
    let (doc, code) = check_json(&[&img], &["--topology=pbs=4096,min=65536,opt=262144"]);
    let fs = layer(&doc, "filesystem").unwrap();
    assert_eq!(fs["filesystem"]["type"], "ext4");
    assert_eq!(fs["filesystem"]["block_size"], 4096);
    assert!(
        !all_codes(&doc).iter().any(|c| c.starts_with("fs-")),
        "{doc:#}"
    );
    assert_eq!(code, 0);
    // The same hints on a device that reports none: info only.
    let (doc, code) = check_json(&[&img], &[]);
    assert_eq!(messages(&doc, "fs-stripe-hints-mismatch").len(), 1);
    assert_eq!(code, 0);

    // XFS with su=64k,sw=2 (needs >= 1 GiB) and 512-byte sectors.
    let x = image(dir.path(), "x.img", 1 << 30);
    sh(
        "mkfs.xfs",
        &[
            "-q",
            "-f",
            "-s",
            "size=512",
            "-d",
            "su=64k,sw=2",
            x.to_str().unwrap(),
        ],
    );
    let (doc, _) = check_json(&[&x], &["--topology=pbs=4096,min=65536,opt=131072"]);
    let fs = layer(&doc, "filesystem").unwrap();
    assert_eq!(fs["filesystem"]["type"], "xfs");
    assert_eq!(fs["filesystem"]["stripe_unit_blocks"], 16);
    assert_eq!(fs["filesystem"]["stripe_width_blocks"], 32);
    assert_eq!(fs["filesystem"]["sector_size"], 512);
    assert!(messages(&doc, "fs-block-below-physical")[0].contains("sector size 512"));
    assert!(messages(&doc, "fs-stripe-hints-mismatch").is_empty());
    let (doc, _) = check_json(&[&x], &["--topology=pbs=4096,min=65536,opt=196608"]);
    assert_eq!(messages(&doc, "fs-stripe-hints-mismatch").len(), 1);

    // btrfs: a 4096-byte sectorsize is fine on a 4K-physical disk.
    let b = image(dir.path(), "b.img", 256 << 20);
    sh("mkfs.btrfs", &["-q", "-f", b.to_str().unwrap()]);
    let (doc, code) = check_json(&[&b], &["--topology=pbs=4096"]);
    let fs = layer(&doc, "filesystem").unwrap();
    assert_eq!(fs["filesystem"]["type"], "btrfs");
    assert_eq!(fs["filesystem"]["sector_size"], 4096);
    assert_eq!(code, 0, "{:?}", all_codes(&doc));
}

#[test]
fn ext4_inside_an_lv_is_found_through_the_segment_map() {
    let dir = TempDir::new().unwrap();
    let img = striped_image(&dir, 53248);
    // The LV's first chunk is on leg 0: partition 1 + pe_start. A filesystem
    // written there linearly has its superblock where the LV map puts it.
    let leg0 = 2048 * 512 + (1 << 20);
    let mkfs_at_leg0 = |hints: &str| {
        let e = format!("offset={leg0}{hints}");
        sh(
            "mkfs.ext4",
            &[
                "-q",
                "-F",
                "-b",
                "4096",
                "-E",
                &e,
                img.to_str().unwrap(),
                "8M",
            ],
        );
    };
    mkfs_at_leg0(",stride=2,stripe_width=4");
    let (doc, code) = check_json(&[&img], &[]);
    let lv = layer(&doc, "lvm-lv").unwrap();
    let fs = layer(lv, "filesystem").unwrap_or_else(|| panic!("{lv:#}"));
    assert_eq!(fs["filesystem"]["stripe_unit_blocks"], 2);
    assert_eq!(fs["below"]["optimal_io_size"], 16384);
    assert_eq!(code, 0, "{:?}", all_codes(&doc));
    // Without hints the LV's stripes are not known to ext4.
    mkfs_at_leg0("");
    let (doc, _) = check_json(&[&img], &[]);
    assert_eq!(
        messages(&doc, "fs-stripe-hints-missing").len(),
        1,
        "{doc:#}"
    );
}

/// Rewrite the committed metadata of the PV at the start of `img`, placing
/// the text so that it wraps when `wrap` is set, with valid checksums.
fn rewrite_metadata(img: &Path, text: &[u8], wrap: bool, fix_crc: bool) {
    use diskalign::stack::lvm_crc;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(img)
        .unwrap();
    let mda = 4096u64;
    let mut h = vec![0u8; 512];
    f.read_exact_at(&mut h, mda).unwrap();
    let size = u64::from_le_bytes(h[32..40].try_into().unwrap());
    let offset = if wrap {
        size - 100
    } else {
        u64::from_le_bytes(h[40..48].try_into().unwrap())
    };
    let first = (size - offset).min(text.len() as u64) as usize;
    f.write_all_at(&text[..first], mda + offset).unwrap();
    f.write_all_at(&text[first..], mda + 512).unwrap();
    h[40..48].copy_from_slice(&offset.to_le_bytes());
    h[48..56].copy_from_slice(&(text.len() as u64).to_le_bytes());
    if fix_crc {
        h[56..60].copy_from_slice(&lvm_crc(text).to_le_bytes());
    }
    let c = lvm_crc(&h[4..512]);
    h[0..4].copy_from_slice(&c.to_le_bytes());
    f.write_all_at(&h, mda).unwrap();
}

fn committed_text(img: &Path) -> Vec<u8> {
    let f = std::fs::File::open(img).unwrap();
    let mut h = vec![0u8; 512];
    f.read_exact_at(&mut h, 4096).unwrap();
    let off = u64::from_le_bytes(h[40..48].try_into().unwrap());
    let len = u64::from_le_bytes(h[48..56].try_into().unwrap());
    let mut t = vec![0u8; len as usize];
    f.read_exact_at(&mut t, 4096 + off).unwrap();
    t
}

/// A 16 MiB image holding one PV of VG `vg` with a 2-extent linear LV.
fn linear_pv_image(dir: &TempDir, vg: &str) -> PathBuf {
    let pv = image(dir.path(), "pv.img", 16 << 20);
    let l = LoopDev::attach(&pv, None);
    lvm("pvcreate", &l.dev, &[&l.dev]);
    lvm("vgcreate", &l.dev, &[vg, &l.dev]);
    let lv = [
        "--driverloaded",
        "n",
        "-an",
        "--zero",
        "n",
        "-l",
        "2",
        "-n",
        "l0",
        vg,
    ];
    lvm("lvcreate", &l.dev, &lv);
    pv
}

#[test]
fn damaged_lvm_metadata_is_a_finding_never_a_panic() {
    let dir = TempDir::new().unwrap();
    let pv = linear_pv_image(&dir, "vgd");
    let text = committed_text(&pv);
    let copy = |name: &str| {
        let p = dir.path().join(name);
        std::fs::copy(&pv, &p).unwrap();
        p
    };
    // A wrapped ring buffer reads back whole.
    let wrapped = copy("wrapped.img");
    rewrite_metadata(&wrapped, &text, true, true);
    let (doc, code) = check_json(&[&wrapped], &[]);
    assert!(layer(&doc, "lvm-lv").is_some(), "{doc:#}");
    assert_eq!(code, 0, "{:?}", all_codes(&doc));

    let cases: Vec<(&str, Damage, &str)> = vec![
        (
            "label crc",
            Box::new(|p: &Path| flip(p, 512 + 100)),
            "label checksum",
        ),
        (
            "mda header crc",
            Box::new(|p: &Path| flip(p, 4096 + 300)),
            "mda_header checksum",
        ),
        (
            "text crc",
            Box::new(|p: &Path| {
                rewrite_metadata(p, &text.replace_bytes(b"seqno", b"seqnO"), false, false)
            }),
            "metadata text checksum",
        ),
        (
            "truncated text",
            Box::new(|p: &Path| rewrite_metadata(p, &text[..text.len() / 2], false, true)),
            "of the text",
        ),
        (
            "huge count",
            Box::new(|p: &Path| {
                rewrite_metadata(
                    p,
                    &text.replace_bytes(b"stripe_count = 1", b"stripe_count = 99999999999"),
                    false,
                    true,
                )
            }),
            "not plausible",
        ),
        (
            "wrapped and truncated",
            Box::new(|p: &Path| rewrite_metadata(p, &text[..text.len() - 40], true, true)),
            "LVM2 metadata text",
        ),
    ];
    for (what, damage, expect) in cases {
        let p = copy("damaged.img");
        damage(&p);
        let (doc, code) = check_json(&[&p], &[]);
        let msgs = messages(&doc, "metadata-invalid");
        assert!(
            msgs.iter()
                .any(|m| m.contains(expect) && m.contains("damaged.img")),
            "{what}: {msgs:?}"
        );
        assert_eq!(code, 1, "{what}");
    }
}

/// A way to damage an image.
type Damage<'a> = Box<dyn Fn(&Path) + 'a>;

fn flip(p: &Path, at: u64) {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(p)
        .unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    b[0] ^= 0x55;
    f.write_all_at(&b, at).unwrap();
}

trait ReplaceBytes {
    fn replace_bytes(&self, from: &[u8], to: &[u8]) -> Vec<u8>;
}
impl ReplaceBytes for Vec<u8> {
    fn replace_bytes(&self, from: &[u8], to: &[u8]) -> Vec<u8> {
        let i = self
            .windows(from.len())
            .position(|w| w == from)
            .expect("pattern in metadata");
        [&self[..i], to, &self[i + from.len()..]].concat()
    }
}

#[test]
fn damaged_md_luks_and_random_mutations_never_panic() {
    let dir = TempDir::new().unwrap();
    let m = raid0(&dir, "1.2", [2048, 2048], &[]);
    flip(&m[0], 4096 + 80);
    let (doc, _) = check_json(&[&m[0]], &[]);
    assert!(
        messages(&doc, "metadata-invalid")
            .first()
            .is_some_and(|m| m.contains("checksum")),
        "{doc:#}"
    );
    let l = image(dir.path(), "l.img", 40 << 20);
    luks_format_image(&l, &["--type", "luks2"]);
    flip(&l, 4096);
    let (doc, _) = check_json(&[&l], &[]);
    assert!(
        messages(&doc, "metadata-invalid")[0].contains("LUKS2 JSON"),
        "{doc:#}"
    );

    // Random byte damage in every header, checked in-process: a panic fails the test.
    let pv = linear_pv_image(&dir, "vgr");
    let x = image(dir.path(), "x.img", 16 << 20);
    sh("mkfs.ext4", &["-q", "-F", x.to_str().unwrap()]);
    let opts = diskalign::check::CheckOptions::default();
    let mut rng = fastrand::Rng::with_seed(4);
    for (src, ranges) in [
        (
            &pv,
            vec![(512u64, 512u64), (4096, 512), (4096 + 2048, 1500)],
        ),
        (&m[1], vec![(4096, 512)]),
        (&l, vec![(0, 4096), (4096, 2048)]),
        (&x, vec![(1024, 512)]),
    ] {
        let orig = std::fs::read(src).unwrap();
        let p = dir.path().join("fuzz.img");
        for _ in 0..60 {
            std::fs::write(&p, &orig).unwrap();
            let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            for _ in 0..rng.usize(1..6) {
                let (start, len) = ranges[rng.usize(..ranges.len())];
                let v = [rng.u8(..)];
                f.write_all_at(&v, start + rng.u64(..len)).unwrap();
            }
            let _ = diskalign::check::check_all(std::slice::from_ref(&p), &opts);
        }
    }
}

#[test]
fn live_loop_device_and_its_partitions_as_targets() {
    let dir = TempDir::new().unwrap();
    let img = striped_image(&dir, 53251);
    let l = LoopDev::attach(&img, None);
    let (doc, code) = run_json(&["check", &l.dev]);
    assert_eq!(code, 1);
    assert_eq!(doc["targets"][0]["topology_source"], "kernel");
    assert_eq!(messages(&doc, "lvm-stripe-misaligned").len(), 1, "{doc:#}");
    // The two partitions given as targets: the VG is assembled from them,
    // and the legs are named on the whole disk.
    let (doc, _) = run_json(&["check", &l.part(1), &l.part(2)]);
    let vg = layer(&doc, "lvm-vg").unwrap();
    let found: Vec<&str> = vg["vg"]["pvs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["found_on"].as_str().unwrap())
        .collect();
    assert_eq!(found, vec![l.dev.as_str(), l.dev.as_str()]);
    let msgs = messages(&doc, "lvm-stripe-misaligned");
    assert!(
        msgs[0].contains(&format!("byte 28313088 of {}", l.dev)),
        "{}",
        msgs[0]
    );
}

/// A checksum-valid superblock with a huge raid_disks used to make `check`
/// build one string per missing role (10 M roles took 724 MB; 4294967295
/// aborted). The count is bounded by the roles the superblock can record,
/// and missing roles are listed as ranges.
#[test]
fn md_raid_disks_is_bounded_and_missing_roles_are_ranges() {
    let dir = TempDir::new().unwrap();
    let p = image(dir.path(), "huge.img", 20 << 20);
    md::write(&p, &member("1.2", 2, 0, 2048));
    md::patch_v1(&p, 4096, 92, u32::MAX);
    let started = std::time::Instant::now();
    let (doc, code) = check_json(&[&p], &[]);
    assert!(
        started.elapsed().as_secs() < 20,
        "took {:?}",
        started.elapsed()
    );
    let msgs = messages(&doc, "metadata-invalid");
    assert!(
        msgs.iter().any(|m| m.contains("raid_disks 4294967295")
            && m.contains("byte 4188")
            && m.contains("max_dev")),
        "{doc:#}"
    );
    assert_eq!(code, 1);

    // 300 roles (the superblock records 300), only role 0 given.
    let p = image(dir.path(), "wide.img", 20 << 20);
    md::write(&p, &member("1.2", 300, 0, 2048));
    let (doc, _) = check_json(&[&p], &[]);
    let msgs = messages(&doc, "md-member-missing");
    assert_eq!(msgs.len(), 1, "{doc:#}");
    assert!(msgs[0].contains("roles 1-299 of"), "{}", msgs[0]);
}

/// bcache, added through the format registry: superblocks made by
/// make-bcache. A backing device's data offset is judged like any layer's
/// start and what is inside is read in place; a block size below the
/// physical block is flagged; a damaged superblock names its byte.
#[test]
fn bcache_backing_and_cache_devices() {
    let dir = TempDir::new().unwrap();
    let p = |n: &str| dir.path().join(n).display().to_string();
    let backing = image(dir.path(), "backing.img", 64 << 20);
    sh("make-bcache", &["-B", &p("backing.img")]);
    sh(
        "mkfs.ext4",
        &[
            "-q",
            "-F",
            "-b",
            "4096",
            "-E",
            "offset=8192",
            &p("backing.img"),
            "32M",
        ],
    );
    let (doc, code) = check_json(&[&backing], &["--topology", "pbs=4096"]);
    let b = layer(&doc, "bcache").unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(b["bcache"]["role"], "backing");
    assert_eq!(b["bcache"]["data_offset_bytes"], 8192);
    assert_eq!(b["data_offset_bytes"], 8192);
    assert_eq!(b["bcache"]["block_size_bytes"], 4096);
    let fs = layer(b, "filesystem").unwrap_or_else(|| panic!("no ext4 inside: {b:#}"));
    assert_eq!(fs["offset_bytes"], 8192);
    assert_eq!(fs["filesystem"]["type"], "ext4");
    assert_eq!(messages(&doc, "layer-start-not-1mib").len(), 1, "{doc:#}");
    assert_eq!(code, 0, "{:?}", all_codes(&doc));
    // The signature scan (what a destructive probe refuses) knows it from
    // the registry.
    let bytes = std::fs::read(&backing).unwrap();
    let found: Vec<_> = diskalign::stack::scan_signatures(&bytes[..])
        .into_iter()
        .map(|s| (s.what, s.offset))
        .collect();
    assert!(
        found.contains(&("bcache superblock", 4096 + 24)),
        "{found:?}"
    );

    // Data 17 sectors in: 512 bytes past the 4 KiB grain.
    let off = image(dir.path(), "off.img", 64 << 20);
    sh("make-bcache", &["-B", "-o", "17", &p("off.img")]);
    let (doc, code) = check_json(&[&off], &["--topology", "pbs=4096"]);
    let b = layer(&doc, "bcache").unwrap();
    assert_eq!(b["bcache"]["data_offset_bytes"], 17 * 512);
    let m = messages(&doc, "layer-start-misaligned");
    assert!(
        m.len() == 1 && m[0].contains("bcache backing device"),
        "{m:?}"
    );
    assert_eq!(code, 1);

    // A cache device with 512-byte blocks on a 4K disk.
    let cache = image(dir.path(), "cache.img", 64 << 20);
    sh("make-bcache", &["-C", "--block", "512", &p("cache.img")]);
    let (doc, _) = check_json(&[&cache], &["--topology", "pbs=4096"]);
    let b = layer(&doc, "bcache").unwrap();
    assert_eq!(b["bcache"]["role"], "cache");
    assert_eq!(b["bcache"]["block_size_bytes"], 512);
    assert!(b["bcache"]["bucket_size_bytes"].as_u64().unwrap() > 0);
    assert_eq!(messages(&doc, "bcache-block-size").len(), 1, "{doc:#}");

    // One flipped byte in the label: the checksum no longer matches.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&cache)
        .unwrap();
    f.write_all_at(b"x", 4096 + 72).unwrap();
    let (doc, _) = check_json(&[&cache], &[]);
    let m = messages(&doc, "metadata-invalid");
    assert!(
        m.iter()
            .any(|x| x.contains("bcache superblock at byte 4096") && x.contains("checksum")),
        "{m:?}"
    );
}

/// A DOS partition at sector 63 holding a PV (`pvcreate` with `extra`) of
/// a VG with one 16 MiB linear LV; the LV's first byte on the image.
fn pv_at_63(dir: &TempDir, name: &str, extra: &[&str]) -> (PathBuf, u64) {
    let img = image(dir.path(), name, 64 << 20);
    sfdisk(&img, "label: dos\nstart=63, size=120000, type=8e\n");
    let l = LoopDev::attach(&img, None);
    let prefix = format!("{}p", l.dev);
    let p1 = l.part(1);
    let mut a = extra.to_vec();
    a.push(&p1);
    lvm("pvcreate", &prefix, &a);
    lvm("vgcreate", &prefix, &["-s", "1M", "vg63", &p1]);
    let lv = [
        "--driverloaded",
        "n",
        "-an",
        "--zero",
        "n",
        "-L",
        "16M",
        "-n",
        "lv0",
        "vg63",
    ];
    lvm("lvcreate", &prefix, &lv);
    let data = 63 * 512 + pvs_pe_start(&prefix, &p1);
    (img, data)
}

fn mkfs_ext4_at(img: &Path, offset: u64) {
    let o = format!("offset={offset}");
    sh(
        "mkfs.ext4",
        &["-q", "-F", "-E", &o, img.to_str().unwrap(), "16M"],
    );
}

/// One misalignment, one verdict: an ext4 or a PV in a DOS partition at
/// sector 63 sits 3584 bytes past 4 KiB on the disk. The partition's start
/// is the cause and carries the one error; every layer above inherits it
/// (never `aligned`), down to an ext4 inside the LV.
#[test]
fn layers_in_a_partition_at_63_inherit_its_start() {
    let dir = TempDir::new().unwrap();
    let img = image(dir.path(), "ext4.img", 64 << 20);
    sfdisk(&img, "label: dos\nstart=63, size=100000, type=83\n");
    mkfs_ext4_at(&img, 63 * 512);
    let (doc, code) = check_json(&[&img], &[]);
    assert_eq!(code, 1);
    let fs = layer(&doc, "filesystem").unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(fs["offset_bytes"], 32256);
    assert_eq!(fs["status"], "inherits", "{fs:#}");
    assert_eq!(fs["aligned"], false);
    assert_eq!(fs["inherits_from"], "partition 1");
    assert!(fs["findings"].as_array().unwrap().is_empty(), "{fs:#}");
    let t = &doc["targets"][0];
    assert_eq!(t["summary"]["errors"], 1, "{:#}", t["summary"]);
    assert_eq!(t["summary"]["layers_aligned"], 0);
    let verdict = t["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("1 stack layer inherits a misaligned offset"),
        "{verdict}"
    );
    let (human, _) = run(&["check", img.to_str().unwrap()]);
    assert!(
        human.contains("INHERITS (the offset of partition 1)"),
        "{human}"
    );

    // On a 4 KiB-physical disk the same start breaks the kernel's rule
    // too: both codes in the JSON, one cause counted and printed.
    let (doc, _) = check_json(&[&img], &["--topology", "pbs=4096"]);
    let p1 = partition(&doc, 1);
    let c = codes(p1);
    assert!(c.contains(&"start-misaligned".into()) && c.contains(&"start-not-4k".into()));
    let not4k = findings(p1, "start-not-4k");
    assert_eq!(not4k[0]["same_cause_as"], "start-misaligned");
    assert_eq!(doc["targets"][0]["summary"]["errors"], 1);
    assert_eq!(doc["summary"]["errors"], 1);
    let (human, _) = run(&["check", img.to_str().unwrap(), "--topology", "pbs=4096"]);
    assert!(
        human.contains("start-misaligned") && !human.contains("start-not-4k"),
        "{human}"
    );
    assert!(human.contains("(1 error,"), "{human}");

    // A PV there, its LV and an ext4 inside the LV: one error for all.
    let (img, data) = pv_at_63(&dir, "pv.img", &[]);
    mkfs_ext4_at(&img, data);
    let (doc, _) = check_json(&[&img], &[]);
    assert_eq!(doc["summary"]["errors"], 1, "{doc:#}");
    let pv = layer(&doc, "lvm-pv").unwrap();
    assert_eq!(pv["status"], "inherits");
    assert!(all_codes(&doc)
        .iter()
        .all(|c| !c.starts_with("layer-start")));
    let lv = layer(&doc, "lvm-lv").unwrap();
    let from = format!("{}: partition 1", img.display());
    assert_eq!(lv["status"], "inherits", "{lv:#}");
    assert_eq!(lv["inherits_from"], from);
    let inner = layer(lv, "filesystem").unwrap_or_else(|| panic!("{lv:#}"));
    assert_eq!(inner["status"], "inherits");
    assert_eq!(inner["inherits_from"], from);

    // pvcreate compensating for the partition (data 512 bytes further):
    // on the disk the PV's data is on 4 KiB, so it is aligned.
    let (img, data) = pv_at_63(&dir, "pv1s.img", &["--dataalignmentoffset", "1s"]);
    assert_eq!(data % 4096, 0);
    let (doc, _) = check_json(&[&img], &[]);
    let pv = layer(&doc, "lvm-pv").unwrap();
    assert_eq!(pv["status"], "aligned", "{pv:#}");
    assert!(pv.get("inherits_from").is_none());
    assert_eq!(layer(&doc, "lvm-lv").unwrap()["status"], "aligned");
}

/// A btrfs in zoned mode (mkfs.btrfs -O zoned, zones emulated on a
/// regular file: 256 MiB each, so the image is large and sparse) is read
/// as a btrfs with `zoned`; a regular one has no `zoned` key.
#[test]
fn a_btrfs_in_zoned_mode_says_so() {
    let dir = TempDir::new().unwrap();
    let img = image(dir.path(), "z.img", 16 << 30);
    sh(
        "mkfs.btrfs",
        &["-q", "-f", "-O", "zoned", img.to_str().unwrap()],
    );
    let (doc, _) = check_json(&[&img], &[]);
    let fs = layer(&doc, "filesystem").unwrap();
    assert_eq!(fs["filesystem"]["type"], "btrfs", "{doc:#}");
    assert_eq!(fs["filesystem"]["zoned"], true, "{doc:#}");
    let plain = image(dir.path(), "p.img", 256 << 20);
    sh("mkfs.btrfs", &["-q", "-f", plain.to_str().unwrap()]);
    let (doc, _) = check_json(&[&plain], &[]);
    let fs = layer(&doc, "filesystem").unwrap();
    assert!(fs["filesystem"].get("zoned").is_none(), "{doc:#}");
}

/// An f2fs (mkfs.f2fs) is read with its block size and size; made without
/// `-m` it is not zoned (mkfs.f2fs makes `blkzoned` only on a zoned disk:
/// tests/vm scenario 25).
#[test]
fn an_f2fs_reads() {
    let dir = TempDir::new().unwrap();
    let img = image(dir.path(), "f.img", 256 << 20);
    sh("mkfs.f2fs", &["-q", "-f", img.to_str().unwrap()]);
    let (doc, _) = check_json(&[&img], &["--topology=pbs=4096"]);
    let fs = layer(&doc, "filesystem").unwrap();
    assert_eq!(fs["filesystem"]["type"], "f2fs", "{doc:#}");
    assert_eq!(fs["filesystem"]["block_size"], 4096, "{doc:#}");
    assert_eq!(fs["filesystem"]["sector_size"], 4096, "{doc:#}");
    assert_eq!(fs["filesystem"]["size_bytes"], 256u64 << 20, "{doc:#}");
    assert!(fs["filesystem"].get("zoned").is_none(), "{doc:#}");
    assert!(
        !all_codes(&doc).iter().any(|c| c.starts_with("fs-")),
        "{doc:#}"
    );
}
