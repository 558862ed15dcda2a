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
        out.contains("verdict: MISALIGNED: 1 partition misaligned"),
        "{out}"
    );
    assert!(out.contains("start-not-4k"), "{out}");
    assert_eq!(code, 1);
}

/// The kernel registers a DOS extended container as max(lbs/512, 2)
/// sectors (block/partitions/msdos.c; partx -a follows it with 2), so its
/// node has 1024-byte blocks on a 512-byte disk whatever the table says,
/// and the container's table size gives no size-not-4k. (4Kn, where the
/// kernel registers 8 sectors and partx cannot add the container, is
/// checked in the qemu scenario 10-dos-extended.) A block size set since (a
/// mounted filesystem sets its own) is named against the prediction.
#[test]
fn extended_container_node_block_size() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "ext.img", 64 * MIB);
    // A container of 40961 sectors: not a multiple of 4 KiB.
    sfdisk(
        &img,
        "label: dos\nstart=2048, size=8192, type=83\nstart=16384, size=40961, type=5\nstart=18432, size=8192, type=83\n",
    );
    let lo = LoopDev::attach(&img, None);
    let (doc, _) = run_json(&["check", &lo.dev]);
    let ext = partition(&doc, 2);
    assert_eq!(ext["kind"], "extended", "{doc:#}");
    assert_eq!(ext["device_block_size"], 1024, "{ext:#}");
    assert_eq!(ext["device_block_size_kernel"], 1024, "{ext:#}");
    let c = codes(ext);
    assert!(!c.contains(&"size-not-4k".to_string()), "{c:?}");
    assert!(!c.contains(&"node-block-size-differs".to_string()), "{c:?}");
    drop(lo);

    // ext4 with 1 KiB blocks mounted on a 4 MiB partition: the node's block
    // size becomes 1024 where its size gives 4096.
    let img = image(dir.path(), "fs.img", 64 * MIB);
    sfdisk(&img, "label: gpt\nstart=2048, size=8192\n");
    let lo = LoopDev::attach(&img, None);
    sh("mkfs.ext4", &["-q", "-F", "-b", "1024", &lo.part(1)]);
    let m = Mounted::new(&lo.part(1));
    let (doc, _) = run_json(&["check", &lo.dev]);
    drop(m);
    let p = partition(&doc, 1);
    assert_eq!(p["device_block_size"], 4096, "{p:#}");
    assert_eq!(p["device_block_size_kernel"], 1024, "{p:#}");
    assert!(
        codes(p).contains(&"node-block-size-differs".to_string()),
        "{p:#}"
    );
}

/// Without permission to open the node (here: as `nobody`; in a container
/// it is EPERM), the partitions are judged from the kernel's view in sysfs,
/// the reason is said once, and nothing is reported twice.
#[test]
fn unreadable_node_is_judged_from_sysfs() {
    require_tool("setpriv");
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "noperm.img", 64 * MIB);
    // p1 at the legacy sector 63; p2 on 1 MiB, filled to the end.
    sh(
        "sgdisk",
        &[
            "-a",
            "1",
            "-n",
            "1:63:20001",
            "-n",
            "2:20480:0",
            img.to_str().unwrap(),
        ],
    );
    let lo = LoopDev::attach(&img, None);
    let as_nobody = |args: &[&str]| {
        let mut cmd = std::process::Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin()])
            .args(args);
        output_of(&mut cmd)
    };
    let (out, err, code) = as_nobody(&["check", &lo.dev, "--json"]);
    assert!(err.is_empty(), "nothing on stderr: {err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let t = &doc["targets"][0];
    assert_eq!(t["partition_table"]["type"], "kernel");
    assert!(codes(t).contains(&"table-not-read".to_string()), "{t:#}");
    assert_eq!(partition(&doc, 1)["start_bytes"], 63 * 512);
    assert_eq!(partition(&doc, 1)["kernel_alignment_offset"], 0);
    assert_eq!(partition(&doc, 2)["start_bytes"], MIB * 10);
    assert!(codes(partition(&doc, 1)).contains(&"start-not-4k".to_string()));
    assert_eq!(code, 1);

    let (out, err, _) = as_nobody(&["check", &lo.dev]);
    assert!(err.is_empty(), "nothing on stderr: {err}");
    assert_eq!(
        out.matches("partition table not read (EACCES)").count(),
        1,
        "{out}"
    );
}

/// A loop device answers no identify command: the passthrough calls give
/// an error value each (no panic), and `topology` says in one line why
/// the device says nothing (`device_says` null, `device_says_note`), in
/// the JSON and the human details alike, with the exit status the disk's
/// hints give, as before.
#[test]
fn a_loop_device_says_nothing_of_itself() {
    use diskalign::sys;
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "says.img", 16 * MIB);
    let lo = LoopDev::attach(&img, None);
    let node = std::path::Path::new(&lo.dev);
    let nvme = sys::nvme_identify_namespace(node).unwrap_err();
    let rc = sys::scsi_read_capacity16(node).unwrap_err();
    let ata = sys::ata_identify(node).unwrap_err();
    for e in [&nvme, &rc, &ata] {
        // The node opens; the loop driver refuses both ioctls (ENOTTY or
        // EINVAL).
        assert!(matches!(e, sys::PassthroughError::Command(_)), "{e:?}");
        assert!(e.raw_os_error().is_some(), "{e}");
    }
    let (doc, code) = run_json(&["topology", &lo.dev]);
    assert!(doc["errors"].as_array().unwrap().is_empty(), "{doc:#}");
    let d = &doc["disks"][0];
    assert!(d["device_says"].is_null(), "{d:#}");
    assert_eq!(
        d["device_says_note"],
        "the kernel makes loop devices itself: no identify data to ask for"
    );
    let problems = d["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["severity"] == "warning" || f["severity"] == "error");
    assert_eq!(code, i32::from(problems), "{d:#}");
    let (out, human_code) = run(&["--color", "never", "topology", &lo.dev]);
    assert!(
        out.contains(
            "  device says           the kernel makes loop devices itself: no identify data to ask for\n"
        ),
        "{out}"
    );
    assert_eq!(human_code, code);
}

/// `check /dev/loopNp1` names its disk as the next step, with the same
/// options, and that command runs as printed (a partition cannot be
/// planned on its own); so does the script variant. A clean partition of
/// the same disk gets no next step.
#[test]
fn the_next_step_of_a_partition_plans_its_disk_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "next.img", 64 * MIB);
    sh(
        "sgdisk",
        &[
            "-a",
            "1",
            "-n",
            "1:63:20001",
            "-n",
            "2:20480:+8M",
            img.to_str().unwrap(),
        ],
    );
    let lo = LoopDev::attach(&img, None);
    let (out, code) = run(&["check", &lo.part(1), "--topology", "pbs=4096"]);
    assert_eq!(code, 1, "{out}");
    let disk_plan = format!("diskalign plan {} --topology pbs=4096", lo.dev);
    // The command whole, then what its plan says in parentheses.
    assert!(out.contains(&format!("next: {disk_plan}   (")), "{out}");
    let bin_dir = std::path::Path::new(bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for line in out.lines().filter(|l| l.contains("diskalign plan")) {
        let c = line
            .trim_start_matches("next:")
            .trim()
            .split("   (")
            .next()
            .unwrap();
        let (o, e, code) = output_of(
            std::process::Command::new("sh")
                .args(["-c", c])
                .current_dir(dir.path())
                .env("PATH", &path),
        );
        assert_eq!(code, 1, "`{c}` runs as printed and plans the fix:\n{o}{e}");
    }
    assert!(dir
        .path()
        .join(format!("fix-{}.sh", lo.dev.trim_start_matches("/dev/")))
        .exists());
    let (doc, _) = run_json(&["check", &lo.part(1), "--topology", "pbs=4096"]);
    assert_eq!(doc["targets"][0]["next"], disk_plan.as_str());
    // Partition 2 is aligned: nothing to plan for it, whatever its disk has.
    let (out, code) = run(&["check", &lo.part(2), "--topology", "pbs=4096"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("next:"), "{out}");
}

/// What was written through a partition's node is what the next check of
/// its disk reads: the disk's page cache does not see writes to the
/// partition's, and while something holds the disk open (md holds its
/// members, LVM its PVs' disks stay open under a mounted LV) the kernel
/// keeps that cache between checks, so the disk is read past it
/// (O_DIRECT). Here an ext4 of 4 KiB blocks is read once through the
/// disk, then made again with 1 KiB blocks through the partition.
#[test]
fn a_write_through_the_partition_node_is_seen_on_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "alias.img", 64 * MIB);
    sfdisk(&img, "label: gpt\nstart=2048, size=65536\n");
    let lo = LoopDev::attach(&img, None);
    // Held open, as a holder holds it: its page cache outlives each check.
    let _held = std::fs::File::open(&lo.dev).unwrap();
    let block = |doc: &serde_json::Value| {
        doc["targets"][0]["stack"][0]["children"][0]["filesystem"]["block_size"].clone()
    };
    sh("mkfs.ext4", &["-q", "-F", "-b", "4096", &lo.part(1)]);
    let (doc, _) = run_json(&["check", &lo.dev]);
    assert_eq!(block(&doc), 4096, "{doc:#}");
    sh("mkfs.ext4", &["-q", "-F", "-b", "1024", &lo.part(1)]);
    let (doc, _) = run_json(&["check", &lo.dev]);
    assert_eq!(block(&doc), 1024, "{doc:#}");
}

/// Two disks are read ahead, each in io_uring submissions of reads in
/// flight together; where the kernel refuses io_uring (a container's
/// seccomp profile) the same reads are made one by one, to the same
/// verdicts, layers and findings.
#[test]
fn disks_read_together_or_one_by_one_say_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let table = "label: gpt\nstart=2048, size=40960\nstart=43008, size=40960\n";
    let disks: Vec<LoopDev> = ["a.img", "b.img"]
        .iter()
        .map(|name| {
            let img = image(dir.path(), name, 64 * MIB);
            sfdisk(&img, table);
            LoopDev::attach(&img, None)
        })
        .collect();
    sh("mkfs.ext4", &["-q", "-F", &disks[0].part(1)]);
    sh("mkswap", &[&disks[1].part(2)]);
    let args = ["check", &disks[0].dev, &disks[1].dev];
    let (together, code) = run_json(&args);
    let mut cmd = std::process::Command::new(bin());
    cmd.args(args).arg("--json");
    without_io_uring(&mut cmd);
    let (out, err, code_alone) = output_of(&mut cmd);
    assert_eq!(code, code_alone, "{err}");
    let alone: serde_json::Value = serde_json::from_str(&out).unwrap();
    let judged = |doc: &serde_json::Value| {
        let mut d = doc.clone();
        d.as_object_mut().unwrap().remove("run");
        d.as_object_mut().unwrap().remove("started_at");
        d
    };
    assert_eq!(judged(&together), judged(&alone));
    assert!(
        format!("{:?}", together["targets"][0]["stack"]).contains("ext4"),
        "{together:#}"
    );
    assert!(
        format!("{:?}", together["targets"][1]["stack"]).contains("swap"),
        "{together:#}"
    );
    for doc in [&together, &alone] {
        let reads = &doc["run"]["targets"];
        assert!(reads[0]["device_reads"].as_u64().unwrap() > 0, "{doc:#}");
    }
}
