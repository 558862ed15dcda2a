//! The L1 and L2 lookups: where a guest byte reads from, the L1 table
//! read in chunks and the L2 tables cached, an L2 entry classified as
//! qemu classifies it, subclusters of extended L2 entries by their bitmap
//! (`qcow2_get_host_offset`, `qcow2_get_subcluster_type`).

use super::cluster::{Place, SUBCLUSTERS};
use super::disk::{Disk, L1_CHUNK_BYTES};
use super::{L1_TABLE, L2_TABLE};
use crate::bytes::{be_u64, read_bytes};
use std::io;
use std::rc::Rc;

/// L1 and L2 entry fields (qcow2.h).
pub(super) const OFLAG_COPIED: u64 = 1 << 63;
pub(super) const OFLAG_COMPRESSED: u64 = 1 << 62;
pub(super) const OFLAG_ZERO: u64 = 1;
/// `L1E_OFFSET_MASK`, `L2E_OFFSET_MASK`: bits 9-55.
const OFFSET_MASK: u64 = 0x00ff_ffff_ffff_fe00;

impl Disk {
    /// Where guest byte `at` reads from; the same for the rest of its unit
    /// (qcow2-cluster.c `qcow2_get_host_offset`).
    pub(super) fn place(&self, at: u64) -> io::Result<Place> {
        let l1_index = at / self.geometry.l1_span();
        if l1_index >= self.l1_entries {
            return Ok(Place::Backing);
        }
        let l1_at = self.l1_offset + l1_index * 8;
        let l2_offset = self.l1_entry(l1_index)? & OFFSET_MASK;
        if l2_offset == 0 {
            return Ok(Place::Backing);
        }
        if l2_offset & self.geometry.cluster_mask() != 0 {
            return Err(self.error(
                L1_TABLE,
                l1_at,
                format!("L1 entry {l1_index}: L2 table offset {l2_offset} is not cluster-aligned"),
            ));
        }
        let table = self.l2_table(l2_offset, l1_index, l1_at)?;
        let index = (at >> self.geometry.cluster_bits) % self.geometry.l2_entries();
        let byte = (index * self.geometry.entry_bytes()) as usize;
        let word = |i: usize| table.get(i..i + 8).map_or(0, |w| be_u64(w, 0));
        let entry = word(byte);
        let bitmap = if self.geometry.extended {
            word(byte + 8)
        } else {
            0
        };
        self.classify(at, entry, bitmap, l2_offset + byte as u64)
    }

    /// An L2 entry (and its subcluster bitmap) as the place of guest byte
    /// `at`, refusing what qemu refuses on a read: a zero flag in a
    /// version 2 image, an unaligned cluster, a compressed cluster or a
    /// mapping other than guest = host with an external data file, and a
    /// bitmap that is invalid.
    fn classify(&self, at: u64, entry: u64, bitmap: u64, entry_at: u64) -> io::Result<Place> {
        if entry & OFLAG_COMPRESSED != 0 {
            if self.has_data_file {
                return Err(self.error(
                    L2_TABLE,
                    entry_at,
                    "compressed cluster in an image with an external data file".into(),
                ));
            }
            let descriptor = entry & !(OFLAG_COPIED | OFLAG_COMPRESSED);
            return Ok(Place::Compressed {
                descriptor,
                entry_at,
            });
        }
        if !self.geometry.extended && entry & OFLAG_ZERO != 0 {
            if self.version < 3 {
                return Err(self.error(
                    L2_TABLE,
                    entry_at,
                    "zero flag in a version 2 image".into(),
                ));
            }
            return Ok(Place::Zeros);
        }
        let host = entry & OFFSET_MASK;
        // Offset 0 with an external data file is its first cluster when
        // the copied flag says it is allocated (qcow2.h
        // `qcow2_get_cluster_type`).
        let allocated = host != 0 || (self.has_data_file && entry & OFLAG_COPIED != 0);
        if self.geometry.extended {
            if let Some(place) = self.subcluster(at, allocated, bitmap, entry_at)? {
                return Ok(place);
            }
        } else if !allocated {
            return Ok(Place::Backing);
        }
        if host & self.geometry.cluster_mask() != 0 {
            return Err(self.error(
                L2_TABLE,
                entry_at,
                format!("cluster offset {host} is not cluster-aligned"),
            ));
        }
        let offset = host + (at & self.geometry.cluster_mask());
        if self.has_data_file && host != at & !self.geometry.cluster_mask() {
            return Err(self.error(
                L2_TABLE,
                entry_at,
                format!(
                    "external data file cluster offset {host} is not the guest offset {}",
                    at & !self.geometry.cluster_mask()
                ),
            ));
        }
        Ok(Place::Host(offset))
    }

    /// The place of a subcluster when its bitmap says zeros or unallocated;
    /// None when it is allocated in its cluster (spec, "Extended L2
    /// Entries": bits 0-31 allocated, 32-63 reads as zeros).
    fn subcluster(
        &self,
        at: u64,
        allocated: bool,
        bitmap: u64,
        entry_at: u64,
    ) -> io::Result<Option<Place>> {
        let alloc = bitmap & 0xffff_ffff;
        let zero = bitmap >> 32;
        if (allocated && alloc & zero != 0) || (!allocated && alloc != 0) {
            return Err(self.error(
                L2_TABLE,
                entry_at + 8,
                format!("subcluster bitmap 0x{bitmap:016x} is invalid for this entry"),
            ));
        }
        let bit = 1 << ((at / self.geometry.unit_bytes()) % SUBCLUSTERS);
        Ok(if zero & bit != 0 {
            Some(Place::Zeros)
        } else if alloc & bit == 0 {
            Some(Place::Backing)
        } else {
            None
        })
    }

    /// L1 entry `index`, from the chunk of the table that holds it.
    fn l1_entry(&self, index: u64) -> io::Result<u64> {
        let per_chunk = L1_CHUNK_BYTES / 8;
        let chunk = index / per_chunk;
        let first = chunk * per_chunk;
        let bytes = (self.l1_entries - first).min(per_chunk) * 8;
        let at = self.l1_offset + first * 8;
        let table = self.l1.get_or_load(chunk, || {
            read_bytes(&*self.file, L1_TABLE, at, bytes)
                .map_err(|e| self.error(L1_TABLE, at, e.message))
        })?;
        let i = ((index - first) * 8) as usize;
        Ok(table.get(i..i + 8).map_or(0, |w| be_u64(w, 0)))
    }

    /// The L2 table at `offset`, one cluster of the image file.
    fn l2_table(&self, offset: u64, l1_index: u64, l1_at: u64) -> io::Result<Rc<[u8]>> {
        if let Some((at, table)) = &*self.last_l2.borrow() {
            if *at == offset {
                return Ok(table.clone());
            }
        }
        let len = self.geometry.cluster_bytes();
        let table = self.l2.get_or_load(offset, || {
            if offset.checked_add(len).is_none_or(|end| end > self.file.len()) {
                return Err(self.error(
                    L1_TABLE,
                    l1_at,
                    format!(
                        "L1 entry {l1_index}: the L2 table at byte {offset} runs past the end of the file at byte {}",
                        self.file.len()
                    ),
                ));
            }
            read_bytes(&*self.file, L2_TABLE, offset, len)
                .map_err(|e| self.error(L2_TABLE, offset, e.message))
        })?;
        *self.last_l2.borrow_mut() = Some((offset, table.clone()));
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::qcow2::test_support::{files, guest, opened, pattern, read, Img, TOP};

    #[test]
    fn extended_l2_subclusters_are_data_zeros_or_the_backing_file() {
        let mut img = Img::new(14, 1 << 20, true);
        img.backing("base.raw", Some("raw"));
        // Subcluster 0 allocated, 1 zero, the rest unallocated.
        img.l2(0, img.data(), 0b1 | 0b10 << 32);
        // An unallocated cluster with zero subclusters 3 and 4.
        img.l2(1, 0, 0b11000 << 32);
        let files = files(&img).with("/vm/base.raw", vec![0x11; 1 << 20]);
        let o = opened(&files);
        assert_eq!(o.container.subunit_bytes, Some(512));
        assert_eq!(o.container.unit_bytes, Some(16384));
        let all = read(&o.guest.unwrap(), 0, 32768).unwrap();
        let want: Vec<u8> = (0..512).map(pattern).collect();
        assert_eq!(all[..512], want[..]);
        assert!(all[512..1024].iter().all(|&b| b == 0));
        assert!(all[1024..16384].iter().all(|&b| b == 0x11));
        assert!(all[16384..16384 + 1536].iter().all(|&b| b == 0x11));
        assert!(all[16384 + 1536..16384 + 2560].iter().all(|&b| b == 0));
        assert!(all[16384 + 2560..].iter().all(|&b| b == 0x11));
    }

    #[test]
    fn an_invalid_subcluster_bitmap_is_a_read_error() {
        let mut img = Img::new(14, 1 << 20, true);
        img.l2(0, img.data(), 0b1 | 0b1 << 32); // allocated and zero
        let e = read(&guest(&img), 0, 1).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{TOP}: qcow2 L2 table at byte 32776: subcluster bitmap 0x0000000100000001 is invalid for this entry")
        );
    }

    #[test]
    fn an_l2_table_past_the_end_of_the_file_is_a_read_error() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(512 + 8, 1 << 30); // L1 entry 1
        let g = guest(&img);
        assert!(read(&g, 0, 512).is_ok());
        let e = read(&g, 32 << 10, 512).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{TOP}: qcow2 L1 table at byte 520: L1 entry 1: the L2 table at byte 1073741824 runs past the end of the file at byte 4096"
            )
        );
        // The offset mask drops bits 0-8: unaligned needs larger clusters.
        let mut img = Img::new(12, 4 << 20, false);
        img.u64(4096 + 8, 4096 + 512);
        let e = read(&guest(&img), 2 << 20, 1).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{TOP}: qcow2 L1 table at byte 4104: L1 entry 1: L2 table offset 4608 is not cluster-aligned")
        );
    }

    #[test]
    fn a_zero_flag_in_a_version_2_image_is_a_read_error() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(4, 2);
        img.l2(3, OFLAG_ZERO, 0);
        let g = guest(&img);
        assert_eq!(opened(&files(&img)).container.version, "2");
        let e = read(&g, 3 * 512, 1).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{TOP}: qcow2 L2 table at byte 1048: zero flag in a version 2 image")
        );
    }
}
