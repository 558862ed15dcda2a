//! A hosted sparse extent read through its grain directory and grain
//! tables, the GD in pages and the tables in the caches one image's
//! extents share; unallocated grains read from the fallback.

use super::header::Layout;
use super::SECTOR;
use crate::bytes::le_u32;
use crate::bytes::SharedReader;
use crate::image::cache::Cache;
use crate::image::{read_error, Fallback, Units};
use std::io;
use std::path::PathBuf;
use std::rc::Rc;

const LAYER_GD: &str = "VMDK grain directory";
const LAYER_GT: &str = "VMDK grain table";

/// A grain table entry of 1 in an extent with the zeroed-grain flag: the
/// grain reads as zeros, not from the parent (`VMDK_GTE_ZEROED`).
const GTE_ZEROED: u32 = 1;

/// The GD is read in pages of this many bytes.
const GD_PAGE: u64 = 4096;
const TABLE_CACHE_BYTES: usize = 512 << 10;
const GRAIN_CACHE_BYTES: usize = 2 << 20;

/// The caches one image's extents share.
#[derive(Clone)]
pub(super) struct Caches {
    pub(super) tables: Rc<Cache>,
    pub(super) grains: Rc<Cache>,
}

impl Caches {
    pub(super) fn new() -> Self {
        Caches {
            tables: Rc::new(Cache::new(TABLE_CACHE_BYTES)),
            grains: Rc::new(Cache::new(GRAIN_CACHE_BYTES)),
        }
    }
}

/// A hosted sparse extent read through its grain directory and tables
/// (`get_cluster_offset`, `vmdk_read_extent`, `vmdk_co_preadv`).
pub(super) struct SparseExtent {
    pub(super) file: SharedReader,
    pub(super) path: PathBuf,
    pub(super) layout: Layout,
    /// Tells this extent's entries apart in the shared caches.
    pub(super) id: u64,
    /// Where the extent starts in the guest: unallocated grains read the
    /// parent's bytes at the same guest offset.
    pub(super) guest_start: u64,
    pub(super) fallback: Fallback,
    pub(super) caches: Caches,
}

/// Where a grain's bytes are.
enum Grain {
    /// Not in this extent: the parent's bytes, or zeros.
    Unallocated,
    /// Zeroed (a GTE of 1 with the zeroed-grain flag).
    Zeroed,
    /// At this byte of the file; `entry_at` is its grain table entry's.
    At { offset: u64, entry_at: u64 },
}

/// The kinds of cache entries, so that a GD page and a grain table at the
/// same byte never share a key.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    GdPage = 0,
    Table = 1,
    Grain = 2,
}

impl SparseExtent {
    /// A cache key: the extent, the kind and a byte offset (GT and grain
    /// offsets are u32 sectors, below 2^41; GD pages number fewer).
    pub(super) fn key(&self, kind: Kind, at: u64) -> u64 {
        (self.id << 44) | ((kind as u64) << 42) | (at & ((1 << 42) - 1))
    }

    /// The grain table sector of GD entry `index`, 0 when unallocated.
    fn gd_entry(&self, index: u64) -> io::Result<u64> {
        let l = &self.layout;
        if index >= l.gd_entries {
            return Err(read_error(
                &self.path,
                LAYER_GD,
                l.gd_at,
                format!(
                    "the grain directory has {} entries, none for grain table {index}",
                    l.gd_entries
                ),
            ));
        }
        let byte = index * 4;
        let page = byte / GD_PAGE;
        let page_at = l.gd_at + page * GD_PAGE;
        let page_len = (l.gd_entries * 4 - page * GD_PAGE).min(GD_PAGE);
        let data = self
            .caches
            .tables
            .get_or_load(self.key(Kind::GdPage, page), || {
                self.read_file(LAYER_GD, page_at, page_len, "grain directory page")
            })?;
        let i = (byte % GD_PAGE) as usize;
        data.get(i..i + 4)
            .map(|b| u64::from(le_u32(b, 0)))
            .ok_or_else(|| self.short(LAYER_GD, page_at))
    }

    /// Where grain `index` of the extent is.
    fn grain(&self, index: u64) -> io::Result<Grain> {
        let l = &self.layout;
        let gd_index = index / l.gtes_per_gt;
        let gt_sector = self.gd_entry(gd_index)?;
        if gt_sector == 0 {
            return Ok(Grain::Unallocated);
        }
        let gd_entry_at = l.gd_at + gd_index * 4;
        let gt_at = gt_sector * SECTOR;
        let gt_len = l.gtes_per_gt * 4;
        if gt_at
            .checked_add(gt_len)
            .is_none_or(|end| end > self.file.len())
        {
            return Err(read_error(
                &self.path,
                LAYER_GD,
                gd_entry_at,
                format!(
                    "grain directory entry {gd_index}: grain table at sector {gt_sector} is past the end of the file ({} bytes)",
                    self.file.len()
                ),
            ));
        }
        let table = self
            .caches
            .tables
            .get_or_load(self.key(Kind::Table, gt_at), || {
                self.read_file(LAYER_GT, gt_at, gt_len, "grain table")
            })?;
        let i = ((index % l.gtes_per_gt) * 4) as usize;
        let gte = table
            .get(i..i + 4)
            .map(|b| le_u32(b, 0))
            .ok_or_else(|| self.short(LAYER_GT, gt_at))?;
        Ok(match gte {
            0 => Grain::Unallocated,
            GTE_ZEROED if l.zero_grain => Grain::Zeroed,
            sector => Grain::At {
                offset: u64::from(sector) * SECTOR,
                entry_at: gt_at + i as u64,
            },
        })
    }

    fn read_file(&self, layer: &'static str, at: u64, len: u64, what: &str) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut buf, at)
            .map_err(|e| read_error(&self.path, layer, at, format!("reading the {what}: {e}")))?;
        Ok(buf)
    }

    fn short(&self, layer: &'static str, at: u64) -> io::Error {
        read_error(
            &self.path,
            layer,
            at,
            "cached table is shorter than its entries".to_string(),
        )
    }

    /// Bytes `in_grain..` of an uncompressed grain at `offset`.
    fn read_plain(
        &self,
        buf: &mut [u8],
        offset: u64,
        in_grain: u64,
        entry_at: u64,
    ) -> io::Result<()> {
        let at = offset + in_grain;
        if at
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.file.len())
        {
            return Err(read_error(
                &self.path,
                LAYER_GT,
                entry_at,
                format!(
                    "grain table entry: grain at sector {} is past the end of the file ({} bytes)",
                    offset / SECTOR,
                    self.file.len()
                ),
            ));
        }
        self.file.read_exact_at(buf, at)
    }
}

impl Units for SparseExtent {
    fn guest_len(&self) -> u64 {
        self.layout.len
    }
    fn unit_bytes(&self) -> u64 {
        self.layout.grain_bytes
    }
    fn read_piece(&self, part: &mut [u8], off: u64) -> io::Result<()> {
        let grain_bytes = self.layout.grain_bytes;
        let in_grain = off % grain_bytes;
        match self.grain(off / grain_bytes)? {
            Grain::Unallocated => self.fallback.read(part, self.guest_start + off),
            Grain::Zeroed => {
                part.fill(0);
                Ok(())
            }
            Grain::At { offset, .. } if self.layout.compressed => {
                self.read_compressed(part, offset, in_grain)
            }
            Grain::At { offset, entry_at } => self.read_plain(part, offset, in_grain, entry_at),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::image::vmdk::header::FLAG_ZERO_GRAIN;
    use crate::image::vmdk::test_support::{guest_bytes, open_one, Sparse};
    use crate::image::ContainerFormat;

    #[test]
    fn grains_read_allocated_unallocated_and_zeroed() {
        // Grain 1 at sector 8 (1s), grain 5 at 16 (2s), grain 6 zeroed.
        let img = Sparse::new(FLAG_ZERO_GRAIN, &[(1, 8), (5, 16), (6, 1)], "");
        let o = open_one(img.bytes).unwrap();
        let c = &o.container;
        assert_eq!((c.format, c.version.as_str()), (ContainerFormat::Vmdk, "1"));
        assert_eq!(c.subformat.as_deref(), Some("monolithicSparse"));
        assert_eq!((c.unit_bytes, c.virtual_size), (Some(4096), 64 * 512));
        let g = guest_bytes(&o);
        for (grain, want) in [(0, 0u8), (1, 1), (2, 0), (5, 2), (6, 0), (7, 0)] {
            assert!(
                g[grain * 4096..(grain + 1) * 4096]
                    .iter()
                    .all(|&b| b == want),
                "{grain}"
            );
        }
        // Without the zeroed-grain flag a GTE of 1 is sector 1: the
        // descriptor's bytes (here zeros but for the header's check).
        let img = Sparse::new(0, &[(6, 1), (0, 8)], "x");
        let g = guest_bytes(&open_one(img.bytes).unwrap());
        assert_eq!(g[6 * 4096], b'x');
    }

    #[test]
    fn reads_cross_grains_and_tables_at_odd_offsets() {
        let img = Sparse::new(0, &[(3, 8), (4, 16)], "");
        let g = open_one(img.bytes).unwrap().guest.unwrap();
        let mut buf = vec![0u8; 5000];
        g.read_exact_at(&mut buf, 3 * 4096 + 100).unwrap();
        assert!(buf[..3996].iter().all(|&b| b == 1));
        assert!(buf[3996..].iter().all(|&b| b == 2));
        assert!(g.read_exact_at(&mut buf, 64 * 512 - 10).is_err());
    }

    #[test]
    fn a_grain_table_or_grain_past_the_end_fails_the_read_naming_its_entry() {
        let mut img = Sparse::new(0, &[(0, 8), (1, 4000)], "");
        img.bytes.truncate(16 * 512);
        img.put32(1028, 50_000); // GD entry 1: the second grain table
        let g = open_one(img.bytes).unwrap().guest.unwrap();
        let mut buf = [0u8; 512];
        g.read_exact_at(&mut buf, 0).unwrap();
        let e = g.read_exact_at(&mut buf, 4096).unwrap_err().to_string();
        assert!(
            e.contains("VMDK grain table at byte 1540") && e.contains("past the end"),
            "{e}"
        );
        let e = g.read_exact_at(&mut buf, 4 * 4096).unwrap_err().to_string();
        assert!(
            e.contains("VMDK grain directory at byte 1028") && e.contains("entry 1"),
            "{e}"
        );
    }
}
