//! Opening device nodes and image files read-only: a [`FileSource`] with
//! its size (BLKGETSIZE64 for a device), and a partition node's block size.
//!
//! A block device is read with O_DIRECT, past the page cache. Its cache
//! does not see what was written through another node of the same bytes:
//! tune2fs on /dev/md0 or /dev/sda1 writes through their caches, and the
//! pages of /dev/sdb (an md member) or /dev/sda that an earlier read
//! cached stay as they were, so a buffered read of them would judge the
//! old superblock. lvm2 reads its labels with O_DIRECT for the same
//! reason (lib/device/bcache.c, `io_engine` over O_DIRECT file descriptors
//! opened by lib/label/label.c). Reads are bounced through a buffer
//! aligned to the logical block; a device that refuses O_DIRECT is read
//! through its cache.

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
    /// A block device opened with O_DIRECT: its logical block size, which
    /// every read's offset, length and buffer are aligned to.
    direct: Option<u64>,
}

impl ReadAt for FileSource {
    fn len(&self) -> u64 {
        self.size
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        match self.direct {
            Some(block) => direct_read(&self.file, block, buf, offset),
            None => FileExt::read_exact_at(&self.file, buf, offset),
        }
    }
}

/// Alignment of the bounce buffer: a page, which every logical block
/// size divides (512 to 4096).
const PAGE: usize = 4096;

/// Read `buf.len()` bytes at `offset` from a file opened with O_DIRECT,
/// through a buffer covering the logical blocks around them.
fn direct_read(file: &File, block: u64, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let end = offset
        .checked_add(buf.len() as u64)
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    let from = offset - offset % block;
    let to = end.div_ceil(block).saturating_mul(block);
    let span =
        usize::try_from(to - from).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut bounce = vec![0u8; span + PAGE];
    let skip = bounce.as_ptr().align_offset(PAGE).min(PAGE);
    let aligned = &mut bounce[skip..skip + span];
    let mut done = 0;
    // The last block may end past the device's end: a short read there
    // is fine once the bytes asked for are in.
    let want = usize::try_from(end - from).unwrap_or(span);
    while done < want {
        match file.read_at(&mut aligned[done..], from + done as u64) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let at = (offset - from) as usize;
    buf.copy_from_slice(&aligned[at..at + buf.len()]);
    Ok(())
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
pub fn open_source(path: &Path) -> Result<FileSource, OpenError> {
    let at = || path.to_path_buf();
    let file = File::open(path).map_err(|source| OpenError::Open { path: at(), source })?;
    let meta = file
        .metadata()
        .map_err(|source| OpenError::Metadata { path: at(), source })?;
    if !meta.file_type().is_block_device() {
        return Ok(FileSource {
            file,
            size: meta.len(),
            direct: None,
        });
    }
    let size = ioctl::size_bytes(&file).map_err(|source| OpenError::Size { path: at(), source })?;
    Ok(match direct(path, &file) {
        Some((file, block)) => FileSource {
            file,
            size,
            direct: Some(block),
        },
        None => FileSource {
            file,
            size,
            direct: None,
        },
    })
}

/// The block device at `path` opened again with O_DIRECT, with its
/// logical block size; None where it refuses (the buffered `file` is
/// read then).
fn direct(path: &Path, file: &File) -> Option<(File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let block = u64::from(ioctl::logical_block_size(file).ok()?);
    if block == 0 || PAGE as u64 % block != 0 {
        return None;
    }
    let direct = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .ok()?;
    // One block read proves the device takes it (some refuse at read).
    direct_read(&direct, block, &mut [0u8; 1], 0).ok()?;
    Some((direct, block))
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
