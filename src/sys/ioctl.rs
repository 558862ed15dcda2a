//! The block-device ioctls (linux/fs.h). Read-only: nothing here changes a device.

use rustix::fd::AsFd;
use rustix::fs::{open, Mode, OFlags};
use rustix::ioctl::{ioctl, Getter, Opcode};
use serde::{Deserialize, Serialize};
use std::io;
use std::path::Path;

/// Values read through the block-device ioctls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct IoctlValues {
    pub logical_block_size: u32,
    pub physical_block_size: u32,
    pub minimum_io_size: u32,
    pub optimal_io_size: u32,
    pub alignment_offset: i64,
    pub size_bytes: u64,
}

const BLKSSZGET: Opcode = 0x1268;
const BLKPBSZGET: Opcode = 0x127b;
const BLKIOMIN: Opcode = 0x1278;
const BLKIOOPT: Opcode = 0x1279;
const BLKALIGNOFF: Opcode = 0x127a;
const BLKBSZGET: Opcode = 0x8008_1270;
const BLKGETSIZE64: Opcode = 0x8008_1272;

fn get<const OP: Opcode, T>(fd: impl AsFd) -> io::Result<T> {
    // SAFETY: each opcode above is a getter whose kernel side writes exactly
    // one value of the type it is used with here (int, unsigned int, u64).
    Ok(unsafe { ioctl(fd, Getter::<OP, T>::new()) }?)
}

/// Open a device node read-only without blocking (no tray waits, no media change).
pub fn open_read_only(path: &Path) -> io::Result<rustix::fd::OwnedFd> {
    Ok(open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// All limits through the ioctls of an open block device.
pub fn read_fd(fd: impl AsFd) -> io::Result<IoctlValues> {
    let fd = fd.as_fd();
    Ok(IoctlValues {
        logical_block_size: get::<BLKSSZGET, i32>(fd)? as u32,
        physical_block_size: get::<BLKPBSZGET, u32>(fd)?,
        minimum_io_size: get::<BLKIOMIN, u32>(fd)?,
        optimal_io_size: get::<BLKIOOPT, u32>(fd)?,
        alignment_offset: i64::from(get::<BLKALIGNOFF, i32>(fd)?),
        size_bytes: get::<BLKGETSIZE64, u64>(fd)?,
    })
}

/// All limits through the ioctls of the device at `path`.
pub fn read_path(path: &Path) -> io::Result<IoctlValues> {
    read_fd(open_read_only(path)?)
}

/// The soft block size of the device node (BLKBSZGET).
pub fn device_block_size(fd: impl AsFd) -> io::Result<u32> {
    Ok(get::<BLKBSZGET, i32>(fd)? as u32)
}

/// Size in bytes of an open block device (BLKGETSIZE64).
pub fn size_bytes(fd: impl AsFd) -> io::Result<u64> {
    get::<BLKGETSIZE64, u64>(fd)
}
