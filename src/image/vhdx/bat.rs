//! The BAT: its entry count checked against its region and the file
//! (`vhdx_calc_bat_entries`), and the guest disk read through it, block by
//! block, the sector bitmap entries interleaved every `chunk_ratio`
//! payload blocks skipped (`vhdx_block_translate`).

use super::metadata::Metadata;
use super::regions::Regions;
use super::{File, Region, BAT, HEADER_SECTION};
use crate::bytes::le_u64;
use crate::bytes::SharedReader;
use crate::image::cache::Cache;
use crate::image::{read_error, ImageError, Units};
use std::io;
use std::path::PathBuf;

/// `VHDX_MAX_SECTORS_PER_BLOCK`: a sector bitmap block covers this many
/// sectors, which sets the chunk ratio.
pub(super) const SECTORS_PER_CHUNK: u64 = 1 << 23;
/// `VHDX_BAT_FILE_OFF_MASK`: a BAT entry's file offset, in bytes.
const BAT_OFFSET_MASK: u64 = 0xFFFF_FFFF_FFF0_0000;

/// The BAT is read in pages of this many bytes, kept in a bounded cache.
const BAT_PAGE: u64 = 4096;
pub(super) const BAT_CACHE_BYTES: usize = 1 << 20;

/// Payload block states (vhdx.h `PAYLOAD_BLOCK_*`).
pub(super) const FULLY_PRESENT: u64 = 6;
const PARTIALLY_PRESENT: u64 = 7;

/// The BAT's entry count (`vhdx_calc_bat_entries`): one per payload block
/// and a sector bitmap entry after every `chunk_ratio` of them. The BAT
/// region must hold them (`vhdx_open`) and the file too.
pub(super) fn bat_entries(
    file: &File,
    regions: &Regions,
    meta: &Metadata,
    chunk_ratio: u64,
) -> Result<u64, ImageError> {
    let blocks = meta.virtual_size.div_ceil(meta.block_bytes);
    let entries = if blocks == 0 {
        0
    } else {
        blocks + (blocks - 1) / chunk_ratio
    };
    let bat = regions.bat;
    if entries * 8 > bat.len {
        return Err(file.err(
            BAT,
            bat.start,
            format!(
                "the region of {} bytes holds {} entries; the {}-byte disk in {}-byte blocks \
                 needs {entries}",
                bat.len,
                bat.len / 8,
                meta.virtual_size,
                meta.block_bytes
            ),
        ));
    }
    if bat.start + entries * 8 > file.src.len() {
        return Err(file.err(
            BAT,
            bat.start,
            format!(
                "{entries} entries end past the end of the file ({} bytes; truncated?)",
                file.src.len()
            ),
        ));
    }
    Ok(entries)
}

/// The guest disk: payload blocks found through the BAT.
pub(super) struct Guest {
    pub(super) src: SharedReader,
    pub(super) path: PathBuf,
    pub(super) len: u64,
    pub(super) block_bytes: u64,
    pub(super) chunk_ratio: u64,
    /// The BAT's entries, in the file.
    pub(super) bat: Region,
    /// The structures no payload block may overlap.
    pub(super) structures: [(&'static str, Region); 3],
    pub(super) cache: Cache,
}

impl Guest {
    /// BAT entry `index`, through a cached page.
    fn entry(&self, index: u64) -> io::Result<u64> {
        let page_start = index * 8 / BAT_PAGE * BAT_PAGE;
        let page = self.cache.get_or_load(self.bat.start + page_start, || {
            let n = BAT_PAGE.min(self.bat.len - page_start);
            let mut buf = vec![0u8; n as usize];
            self.src
                .read_exact_at(&mut buf, self.bat.start + page_start)
                .map_err(|e| self.bad(index, format!("cannot be read: {e}")))?;
            Ok(buf)
        })?;
        Ok(le_u64(&page, (index * 8 - page_start) as usize))
    }

    fn bad(&self, index: u64, message: String) -> io::Error {
        read_error(
            &self.path,
            BAT,
            self.bat.start + index * 8,
            format!("entry {index}: {message}"),
        )
    }

    /// A present block lies past the header section and overlaps neither
    /// the log, the BAT nor the metadata (`vhdx_check_bat_entries`, which
    /// qemu runs over the whole BAT on open; we check what a read meets).
    fn check_block(&self, index: u64, offset: u64) -> io::Result<()> {
        if offset < HEADER_SECTION || offset.checked_add(self.block_bytes).is_none() {
            return Err(self.bad(
                index,
                format!("block at byte {offset} is not past the header section"),
            ));
        }
        match self
            .structures
            .iter()
            .find(|(_, r)| r.overlaps(offset, self.block_bytes))
        {
            Some((name, r)) => Err(self.bad(
                index,
                format!(
                    "block at byte {offset} overlaps the {name} (bytes {}..{})",
                    r.start,
                    r.end()
                ),
            )),
            None => Ok(()),
        }
    }
}

impl Units for Guest {
    /// Fill `out` from the guest at `at`, all within one block
    /// (`vhdx_block_translate`, `vhdx_co_readv`).
    fn read_piece(&self, out: &mut [u8], at: u64) -> io::Result<()> {
        let block = at / self.block_bytes;
        let index = block + block / self.chunk_ratio;
        let entry = self.entry(index)?;
        match entry & 7 {
            // Not present, undefined, zero, unmapped (and its v0.95 value):
            // zeros, there being no parent.
            0 | 1 | 2 | 3 | 5 => {
                out.fill(0);
                Ok(())
            }
            FULLY_PRESENT => {
                let offset = entry & BAT_OFFSET_MASK;
                self.check_block(index, offset)?;
                let start = offset + at % self.block_bytes;
                if start + out.len() as u64 > self.src.len() {
                    return Err(self.bad(
                        index,
                        format!(
                            "block at byte {offset} ends past the end of the file ({} bytes; \
                             truncated?)",
                            self.src.len()
                        ),
                    ));
                }
                self.src.read_exact_at(out, start)
            }
            PARTIALLY_PRESENT => Err(self.bad(
                index,
                "state 7 (partially present) belongs to a differencing VHDX, and this one has \
                 no parent"
                    .into(),
            )),
            state => Err(self.bad(index, format!("state {state} is no payload block state"))),
        }
    }

    fn guest_len(&self) -> u64 {
        self.len
    }
    fn unit_bytes(&self) -> u64 {
        self.block_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::vhdx::test_support::{error, open_mem, put, read_guest, Build};
    use crate::image::vhdx::MIB;
    use crate::image::ContainerFormat;

    #[test]
    fn present_blocks_read_and_the_rest_are_zeros() {
        let opened = open_mem(Build::default().bytes()).unwrap();
        let c = &opened.container;
        assert_eq!((c.format, c.version.as_str()), (ContainerFormat::Vhdx, "1"));
        assert_eq!(c.subformat.as_deref(), Some("dynamic"));
        assert_eq!((c.unit_bytes, c.virtual_size), (Some(MIB), 8 * MIB));
        assert_eq!(
            (c.logical_sector_bytes, c.physical_sector_bytes),
            (Some(512), Some(4096))
        );
        let g = opened.guest.unwrap();
        let mut buf = vec![0xa5u8; 8 * MIB as usize];
        g.read_exact_at(&mut buf, 0).unwrap();
        let mib = MIB as usize;
        assert!(buf[..mib].iter().all(|&b| b == 0));
        assert!(buf[mib..2 * mib].iter().all(|&b| b == 0x44));
        assert!(buf[2 * mib..].iter().all(|&b| b == 0));
    }

    #[test]
    fn sector_bitmap_entries_interleave_every_chunk_ratio() {
        // 256 MiB blocks of 512-byte sectors: a chunk ratio of 16, so block
        // 16 is entry 17 and entry 16 is a sector bitmap entry, never read
        // for a guest read (here it points nowhere sensible).
        let b = Build {
            block: 256 * MIB as u32,
            size: 17 * 256 * MIB,
            entries: vec![],
            ..Build::default()
        };
        let mut img = b.bytes();
        img.resize(5 * MIB as usize, 0x55);
        put(
            &mut img,
            2 * MIB + 8 * 16,
            &(FULLY_PRESENT | (1 << 50)).to_le_bytes(),
        );
        put(
            &mut img,
            2 * MIB + 8 * 17,
            &(FULLY_PRESENT | (4 * MIB)).to_le_bytes(),
        );
        let got = read_guest(img, 16 * 256 * MIB + 12345, 4096).unwrap();
        assert!(got.iter().all(|&b| b == 0x55));
    }

    #[test]
    fn a_bat_too_small_for_the_disk_is_refused() {
        // 1 TiB in 1 MiB blocks needs 2^20 entries and 255 bitmap entries.
        let e = error(
            Build {
                size: 1 << 40,
                ..Build::default()
            }
            .bytes(),
        );
        assert!(
            e.contains(
                "VHDX BAT at byte 2097152: the region of 1048576 bytes holds 131072 entries"
            ),
            "{e}"
        );
    }

    #[test]
    fn bad_bat_entries_fail_the_read_that_meets_them() {
        let entry = |state: u64, offset: u64| {
            let mut img = Build::default().bytes();
            put(&mut img, 2 * MIB + 8 * 3, &(state | offset).to_le_bytes());
            read_guest(img, 3 * MIB, 512).unwrap_err().to_string()
        };
        let e = entry(FULLY_PRESENT, 0);
        assert!(
            e.contains(
                "VHDX BAT at byte 2097176: entry 3: block at byte 0 is not past the header section"
            ),
            "{e}"
        );
        let e = entry(FULLY_PRESENT, 3 * MIB);
        assert!(
            e.contains("overlaps the metadata (bytes 3145728..4194304)"),
            "{e}"
        );
        let e = entry(FULLY_PRESENT, 64 * MIB);
        assert!(
            e.contains("block at byte 67108864 ends past the end of the file"),
            "{e}"
        );
        let e = entry(FULLY_PRESENT, BAT_OFFSET_MASK);
        assert!(e.contains("is not past the header section"), "{e}");
        assert!(entry(PARTIALLY_PRESENT, 0).contains("state 7 (partially present)"));
        assert!(entry(4, 0).contains("state 4 is no payload block state"));
    }
}
