//! Opening device nodes and image files read-only: a [`FileSource`] with
//! its size (BLKGETSIZE64 for a device), and a partition node's block size.

use super::ioctl;
use crate::bytes::ReadAt;
use rustix::io::Errno;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A file or block device with its size.
pub struct FileSource {
    pub file: File,
    pub size: u64,
}

impl ReadAt for FileSource {
    fn len(&self) -> u64 {
        self.size
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        FileExt::read_exact_at(&self.file, buf, offset)
    }
}

/// Why a disk or image could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot open {} read-only: {source}", path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error("{}: {source}", path.display())]
    Metadata { path: PathBuf, source: io::Error },
    #[error("BLKGETSIZE64 on {}: {source}", path.display())]
    Size { path: PathBuf, source: io::Error },
}

impl OpenError {
    /// The reason in a word: the errno's name (`EPERM`, `EACCES`,
    /// `ENOENT`) where it has a common one, else the error's text.
    pub fn reason(&self) -> String {
        let (Self::Open { source, .. } | Self::Metadata { source, .. } | Self::Size { source, .. }) =
            self;
        let name = match source.raw_os_error().map(Errno::from_raw_os_error) {
            Some(Errno::PERM) => "EPERM",
            Some(Errno::ACCESS) => "EACCES",
            Some(Errno::NOENT) => "ENOENT",
            Some(Errno::NXIO) => "ENXIO",
            Some(Errno::NOMEDIUM) => "ENOMEDIUM",
            Some(Errno::IO) => "EIO",
            _ => return source.to_string(),
        };
        name.to_string()
    }
}

/// Open a disk or image read-only with its size.
pub fn open(path: &Path) -> Result<FileSource, OpenError> {
    let at = || path.to_path_buf();
    let file = File::open(path).map_err(|source| OpenError::Open { path: at(), source })?;
    let meta = file
        .metadata()
        .map_err(|source| OpenError::Metadata { path: at(), source })?;
    let size = if meta.file_type().is_block_device() {
        ioctl::size_bytes(&file).map_err(|source| OpenError::Size { path: at(), source })?
    } else {
        meta.len()
    };
    Ok(FileSource { file, size })
}

/// What a regular file takes on its filesystem (st_blocks × 512), as
/// `qemu-img info` gives an image's disk size.
pub fn allocated_bytes(path: &Path) -> Option<u64> {
    let meta = std::fs::metadata(path).ok()?;
    meta.is_file().then(|| meta.blocks() * 512)
}

/// BLKBSZGET of a partition node, when it can be opened.
pub fn node_block_size(node: &Path) -> Option<u32> {
    let fd = ioctl::open_read_only(node).ok()?;
    ioctl::device_block_size(&fd).ok()
}

/// A device number (`st_dev`, `st_rdev`) as (major, minor).
pub fn major_minor(dev: u64) -> (u32, u32) {
    (rustix::fs::major(dev), rustix::fs::minor(dev))
}

/// The device number of a block device node.
pub fn rdev_of(path: &str) -> Option<(u32, u32)> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.file_type().is_block_device() {
        return None;
    }
    Some(major_minor(meta.rdev()))
}
