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

fn small_gpt(dir: &std::path::Path) -> String {
    let img = image(dir, "x.img", 64 * MIB);
    sfdisk(&img, "label: gpt\nstart=2048, size=4096\n");
    img.display().to_string()
}

#[test]
fn a_full_disk_on_stdout_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_gpt(dir.path());
    let fixture = format!(
        "{}/tests/fixtures/sysfs/usb-bridge",
        env!("CARGO_MANIFEST_DIR")
    );
    for args in [
        vec!["check", img.as_str(), "--json"],
        vec!["check", img.as_str()],
        vec!["--sysfs-root", fixture.as_str(), "topology"],
        vec!["probe", img.as_str(), "--emit-fio"],
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
    for args in [
        vec!["check", img.as_str(), "--json"],
        vec!["check", img.as_str()],
        vec!["probe", img.as_str(), "--emit-fio"],
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
