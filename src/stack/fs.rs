//! Filesystem superblock fields that matter for alignment: block size,
//! sector size and the stripe hints (ext4 stride/stripe_width, XFS
//! sunit/swidth), and whether it was made for a zoned disk. Layout: the
//! kernel's fs/ext4/ext4.h (`ext4_super_block`),
//! fs/xfs/libxfs/xfs_format.h (`xfs_sb`),
//! include/uapi/linux/btrfs_tree.h (`btrfs_super_block`) and
//! include/linux/f2fs_fs.h (`f2fs_super_block`).

use super::format::{Found, LayerFormat, Magic};
use super::Detail;
use super::LayerKind;
use crate::bytes::ParseError;
use crate::bytes::{be_u16, be_u32, be_u64, le_u16, le_u32, le_u64, read_bytes, ReadAt};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsKind {
    Ext4,
    Xfs,
    Btrfs,
    F2fs,
    /// FAT12/16/32 (blkid's name), exFAT and NTFS: read by `volume`.
    Vfat,
    Exfat,
    Ntfs,
}

crate::spelled_as_serde!(FsKind);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filesystem {
    #[serde(rename = "type")]
    pub kind: FsKind,
    pub block_size: u32,
    /// The smallest unit the filesystem writes (XFS sectsize, btrfs sectorsize;
    /// ext4: its block size).
    pub sector_size: u32,
    /// Stripe unit and width in filesystem blocks, as stored (0 = none):
    /// ext4 s_raid_stride / s_raid_stripe_width, XFS sb_unit / sb_width.
    pub stripe_unit_blocks: u32,
    pub stripe_width_blocks: u32,
    pub size_bytes: u64,
    /// Free bytes the superblock records (ext4 s_free_blocks_count, which
    /// the kernel keeps only roughly current while mounted); for `plan`,
    /// which may shrink an ext4 that has room to give.
    #[serde(skip)]
    pub free_bytes: Option<u64>,
    /// Made for a zoned disk: btrfs in zoned mode (the ZONED incompat
    /// flag: its superblock is a log in the first zones, its block groups
    /// are zones), f2fs with the `blkzoned` feature.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zoned: bool,
    /// A FAT, exFAT or NTFS volume's own layout (`block_size` is its
    /// cluster, `sector_size` its bytes per sector).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<Box<super::boot_volume::Volume>>,
    /// An f2fs's segments and sections, where its log writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f2fs: Option<F2fsAreas>,
}

/// Where an f2fs writes: whole segments (2 MiB by default) from segment
/// 0 on, cleaned a section at a time, its data in the main area
/// (`f2fs_super_block`, include/linux/f2fs_fs.h).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct F2fsAreas {
    pub segment_bytes: u64,
    /// `segs_per_sec` segments: what its cleaner frees at once.
    pub section_bytes: u64,
    /// Segment 0 and the main area, in bytes from the filesystem's start.
    pub segment0_offset_bytes: u64,
    pub main_offset_bytes: u64,
}

impl Filesystem {
    pub fn stripe_unit_bytes(&self) -> u64 {
        u64::from(self.stripe_unit_blocks) * u64::from(self.block_size)
    }
    pub fn stripe_width_bytes(&self) -> u64 {
        u64::from(self.stripe_width_blocks) * u64::from(self.block_size)
    }
}

fn block_size_ok(bs: u32, layer: &'static str, at: u64) -> Result<u32, ParseError> {
    if bs.is_power_of_two() && (512..=65536).contains(&bs) {
        Ok(bs)
    } else {
        Err(ParseError::new(
            layer,
            at,
            format!("block size {bs} is not a power of two in 512..=65536"),
        ))
    }
}

/// ext2/3/4, XFS, btrfs and f2fs superblocks.
pub static FORMAT: LayerFormat = LayerFormat {
    magics: &[
        Magic {
            offset: 1024 + 0x38,
            bytes: &[0x53, 0xef],
            what: "ext2/3/4 filesystem",
        },
        Magic {
            offset: 0,
            bytes: b"XFSB",
            what: "XFS filesystem",
        },
        Magic {
            offset: 65536 + 64,
            bytes: b"_BHRfS_M",
            what: "btrfs filesystem",
        },
        Magic {
            offset: 64,
            bytes: b"_BHRfS_M",
            what: "btrfs filesystem (zoned: superblock log in zone 0)",
        },
        Magic {
            offset: F2FS_SUPER_AT,
            bytes: &F2FS_MAGIC.to_le_bytes(),
            what: "f2fs filesystem",
        },
    ],
    probe: |r, src| match read(src) {
        Ok(Some(f)) => {
            let mut l = r.layer(LayerKind::Filesystem, f.kind.as_str());
            l.detail = Some(Detail::Filesystem(f));
            Some(Found::from(l))
        }
        Ok(None) => None,
        Err(e) => r
            .damaged(LayerKind::Filesystem, e.layer, e)
            .map(Found::from),
    },
    peeks: None,
};

/// The filesystem at the start of `src`, if it is one of ext2/3/4, XFS,
/// btrfs, f2fs.
pub fn read(src: &(impl ReadAt + ?Sized)) -> Result<Option<Filesystem>, ParseError> {
    let len = src.len();
    if len >= 512 {
        let b = read_bytes(src, "XFS superblock", 0, 512)?;
        if &b[0..4] == b"XFSB" {
            let bs = block_size_ok(be_u32(&b, 4), "XFS superblock", 4)?;
            let sect = be_u16(&b, 102);
            let sector_size = block_size_ok(u32::from(sect), "XFS superblock", 102)?;
            return Ok(Some(Filesystem {
                kind: FsKind::Xfs,
                block_size: bs,
                sector_size,
                stripe_unit_blocks: be_u32(&b, 184),
                stripe_width_blocks: be_u32(&b, 188),
                size_bytes: be_u64(&b, 8).saturating_mul(u64::from(bs)),
                free_bytes: None,
                zoned: false,
                volume: None,
                f2fs: None,
            }));
        }
    }
    if len >= 2048 {
        let b = read_bytes(src, "ext4 superblock", 1024, 1024)?;
        if le_u16(&b, 0x38) == 0xef53 {
            let log = le_u32(&b, 0x18);
            if log > 6 {
                return Err(ParseError::new(
                    "ext4 superblock",
                    1024 + 0x18,
                    format!("s_log_block_size {log} is beyond 64 KiB"),
                ));
            }
            let bs = 1024u32 << log;
            let incompat = le_u32(&b, 0x60);
            let mut blocks = u64::from(le_u32(&b, 0x04));
            let mut free = u64::from(le_u32(&b, 0x0c));
            if incompat & 0x80 != 0 {
                blocks |= u64::from(le_u32(&b, 0x150)) << 32;
                free |= u64::from(le_u32(&b, 0x158)) << 32;
            }
            return Ok(Some(Filesystem {
                kind: FsKind::Ext4,
                block_size: bs,
                sector_size: bs,
                stripe_unit_blocks: u32::from(le_u16(&b, 0x164)),
                stripe_width_blocks: le_u32(&b, 0x170),
                size_bytes: blocks.saturating_mul(u64::from(bs)),
                free_bytes: Some(free.min(blocks).saturating_mul(u64::from(bs))),
                zoned: false,
                volume: None,
                f2fs: None,
            }));
        }
    }
    if len >= F2FS_SUPER_AT + 4096 {
        let b = read_bytes(src, "f2fs superblock", F2FS_SUPER_AT, 4096)?;
        if le_u32(&b, 0) == F2FS_MAGIC {
            return f2fs(&b).map(Some);
        }
    }
    // A btrfs at its fixed superblock offset, or one in zoned mode, whose
    // primary superblock is a log written from the start of zone 0 (the
    // first copy at byte 0 when the zone is conventional, or the first
    // written since the zone's reset: fs/btrfs/zoned.c
    // `sb_write_pointer`, `btrfs_sb_log_location_bdev`).
    for at in [BTRFS_SUPER_AT, 0] {
        if len >= at + 4096 {
            let b = read_bytes(src, "btrfs superblock", at, 4096)?;
            if &b[64..72] == b"_BHRfS_M" {
                return btrfs(&b, at).map(Some);
            }
        }
    }
    Ok(None)
}

/// `BTRFS_SUPER_INFO_OFFSET`.
const BTRFS_SUPER_AT: u64 = 65536;
/// `BTRFS_FEATURE_INCOMPAT_ZONED` (include/uapi/linux/btrfs.h).
const BTRFS_INCOMPAT_ZONED: u64 = 1 << 12;

/// A btrfs superblock read at `at` (`btrfs_super_block`: sectorsize at
/// 0x90, total_bytes at 0x70, incompat_flags at 0xbc).
fn btrfs(b: &[u8], at: u64) -> Result<Filesystem, ParseError> {
    let sector_size = block_size_ok(le_u32(b, 0x90), "btrfs superblock", at + 0x90)?;
    Ok(Filesystem {
        kind: FsKind::Btrfs,
        block_size: sector_size,
        sector_size,
        stripe_unit_blocks: 0,
        stripe_width_blocks: 0,
        size_bytes: le_u64(b, 0x70),
        free_bytes: None,
        zoned: le_u64(b, 0xbc) & BTRFS_INCOMPAT_ZONED != 0,
        volume: None,
        f2fs: None,
    })
}

/// `F2FS_SUPER_OFFSET`: the first of its two superblocks (the second is
/// 4 KiB further).
const F2FS_SUPER_AT: u64 = 1024;
/// `F2FS_SUPER_MAGIC`.
const F2FS_MAGIC: u32 = 0xF2F5_2010;
/// `F2FS_FEATURE_BLKZONED` (include/linux/f2fs_fs.h: 0x0001 is ENCRYPT,
/// 0x0008 EXTRA_ATTR, 0x0020 INODE_CHKSUM).
const F2FS_BLKZONED: u32 = 0x0002;

/// An f2fs superblock (`f2fs_super_block`: log_blocksize at 16,
/// block_count at 36, feature at 2180). f2fs reads and writes whole
/// blocks, so its sector is its block, as for ext4.
fn f2fs(b: &[u8]) -> Result<Filesystem, ParseError> {
    let log = le_u32(b, 16);
    let bs = block_size_ok(
        1u32.checked_shl(log).unwrap_or(0),
        "f2fs superblock",
        F2FS_SUPER_AT + 16,
    )?;
    Ok(Filesystem {
        kind: FsKind::F2fs,
        block_size: bs,
        sector_size: bs,
        stripe_unit_blocks: 0,
        stripe_width_blocks: 0,
        size_bytes: le_u64(b, 36).saturating_mul(u64::from(bs)),
        free_bytes: None,
        zoned: le_u32(b, 2180) & F2FS_BLKZONED != 0,
        volume: None,
        f2fs: f2fs_areas(b, bs),
    })
}

/// The segments and sections of an f2fs superblock (log_blocks_per_seg
/// at 20, segs_per_sec at 24, segment0_blkaddr at 72, main_blkaddr at
/// 92); None when they make no sense (a segment of 2^0..2^16 blocks, at
/// most 2^16 segments per section), as a damaged superblock would.
fn f2fs_areas(b: &[u8], bs: u32) -> Option<F2fsAreas> {
    let log = le_u32(b, 20);
    let segs = u64::from(le_u32(b, 24));
    if log > 16 || !(1..=1 << 16).contains(&segs) {
        return None;
    }
    let segment = u64::from(bs) << log;
    Some(F2fsAreas {
        segment_bytes: segment,
        section_bytes: segment * segs,
        segment0_offset_bytes: u64::from(le_u32(b, 72)) * u64::from(bs),
        main_offset_bytes: u64::from(le_u32(b, 92)) * u64::from(bs),
    })
}
