//! The guest disk of a qcow2 image: each read split into units, the
//! units that read alike joined into runs, each run filled from zeros,
//! the backing file, the data file or an inflated cluster.

use super::cluster::{Geometry, Place};
use super::header::{Compression, Header};
use super::COMPRESSED;
use crate::bytes::ReadAt;
use crate::bytes::SharedReader;
use crate::image::cache::Cache;
use crate::image::{pieces, read_error, Fallback};
use std::cell::RefCell;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The L1 table is read in pieces of this many bytes, where the guest is
/// read: a large image's L1 table runs to megabytes, `check` needs a few
/// entries of it.
pub(super) const L1_CHUNK_BYTES: u64 = 4096;
/// Most bytes of L2 tables and of inflated clusters held at once, each.
const CACHE_BYTES: u64 = 4 << 20;
/// Most entries a cache holds, whatever their size (a lookup walks them).
const CACHE_ENTRIES: u64 = 512;

/// The guest disk of a qcow2 image.
pub(super) struct Disk {
    pub(super) path: PathBuf,
    pub(super) file: SharedReader,
    /// Where allocated clusters are: the external data file, or `file`.
    pub(super) data: SharedReader,
    pub(super) has_data_file: bool,
    pub(super) geometry: Geometry,
    pub(super) version: u32,
    pub(super) compression: Compression,
    pub(super) l1_offset: u64,
    pub(super) l1_entries: u64,
    pub(super) size: u64,
    pub(super) fallback: Fallback,
    pub(super) l1: Cache,
    pub(super) l2: Cache,
    pub(super) inflated: Cache,
    /// The L2 table read last, spared a cache lookup: reads walk the guest
    /// forward, mostly within one table.
    pub(super) last_l2: RefCell<Option<(u64, Rc<[u8]>)>>,
}

impl Disk {
    pub(super) fn new(
        file: SharedReader,
        path: &Path,
        header: &Header,
        data: Option<SharedReader>,
        fallback: Fallback,
    ) -> Disk {
        let geometry = header.geometry();
        let cache_bytes = |unit: u64| (unit * CACHE_ENTRIES).min(CACHE_BYTES) as usize;
        Disk {
            path: path.to_path_buf(),
            has_data_file: data.is_some(),
            data: data.unwrap_or_else(|| file.clone()),
            file,
            geometry,
            version: header.version,
            compression: header.compression,
            l1_offset: header.l1_table_offset,
            l1_entries: u64::from(header.l1_size),
            size: header.virtual_size(),
            fallback,
            l1: Cache::new(cache_bytes(L1_CHUNK_BYTES)),
            l2: Cache::new(cache_bytes(geometry.cluster_bytes())),
            inflated: Cache::new(cache_bytes(geometry.cluster_bytes())),
            last_l2: RefCell::new(None),
        }
    }

    /// Fill `buf` from one run of units that read alike.
    fn fill(&self, run: &Run, buf: &mut [u8]) -> io::Result<()> {
        match run.place {
            Place::Zeros => {
                buf.fill(0);
                Ok(())
            }
            Place::Backing => self.fallback.read(buf, run.guest),
            Place::Host(offset) => read_to_end(&*self.data, buf, offset),
            Place::Compressed {
                descriptor,
                entry_at,
            } => {
                let cluster = self.inflated(descriptor, entry_at)?;
                let from = (run.guest & self.geometry.cluster_mask()) as usize;
                let src = cluster.get(from..from + buf.len()).ok_or_else(|| {
                    self.error(
                        COMPRESSED,
                        entry_at,
                        "read past the inflated cluster".into(),
                    )
                })?;
                buf.copy_from_slice(src);
                Ok(())
            }
        }
    }

    pub(super) fn error(&self, layer: &'static str, offset: u64, message: String) -> io::Error {
        read_error(&self.path, layer, offset, message)
    }
}

/// Read `buf` at `offset` of `src`, zeros past its end: qemu's reads of a
/// file past its end read zeros (a data cluster preallocated in the map
/// but not in the file reads so).
fn read_to_end(src: &dyn ReadAt, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let have = src.len().saturating_sub(offset).min(buf.len() as u64) as usize;
    buf[have..].fill(0);
    if have > 0 {
        src.read_exact_at(&mut buf[..have], offset)?;
    }
    Ok(())
}

/// Units of a read that go to one place: zeros, the backing file, or a
/// contiguous range of the data file are read in one go.
struct Run {
    place: Place,
    /// Where in the caller's buffer, which guest byte, how many bytes.
    at: usize,
    guest: u64,
    len: usize,
}

impl Run {
    /// Take in the next unit when it reads from where this run goes on.
    fn extend(&mut self, place: Place, len: usize) -> bool {
        let joins = match (self.place, place) {
            (Place::Zeros, Place::Zeros) | (Place::Backing, Place::Backing) => true,
            (Place::Host(a), Place::Host(b)) => a + self.len as u64 == b,
            _ => false,
        };
        if joins {
            self.len += len;
        }
        joins
    }
}

impl ReadAt for Disk {
    fn len(&self) -> u64 {
        self.size
    }

    /// A data cluster of the image file itself (never of an external
    /// data file): the host placement judges the image file's extents.
    fn file_offset(&self, at: u64) -> Option<u64> {
        match self.place(at).ok()? {
            Place::Host(x) if !self.has_data_file => Some(x),
            _ => None,
        }
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.size)
        {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let mut run: Option<Run> = None;
        for (at, guest, len) in pieces(offset, buf.len(), self.geometry.unit_bytes()) {
            let place = self.place(guest)?;
            if run.as_mut().is_some_and(|r| r.extend(place, len)) {
                continue;
            }
            if let Some(done) = run.replace(Run {
                place,
                at,
                guest,
                len,
            }) {
                self.fill(&done, &mut buf[done.at..done.at + done.len])?;
            }
        }
        if let Some(done) = run {
            self.fill(&done, &mut buf[done.at..done.at + done.len])?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::image::qcow2::map::OFLAG_ZERO;
    use crate::image::qcow2::test_support::{files, guest, opened, pattern, read, Img};

    #[test]
    fn data_zero_and_unallocated_clusters_read_as_qemu_reads_them() {
        let mut img = Img::new(9, 64 << 10, false);
        img.l2(0, img.data(), 0);
        img.l2(1, (5 * 512) | OFLAG_ZERO, 0); // zero, preallocated
        img.l2(2, OFLAG_ZERO, 0); // zero
        img.l2(4, img.data(), 0); // the same host cluster again
        let g = guest(&img);
        assert_eq!(g.len(), 64 << 10);
        let all = read(&g, 0, 64 << 10).unwrap();
        let want: Vec<u8> = (0..512).map(pattern).collect();
        assert_eq!(all[..512], want[..]);
        assert!(all[512..2048].iter().all(|&b| b == 0));
        assert_eq!(all[2048..2560], want[..]);
        assert!(all[2560..].iter().all(|&b| b == 0));
        // Unaligned, across clusters.
        assert_eq!(read(&g, 500, 30).unwrap()[..12], want[500..]);
        assert!(read(&g, (64 << 10) - 10, 11).is_err());
        let c = opened(&files(&img)).container;
        assert_eq!(c.version, "3");
        assert_eq!(c.unit_bytes, Some(512));
        assert_eq!(c.virtual_size, 64 << 10);
        assert_eq!(c.compression.as_deref(), Some("zlib"));
    }
}
