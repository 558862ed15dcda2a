//! The block tracepoints' `id` and `format` files from tracefs. Where
//! tracefs is mounted (a `tracefs` entry in mountinfo, or `tracing/` in a
//! mounted debugfs), they are read there. Where it is not, a helper thread
//! moves into a mount namespace of its own (unshare(CLONE_NEWNS), which
//! also unshares its fs_struct, so the rest of the process keeps the
//! host's view), makes every mount in it private so nothing propagates
//! back, mounts tracefs on /sys/kernel/tracing there, reads the files and
//! exits: the namespace and its mount go with it. The host's tree is
//! never touched.

use super::format::Event;
use crate::sys::procfs;
use std::ffi::CString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// A format file is a few KiB; more is refused.
const MAX_FILE: u64 = 64 * 1024;

/// One event's files.
#[derive(Clone, Debug)]
pub struct EventFiles {
    pub event: Event,
    pub id: u64,
    pub format: String,
}

/// Where events/ lives in a mounted tracefs, if one is mounted.
fn mounted() -> Option<PathBuf> {
    let mounts = procfs::parse_mountinfo(&procfs::mountinfo());
    let tracefs = mounts.iter().find(|m| m.fs_type == "tracefs");
    let debugfs = mounts.iter().find(|m| m.fs_type == "debugfs");
    tracefs
        .map(|m| PathBuf::from(&m.point))
        .or_else(|| debugfs.map(|m| Path::new(&m.point).join("tracing")))
        .filter(|p| p.join("events").is_dir())
}

fn read_small(path: &Path) -> io::Result<String> {
    let mut s = String::new();
    std::fs::File::open(path)?
        .take(MAX_FILE)
        .read_to_string(&mut s)?;
    Ok(s)
}

fn read_all(root: &Path) -> Result<Vec<EventFiles>, String> {
    Event::ALL
        .iter()
        .map(|&event| {
            let dir = root.join("events/block").join(event.name());
            let id_text =
                read_small(&dir.join("id")).map_err(|e| format!("{}/id: {e}", dir.display()))?;
            let id = id_text
                .trim()
                .parse()
                .map_err(|_| format!("{}/id: not a number: {:?}", dir.display(), id_text.trim()))?;
            let format = read_small(&dir.join("format"))
                .map_err(|e| format!("{}/format: {e}", dir.display()))?;
            Ok(EventFiles { event, id, format })
        })
        .collect()
}

/// The files of every event diskalign counts.
pub fn read_events() -> Result<Vec<EventFiles>, String> {
    if let Some(root) = mounted() {
        return read_all(&root);
    }
    std::thread::spawn(read_in_private_namespace)
        .join()
        .map_err(|_| "the tracefs helper thread panicked".to_string())?
}

fn check(r: libc::c_int, what: &str) -> Result<(), String> {
    if r == 0 {
        Ok(())
    } else {
        Err(format!("{what}: {}", io::Error::last_os_error()))
    }
}

/// Runs on its own thread, which it leaves in a new mount namespace.
fn read_in_private_namespace() -> Result<Vec<EventFiles>, String> {
    let target = "/sys/kernel/tracing";
    let c = |s: &str| CString::new(s).expect("a literal without NUL");
    let (root, point, fstype) = (c("/"), c(target), c("tracefs"));
    // SAFETY: plain system calls on this thread with valid C strings.
    unsafe {
        check(
            libc::unshare(libc::CLONE_NEWNS),
            "tracefs is not mounted and a private mount namespace for it was refused",
        )?;
        check(
            libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ),
            "making the private mount namespace private",
        )?;
        check(
            libc::mount(
                fstype.as_ptr(),
                point.as_ptr(),
                fstype.as_ptr(),
                0,
                std::ptr::null(),
            ),
            "mounting tracefs in a private mount namespace",
        )?;
    }
    read_all(Path::new(target))
}
