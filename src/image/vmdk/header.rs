//! A hosted sparse extent's `KDMV` header (monolithicSparse,
//! streamOptimized, the SPARSE extents of a descriptor), checked as
//! qemu's `vmdk_open_vmdk4` and `vmdk_add_extent` check it, into the
//! `Layout` the grain reader follows.

use super::descriptor::MAX_DESCRIPTOR;
use super::{sector_bytes, LAYER_HEADER, MAX_DISK_BYTES, SECTOR};
use crate::bytes::{le_u16, le_u32, le_u64};
use crate::image::ImageError;
use std::path::Path;

/// qemu's `VMDK4Header` after the magic, 75 bytes (packed).
pub(super) const KDMV_HEADER_LEN: usize = 79;
pub(super) const KDMV_VERSION: usize = 4;
pub(super) const KDMV_FLAGS: usize = 8;
pub(super) const KDMV_CAPACITY: usize = 12;
pub(super) const KDMV_GRAIN_SIZE: usize = 20;
pub(super) const KDMV_DESCRIPTOR_OFFSET: usize = 28;
pub(super) const KDMV_DESCRIPTOR_SIZE: usize = 36;
pub(super) const KDMV_GTES_PER_GT: usize = 44;
pub(super) const KDMV_GD_OFFSET: usize = 56;
pub(super) const KDMV_OVERHEAD: usize = 64;
pub(super) const KDMV_COMPRESS_ALGORITHM: usize = 77;

/// Header flags (qemu's `VMDK4_FLAG_*`).
pub(super) const FLAG_ZERO_GRAIN: u32 = 1 << 2;
pub(super) const FLAG_MARKERS: u32 = 1 << 17;
/// `compressAlgorithm` 1: deflate in a zlib stream. qemu tells compressed
/// grains by this field alone, not by flag bit 16 (`vmdk_open_vmdk4`).
pub(super) const COMPRESSION_DEFLATE: u16 = 1;
/// The header's gdOffset when the grain directory is found through the
/// footer (`VMDK4_GD_AT_END`).
pub(super) const GD_AT_END: u64 = u64::MAX;

/// qemu refuses more than 512 entries a grain table (`vmdk_open_vmdk4`,
/// "L2 table size too big").
const MAX_GTES_PER_GT: u64 = 512;
/// qemu refuses grains over 1 GiB (`vmdk_add_extent`, "Invalid
/// granularity"). It does not ask for a power of two, nor do we.
const MAX_GRAIN_SECTORS: u64 = 0x20_0000;
/// qemu refuses grain directories over 32 Mi entries (`vmdk_add_extent`,
/// "L1 size too big"): 8 TiB with the smallest grains and tables.
pub(super) const MAX_GD_ENTRIES: u64 = 32 << 20;
/// A compressed grain is decompressed whole, so its size is bounded where
/// qemu's 1 GiB is not: 16 MiB is 256 times the 64 KiB grain every
/// streamOptimized writer (VMware, VirtualBox, qemu) uses, and inflates
/// in milliseconds.
const MAX_COMPRESSED_GRAIN: u64 = 16 << 20;

/// Where a sparse extent keeps its grains, as its header gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// `KDMV` versions 1-3; `COWD` gives its own.
    pub(super) version: u32,
    /// The extent's size in bytes (capacity × 512).
    pub(super) len: u64,
    pub(super) grain_bytes: u64,
    pub(super) gtes_per_gt: u64,
    /// The grain directory's byte offset and entries.
    pub(super) gd_at: u64,
    pub(super) gd_entries: u64,
    pub(super) zero_grain: bool,
    pub(super) compressed: bool,
    pub(super) markers: bool,
    /// The embedded descriptor's bytes (byte offset, length), if any.
    pub(super) descriptor: Option<(u64, u64)>,
}

/// Check a `KDMV` header (at byte `base` of the file) as
/// `vmdk_open_vmdk4` and `vmdk_add_extent` do, and where they read past
/// the end, refuse it: the grain directory must lie in the file.
pub(super) fn check_kdmv(
    head: &[u8],
    base: u64,
    file_len: u64,
    path: &Path,
) -> Result<Layout, ImageError> {
    let err = |at: usize, msg: String| ImageError::parse(path, LAYER_HEADER, base + at as u64, msg);
    let version = le_u32(head, KDMV_VERSION);
    if version > 3 {
        return Err(err(
            KDMV_VERSION,
            format!("version {version} is not 1, 2 or 3"),
        ));
    }
    let flags = le_u32(head, KDMV_FLAGS);
    let capacity = le_u64(head, KDMV_CAPACITY);
    let grain = le_u64(head, KDMV_GRAIN_SIZE);
    let gtes = u64::from(le_u32(head, KDMV_GTES_PER_GT));
    let gd_sector = le_u64(head, KDMV_GD_OFFSET);
    let overhead = le_u64(head, KDMV_OVERHEAD);
    let compressed = le_u16(head, KDMV_COMPRESS_ALGORITHM) == COMPRESSION_DEFLATE;
    if gtes == 0 || gtes > MAX_GTES_PER_GT {
        return Err(err(
            KDMV_GTES_PER_GT,
            format!("numGTEsPerGT {gtes} is not within 1..={MAX_GTES_PER_GT}"),
        ));
    }
    let grain_bytes = check_grain(grain, compressed, &|m| err(KDMV_GRAIN_SIZE, m))?;
    let len = sector_bytes(capacity)
        .filter(|&l| l <= MAX_DISK_BYTES)
        .ok_or_else(|| {
            err(
                KDMV_CAPACITY,
                format!("capacity {capacity} sectors is too large"),
            )
        })?;
    let gd_entries = capacity.div_ceil(grain * gtes);
    if gd_entries > MAX_GD_ENTRIES {
        return Err(err(
            KDMV_CAPACITY,
            format!(
                "capacity {capacity} sectors in grains of {grain} sectors and grain tables of {gtes} \
                 entries needs a grain directory of {gd_entries} entries (at most {MAX_GD_ENTRIES})"
            ),
        ));
    }
    if overhead > file_len.div_ceil(SECTOR) {
        return Err(err(
            KDMV_OVERHEAD,
            format!("overHead {overhead} sectors is past the end of the file ({file_len} bytes; truncated?)"),
        ));
    }
    let gd_at = check_gd(gd_sector, gd_entries, file_len, &|m| err(KDMV_GD_OFFSET, m))?;
    let descriptor = embedded_descriptor(head, file_len);
    Ok(Layout {
        version,
        len,
        grain_bytes,
        gtes_per_gt: gtes,
        gd_at,
        gd_entries,
        zero_grain: flags & FLAG_ZERO_GRAIN != 0,
        compressed,
        markers: flags & FLAG_MARKERS != 0,
        descriptor,
    })
}

/// A grain size in sectors as qemu takes it (`vmdk_add_extent`: 1 sector
/// to 1 GiB), and no more than [`MAX_COMPRESSED_GRAIN`] when compressed.
pub(super) fn check_grain(
    sectors: u64,
    compressed: bool,
    err: &dyn Fn(String) -> ImageError,
) -> Result<u64, ImageError> {
    if sectors == 0 || sectors > MAX_GRAIN_SECTORS {
        return Err(err(format!(
            "grainSize {sectors} sectors is not within 1..={MAX_GRAIN_SECTORS}"
        )));
    }
    let bytes = sectors * SECTOR;
    if compressed && bytes > MAX_COMPRESSED_GRAIN {
        return Err(err(format!(
            "grainSize {sectors} sectors: compressed grains over {MAX_COMPRESSED_GRAIN} bytes are refused"
        )));
    }
    Ok(bytes)
}

/// The GD's byte offset, checked to hold its entries inside the file.
pub(super) fn check_gd(
    sector: u64,
    entries: u64,
    file_len: u64,
    err: &dyn Fn(String) -> ImageError,
) -> Result<u64, ImageError> {
    let at = sector_bytes(sector);
    let end = at.and_then(|a| a.checked_add(entries * 4));
    match (at, end) {
        (Some(at), Some(end)) if end <= file_len => Ok(at),
        _ => Err(err(format!(
            "gdOffset {sector} (sectors): a grain directory of {entries} entries there ends past \
             the end of the file ({file_len} bytes)"
        ))),
    }
}

/// The embedded descriptor's place (`descriptorOffset`,
/// `descriptorSize`), cut to the file and to [`MAX_DESCRIPTOR`]; None
/// when there is none. qemu reads only the parent's name and the CIDs
/// from it (`vmdk_parent_open`, `vmdk_read_cid`: at byte 512, whatever
/// descriptorOffset says), so a bad place is no error, only no facts.
fn embedded_descriptor(head: &[u8], file_len: u64) -> Option<(u64, u64)> {
    let at =
        sector_bytes(le_u64(head, KDMV_DESCRIPTOR_OFFSET)).filter(|&a| a > 0 && a < file_len)?;
    let len = sector_bytes(le_u64(head, KDMV_DESCRIPTOR_SIZE))
        .unwrap_or(u64::MAX)
        .min(file_len - at)
        .min(MAX_DESCRIPTOR);
    Some((at, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::vmdk::test_support::{open_one, refused, timed, Sparse};

    #[test]
    fn hostile_headers_are_refused_naming_the_field_and_byte() {
        let cases: [(&str, usize, u64, bool, &[&str]); 9] = [
            (
                "version 4",
                KDMV_VERSION,
                4,
                false,
                &["at byte 4", "version 4"],
            ),
            (
                "no GTEs",
                KDMV_GTES_PER_GT,
                0,
                false,
                &["at byte 44", "numGTEsPerGT 0"],
            ),
            (
                "513 GTEs",
                KDMV_GTES_PER_GT,
                513,
                false,
                &["at byte 44", "numGTEsPerGT 513"],
            ),
            (
                "grain 0",
                KDMV_GRAIN_SIZE,
                0,
                true,
                &["at byte 20", "grainSize 0"],
            ),
            (
                "grain 1 GiB + 1",
                KDMV_GRAIN_SIZE,
                MAX_GRAIN_SECTORS + 1,
                true,
                &["at byte 20", "grainSize"],
            ),
            (
                "capacity",
                KDMV_CAPACITY,
                1 << 50,
                true,
                &["at byte 12", "grain directory of"],
            ),
            (
                "capacity overflow",
                KDMV_CAPACITY,
                u64::MAX / 256,
                true,
                &["at byte 12", "capacity"],
            ),
            (
                "gd past end",
                KDMV_GD_OFFSET,
                1 << 30,
                true,
                &["at byte 56", "gdOffset"],
            ),
            (
                "overhead",
                KDMV_OVERHEAD,
                1 << 20,
                true,
                &["at byte 64", "overHead"],
            ),
        ];
        for (what, at, value, wide, names) in cases {
            let mut img = Sparse::new(0, &[], "");
            if wide {
                img.put64(at, value);
            } else {
                img.put32(at, value as u32);
            }
            let e = timed(|| refused(open_one(img.bytes), names));
            assert!(e.contains("/vm/disk.vmdk: VMDK header"), "{what}: {e}");
        }
        let img = Sparse::new(0, &[], "");
        refused(
            open_one(img.bytes[..50].to_vec()),
            &["VMDK header at byte 0", "truncated"],
        );
    }
}
