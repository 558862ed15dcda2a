//! FAT, exFAT and NTFS volumes as stack layers: what their boot sectors
//! say (parsed by `fat`, `exfat` and `ntfs`) in the terms the three share:
//! the cluster, where cluster 2 starts (a FAT's data area, an exFAT's
//! cluster heap; an NTFS counts its clusters from its boot sector), where
//! the boot sector says the volume starts on its disk (hidden sectors,
//! exFAT's PartitionOffset), the bytes it spans, its label and serial,
//! and whether its backup boot sector says the same.
//!
//! Where the backups are: FAT32 at the sector its BPB names (BPB_BkBootSec,
//! fatgen103 section 3.3; mkfs.fat writes 6), exFAT's whole backup boot
//! region in sectors 12 to 23 (exFAT specification section 3.2), NTFS in
//! the sector after the volume's last (its `number_of_sectors`): mkntfs
//! counts the volume one sector short of the partition and writes the
//! copy there (seen: a partition of 195,312 sectors holds a volume of
//! 195,311 and the copy in sector 195,311; `tests/boot_sectors.rs`
//! checks it on volumes mkntfs makes).

use super::boot_volume::{Backup, BackupState, Volume};
use super::exfat::{self, Exfat};
use super::fat::{self, Fat};
use super::format::{Found, LayerFormat, Magic};
use super::fs::{Filesystem, FsKind};
use super::labels;
use super::ntfs::{self, Ntfs};
use super::region::Region;
use super::{Detail, LayerKind};
use crate::bytes::{read_bytes, ReadAt};

/// FAT12/16/32, after NTFS and exFAT (whose boot sectors carry a BPB's
/// media byte too) in the registry.
pub static FAT: LayerFormat = LayerFormat {
    magics: &[
        Magic {
            offset: 82,
            bytes: b"FAT32   ",
            what: "FAT filesystem",
        },
        Magic {
            offset: 54,
            bytes: b"FAT12   ",
            what: "FAT filesystem",
        },
        Magic {
            offset: 54,
            bytes: b"FAT16   ",
            what: "FAT filesystem",
        },
    ],
    probe: probe_fat,
    peeks: None,
};

pub static EXFAT: LayerFormat = LayerFormat {
    magics: &[Magic {
        offset: 3,
        bytes: b"EXFAT   ",
        what: "exFAT filesystem",
    }],
    probe: probe_exfat,
    peeks: None,
};

pub static NTFS: LayerFormat = LayerFormat {
    magics: &[Magic {
        offset: 3,
        bytes: b"NTFS    ",
        what: "NTFS filesystem",
    }],
    probe: probe_ntfs,
    peeks: None,
};

/// The most a probe reads from the start: exFAT's two boot regions of
/// 4 KiB sectors.
const HEAD: u64 = 24 * 4096;

/// The first [`HEAD`] bytes, read only when the first sector passes
/// `looks`: most regions hold none of these volumes, and their probes
/// run one after another on each.
fn head(src: &dyn ReadAt, layer: &'static str, looks: fn(&[u8]) -> bool) -> Option<Vec<u8>> {
    let first = read_bytes(src, layer, 0, src.len().min(512)).ok()?;
    looks(&first).then(|| read_bytes(src, layer, 0, src.len().min(HEAD)).ok())?
}

fn fat_named(b: &[u8]) -> bool {
    b.get(54..57) == Some(b"FAT") || b.get(82..87) == Some(b"FAT32")
}

fn looks_fat(b: &[u8]) -> bool {
    let media = b.get(21).is_some_and(|&m| m == 0xf0 || m >= 0xf8);
    boot_sector(b) && (fat_named(b) || media) && b.get(3..11) != Some(b"NTFS    ")
}

/// A boot sector: 0x55AA and a jump (fatgen103 section 3.1).
fn boot_sector(b: &[u8]) -> bool {
    b.len() >= 512 && b[510..512] == [0x55, 0xaa] && matches!(b[0], 0xeb | 0xe9)
}

/// A FAT: a BPB that parses and looks like one, as libblkid's vfat probe
/// asks (`libblkid/src/superblocks/vfat.c`, `fat_valid_superblock`: a
/// FAT type string, or a valid media byte with the BPB's counts sane).
fn probe_fat(r: &Region, src: &dyn ReadAt) -> Option<Found> {
    let b = head(src, "FAT boot sector", looks_fat)?;
    let named = fat_named(&b);
    match fat::parse(&b) {
        Ok(f) => Some(fat_layer(r, src, &b, &f)),
        Err(e) if named => r.damaged(LayerKind::Filesystem, "FAT", e).map(Found::from),
        Err(_) => None,
    }
}

fn probe_exfat(r: &Region, src: &dyn ReadAt) -> Option<Found> {
    let b = head(src, "exFAT boot sector", |b| {
        b.get(3..11) == Some(b"EXFAT   ")
    })?;
    Some(match exfat::parse(&b) {
        Ok(x) => exfat_layer(r, src, &x),
        Err(e) => Found::from(r.damaged(LayerKind::Filesystem, "exFAT", e)?),
    })
}

fn probe_ntfs(r: &Region, src: &dyn ReadAt) -> Option<Found> {
    let b = head(src, "NTFS boot sector", |b| {
        b.get(3..11) == Some(b"NTFS    ")
    })?;
    Some(match ntfs::parse(&b) {
        Ok(n) => ntfs_layer(r, src, &b, &n),
        Err(e) => Found::from(r.damaged(LayerKind::Filesystem, "NTFS", e)?),
    })
}

/// blkid's spelling of a 32-bit serial.
fn serial32(s: u32) -> String {
    format!("{:04X}-{:04X}", s >> 16, s & 0xffff)
}

/// The sector at `at` against `main`'s first `len` bytes, but for the
/// bytes at `skip`.
fn compare_but(src: &dyn ReadAt, main: &[u8], at: u64, len: u64, skip: &[usize]) -> BackupState {
    match read_bytes(src, "backup boot sector", at, len) {
        Err(_) => BackupState::Missing,
        Ok(b) if b.iter().all(|&x| x == 0) => BackupState::Missing,
        Ok(b) => {
            let same = main.len() >= b.len()
                && b.iter()
                    .zip(main)
                    .enumerate()
                    .all(|(i, (x, y))| x == y || skip.contains(&i));
            if same {
                BackupState::Same
            } else {
                BackupState::Differs
            }
        }
    }
}

/// The sector at `at` against `main`'s first `len` bytes.
fn compare(src: &dyn ReadAt, main: &[u8], at: u64, len: u64) -> BackupState {
    compare_but(src, main, at, len, &[])
}

/// The byte of a FAT32 boot sector the kernel's vfat sets while mounted
/// read-write (BS_Reserved1 at 0x41, its dirty flag: fs/fat/inode.c
/// `fat_set_state`) in the main boot sector only; fsck.fat calls that
/// difference harmless.
const FAT32_STATE: usize = 0x41;

fn fat_layer(r: &Region, src: &dyn ReadAt, b: &[u8], f: &Fat) -> Found {
    let bps = u64::from(f.bytes_per_sector);
    let backup = match f.backup_boot_sector {
        Some(s) if s > 0 => {
            let at = u64::from(s) * bps;
            Backup {
                state: compare_but(src, b, at, bps, &[FAT32_STATE]),
                offset_bytes: Some(at),
            }
        }
        _ => Backup::default(),
    };
    let v = Volume {
        fat_type: Some(f.fat_type),
        cluster_bytes: f.cluster_bytes(),
        cluster_count: f.cluster_count,
        fat_offset_bytes: Some(f.fat_offset_bytes),
        data_offset_bytes: f.data_offset_bytes,
        data_start_bytes: r.offset.saturating_add(f.data_offset_bytes),
        mft_offset_bytes: None,
        hidden_sectors: f.hidden_sectors.into(),
        start_sectors: whole(r.offset, bps),
        span_bytes: f.size_bytes(),
        region_bytes: r.len,
        label: labels::fat(src, b, f),
        serial: f.serial.map(serial32),
        backup,
    };
    layer(r, FsKind::Vfat, v, f.bytes_per_sector)
}

fn exfat_layer(r: &Region, src: &dyn ReadAt, x: &Exfat) -> Found {
    let ss = x.sector_bytes();
    let backup_at = 12 * ss;
    let state = match read_bytes(src, "exFAT backup boot region", backup_at, 12 * ss) {
        Err(_) => BackupState::Missing,
        Ok(bb) if bb.iter().all(|&v| v == 0) => BackupState::Missing,
        // The checksum leaves out what changes while mounted (VolumeFlags,
        // PercentInUse), which the backup does not follow.
        Ok(bb) => match exfat::parse(&bb) {
            Ok(bx) if bx.checksum == x.checksum => BackupState::Same,
            _ => BackupState::Differs,
        },
    };
    let v = Volume {
        fat_type: None,
        cluster_bytes: x.cluster_bytes(),
        cluster_count: x.cluster_count.into(),
        fat_offset_bytes: Some(x.fat_offset_bytes()),
        data_offset_bytes: x.heap_offset_bytes(),
        data_start_bytes: r.offset.saturating_add(x.heap_offset_bytes()),
        mft_offset_bytes: None,
        hidden_sectors: x.volume_offset,
        start_sectors: whole(r.offset, ss),
        span_bytes: x.size_bytes(),
        region_bytes: r.len,
        label: labels::exfat(src, x),
        serial: Some(serial32(x.serial)),
        backup: Backup {
            state,
            offset_bytes: Some(backup_at),
        },
    };
    layer(r, FsKind::Exfat, v, ss as u32)
}

fn ntfs_layer(r: &Region, src: &dyn ReadAt, b: &[u8], n: &Ntfs) -> Found {
    let bps = u64::from(n.bytes_per_sector);
    let at = n.size_bytes();
    let v = Volume {
        fat_type: None,
        cluster_bytes: n.cluster_bytes(),
        cluster_count: n.clusters(),
        fat_offset_bytes: None,
        data_offset_bytes: 0,
        data_start_bytes: r.offset,
        mft_offset_bytes: Some(n.mft_lcn.saturating_mul(n.cluster_bytes())),
        hidden_sectors: n.hidden_sectors.into(),
        start_sectors: whole(r.offset, bps),
        span_bytes: at.saturating_add(bps),
        region_bytes: r.len,
        label: labels::ntfs(src, n),
        serial: Some(format!("{:016X}", n.serial)),
        backup: ntfs_backup(r, src, b, at, bps),
    };
    layer(r, FsKind::Ntfs, v, n.bytes_per_sector)
}

/// An NTFS's backup boot sector: in the sector after the volume, where
/// mkntfs writes it, or else in the partition's last sector, where
/// ntfsresize leaves it after shrinking the volume (seen with ntfs-3g
/// 2022.10.3: `ntfsresize --size N` leaves the sector after the new end
/// zero and the copy at the device's end, with the old sector count).
fn ntfs_backup(r: &Region, src: &dyn ReadAt, main: &[u8], at: u64, bps: u64) -> Backup {
    let after = compare(src, main, at, bps);
    let last = r.len.checked_sub(bps).filter(|&l| l > at);
    // The copy that is there wins: the same one, else one that differs
    // over none after the volume.
    match (after, last.map(|l| (l, compare(src, main, l, bps)))) {
        (BackupState::Same, _) | (_, None | Some((_, BackupState::Missing))) => Backup {
            state: after,
            offset_bytes: Some(at),
        },
        (BackupState::Differs, Some((_, BackupState::Differs))) => Backup {
            state: after,
            offset_bytes: Some(at),
        },
        (_, Some((l, state))) => Backup {
            state,
            offset_bytes: Some(l),
        },
    }
}

fn whole(offset: u64, sector: u64) -> Option<u64> {
    (sector > 0 && offset % sector == 0).then(|| offset / sector)
}

fn layer(r: &Region, kind: FsKind, v: Volume, sector: u32) -> Found {
    let mut l = r.layer(LayerKind::Filesystem, v.name());
    l.data_offset_bytes = Some(v.data_offset_bytes);
    let fs = Filesystem {
        kind,
        block_size: u32::try_from(v.cluster_bytes).unwrap_or(u32::MAX),
        sector_size: sector,
        stripe_unit_blocks: 0,
        stripe_width_blocks: 0,
        size_bytes: v.span_bytes,
        free_bytes: None,
        zoned: false,
        volume: Some(Box::new(v)),
        f2fs: None,
    };
    l.detail = Some(Detail::Filesystem(fs));
    Found::from(l)
}
