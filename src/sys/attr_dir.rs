//! A sysfs directory held open while its attributes are read. Opening
//! `/sys/block/sda/queue/logical_block_size` walks every component and
//! follows the `block/sda` link to `devices/...` again each time; a disk's
//! thirty-odd attributes opened from the directory itself (openat(2))
//! walk one or two names each. On 300 loop disks that walk was a tenth
//! of a check's time.

use super::stats::count_sysfs;
use rustix::fs::{AtFlags, Mode, OFlags};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// A directory of a sysfs tree (live or a fixture copy), opened once;
/// `path` names it (and what is read in it) in messages.
pub struct AttrDir {
    path: PathBuf,
    /// None when it cannot be opened: every read in it is then absent.
    fd: Option<OwnedFd>,
}

impl AttrDir {
    /// Open `path` (following a link to it) for reading in it.
    pub fn open(path: PathBuf) -> AttrDir {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rustix::fs::open(&path, flags, Mode::empty()).ok();
        AttrDir { path, fd }
    }

    /// The directory's path as it was named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `rel` in it, for messages.
    pub fn join(&self, rel: &str) -> PathBuf {
        self.path.join(rel)
    }

    /// `rel` opened from the directory with `flags` (and never blocking,
    /// so a FIFO in a fixture tree cannot hang a run).
    fn open_at(&self, rel: &str, flags: OFlags) -> Option<OwnedFd> {
        let fd = self.fd.as_ref()?;
        let flags = flags | OFlags::NONBLOCK | OFlags::CLOEXEC;
        rustix::fs::openat(fd, rel, flags, Mode::empty()).ok()
    }

    /// The raw bytes of attribute `rel`, at most [`ATTR_MAX`] of them.
    pub fn attr(&self, rel: &str) -> Option<Vec<u8>> {
        count_sysfs();
        read_open(&File::from(self.open_at(rel, OFlags::RDONLY)?))
    }

    /// Attribute `rel` as trimmed, non-empty text.
    pub fn str(&self, rel: &str) -> Option<String> {
        text(&self.attr(rel)?)
    }

    /// Attribute `rel` as a number; absent when it is missing or not one.
    pub fn num<T: std::str::FromStr>(&self, rel: &str) -> Option<T> {
        self.str(rel)?.parse().ok()
    }

    /// A numeric attribute that may be absent; present but not a number
    /// of this type (text, negative, too large) is an error naming it.
    pub fn opt_num<T: std::str::FromStr>(&self, rel: &str) -> io::Result<Option<T>> {
        let Some(s) = self.str(rel) else {
            return Ok(None);
        };
        let s: String = s.chars().take(40).collect();
        s.parse().map(Some).map_err(|_| {
            let msg = format!(
                "{}: '{s}' is not a number in range",
                self.join(rel).display()
            );
            io::Error::new(io::ErrorKind::InvalidData, msg)
        })
    }

    /// A numeric attribute every kernel since 2.6.32 publishes: missing
    /// is an error naming it.
    pub fn need_num<T: std::str::FromStr>(&self, rel: &str) -> io::Result<T> {
        self.opt_num(rel)?.ok_or_else(|| {
            let msg = format!("cannot read {}", self.join(rel).display());
            io::Error::new(io::ErrorKind::NotFound, msg)
        })
    }

    /// True when `rel` is a directory (a link to one followed).
    pub fn is_dir(&self, rel: &str) -> bool {
        let Some(fd) = &self.fd else {
            return false;
        };
        rustix::fs::statat(fd, rel, AtFlags::empty())
            .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR)
    }

    /// True when `rel` exists (a link followed).
    pub fn exists(&self, rel: &str) -> bool {
        let Some(fd) = &self.fd else {
            return false;
        };
        rustix::fs::statat(fd, rel, AtFlags::empty()).is_ok()
    }

    /// Sorted entry names of directory `rel` ("." for this one), and
    /// whether each is a directory as readdir types it (no stat each);
    /// empty when it cannot be read.
    pub fn entries(&self, rel: &str) -> Vec<(String, bool)> {
        count_sysfs();
        let Some(fd) = self.open_at(rel, OFlags::RDONLY | OFlags::DIRECTORY) else {
            return Vec::new();
        };
        let Ok(dir) = rustix::fs::Dir::new(fd) else {
            return Vec::new();
        };
        let mut out: Vec<(String, bool)> = dir
            .filter_map(|e| e.ok())
            .filter(|e| !matches!(e.file_name().to_bytes(), b"." | b".."))
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                // A filesystem that does not type its entries: ask.
                let is_dir = match e.file_type() {
                    rustix::fs::FileType::Unknown => self.is_dir(&format!("{rel}/{name}")),
                    t => t == rustix::fs::FileType::Directory,
                };
                (name, is_dir)
            })
            .collect();
        out.sort();
        out
    }

    /// Sorted entry names of directory `rel`; empty when it cannot be read.
    pub fn list(&self, rel: &str) -> Vec<String> {
        self.entries(rel).into_iter().map(|(n, _)| n).collect()
    }
}

/// A sysfs attribute is at most one page; reading stops there, so a
/// hostile tree (a link to /dev/zero, a FIFO) can neither fill memory nor
/// block.
const ATTR_MAX: u64 = 4096;

/// An opened attribute's bytes, at most [`ATTR_MAX`] of them.
pub(super) fn read_open(f: &File) -> Option<Vec<u8>> {
    use std::io::Read;
    // One read: sysfs hands the whole attribute to the first (its show()
    // fills one page, fs/sysfs/file.c `sysfs_kf_seq_show`), a regular
    // file of a fixture tree all of its first page, and the bound holds.
    let mut buf = vec![0u8; ATTR_MAX as usize];
    let mut f = f;
    let n = loop {
        match f.read(&mut buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => break r.ok()?,
        }
    };
    buf.truncate(n);
    Some(buf)
}

/// An attribute's bytes as trimmed, non-empty text.
pub(super) fn text(raw: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(raw).ok()?.trim();
    (!s.is_empty()).then(|| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn reads_attributes_and_lists_relative_to_the_directory() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("sda");
        fs::create_dir_all(d.join("queue")).unwrap();
        fs::create_dir_all(d.join("sda1")).unwrap();
        fs::write(d.join("queue/logical_block_size"), "512\n").unwrap();
        fs::write(d.join("size"), "  \n").unwrap();
        fs::write(d.join("bad"), "x7\n").unwrap();
        std::os::unix::fs::symlink(&d, t.path().join("link")).unwrap();
        let a = AttrDir::open(t.path().join("link"));
        assert_eq!(a.num::<u32>("queue/logical_block_size"), Some(512));
        assert_eq!(a.str("size"), None);
        assert_eq!(a.opt_num::<u64>("missing").unwrap(), None);
        let e = a.opt_num::<u64>("bad").unwrap_err().to_string();
        assert!(e.contains("link/bad: 'x7' is not a number"), "{e}");
        let e = a.need_num::<u64>("missing").unwrap_err().to_string();
        assert!(e.ends_with("link/missing"), "{e}");
        assert!(a.is_dir("queue") && !a.is_dir("size") && a.exists("size"));
        let names = a.entries(".");
        assert!(names.contains(&("sda1".into(), true)));
        assert!(names.contains(&("size".into(), false)));
        assert_eq!(a.list("queue"), ["logical_block_size"]);
    }

    #[test]
    fn a_missing_directory_reads_as_empty() {
        let a = AttrDir::open(PathBuf::from("/nonexistent/sys/block/sdz"));
        assert_eq!(a.str("size"), None);
        assert!(a.list(".").is_empty() && !a.exists("size") && !a.is_dir("queue"));
        assert!(a.need_num::<u64>("size").is_err());
    }

    #[test]
    fn a_fifo_does_not_block() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &f,
            rustix::fs::FileType::Fifo,
            Mode::RUSR | Mode::WUSR,
            0,
        )
        .unwrap();
        assert_eq!(
            AttrDir::open(t.path().to_path_buf()).attr("fifo"),
            Some(vec![])
        );
    }
}
