//! Turning a command-line target into something to read: a live whole disk,
//! a partition of one, or an image file.

use crate::layout::source::FileSource;
use crate::topology::{ioctl, Disk, Sysfs};
use std::fs::{self, File};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

pub enum Resolved {
    /// A block device: its whole disk, and the partition asked for if any.
    Live {
        disk: Box<Disk>,
        only: Option<u32>,
        node: PathBuf,
    },
    Image,
}

/// Work out what `path` is.
pub fn resolve(path: &Path, sysfs: &Sysfs) -> Result<Resolved, String> {
    let meta = fs::metadata(path).map_err(|e| format!("cannot open: {e}"))?;
    let ft = meta.file_type();
    if ft.is_file() {
        return Ok(Resolved::Image);
    }
    if !ft.is_block_device() {
        return Err("not a block device or a regular file".into());
    }
    let (name, only) = sysfs.resolve_node(&meta)?;
    let disk = sysfs
        .disk(&name)
        .map_err(|e| format!("reading sysfs for {name}: {e}"))?;
    let node = if only.is_some() {
        disk.device.clone()
    } else {
        path.to_path_buf()
    };
    Ok(Resolved::Live {
        disk: Box::new(disk),
        only,
        node,
    })
}

/// Open a disk or image read-only with its size.
pub fn open(path: &Path) -> Result<FileSource, String> {
    let file =
        File::open(path).map_err(|e| format!("cannot open {} read-only: {e}", path.display()))?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    let size = if meta.file_type().is_block_device() {
        ioctl::size_bytes(&file).map_err(|e| format!("BLKGETSIZE64 on {}: {e}", path.display()))?
    } else {
        meta.len()
    };
    Ok(FileSource { file, size })
}

/// BLKBSZGET of a partition node, when it can be opened.
pub fn node_block_size(node: &Path) -> Option<u32> {
    let fd = ioctl::open_read_only(node).ok()?;
    ioctl::device_block_size(&fd).ok()
}
