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
use std::cell::{Cell, RefCell};
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A file or block device with its size.
pub struct FileSource {
    pub file: File,
    pub size: u64,
    /// A block device opened with O_DIRECT: its logical block size, which
    /// every read's offset, length and buffer are aligned to. Cleared at
    /// the first read the device refuses so (some do, at read time), and
    /// read through its cache from then on.
    direct: Cell<Option<u64>>,
}

impl ReadAt for FileSource {
    fn len(&self) -> u64 {
        self.size
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        super::stats::count_read(buf.len());
        if let Some(block) = self.direct.get() {
            match direct_read(&self.file, block, buf, offset) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => self.drop_direct()?,
                done => return done,
            }
        }
        FileExt::read_exact_at(&self.file, buf, offset)
    }

    /// In one io_uring submission (`batch.rs`); a read it does not answer
    /// whole (refused, short, or no ring) is read again alone.
    fn read_many(&self, reads: &mut [(u64, &mut [u8])]) -> Vec<io::Result<()>> {
        let together = super::batch::read_batch(&self.file, reads);
        let mut out = Vec::with_capacity(reads.len());
        for (i, (at, buf)) in reads.iter_mut().enumerate() {
            // A read the kernel answered reached the device; one that a
            // failed ring never submitted did not.
            let whole = match together.as_ref().and_then(|t| t.get(i)) {
                Some(Ok(n)) => {
                    super::stats::count_read(buf.len());
                    *n == buf.len()
                }
                Some(Err(e)) if e.raw_os_error().is_some() => {
                    super::stats::count_read(buf.len());
                    false
                }
                _ => false,
            };
            out.push(if whole {
                Ok(())
            } else {
                self.read_exact_at(buf, *at)
            });
        }
        out
    }
}

impl FileSource {
    /// Read through the cache from now on: the device refused O_DIRECT.
    fn drop_direct(&self) -> io::Result<()> {
        let flags = rustix::fs::fcntl_getfl(&self.file)?;
        rustix::fs::fcntl_setfl(&self.file, flags - rustix::fs::OFlags::DIRECT)?;
        self.direct.set(None);
        Ok(())
    }
}

/// Alignment of the bounce buffer: a page, which every logical block
/// size divides (512 to 4096).
const PAGE: usize = 4096;

/// The bounce buffer kept between reads, up to this size: allocating
/// and faulting in a new one for each read cost more than the read.
const BOUNCE_KEPT: usize = 2 << 20;

thread_local! {
    static BOUNCE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

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
    if from == offset && span == buf.len() && buf.as_ptr() as usize % PAGE == 0 {
        // Aligned already (the read cache's blocks): no bounce.
        return read_all(file, buf, offset, buf.len());
    }
    BOUNCE.with(|kept| {
        let mut kept = kept.borrow_mut();
        let mut own = Vec::new();
        let bounce = if span + PAGE <= BOUNCE_KEPT {
            if kept.len() < span + PAGE {
                kept.resize(span + PAGE, 0);
            }
            &mut *kept
        } else {
            own.resize(span + PAGE, 0);
            &mut own
        };
        let skip = bounce.as_ptr().align_offset(PAGE).min(PAGE);
        let aligned = &mut bounce[skip..skip + span];
        // The last block may end past the device's end: a short read
        // there is fine once the bytes asked for are in.
        let want = usize::try_from(end - from).unwrap_or(span);
        read_all(file, aligned, from, want)?;
        let at = (offset - from) as usize;
        buf.copy_from_slice(&aligned[at..at + buf.len()]);
        Ok(())
    })
}

/// Read into `buf` from `offset` until at least `want` bytes are in.
fn read_all(file: &File, buf: &mut [u8], offset: u64, want: usize) -> io::Result<()> {
    let mut done = 0;
    while done < want {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
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

/// Open a disk or image read-only with its size: a block device is
/// switched to O_DIRECT on the same descriptor (fcntl F_SETFL, as open(2)
/// allows for O_DIRECT), one open per device.
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
            direct: Cell::new(None),
        });
    }
    let size = ioctl::size_bytes(&file).map_err(|source| OpenError::Size { path: at(), source })?;
    let direct = direct(&file);
    Ok(FileSource {
        file,
        size,
        direct: Cell::new(direct),
    })
}

/// Switch the block device open as `file` to O_DIRECT, and its logical
/// block size; None where it refuses (it is read through its cache then).
fn direct(file: &File) -> Option<u64> {
    let block = u64::from(ioctl::logical_block_size(file).ok()?);
    if block == 0 || PAGE as u64 % block != 0 {
        return None;
    }
    let flags = rustix::fs::fcntl_getfl(file).ok()?;
    rustix::fs::fcntl_setfl(file, flags | rustix::fs::OFlags::DIRECT).ok()?;
    Some(block)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn many_reads_at_once_each_with_its_outcome() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let bytes: Vec<u8> = (0..20_000u32).map(|i| (i % 253) as u8).collect();
        f.write_all(&bytes).unwrap();
        let src = open_source(f.path()).unwrap();
        let (mut a, mut b, mut c) = ([0u8; 4096], [0u8; 100], [0u8; 100]);
        let mut reads: Vec<(u64, &mut [u8])> =
            vec![(4096, &mut a[..]), (7, &mut b[..]), (19_950, &mut c[..])];
        let before = super::super::stats::Cost::here();
        let out = src.read_many(&mut reads);
        assert!(out[0].is_ok() && out[1].is_ok());
        // Short at the end: read again alone, which says so.
        assert_eq!(
            out[2].as_ref().unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        assert_eq!(a, bytes[4096..8192]);
        assert_eq!(b, bytes[7..107]);
        assert!(super::super::stats::Cost::here().since(before).device_reads >= 3);
    }
}
