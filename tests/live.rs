//! `check` on live loop devices with 512- and 4096-byte sectors.

mod common;
use common::*;

const MIB: u64 = 1 << 20;

#[test]
fn live_512_disk_and_partition() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "live.img", 64 * MIB);
    // p1: legacy start, odd size (19939 sectors); p2: on 1 MiB, 20484 sectors (2 KiB granular).
    sh(
        "sgdisk",
        &[
            "-a",
            "1",
            "-n",
            "1:63:20001",
            "-n",
            "2:20480:+20484",
            img.to_str().unwrap(),
        ],
    );
    let lo = LoopDev::attach(&img, None);
    let (doc, code) = run_json(&["check", &lo.dev]);
    let t = &doc["targets"][0];
    assert_eq!(t["kind"], "disk");
    assert_eq!(t["topology_source"], "kernel");
    assert_eq!(t["topology"]["logical_block_size"], 512);
    assert_eq!(t["size_bytes"], 64 * MIB);
    assert!(
        !codes(t).contains(&"kernel-table-differs".to_string()),
        "{:?}",
        codes(t)
    );
    for n in [1, 2] {
        let p = partition(&doc, n);
        assert_eq!(p["kernel_alignment_offset"], 0);
        // The kernel's own block size for the node equals our prediction.
        assert_eq!(
            p["device_block_size_kernel"], p["device_block_size"],
            "partition {n}: {p:#}"
        );
    }
    assert_eq!(partition(&doc, 1)["device_block_size"], 512);
    assert_eq!(partition(&doc, 2)["device_block_size"], 2048);
    assert_eq!(code, 1);

    // A partition target reports only that partition of its disk.
    let (doc, _) = run_json(&["check", &lo.part(2)]);
    let t = &doc["targets"][0];
    assert_eq!(t["kind"], "partition");
    assert_eq!(t["partitions"].as_array().unwrap().len(), 1);
    assert_eq!(t["partitions"][0]["number"], 2);
    assert_eq!(t["partitions"][0]["start_bytes"], 20480 * 512);
}

#[test]
fn four_kn_table_moved_to_a_512_presentation() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "4kn.img", 64 * MIB);
    {
        let lo = LoopDev::attach(&img, Some(4096));
        sh("sgdisk", &["-n", "1:256:+4096", "-n", "2:0:+2048", &lo.dev]);
        let _ = sh_status("partx", &["-a", &lo.dev]);
        let (doc, code) = run_json(&["check", &lo.dev]);
        let t = &doc["targets"][0];
        assert_eq!(t["topology"]["logical_block_size"], 4096);
        assert_eq!(t["partition_table"]["sector_size"], 4096);
        assert_eq!(partition(&doc, 1)["start_bytes"], MIB);
        assert_eq!(partition(&doc, 1)["sectors"], 4096);
        assert!(!codes(t).contains(&"table-sector-size-mismatch".to_string()));
        assert_eq!(t["first_start_bytes"]["sgdisk"], MIB);
        assert_eq!(code, 0, "an aligned 4Kn layout is clean: {doc:#}");
    }
    // The same disk behind a controller presenting 512-byte sectors.
    let lo = LoopDev::attach(&img, None);
    let (doc, code) = run_json(&["check", &lo.dev]);
    let t = &doc["targets"][0];
    assert_eq!(t["partition_table"]["sector_size"], 4096);
    let f = t["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "table-sector-size-mismatch")
        .expect("mismatch reported");
    assert_eq!(f["severity"], "error");
    let m = f["message"].as_str().unwrap();
    assert!(
        m.contains("4096-byte sectors") && m.contains("512-byte sectors"),
        "{m}"
    );
    assert_eq!(code, 1);
    drop(lo);
    // Offline, the image is simply judged as the 4Kn disk it was made for.
    let (doc, _) = run_json(&["check", img.to_str().unwrap()]);
    let t = &doc["targets"][0];
    assert_eq!(t["topology"]["logical_block_size"], 4096);
    assert!(!codes(t).contains(&"table-sector-size-mismatch".to_string()));
    // ...unless the user says the device has 512-byte sectors.
    let (doc, _) = run_json(&["check", img.to_str().unwrap(), "--topology", "lbs=512"]);
    assert!(codes(&doc["targets"][0]).contains(&"table-sector-size-mismatch".to_string()));
}

#[test]
fn human_report_of_a_live_disk() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "h.img", 32 * MIB);
    sfdisk(&img, "label: dos\nstart=63, size=16321, type=83\n");
    let lo = LoopDev::attach(&img, None);
    let (out, code) = run(&["--color", "never", "check", &lo.dev]);
    assert!(
        out.contains("verdict: 1 of 1 partitions NOT aligned"),
        "{out}"
    );
    assert!(out.contains("start-not-4k"), "{out}");
    assert_eq!(code, 1);
}
