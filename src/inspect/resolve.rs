//! Turning a command-line target into something to read: a live whole disk,
//! a partition of one, or an image file.

use crate::topology::{Disk, Sysfs};
use std::fs;
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
