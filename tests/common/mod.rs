//! Helpers shared by the integration tests: running the binary, requiring
//! root and tools (missing ones fail loudly, never skip), building images
//! with the real tools, and loop devices that are always detached.
#![allow(dead_code)]

pub mod browser;
pub mod lvm;
pub mod md;
pub mod zfs;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_diskalign")
}

/// A short probe grid: enough to exercise everything, fast enough for CI.
pub const QUICK_PROBE: &[&str] = &[
    "--preset",
    "quick",
    "--runtime",
    "20ms",
    "--warmup",
    "5ms",
    "--rounds",
    "3",
];

/// Run diskalign; returns (stdout, exit code).
pub fn run(args: &[&str]) -> (String, i32) {
    // COLUMNS would wrap the human report: the tests read it unwrapped.
    let out = Command::new(bin())
        .args(args)
        .env_remove("COLUMNS")
        .output()
        .expect("run diskalign");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// Run diskalign with `--json` appended and parse the document.
pub fn run_json(args: &[&str]) -> (Value, i32) {
    let mut a = args.to_vec();
    a.push("--json");
    let (out, code) = run(&a);
    let v =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("bad JSON from {a:?}: {e}\n{out}"));
    (v, code)
}

/// The tests need these; a missing one is a failure with instructions, not a skip.
pub fn require_tool(name: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false)
        || Path::new("/usr/sbin").join(name).is_file()
        || Path::new("/sbin").join(name).is_file();
    assert!(
        found,
        "required tool `{name}` is missing: run ./tools/test, which installs it"
    );
}

pub fn require_root() {
    assert!(
        {
            use std::os::unix::fs::MetadataExt;
            // /proc/self belongs to the effective user of this process.
            std::fs::metadata("/proc/self")
                .map(|m| m.uid() == 0)
                .unwrap_or(false)
        },
        "these tests attach loop devices and need root: run ./tools/test as root"
    );
}

/// `qemu-img` making a LUKS-encrypted image, and insist it succeeds. Its
/// PBKDF benchmark refuses when the thread's CPU time it measured did not
/// advance ("Unable to get accurate CPU usage", qemu's crypto/pbkdf.c;
/// fixed upstream in 9.2.1, "crypto: fix bogus error benchmarking pbkdf
/// on fast machines", not in Debian 12's 7.2): that one error is tried
/// again, at most three times in all; any other fails at once.
pub fn qemu_img_luks(args: &[&str]) -> Output {
    require_tool("qemu-img");
    for attempt in 1..=3 {
        let out = Command::new("qemu-img")
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("qemu-img: {e}"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            return out;
        }
        let bogus = stderr.contains("Unable to get accurate CPU usage");
        assert!(
            bogus && attempt < 3,
            "qemu-img {args:?} failed (attempt {attempt}): {stderr}"
        );
    }
    unreachable!("the third attempt returns or fails above")
}

/// Run a shell tool and insist it succeeds.
pub fn sh(cmd: &str, args: &[&str]) -> Output {
    require_tool(cmd);
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// Run a shell tool, return (exit code, stdout + stderr).
pub fn sh_status(cmd: &str, args: &[&str]) -> (i32, String) {
    require_tool(cmd);
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// A sparse image file of `bytes` in `dir`.
pub fn image(dir: &Path, name: &str, bytes: u64) -> PathBuf {
    let p = dir.join(name);
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(bytes).unwrap();
    p
}

/// A file of `bytes` bytes of `fill`, written and flushed to its device,
/// as a probe takes it: no hole, no unwritten extent, no delayed
/// allocation (reads of those never reach the device, and probe refuses
/// them).
pub fn filled_file(path: &Path, bytes: usize, fill: u8) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&vec![fill; bytes]).unwrap();
    f.sync_all().unwrap();
}

/// sfdisk with a script on stdin.
pub fn sfdisk(target: &Path, script: &str) {
    require_tool("sfdisk");
    use std::io::Write;
    let mut child = Command::new("sfdisk")
        .args(["--no-reread", "--no-tell-kernel", "-q"])
        .arg(target)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "sfdisk failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A loop device over a file, with partition nodes from `partx -a`.
/// Dropping it removes the partitions and detaches it, also after a panic.
pub struct LoopDev {
    pub dev: String,
}

impl LoopDev {
    pub fn attach(file: &Path, sector_size: Option<u32>) -> LoopDev {
        require_root();
        let mut args = vec!["-f".to_string(), "--show".to_string()];
        if let Some(s) = sector_size {
            args.push("-b".into());
            args.push(s.to_string());
        }
        args.push(file.display().to_string());
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = sh("losetup", &a);
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let l = LoopDev { dev };
        // partx fails on a device without a table; that is fine here.
        let _ = sh_status("partx", &["-a", &l.dev]);
        l
    }

    pub fn part(&self, n: u32) -> String {
        format!("{}p{n}", self.dev)
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("partx").args(["-d", &self.dev]).output();
        let _ = Command::new("losetup").args(["-d", &self.dev]).output();
    }
}

/// An LVM command without udev or device-mapper that sees only devices
/// whose path starts with `filter_prefix`; returns its stdout.
pub fn lvm(cmd: &str, filter_prefix: &str, args: &[&str]) -> String {
    let config = format!(
        "devices{{obtain_device_list_from_udev=0 scan=[\"/dev\"] filter=[\"a|^{filter_prefix}|\",\"r|.*|\"]}} activation{{udev_sync=0 udev_rules=0}}"
    );
    let mut a = vec!["--config", &config];
    a.extend_from_slice(args);
    let out = sh(cmd, &a);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The findings codes of a JSON partition or target object.
pub fn codes(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| f["code"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Partition `n` of the first target.
pub fn partition(doc: &Value, n: u64) -> &Value {
    doc["targets"][0]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["number"] == n)
        .unwrap_or_else(|| panic!("no partition {n} in {doc:#}"))
}

/// A JSON document with its run's start time taken out: two runs of the
/// same command differ only there. Every `"started_at": "..."` becomes
/// `"started_at": "<start>"`.
pub fn without_start(text: &str) -> String {
    const KEY: &str = "\"started_at\": \"";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(KEY) {
        let value = i + KEY.len();
        out.push_str(&rest[..value]);
        out.push_str("<start>");
        let end = rest[value..].find('"').map_or(rest.len(), |e| value + e);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Run diskalign; returns (stdout, stderr, exit code).
pub fn run_full(args: &[&str]) -> (String, String, i32) {
    output_of(Command::new(bin()).args(args).env_remove("COLUMNS"))
}

/// Run a prepared command; returns (stdout, stderr, exit code).
pub fn output_of(cmd: &mut Command) -> (String, String, i32) {
    let out = cmd.output().expect("run diskalign");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// A mount that is undone on drop, also after a panic.
pub struct Mounted {
    pub dir: tempfile::TempDir,
}

impl Mounted {
    /// Mounted as `fstype` (`-t`): a FUSE driver (`ntfs-3g`,
    /// `exfat-fuse`) where the kernel has none. On a block device they
    /// mount as fuseblk, whose unmount waits for the driver's last write.
    pub fn typed(dev: &str, fstype: &str) -> Mounted {
        let dir = tempfile::tempdir().unwrap();
        sh(
            "mount",
            &["-t", fstype, dev, &dir.path().display().to_string()],
        );
        Mounted { dir }
    }

    pub fn new(dev: &str) -> Mounted {
        let dir = tempfile::tempdir().unwrap();
        sh("mount", &[dev, &dir.path().display().to_string()]);
        Mounted { dir }
    }

    /// Mounted read-only: the kernel writes nothing to it afterwards (a
    /// read-write ext4 commits its journal a few seconds after mounting).
    pub fn read_only(dev: &str) -> Mounted {
        let dir = tempfile::tempdir().unwrap();
        sh(
            "mount",
            &["-o", "ro", dev, &dir.path().display().to_string()],
        );
        Mounted { dir }
    }
}

impl Drop for Mounted {
    /// Unmounted, also when it is busy a moment longer than the test (a
    /// process that just closed a file on it): umount is tried for 5 s,
    /// then lazily, so the loop device under it (autoclear once its
    /// detach was asked) goes once nothing holds it. A failed umount left
    /// the filesystem mounted and its loop device attached here twice.
    fn drop(&mut self) {
        let at = self.dir.path().display().to_string();
        for _ in 0..20 {
            if sh_status("umount", &[&at]).0 == 0 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
        let _ = sh_status("umount", &["-l", &at]);
    }
}

/// Active swap on a device, switched off on drop.
pub struct Swap(pub String);

impl Swap {
    pub fn on(dev: &str) -> Swap {
        sh("mkswap", &[dev]);
        sh("swapon", &[dev]);
        Swap(dev.to_string())
    }
}

impl Drop for Swap {
    fn drop(&mut self) {
        let _ = sh_status("swapoff", &[&self.0]);
    }
}

/// `cryptsetup luksFormat` of `target` with a fast PBKDF and a key file
/// written at `key`; `extra` adds options (`--type luks1`).
pub fn luks_format(target: &Path, key: &Path, extra: &[&str]) {
    std::fs::write(key, b"diskalign-test-key").unwrap();
    let (k, t) = (key.display().to_string(), target.display().to_string());
    let mut a = vec![
        "luksFormat",
        "-q",
        "--pbkdf",
        "pbkdf2",
        "--pbkdf-force-iterations",
        "1000",
        "--key-file",
        &k,
    ];
    a.extend_from_slice(extra);
    a.push(&t);
    sh("cryptsetup", &a);
}

/// SHA-256 of the first `bytes` of a device or file: what a partition
/// held before a plan made it larger.
pub fn checksum_head(path: &str, bytes: u64) -> String {
    let out = sh(
        "sh",
        &[
            "-c",
            &format!("head -c {bytes} \"$1\" | sha256sum",),
            "sh",
            path,
        ],
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// SHA-256 of a whole device or file.
pub fn checksum(path: &str) -> String {
    let out = sh("sha256sum", &[path]);
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// `qemu-img convert -O FORMAT [OPTIONS] SRC DST` (Debian's qemu-utils);
/// returns DST.
pub fn qemu_img_convert(src: &Path, dst: &Path, format: &str, options: &[&str]) -> PathBuf {
    let mut args = vec!["convert", "-O", format];
    args.extend_from_slice(options);
    args.push(src.to_str().unwrap());
    args.push(dst.to_str().unwrap());
    sh("qemu-img", &args);
    dst.to_path_buf()
}

/// `mkfs.ext4 -q -F -b BLOCK [-E EXTENDED] TARGET [SIZE]`: an ext4 made by
/// the real tool, `extended` its -E options (`offset=N,stride=4`) or empty.
pub fn mkfs_ext4(target: &Path, block: u32, extended: &str, size: Option<&str>) {
    let block = block.to_string();
    let mut a = vec!["-q", "-F", "-b", &block];
    if !extended.is_empty() {
        a.extend(["-E", extended]);
    }
    a.push(target.to_str().unwrap());
    a.extend(size);
    sh("mkfs.ext4", &a);
}

/// Every finding object of a check document: its targets' (their own,
/// their partitions', their layers') and the assembled layers'.
pub fn every_finding(doc: &Value) -> Vec<&Value> {
    fn visit<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::Array(fs)) = m.get("findings") {
                    out.extend(fs.iter());
                }
                m.iter()
                    .filter(|(k, _)| k.as_str() != "findings")
                    .for_each(|(_, x)| visit(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| visit(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    visit(&doc["targets"], &mut out);
    visit(&doc["assembled"], &mut out);
    out
}

/// Make `cmd` run with io_uring_setup(2) failing with ENOSYS, as under a
/// container's seccomp profile.
pub fn without_io_uring(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe prctl calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            const NR_IO_URING_SETUP: u32 = 425; // x86_64 and aarch64 alike
            let filter = [
                // A = seccomp_data.nr
                libc::sock_filter {
                    code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
                    jt: 0,
                    jf: 0,
                    k: 0,
                },
                libc::sock_filter {
                    code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
                    jt: 0,
                    jf: 1,
                    k: NR_IO_URING_SETUP,
                },
                libc::sock_filter {
                    code: (libc::BPF_RET | libc::BPF_K) as u16,
                    jt: 0,
                    jf: 0,
                    k: libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
                },
                libc::sock_filter {
                    code: (libc::BPF_RET | libc::BPF_K) as u16,
                    jt: 0,
                    jf: 0,
                    k: libc::SECCOMP_RET_ALLOW,
                },
            ];
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut _,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
