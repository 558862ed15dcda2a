//! The Debian package, built by tools/package-deb, installed with dpkg -i,
//! checked where it put the binary, the man page and the completions, and
//! removed again: tests/package/run does it all (as root; it fails, never
//! skips, without root, a tool or man-db, and refuses to touch a diskalign
//! package installed already). tools/test builds the package before the
//! tests, so the build here is cached.

use std::path::Path;
use std::process::Command;

#[test]
fn the_deb_installs_the_man_page_and_completions_and_removes_cleanly() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/package/run");
    let out = Command::new(&script)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "tests/package/run failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("installed, checked and removed"),
        "{stdout}"
    );
}
