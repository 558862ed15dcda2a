//! The labels of FAT, exFAT and NTFS volumes, where blkid finds them:
//! - FAT: the volume-label entry of the root directory (attribute 0x08,
//!   fatgen103 section 6), else the boot sector's BS_VolLab; "NO NAME"
//!   is none (libblkid `superblocks/vfat.c` reads them in that order);
//! - exFAT: the root directory's volume label entry (type 0x83, up to 11
//!   UTF-16 characters; exFAT specification section 7.3);
//! - NTFS: the $VOLUME_NAME attribute (type 0x60) of $Volume, MFT record 3,
//!   read after its update sequence fixups (ntfs-3g `libntfs-3g/mst.c`,
//!   `ntfs_mst_post_read_fixup`).
//!
//! Each reads at most one bounded directory cluster or MFT record; a label
//! that cannot be read is none.

use super::exfat::Exfat;
use super::fat::{Fat, FatType};
use super::ntfs::Ntfs;
use crate::bytes::{le_u16, le_u32, read_bytes, ReadAt};

/// The most of a root directory searched for its label entry.
const DIR_BYTES: u64 = 64 << 10;

fn text(raw: &[u8]) -> Option<String> {
    let s = String::from_utf8_lossy(raw)
        .trim_end_matches([' ', '\0'])
        .to_string();
    (!s.is_empty() && s != "NO NAME").then_some(s)
}

fn utf16(raw: &[u8]) -> Option<String> {
    let units: Vec<u16> = raw.chunks_exact(2).map(|c| le_u16(c, 0)).collect();
    let s = String::from_utf16_lossy(&units);
    (!s.is_empty()).then_some(s)
}

/// A FAT's label: the root directory's, else the boot sector's.
pub fn fat(src: &dyn ReadAt, boot: &[u8], f: &Fat) -> Option<String> {
    let bps = u64::from(f.bytes_per_sector);
    let (at, len) = match (f.fat_type, f.root_cluster) {
        (FatType::Fat32, Some(c)) => (
            f.data_offset_bytes + u64::from(c.saturating_sub(2)) * f.cluster_bytes(),
            f.cluster_bytes(),
        ),
        _ => (
            f.data_offset_bytes
                .saturating_sub((u64::from(f.root_entries) * 32).div_ceil(bps) * bps),
            u64::from(f.root_entries) * 32,
        ),
    };
    let in_root = read_bytes(src, "FAT root directory", at, len.min(DIR_BYTES))
        .ok()
        .and_then(|d| fat_root_label(&d));
    let bpb_at = if f.fat_type == FatType::Fat32 { 71 } else { 43 };
    let sig_at = bpb_at - 5;
    in_root.or_else(|| {
        (boot.get(sig_at) == Some(&0x29))
            .then(|| boot.get(bpb_at..bpb_at + 11).and_then(text))
            .flatten()
    })
}

/// The label entry of a FAT directory: attribute 0x08 alone (0x0F is a
/// long name's piece), not deleted (0xE5); 0x00 ends the directory.
fn fat_root_label(dir: &[u8]) -> Option<String> {
    for e in dir.chunks_exact(32) {
        match e[0] {
            0x00 => return None,
            0xe5 => continue,
            _ if e[11] & 0x3f == 0x08 => return text(&e[..11]),
            _ => {}
        }
    }
    None
}

/// An exFAT's label: the volume label entry of its root directory.
pub fn exfat(src: &dyn ReadAt, x: &Exfat) -> Option<String> {
    let cluster = u64::from(x.root_cluster.checked_sub(2)?);
    let at = x.heap_offset_bytes() + cluster * x.cluster_bytes();
    let dir = read_bytes(
        src,
        "exFAT root directory",
        at,
        x.cluster_bytes().min(DIR_BYTES),
    )
    .ok()?;
    for e in dir.chunks_exact(32) {
        match e[0] {
            0x00 => return None,
            0x83 => {
                let n = usize::from(e[1]).min(11);
                return utf16(&e[2..2 + 2 * n]);
            }
            _ => {}
        }
    }
    None
}

/// An NTFS's label: $Volume's $VOLUME_NAME.
pub fn ntfs(src: &dyn ReadAt, n: &Ntfs) -> Option<String> {
    let size = n.mft_record_bytes;
    let at = n
        .mft_lcn
        .checked_mul(n.cluster_bytes())?
        .checked_add(3 * size)?;
    let mut r = read_bytes(src, "NTFS $Volume record", at, size).ok()?;
    if r.get(..4) != Some(b"FILE") || !fixup(&mut r) {
        return None;
    }
    let mut off = usize::from(le_u16(&r, 0x14));
    while off + 24 <= r.len() {
        let (kind, len) = (le_u32(&r, off), le_u32(&r, off + 4) as usize);
        if kind == 0xffff_ffff || len < 24 || off + len > r.len() {
            return None;
        }
        // Resident (byte 8 is 0): value length at +0x10, its offset at +0x14.
        if kind == 0x60 && r[off + 8] == 0 {
            let vlen = le_u32(&r, off + 0x10) as usize;
            let voff = off + usize::from(le_u16(&r, off + 0x14));
            return r.get(voff..voff.checked_add(vlen)?).and_then(utf16);
        }
        off += len;
    }
    None
}

/// An MFT record's update sequence: the last two bytes of each 512-byte
/// block (whatever the sector size: ntfs-3g's `NTFS_BLOCK_SIZE`) hold the
/// sequence number, and the array after it the bytes they stand for.
/// False when a block's number does not match (a torn record).
fn fixup(r: &mut [u8]) -> bool {
    const SECTOR: usize = 512;
    let (usa, count) = (usize::from(le_u16(r, 4)), usize::from(le_u16(r, 6)));
    if count < 2 || usa + 2 * count > r.len() || (count - 1) * SECTOR > r.len() {
        return false;
    }
    let seq = [r[usa], r[usa + 1]];
    for i in 1..count {
        let end = i * SECTOR;
        if r[end - 2..end] != seq {
            return false;
        }
        let fix = [r[usa + 2 * i], r[usa + 2 * i + 1]];
        r[end - 2..end].copy_from_slice(&fix);
    }
    true
}
