//! Turning a command-line target into something to read: a live whole disk,
//! a partition of one, or an image file.

use crate::topology::{Disk, Sysfs};
use std::fs;
use std::io;
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

/// Why a path is not something `check` can read.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("cannot open: {0}")]
    Stat(io::Error),
    #[error("not a block device or a regular file")]
    NotADevice,
    /// A directory, which only probe takes (it makes a scratch file there).
    #[error("a directory: {}; probe takes a directory", .0.takes())]
    Directory(super::ReadFor),
    /// The node is not in the sysfs tree (sysfs says why).
    #[error("{0}")]
    Node(String),
    #[error("reading sysfs for {name}: {source}")]
    Sysfs { name: String, source: io::Error },
}

/// Work out what `path` is. A fixture tree (`--sysfs-root`) knows its
/// disks by name only: `/dev/NAME` or `NAME` is looked up there, never
/// stat'ed. On the live system a node that is missing (a container
/// shows /sys but not every /dev node) is looked up by name too.
pub fn resolve(
    path: &Path,
    sysfs: &Sysfs,
    command: super::ReadFor,
) -> Result<Resolved, ResolveError> {
    if !sysfs.is_live() {
        if let Some(r) = by_name(path, sysfs)? {
            return Ok(r);
        }
    }
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) => return by_name(path, sysfs)?.ok_or(ResolveError::Stat(e)),
    };
    let ft = meta.file_type();
    if ft.is_file() {
        return Ok(Resolved::Image);
    }
    if ft.is_dir() {
        return Err(ResolveError::Directory(command));
    }
    if !ft.is_block_device() {
        return Err(ResolveError::NotADevice);
    }
    let (name, only) = sysfs.resolve_node(&meta).map_err(ResolveError::Node)?;
    let disk = sysfs
        .disk(&name)
        .map_err(|source| ResolveError::Sysfs { name, source })?;
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

/// `/dev/NAME` or `NAME` as the sysfs tree knows it; None when it does not.
fn by_name(path: &Path, sysfs: &Sysfs) -> Result<Option<Resolved>, ResolveError> {
    let text = path.to_string_lossy();
    let name = text.strip_prefix("/dev/").unwrap_or(&text);
    let Some((name, only)) = sysfs.resolve_name(name) else {
        return Ok(None);
    };
    let disk = sysfs
        .disk(&name)
        .map_err(|source| ResolveError::Sysfs { name, source })?;
    Ok(Some(Resolved::Live {
        node: disk.device.clone(),
        disk: Box::new(disk),
        only,
    }))
}
