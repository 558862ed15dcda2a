//! Hostile and broken input from outside the disks: where the output goes,
//! odd kinds of target, and option values out of range. Each gives exit 2
//! and one line naming the problem, or a sane result; never a panic.

mod common;
use common::*;
use std::process::{Command, Stdio};

const MIB: u64 = 1 << 20;

/// Exit 2 with exactly one stderr line containing `says`.
fn refused(args: &[&str], says: &str) {
    let (out, err, code) = run_full(args);
    let ctx = format!("{args:?}: exit {code}\nstdout: {out}\nstderr: {err}");
    assert_eq!(code, 2, "{ctx}");
    assert_eq!(err.trim_end().lines().count(), 1, "{ctx}");
    assert!(err.contains(says), "{ctx}");
    assert!(!err.contains("panicked"), "{ctx}");
}

/// A file with every block allocated (a probe refuses sparse ones).
fn filled(dir: &std::path::Path) -> String {
    let p = dir.join("filled.img");
    filled_file(&p, 8 << 20, 7);
    p.display().to_string()
}

/// Free bytes of the filesystem holding `dir`.
fn free_bytes(dir: &std::path::Path) -> u64 {
    let out = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().nth(1).unwrap().trim().parse().unwrap()
}

fn small_gpt(dir: &std::path::Path) -> String {
    let img = image(dir, "x.img", 64 * MIB);
    sfdisk(&img, "label: gpt\nstart=2048, size=4096\n");
    img.display().to_string()
}

#[test]
fn a_full_disk_on_stdout_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_gpt(dir.path());
    let file = filled(dir.path());
    let fixture = format!(
        "{}/tests/fixtures/sysfs/usb-bridge",
        env!("CARGO_MANIFEST_DIR")
    );
    for args in [
        vec!["check", img.as_str(), "--json"],
        vec!["check", img.as_str()],
        vec!["--sysfs-root", fixture.as_str(), "topology"],
        vec!["probe", file.as_str(), "--emit-fio"],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let (out, err, code) = output_of(Command::new(bin()).args(&args).stdout(full));
        let ctx = format!("{args:?}: exit {code}\nstdout: {out}\nstderr: {err}");
        assert_eq!(code, 2, "{ctx}");
        assert!(
            err.contains("cannot write the report to standard output"),
            "{ctx}"
        );
        assert!(err.contains("No space left on device"), "{ctx}");
        assert!(!err.contains("panicked"), "{ctx}");
    }
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_gpt(dir.path());
    let file = filled(dir.path());
    for args in [
        vec!["check", img.as_str(), "--json"],
        vec!["check", img.as_str()],
        vec!["probe", file.as_str(), "--emit-fio"],
    ] {
        let mut child = Command::new(bin())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader goes away before anything is written
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let code = out.status.code();
        assert!(matches!(code, Some(0 | 1)), "{args:?}: {code:?} {err}");
        assert_eq!(err, "", "{args:?}: a closed pipe is not an error to report");
    }
}

#[test]
fn bad_topology_specs_are_one_line_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_gpt(dir.path());
    for (spec, says) in [
        ("lbs=512,lbs=4096", "'lbs' is given twice"),
        ("min=4096,minimum=8192", "'min' is given twice"),
        ("", "empty --topology"),
        ("foo=1", "unknown topology field 'foo'"),
        ("lbs", "is not KEY=VALUE"),
        ("pbs=4x", "not a size in bytes"),
        ("opt=99999999999", "larger than 4 GiB"),
        ("ao=-5", "not a size in bytes"),
        ("lbs=1000", "logical block size 1000"),
        ("pbs=0", "physical block size 0"),
        ("lbs=4096,pbs=512", "no smaller than the logical block size"),
        ("min=1000", "multiples of the logical block size"),
        ("ao=100", "alignment offset 100"),
    ] {
        refused(&["check", &img, "--topology", spec], says);
    }
}

#[test]
fn odd_targets() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let sock = dir.path().join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    for t in [
        &fifo.display().to_string(),
        &sock.display().to_string(),
        "/dev/null",
    ] {
        refused(&["check", t], "not a block device or a regular file");
    }
    for t in [fifo.display().to_string(), sock.display().to_string()] {
        refused(
            &["probe", &t],
            "not a block device, a regular file or a directory",
        );
    }
    refused(&["check", "/nonexistent/x.img"], "/nonexistent/x.img");
    // A 1 EiB sparse file (tmpfs allows it): check reads its empty first
    // sectors and says so; probe refuses to time reads of holes.
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let huge = shm.path().join("huge.img");
    let f = std::fs::File::create(&huge).unwrap();
    f.set_len(1 << 60).unwrap();
    let h = huge.display().to_string();
    let (doc, code) = run_json(&["check", &h]);
    assert_eq!(doc["targets"][0]["size_bytes"], 1u64 << 60, "{doc:#}");
    assert!(code == 0 || code == 1, "{doc:#}");
    refused(&["probe", &h], "sparse file");
}

/// An output file that would replace a disk image (`check --csv b1.img
/// b2.img`, meant as two targets), binary data or a block device is
/// refused before any work, in one line; the image is left byte for byte.
#[test]
fn an_output_never_replaces_an_image() {
    let dir = tempfile::tempdir().unwrap();
    let b1 = dir.path().join("b1.img");
    let b2 = dir.path().join("b2.img");
    for b in [&b1, &b2] {
        let img = image(
            dir.path(),
            b.file_name().unwrap().to_str().unwrap(),
            8 * MIB,
        );
        sfdisk(&img, "label: dos\nstart=2048, type=83\n");
    }
    let (one, two) = (b1.display().to_string(), b2.display().to_string());
    let before = std::fs::read(&b1).unwrap();
    for (args, flag) in [
        (vec!["check", "--csv", &one, &two], "--csv"),
        (vec!["check", &two, &format!("--json={one}")], "--json"),
        (vec!["check", &two, "--html", &one], "--html"),
        (vec!["check", &two, "--prometheus", &one], "--prometheus"),
        (vec!["plan", "--script", &one, &two], "--script"),
        (vec!["topology", "--csv", &one], "--csv"),
    ] {
        refused(
            &args,
            &format!("diskalign: error: {flag} {one}: {one} exists and holds an MBR partition table: refusing to replace it; remove it first or name another file"),
        );
    }
    // Binary data without a signature the scan knows.
    let blob = dir.path().join("blob.bin");
    std::fs::write(&blob, [1u8, 0, 2, 0, 3].repeat(100)).unwrap();
    let b = blob.display().to_string();
    refused(
        &["check", &two, "--csv", &b],
        &format!("{b} exists and holds binary data (a disk image?): refusing to replace it"),
    );
    assert_eq!(std::fs::read(&b1).unwrap(), before, "b1.img changed");
    assert_eq!(std::fs::read(&blob).unwrap(), [1u8, 0, 2, 0, 3].repeat(100));
    // A block device.
    let l = LoopDev::attach(&b1, None);
    refused(
        &["check", &two, "--csv", &l.dev],
        &format!(
            "--csv {0}: {0} is a block device: refusing to replace it; name a file",
            l.dev
        ),
    );
    drop(l);
    assert_eq!(std::fs::read(&b1).unwrap(), before, "b1.img changed");
    // Our own text is replaced as ever.
    let csv = dir.path().join("run.csv");
    for _ in 0..2 {
        let (_, code) = run(&["check", &two, "--csv", csv.to_str().unwrap()]);
        assert_eq!(code, 0);
    }
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .starts_with("target,"));
}

/// A directory is named as one, with the command that takes it; only
/// probe does.
#[test]
fn a_directory_is_said_to_be_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    for (cmd, takes) in [
        ("check", "check takes a device or an image file"),
        ("plan", "plan takes a disk or an image file"),
    ] {
        refused(
            &[cmd, &d],
            &format!("diskalign: {d}: a directory: {takes}; probe takes a directory"),
        );
    }
    // topology also prints the error in its report.
    let (_, err, code) = run_full(&["topology", &d]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!("diskalign: {d}: a directory: topology takes a disk; probe takes a directory")
    );
    let img = small_gpt(dir.path());
    let (_, err, code) = run_full(&["topology", &img]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("a regular file: topology takes a disk; check and plan take an image file"),
        "{err}"
    );
}

/// A file of fewer than two sectors is not a disk image (it used to be
/// `aligned: no partition table`, exit 0); one whose size is not a whole
/// number of sectors is checked, and says so.
#[test]
fn a_file_too_small_for_a_disk_and_a_partial_last_sector() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = dir.path().join("tiny.img");
    let noise: Vec<u8> = (0..1000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&tiny, &noise).unwrap();
    let empty = dir.path().join("empty.img");
    std::fs::write(&empty, b"").unwrap();
    for (f, n) in [(&tiny, 1000), (&empty, 0)] {
        let t = f.display().to_string();
        for cmd in ["check", "plan"] {
            refused(
                &[cmd, &t],
                &format!("diskalign: {t}: a file of {n} bytes, smaller than two 512-byte sectors: not a disk image"),
            );
        }
    }
    // A qcow2 whose guest disk is one sector, made by qemu-img.
    let q = dir.path().join("one.qcow2");
    let (code, out) = sh_status(
        "qemu-img",
        &["create", "-q", "-f", "qcow2", q.to_str().unwrap(), "512"],
    );
    assert_eq!(code, 0, "{out}");
    refused(
        &["check", q.to_str().unwrap()],
        "a qcow2 image whose guest disk has 512 bytes, smaller than two 512-byte sectors: not a disk image",
    );
    // 64 MiB and 100 bytes: checked, with the note, exit 0.
    let img = small_gpt(dir.path());
    let f = std::fs::OpenOptions::new().append(true).open(&img).unwrap();
    f.set_len(64 * MIB + 100).unwrap();
    let (doc, code) = run_json(&["check", &img]);
    assert_eq!(code, 0, "{doc:#}");
    assert!(
        codes(&doc["targets"][0]).contains(&"image-size-partial-sector".to_string()),
        "{doc:#}"
    );
    let (out, err, code) = run_full(&["check", &img, "--width", "0"]);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    assert!(out.contains("the image is 67108964 bytes, not a whole number of its 512-byte sectors: its last 100 bytes"), "{out}");
}

#[test]
fn probe_options_out_of_range() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let t = filled(dir.path());
    for (opt, value, says) in [
        ("--bs", "0", "block size 0"),
        ("--bs", "100000000000", "between 1 byte and 64 MiB"),
        ("--qd", "0", "--qd 0"),
        ("--qd", "1000000", "--qd 1000000"),
        ("--jobs", "10000", "--jobs 10000"),
        ("--rounds", "0", "--rounds"),
        ("--runtime", "0", "--runtime"),
        ("--offsets", "1", "offset 1 is not a multiple"),
        ("--min-effect", "0", "above 0 and below 100"),
        ("--min-effect", "100", "above 0 and below 100"),
        ("--min-effect", "250", "above 0 and below 100"),
        ("--min-effect", "ten", "\"ten\" is not a percentage"),
        ("--min-effect", "NaN", "above 0 and below 100"),
        (
            "--max-time",
            "1s",
            "--max-time 1s is shorter than one round",
        ),
        ("--max-time", "0", "shorter than one round"),
        ("--max-time", "soon", "not a duration"),
    ] {
        refused(&["probe", &t, "--preset", "quick", opt, value], says);
    }
    refused(
        &["probe", &t, "--preset", "quick", "--min-effect=-5"],
        "above 0 and below 100",
    );
    // A directory: refused before its scratch file is written (1 GiB).
    let d = dir.path().to_str().unwrap();
    let before = free_bytes(dir.path());
    let t0 = std::time::Instant::now();
    refused(
        &["probe", d, "--write", "--max-time", "1s"],
        "shorter than one round",
    );
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    assert!(free_bytes(dir.path()) + (64 << 20) > before);
    refused(
        &["probe", dir.path().to_str().unwrap(), "--size", "0"],
        "--size 0 B",
    );
    refused(&["probe", &t, "--qd", "many"], "invalid value 'many'");
}

/// Offsets near 2^64 overflowed the grid's size arithmetic (a panic in
/// debug builds, a wrap in release); found by the `sizes` fuzz target.
#[test]
fn huge_offsets_are_refused_not_overflowed() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let d = dir.path().display().to_string();
    for offsets in ["7745454T", "0,009135011444977069k"] {
        refused(
            &[
                "probe",
                &d,
                "--size",
                "64M",
                "--offsets",
                offsets,
                "--emit-fio",
            ],
            "too small for this grid",
        );
    }
}

#[test]
fn report_and_compare_refuse_what_is_not_a_saved_run() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let garbage = write("garbage.json", "not json at all");
    let other = write("other.json", "{\"schema\": \"someone.else\"}");
    let newer = write(
        "newer.json",
        "{\"schema\": \"diskalign.check\", \"schema_version\": 99}",
    );
    let img = small_gpt(dir.path());
    let (check, _) = run(&["check", &img, "--json"]);
    let check = write("check.json", &check);
    let topo = write(
        "topo.json",
        "{\"schema\": \"diskalign.topology\", \"schema_version\": 1, \"disks\": []}",
    );
    refused(&["report", &garbage], "garbage.json: not JSON");
    refused(&["report", &other], "neither a diskalign document");
    refused(&["report", &newer], "schema version 99 is newer");
    let odd = write(
        "odd.json",
        "{\"schema\": \"diskalign.check\", \"schema_version\": \"one\"}",
    );
    refused(
        &["report", &odd],
        "diskalign.check: schema_version is not a whole number",
    );
    refused(&["report", "/nonexistent/run.json"], "cannot read");
    refused(&["report", dir.path().to_str().unwrap()], "cannot read");
    refused(
        &["compare", &check, &topo],
        "cannot compare a check run with a topology run",
    );
    refused(&["compare", &check, &garbage], "not JSON");
    // Nothing written when a run cannot be read.
    let page = dir.path().join("page.html");
    refused(
        &[
            "report",
            &check,
            &garbage,
            "--output",
            page.to_str().unwrap(),
        ],
        "not JSON",
    );
    assert!(!page.exists());
}

#[test]
fn report_writes_only_what_was_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_gpt(dir.path());
    let (check, _) = run(&["check", &img, "--json"]);
    let saved = dir.path().join("check.json");
    std::fs::write(&saved, check).unwrap();
    let s = saved.display().to_string();
    // To stdout by default; --output writes the file and prints nothing.
    let (page, code) = run(&["report", &s]);
    assert_eq!(code, 0);
    assert!(page.starts_with("<!DOCTYPE html>"));
    let out = dir.path().join("r.html");
    let (printed, code) = run(&["report", &s, "--output", out.to_str().unwrap()]);
    assert_eq!((printed.as_str(), code), ("", 0));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), page);
    // The same page from standard input.
    let (out, err, code) = output_of(
        Command::new(bin())
            .args(["report", "-"])
            .stdin(std::fs::File::open(&saved).unwrap()),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.replace("stdin", &s), page);
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["check.json", "r.html", "x.img"]);
}

#[test]
fn plan_refuses_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_gpt(dir.path());
    refused(
        &["plan", "--new", &img, "--sizes", "1G,rest,2G"],
        "only the last size",
    );
    refused(&["plan", "--new", &img, "--sizes", "lots"], "is not a size");
    refused(&["plan", "--new", &img], "--sizes");
    refused(&["plan", &img, "--format", "csv"], "csv");
    refused(&["plan", &img, &img, "--script", "x.sh"], "one disk");
    refused(&["plan", "/nonexistent/disk.img"], "/nonexistent/disk.img");
    refused(&["plan", "--new", &img, "--sizes", "1M"], "not empty");
    assert!(!std::path::Path::new("x.sh").exists());
}

/// Every output flag is checked before the run: a file named twice, a
/// directory that cannot be written, a name taken by a directory or a
/// device node, or a format the command does not have is one line and
/// exit 2, and nothing is written, not even the files that were fine.
#[test]
fn bad_destinations_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_gpt(dir.path());
    let file = filled(dir.path());
    let at = |name: &str| dir.path().join(name).display().to_string();
    let (json, html, prom) = (at("a.json"), at("a.html"), at("a.prom"));
    let twice = at("./a.json");
    refused(
        &["check", &img, &format!("--json={json}"), "--html", &twice],
        "given twice (--json and --html)",
    );
    refused(
        &[
            "check",
            &img,
            "--csv",
            &json,
            "--prometheus",
            &prom,
            "--html",
            &json,
        ],
        "given twice (--csv and --html)",
    );
    // /proc takes no new file, whoever asks.
    refused(
        &[
            "check",
            &img,
            "--html",
            &html,
            "--prometheus",
            "/proc/diskalign.prom",
        ],
        "--prometheus /proc/diskalign.prom: cannot write there",
    );
    refused(
        &["check", &img, "--json=/no/such/dir/a.json"],
        "cannot write there",
    );
    let d = dir.path().display().to_string();
    refused(&["topology", "--html", &d], "a directory");
    refused(&["check", &img, "--csv", "/dev/null"], "not a regular file");
    // A format the command does not have.
    refused(
        &["probe", &file, "--prometheus", &prom],
        "probe has no Prometheus output",
    );
    refused(&["plan", &img, "--csv", &json], "plan has no CSV output");
    refused(
        &["plan", "--new", &img, "--sizes", "1M", "--html", &html],
        "plan --new has no HTML output",
    );
    refused(
        &["check", "--list-columns", "--html", &html],
        "--list-columns has no HTML output",
    );
    refused(&["check", &img, "--format", "csv", "--json"], "--json=FILE");
    // An output that names an input would replace it: the image checked,
    // the disk planned, a saved run compared or drawn.
    let img_sum = std::fs::read(&img).unwrap();
    let an_input = "an input of this run; writing there would replace it";
    refused(&["check", &img, "--csv", &img], an_input);
    refused(&["check", &img, "--html", &at("./x.img")], an_input);
    refused(&["plan", &img, "--script", &img], an_input);
    refused(&["probe", &file, &format!("--json={file}")], an_input);
    refused(&["compare", &img, &file, "--html", &file], an_input);
    refused(&["report", &img, "--output", &img], an_input);
    // report's page is a file like any other: checked before a run is read.
    refused(
        &["report", &img, "--output", "/no/such/dir/page.html"],
        "--output /no/such/dir/page.html: cannot write there",
    );
    refused(&["report", &img, "--output", &d], "a directory");
    assert_eq!(
        std::fs::read(&img).unwrap(),
        img_sum,
        "the image is untouched"
    );
    // --emit-fio writes a job file on standard output and nothing else.
    refused(
        &["probe", &file, "--emit-fio", "--html", &html],
        "--emit-fio prints a fio job file",
    );
    refused(&["probe", &file, "--emit-fio", "--json"], "--emit-fio");
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["filled.img", "x.img"]);
}

/// Each file flag writes what --format would print, beside it: --json=FILE
/// (the = keeps `--json DISK` meaning JSON on standard output), --csv,
/// --html, --prometheus, in any combination with any --format.
#[test]
fn file_flags_write_what_format_prints() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_gpt(dir.path());
    let at = |name: &str| dir.path().join(name).display().to_string();
    let (json, csv, prom) = (at("a.json"), at("a.csv"), at("a.prom"));
    let (human, code) = run(&[
        "check",
        &img,
        &format!("--json={json}"),
        "--csv",
        &csv,
        "--prometheus",
        &prom,
    ]);
    assert_eq!(code, 0);
    assert_eq!(human, run(&["check", &img]).0);
    let (printed, _) = run(&["check", "--json", &img]);
    let written = std::fs::read_to_string(&json).unwrap();
    assert_eq!(without_start(&written), without_start(&printed));
    let (printed, _) = run(&["check", &img, "--format", "csv"]);
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), printed);
    assert!(std::fs::read_to_string(&prom)
        .unwrap()
        .contains("diskalign_last_run_timestamp_seconds{command=\"check\"}"));
    // JSON on standard output, CSV beside it; --format json --json is JSON.
    let (printed, _) = run(&["check", &img, "--format", "json", "--csv", &csv]);
    assert!(printed.contains("\"schema\": \"diskalign.check\""));
    let (again, _) = run(&["check", &img, "--format", "json", "--json"]);
    assert_eq!(without_start(&again), without_start(&printed));
    // plan takes the same flags: --json and --format json as before, and
    // --json=FILE beside the script.
    let old = image(dir.path(), "old.img", 64 * MIB);
    sfdisk(&old, "start=63,size=50000\n");
    let old = old.display().to_string();
    let (json, script) = (at("plan.json"), at("fix.sh"));
    let (printed, code) = run(&["plan", &old, "--json"]);
    assert_eq!(code, 1);
    assert!(printed.contains("\"schema\": \"diskalign.plan\""));
    let (same, _) = run(&["plan", &old, "--format", "json"]);
    assert_eq!(without_start(&same), without_start(&printed));
    let (human, code) = run(&["plan", &old, &format!("--json={json}"), "--script", &script]);
    assert_eq!(code, 1);
    assert_eq!(human, run(&["plan", &old]).0);
    let written = std::fs::read_to_string(&json).unwrap();
    assert_eq!(without_start(&written), without_start(&printed));
    assert!(std::fs::read_to_string(&script)
        .unwrap()
        .starts_with("#!/bin/sh"));
}

/// A value no device could have is one usage line before any target is
/// read, however many targets were given: no report, no summary.
#[test]
fn a_topology_no_device_could_have_is_one_usage_line() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_gpt(dir.path());
    for spec in ["pbs=3000", "lbs=4096,pbs=512", "ao=100"] {
        let args = ["check", &img, &img, "--topology", spec];
        refused(&args, &format!("'{spec}' for '--topology <SPEC>'"));
        let (out, _, _) = run_full(&args);
        assert_eq!(out, "", "{spec}: nothing is reported");
        refused(&["plan", &img, "--topology", spec], "--topology");
    }
    let (_, err, code) = run_full(&["check", &img, "--topology", "pbs=4096,ao=3584"]);
    assert_eq!(code, 1, "a valid spec is applied: {err}");
}

/// `--destructive` and `--force` without `--write` would run a read-only
/// probe the user did not ask for.
#[test]
fn probe_write_confirmations_need_write() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let t = filled(dir.path());
    for flag in ["--destructive", "--force"] {
        refused(
            &["probe", &t, flag, "--emit-fio"],
            &format!("probe {flag} without --write"),
        );
    }
}

/// Table flags shape the human table and the CSV; JSON and HTML have no
/// table, so they are refused there rather than ignored.
#[test]
fn table_flags_are_refused_where_there_is_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_gpt(dir.path());
    for format in ["json", "html"] {
        for flag in [&["-o", "number"][..], &["-n"], &["-r"], &["-P"], &["-b"]] {
            let mut args = vec!["check", img.as_str(), "--format", format];
            args.extend_from_slice(flag);
            refused(&args, &format!("--format {format} has none"));
        }
    }
    refused(
        &["check", &img, "--json", "-o", "number"],
        "--format json has none",
    );
    for flag in ["-r", "-P"] {
        refused(
            &["check", &img, "--format", "csv", flag],
            "--format csv is its own",
        );
    }
    refused(
        &["check", &img, "-o", "nonsense"],
        "\"nonsense\" is not a column of check",
    );
    refused(
        &["topology", "-o", "number"],
        "\"number\" is not a column of topology",
    );
    refused(&["check", &img, "-r", "-P"], "cannot be used with");
    refused(
        &["check", &img, "-q", "-o", "number"],
        "cannot be used with",
    );
    // CSV takes the columns and -n.
    let (out, code) = run(&[
        "check",
        &img,
        "--format",
        "csv",
        "-n",
        "-o",
        "number,status",
    ]);
    assert_eq!((out.as_str(), code), ("1,aligned\n", 0));
}

/// probe, compare and plan take check's table flags: a column their
/// table has not is one line naming the table and exit 2, before any
/// I/O or file; compare names its columns once the runs are read, and
/// still writes nothing.
#[test]
fn a_column_the_table_has_not_is_refused() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let img = small_gpt(dir.path());
    let t = filled(dir.path());
    refused(
        &["probe", &t, "-o", "nonsense"],
        "\"nonsense\" is not a column of probe; probe --list-columns names them",
    );
    refused(
        &["plan", &img, "-o", "kernel_offset"],
        "\"kernel_offset\" is not a column of plan;",
    );
    refused(
        &["probe", &t, "--format", "json", "-r"],
        "--format json has none",
    );
    refused(
        &["plan", &img, "--format", "html", "-n"],
        "--format html has none",
    );
    let (check, _) = run(&["check", &img, "--json"]);
    let saved = dir.path().join("check.json");
    std::fs::write(&saved, check).unwrap();
    let s = saved.to_str().unwrap();
    let csv = dir.path().join("changes.csv");
    refused(
        &[
            "compare",
            s,
            s,
            "-o",
            "ratio",
            "--csv",
            csv.to_str().unwrap(),
        ],
        "\"ratio\" is not a column of compare of two check or watch runs",
    );
    assert!(!csv.exists());
    // The columns it has: the CSV of them, without a header.
    let (out, code) = run(&["compare", s, s, "--format", "csv", "-n", "-o", "code"]);
    assert_eq!((out.as_str(), code), ("", 0));
}

/// `report -o FILE` was the page's file; -o picks columns everywhere
/// else, so the old spelling is refused with the new one named, and
/// nothing is written.
#[test]
fn report_o_names_output() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_gpt(dir.path());
    let (check, _) = run(&["check", &img, "--json"]);
    let saved = dir.path().join("check.json");
    std::fs::write(&saved, check).unwrap();
    let page = dir.path().join("page.html");
    refused(
        &[
            "report",
            saved.to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
        ],
        "is now report --output",
    );
    assert!(!page.exists());
}

/// A disk image or a gzip given to report or compare: named, with what
/// was expected, not "stream did not contain valid UTF-8".
#[test]
fn a_binary_file_is_not_a_saved_run() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("run.json.gz");
    std::fs::write(&bin, b"\x1f\x8b\x08\x00\xff\xfe binary").unwrap();
    let b = bin.display().to_string();
    let img = small_gpt(dir.path());
    let (check, _) = run(&["check", &img, "--json"]);
    let saved = dir.path().join("check.json");
    std::fs::write(&saved, check).unwrap();
    let s = saved.display().to_string();
    for args in [
        vec!["report", b.as_str()],
        vec!["compare", s.as_str(), b.as_str()],
    ] {
        refused(
            &args,
            &format!("{b}: not JSON: byte 1 is not UTF-8 text; expected a saved run"),
        );
        let (_, err, _) = run_full(&args);
        assert!(!err.contains("stream did not contain"), "{err}");
    }
}

/// A text file that is not JSON given to report or compare: named, with
/// where the JSON broke and what was expected instead, on one line.
#[test]
fn a_text_file_is_not_a_saved_run() {
    let dir = tempfile::tempdir().unwrap();
    let txt = dir.path().join("t.txt");
    std::fs::write(&txt, "model: ST4000\nserial: Z1\n").unwrap();
    let t = txt.display().to_string();
    let img = small_gpt(dir.path());
    let (check, _) = run(&["check", &img, "--json"]);
    let saved = dir.path().join("check.json");
    std::fs::write(&saved, check).unwrap();
    let s = saved.display().to_string();
    for args in [
        vec!["report", t.as_str()],
        vec!["compare", s.as_str(), t.as_str()],
    ] {
        refused(
            &args,
            &format!(
                "{t}: not JSON (expected value at line 1 column 1); expected a saved run (the output of diskalign check, topology, probe, compare or watch with --json, or of fio --output-format=json)"
            ),
        );
        let (out, _, _) = run_full(&args);
        assert!(out.is_empty(), "{out}");
    }
}

/// `watch`: a target that is no block device, options no run could use,
/// and (until the kernel's tracer is in) no tracer: each one line, exit 2.
#[test]
fn watch_refuses_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let f = file.display().to_string();
    refused(&["watch", &f], "not a block device or a directory");
    refused(&["watch", "/nonexistent/sdz"], "/nonexistent/sdz");
    refused(&["watch", "/dev/shm"], "cannot be watched");
    refused(&["watch", "--for", "0"], "--for 0");
    refused(&["watch", "--for", "soon"], "is not a duration");
    refused(&["watch", "--interval", "0s"], "--interval 0");
    refused(&["watch", "--unit", "1000"], "multiple of 512");
    refused(&["watch", "--unit", "lots"], "is not a size");
    refused(
        &["watch", "--prometheus", "/nonexistent/dir/x.prom"],
        "cannot write there",
    );
    let fixture = format!(
        "{}/tests/fixtures/sysfs/ao-3584",
        env!("CARGO_MANIFEST_DIR")
    );
    refused(
        &["--sysfs-root", &fixture, "watch", "sdb"],
        "a --sysfs-root tree cannot be watched",
    );
    refused(
        &["--sysfs-root", &fixture, "watch", "sdb", "--replay", &f],
        "not a recording of snapshots",
    );
}

/// `watch -- COMMAND`: a command that fails has its status reported and
/// the summary printed (watch's own status is its findings'); one that
/// cannot run is one line and exit 2. A synthetic recording
/// (tests/fixtures/watch, made up) stands in for the kernel's tracer.
#[test]
fn watch_reports_a_failing_command_and_refuses_one_that_cannot_run() {
    let root = format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let tree = format!("{root}/sysfs/ao-3584");
    let rec = format!("{root}/watch/ao-3584.json");
    let base = ["--sysfs-root", &tree, "watch", "sdb2", "--replay", &rec];
    let (out, err, code) =
        run_full(&[&base[..], &["--format", "json", "--", "sh", "-c", "exit 3"]].concat());
    assert_eq!((code, err.as_str()), (1, ""), "{out}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["command"]["exit_status"], 3, "{doc:#}");
    assert_eq!(doc["command"]["argv"][0], "sh", "{doc:#}");
    refused(
        &[&base[..], &["--", "/nonexistent/command"]].concat(),
        "cannot run /nonexistent/command",
    );
}

/// A qcow2 file made by qemu-img, patched at `at` with `bytes`.
fn patched_qcow2(dir: &std::path::Path, name: &str, at: u64, bytes: &[u8]) -> String {
    use std::os::unix::fs::FileExt;
    let p = dir.join(name);
    sh(
        "qemu-img",
        &["create", "-q", "-f", "qcow2", p.to_str().unwrap(), "64M"],
    );
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.write_all_at(bytes, at).unwrap();
    p.display().to_string()
}

/// Hostile image containers: one line naming the field and the byte,
/// exit 2, within a second; nothing allocated by the count they lie with.
#[test]
fn hostile_containers_are_one_line_refusals_within_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // qcow2's header: l1_size (u32) at byte 36, l1_table_offset (u64) at 40.
    let huge_l1 = patched_qcow2(d, "huge-l1.qcow2", 36, &(1u32 << 31).to_be_bytes());
    let far_l1 = patched_qcow2(d, "far-l1.qcow2", 40, &(1u64 << 40).to_be_bytes());
    let cut = patched_qcow2(d, "cut.qcow2", 0, b"QFI\xfb");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&cut)
        .unwrap()
        .set_len(50)
        .unwrap();
    let base = d.join("base.raw");
    std::fs::write(&base, vec![0u8; 1 << 20]).unwrap();
    let orphan = d.join("orphan.qcow2");
    sh(
        "qemu-img",
        &[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            "base.raw",
            "-F",
            "raw",
            orphan.to_str().unwrap(),
        ],
    );
    std::fs::remove_file(&base).unwrap();
    // a.qcow2 over b.qcow2 over a.qcow2.
    let (a, b) = (d.join("a.qcow2"), d.join("b.qcow2"));
    sh(
        "qemu-img",
        &["create", "-q", "-f", "qcow2", b.to_str().unwrap(), "1M"],
    );
    sh(
        "qemu-img",
        &[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-b",
            "b.qcow2",
            "-F",
            "qcow2",
            a.to_str().unwrap(),
        ],
    );
    sh(
        "qemu-img",
        &[
            "rebase",
            "-u",
            "-f",
            "qcow2",
            "-b",
            "a.qcow2",
            "-F",
            "qcow2",
            b.to_str().unwrap(),
        ],
    );
    let orphan = orphan.display().to_string();
    let a = a.display().to_string();
    for (path, says) in [
        (&huge_l1, "qcow2 header at byte 36: l1_size"),
        (&far_l1, "qcow2 header at byte 40"),
        (&cut, "qcow2 header at byte 0"),
        (&orphan, "base.raw"),
        (&a, "backing chain loops"),
    ] {
        let t = std::time::Instant::now();
        refused(&["check", path.as_str()], says);
        assert!(t.elapsed().as_secs_f64() < 1.0, "{path}: {:?}", t.elapsed());
        let (_, err, _) = run_full(&["check", path.as_str()]);
        assert!(err.contains(path.as_str()), "{path}: names the file: {err}");
    }
}

/// `plan --script` never writes into a container as if it were raw: one
/// line says how to convert first, and no script is written; `probe
/// --write --destructive` leaves a container file alone without --force.
#[test]
fn containers_are_never_written_as_raw() {
    let dir = tempfile::tempdir().unwrap();
    let raw = image(dir.path(), "dos.img", 64 * MIB);
    sfdisk(&raw, "label: dos\n63,40000,83\n");
    let q = dir.path().join("dos.qcow2");
    qemu_img_convert(&raw, &q, "qcow2", &[]);
    let before = std::fs::read(&q).unwrap();
    let script = dir.path().join("fix.sh");
    let (out, err, code) = run_full(&[
        "plan",
        q.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(code & 2, 2, "{out}{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("is a qcow2 image") && err.contains("qemu-img"),
        "{err}"
    );
    assert!(!script.exists());
    assert!(out.contains("qemu-img convert -p -f qcow2 -O raw"), "{out}");
    refused(
        &["probe", q.to_str().unwrap(), "--write", "--destructive"],
        "it is a qcow2 disk image",
    );
    assert!(std::fs::read(&q).unwrap() == before, "the image changed");
}

/// A misspelt command, option or value gets clap's "did you mean" on
/// the one line, as clap's own tip would say it.
#[test]
fn a_misspelling_gets_what_clap_would_suggest() {
    refused(
        &["chek"],
        "unrecognized subcommand 'chek'; did you mean 'check'?",
    );
    refused(&["topolgy"], "did you mean 'topology'?");
    refused(&["check", "--jsno"], "did you mean '--json'?");
    refused(&["check", "--fail-on", "warnig"], "did you mean 'warning'?");
    // Nothing similar: no suggestion made up.
    let (_, err, code) = run_full(&["xyz"]);
    assert_eq!(code, 2);
    assert!(!err.contains("did you mean"), "{err}");
}
