//! The files the probe does its own I/O on: device nodes and files opened
//! for direct I/O (O_DIRECT, O_EXCL for writes to a device), the nameless
//! scratch file and its preallocation, the room a filesystem has, the
//! process's file size limit, and the direct-I/O alignment statx reports.
//! Each function makes one call; its error names the file or device.

use rustix::fs::{AtFlags, FallocateFlags, StatxFlags};
use rustix::io::Errno;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why a file the probe wanted could not be had.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// An exclusive open of a device refused (EBUSY).
    #[error("{} is in use (exclusive open refused: mounted, held or swap)", path.display())]
    Busy { path: PathBuf },
    /// O_DIRECT refused (EINVAL): the filesystem has no direct I/O.
    #[error("cannot open {} with O_DIRECT: its filesystem does not support direct I/O (tmpfs?); use --buffered", path.display())]
    NoDirectIo { path: PathBuf },
    #[error("cannot open {}: {source}", path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot unlink {}: {source}", path.display())]
    Unlink { path: PathBuf, source: io::Error },
    #[error("cannot stat the filesystem of {}: {source}", path.display())]
    Statvfs { path: PathBuf, source: io::Error },
}

/// How a probe's file is opened.
#[derive(Clone, Copy, Debug)]
pub struct Mode {
    pub write: bool,
    /// Through the page cache: no O_DIRECT.
    pub buffered: bool,
}

fn o_direct(buffered: bool) -> i32 {
    if buffered {
        0
    } else {
        rustix::fs::OFlags::DIRECT.bits() as i32
    }
}

/// A block device node, opened exclusively (O_EXCL) when written to, so
/// the kernel refuses it while mounted, held or swap.
pub fn open_device(path: &Path, m: Mode) -> Result<File, FileError> {
    let excl = if m.write {
        rustix::fs::OFlags::EXCL.bits() as i32
    } else {
        0
    };
    OpenOptions::new()
        .read(true)
        .write(m.write)
        .custom_flags(o_direct(m.buffered) | excl)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(Errno::BUSY.raw_os_error()) {
                FileError::Busy { path: path.into() }
            } else {
                FileError::Open {
                    path: path.into(),
                    source: e,
                }
            }
        })
}

/// A regular file that exists.
pub fn open_file(path: &Path, m: Mode) -> Result<File, FileError> {
    OpenOptions::new()
        .read(true)
        .write(m.write)
        .custom_flags(o_direct(m.buffered))
        .open(path)
        .map_err(|e| open_error(path, e, m.buffered))
}

fn open_error(path: &Path, e: io::Error, buffered: bool) -> FileError {
    if e.raw_os_error() == Some(Errno::INVAL.raw_os_error()) && !buffered {
        FileError::NoDirectIo { path: path.into() }
    } else {
        FileError::Open {
            path: path.into(),
            source: e,
        }
    }
}

/// A file in `dir` that no path names: `O_TMPFILE`, or where the filesystem
/// lacks it (EOPNOTSUPP, EISDIR on old kernels), a new file unlinked at once.
/// The kernel frees it when its last descriptor closes.
pub fn nameless(dir: &Path, buffered: bool) -> Result<File, FileError> {
    let tmpfile = OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::TMPFILE.bits() as i32 | o_direct(buffered))
        .open(dir);
    let lacks = [Errno::OPNOTSUPP, Errno::ISDIR].map(|e| Some(e.raw_os_error()));
    match tmpfile {
        Ok(f) => return Ok(f),
        Err(e) if !lacks.contains(&e.raw_os_error()) => return Err(open_error(dir, e, buffered)),
        Err(_) => {}
    }
    let path = dir.join(format!(".diskalign-probe-{}.tmp", std::process::id()));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(o_direct(buffered))
        .open(&path)
        .map_err(|e| open_error(&path, e, buffered))?;
    fs::remove_file(&path).map_err(|source| FileError::Unlink { path, source })?;
    Ok(file)
}

/// What fallocate(2) said about reserving a file's blocks.
#[derive(Debug, PartialEq, Eq)]
pub enum Allocated {
    Yes,
    /// ENOSPC.
    NoSpace,
    /// EFBIG: larger than the filesystem allows for one file.
    TooLarge,
    /// Anything else, such as no fallocate on this filesystem (EOPNOTSUPP).
    Unsupported,
}

/// Reserve the first `size` bytes of `file`.
pub fn allocate(file: &File, size: u64) -> Allocated {
    match rustix::fs::fallocate(file, FallocateFlags::empty(), 0, size) {
        Ok(()) => Allocated::Yes,
        Err(Errno::NOSPC) => Allocated::NoSpace,
        Err(Errno::FBIG) => Allocated::TooLarge,
        Err(_) => Allocated::Unsupported,
    }
}

/// A filesystem's size and what an unprivileged writer may still use.
#[derive(Clone, Copy, Debug)]
pub struct Room {
    pub total: u64,
    pub available: u64,
}

/// The room of the filesystem holding `dir` (statvfs).
pub fn room(dir: &Path) -> Result<Room, FileError> {
    let st = rustix::fs::statvfs(dir).map_err(|e| FileError::Statvfs {
        path: dir.into(),
        source: e.into(),
    })?;
    Ok(Room {
        total: st.f_blocks.saturating_mul(st.f_frsize),
        available: st.f_bavail.saturating_mul(st.f_frsize),
    })
}

/// This process's RLIMIT_FSIZE (`ulimit -f`), None when unlimited: past it
/// a write raises SIGXFSZ.
pub fn size_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Fsize).current
}

/// The O_DIRECT offset alignment from statx (Linux 6.1+), if reported.
pub fn dio_offset_align(file: &File) -> Option<u32> {
    let st = rustix::fs::statx(file, "", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN).ok()?;
    if st.stx_mask & StatxFlags::DIOALIGN.bits() == 0 || st.stx_dio_offset_align == 0 {
        return None;
    }
    Some(st.stx_dio_offset_align)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nameless_file_leaves_no_name() {
        let dir = tempfile::tempdir().unwrap();
        let f = nameless(dir.path(), true).unwrap();
        assert_eq!(allocate(&f, 4096), Allocated::Yes);
        assert_eq!(f.metadata().unwrap().len(), 4096);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn errors_name_the_file() {
        let missing = Path::new("/nonexistent/diskalign");
        let m = Mode {
            write: false,
            buffered: true,
        };
        let e = open_file(missing, m).unwrap_err().to_string();
        assert!(e.starts_with("cannot open /nonexistent/diskalign: "), "{e}");
        let e = room(missing).unwrap_err().to_string();
        assert!(
            e.starts_with("cannot stat the filesystem of /nonexistent/diskalign: "),
            "{e}"
        );
        assert!(matches!(
            open_device(missing, m),
            Err(FileError::Open { .. })
        ));
    }

    /// rustix's flags are the kernel's: O_TMPFILE includes O_DIRECTORY.
    #[test]
    fn the_flags_are_the_kernels() {
        use rustix::fs::OFlags;
        assert_eq!(OFlags::TMPFILE.bits() as i32, libc::O_TMPFILE);
        assert_eq!(OFlags::DIRECT.bits() as i32, libc::O_DIRECT);
        assert_eq!(OFlags::EXCL.bits() as i32, libc::O_EXCL);
    }

    #[test]
    fn the_room_of_a_filesystem() {
        let r = room(Path::new("/")).unwrap();
        assert!(r.total > 0 && r.available <= r.total);
    }
}
