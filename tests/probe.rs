//! `diskalign probe` on real loop devices and real files: the grid runs on
//! 512 and 4096-byte sectors with both engines, O_DIRECT rules are
//! enforced, destructive runs are refused on devices in use or holding
//! data (the device left bit-for-bit unchanged), and scratch files are
//! removed on success, on error and on SIGINT.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// A 64 MiB image, partitioned by an sfdisk `script` when given, on a loop
/// device. Fields drop in order: the device is detached before its file goes.
struct TestDisk {
    l: LoopDev,
    dir: tempfile::TempDir,
}

impl TestDisk {
    fn new(script: Option<&str>, sector_size: Option<u32>) -> TestDisk {
        let dir = tempfile::tempdir().unwrap();
        let img = image(dir.path(), "d.img", 64 << 20);
        if let Some(script) = script {
            sfdisk(&img, script);
        }
        TestDisk {
            l: LoopDev::attach(&img, sector_size),
            dir,
        }
    }
}

/// A short grid: enough to exercise everything, fast enough for CI.
const FAST: &[&str] = common::QUICK_PROBE;

fn probe(args: &[&str]) -> (String, String, i32) {
    let mut a = vec!["probe"];
    a.extend_from_slice(args);
    run_full(&a)
}

fn probe_json(args: &[&str]) -> (Value, i32) {
    let mut a = args.to_vec();
    a.push("--json");
    let (out, err, code) = probe(&a);
    let v: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("bad JSON ({e}), stderr: {err}\n{out}"));
    (v, code)
}

fn with_fast<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = extra.to_vec();
    v.extend_from_slice(FAST);
    v
}

/// Every cell of the grid is in the JSON, with numbers that make sense.
fn assert_full_grid(v: &Value, block_sizes: &[u64], offsets: &[u64]) {
    assert_eq!(v["schema"], "diskalign.probe");
    assert_eq!(v["schema_version"], 1);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), block_sizes.len() * offsets.len(), "{cells:#?}");
    let run = v["pacing"]["rounds"].as_array().unwrap();
    let rounds = run.len();
    let kept = run.iter().filter(|r| r["set_aside"] == false).count();
    assert!((3..=6).contains(&rounds), "{run:#?}");
    assert!(kept >= 3 || rounds == 6, "{run:#?}");
    for &bs in block_sizes {
        for &off in offsets {
            let c = cells
                .iter()
                .find(|c| c["block_size"] == bs && c["offset"] == off)
                .unwrap_or_else(|| panic!("no cell {bs}@{off}"));
            assert!(c["iops"]["median"].as_f64().unwrap() > 0.0);
            let ci = c["iops"]["ci95"].as_array().unwrap();
            assert!(ci[0].as_f64().unwrap() <= ci[1].as_f64().unwrap());
            assert!(c["lat_us"]["p99"].as_f64().unwrap() >= c["lat_us"]["p50"].as_f64().unwrap());
            // --rounds 3 are kept; a round set aside as a noise burst is
            // replaced (at most as many again), and every cell runs in
            // every round.
            assert_eq!(c["rounds"].as_array().unwrap().len(), rounds, "{c:#?}");
            if off == 0 {
                assert!(c["relative"].is_null());
            } else {
                assert!(c["relative"]["ratio"].as_f64().unwrap() > 0.0);
                assert!(c["relative"]["significant"].is_boolean());
            }
        }
    }
    let inf = &v["inference"];
    assert!(inf["summary"].as_str().unwrap().len() > 20);
    assert!(inf["confidence"].is_string());
    assert!(v["environment"]["kernel"].as_str().unwrap().len() > 3);
}

#[test]
fn grid_runs_on_512_byte_sectors_with_both_engines_and_two_jobs() {
    let d = TestDisk::new(None, None);
    let l = &d.l;
    for (engine, jobs) in [("io_uring", "1"), ("psync", "1"), ("io_uring", "2")] {
        let (v, code) = probe_json(&with_fast(&[&l.dev, "--engine", engine, "--jobs", jobs]));
        assert_eq!(code & !5, 0, "exit {code}");
        assert_eq!(v["engine"]["name"], engine);
        assert_eq!(v["target"]["kind"], "disk");
        assert_eq!(v["target"]["logical_block_size"], 512);
        assert_full_grid(&v, &[512, 4096, 65536], &[0, 512, 2048, 3584, 4096, 4608]);
    }
}

#[test]
fn grid_runs_on_4096_byte_sectors_and_refuses_sub_sector_offsets() {
    let d = TestDisk::new(None, Some(4096));
    let l = &d.l;
    let (v, code) = probe_json(&with_fast(&[&l.dev]));
    assert_eq!(code & !5, 0, "exit {code}");
    assert_eq!(v["target"]["logical_block_size"], 4096);
    assert_full_grid(&v, &[4096, 65536], &[0, 4096, 8192]);
    for (args, want) in [
        (
            vec!["--offsets", "512"],
            "offset 512 is not a multiple of 4096 bytes",
        ),
        (
            vec!["--bs", "512"],
            "block size 512 is not a multiple of 4096 bytes",
        ),
    ] {
        let mut a = vec![l.dev.as_str()];
        a.extend(args);
        let (out, err, code) = probe(&a);
        assert_eq!(code, 2, "{err}");
        assert!(out.is_empty());
        assert!(err.contains(want) && err.contains("O_DIRECT"), "{err}");
    }
}

#[test]
fn csv_and_fio_job_file() {
    require_tool("fio");
    let d = TestDisk::new(None, None);
    let l = &d.l;
    let csv = d.dir.path().join("cells.csv");
    let csv_s = csv.display().to_string();
    // --format csv on stdout, and the same rows in --csv FILE.
    let (out, err, code) = probe(&with_fast(&[
        &l.dev, "--bs", "4k", "--csv", &csv_s, "--format", "csv",
    ]));
    assert_eq!(code & !5, 0, "{err}");
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(out, text);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("pattern,block_size,offset,iops_median"));
    assert_eq!(lines.len(), 1 + 6);
    assert!(lines[1].starts_with("randread,4096,0,"));
    // The job file parses with the real fio and names every cell.
    let (jobs, err, code) = probe(&[&l.dev, "--preset", "quick", "--emit-fio"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        jobs.contains("[randread-4096-at-512]") && jobs.contains("blockalign=65536"),
        "{jobs}"
    );
    let job = d.dir.path().join("grid.fio");
    std::fs::write(&job, &jobs).unwrap();
    let (code, out) = sh_status("fio", &["--parse-only", &job.display().to_string()]);
    assert_eq!(code, 0, "fio rejected the job file: {out}\n{jobs}");
}

/// An ext4 without lazy init: once mounted, no background thread zeroing
/// inode tables changes the bytes a refusal test compares.
fn mkfs_ext4_settled(dev: &str) {
    sh(
        "mkfs.ext4",
        &["-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", dev],
    );
}

/// The refusal suite: each case exits 2 and leaves every byte in place.
fn assert_refused(dev: &str, extra: &[&str], want: &str) {
    let before = checksum(dev);
    let mut a = vec![dev, "--write", "--destructive"];
    a.extend_from_slice(extra);
    a.extend_from_slice(FAST);
    let (out, err, code) = probe(&a);
    assert_eq!(code, 2, "not refused ({want}): {err}\n{out}");
    assert!(
        err.contains("refusing to write") || err.contains("in use"),
        "{err}"
    );
    assert!(err.contains(want), "expected {want:?} in: {err}");
    assert_eq!(checksum(dev), before, "{dev} changed although refused");
}

#[test]
fn refuses_without_destructive() {
    let d = TestDisk::new(None, None);
    let l = &d.l;
    let before = checksum(&l.dev);
    let (_, err, code) = probe(&with_fast(&[&l.dev, "--write"]));
    assert_eq!(code, 2);
    assert!(err.contains("--destructive"), "{err}");
    let (_, err, code) = probe(&with_fast(&[&l.dev, "--pattern", "randwrite"]));
    assert_eq!(code, 2);
    assert!(err.contains("--write"), "{err}");
    assert_eq!(checksum(&l.dev), before);
}

#[test]
fn refuses_a_disk_whose_partition_is_mounted() {
    let d = TestDisk::new(Some("label: gpt\nstart=2048, size=32768\n"), None);
    let l = &d.l;
    mkfs_ext4_settled(&l.part(1));
    let m = Mounted::read_only(&l.part(1));
    assert_refused(&l.dev, &[], "is mounted on");
    // The partition itself, too; --force never overrides a mount.
    assert_refused(&l.part(1), &["--force"], "is mounted on");
    drop(m);
}

#[test]
fn refuses_a_mounted_target() {
    let d = TestDisk::new(None, None);
    let l = &d.l;
    mkfs_ext4_settled(&l.dev);
    // Read-only, so the only writer that could change a byte is the probe.
    let _m = Mounted::read_only(&l.dev);
    assert_refused(&l.dev, &["--force"], "is mounted on");
}

#[test]
fn refuses_active_swap() {
    let d = TestDisk::new(None, None);
    let l = &d.l;
    let _s = Swap::on(&l.dev);
    assert_refused(&l.dev, &["--force"], "is active swap");
}

#[test]
fn refuses_an_lvm_physical_volume() {
    let d = TestDisk::new(None, None);
    let l = &d.l;
    lvm("pvcreate", &format!("{}$", l.dev), &["-q", &l.dev]);
    assert_refused(&l.dev, &[], "LVM2 physical volume");
}

#[test]
fn refuses_a_filesystem_signature_unless_forced() {
    let d = TestDisk::new(None, None);
    let l = &d.l;
    sh("mkfs.ext4", &["-q", &l.dev]);
    assert_refused(&l.dev, &[], "ext2/3/4 filesystem");
    // Forced: it runs, and the write cells are measured.
    let (v, code) = probe_json(&with_fast(&[
        &l.dev,
        "--write",
        "--destructive",
        "--force",
        "--bs",
        "4k",
    ]));
    assert_eq!(code & !5, 0, "exit {code}");
    let cells = v["cells"].as_array().unwrap();
    assert!(cells.iter().any(|c| c["pattern"] == "randwrite"));
}

#[test]
fn buffered_fdatasync_reports_the_node_block_size() {
    // A partition of 32767 sectors: not a multiple of 4 KiB, so the kernel
    // gives its node a 512-byte block size and splits buffered writes.
    let d = TestDisk::new(Some("label: gpt\nstart=2048, size=32767\n"), None);
    let l = &d.l;
    let (v, code) = probe_json(&[
        &l.part(1),
        "--write",
        "--destructive",
        "--buffered",
        "--fdatasync",
        "--pattern",
        "randwrite",
        "--bs",
        "4k",
        "--offsets",
        "0,512",
        "--runtime",
        "20ms",
        "--warmup",
        "5ms",
        "--rounds",
        "3",
    ]);
    assert_eq!(code & !5, 0, "exit {code}");
    assert_eq!(v["target"]["kind"], "partition");
    assert_eq!(v["target"]["node_block_size"], 512);
    assert_eq!(v["engine"]["direct"], false);
    assert_eq!(v["engine"]["fdatasync"], true);
    assert_eq!(v["cells"].as_array().unwrap().len(), 2);
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn scratch_file_is_removed_on_success_and_on_error() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = dir.path().display().to_string();
    let (v, code) = probe_json(&with_fast(&[&d, "--size", "64M", "--write", "--bs", "4k"]));
    assert_eq!(code & !5, 0, "exit {code}");
    assert_eq!(v["target"]["kind"], "scratch-file");
    assert!(v["environment"]["filesystem"]["fs_type"].is_string());
    assert!(v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["pattern"] == "randwrite"));
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
    // An error after the file was made: an offset O_DIRECT cannot do.
    let (_, err, code) = probe(&with_fast(&[&d, "--size", "64M", "--offsets", "100"]));
    assert_eq!(code, 2);
    assert!(err.contains("offset 100"), "{err}");
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
}

/// Starts a probe on a scratch file in `dir` and waits until it holds the
/// file open. The file never has a name: the directory stays empty all
/// along, and /proc shows the descriptor as a deleted file in `dir`.
fn probe_holding_scratch(dir: &Path, size: &str) -> std::process::Child {
    let child = std::process::Command::new(bin())
        .args(["probe", &dir.display().to_string(), "--size", size])
        .args(["--runtime", "2s", "--rounds", "5"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    let fds = format!("/proc/{}/fd", child.id());
    let t0 = Instant::now();
    let failure = loop {
        if !leftovers(dir).is_empty() {
            break format!("a path exists: {:?}", leftovers(dir));
        }
        let held = std::fs::read_dir(&fds)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                std::fs::read_link(e.path())
                    .is_ok_and(|l| l.starts_with(dir) && l.to_string_lossy().ends_with("(deleted)"))
            });
        if held {
            return child;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            break "scratch file never opened".to_string();
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = child.kill();
    let _ = child.wait();
    panic!("{failure}");
}

fn free_bytes(dir: &Path) -> u64 {
    let st = rustix::fs::statvfs(dir).unwrap();
    st.f_bavail * st.f_frsize
}

#[test]
fn scratch_file_is_removed_on_sigint() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let child = probe_holding_scratch(dir.path(), "64M");
    std::thread::sleep(Duration::from_millis(500));
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Bit 2, interrupted; bit 4 too when too few rounds decided nothing.
    assert!(matches!(out.status.code(), Some(2 | 6)), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(leftovers(dir.path()).is_empty());
}

/// SIGKILL (or a power cut) used to leave all of --size behind as
/// `.diskalign-probe-PID.tmp`; a nameless file is freed by the kernel.
#[test]
fn scratch_file_is_gone_after_sigkill() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let before = free_bytes(dir.path());
    let mut child = probe_holding_scratch(dir.path(), "256M");
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
    // The space comes back (other writers on this filesystem may move it a little).
    let t0 = Instant::now();
    while free_bytes(dir.path()) + (128 << 20) < before {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the 256 MiB were not freed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A --size the filesystem cannot hold is refused before anything is
/// written (it used to fill a 64 MiB ext4 with 54 MiB, and --size 100T
/// never finished); so is one above RLIMIT_FSIZE, whose SIGXFSZ would kill
/// the probe mid-write.
#[test]
fn scratch_size_beyond_the_filesystem_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "small.img", 64 << 20);
    sh("mkfs.ext4", &["-q", "-F", img.to_str().unwrap()]);
    let disk = LoopDev::attach(&img, None);
    let mnt = Mounted::new(&disk.dev);
    let m = mnt.dir.path();
    let used = || {
        let s = rustix::fs::statvfs(m).unwrap();
        (s.f_blocks - s.f_bfree) * s.f_frsize
    };
    let before = used();
    let (_, err, code) = probe(&with_fast(&[
        &m.display().to_string(),
        "--size",
        "100M",
        "--write",
    ]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("free") && err.contains("give a smaller --size"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!(used(), before, "nothing may be written before refusing");
    assert!(
        leftovers(m).iter().all(|n| n == "lost+found"),
        "{:?}",
        leftovers(m)
    );

    let t0 = Instant::now();
    let (_, err, code) = probe(&with_fast(&["/var/tmp", "--size", "100T"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("give a smaller --size"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(5));

    let out = std::process::Command::new("sh")
        .args([
            "-c",
            "ulimit -f 1024; exec \"$0\" probe /var/tmp --size 2M --preset quick",
        ])
        .arg(bin())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("file size limit"), "{err}");
}

/// The command a refusal prints in `(...)` after `lead`, run by sh as
/// printed.
fn run_printed(err: &str, lead: &str) {
    let from = err
        .find(lead)
        .unwrap_or_else(|| panic!("no {lead:?} in: {err}"))
        + lead.len();
    let cmd = &err[from..from + err[from..].find(") or ").unwrap()];
    let (code, out) = sh_status("sh", &["-c", cmd]);
    assert_eq!(code, 0, "{cmd}: {out}");
}

/// On a real ext4, a file whose reads would not reach the device is
/// refused in one line naming the share, exit 2 (as a sparse file is):
/// fallocated (unwritten extents, FIEMAP), sparse (holes), and just
/// written (delayed allocation). The command each line offers runs as
/// printed, and the file is then probed; a filled file is probed.
#[test]
fn files_whose_reads_skip_the_device_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "fs.img", 256 << 20);
    sh("mkfs.ext4", &["-q", "-F", img.to_str().unwrap()]);
    let disk = LoopDev::attach(&img, None);
    let mnt = Mounted::new(&disk.dev);
    let m = mnt.dir.path();
    let refused = |f: &str, says: &str| -> String {
        let (out, err, code) = probe(&with_fast(&[f, "--bs", "4k"]));
        assert_eq!(code, 2, "{f}: not refused: {err}\n{out}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("diskalign: {f}: {says}")), "{err}");
        err
    };
    let probed = |f: &str| {
        let (v, code) = probe_json(&with_fast(&[f, "--bs", "4k"]));
        assert_eq!(code & 2, 0, "{f}: exit {code}");
        assert_eq!(v["target"]["kind"], "file");
    };

    let fallocated = m.join("f.img").display().to_string();
    sh("fallocate", &["-l", "64M", &fallocated]);
    let err = refused(
        &fallocated,
        "64 MiB of its 64 MiB is allocated but never written (unwritten extents, FIEMAP): reads of it return zeros without reaching the device; write it first (dd if=/dev/urandom of=",
    );
    run_printed(&err, "write it first (");
    probed(&fallocated);

    let sparse = m.join("s.img").display().to_string();
    sh("truncate", &["-s", "64M", &sparse]);
    let err = refused(
        &sparse,
        "64 MiB of its 64 MiB is not allocated (a sparse file, holes)",
    );
    run_printed(&err, "write it first (");
    probed(&sparse);

    // Half written, half fallocated: refused, and no command that would
    // write over the written half.
    let half = m.join("h.img").display().to_string();
    sh("fallocate", &["-l", "64M", &half]);
    sh(
        "dd",
        &[
            "if=/dev/urandom",
            &format!("of={half}"),
            "bs=1M",
            "count=32",
            "conv=notrunc,fsync",
        ],
    );
    let err = refused(&half, "32 MiB of its 64 MiB is allocated but never written");
    assert!(!err.contains("dd "), "{err}");

    let fresh = m.join("w.img").display().to_string();
    std::fs::write(&fresh, vec![3u8; 16 << 20]).unwrap();
    let err = refused(
        &fresh,
        "16 MiB of its 16 MiB is not on the device yet (delayed allocation, FIEMAP): it is still in the page cache; flush it first (sync ",
    );
    run_printed(&err, "flush it first (");
    probed(&fresh);
}

/// Run diskalign's probe with io_uring_setup(2) failing with ENOSYS.
fn probe_without_io_uring(args: &[&str]) -> (String, String, i32) {
    let mut cmd = std::process::Command::new(bin());
    cmd.arg("probe").args(args);
    without_io_uring(&mut cmd);
    output_of(&mut cmd)
}

#[test]
fn falls_back_to_psync_when_io_uring_is_blocked() {
    let d = TestDisk::new(None, None);
    let l = &d.l;
    let mut a = with_fast(&[&l.dev, "--bs", "4k", "--json"]);
    let (out, err, code) = probe_without_io_uring(&a);
    assert_eq!(code & !5, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["engine"]["name"], "psync");
    let why = v["engine"]["fallback_reason"].as_str().unwrap();
    assert!(why.contains("io_uring unavailable"), "{why}");
    assert_full_grid(&v, &[4096], &[0, 512, 2048, 3584, 4096, 4608]);
    // Asking for io_uring explicitly is an error, not a silent fallback.
    a.extend(["--engine", "io_uring"]);
    let (_, err, code) = probe_without_io_uring(&a);
    assert_eq!(code, 2);
    assert!(err.contains("cannot start the I/O engine"), "{err}");
}

/// Ctrl-C ends the run after the I/Os in flight, and what was measured is
/// still reported (marked partial), as fio does; the exit status is 2.
#[test]
fn sigint_reports_what_was_measured() {
    let d = TestDisk::new(None, None);
    let child = std::process::Command::new(bin())
        .args(["probe", &d.l.dev, "--json", "--runtime", "300ms"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code().unwrap_or(-1);
    assert!(err.contains("interrupted after"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert_eq!(v["partial"], true);
    // Bit 2, interrupted; bit 4 unless what was measured ruled a penalty
    // out (a loop device over a file pays none, so never bit 1).
    let open = v["inference"]["confidence"] != "no-difference";
    assert_eq!(code, 2 | if open { 4 } else { 0 }, "{err}");
    assert!(v["diskalign_version"].is_string());
    let cells = v["cells"].as_array().unwrap();
    assert!(!cells.is_empty() && cells.len() < 30, "{}", cells.len());
    assert!(cells
        .iter()
        .all(|c| c["iops"]["median"].as_f64().unwrap() > 0.0));
}

/// Several targets in one run: the same grid on each, shuffled together,
/// each with its own verdict, and each further target's cells against the
/// first's.
#[test]
fn two_targets_in_one_run() {
    let a = TestDisk::new(None, None);
    let b = TestDisk::new(None, None);
    let (v, code) = probe_json(&with_fast(&[&a.l.dev, &b.l.dev, "--bs", "4k"]));
    assert_eq!(code & !5, 0, "{v}");
    let targets = v["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    assert_eq!(targets[0]["target"]["path"], a.l.dev.as_str());
    assert_eq!(targets[1]["target"]["path"], b.l.dev.as_str());
    assert_eq!(v["target"], targets[0]["target"]);
    for t in targets {
        assert_eq!(t["cells"].as_array().unwrap().len(), 6);
        assert!(t["inference"]["statement"].is_string());
    }
    let versus = v["versus"].as_array().unwrap();
    assert_eq!(versus.len(), 6);
    assert!(versus
        .iter()
        .all(|c| c["kind"] == "target" && c["target"] == 1 && c["reference_target"] == 0));
    // CSV: one row per cell of each target, naming it.
    let (csv, _, _) = probe(&with_fast(&[
        &a.l.dev, &b.l.dev, "--bs", "4k", "--format", "csv",
    ]));
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 12, "{csv}");
    assert_eq!(rows.iter().filter(|r| r.contains(&b.l.dev)).count(), 6);
    // The job file names each target's file.
    let (jobs, err, code) = probe(&[&a.l.dev, &b.l.dev, "--preset", "quick", "--emit-fio"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        jobs.contains("[t2-randread-4096-at-512]")
            && jobs.contains(&format!("filename={}", b.l.dev))
    );
}

/// A loop device timed in 20 ms windows over three rounds is too noisy to
/// rule out a 1 % penalty: the verdict is `inconclusive` with exit bit 4,
/// never "no difference", and the sentence says what was excluded, what
/// not, and the noise that is why.
#[test]
fn a_noisy_run_is_inconclusive_not_no_difference() {
    let d = TestDisk::new(None, None);
    let (v, code) = probe_json(&[
        &d.l.dev,
        "--runtime",
        "20ms",
        "--warmup",
        "5ms",
        "--rounds",
        "3",
        "--min-effect",
        "1",
    ]);
    let inf = &v["inference"];
    let ctx = format!("exit {code}: {inf:#}");
    assert_eq!(v["plan"]["min_effect"], 0.01, "{ctx}");
    assert_eq!(inf["confidence"], "inconclusive", "{ctx}");
    assert_eq!(code & 4, 4, "{ctx}");
    assert_eq!(code & 2, 0, "{ctx}");
    let s = inf["statement"].as_str().unwrap();
    assert!(
        s.starts_with("inconclusive: a penalty of 1 % or more was ruled out at "),
        "{ctx}"
    );
    assert!(s.contains("rounds varied by ±"), "{ctx}");
    assert!(s.contains("cannot be told from none"), "{ctx}");
    assert!(inf["effective_unit_bytes"].is_null(), "{ctx}");
    assert!(inf["unit_fit"]["candidates"].is_array(), "{ctx}");
}

/// `--max-time` is a budget for the whole run: no round starts once it is
/// spent, the JSON records it, and the human report says it was spent.
#[test]
fn the_max_time_budget_ends_the_run() {
    let d = TestDisk::new(None, None);
    let args = [
        d.l.dev.as_str(),
        "--preset",
        "quick",
        "--runtime",
        "20ms",
        "--warmup",
        "5ms",
        "--min-effect",
        "0.5",
        "--max-time",
        "1s",
    ];
    let (v, code) = probe_json(&args);
    let ctx = format!("exit {code}: {:#}", v["inference"]);
    assert_eq!(code & 2, 0, "{ctx}");
    assert_eq!(v["plan"]["max_time"], 1.0, "{ctx}");
    assert_eq!(v["out_of_time"], true, "{ctx}");
    let rounds = v["rounds_run"].as_u64().unwrap();
    // A quick round takes about 0.5 s here; fewer than the plan's 5.
    assert!((1..5).contains(&rounds), "{rounds} rounds: {ctx}");
    // The last round may start just before the budget is spent.
    assert!(v["elapsed_s"].as_f64().unwrap() < 10.0, "{ctx}");
    let (out, _, _) = probe(&args);
    assert!(
        out.contains("; the --max-time budget (1 s) was spent"),
        "{out}"
    );
}

/// SIGINT to a child, as Ctrl-C sends it.
fn interrupt(child: &std::process::Child) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a child has a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("kill(2) on our child");
}
