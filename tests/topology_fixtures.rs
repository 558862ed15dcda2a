//! `topology` and `check` against sysfs fixture trees of exotic disks.

mod common;
use common::*;
use serde_json::Value;

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/sysfs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn topo(name: &str) -> (Value, i32) {
    run_json(&["--sysfs-root", &fixture(name), "topology"])
}

fn disk_codes(doc: &Value) -> Vec<String> {
    codes(&doc["disks"][0])
}

#[test]
fn usb_bridge_with_bogus_optimal_io() {
    let (doc, code) = topo("usb-bridge");
    let d = &doc["disks"][0];
    assert_eq!(doc["schema"], "diskalign.topology");
    assert_eq!(d["name"], "sda");
    assert_eq!(d["transport"], "usb-uas");
    assert_eq!(d["usb"]["vendor_id"], "152d");
    assert_eq!(d["usb"]["product_id"], "0578");
    assert_eq!(d["topology"]["optimal_io_size"], 33553920);
    assert_eq!(d["topology"]["physical_block_size"], 4096);
    assert_eq!(disk_codes(&doc), vec!["optimal-io-suspicious"]);
    assert!(d["findings"][0]["message"]
        .as_str()
        .unwrap()
        .contains("65535"));
    assert_eq!(d["ioctl"], Value::Null, "fixtures never open device nodes");
    assert_eq!(code, 1);
}

#[test]
fn nvme_4kn_is_clean() {
    let (doc, code) = topo("nvme-4kn");
    let d = &doc["disks"][0];
    assert_eq!(d["transport"], "nvme");
    assert_eq!(d["topology"]["logical_block_size"], 4096);
    assert_eq!(d["serial"], "S6Z2NF0W000000X");
    assert_eq!(d["partitions"][0]["start_bytes"], 1048576);
    assert!(disk_codes(&doc).is_empty());
    assert_eq!(code, 0);
}

#[test]
fn sata_512e_ssd() {
    let (doc, code) = topo("sata-512e");
    let d = &doc["disks"][0];
    assert_eq!(d["transport"], "sata");
    assert_eq!(d["rotational"], false);
    assert_eq!(d["model"], "Samsung SSD 870");
    assert_eq!(d["partitions"].as_array().unwrap().len(), 2);
    assert_eq!(code, 0);
}

#[test]
fn alignment_offset_3584_partitions() {
    let (doc, _) = topo("ao-3584");
    let d = &doc["disks"][0];
    assert_eq!(d["topology"]["alignment_offset"], 3584);
    assert_eq!(d["partitions"][0]["start_bytes"], 63 * 512);
    assert_eq!(d["partitions"][1]["alignment_offset"], 3584);
}

#[test]
fn md_raid5_limits_and_slaves() {
    let (doc, code) = topo("md-raid5");
    let d = &doc["disks"][0];
    assert_eq!(d["transport"], "md");
    assert_eq!(d["topology"]["minimum_io_size"], 524288);
    assert_eq!(d["topology"]["optimal_io_size"], 1048576);
    assert_eq!(d["slaves"].as_array().unwrap().len(), 3);
    assert!(disk_codes(&doc).is_empty(), "{doc:#}");
    assert_eq!(code, 0);
}

#[test]
fn hidden_4k_behind_usb_storage() {
    let (doc, code) = topo("hidden-4k");
    assert_eq!(doc["disks"][0]["transport"], "usb-storage");
    assert_eq!(doc["disks"][0]["usb"]["driver"], "usb-storage");
    assert_eq!(disk_codes(&doc), vec!["hidden-4k-suspected"]);
    assert_eq!(code, 1);
}

#[test]
fn kernel_misaligned_marker_is_kept() {
    let (doc, code) = topo("dm-misaligned");
    assert_eq!(doc["disks"][0]["topology"]["alignment_offset"], -1);
    assert_eq!(disk_codes(&doc), vec!["kernel-reports-misaligned"]);
    assert_eq!(code, 1);
}

#[test]
fn named_devices_and_unknown_ones() {
    let root = fixture("sata-512e");
    let (doc, code) = run_json(&["--sysfs-root", &root, "topology", "/dev/sda"]);
    assert_eq!(doc["disks"][0]["name"], "sda");
    assert_eq!(code, 0);
    let (doc, code) = run_json(&["--sysfs-root", &root, "topology", "sda", "nosuch"]);
    assert_eq!(doc["disks"].as_array().unwrap().len(), 1);
    assert_eq!(doc["errors"][0]["path"], "nosuch");
    assert_eq!(code, 2);
}

/// A disk named gets its details; without one, one row per disk.
#[test]
fn human_report_names_the_bridge() {
    let root = fixture("usb-bridge");
    let base = ["--sysfs-root", &root, "--color", "never", "topology"];
    let (out, _) = run(&[&base[..], &["sda"]].concat());
    assert!(out.contains("usb bridge 152d:0578 driver uas"), "{out}");
    assert!(
        out.contains("optimal-io-suspicious: optimal_io_size"),
        "{out}"
    );
    assert!(!out.contains('\x1b'), "no colour when not asked");
    let (out, _) = run(&base);
    let row = out.lines().nth(1).unwrap_or_default();
    assert!(row.starts_with("sda "), "{out}");
    assert!(row.ends_with(" optimal-io-suspicious"), "{out}");
    assert!(!out.contains("usb bridge"), "{out}");
}

#[test]
fn live_holders_are_followed_with_the_kernels_limits() {
    use diskalign::check::judge_layer as judge;
    use diskalign::stack::holders;
    use diskalign::stack::Pending;
    use diskalign::topology::Sysfs;
    let root = std::path::PathBuf::from(fixture("stack-holders"));
    let sysfs = Sysfs::new(&root);
    let disk = sysfs.disk("sdd").unwrap();
    let mut pending = Pending::default();
    // The whole disk holds a dm-linear target the kernel marks misaligned.
    let mut up = holders(&sysfs, &root.join("block/sdd"), disk.topology, &mut pending);
    assert_eq!(up.len(), 1);
    judge(&mut up[0]);
    assert_eq!(up[0].name, "dm bad-linear (dm-0)");
    let f = &up[0].findings;
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].code.as_str(), "kernel-reports-misaligned");
    assert!(f[0].message.contains("bad-linear"), "{}", f[0].message);
    // Partition 1 holds an opened LUKS2 mapping with 4096-byte sectors.
    let mut up = holders(
        &sysfs,
        &root.join("block/sdd/sdd1"),
        disk.topology,
        &mut pending,
    );
    judge(&mut up[0]);
    assert_eq!(up[0].name, "dm-crypt luks-0f3c (dm-1)");
    assert_eq!(up[0].exposes.unwrap().logical_block_size, 4096);
    assert!(up[0].findings.is_empty(), "{:?}", up[0].findings);
    // Fixture trees never open device nodes, so nothing is read above it.
    assert!(up[0].children.is_empty());
}

/// A copy of a fixture tree with one attribute of sda replaced; `None`
/// removes it, `Some("@fifo")` makes it a FIFO, `Some("@zero")` a link to
/// /dev/zero.
fn hostile(attr: &str, value: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("cp")
        .args(["-a", &fixture("usb-bridge"), dir.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let root = dir.path().join("usb-bridge/block/sda");
    let file = std::fs::canonicalize(&root).unwrap().join(attr);
    let _ = std::fs::remove_file(&file);
    match value {
        None => {}
        Some("@fifo") => assert!(std::process::Command::new("mkfifo")
            .arg(&file)
            .status()
            .unwrap()
            .success()),
        Some("@zero") => std::os::unix::fs::symlink("/dev/zero", &file).unwrap(),
        Some(v) => std::fs::write(&file, format!("{v}\n")).unwrap(),
    }
    dir
}

/// Every sysfs value is input: zero, huge, non-numeric, missing or not a
/// regular file gives exit 2 and one line naming the problem, never a
/// panic or a hang.
#[test]
fn hostile_sysfs_values_are_errors_not_panics() {
    let cases: &[(&str, Option<&str>, &str)] = &[
        (
            "queue/physical_block_size",
            Some("0"),
            "physical block size 0",
        ),
        (
            "queue/physical_block_size",
            Some("4k"),
            "'4k' is not a number",
        ),
        ("queue/physical_block_size", None, "physical_block_size"),
        (
            "queue/physical_block_size",
            Some("@fifo"),
            "physical_block_size",
        ),
        (
            "queue/logical_block_size",
            Some("0"),
            "logical block size 0",
        ),
        (
            "queue/logical_block_size",
            Some("@zero"),
            "logical_block_size",
        ),
        (
            "queue/minimum_io_size",
            Some("1000"),
            "multiples of the logical block size",
        ),
        (
            "queue/optimal_io_size",
            Some("99999999999"),
            "not a number in range",
        ),
        (
            "queue/optimal_io_size",
            Some("-512"),
            "not a number in range",
        ),
        ("alignment_offset", Some("-7"), "alignment offset -7"),
    ];
    for (attr, value, says) in cases {
        let dir = hostile(attr, *value);
        let root = dir.path().join("usb-bridge");
        let (out, err, code) = run_full(&["--sysfs-root", root.to_str().unwrap(), "topology"]);
        let ctx = format!("{attr}={value:?}: exit {code}\nstdout: {out}\nstderr: {err}");
        assert_eq!(code, 2, "{ctx}");
        assert_eq!(err.lines().count(), 1, "{ctx}");
        assert!(err.contains(says) && err.contains("sda"), "{ctx}");
    }
    // Linux 6.1 prints a misaligned dm device's alignment offset (-1) as its
    // discard_alignment too: accepted as "no discard alignment".
    let dir = hostile("discard_alignment", Some("-1"));
    let root = dir.path().join("usb-bridge");
    let (out, err, code) = run_full(&["--sysfs-root", root.to_str().unwrap(), "topology"]);
    assert_eq!(code, 1, "{out}{err}");
    // A size that reads as NULs from /dev/zero is not a number: size unknown, no hang.
    let dir = hostile("size", Some("@zero"));
    let root = dir.path().join("usb-bridge");
    let (_, err, code) = run_full(&["--sysfs-root", root.to_str().unwrap(), "topology"]);
    assert!(code == 0 || code == 1 || code == 2, "{code} {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A holder whose limits no kernel would report stays in the tree,
/// unfollowed and saying why, instead of vanishing.
#[test]
fn a_holder_with_unreadable_limits_is_named() {
    use diskalign::stack::holders;
    use diskalign::stack::Pending;
    use diskalign::topology::Sysfs;
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("cp")
        .args([
            "-a",
            &fixture("stack-holders"),
            dir.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let root = dir.path().join("stack-holders");
    let pbs = std::fs::canonicalize(root.join("block/dm-0"))
        .unwrap()
        .join("queue/physical_block_size");
    std::fs::write(&pbs, "0\n").unwrap();
    let sysfs = Sysfs::new(&root);
    let disk = sysfs.disk("sdd").unwrap();
    let up = holders(
        &sysfs,
        &root.join("block/sdd"),
        disk.topology,
        &mut Pending::default(),
    );
    assert_eq!(up.len(), 1);
    assert_eq!(up[0].name, "dm bad-linear (dm-0)");
    assert!(up[0].exposes.is_none());
    let f = &up[0].findings;
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].code.as_str(), "layer-not-followed");
    assert!(
        f[0].message.contains("physical block size 0"),
        "{}",
        f[0].message
    );
}

/// A host-managed scsi_debug disk (64 zones of 4 MiB): its zones from
/// sysfs; the conventional ones need BLKREPORTZONE, so null with why.
#[test]
fn host_managed_zoned_disk() {
    let (doc, code) = topo("zoned-hm");
    let z = &doc["disks"][0]["zoned"];
    assert_eq!(z["model"], "host-managed");
    assert_eq!(z["zone_size_bytes"], 4194304);
    assert_eq!(z["zones"], 64);
    assert_eq!(z["conventional_zones"], Value::Null);
    assert!(z["conventional_zones_error"]
        .as_str()
        .unwrap()
        .starts_with("not opened: sysfs root is "));
    assert_eq!(code, 0);
    // A regular disk: model none, zeros, null, no error key.
    let (doc, _) = topo("sata-512e");
    let z = &doc["disks"][0]["zoned"];
    assert_eq!(z["model"], "none");
    assert_eq!(z["zone_size_bytes"], 0);
    assert_eq!(z["conventional_zones"], Value::Null);
    assert!(z.get("conventional_zones_error").is_none());
}

/// Zone attributes a kernel would not write are an error naming the file
/// and the disk, never a panic or a guess.
#[test]
fn bad_zone_attributes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    let status = std::process::Command::new("cp")
        .args(["-a", &fixture("zoned-hm"), root.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success());
    let q = root.join("block/sdb/queue");
    for (file, value, says) in [
        ("zoned", "sideways\n", "is not a zone model"),
        (
            "chunk_sectors",
            "0\n",
            "a host-managed disk with a zone size of 0",
        ),
        ("chunk_sectors", "lots\n", "is not a number in range"),
        ("nr_zones", "-3\n", "is not a number in range"),
    ] {
        let good = std::fs::read_to_string(q.join(file)).unwrap();
        std::fs::write(q.join(file), value).unwrap();
        let (doc, code) = run_json(&["--sysfs-root", root.to_str().unwrap(), "topology", "sdb"]);
        let e = &doc["errors"][0];
        assert_eq!(e["path"], "sdb", "{doc}");
        let m = e["message"].as_str().unwrap();
        assert!(m.contains(file) && m.contains(says), "{file}: {m}");
        assert_eq!(code, 2, "{m}");
        std::fs::write(q.join(file), good).unwrap();
    }
}

/// A healthy host's LVM (tests/fixtures/sysfs/lvm-internal, the names
/// and uuids lvm2 2.03.16 gave in the guest of VM scenario 28): `check`
/// with no target names the disk and the LVs people use (the thin LV,
/// the RAID1 LV), not the thin pool's _tmeta, _tdata, -tpool and pool
/// device nor the RAID1's _rmeta_0 and _rimage_0, which are in the disk's
/// stack among its holders; nothing is said about a first partition on
/// an LV, so a tiny _tmeta on a 512/512 disk (fdisk at sector 34) warns
/// nothing, and cron's exit status is 0. Named, an internal device is
/// still checked.
#[test]
fn devices_inside_a_layer_are_in_its_stack_not_targets() {
    let root = fixture("lvm-internal");
    let (doc, code) = run_json(&["--sysfs-root", &root, "check"]);
    let paths: Vec<&str> = doc["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/dev/dm-4", "/dev/dm-7", "/dev/vda"], "{doc}");
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["summary"]["exit_status"], 0);
    let vda = &doc["targets"][2];
    assert_eq!(vda["partitionable"], true);
    let holders: Vec<&str> = vda["stack"][0]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["holder"]["dm_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        holders,
        [
            "vg-pool_tmeta",
            "vg-pool_tdata",
            "vg-r1_rmeta_0",
            "vg-r1_rimage_0"
        ]
    );
    let tpool = &vda["stack"][0]["children"][0]["children"][0];
    assert_eq!(tpool["holder"]["dm_name"], "vg-pool-tpool");
    assert_eq!(tpool["children"][1]["holder"]["dm_name"], "vg-thin");
    for lv in &doc["targets"].as_array().unwrap()[..2] {
        assert_eq!(lv["partitionable"], false, "{lv}");
        assert!(!codes(lv).contains(&"tools-disagree".to_string()), "{lv}");
    }
    // Named, the thin pool's metadata is checked: the starts are in the
    // JSON, but no one is told where fdisk would put a partition on it.
    let (doc, code) = run_json(&["--sysfs-root", &root, "check", "/dev/dm-0"]);
    let t = &doc["targets"][0];
    assert_eq!(t["path"], "/dev/dm-0");
    assert_eq!(t["first_start_bytes"]["fdisk"], 17408, "{t}");
    assert!(!codes(t).contains(&"tools-disagree".to_string()), "{t}");
    assert_eq!(code, 0);
    let (out, _) = run(&["--sysfs-root", &root, "--color", "never", "check", "dm-0"]);
    assert!(!out.contains("first start on an empty disk"), "{out}");
    // topology still lists every disk, each dm device with its names.
    let (doc, _) = topo("lvm-internal");
    let tmeta = &doc["disks"][0];
    assert_eq!(tmeta["name"], "dm-0");
    assert_eq!(tmeta["dm"]["name"], "vg-pool_tmeta");
    assert!(tmeta["dm"]["uuid"].as_str().unwrap().ends_with("-tmeta"));
    assert!(doc["disks"][8].get("dm").is_none(), "{}", doc["disks"][8]);
    assert_eq!(doc["disks"].as_array().unwrap().len(), 9);
}

/// Many paths, one disk (tests/fixtures/sysfs/multipath): a SAN LUN
/// reached over sdb and sdc, the map multipathd makes of them (dm-0,
/// mpatha, uuid `mpath-WWID`) and an unrelated sda. `check` with no
/// target judges sda and the map, the map with its paths listed (JSON,
/// human), and neither path. Named, a path is checked and says whose
/// path it is, from the facts; `topology` lists every disk, each path
/// with its map.
#[test]
fn a_multipath_map_is_one_target_with_its_paths() {
    let root = fixture("multipath");
    let (doc, code) = run_json(&["--sysfs-root", &root, "check"]);
    let paths: Vec<&str> = doc["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/dev/dm-0", "/dev/sda"], "{doc}");
    assert_eq!(code, 0, "{doc}");
    let map = &doc["targets"][0];
    assert_eq!(map["paths"], serde_json::json!(["sdb", "sdc"]));
    assert_eq!(map["partitionable"], true);
    assert!(doc["targets"][1].get("paths").is_none());
    assert!(!codes(map).contains(&"multipath-path".to_string()), "{map}");
    let (out, _) = run(&["--sysfs-root", &root, "--color", "never", "check"]);
    assert!(out.contains("\n  paths: sdb, sdc\n"), "{out}");
    assert_eq!(out.matches("paths:").count(), 1, "{out}");
    // Named, a path is checked, as asked, and says whose path it is.
    let (doc, code) = run_json(&["--sysfs-root", &root, "check", "/dev/sdc"]);
    let t = &doc["targets"][0];
    assert_eq!(t["path"], "/dev/sdc");
    assert_eq!(code, 0, "{doc}");
    let f = t["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "multipath-path")
        .unwrap_or_else(|| panic!("{t}"));
    assert_eq!(f["severity"], "info");
    assert_eq!(f["facts"]["map_name"], "mpatha");
    assert_eq!(f["facts"]["map_node"], "/dev/mapper/mpatha");
    assert_eq!(f["facts"]["map_kernel_name"], "dm-0");
    assert!(f["message"]
        .as_str()
        .unwrap()
        .contains("mpatha (/dev/mapper/mpatha, dm-0)"));
    let (out, _) = run(&["--sysfs-root", &root, "--color", "never", "check", "sdc"]);
    assert!(
        out.contains("info multipath-path: one path of the multipath map mpatha"),
        "{out}"
    );
    // topology: an inventory, as lsblk -t, of every disk, paths included.
    let (doc, _) = topo("multipath");
    let names: Vec<&str> = doc["disks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["dm-0", "sda", "sdb", "sdc"]);
    assert_eq!(doc["disks"][0]["paths"], serde_json::json!(["sdb", "sdc"]));
    for d in &doc["disks"].as_array().unwrap()[2..] {
        assert_eq!(d["path_of"]["name"], "dm-0", "{d}");
        assert_eq!(d["path_of"]["dm_name"], "mpatha", "{d}");
    }
    assert!(doc["disks"][1].get("path_of").is_none());
}

/// SD cards and an eMMC: the card's kind, CID fields and allocation unit
/// (12 MiB is one: the SD table's units need not be powers of two) in
/// the JSON, the human detail, the CSV columns and the Prometheus gauge.
#[test]
fn sd_cards_and_emmc_name_their_allocation_unit() {
    // The SD table's boundary unit: 16 MiB up to 128 GiB, 32 MiB above.
    for (tree, kind, name, unit, bu) in [
        ("sd-8m", "sdxc", "SN128", 8 << 20, Some(16 << 20)),
        ("sd-12m", "sdxc", "EB1QT", 12 << 20, Some(16 << 20)),
        ("sd-16m", "sdxc", "USDU1", 16 << 20, Some(32 << 20)),
        ("emmc", "mmc", "8GTF4R", 512 << 10, None),
    ] {
        let (doc, _) = topo(tree);
        let d = &doc["disks"][0];
        assert_eq!(d["transport"], "mmc", "{d:#}");
        let f = &d["flash"];
        assert_eq!(f["kind"], kind, "{tree}: {f:#}");
        assert_eq!(f["name"], name);
        assert_eq!(f["preferred_erase_bytes"], unit);
        // The SD Association's row for the capacity; none for an eMMC.
        assert_eq!(
            f["sd_table"]["boundary_unit_bytes"].as_u64(),
            bu,
            "{tree}: {f:#}"
        );
        let dev = d["name"].as_str().unwrap();
        let (human, _) = run(&["--sysfs-root", &fixture(tree), "topology", dev]);
        assert!(
            human.contains(&format!(
                "allocation unit {}",
                diskalign::units::exact(unit)
            )),
            "{human}"
        );
        let (csv, _) = run(&[
            "--sysfs-root",
            &fixture(tree),
            "topology",
            "--format",
            "csv",
        ]);
        let mut lines = csv.lines();
        let head: Vec<&str> = lines.next().unwrap().split(',').collect();
        let row: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |c: &str| row[head.iter().position(|h| *h == c).unwrap()];
        assert_eq!(col("flash_kind"), kind);
        assert_eq!(col("erase_unit_bytes"), unit.to_string());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.prom");
        let file = file.to_str().unwrap();
        run(&[
            "--sysfs-root",
            &fixture(tree),
            "topology",
            "--prometheus",
            file,
        ]);
        let prom = std::fs::read_to_string(file).unwrap();
        assert!(
            prom.contains(&format!(
                "diskalign_disk_erase_unit_bytes{{device=\"{dev}\"}} {unit}"
            )),
            "{prom}"
        );
    }
    // Any other disk has none.
    let (doc, _) = topo("sata-512e");
    assert!(doc["disks"][0].get("flash").is_none());
}

/// A 12 MiB allocation unit is a grain of its own: a partition at 16 MiB
/// is 4 MiB into a unit (a warning on an SD card), one at 24 MiB is on
/// one; `--topology erase=` asks the same of an image.
#[test]
fn a_partition_off_the_cards_unit_is_a_warning_naming_it() {
    let (doc, code) = run_json(&["--sysfs-root", &fixture("sd-12m"), "check", "mmcblk1"]);
    assert_eq!(code, 1, "{doc:#}");
    let (p1, p2) = (partition(&doc, 1), partition(&doc, 2));
    let f = p1["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "start-not-erase-unit")
        .unwrap_or_else(|| panic!("{p1:#}"));
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["facts"]["grain_bytes"], 12 << 20);
    assert_eq!(f["facts"]["misalignment_bytes"], 4 << 20);
    assert!(f["message"]
        .as_str()
        .unwrap()
        .contains("4 MiB into a 12 MiB allocation unit"));
    assert_eq!(p2["status"], "aligned", "{p2:#}");
    assert_eq!(doc["targets"][0]["topology"]["erase_unit_bytes"], 12 << 20);
    // An image judged as a card with a 4 MiB unit.
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "card.img", 64 << 20);
    sfdisk(&img, "start=2048, size=8192\nstart=16384\n");
    let (doc, code) = run_json(&["check", img.to_str().unwrap(), "--topology", "erase=4M"]);
    assert_eq!(code, 1);
    let p1 = partition(&doc, 1);
    assert!(
        codes(p1).contains(&"start-not-erase-unit".to_string()),
        "{p1:#}"
    );
    assert_eq!(partition(&doc, 2)["status"], "aligned");
}
