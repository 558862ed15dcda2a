//! `check` on image files built at test time by sfdisk, sgdisk and parted.

mod common;
use common::*;
use std::path::Path;

const MIB: u64 = 1 << 20;

fn check(img: &Path, extra: &[&str]) -> (serde_json::Value, i32) {
    let p = img.display().to_string();
    let mut args = vec!["check", p.as_str()];
    args.extend_from_slice(extra);
    run_json(&args)
}

#[test]
fn legacy_dos_start_at_63() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "legacy.img", 64 * MIB);
    sfdisk(
        &img,
        "label: dos\nstart=63, size=20417, type=83\nstart=20480, size=40960, type=83\n",
    );
    let (doc, code) = check(&img, &[]);
    let t = &doc["targets"][0];
    assert_eq!(t["partition_table"]["type"], "mbr");
    assert_eq!(t["partition_table"]["sector_size"], 512);
    assert_eq!(t["kind"], "image");
    assert_eq!(t["topology"]["logical_block_size"], 512);
    assert!(codes(t).contains(&"topology-unknown".to_string()));
    let p1 = partition(&doc, 1);
    assert_eq!(p1["start_bytes"], 63 * 512);
    assert_eq!(p1["end_bytes"], (63 + 20417) * 512 - 1);
    assert_eq!(p1["aligned"], false);
    assert!(codes(p1).contains(&"start-not-4k".to_string()));
    assert!(
        !codes(p1).contains(&"start-misaligned".to_string()),
        "512/512 image: the kernel rule passes"
    );
    assert_eq!(partition(&doc, 2)["aligned"], true);
    // Findings carry their numbers and their subject.
    let f = p1["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "start-not-4k")
        .unwrap();
    assert_eq!(f["facts"]["offset_bytes"], 32256, "{f:#}");
    assert_eq!(f["facts"]["grain_bytes"], 4096);
    assert_eq!(f["facts"]["misalignment_bytes"], 3584);
    assert_eq!(f["subject"]["partition"], 1);
    assert_eq!(f["subject"]["target"], img.to_str().unwrap());
    let size = p1["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "size-not-4k")
        .unwrap();
    assert_eq!(size["facts"]["size_bytes"], 20417 * 512);
    assert_eq!(size["facts"]["block_size_bytes"], 512);
    assert_eq!(code, 1);

    // The same image on a 512e disk: now the kernel rule fails too.
    let (doc, _) = check(&img, &["--topology", "pbs=4096"]);
    let p1 = partition(&doc, 1);
    assert_eq!(p1["kernel_offset"], 512);
    assert!(codes(p1).contains(&"start-misaligned".to_string()));
    assert_eq!(p1["tools"]["fdisk"], false);
    assert_eq!(p1["tools"]["parted_minimal"], false);
    assert_eq!(doc["targets"][0]["topology_source"], "override");
}

#[test]
fn one_mib_starts_are_clean_and_portable() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "good.img", 64 * MIB);
    sh(
        "sgdisk",
        &["-n", "1:2048:+16M", "-n", "2:0:+16M", img.to_str().unwrap()],
    );
    let (doc, code) = check(&img, &["--topology", "lbs=512,pbs=4096"]);
    let t = &doc["targets"][0];
    assert_eq!(t["partition_table"]["type"], "gpt");
    assert_eq!(t["portable"], true);
    assert_eq!(t["aligned"], true, "{doc:#}");
    for n in [1, 2] {
        let p = partition(&doc, n);
        assert_eq!(p["aligned"], true);
        assert_eq!(
            p["tools"],
            serde_json::json!({"parted_optimal": true, "parted_minimal": true, "fdisk": true, "sgdisk": true})
        );
        assert_eq!(p["device_block_size"], 4096);
    }
    assert_eq!(t["first_start_bytes"]["parted"], MIB);
    assert_eq!(t["first_start_bytes"]["fdisk"], MIB);
    assert_eq!(t["first_start_bytes"]["sgdisk"], MIB);
    assert_eq!(code, 0);
}

#[test]
fn odd_end_and_size_give_small_node_block_size() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "odd.img", 64 * MIB);
    // 20482 sectors: starts on 1 MiB, size a multiple of 1 KiB but not of 2 KiB.
    sh(
        "sgdisk",
        &["-a", "1", "-n", "1:2048:+20482", img.to_str().unwrap()],
    );
    let (doc, code) = check(&img, &[]);
    let p = partition(&doc, 1);
    assert_eq!(p["size_bytes"], 20482 * 512);
    assert_eq!(p["device_block_size"], 1024);
    let c = codes(p);
    assert!(
        c.contains(&"end-not-4k".to_string()) && c.contains(&"size-not-4k".to_string()),
        "{c:?}"
    );
    assert!(!c.contains(&"start-not-4k".to_string()));
    let msg = p["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "size-not-4k")
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("1024-byte"), "{msg}");
    // Certain: the node block size and the page cache's buffers. Possible
    // only: split writes (6.1 with virtio-blk merged them), so it says how
    // to measure instead of claiming it.
    assert!(
        msg.contains("page cache works on it in 1024-byte buffers"),
        "{msg}"
    );
    assert!(msg.contains("may then reach the device"), "{msg}");
    assert!(msg.contains("probe --buffered --fdatasync"), "{msg}");
    assert!(!msg.contains("are split into"), "{msg}");
    assert_eq!(doc["targets"][0]["portable"], false);
    assert_eq!(code, 1);
}

#[test]
fn parted_on_a_usb_bridge_topology() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "usb.img", 256 * MIB);
    // Where parted -a optimal lands on a bridge reporting opt 33553920: sector 65535.
    sh(
        "parted",
        &[
            "-s",
            img.to_str().unwrap(),
            "mklabel",
            "gpt",
            "unit",
            "s",
            "mkpart",
            "p1",
            "65535",
            "131069",
        ],
    );
    let (doc, code) = check(
        &img,
        &["--topology", "lbs=512,pbs=4096,min=4096,opt=33553920,ao=0"],
    );
    let t = &doc["targets"][0];
    let p = partition(&doc, 1);
    assert_eq!(p["start_bytes"], 33553920);
    assert_eq!(
        p["tools"]["parted_optimal"], true,
        "parted's own check passes"
    );
    assert_eq!(p["tools"]["parted_minimal"], false);
    assert_eq!(p["tools"]["fdisk"], false);
    assert_eq!(p["aligned"], false);
    assert!(codes(p).contains(&"tools-disagree".to_string()));
    assert!(codes(p).contains(&"start-not-4k".to_string()));
    assert_eq!(t["first_start_bytes"]["parted"], 33553920);
    assert_eq!(t["first_start_bytes"]["fdisk"], MIB);
    assert_eq!(t["first_start_bytes"]["sgdisk"], MIB);
    let tc = codes(t);
    assert!(
        tc.contains(&"optimal-io-suspicious".to_string())
            && tc.contains(&"tools-disagree".to_string()),
        "{tc:?}"
    );
    let why = t["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "tools-disagree")
        .unwrap();
    // parted's first start would be off 4 KiB, but on a disk that has its
    // partitions already this is about an imaginary empty disk: advice.
    assert_eq!(why["severity"], "info");
    assert!(why["message"]
        .as_str()
        .unwrap()
        .contains("65535-sector grain"));
    assert_eq!(code, 1);
}

#[test]
fn mbr_with_logical_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "ext.img", 64 * MIB);
    sfdisk(&img, "label: dos\nstart=2048, size=8192, type=83\nstart=10240, type=5\nsize=8192, type=83\nsize=8192, type=83\n");
    let (doc, _) = check(&img, &[]);
    let parts = doc["targets"][0]["partitions"].as_array().unwrap();
    let kinds: Vec<(u64, &str)> = parts
        .iter()
        .map(|p| (p["number"].as_u64().unwrap(), p["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (1, "primary"),
            (2, "extended"),
            (5, "logical"),
            (6, "logical")
        ]
    );
    // sfdisk leaves 2048 sectors of gap before each logical partition.
    assert_eq!(partition(&doc, 5)["start_bytes"], (10240 + 2048) * 512);
    assert_eq!(partition(&doc, 5)["aligned"], true);
    assert!(!codes(&doc["targets"][0]).contains(&"partition-overlap".to_string()));
}

#[test]
fn hybrid_mbr_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "hybrid.img", 64 * MIB);
    let p = img.to_str().unwrap();
    sh("sgdisk", &["-n", "1:2048:+8M", "-n", "2:0:+8M", p]);
    sh("sgdisk", &["-h", "1:EE", p]);
    let (doc, _) = check(&img, &[]);
    let t = &doc["targets"][0];
    assert_eq!(t["partition_table"]["type"], "gpt");
    assert!(
        codes(t).contains(&"hybrid-mbr".to_string()),
        "{:?}",
        codes(t)
    );
}

#[test]
fn corrupted_primary_gpt_uses_backup_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "corrupt.img", 64 * MIB);
    sh("sgdisk", &["-n", "1:2048:+8M", img.to_str().unwrap()]);
    // Flip a byte of the primary header's disk GUID: its CRC no longer matches.
    let mut bytes = std::fs::read(&img).unwrap();
    bytes[512 + 56] ^= 0xff;
    std::fs::write(&img, &bytes).unwrap();
    let (doc, _) = check(&img, &[]);
    let t = &doc["targets"][0];
    assert_eq!(t["partition_table"]["type"], "gpt");
    assert_eq!(partition(&doc, 1)["start_bytes"], MIB);
    let f = t["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "gpt-primary-invalid")
        .expect("says the primary is bad");
    let m = f["message"].as_str().unwrap();
    // The header's offset, not its CRC field's (byte 528).
    assert!(
        m.contains("GPT header at byte 512:") && m.contains("CRC") && m.contains("backup"),
        "{m}"
    );
    damaged_in_every_output(&img, "gpt-primary-invalid", "primary GPT damaged");
}

/// Damaged metadata reads as damaged (docs/findings.md): an error, the
/// status `damaged`, said by the verdict (so by `-q`), in the CSV rows and
/// in the Prometheus file, whatever the partitions' own verdicts.
fn damaged_in_every_output(img: &Path, code: &str, words: &str) {
    // sgdisk itself sees the damage.
    let (_, verify) = sh_status("sgdisk", &["-v", img.to_str().unwrap()]);
    assert!(
        verify.contains("CRC") || verify.contains("ERROR"),
        "{verify}"
    );
    let (doc, exit) = check(img, &["--fail-on", "error"]);
    assert_eq!(exit, 1, "an error");
    let t = &doc["targets"][0];
    let f = t["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == code)
        .unwrap_or_else(|| panic!("{t:#}"));
    assert_eq!(f["severity"], "error");
    assert_eq!(t["summary"]["status"], "damaged");
    assert_eq!(doc["summary"]["status"], "damaged");
    assert_eq!(partition(&doc, 1)["status"], "aligned");
    let p = img.to_str().unwrap();
    let (quiet, _) = run(&["check", "-q", p]);
    assert!(
        quiet.contains("DAMAGED") && quiet.contains(words),
        "{quiet}"
    );
    let (human, _) = run(&["check", p]);
    assert!(human.contains(&format!("error {code}")), "{human}");
    let (csv, _) = run(&["check", "--format", "csv", p]);
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| row[head.iter().position(|h| *h == name).unwrap()];
    assert_eq!(col("target_status"), "damaged", "{csv}");
    assert_eq!(col("target_problems"), code, "{csv}");
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("m.prom");
    run(&["check", p, "--prometheus", prom.to_str().unwrap()]);
    let m = std::fs::read_to_string(&prom).unwrap();
    assert!(
        m.contains(&format!("severity=\"error\",code=\"{code}\"}} 1")),
        "{m}"
    );
}

/// Damage outranks a misalignment: a damaged primary GPT on a disk whose
/// partition is also off 4 KiB is `damaged`, in the JSON, the CSV and
/// the Prometheus status, so the alert on damage is not hidden.
#[test]
fn damage_outranks_a_misaligned_partition() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "both.img", 64 * MIB);
    sh(
        "sgdisk",
        &["-a", "1", "-n", "1:2049:+8M", img.to_str().unwrap()],
    );
    let mut bytes = std::fs::read(&img).unwrap();
    bytes[512 + 56] ^= 0xff;
    std::fs::write(&img, &bytes).unwrap();
    let (doc, _) = check(&img, &[]);
    assert_eq!(partition(&doc, 1)["status"], "misaligned");
    assert_eq!(doc["targets"][0]["summary"]["status"], "damaged");
    let p = img.to_str().unwrap();
    let (csv, _) = run(&["check", "--format", "csv", p]);
    assert!(
        csv.lines().nth(1).unwrap().contains(",misaligned,damaged,"),
        "{csv}"
    );
    let prom = dir.path().join("m.prom");
    run(&["check", p, "--prometheus", prom.to_str().unwrap()]);
    let m = std::fs::read_to_string(&prom).unwrap();
    assert!(m.contains("status=\"damaged\"} 1"), "{m}");
}

#[test]
fn corrupted_backup_gpt_is_damaged_too() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "backup.img", 64 * MIB);
    sh("sgdisk", &["-n", "1:2048:+8M", img.to_str().unwrap()]);
    // The backup header's disk GUID, in the last sector.
    let mut bytes = std::fs::read(&img).unwrap();
    bytes[(64 * MIB - 512 + 56) as usize] ^= 0xff;
    std::fs::write(&img, &bytes).unwrap();
    damaged_in_every_output(&img, "gpt-backup-invalid", "backup GPT damaged");

    // A disk grown under its table: both copies read, the backup is just
    // not at the end any more. Hygiene (`sgdisk -e`), not damage.
    let grown = image(dir.path(), "grown.img", 32 * MIB);
    sh("sgdisk", &["-n", "1:2048:+8M", grown.to_str().unwrap()]);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&grown)
        .unwrap()
        .set_len(64 * MIB)
        .unwrap();
    let (doc, _) = check(&grown, &[]);
    let t = &doc["targets"][0];
    let f = t["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "gpt-backup-invalid")
        .unwrap_or_else(|| panic!("{t:#}"));
    assert_eq!(f["severity"], "warning", "{f:#}");
    assert_eq!(t["summary"]["status"], "untidy");
}

#[test]
fn truncated_images() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "trunc.img", 64 * MIB);
    sh("sgdisk", &["-n", "1:2048:+8M", img.to_str().unwrap()]);
    // Cut the end off: the backup GPT is gone and partition 1 still fits.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&img)
        .unwrap()
        .set_len(32 * MIB)
        .unwrap();
    let (doc, code) = check(&img, &[]);
    assert!(codes(&doc["targets"][0]).contains(&"gpt-backup-invalid".to_string()));
    assert_eq!(code, 1);
    // Cut into the entry array: the GPT cannot be read, exit 2 with the layer and offset.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&img)
        .unwrap()
        .set_len(1536)
        .unwrap();
    let (doc, code) = check(&img, &[]);
    assert_eq!(code, 2);
    let msg = doc["errors"][0]["message"].as_str().unwrap();
    assert!(msg.contains("GPT entries at byte 1024"), "{msg}");
    // Smaller than two sectors: no disk image at all.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&img)
        .unwrap()
        .set_len(100)
        .unwrap();
    let (doc, code) = check(&img, &[]);
    assert_eq!(code, 2);
    assert!(doc["errors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("a file of 100 bytes, smaller than two 512-byte sectors: not a disk image"));
}

#[test]
fn bad_targets_are_reported_and_the_rest_still_checked() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "ok.img", 16 * MIB);
    sfdisk(&img, "label: gpt\nstart=2048, size=8192\n");
    let (doc, code) = run_json(&[
        "check",
        "/nonexistent/disk.img",
        img.to_str().unwrap(),
        "/dev/null",
    ]);
    assert_eq!(code, 2);
    assert_eq!(doc["targets"].as_array().unwrap().len(), 1);
    let errs = doc["errors"].as_array().unwrap();
    assert_eq!(errs.len(), 2);
    assert!(errs[0]["message"]
        .as_str()
        .unwrap()
        .contains("No such file"));
    assert!(errs[1]["message"]
        .as_str()
        .unwrap()
        .contains("not a block device or a regular file"));
    let (_, code) = run(&["check", img.to_str().unwrap(), "--topology", "lbs=1000"]);
    assert_eq!(code, 2);
    let (_, code) = run(&["check", "--topology", "bogus"]);
    assert_eq!(code, 2);
}

/// NTFS by mkntfs, FAT by mkfs.fat and exFAT by mkfs.exfat, each in a DOS
/// partition, are read as filesystem layers: their labels and serials as
/// blkid reads them, the FAT's data area judged where it is (mkfs.fat's
/// 2 KiB clusters on a 4 MiB volume leave it 2560 bytes past 4 KiB), the
/// hidden sectors mkfs could not know on an image file said as info. What
/// no layer reads (a GPT inside partition 4) is named by its signature in
/// every output, never "nothing": the stack tree, the verdict, the JSON
/// (`unread`, `signature`), the page and plan's content.
#[test]
fn fat_exfat_and_ntfs_are_read_and_what_no_layer_reads_is_named() {
    for tool in ["mkntfs", "mkfs.fat", "mkfs.exfat", "sgdisk", "blkid"] {
        require_tool(tool);
    }
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "win.img", 64 * MIB);
    sfdisk(
        &img,
        "start=2048, size=32768, type=7\nstart=34816, size=8192, type=c\nstart=43008, size=8192, type=7\nstart=51200, size=8192, type=83\n",
    );
    let part = |name: &str, mib: u64, tool: &str, args: &[&str], at: u64| {
        let p = image(dir.path(), name, mib * MIB);
        let mut a = args.to_vec();
        a.push(p.to_str().unwrap());
        sh(tool, &a);
        let of = format!("of={}", img.display());
        let seek = format!("seek={at}");
        let src = format!("if={}", p.display());
        sh(
            "dd",
            &[&src, &of, "bs=512", &seek, "conv=notrunc", "status=none"],
        );
    };
    part(
        "ntfs.img",
        16,
        "mkntfs",
        &[
            "-F", "-Q", "-q", "-p", "2048", "-H", "255", "-S", "63", "-L", "WIN",
        ],
        2048,
    );
    part("fat.img", 4, "mkfs.fat", &["-n", "STICK"], 34816);
    part("exfat.img", 4, "mkfs.exfat", &["-L", "CAM"], 43008);
    part("gpt.img", 4, "sgdisk", &["-o"], 51200);
    let (doc, code) = check(&img, &[]);
    assert_eq!(code, 1, "{doc:#}");
    let t = &doc["targets"][0];
    assert_eq!(
        t["verdict"],
        "MISALIGNED: all 4 partitions aligned, portable, 1 of 4 stack layers misaligned, GPT partition table not read (1 error, 3 info)"
    );
    let blkid = |start: u64, tag: &str| -> String {
        let out = std::process::Command::new("blkid")
            .args(["-p", "-o", "value", "-s", tag, "-O"])
            .arg((start * 512).to_string())
            .arg(&img)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    for (i, (name, kind, label, start)) in [
        ("NTFS", "ntfs", "WIN", 2048),
        ("FAT12", "vfat", "STICK", 34816),
        ("exFAT", "exfat", "CAM", 43008),
    ]
    .into_iter()
    .enumerate()
    {
        let l = &t["stack"][i]["children"][0];
        assert_eq!(l["kind"], "filesystem", "{l:#}");
        assert_eq!(l["name"], name);
        assert_eq!(l["filesystem"]["type"], kind);
        let v = &l["filesystem"]["volume"];
        assert_eq!(v["label"], label, "{v:#}");
        assert_eq!(v["label"].as_str().unwrap(), blkid(start, "LABEL"));
        assert_eq!(v["serial"].as_str().unwrap(), blkid(start, "UUID"));
        assert_eq!(v["start_sectors"], start);
    }
    let fat = &t["stack"][1]["children"][0];
    assert_eq!(fat["status"], "misaligned");
    assert_eq!(fat["filesystem"]["volume"]["data_start_bytes"], 17848832);
    let codes: Vec<&str> = fat["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["layer-start-not-4k", "fs-hidden-sectors"]);
    let ntfs = &t["stack"][0]["children"][0];
    assert_eq!(ntfs["findings"].as_array().unwrap().len(), 0, "{ntfs:#}");
    assert_eq!(ntfs["filesystem"]["volume"]["backup"]["state"], "same");
    let gpt = &t["stack"][3]["children"][0];
    assert_eq!(gpt["kind"], "unread", "{gpt:#}");
    assert_eq!(gpt["signature"]["what"], "GPT partition table");
    let (out, _) = run(&["check", img.to_str().unwrap(), "--width", "0"]);
    assert!(
        out.contains("└─ GPT partition table  at byte 26214400 (25 MiB), GPT partition table signature (not read: what is inside it is not judged)  aligned"),
        "{out}"
    );
    assert!(
        out.contains("NTFS  at byte 1048576 (1 MiB), cluster 4 KiB, sector 512, hidden sectors 2048, label \"WIN\""),
        "{out}"
    );
    let (q, _) = run(&["check", "-q", img.to_str().unwrap()]);
    assert!(q.contains("GPT partition table not read"), "{q}");
    let (page, _) = run(&["check", img.to_str().unwrap(), "--format", "html"]);
    assert_eq!(page.matches("data-kind=\"unread\"").count(), 1);
    assert_eq!(page.matches("data-kind=\"filesystem\"").count(), 3);
    let (plan, _) = run_json(&["plan", img.to_str().unwrap()]);
    let contents: Vec<&str> = plan["targets"][0]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        [
            "NTFS filesystem",
            "FAT12 filesystem",
            "exFAT filesystem",
            "GPT partition table, not judged"
        ]
    );
    let (human, _) = run(&["plan", img.to_str().unwrap()]);
    assert!(!human.contains("nothing recognised"), "{human}");
}

#[test]
fn empty_image_has_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "blank.img", 16 * MIB);
    let (doc, code) = check(&img, &[]);
    assert_eq!(doc["targets"][0]["partition_table"]["type"], "none");
    assert_eq!(
        doc["targets"][0]["verdict"].as_str().unwrap(),
        "aligned: no partition table (1 info)"
    );
    assert_eq!(code, 0);
}

/// fdisk (util-linux ≥ 2.27) judges a granularity that is not a power of two
/// with a remainder. With min 12288 the kernel's offsets are 4096 for the
/// first partition and 0 for the second; fdisk 2.38.1 warns for the first
/// one only, and so must our emulation.
#[test]
fn fdisk_non_power_of_two_granularity() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "np2.img", 4096 * MIB);
    sfdisk(
        &img,
        "label: gpt\nfirst-lba: 34\n1 : start=2034424, size=636934\n2 : start=2758656, size=120831\n",
    );
    let (doc, _) = check(&img, &["--topology", "lbs=512,pbs=4096,min=12288,opt=0"]);
    let (p1, p2) = (partition(&doc, 1), partition(&doc, 2));
    assert_eq!(p1["kernel_offset"], 4096, "{p1:#}");
    assert_eq!(p2["kernel_offset"], 0, "{p2:#}");
    assert_eq!(p1["tools"]["fdisk"], false, "{p1:#}");
    assert_eq!(p2["tools"]["fdisk"], true, "{p2:#}");
    // On the empty disk libfdisk aligns up to its 1 MiB grain (the grain is
    // above the 12288 granularity): sfdisk's first start is sector 2048.
    assert_eq!(doc["targets"][0]["first_start_bytes"]["fdisk"], MIB);
}

/// The sentences are rendered from the disk at hand: on 4Kn behind a bridge
/// (opt 65535 x 4096) every sector is 4 KiB aligned and fdisk follows the
/// value (it ignores exactly 33553920 only); a start judged against the
/// optimal I/O grid names the alignment offset the grid starts from.
#[test]
fn sentences_fit_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "s.img", 2048 * MIB);
    sfdisk(&img, "label: gpt\nstart=131072, size=8192\n");
    let message = |doc: &serde_json::Value, code: &str| -> String {
        let t = &doc["targets"][0];
        let all = t["findings"].as_array().unwrap().iter().chain(
            t["partitions"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|p| p["findings"].as_array().unwrap()),
        );
        all.filter(|f| f["code"] == code)
            .map(|f| f["message"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (doc, _) = check(&img, &["--topology", "lbs=4096,pbs=4096,opt=268431360"]);
    let m = message(&doc, "optimal-io-suspicious");
    assert!(m.contains("65535 x 4096"), "{m}");
    assert!(!m.contains("not 4 KiB aligned"), "{m}");
    assert!(m.contains("fdisk follows it too"), "{m}");
    assert!(!m.contains("ignores it ("), "{m}");
    assert_eq!(doc["targets"][0]["first_start_bytes"]["fdisk"], 268431360);
    // The 512e bridge keeps its sentence.
    let (doc, _) = check(&img, &["--topology", "lbs=512,pbs=4096,opt=33553920"]);
    let m = message(&doc, "optimal-io-suspicious");
    assert!(
        m.contains("not 4 KiB aligned") && m.contains("ignores exactly 33553920"),
        "{m}"
    );

    let (doc, _) = check(&img, &["--topology", "pbs=4096,opt=1m,ao=3584"]);
    let m = message(&doc, "start-not-optimal");
    assert!(m.contains("starts at byte 67108864"), "{m}");
    assert!(m.contains("from the alignment offset 3584"), "{m}");
    assert!(!m.contains("not a multiple of the optimal I/O size"), "{m}");
}

/// sgdisk's usual fill-to-end (`-n2:0:0`) ends a partition at the last
/// usable LBA, off 4 KiB: hygiene (untidy, a warning), not MISALIGNED.
/// `--fail-on` moves the line, and the exit status is a bitmask.
#[test]
fn an_end_off_4k_is_untidy_and_fail_on_decides() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "fill.img", 64 * MIB);
    let p = img.to_str().unwrap();
    sh("sgdisk", &["-n", "1:2048:+16M", "-n", "2:0:0", p]);
    let (doc, code) = run_json(&["check", p]);
    let t = &doc["targets"][0];
    assert_eq!(partition(&doc, 1)["status"], "aligned");
    assert_eq!(partition(&doc, 2)["status"], "untidy");
    assert!(codes(partition(&doc, 2)).contains(&"end-not-4k".to_string()));
    assert_eq!(t["summary"]["status"], "untidy");
    assert_eq!(t["summary"]["errors"], 0);
    assert_eq!(t["summary"]["partitions"], 2);
    assert_eq!(t["summary"]["partitions_aligned"], 1);
    assert_eq!(doc["summary"]["exit_status"], 1);
    assert_eq!(doc["summary"]["fail_on"], "warning");
    assert_eq!(code, 1);

    let (out, _) = run(&["--color", "never", "check", p]);
    assert!(
        out.contains("verdict: untidy: 1 of 2 partitions untidy, not portable"),
        "{out}"
    );
    assert!(!out.contains("MISALIGNED"), "{out}");

    for (tier, want) in [("error", 0), ("warning", 1), ("info", 1), ("never", 0)] {
        let (doc, code) = run_json(&["check", p, "--fail-on", tier]);
        assert_eq!(code, want, "--fail-on {tier}");
        assert_eq!(doc["summary"]["exit_status"], want);
    }
    // A target that cannot be checked adds bit 2 without hiding bit 1.
    let (doc, code) = run_json(&["check", p, "/nonexistent/disk.img"]);
    assert_eq!(code, 3);
    assert_eq!(doc["summary"]["unchecked"], 1);
    assert_eq!(doc["summary"]["checked"], 1);
    let (_, code) = run_json(&["check", p, "/nonexistent/disk.img", "--fail-on", "error"]);
    assert_eq!(code, 2);
}

/// The human report reads as a ticket: the verdict first, each
/// partition's errors before its warnings, and a last line with the next
/// step when something is misaligned; what the tools would do on an empty
/// disk is advice for `-v` once the disk has partitions.
#[test]
fn the_human_report_is_a_ticket() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "ticket.img", 64 * MIB);
    sfdisk(&img, "label: dos\nstart=63, size=20417, type=83\n");
    let p = img.to_str().unwrap();
    let (human, code) = run(&["check", p]);
    assert_eq!(code, 1);
    let lines: Vec<&str> = human.lines().collect();
    assert!(lines[1].starts_with("  verdict: MISALIGNED"), "{human}");
    let at = |s: &str| {
        lines
            .iter()
            .position(|l| l.contains(s))
            .unwrap_or_else(|| panic!("no {s}: {human}"))
    };
    assert!(at("error partition 1 start-not-4k") < at("warning partition 1 size-not-4k"));
    assert!(at("warning partition 1 size-not-4k") < at("info topology-unknown"));
    // The commands stand whole on their lines, for copying (what the plan
    // says after three spaces, in parentheses, as the script's line).
    assert_eq!(
        lines[lines.len() - 2..],
        [
            format!("next: diskalign plan {p}   (moves or resizes 1 partition)"),
            format!(
                "      diskalign plan {p} --script fix-ticket.img.sh   (writes the fix as a script to read and run)"
            )
        ]
    );
    assert!(!human.contains("first start on an empty disk"), "{human}");
    // -q: each verdict and the summary line, as its help says; no next.
    let (quiet, _) = run(&["check", "-q", p]);
    assert!(!quiet.contains("next:"), "{quiet}");
    assert!(
        quiet
            .lines()
            .next()
            .unwrap()
            .starts_with(&format!("{p}: MISALIGNED")),
        "{quiet}"
    );
    let last = quiet.rfind("summary: MISALIGNED").expect(&quiet);
    assert!(
        quiet[last..].lines().skip(1).all(|l| l.starts_with("  ")),
        "{quiet}"
    );

    // Aligned: no next step.
    let ok = image(dir.path(), "ok.img", 64 * MIB);
    sfdisk(&ok, "label: gpt\nstart=2048, size=20480\n");
    let (human, code) = run(&["check", ok.to_str().unwrap()]);
    assert_eq!(code, 0, "{human}");
    assert!(!human.contains("next:"), "{human}");
}

/// On a 1 MiB image sfdisk itself starts at sector 34 (byte 17408):
/// libfdisk drops its 1 MiB grain to the physical sector on a disk of at
/// most 4 grains. The explanation says so, and once the disk has
/// partitions the empty-disk comparison is info, shown with -v.
#[test]
fn fdisk_first_start_on_a_tiny_disk() {
    let dir = tempfile::tempdir().unwrap();
    let empty = image(dir.path(), "empty.img", MIB);
    let (doc, _) = check(&empty, &[]);
    assert_eq!(doc["targets"][0]["first_start_bytes"]["fdisk"], 17408);
    let t = &doc["targets"][0];
    let f = t["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "tools-disagree")
        .unwrap_or_else(|| panic!("{t:#}"));
    let m = f["message"].as_str().unwrap();
    assert!(
        m.contains("drop it to the physical sector") && !m.contains("optimal I/O"),
        "{m}"
    );
    assert_eq!(
        f["severity"], "warning",
        "an empty disk: fdisk's start would be off"
    );
    let (human, _) = run(&["check", empty.to_str().unwrap()]);
    assert!(human.contains("first start on an empty disk: parted 1048576 | fdisk 17408"));

    let img = image(dir.path(), "tiny.img", MIB);
    sfdisk(&img, "label: gpt\nsize=100K\n");
    let (doc, _) = check(&img, &[]);
    assert_eq!(
        partition(&doc, 1)["start_bytes"],
        17408,
        "where sfdisk put it"
    );
    let t = &doc["targets"][0];
    let f = t["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "tools-disagree")
        .unwrap();
    assert_eq!(f["severity"], "info", "about an imaginary empty disk");
    let p = img.to_str().unwrap();
    let (human, _) = run(&["check", p]);
    assert!(!human.contains("first start on an empty disk"), "{human}");
    assert!(!human.contains("tools-disagree"), "{human}");
    let (verbose, _) = run(&["check", "-v", p]);
    assert!(verbose.contains("first start on an empty disk: parted 1048576 | fdisk 17408"));
    assert!(
        verbose.contains("info tools-disagree: on an empty disk"),
        "{verbose}"
    );
}

/// A file of a few KiB with nothing in it a tool writes (text) is "no
/// partition table", not "untidy": no partition fits in it, so where
/// parted and fdisk would start one is no finding and no line.
#[test]
fn a_small_text_file_is_no_partition_table() {
    let dir = tempfile::tempdir().unwrap();
    let txt = dir.path().join("notes.txt");
    let line = "a line of text, as a README holds them\n";
    std::fs::write(&txt, &line.repeat(8192 / line.len() + 1).as_bytes()[..8192]).unwrap();
    let (doc, code) = check(&txt, &[]);
    let t = &doc["targets"][0];
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(t["partition_table"]["type"], "none");
    assert_eq!(t["summary"]["status"], "aligned");
    assert!(
        t["verdict"]
            .as_str()
            .unwrap()
            .contains("no partition table"),
        "{doc:#}"
    );
    assert!(!codes(t).contains(&"tools-disagree".to_string()), "{doc:#}");
    let (out, code) = run(&["check", txt.to_str().unwrap(), "-v"]);
    assert_eq!(code, 0);
    assert!(!out.contains("first start on an empty disk"), "{out}");
    // A disk of 3 MiB has room, and fdisk would start it off 4 KiB.
    let small = image(dir.path(), "small.img", 3 * MIB);
    let (doc, code) = check(&small, &[]);
    assert_eq!(code, 1);
    assert!(codes(&doc["targets"][0]).contains(&"tools-disagree".to_string()));
}

/// `topology-unknown` says the topology is the image default; an image
/// whose topology `--topology` gives has none, so `--fail-on info`
/// passes an aligned image. A GPT made for 4096-byte sectors (sgdisk on
/// a 4Kn loop device) is judged as that 4Kn disk and said once.
#[test]
fn an_image_with_its_topology_given_is_not_topology_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "aligned.img", 64 * MIB);
    sh("sgdisk", &["-n", "1:2048:+16M", img.to_str().unwrap()]);
    let (doc, code) = check(&img, &["--fail-on", "info"]);
    assert!(codes(&doc["targets"][0]).contains(&"topology-unknown".to_string()));
    assert_eq!(
        code, 1,
        "the image default is info, and --fail-on info fails on it"
    );
    let (doc, code) = check(&img, &["--topology", "pbs=4096", "--fail-on", "info"]);
    assert_eq!(doc["targets"][0]["topology_source"], "override");
    assert!(!codes(&doc["targets"][0]).contains(&"topology-unknown".to_string()));
    assert_eq!(code, 0, "{doc:#}");

    let k4 = image(dir.path(), "4kn.img", 64 * MIB);
    {
        let lo = LoopDev::attach(&k4, Some(4096));
        sh("sgdisk", &["-n", "1:256:+4096", &lo.dev]);
    }
    let (doc, _) = check(&k4, &[]);
    let unknown: Vec<&serde_json::Value> = doc["targets"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "topology-unknown")
        .collect();
    assert_eq!(unknown.len(), 1, "{doc:#}");
    assert!(unknown[0]["message"]
        .as_str()
        .unwrap()
        .contains("4096-byte sectors"));
    let (doc, code) = check(&k4, &["--topology", "pbs=4096", "--fail-on", "info"]);
    assert_eq!(doc["targets"][0]["partition_table"]["sector_size"], 4096);
    assert!(!codes(&doc["targets"][0]).contains(&"topology-unknown".to_string()));
    assert_eq!(code, 0, "{doc:#}");
}

/// An NTFS shrunk by ntfsresize keeps its backup boot sector in the
/// partition's last sector, not after the new end (which stays zero):
/// check finds it there and says it differs (it keeps the old sector
/// count), where mkntfs's own copy after the volume reads the same.
#[test]
fn an_ntfs_backup_is_found_after_the_volume_or_at_the_partitions_end() {
    for tool in ["mkntfs", "ntfsresize"] {
        require_tool(tool);
    }
    let dir = tempfile::tempdir().unwrap();
    let part = image(dir.path(), "part.img", 64 * MIB);
    let p = part.to_str().unwrap();
    sh("mkntfs", &["-q", "-F", "-Q", p]);
    let backup = |img: &std::path::Path| {
        let (doc, _) = check(img, &[]);
        let v = doc["targets"][0]["stack"][0]["children"][0]["filesystem"]["volume"].clone();
        (
            v["backup"]["state"].clone(),
            v["backup"]["offset_bytes"].clone(),
        )
    };
    let img = image(dir.path(), "disk.img", 80 * MIB);
    sfdisk(&img, "start=2048, size=131072, type=7\n");
    let put = |img: &std::path::Path| {
        sh(
            "dd",
            &[
                &format!("if={p}"),
                &format!("of={}", img.display()),
                "bs=512",
                "seek=2048",
                "conv=notrunc",
                "status=none",
            ],
        )
    };
    put(&img);
    assert_eq!(backup(&img), ("same".into(), (131071u64 * 512).into()));
    let out = std::process::Command::new("sh")
        .args(["-c", &format!("echo y | ntfsresize -f --size 40M {p}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    put(&img);
    assert_eq!(backup(&img), ("differs".into(), (131071u64 * 512).into()));
}

/// A FAT32 the kernel mounted read-write carries its dirty flag (byte
/// 0x41) in the main boot sector only: its backup still reads the same.
/// An NTFS imaged from its partition (at byte 0 of a file, recording the
/// partition's start) is information, and plan prints no command that
/// would write 0 there.
#[test]
fn a_mounted_fat32_and_a_partition_image_are_not_flagged() {
    for tool in ["mkfs.fat", "mkntfs"] {
        require_tool(tool);
    }
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "card.img", 64 * MIB);
    sfdisk(&img, "start=2048, type=c\n");
    let p = img.to_str().unwrap();
    sh(
        "mkfs.fat",
        &["-F", "32", "-s", "8", "-h", "2048", "--offset", "2048", p],
    );
    let mut bytes = std::fs::read(&img).unwrap();
    bytes[2048 * 512 + 0x41] |= 1;
    std::fs::write(&img, &bytes).unwrap();
    let (doc, code) = check(&img, &[]);
    let fat = &doc["targets"][0]["stack"][0]["children"][0];
    assert_eq!(
        fat["filesystem"]["volume"]["backup"]["state"], "same",
        "{fat:#}"
    );
    assert_eq!(code, 0, "{doc:#}");

    let part = image(dir.path(), "sda1.img", 32 * MIB);
    sh(
        "mkntfs",
        &["-q", "-F", "-Q", "-p", "2048", part.to_str().unwrap()],
    );
    let (doc, code) = check(&part, &[]);
    assert_eq!(code, 0, "{doc:#}");
    let ntfs = &doc["targets"][0]["stack"][0]["children"][0];
    let h = ntfs["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "fs-hidden-sectors")
        .unwrap_or_else(|| panic!("{ntfs:#}"));
    assert_eq!(h["severity"], "info");
    let (plan, _) = run(&["plan", part.to_str().unwrap(), "--width", "0"]);
    assert!(!plan.contains("dd "), "{plan}");
    assert!(!plan.contains("od -An"), "{plan}");
}
