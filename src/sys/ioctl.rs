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

/// The logical block size of an open block device (BLKSSZGET).
pub fn logical_block_size(fd: impl AsFd) -> io::Result<u32> {
    Ok(get::<BLKSSZGET, i32>(fd)? as u32)
}

/// Size in bytes of an open block device (BLKGETSIZE64).
pub fn size_bytes(fd: impl AsFd) -> io::Result<u64> {
    get::<BLKGETSIZE64, u64>(fd)
}

/// BLKREPORTZONE: `_IOWR(0x12, 130, struct blk_zone_report)`, the report
/// header being 16 bytes (include/uapi/linux/blkzoned.h). Read-only: the
/// kernel fills zone descriptors (block/blk-zoned.c
/// `blkdev_report_zones_ioctl`) and never writes to the device.
const BLKREPORTZONE: Opcode = 0xC010_1282;

/// Zones asked for per BLKREPORTZONE call.
const ZONE_BATCH: usize = 128;

/// `struct blk_zone` (include/uapi/linux/blkzoned.h): 64 bytes.
#[repr(C)]
#[derive(Clone, Copy)]
struct BlkZone {
    start: u64,
    len: u64,
    wp: u64,
    kind: u8,
    cond: u8,
    non_seq: u8,
    reset: u8,
    resv: [u8; 4],
    capacity: u64,
    reserved: [u8; 24],
}

/// `struct blk_zone_report` with room for [`ZONE_BATCH`] zones after it.
#[repr(C)]
struct ZoneReport {
    sector: u64,
    nr_zones: u32,
    flags: u32,
    zones: [BlkZone; ZONE_BATCH],
}

/// `BLK_ZONE_TYPE_CONVENTIONAL`.
const ZONE_TYPE_CONVENTIONAL: u8 = 1;

/// How many of a zoned disk's zones are conventional, counted through
/// BLKREPORTZONE in batches of [`ZONE_BATCH`] from sector 0 to
/// `capacity_sectors` (512-byte sectors). At most `max_zones` zones are
/// walked (the count sysfs `queue/nr_zones` gives, which bounds the
/// calls): a device that reports more, a zone of length 0 or a report
/// going backwards is an error, never a longer loop.
pub fn conventional_zones(fd: impl AsFd, capacity_sectors: u64, max_zones: u64) -> io::Result<u64> {
    let fd = fd.as_fd();
    let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let empty = BlkZone {
        start: 0,
        len: 0,
        wp: 0,
        kind: 0,
        cond: 0,
        non_seq: 0,
        reset: 0,
        resv: [0; 4],
        capacity: 0,
        reserved: [0; 24],
    };
    let mut report = Box::new(ZoneReport {
        sector: 0,
        nr_zones: 0,
        flags: 0,
        zones: [empty; ZONE_BATCH],
    });
    let (mut sector, mut seen, mut conventional) = (0u64, 0u64, 0u64);
    while sector < capacity_sectors {
        report.sector = sector;
        report.nr_zones = ZONE_BATCH as u32;
        report.flags = 0;
        // SAFETY: BLKREPORTZONE reads `sector` and `nr_zones` and writes
        // at most `nr_zones` descriptors after the header, which the
        // struct has room for; it sets `nr_zones` to how many it wrote.
        unsafe {
            ioctl(
                fd,
                rustix::ioctl::Updater::<BLKREPORTZONE, ZoneReport>::new(&mut report),
            )
        }?;
        let got = (report.nr_zones as usize).min(ZONE_BATCH);
        if got == 0 {
            break;
        }
        for z in &report.zones[..got] {
            if z.len == 0 || z.start < sector {
                return Err(bad(format!(
                    "BLKREPORTZONE gave a zone at sector {} of {} sectors when asked from sector {sector}",
                    z.start, z.len
                )));
            }
            seen += 1;
            if seen > max_zones {
                return Err(bad(format!(
                    "BLKREPORTZONE reported more than the {max_zones} zones sysfs nr_zones gives"
                )));
            }
            conventional += u64::from(z.kind == ZONE_TYPE_CONVENTIONAL);
            sector = z.start.saturating_add(z.len);
        }
    }
    Ok(conventional)
}
