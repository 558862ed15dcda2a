//! `plan`: real layouts made by the real tools, filled with files whose
//! checksums are kept, planned, and the script run (on loop devices and on
//! images). Afterwards fsck is clean, every checksum matches and `check`
//! exits 0; an interrupted script finishes when run again.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const MIB: u64 = 1 << 20;

/// Files of random data in the filesystem on `dev`, with their SHA-256.
fn fill(dev: &str, files: u32) -> Sums {
    let m = Mounted::new(dev);
    let mut sums = Vec::new();
    for i in 0..files {
        let f = m.dir.path().join(format!("f{i}"));
        let of = format!("of={}", f.display());
        let count = format!("count={}", 1 + i % 3);
        sh(
            "dd",
            &["if=/dev/urandom", &of, "bs=1M", &count, "status=none"],
        );
        sums.push((format!("f{i}"), checksum(f.to_str().unwrap())));
    }
    sums
}

/// fsck clean, then every file read back with its checksum.
fn verify(dev: &str, kind: &str, sums: &Sums) {
    let (code, out) = match kind {
        "xfs" => sh_status("xfs_repair", &["-n", dev]),
        "btrfs" => sh_status("btrfs", &["check", "--readonly", dev]),
        _ => sh_status("e2fsck", &["-fn", dev]),
    };
    assert_eq!(code, 0, "fsck of {dev} ({kind}) is not clean:\n{out}");
    let m = Mounted::read_only(dev);
    for (name, sum) in sums {
        let f = m.dir.path().join(name);
        assert_eq!(
            &checksum(f.to_str().unwrap()),
            sum,
            "{name} on {dev} changed"
        );
    }
}

fn mkfs(kind: &str, dev: &str) {
    match kind {
        "xfs" => sh("mkfs.xfs", &["-q", "-f", dev]),
        "btrfs" => sh("mkfs.btrfs", &["-q", "-f", dev]),
        _ => sh("mkfs.ext4", &["-q", "-F", dev]),
    };
}

/// `plan TARGET --script FILE`, which must find something to do (exit 1);
/// returns the JSON plan.
fn planned(target: &Path, script: &Path) -> serde_json::Value {
    let (v, code) = run_json(&[
        "plan",
        target.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{v:#}");
    v
}

/// Run the script; returns (exit code, output).
fn run_script(script: &Path) -> (i32, String) {
    let out = Command::new("sh").arg(script).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn check_clean(target: &str) {
    let (out, code) = run(&["check", target]);
    assert_eq!(code, 0, "check {target} after the plan:\n{out}");
}

/// Each partition's tool verdicts (parted opt/min, fdisk, sgdisk), as
/// check's table shows them.
fn tools(target: &str) -> Vec<(u64, Vec<(String, bool)>)> {
    let (doc, _) = run_json(&["check", target]);
    doc["targets"][0]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let t = p["tools"].as_object().unwrap();
            let v = t
                .iter()
                .map(|(k, v)| (k.clone(), v.as_bool().unwrap()))
                .collect();
            (p["number"].as_u64().unwrap(), v)
        })
        .collect()
}

/// A plan applied makes no new "NO" in any tool column: every tool that
/// found a partition aligned before still does.
fn no_new_no(before: &[(u64, Vec<(String, bool)>)], target: &str) {
    let after = tools(target);
    for (n, was) in before {
        let now = &after.iter().find(|(m, _)| m == n).unwrap().1;
        for ((tool, ok), (_, still)) in was.iter().zip(now) {
            assert!(
                !ok || *still,
                "{tool} says partition {n} of {target} is no longer aligned: {after:?}"
            );
        }
    }
}

/// A loop device's partition nodes, refreshed after a table change.
fn refresh(l: &LoopDev) {
    let _ = sh_status("partx", &["-u", &l.dev]);
    let _ = sh_status("partx", &["-a", &l.dev]);
}

/// Run the script and insist it succeeds.
fn run_ok(script: &Path) {
    let (code, out) = run_script(script);
    assert_eq!(code, 0, "{out}");
}

/// Files by name with their SHA-256.
type Sums = Vec<(String, String)>;

/// Filesystems made on partitions and filled with files: (partition,
/// kind, the files' checksums).
struct Filled(Vec<(u32, &'static str, Sums)>);

impl Filled {
    /// `files` files in a new filesystem on each partition of `l`.
    fn on(l: &LoopDev, parts: &[(u32, &'static str)], files: u32) -> Filled {
        Filled(
            parts
                .iter()
                .map(|&(n, kind)| {
                    mkfs(kind, &l.part(n));
                    (n, kind, fill(&l.part(n), files))
                })
                .collect(),
        )
    }

    /// The same on an image, attached for the moment.
    fn image(img: &Path, parts: &[(u32, &'static str)], files: u32) -> Filled {
        Filled::on(&LoopDev::attach(img, None), parts, files)
    }

    /// fsck clean and every checksum the same on the partitions of `l`
    /// (re-read first), and `check` clean on the disk.
    fn verify_live(&self, l: &LoopDev) {
        refresh(l);
        for (n, kind, sums) in &self.0 {
            verify(&l.part(*n), kind, sums);
        }
        check_clean(&l.dev);
    }

    /// The same on an image, and `check` clean on the image file.
    fn verify_image(&self, img: &Path) {
        let l = LoopDev::attach(img, None);
        for (n, kind, sums) in &self.0 {
            verify(&l.part(*n), kind, sums);
        }
        check_clean(img.to_str().unwrap());
    }
}

#[test]
fn dos_at_63_with_a_neighbour_moves_both_and_keeps_every_file() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "dos.img", 160 * MIB);
    sfdisk(
        &img,
        "label: dos\nstart=63, size=100000, type=83\nstart=100063, size=100000, type=83\n",
    );
    let l = LoopDev::attach(&img, None);
    let filled = Filled::on(&l, &[(1, "ext4"), (2, "ext4")], 6);
    let script = dir.path().join("fix.sh");
    let before = tools(&l.dev);
    let v = planned(Path::new(&l.dev), &script);
    let parts = &v["targets"][0]["partitions"];
    assert_eq!(parts[0]["after"]["start_sector"], 2048);
    // Partition 2 moves up to 1 MiB; its end, on sgdisk's alignment now
    // (1 sector, for the start at 63), stays on it (1 MiB) in the room
    // after it, so sgdisk -v finds nothing new to caution about.
    assert_eq!(parts[1]["after"]["start_sector"], 102400);
    for p in parts.as_array().unwrap() {
        let end =
            p["after"]["start_sector"].as_u64().unwrap() + p["after"]["sectors"].as_u64().unwrap();
        assert_eq!(end % 2048, 0, "{p:#}");
    }
    assert!(v["targets"][0]["leaves"].as_array().unwrap().is_empty());
    run_ok(&script);
    filled.verify_live(&l);
    no_new_no(&before, &l.dev);
    let (code, out) = run_script(&script);
    assert_eq!(code, 0, "a second run must find everything done:\n{out}");
    assert!(out.contains("already in its new place"), "{out}");
}

#[test]
fn logical_partitions_move_inside_their_extended_partition_on_an_image() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "logical.img", 200 * MIB);
    sfdisk(
        &img,
        "label: dos\nstart=2048, size=40960, type=83\nstart=43008, size=300000, type=5\nstart=43071, size=90000, type=83\nstart=143134, size=100000, type=83\n",
    );
    let filled = Filled::image(&img, &[(5, "ext4"), (6, "ext4")], 4);
    let script = dir.path().join("fix.sh");
    let before = tools(img.to_str().unwrap());
    let v = planned(&img, &script);
    assert_eq!(v["targets"][0]["image"], true);
    run_ok(&script);
    filled.verify_image(&img);
    no_new_no(&before, img.to_str().unwrap());
}

#[test]
fn a_gpt_made_behind_a_usb_bridge_with_xfs_and_btrfs() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "usb.img", 560 * MIB);
    // parted -a optimal behind a bridge reporting 33553920: starts on
    // multiples of 65535 sectors.
    sh(
        "sgdisk",
        &[
            "-a",
            "1",
            "-n",
            "1:65535:+310M",
            "-n",
            "2:720885:+130M",
            img.to_str().unwrap(),
        ],
    );
    let l = LoopDev::attach(&img, None);
    let filled = Filled::on(&l, &[(1, "xfs"), (2, "btrfs")], 5);
    let script = dir.path().join("fix.sh");
    let before = tools(&l.dev);
    let v = planned(Path::new(&l.dev), &script);
    assert_eq!(
        v["targets"][0]["partitions"][0]["after"]["start_sector"],
        65536
    );
    run_ok(&script);
    filled.verify_live(&l);
    no_new_no(&before, &l.dev);
}

#[test]
fn ends_off_4k_grow_into_free_space_or_come_down_to_the_content() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "ends.img", 64 * MIB);
    // p1 ends 1 sector past 4 KiB with free space after it; p2 runs to the
    // last usable sector, which is off 4 KiB, and holds a smaller ext4.
    sh(
        "sgdisk",
        &[
            "-a",
            "1",
            "-n",
            "1:2048:+20481",
            "-n",
            "2:45056:0",
            img.to_str().unwrap(),
        ],
    );
    let l = LoopDev::attach(&img, None);
    let filled = Filled::on(&l, &[(1, "ext4"), (2, "ext4")], 2);
    let script = dir.path().join("fix.sh");
    let before = tools(&l.dev);
    let v = planned(Path::new(&l.dev), &script);
    let parts = &v["targets"][0]["partitions"];
    assert_eq!(parts[0]["action"], "resize");
    assert_eq!(parts[1]["action"], "resize");
    assert!(parts[0]["after"]["sectors"].as_u64() > parts[0]["before"]["sectors"].as_u64());
    assert!(parts[1]["after"]["sectors"].as_u64() < parts[1]["before"]["sectors"].as_u64());
    assert_eq!(v["targets"][0]["bytes_to_move"], 0);
    run_ok(&script);
    filled.verify_live(&l);
    no_new_no(&before, &l.dev);
}

/// Run the script until `until` holds of its state directory, then kill
/// it (SIGKILL, the whole process group). Fails when it ends first.
fn kill_when(script: &Path, until: &dyn Fn(&Path) -> bool, what: &str) {
    let state = PathBuf::from(format!("{}.state", script.display()));
    let mut child = Command::new("setsid")
        .args(["sh", script.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let mut killed = false;
    while child.try_wait().unwrap().is_none() {
        if until(&state) {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            killed = true;
            break;
        }
        assert!(started.elapsed().as_secs() < 120, "the script hung");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let _ = child.wait();
    assert!(
        killed,
        "the script finished before it could be killed {what}"
    );
}

/// Two ext4 partitions at 63 on a 400 MiB image, filled; its script.
fn two_at_63(dir: &Path) -> (PathBuf, Filled, PathBuf) {
    let img = image(dir, "kill.img", 400 * MIB);
    sfdisk(
        &img,
        "label: dos\nlabel-id: 0x1234abcd\nstart=63, size=300000, type=83\nstart=300063, size=300000, type=83\n",
    );
    let filled = Filled::image(&img, &[(1, "ext4"), (2, "ext4")], 20);
    let script = dir.join("fix.sh");
    planned(&img, &script);
    (img, filled, script)
}

/// A script that runs until `until` holds, then is killed and run again:
/// it must finish with the data whole.
fn killed_then_resumed(until: &dyn Fn(&Path) -> bool, what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (img, filled, script) = two_at_63(dir.path());
    kill_when(&script, until, what);
    let (code, out) = run_script(&script);
    assert_eq!(code, 0, "the run after a kill {what}:\n{out}");
    filled.verify_image(&img);
}

fn journal(state: &Path, n: u32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(state.join(format!("move-{n}"))).ok()?;
    let mut it = text.split_whitespace().map(|x| x.parse().ok());
    Some((it.next()??, it.next()??))
}

#[test]
fn a_kill_during_a_copy_resumes_where_it_stopped() {
    killed_then_resumed(
        &|state| journal(state, 2).is_some_and(|(done, _)| done >= 5),
        "during a copy",
    );
}

#[test]
fn a_kill_between_steps_resumes_at_the_next_step() {
    // Killed as soon as partition 2's journal is gone: its entry is written
    // and partition 1's copy has not started.
    let saw = std::cell::Cell::new(false);
    killed_then_resumed(
        &|state| {
            if journal(state, 2).is_some() {
                saw.set(true);
            }
            saw.get() && journal(state, 2).is_none()
        },
        "between steps",
    );
}

#[test]
fn refusals_write_no_script() {
    let dir = tempfile::tempdir().unwrap();
    // XFS fills a partition at 63 that runs to the end of the disk.
    let img = image(dir.path(), "full.img", 320 * MIB);
    sfdisk(&img, "label: dos\nstart=63, type=83\n");
    {
        let l = LoopDev::attach(&img, None);
        mkfs("xfs", &l.part(1));
    }
    let script = dir.path().join("no.sh");
    let (out, err, code) = run_full(&[
        "plan",
        img.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{out}{err}");
    // Said once: one line on stderr with the reason, nothing on stdout.
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot plan:") && err.contains("XFS cannot shrink"),
        "{err}"
    );
    assert!(err.contains("no script written"), "{err}");
    assert!(
        !out.contains("cannot plan") && !out.contains("XFS"),
        "{out}"
    );
    assert!(!script.exists());
    // Something not recognised in it: the whole partition is kept, so no room.
    let img = image(dir.path(), "blank.img", 32 * MIB);
    sfdisk(&img, "label: dos\nstart=63, type=83\n");
    sh(
        "dd",
        &[
            "if=/dev/urandom",
            &format!("of={}", img.display()),
            "bs=1M",
            "seek=1",
            "count=1",
            "conv=notrunc",
            "status=none",
        ],
    );
    let (out, err, code) = run_full(&[
        "plan",
        img.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("no free space"), "{err}");
    assert!(!script.exists());
}

#[test]
fn new_disk_layout_is_aligned_where_parted_behind_a_bridge_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "new.img", 2048 * MIB);
    let (out, code) = run(&[
        "plan",
        "--new",
        img.to_str().unwrap(),
        "--sizes",
        "512M,1G,rest",
        "--topology",
        "lbs=512,pbs=4096,opt=33553920",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("start=2048, size=1048576"), "{out}");
    assert!(
        out.contains("parted -a optimal would start partition 1 at byte 33553920"),
        "{out}"
    );
    let script = dir.path().join("new.sh");
    let (_, code) = run(&[
        "plan",
        "--new",
        img.to_str().unwrap(),
        "--sizes",
        "512M,1G,rest",
        "--script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    let (code, out) = run_script(&script);
    assert_eq!(code, 0, "{out}");
    check_clean(img.to_str().unwrap());
    let (code, out) = run_script(&script);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("already has this layout"), "{out}");
    // Not empty any more: refused.
    let (_, code) = run(&["plan", "--new", img.to_str().unwrap(), "--sizes", "1G"]);
    assert_eq!(code, 2);
}

/// The FAT32 and exFAT options `plan --new` names for a removable disk
/// (a card's or a stick's node; here a loop device over a layout it made,
/// as a 4K disk would present it, so clusters must reach 4 KiB), run as
/// named: check finds their data area and cluster heap on the grain, and
/// fsck.fat and fsck.exfat find them clean. mkfs.fat's default for a
/// small volume (512 B clusters) is what they avoid.
#[test]
fn the_mkfs_options_for_removable_media_put_the_clusters_on_the_grain() {
    for t in ["mkfs.fat", "mkfs.exfat", "fsck.fat", "fsck.exfat"] {
        require_tool(t);
    }
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "card.img", 128 * MIB);
    let script = dir.path().join("new.sh");
    let (out, code) = run(&[
        "plan",
        "--new",
        img.to_str().unwrap(),
        "--sizes",
        "48M,rest",
        "--label",
        "dos",
        "--script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}");
    run_ok(&script);
    let l = LoopDev::attach(&img, None);
    let pbs4k = ["--topology", "pbs=4096"];
    for (n, i) in [(1, 0), (2, 1)] {
        let part = l.part(n);
        let cmd = &diskalign::plan::removable_mkfs(512, 4096, MIB, &part)[i];
        let (code, out) = sh_status("sh", &["-c", cmd]);
        assert_eq!(code, 0, "{cmd}: {out}");
        let fsck = if i == 0 { "fsck.fat" } else { "fsck.exfat" };
        let (code, out) = sh_status(fsck, &["-n", &part]);
        assert_eq!(code, 0, "{fsck}: {out}");
    }
    drop(l);
    let img = img.to_str().unwrap();
    let (doc, code) = run_json(&["check", img, pbs4k[0], pbs4k[1]]);
    assert_eq!(code, 0, "{doc:#}");
    let names: Vec<&str> = (0..2)
        .map(|i| {
            doc["targets"][0]["stack"][i]["children"][0]["name"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(names, ["FAT32", "exFAT"], "{doc:#}");
    // mkfs.fat's own default on 48 MiB: 512-byte clusters, off the grain.
    let l = LoopDev::attach(Path::new(img), None);
    sh("mkfs.fat", &["-F", "32", &l.part(1)]);
    drop(l);
    let (doc, code) = run_json(&["check", img, pbs4k[0], pbs4k[1]]);
    assert_eq!(code, 1, "{doc:#}");
    assert!(
        every_finding(&doc)
            .iter()
            .any(|f| f["code"] == "fs-block-below-physical"),
        "{doc:#}"
    );
}

#[test]
fn lvm_luks_and_a_striped_leg_move_with_their_partitions() {
    let dir = tempfile::tempdir().unwrap();
    // Striped LV over two PVs; partition 2 starts 1536 bytes off 4 KiB.
    let img = lvm::striped_image(&dir, 51203);
    let size = 24 * MIB;
    let before = {
        let l = LoopDev::attach(&img, None);
        checksum(&l.part(2))
    };
    let tools_before = tools(img.to_str().unwrap());
    let script = dir.path().join("fix.sh");
    let v = planned(&img, &script);
    let p2 = &v["targets"][0]["partitions"][1];
    assert!(p2["action"].as_str().unwrap().starts_with("move"), "{p2:#}");
    run_ok(&script);
    check_clean(img.to_str().unwrap());
    no_new_no(&tools_before, img.to_str().unwrap());
    let l = LoopDev::attach(&img, None);
    assert_eq!(
        checksum_head(&l.part(2), size),
        before,
        "the PV's bytes changed"
    );
    drop(l);

    // LUKS2 at sector 63: the encrypted bytes move as they are.
    let img = image(dir.path(), "luks.img", 64 * MIB);
    sfdisk(&img, "label: dos\nstart=63, size=60000, type=83\n");
    let key = dir.path().join("key");
    let before = {
        let l = LoopDev::attach(&img, None);
        luks_format(Path::new(&l.part(1)), &key, &["--type", "luks2"]);
        checksum(&l.part(1))
    };
    let tools_before = tools(img.to_str().unwrap());
    let v = planned(&img, &script);
    assert_eq!(v["targets"][0]["partitions"][0]["content"], "LUKS2");
    run_ok(&script);
    check_clean(img.to_str().unwrap());
    no_new_no(&tools_before, img.to_str().unwrap());
    let l = LoopDev::attach(&img, None);
    assert_eq!(checksum_head(&l.part(1), 60000 * 512), before);
    sh(
        "cryptsetup",
        &[
            "open",
            "--test-passphrase",
            "--key-file",
            key.to_str().unwrap(),
            &l.part(1),
        ],
    );
}

/// ext4 from sector 63 to the end of the disk: the only room there is
/// inside the filesystem, so the plan shrinks it first (resize2fs) and
/// then moves it. On a live loop device and on an image (where the script
/// attaches a loop device of its own for resize2fs and detaches it).
#[test]
fn an_ext4_filling_the_disk_is_shrunk_first_then_moved() {
    let dir = tempfile::tempdir().unwrap();
    for live in [true, false] {
        let img = image(dir.path(), &format!("full-{live}.img"), 96 * MIB);
        sfdisk(&img, "label: dos\nstart=63, type=83\n");
        let filled = Filled::image(&img, &[(1, "ext4")], 8);
        let script = dir.path().join(format!("shrink-{live}.sh"));
        let l = live.then(|| LoopDev::attach(&img, None));
        let target = l.as_ref().map_or(img.clone(), |l| PathBuf::from(&l.dev));
        let v = planned(&target, &script);
        let steps = &v["targets"][0]["steps"];
        assert_eq!(steps[1]["step"], "shrink", "{steps:#}");
        assert_eq!(steps[1]["filesystem"], "ext4");
        assert!(steps[1]["to_bytes"].as_u64() < steps[1]["from_bytes"].as_u64());
        let (code, out) = run_script(&script);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("shrinking its ext4 filesystem"), "{out}");
        let (code, out) = run_script(&script);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("is already"), "{out}");
        assert!(out.contains("was shrunk before the table changed"), "{out}");
        match &l {
            Some(l) => filled.verify_live(l),
            None => filled.verify_image(&img),
        }
        let (_, out) = sh_status("losetup", &["-j", img.to_str().unwrap()]);
        let attached = l.as_ref().map_or(0, |_| 1);
        assert_eq!(
            out.lines().count(),
            attached,
            "the script left a loop device:\n{out}"
        );
    }
}

/// An ext4 filling the disk from 63 that is itself nearly full cannot give
/// the room: refused, with the reason, and no script.
#[test]
fn a_full_ext4_is_not_shrunk() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "fullfs.img", 24 * MIB);
    sfdisk(&img, "label: dos\nstart=63, type=83\n");
    {
        let l = LoopDev::attach(&img, None);
        mkfs("ext4", &l.part(1));
        let m = Mounted::new(&l.part(1));
        let of = format!("of={}", m.dir.path().join("big").display());
        let _ = sh_status("dd", &["if=/dev/zero", &of, "bs=1M", "status=none"]);
    }
    let script = dir.path().join("no.sh");
    let (out, err, code) = run_full(&[
        "plan",
        img.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("cannot give that much"), "{err}");
    assert!(!script.exists());
}

/// The script must stop before writing anything on a disk that is not
/// the one its plan was made for, and say what differs.
fn refused_by(script: &Path, disk: &Path, differs: &str) {
    let before = checksum(disk.to_str().unwrap());
    let (code, out) = run_script(script);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("is not the disk this plan was made for") && out.contains(differs),
        "{out}"
    );
    assert_eq!(
        checksum(disk.to_str().unwrap()),
        before,
        "the script wrote to another disk"
    );
}

/// Two RAID1 members with identical tables swap names across a reboot:
/// the image the script names is now the other one, whose table differs
/// only in its PTUUID (sfdisk --disk-id). The script stops, also when it
/// resumes a copy a kill interrupted; once the names are back it
/// finishes. A grown image (same table, another size) is refused too.
#[test]
fn a_script_stops_on_a_disk_that_is_not_the_one_planned() {
    let dir = tempfile::tempdir().unwrap();
    let (img, filled, script) = two_at_63(dir.path());
    let twin = dir.path().join("twin.img");
    std::fs::copy(&img, &twin).unwrap();
    sh(
        "sfdisk",
        &["-q", "--disk-id", twin.to_str().unwrap(), "0x5678ef01"],
    );
    let real = dir.path().join("real.img");
    let swap = |a: &Path, b: &Path| {
        std::fs::rename(&img, a).unwrap();
        std::fs::rename(b, &img).unwrap();
    };
    // Before any step: nothing written, not even the backups.
    swap(&real, &twin);
    refused_by(&script, &img, "PTUUID 5678ef01, planned 1234abcd");
    let state = PathBuf::from(format!("{}.state", script.display()));
    assert!(!state.exists(), "state written for another disk");
    swap(&twin, &real);
    // Killed during a copy, then resumed on the other disk.
    kill_when(
        &script,
        &|state| journal(state, 2).is_some_and(|(done, _)| done >= 5),
        "during a copy",
    );
    let journal_before = journal(&state, 2);
    swap(&real, &twin);
    refused_by(&script, &img, "PTUUID 5678ef01, planned 1234abcd");
    assert_eq!(journal(&state, 2), journal_before, "the journal moved");
    swap(&twin, &real);
    // The same table on a grown image.
    let grown = dir.path().join("grown.img");
    std::fs::copy(&img, &grown).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&grown)
        .unwrap()
        .set_len(401 * MIB)
        .unwrap();
    swap(&real, &grown);
    refused_by(
        &script,
        &img,
        &format!("size {} bytes, planned {}", 401 * MIB, 400 * MIB),
    );
    swap(&grown, &real);
    let (code, out) = run_script(&script);
    assert_eq!(code, 0, "the run on the planned disk:\n{out}");
    filled.verify_image(&img);
}

/// Live: a loop device whose GPT differs only in its disk GUID
/// (sgdisk -U) is refused before any write.
#[test]
fn a_live_script_stops_on_another_loop_device() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "a.img", 64 * MIB);
    sh(
        "sgdisk",
        &[
            "-a",
            "1",
            "-n",
            "1:2047:+20M",
            "-U",
            "11111111-2222-3333-4444-555555555555",
            img.to_str().unwrap(),
        ],
    );
    let twin = dir.path().join("b.img");
    std::fs::copy(&img, &twin).unwrap();
    sh(
        "sgdisk",
        &[
            "-U",
            "66666666-7777-8888-9999-aaaaaaaaaaaa",
            twin.to_str().unwrap(),
        ],
    );
    let a = LoopDev::attach(&img, None);
    let b = LoopDev::attach(&twin, None);
    let script = dir.path().join("fix.sh");
    planned(Path::new(&a.dev), &script);
    // The name the script uses now names the other device.
    let text = std::fs::read_to_string(&script).unwrap();
    let line = format!("DISK='{}'", a.dev);
    assert!(text.contains(&line), "{text}");
    std::fs::write(&script, text.replace(&line, &format!("DISK='{}'", b.dev))).unwrap();
    let before = checksum(&b.dev);
    let (code, out) = run_script(&script);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "{} is not the disk this plan was made for: PTUUID 66666666-7777-8888-9999-aaaaaaaaaaaa, planned 11111111-2222-3333-4444-555555555555",
            b.dev
        )),
        "{out}"
    );
    assert_eq!(checksum(&b.dev), before, "the script wrote to another disk");
}

/// An image planned by a relative path: the script names it by its
/// absolute path and runs from any directory.
#[test]
fn an_image_script_runs_from_another_directory() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "rel.img", 64 * MIB);
    sfdisk(&img, "label: dos\nstart=63, size=40000, type=83\n");
    let filled = Filled::image(&img, &[(1, "ext4")], 3);
    let out = Command::new(bin())
        .current_dir(dir.path())
        .args(["plan", "rel.img", "--script", "fix.sh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let script = dir.path().join("fix.sh");
    let text = std::fs::read_to_string(&script).unwrap();
    let abs = std::fs::canonicalize(&img).unwrap();
    assert!(
        text.contains(&format!("DISK='{}'", abs.display())),
        "{text}"
    );
    let out = Command::new("sh")
        .arg(&script)
        .current_dir("/")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    filled.verify_image(&img);
}

/// A primary GPT header overwritten while the backup is intact: the plan
/// offers the repair (sgdisk -e) as a step, and after the script
/// sgdisk -v is clean, check no longer reports gpt-primary-invalid, and
/// the table and the data are as they were.
#[test]
fn a_damaged_primary_gpt_is_rebuilt_from_its_backup() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "gpt.img", 64 * MIB);
    let path = img.to_str().unwrap();
    sh("sgdisk", &["-n", "1:2048:+20M", "-n", "2:0:+20M", path]);
    let filled = Filled::image(&img, &[(1, "ext4"), (2, "ext4")], 3);
    let dump = |p: &str| String::from_utf8_lossy(&sh("sfdisk", &["--dump", p]).stdout).into_owned();
    let table = dump(path);
    sh(
        "dd",
        &[
            "if=/dev/urandom",
            &format!("of={path}"),
            "bs=1",
            "seek=520",
            "count=8",
            "conv=notrunc",
            "status=none",
        ],
    );
    let (json, _) = run(&["check", path, "--json"]);
    assert!(json.contains("gpt-primary-invalid"), "{json}");
    let script = dir.path().join("fix.sh");
    let v = planned(&img, &script);
    let steps = &v["targets"][0]["steps"];
    assert_eq!(steps[0]["step"], "backup", "{steps:#}");
    assert_eq!(steps[1]["step"], "repair-gpt", "{steps:#}");
    assert_eq!(steps[1]["backup_lba"], 64 * MIB / 512 - 1);
    let leaves = v["targets"][0]["leaves"].to_string();
    assert!(!leaves.contains("gpt-primary-invalid"), "{leaves}");
    let (human, _) = run(&["plan", path]);
    assert!(
        human.contains("rebuild the primary GPT from its intact backup"),
        "{human}"
    );
    let (code, out) = run_script(&script);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("rebuilding the primary GPT"), "{out}");
    let (_, verify) = sh_status("sgdisk", &["-v", path]);
    for bad in ["ERROR", "Caution", "Warning", "corrupt"] {
        assert!(
            !verify.contains(bad),
            "sgdisk -v after the repair:\n{verify}"
        );
    }
    assert!(verify.contains("No problems found"), "{verify}");
    let (json, _) = run(&["check", path, "--json"]);
    assert!(!json.contains("gpt-primary-invalid"), "{json}");
    assert_eq!(dump(path), table, "the table changed");
    filled.verify_image(&img);
    let (code, out) = run_script(&script);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("sound: nothing to repair"), "{out}");
    let damaged =
        std::fs::metadata(format!("{}.state/gpt-primary.damaged", script.display())).unwrap();
    // The protective MBR, the header and the entries up to sgdisk's first
    // usable LBA, 34.
    assert_eq!(damaged.len(), 34 * 512);
}

/// Moving a BIOS boot partition of an image says where to run
/// grub-install, and prints no command (run on this host it would put
/// the host's GRUB into the image). A FAT32 that moves (made by mkfs.fat
/// -h, whose boot sector holds its start as "hidden sectors") gets its
/// new start from the script, in its boot sector and its backup, and no
/// note. A partition whose type says NTFS but whose volume the plan could
/// not read (its boot sector damaged) keeps the command for its main boot
/// sector: run before the script it writes nothing (the new place does
/// not hold the old start yet), after it the field is right, and run
/// again it says so and writes nothing.
#[test]
fn boot_partitions_that_move_get_their_notes() {
    require_tool("mkfs.fat");
    require_tool("mkntfs");
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "boot.img", 96 * MIB);
    let path = img.to_str().unwrap();
    sh(
        "sgdisk",
        &[
            "-a",
            "1",
            "-n",
            "1:2047:+1M",
            "-t",
            "1:EF02",
            "-n",
            "2:10000:+40M",
            "-t",
            "2:0700",
            "-n",
            "3:100000:+8M",
            "-t",
            "3:0700",
            path,
        ],
    );
    {
        let l = LoopDev::attach(&img, None);
        sh(
            "mkfs.fat",
            &["-F", "32", "-s", "8", "-h", "10000", &l.part(2)],
        );
        sh("mkntfs", &["-Q", "-q", "-p", "100000", &l.part(3)]);
    }
    let field = |at: u64| {
        let b = std::fs::read(&img).unwrap();
        let at = at as usize + 0x1c;
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    };
    // The NTFS's $MFTMirr cluster set to 0: no NTFS the plan reads.
    {
        let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
        std::os::unix::fs::FileExt::write_at(&f, &[0u8; 8], 100000 * 512 + 56).unwrap();
    }
    assert_eq!((field(10000 * 512), field(100000 * 512)), (10000, 100000));
    let script = dir.path().join("fix.sh");
    let v = planned(&img, &script);
    let t = &v["targets"][0];
    let manual = t["manual"].as_array().unwrap();
    let note = |n: u64| manual.iter().find(|m| m["partition"] == n);
    let bios = note(1).unwrap();
    assert!(bios["why"]
        .as_str()
        .unwrap()
        .contains("BIOS boot partition"));
    assert_eq!(bios["commands"], serde_json::json!([]));
    assert!(bios["why"]
        .as_str()
        .unwrap()
        .contains("run grub-install in the system on it"));
    assert!(note(2).is_none(), "the script writes it: {manual:#?}");
    let start = |n: usize| {
        t["partitions"][n]["after"]["start_sector"]
            .as_u64()
            .unwrap()
    };
    let (fat_start, ntfs_start) = (start(1), start(2));
    let moved = |n: u64| {
        t["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["step"] == "move" && s["partition"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(
        moved(2)["hidden_sectors"],
        serde_json::json!({"volume": "FAT32", "from": 10000, "to": fat_start, "at_bytes": [0, 3072]})
    );
    assert!(moved(3).get("hidden_sectors").is_none());
    let ntfs = note(3).unwrap();
    assert!(ntfs["why"]
        .as_str()
        .unwrap()
        .contains("the plan could not read a volume in it"));
    let cmd = ntfs["commands"][0].as_str().unwrap();
    let before = checksum(path);
    let (code, out) = sh_status("sh", &["-c", cmd]);
    assert_eq!(code, 1, "{cmd}: {out}");
    assert!(out.contains("nothing written"), "{out}");
    assert_eq!(checksum(path), before, "{cmd} wrote before the script");
    run_ok(&script);
    assert_eq!(field(fat_start * 512), fat_start as u32);
    assert_eq!(field((fat_start + 6) * 512), fat_start as u32, "backup");
    assert_eq!(field(ntfs_start * 512), 100000, "not read: not written");
    let (code, out) = sh_status("sh", &["-c", cmd]);
    assert_eq!(code, 0, "{cmd}: {out}");
    assert_eq!(field(ntfs_start * 512), ntfs_start as u32);
    let after = checksum(path);
    let (code, out) = sh_status("sh", &["-c", cmd]);
    assert_eq!(
        (code, out.trim()),
        (
            0,
            format!("hidden sectors already read {ntfs_start}").as_str()
        )
    );
    assert_eq!(checksum(path), after);
    let l = LoopDev::attach(&img, None);
    let (code, out) = sh_status("fsck.fat", &["-n", &l.part(2)]);
    assert_eq!(code, 0, "{out}");
}

/// A FAT32, an NTFS or an exFAT made by its own mkfs in a DOS partition
/// at sector 63 (type 0x0c or 0x07, room after it) of a 128 MiB image,
/// its boot sectors recording 63, with files whose checksums are kept
/// (an exFAT, which no tool here writes files into, keeps its bytes);
/// and the script of its plan.
struct AtSector63 {
    kind: &'static str,
    img: PathBuf,
    sums: Sums,
    /// The exFAT's bytes as made.
    bytes: Vec<u8>,
    script: PathBuf,
    plan: serde_json::Value,
}

const SIZE63: usize = 100_000;

impl AtSector63 {
    fn new(dir: &Path, kind: &'static str) -> AtSector63 {
        let (ty, tools): (&str, &[&str]) = match kind {
            "fat32" => ("c", &["mkfs.fat", "fsck.fat", "mcopy"]),
            "ntfs" => ("7", &["mkntfs", "ntfsfix", "ntfscp", "ntfscat"]),
            _ => ("7", &["mkfs.exfat", "fsck.exfat"]),
        };
        tools.iter().for_each(|t| require_tool(t));
        let img = image(dir, &format!("{kind}.img"), 128 * MIB);
        sfdisk(
            &img,
            &format!("label: dos\nlabel-id: 0x5eed0063\nstart=63, size={SIZE63}, type={ty}\n"),
        );
        let mut sums = Vec::new();
        {
            let l = LoopDev::attach(&img, None);
            let part = l.part(1);
            match kind {
                "fat32" => sh("mkfs.fat", &["-F", "32", &part]),
                "ntfs" => sh(
                    "mkntfs",
                    &["-Q", "-q", "-p", "63", "-H", "255", "-S", "63", &part],
                ),
                _ => sh("mkfs.exfat", &[&part]),
            };
            for i in (0..8).filter(|_| kind != "exfat") {
                let (name, f) = (format!("f{i}"), dir.join(format!("f{i}")));
                let of = format!("of={}", f.display());
                let count = format!("count={}", 1 + i % 3);
                sh(
                    "dd",
                    &["if=/dev/urandom", &of, "bs=1M", &count, "status=none"],
                );
                let src = f.to_str().unwrap();
                match kind {
                    "fat32" => sh("mcopy", &["-i", &part, src, &format!("::{name}")]),
                    _ => sh("ntfscp", &[&part, src, &name]),
                };
                sums.push((name, checksum(src)));
                std::fs::remove_file(&f).unwrap();
            }
        }
        let b = std::fs::read(&img).unwrap();
        assert_eq!(field(kind, &b, 63 * 512), 63, "{kind}: made recording 63");
        let bytes = match kind {
            "exfat" => b[63 * 512..(63 + SIZE63) * 512].to_vec(),
            _ => Vec::new(),
        };
        let script = dir.join(format!("{kind}.sh"));
        let plan = planned(&img, &script);
        AtSector63 {
            kind,
            img,
            sums,
            bytes,
            script,
            plan,
        }
    }

    /// Each boot sector's offset in the volume at `base` of `b`: FAT32's
    /// backup at BPB_BkBootSec (0x32), NTFS's in the sector after the
    /// volume (its sector count at 0x28), exFAT's backup boot region at
    /// sector 12.
    fn copies(&self, b: &[u8], base: usize) -> [usize; 2] {
        let backup = match self.kind {
            "fat32" => usize::from(u16::from_le_bytes([b[base + 0x32], b[base + 0x33]])),
            "ntfs" => u64::from_le_bytes(b[base + 0x28..base + 0x30].try_into().unwrap()) as usize,
            _ => 12,
        };
        assert!(backup > 0);
        [0, backup * 512]
    }

    /// After the script: the volume's checker clean, every file read
    /// back the same (an exFAT's bytes, but its start and the checksum
    /// sectors), the new start in both boot sectors, and check reporting
    /// what the plan said it would still report (a FAT32 of 512-byte
    /// clusters, mkfs.fat's default at this size, keeps its data area off
    /// 4 KiB), no more.
    fn verify(&self) {
        let t = &self.plan["targets"][0];
        let start = t["partitions"][0]["after"]["start_sector"]
            .as_u64()
            .unwrap();
        assert_eq!(start, 2048);
        let base = (start * 512) as usize;
        let b = std::fs::read(&self.img).unwrap();
        for at in self.copies(&b, base) {
            assert_eq!(field(self.kind, &b, base + at), 2048, "{} {at}", self.kind);
        }
        if self.kind == "exfat" {
            let kept = |i: usize| {
                let (sector, in_sector) = (i / 512, i % 512);
                let field = matches!(sector, 0 | 12) && (64..72).contains(&in_sector);
                !(field || matches!(sector, 11 | 23))
            };
            let moved = &b[base..base + self.bytes.len()];
            let differ = (0..self.bytes.len()).find(|&i| kept(i) && moved[i] != self.bytes[i]);
            assert_eq!(differ, None, "exfat: a byte differs from the one made");
        }
        let l = LoopDev::attach(&self.img, None);
        let part = l.part(1);
        let (code, out) = match self.kind {
            "fat32" => sh_status("fsck.fat", &["-n", &part]),
            "ntfs" => sh_status("ntfsfix", &["-n", &part]),
            _ => sh_status("fsck.exfat", &["-n", &part]),
        };
        assert_eq!(code, 0, "{}: {out}", self.kind);
        let out_dir = tempfile::tempdir().unwrap();
        for (name, sum) in &self.sums {
            let f = out_dir.path().join(name);
            match self.kind {
                "fat32" => {
                    sh(
                        "mcopy",
                        &["-i", &part, &format!("::{name}"), f.to_str().unwrap()],
                    );
                }
                _ => {
                    let cat = Command::new("ntfscat")
                        .args([&part, name.as_str()])
                        .output()
                        .unwrap();
                    assert!(cat.status.success(), "ntfscat {name}");
                    std::fs::write(&f, cat.stdout).unwrap();
                }
            }
            assert_eq!(
                &checksum(f.to_str().unwrap()),
                sum,
                "{}: {name} changed",
                self.kind
            );
        }
        drop(l);
        let named = |f: &serde_json::Value| (f["code"].to_string(), f["subject"].to_string());
        let (doc, code) = run_json(&["check", self.img.to_str().unwrap()]);
        let found: std::collections::BTreeSet<_> = every_finding(&doc)
            .into_iter()
            .filter(|f| matches!(f["severity"].as_str(), Some("warning" | "error")))
            .filter(|f| f.get("same_cause_as").is_none())
            .map(named)
            .collect();
        let said = t["leaves"].as_array().unwrap().iter().map(named).collect();
        assert_eq!(
            found, said,
            "{}: check after the script:\n{doc:#}",
            self.kind
        );
        assert_eq!(code == 0, found.is_empty());
        if self.kind == "ntfs" {
            assert!(found.is_empty(), "{doc:#}");
        }
    }
}

/// The start the boot sector at byte `at` of the image `img` records.
fn field_in(kind: &str, img: &Path, at: u64) -> u64 {
    let f = std::fs::File::open(img).unwrap();
    let mut b = [0u8; 512];
    std::os::unix::fs::FileExt::read_exact_at(&f, &mut b, at).unwrap();
    field(kind, &b, 0)
}

/// The start the boot sector at byte `at` of `b` records: hidden
/// sectors at 0x1C (FAT, NTFS), PartitionOffset at 64 (exFAT).
fn field(kind: &str, b: &[u8], at: usize) -> u64 {
    match kind {
        "exfat" => u64::from_le_bytes(b[at + 64..at + 72].try_into().unwrap()),
        _ => u64::from(u32::from_le_bytes(
            b[at + 0x1c..at + 0x20].try_into().unwrap(),
        )),
    }
}

/// A FAT32, an NTFS and an exFAT at sector 63 move to 1 MiB: the script
/// checks their boot sectors, copies them and writes the new start into
/// the boot sector and its backup (the exFAT's checksum sectors again);
/// fsck.fat, ntfsfix and fsck.exfat find them clean, every file reads
/// back the same, and check reports what the plan said. The plan says so
/// in its step, and on this DOS disk what the move means for Windows.
#[test]
fn a_fat32_an_ntfs_and_an_exfat_at_63_move_with_their_boot_sectors() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["fat32", "ntfs", "exfat"] {
        let v = AtSector63::new(dir.path(), kind);
        let t = &v.plan["targets"][0];
        let h = &t["steps"][1]["hidden_sectors"];
        assert_eq!(
            (h["from"].as_u64(), h["to"].as_u64()),
            (Some(63), Some(2048)),
            "{t:#}"
        );
        let why = t["manual"][0]["why"].as_str().unwrap();
        assert!(why.contains("HKLM\\SYSTEM\\MountedDevices"), "{why}");
        assert_eq!(t["manual"][0]["commands"], serde_json::json!([]));
        let (human, _) = run(&["plan", v.img.to_str().unwrap(), "--width", "0"]);
        let field = if kind == "exfat" {
            "PartitionOffset"
        } else {
            "hidden sectors"
        };
        assert!(
            human.contains(&format!("boot sector and its backup ({field} 63 -> 2048;")),
            "{human}"
        );
        let (code, out) = run_script(&v.script);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("into its boot sector and its backup"), "{out}");
        v.verify();
        // Run again: everything is done, nothing written.
        let sum = checksum(v.img.to_str().unwrap());
        let (code, out) = run_script(&v.script);
        assert_eq!(code, 0, "{out}");
        assert_eq!(
            checksum(v.img.to_str().unwrap()),
            sum,
            "{kind}: a second run wrote"
        );
    }
}

/// A FAT32, an NTFS or an exFAT killed during the copy, once the copy is
/// done (before the boot sectors get their new start), and once the main
/// boot sector has it (before the backup, an exFAT's checksum sectors or
/// the entry), the script run again finishes:
/// every file, the checkers, both boot sectors and check as after a run
/// without a kill.
#[test]
fn a_volume_killed_during_its_move_resumes() {
    for kind in ["fat32", "ntfs", "exfat"] {
        for at in [
            "during the copy",
            "after the copy",
            "after the main boot sector",
        ] {
            let dir = tempfile::tempdir().unwrap();
            let v = AtSector63::new(dir.path(), kind);
            let copy = v.plan["targets"][0]["steps"][1]["copy_bytes"]
                .as_u64()
                .unwrap();
            let pieces = copy.div_ceil(4 * MIB);
            let until = |state: &Path| match (at, journal(state, 1)) {
                ("during the copy", Some((done, _))) => done >= 3,
                ("after the copy", Some((done, staged))) => done == pieces && staged == 0,
                (_, Some((done, _))) => done == pieces && field_in(kind, &v.img, MIB) == 2048,
                _ => false,
            };
            kill_when(&v.script, &until, &format!("{kind} {at}"));
            // Killed before the entry changed: the old table.
            let table = sh_status("sfdisk", &["-d", v.img.to_str().unwrap()]).1;
            assert!(
                table.contains("start=          63,"),
                "{kind} {at}: {table}"
            );
            let (code, out) = run_script(&v.script);
            assert_eq!(code, 0, "{kind}, the run after a kill {at}:\n{out}");
            v.verify();
        }
    }
}

/// An identity the plan did not see is compared too: a plan made on a
/// DOS table whose signature is zero (no PTUUID) refuses the same table
/// with a signature. And a file name that holds a newline and shell text
/// stays one quoted word: nothing of it runs.
#[test]
fn an_empty_identity_is_compared_and_a_hostile_name_stays_a_word() {
    let dir = tempfile::tempdir().unwrap();
    let name = "x\necho INJECTED; touch injected\n.img";
    let img = image(dir.path(), name, 64 * MIB);
    sfdisk(
        &img,
        "label: dos\nlabel-id: 0x00000000\nstart=63, size=20000, type=83\n",
    );
    let script = dir.path().join("fix.sh");
    planned(&img, &script);
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.contains("PLANNED_PTUUID=''"), "{text}");
    // The twin: the same table, now with a signature.
    sh(
        "sfdisk",
        &["-q", "--disk-id", img.to_str().unwrap(), "0x5678ef01"],
    );
    refused_by(&script, &img, "PTUUID 5678ef01, planned none");
    // Back to no signature: the script runs, and the name ran nothing.
    sh(
        "sfdisk",
        &["-q", "--disk-id", img.to_str().unwrap(), "0x00000000"],
    );
    let out = Command::new("sh")
        .arg(&script)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let all =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{all}");
    // Said as part of the name, never run.
    assert!(!all.lines().any(|l| l.trim() == "INJECTED"), "{all}");
    assert!(!dir.path().join("injected").exists());
}

/// A GPT partition moved up by one sector into a one-sector gap: sfdisk
/// -N refuses that resize ("Failed to resize partition"), which once
/// left the data copied and the table unchanged. The script writes the
/// table whole instead, and the data is where the table says.
#[test]
fn a_move_into_a_one_sector_gap_keeps_table_and_data_together() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "gap.img", 64 * MIB);
    let p = img.to_str().unwrap();
    sh(
        "sgdisk",
        &["-a", "1", "-n", "1:2047:43006", "-n", "2:43008:+10M", p],
    );
    let filled = Filled::image(&img, &[(1, "ext4"), (2, "ext4")], 3);
    let script = dir.path().join("fix.sh");
    planned(&img, &script);
    run_ok(&script);
    let dump = String::from_utf8_lossy(&sh("sfdisk", &["--dump", p]).stdout).into_owned();
    assert!(
        dump.contains("start=        2048, size=       40960"),
        "{dump}"
    );
    filled.verify_image(&img);
    let (_, verify) = sh_status("sgdisk", &["-v", p]);
    assert!(verify.contains("No problems found"), "{verify}");
}

/// sgdisk's own default layout (`sgdisk -o -n1:0:+20M -n2:0:0` on 64 MiB):
/// partition 2 runs to the last usable sector, off 4 KiB. check calls it
/// untidy; plan brings the end down over the zeros after it, checks in the
/// script that they are still zero, and check is clean afterwards, with
/// no new "NO" in a tool column. plan and check agree at each turn.
#[test]
fn sgdisk_default_layout_is_planned_scripted_and_checked_clean() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "sgdisk.img", 64 * MIB);
    let p = img.to_str().unwrap();
    sh("sgdisk", &["-o", "-n1:0:+20M", "-n2:0:0", p]);
    let (doc, code) = run_json(&["check", p]);
    assert_eq!(code, 1, "{doc:#}");
    let p2 = partition(&doc, 2);
    assert_eq!(p2["status"], "untidy");
    for c in ["end-not-4k", "size-not-4k"] {
        assert!(codes(p2).contains(&c.to_string()), "{p2:#}");
    }
    let before = tools(p);
    let script = dir.path().join("fix.sh");
    let v = planned(&img, &script);
    let d = &v["targets"][0];
    assert_eq!(d["partitions"][1]["action"], "resize", "{d:#}");
    assert_eq!(d["partitions"][1]["content"], "empty (zeros)");
    assert_eq!(d["partitions"][1]["after"]["sectors"], 88024);
    let table = d["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "table")
        .unwrap();
    assert_eq!(table["zero_tail"]["bytes"], 7 * 512, "{table:#}");
    assert!(d["leaves"].as_array().unwrap().is_empty(), "{d:#}");
    let (human, code) = run(&["plan", p]);
    assert_eq!(code, 1);
    assert!(
        !human.contains("nothing to move") && !human.contains("nothing recognised"),
        "{human}"
    );
    run_ok(&script);
    check_clean(p);
    no_new_no(&before, p);
    // Done: plan and check agree there is nothing left.
    let (out, code) = run(&["plan", p]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("nothing to move or resize"), "{out}");
}

/// Data written after the plan into the bytes an empty partition's new
/// end leaves out stops the script before it changes anything.
#[test]
fn a_script_stops_when_the_bytes_it_would_cut_are_no_longer_zero() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "sgdisk.img", 64 * MIB);
    let p = img.to_str().unwrap();
    sh("sgdisk", &["-o", "-n1:0:+20M", "-n2:0:0", p]);
    let script = dir.path().join("fix.sh");
    planned(&img, &script);
    // Partition 2 ends at sector 131038; its new end leaves out 131032..
    sh(
        "dd",
        &[
            "if=/dev/urandom",
            &format!("of={p}"),
            "bs=512",
            "seek=131035",
            "count=1",
            "conv=notrunc",
            "status=none",
        ],
    );
    let table = sh("sfdisk", &["--dump", p]).stdout;
    let (code, out) = run_script(&script);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("are no longer zero; nothing done"), "{out}");
    assert_eq!(
        sh("sfdisk", &["--dump", p]).stdout,
        table,
        "the table changed"
    );
}

/// The same layout with something in partition 2 that reaches its end:
/// an ext4 of 1 KiB blocks is shrunk first by the script (resize2fs, the
/// command in its step); a PV gets the pvresize command to run by hand,
/// and once it is run, plan brings the end down. Files, fsck and check
/// clean after each.
#[test]
fn an_end_reached_by_ext4_or_a_pv_is_brought_down_after_its_shrink() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "ext4.img", 64 * MIB);
    sh(
        "sgdisk",
        &["-o", "-n1:0:+20M", "-n2:0:0", img.to_str().unwrap()],
    );
    let l = LoopDev::attach(&img, None);
    // 44015 blocks of 1 KiB: to the partition's last whole KiB, past
    // its last 4 KiB (mke2fs alone would stop at 4 KiB).
    sh(
        "mkfs.ext4",
        &["-q", "-F", "-b", "1024", &l.part(2), "44015"],
    );
    let sums = fill(&l.part(2), 3);
    let before = tools(&l.dev);
    let script = dir.path().join("ext4.sh");
    let v = planned(Path::new(&l.dev), &script);
    let steps = &v["targets"][0]["steps"];
    assert_eq!(steps[1]["step"], "shrink", "{steps:#}");
    let (human, _) = run(&["plan", &l.dev]);
    assert!(human.contains("resize2fs"), "{human}");
    run_ok(&script);
    refresh(&l);
    verify(&l.part(2), "ext4", &sums);
    check_clean(&l.dev);
    no_new_no(&before, &l.dev);
    drop(l);

    let img = image(dir.path(), "pv.img", 64 * MIB);
    sh(
        "sgdisk",
        &["-o", "-n1:0:+20M", "-n2:0:0", img.to_str().unwrap()],
    );
    let l = LoopDev::attach(&img, None);
    let prefix = format!("{}p", l.dev);
    lvm("pvcreate", &prefix, &[&l.part(2)]);
    let (check, code) = run(&["check", &l.dev]);
    assert_eq!(code, 1, "{check}");
    let (v, code) = run_json(&["plan", &l.dev]);
    assert_eq!(
        code, 1,
        "check finds what a layout change fixes, so plan has work: {v:#}"
    );
    let manual = &v["targets"][0]["manual"];
    let pvresize = manual[0]["commands"][0].as_str().unwrap();
    assert!(
        pvresize.starts_with(&format!(
            "pvresize --setphysicalvolumesize 45068288b {}",
            l.part(2)
        )),
        "{manual:#}"
    );
    lvm(
        "pvresize",
        &prefix,
        &["-y", "--setphysicalvolumesize", "45068288b", &l.part(2)],
    );
    let before = tools(&l.dev);
    let script = dir.path().join("pv.sh");
    let v = planned(Path::new(&l.dev), &script);
    assert_eq!(v["targets"][0]["partitions"][1]["after"]["sectors"], 88024);
    run_ok(&script);
    refresh(&l);
    check_clean(&l.dev);
    no_new_no(&before, &l.dev);
    let size = lvm(
        "pvs",
        &prefix,
        &[
            "--noheadings",
            "--units",
            "b",
            "--nosuffix",
            "-o",
            "dev_size",
            &l.part(2),
        ],
    );
    assert_eq!(size.trim(), "45068288", "LVM sees the PV as it was resized");
}

/// The human plan wraps at --width as check's report does, says what to
/// take offline before the steps, and numbers the steps as the script's
/// messages do (a copy and the rewrite of its entry are one step).
#[test]
fn the_human_plan_wraps_says_first_what_is_first_and_numbers_as_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "dos.img", 160 * MIB);
    sfdisk(
        &img,
        "label: dos\nstart=63, size=100000, type=83\nstart=100063, size=100000, type=83\n",
    );
    // Two ext4 filesystems made in place (mke2fs at the partitions' offsets).
    for (offset, n) in [(63 * 512, 1), (100063 * 512, 2)] {
        let at = format!("offset={offset}");
        sh(
            "mkfs.ext4",
            &[
                "-q",
                "-F",
                "-L",
                &format!("p{n}"),
                "-E",
                &at,
                img.to_str().unwrap(),
                "50000k",
            ],
        );
    }
    let script = dir.path().join("fix.sh");
    let (out, err, code) = run_full(&[
        "plan",
        img.to_str().unwrap(),
        "--width",
        "60",
        "--script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}{err}");
    // The table fits by hiding columns, as check's; the hint that says
    // which is for a terminal, and neither stdout nor stderr is one here.
    assert!(err.is_empty(), "{err}");
    for l in out.lines() {
        assert!(
            l.chars().count() <= 60 || !l.contains(' '),
            "wider than 60: {l:?}\n{out}"
        );
    }
    let first = out.find("First: partition 1: unmount").expect(&out);
    let steps = out.find("Steps").expect(&out);
    assert!(first < steps, "{out}");
    let human: Vec<(String, String)> = out
        .lines()
        .filter_map(|l| {
            let (n, rest) = l.trim().split_once(". partition ")?;
            Some((n.to_string(), rest.split(':').next()?.to_string()))
        })
        .collect();
    assert_eq!(
        human,
        [("2".into(), "2".into()), ("3".into(), "1".into())],
        "{out}"
    );
    let (code, said) = run_script(&script);
    assert_eq!(code, 0, "{said}");
    for (n, p) in &human {
        assert!(
            said.contains(&format!("step {n}: partition {p} to start=")),
            "the script numbers step {n} (partition {p}) otherwise:\n{said}"
        );
    }
    assert!(said.contains("step 1: saved the table"), "{said}");
}

/// A qcow2 image with files in an ext4 at sector 63: `plan` writes no
/// script for it, and the commands its first by-hand entry prints, run as
/// printed from the image's directory (qemu-img to a raw copy, plan and
/// script that, qemu-img back), give an aligned qcow2 whose files are all
/// there.
#[test]
fn a_qcow2_is_fixed_by_the_commands_its_plan_prints() {
    require_tool("qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let raw = image(dir.path(), "guest.img", 96 * MIB);
    sfdisk(&raw, "label: dos\nstart=63, size=100000, type=83\n");
    let sums = {
        let l = LoopDev::attach(&raw, None);
        mkfs("ext4", &l.part(1));
        fill(&l.part(1), 6)
    };
    let vm = dir.path().join("vm.qcow2");
    qemu_img_convert(&raw, &vm, "qcow2", &[]);
    std::fs::remove_file(&raw).unwrap();
    let in_dir = |cmd: &str| {
        // `diskalign` as the commands name it: this build.
        let bin_dir = Path::new(bin()).parent().unwrap().display().to_string();
        let path = format!("{bin_dir}:{}", std::env::var("PATH").unwrap());
        Command::new("sh")
            .args(["-c", cmd])
            .current_dir(dir.path())
            .env("PATH", path)
            .output()
            .unwrap()
    };
    let plan = in_dir("diskalign plan vm.qcow2 --json");
    assert_eq!(plan.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let d = &v["targets"][0];
    assert!(d["script_refused"].is_string(), "{d:#}");
    let commands: Vec<String> = d["manual"][0]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert!(commands[0].starts_with("qemu-img convert"), "{commands:?}");
    for c in &commands {
        let out = in_dir(c);
        let code = out.status.code();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        // The plan of the raw copy has work (1); the rest succeed.
        let ok = if c.starts_with("diskalign plan") {
            Some(1)
        } else {
            Some(0)
        };
        assert_eq!(code, ok, "{c}:\n{text}");
    }
    let fixed = dir.path().join("vm.qcow2.aligned");
    let (doc, code) = run_json(&["check", fixed.to_str().unwrap()]);
    assert_eq!(code, 0, "{doc:#}");
    assert_eq!(doc["targets"][0]["container"]["format"], "qcow2");
    assert_eq!(doc["targets"][0]["partitions"][0]["start_bytes"], MIB);
    // The files, read back from the fixed image's guest.
    let back = dir.path().join("back.raw");
    qemu_img_convert(&fixed, &back, "raw", &[]);
    let l = LoopDev::attach(&back, None);
    verify(&l.part(1), "ext4", &sums);
}
