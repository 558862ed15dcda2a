//! Every output file (`--prometheus`, `--json=FILE`, `--csv`, `--html`,
//! `--script`, `report --output`, `report --figures`' SVGs) is written so that a reader
//! (node_exporter's textfile collector, scraping at any moment) sees the
//! old file or the new one, never half of one. The text comes from the
//! exporters in `report`; the bytes go out here in `cli`, like the report
//! on stdout.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Replace `path` with `text`: write a temporary file in the same directory
/// (same filesystem, so the rename is atomic), flush it to disk, rename it
/// over `path`, then flush the directory. The temporary name starts with a
/// dot and does not end in `.prom`, so the collector never reads it. The
/// file is made readable by everyone (0644, whatever the umask), because
/// node_exporter runs as another user; it holds no secret.
pub fn write_atomic(path: &Path, text: &str) -> io::Result<()> {
    let (dir, tmp) = temporary(path)?;
    let mut file = create_new(&tmp)?;
    let written = (|| {
        file.set_permissions(fs::Permissions::from_mode(0o644))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    // The rename is durable once the directory is; a directory that cannot
    // be opened or flushed still holds the new file.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Whether `path` can be written by [`write_atomic`], asked before a run
/// so a bad destination is refused before any work: the name must be a
/// regular file or free (never a directory, a device node or a pipe,
/// which the rename would replace), and the temporary file must be
/// possible in its directory (it is made and removed at once).
pub fn check_writable(path: &Path) -> io::Result<()> {
    if let Ok(m) = fs::metadata(path) {
        if !m.is_file() {
            let what = if m.is_dir() {
                "a directory"
            } else {
                "not a regular file"
            };
            return Err(io::Error::new(io::ErrorKind::InvalidInput, what));
        }
    }
    let (_, tmp) = temporary(path)?;
    drop(create_new(&tmp)?);
    fs::remove_file(&tmp)
}

/// The bytes of an existing destination looked at for binary data: every
/// output of ours is text, and no text holds a NUL byte.
const HEAD_BYTES: u64 = 64 << 10;

/// What an existing destination is or holds that no output of ours could
/// have written, so replacing it could lose data (`check --csv b1.img
/// b2.img`, where two targets were meant, would replace the image with
/// CSV): a block device, a NUL byte in its first 64 KiB, or a signature
/// the scan knows (a disk image, a partition table, a filesystem). None
/// when it is free, a file of text, or cannot be read.
pub fn not_ours(path: &Path) -> Option<String> {
    use crate::bytes::ReadAt;
    use std::os::unix::fs::FileTypeExt;
    let meta = fs::metadata(path).ok()?;
    if meta.file_type().is_block_device() {
        return Some("is a block device".into());
    }
    if !meta.is_file() {
        return None;
    }
    let src = crate::sys::open_source(path).ok()?;
    let head = crate::bytes::read_bytes(&src, "output file", 0, src.len().min(HEAD_BYTES)).ok()?;
    if let Some(s) = crate::stack::scan_signatures(&src).first() {
        let what = s.what;
        let a = crate::stack::article(what);
        return Some(format!("exists and holds {a} {what}"));
    }
    head.contains(&0)
        .then(|| "exists and holds binary data (a disk image?)".to_string())
}

/// The directory of `path` and the temporary name beside it. The name
/// starts with a dot and does not end in `.prom`.
fn temporary(path: &Path) -> io::Result<(PathBuf, PathBuf)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp.{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    Ok((dir, tmp))
}

/// A new file at `tmp`, never one that is there already (nor a symlink's
/// target). A leftover of a run that was killed with the same process id
/// is removed first.
fn create_new(tmp: &Path) -> io::Result<File> {
    let open = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(tmp)
    };
    match open() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(tmp)?;
            open()
        }
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_the_file_and_leaves_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("diskalign.prom");
        write_atomic(&p, "a 1\n").unwrap();
        write_atomic(&p, "a 2\n").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "a 2\n");
        assert_eq!(names(dir.path()), ["diskalign.prom"]);
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }

    #[test]
    fn a_leftover_temporary_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.prom");
        let tmp = dir
            .path()
            .join(format!(".x.prom.tmp.{}", std::process::id()));
        fs::write(&tmp, "stale").unwrap();
        write_atomic(&p, "new\n").unwrap();
        assert_eq!(names(dir.path()), ["x.prom"]);
    }

    #[test]
    fn a_failed_rename_removes_the_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // A non-empty directory cannot be renamed over.
        let p = dir.path().join("busy.prom");
        fs::create_dir(&p).unwrap();
        fs::write(p.join("inside"), "").unwrap();
        assert!(write_atomic(&p, "x\n").is_err());
        assert_eq!(names(dir.path()), ["busy.prom"]);
    }

    #[test]
    fn only_text_or_nothing_may_be_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.csv");
        assert_eq!(not_ours(&p), None);
        fs::write(&p, "target,number\nx.img,1\n").unwrap();
        assert_eq!(not_ours(&p), None);
        fs::write(&p, "").unwrap();
        assert_eq!(not_ours(&p), None);
        let mut b = b"text".to_vec();
        b.extend([0u8; 600]);
        fs::write(&p, &b).unwrap();
        assert_eq!(
            not_ours(&p).as_deref(),
            Some("exists and holds binary data (a disk image?)")
        );
        assert_eq!(
            not_ours(dir.path()),
            None,
            "a directory is refused elsewhere"
        );
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let e = write_atomic(&dir.path().join("no/such.prom"), "x\n").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
