//! A VMFS sparse extent (`COWD`, ESX's older vmfsSparse): its header
//! read into the same `Layout` as a `KDMV` one (`vmdk_open_vmfs_sparse`).

use super::header::{check_gd, check_grain, Layout, MAX_GD_ENTRIES};
use super::{read_padded, LAYER_HEADER, SECTOR};
use crate::bytes::le_u32;
use crate::bytes::SharedReader;
use crate::image::ImageError;
use std::path::Path;

/// qemu's `VMDK3Header` after the magic (VMFS sparse, `COWD`).
const COWD_HEADER_LEN: usize = 44;
const COWD_VERSION: usize = 4;
const COWD_CAPACITY: usize = 12;
const COWD_GRAIN_SIZE: usize = 16;
const COWD_GD_OFFSET: usize = 20;
const COWD_GD_ENTRIES: usize = 24;
/// A COWD grain table always has 4096 entries (`vmdk_open_vmfs_sparse`).
const COWD_GTES_PER_GT: u64 = 4096;

/// A `COWD` header (VMFS sparse, `vmdk_open_vmfs_sparse`): the GD's size
/// is given, not derived, and grain tables have 4096 entries.
pub(super) fn read_cowd(src: &SharedReader, path: &Path) -> Result<Layout, ImageError> {
    let err = |at: usize, msg: String| ImageError::parse(path, LAYER_HEADER, at as u64, msg);
    if src.len() < COWD_HEADER_LEN as u64 {
        return Err(err(
            0,
            format!(
                "the COWD header needs {COWD_HEADER_LEN} bytes but the file has {} (truncated?)",
                src.len()
            ),
        ));
    }
    let head = read_padded(&**src, 0, COWD_HEADER_LEN as u64);
    let capacity = u64::from(le_u32(&head, COWD_CAPACITY));
    let grain = u64::from(le_u32(&head, COWD_GRAIN_SIZE));
    let gd_sector = u64::from(le_u32(&head, COWD_GD_OFFSET));
    let gd_entries = u64::from(le_u32(&head, COWD_GD_ENTRIES));
    let grain_bytes = check_grain(grain, false, &|m| err(COWD_GRAIN_SIZE, m))?;
    if gd_entries > MAX_GD_ENTRIES {
        return Err(err(
            COWD_GD_ENTRIES,
            format!("l1dir_size {gd_entries} is more than {MAX_GD_ENTRIES} entries"),
        ));
    }
    let gd_at = check_gd(gd_sector, gd_entries, src.len(), &|m| {
        err(COWD_GD_OFFSET, m)
    })?;
    Ok(Layout {
        version: le_u32(&head, COWD_VERSION),
        len: capacity * SECTOR,
        grain_bytes,
        gtes_per_gt: COWD_GTES_PER_GT,
        gd_at,
        gd_entries,
        zero_grain: false,
        compressed: false,
        markers: false,
        descriptor: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::vmdk::test_support::{descriptor, guest_bytes, open_mem, refused};
    use crate::image::MemFiles;

    #[test]
    fn a_cowd_extent_maps_grains_through_4096_entry_tables() {
        // 16 sectors in grains of 2; GD of 1 entry at sector 1, the grain
        // table at sector 2 (16 KiB), grain 3 at sector 40.
        let mut b = vec![0u8; 41 * 512];
        b[..4].copy_from_slice(b"COWD");
        for (at, v) in [
            (COWD_VERSION, 1u32),
            (COWD_CAPACITY, 16),
            (COWD_GRAIN_SIZE, 2),
        ] {
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        for (at, v) in [
            (COWD_GD_OFFSET, 1u32),
            (COWD_GD_ENTRIES, 1),
            (512, 2),
            (1024 + 12, 39),
        ] {
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        b[39 * 512..41 * 512].fill(6);
        let files = MemFiles::default()
            .with("/vm/d.vmdk", descriptor("RW 16 VMFSSPARSE \"c.vmdk\"\n"))
            .with("/vm/c.vmdk", b.clone());
        let g = guest_bytes(&open_mem(files, "/vm/d.vmdk").unwrap());
        assert!(g[3 * 1024..4 * 1024].iter().all(|&x| x == 6));
        assert!(g[..3 * 1024].iter().chain(&g[4 * 1024..]).all(|&x| x == 0));
        // A GD of too many entries for the file.
        b[COWD_GD_ENTRIES..COWD_GD_ENTRIES + 4].copy_from_slice(&100_000u32.to_le_bytes());
        let files = MemFiles::default()
            .with("/vm/d.vmdk", descriptor("RW 16 VMFSSPARSE \"c.vmdk\"\n"))
            .with("/vm/c.vmdk", b);
        refused(
            open_mem(files, "/vm/d.vmdk"),
            &["VMDK header at byte 20", "gdOffset"],
        );
    }
}
