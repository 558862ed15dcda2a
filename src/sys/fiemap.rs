//! Where a file's bytes are: FS_IOC_FIEMAP (include/uapi/linux/fiemap.h,
//! Documentation/filesystems/fiemap.rst), asked in bounded batches for a
//! byte range, each extent with its logical and physical offset, its
//! length and its flags. Never with FIEMAP_FLAG_SYNC: asking never forces
//! a writeback, so a file still in the page cache shows its delayed
//! allocation as it is. The probe reads the flags (an unwritten extent
//! reads as zeros without reaching the device); the physical offsets are
//! there for whoever maps a file onto its device.

use crate::bytes::ParseError;
use rustix::io::Errno;
use rustix::ioctl::{ioctl, Opcode, Updater};
use std::fs::File;
use std::path::{Path, PathBuf};

/// `_IOWR('f', 11, struct fiemap)`, the header being 32 bytes.
const FS_IOC_FIEMAP: Opcode = 0xC020_660B;

/// `struct fiemap` before its extents: fm_start, fm_length (u64),
/// fm_flags, fm_mapped_extents, fm_extent_count, fm_reserved (u32).
pub const HEADER_BYTES: usize = 32;
/// `struct fiemap_extent`: fe_logical, fe_physical, fe_length,
/// fe_reserved64[2] (u64), fe_flags, fe_reserved[3] (u32).
pub const EXTENT_BYTES: usize = 56;
/// Extents asked for per call.
pub const BATCH: usize = 64;

/// The flags of one extent (`FIEMAP_EXTENT_*`), as the kernel sets them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtentFlags(pub u32);

impl ExtentFlags {
    /// The last extent of the file.
    pub const LAST: ExtentFlags = ExtentFlags(0x1);
    /// Its place on the device is not known (yet).
    pub const UNKNOWN: ExtentFlags = ExtentFlags(0x2);
    /// Delayed allocation: in the page cache, no place on the device yet
    /// (sets UNKNOWN too).
    pub const DELALLOC: ExtentFlags = ExtentFlags(0x4);
    /// Stored encoded (compressed): its physical bytes are not its data.
    pub const ENCODED: ExtentFlags = ExtentFlags(0x8);
    /// Stored encrypted.
    pub const DATA_ENCRYPTED: ExtentFlags = ExtentFlags(0x80);
    /// Its offsets are not block-aligned.
    pub const NOT_ALIGNED: ExtentFlags = ExtentFlags(0x100);
    /// Stored in a metadata block (sets NOT_ALIGNED too).
    pub const DATA_INLINE: ExtentFlags = ExtentFlags(0x200);
    /// Packed with other files' tails (sets NOT_ALIGNED too).
    pub const DATA_TAIL: ExtentFlags = ExtentFlags(0x400);
    /// Allocated but never written (fallocate): it reads as zeros, and
    /// such a read never reaches the device.
    pub const UNWRITTEN: ExtentFlags = ExtentFlags(0x800);
    /// Merged from several by the filesystem for this answer.
    pub const MERGED: ExtentFlags = ExtentFlags(0x1000);
    /// Shared with another file (a reflink, a snapshot).
    pub const SHARED: ExtentFlags = ExtentFlags(0x2000);

    /// Every flag with its name, in the kernel's order.
    pub const NAMED: [(ExtentFlags, &'static str); 11] = [
        (Self::LAST, "last"),
        (Self::UNKNOWN, "unknown"),
        (Self::DELALLOC, "delalloc"),
        (Self::ENCODED, "encoded"),
        (Self::DATA_ENCRYPTED, "data-encrypted"),
        (Self::NOT_ALIGNED, "not-aligned"),
        (Self::DATA_INLINE, "data-inline"),
        (Self::DATA_TAIL, "data-tail"),
        (Self::UNWRITTEN, "unwritten"),
        (Self::MERGED, "merged"),
        (Self::SHARED, "shared"),
    ];

    /// Every flag of `other` is set here.
    pub fn contains(self, other: ExtentFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The names of the flags set (bits this list does not know are left
    /// out).
    pub fn names(self) -> Vec<&'static str> {
        Self::NAMED
            .iter()
            .filter(|(f, _)| self.contains(*f))
            .map(|(_, n)| *n)
            .collect()
    }
}

/// One extent: `length` bytes of the file from `logical` lie at
/// `physical` on the filesystem's device (0 and meaningless when
/// `flags` has UNKNOWN).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Extent {
    pub logical: u64,
    pub physical: u64,
    pub length: u64,
    pub flags: ExtentFlags,
}

impl Extent {
    /// The byte after its last.
    pub fn end(&self) -> u64 {
        self.logical.saturating_add(self.length)
    }
}

/// The extents of a byte range, in file order. Bytes of the range no
/// extent covers are holes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Map {
    pub extents: Vec<Extent>,
    /// The whole range was mapped; false when the map stopped at the most
    /// extents asked for.
    pub complete: bool,
}

/// Why a file's extents could not be had.
#[derive(Debug, thiserror::Error)]
pub enum FiemapError {
    /// The filesystem has no FIEMAP (tmpfs, procfs, most FUSE).
    #[error("{}: its filesystem does not map extents (no FIEMAP)", path.display())]
    Unsupported { path: PathBuf },
    #[error("FIEMAP of {}: {source}", path.display())]
    Failed {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The kernel's answer did not hold together.
    #[error("FIEMAP of {}: {source}", path.display())]
    Bad { path: PathBuf, source: ParseError },
}

/// The buffer one call fills: the header and room for [`BATCH`] extents,
/// aligned for the kernel's u64 fields.
#[repr(C, align(8))]
struct Buffer([u8; HEADER_BYTES + EXTENT_BYTES * BATCH]);

/// The header of a request for the extents of `[start, start + len)`,
/// with room for `count` of them and no flags (no FIEMAP_FLAG_SYNC).
pub fn request(start: u64, len: u64, count: u32) -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h[0..8].copy_from_slice(&start.to_ne_bytes());
    h[8..16].copy_from_slice(&len.to_ne_bytes());
    h[24..28].copy_from_slice(&count.to_ne_bytes());
    h
}

fn ne_u32(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

fn ne_u64(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

/// The extents a filled buffer holds (pure: the bytes the kernel wrote,
/// in this machine's byte order). Its count (`fm_mapped_extents`) must
/// fit both the room asked for (`fm_extent_count`) and the buffer, and
/// every extent must end within u64.
pub fn parse(buf: &[u8]) -> Result<Vec<Extent>, ParseError> {
    let bad = |at: usize, m: String| ParseError::new("FIEMAP", at as u64, m);
    if buf.len() < HEADER_BYTES {
        return Err(bad(0, format!("{} bytes: no header", buf.len())));
    }
    let mapped = ne_u32(buf, 20) as usize;
    let room = ne_u32(buf, 24) as usize;
    let fits = (buf.len() - HEADER_BYTES) / EXTENT_BYTES;
    if mapped > room.min(fits) {
        return Err(bad(
            20,
            format!("{mapped} extents mapped, room for {}", room.min(fits)),
        ));
    }
    (0..mapped)
        .map(|i| {
            let at = HEADER_BYTES + i * EXTENT_BYTES;
            let e = Extent {
                logical: ne_u64(buf, at),
                physical: ne_u64(buf, at + 8),
                length: ne_u64(buf, at + 16),
                flags: ExtentFlags(ne_u32(buf, at + 40)),
            };
            if e.logical.checked_add(e.length).is_none() {
                return Err(bad(at, format!("extent {i} ends past 2^64 bytes")));
            }
            Ok(e)
        })
        .collect()
}

/// The extents of `file` (named `path` in errors) over `[start, start +
/// len)`, at most `max_extents` of them, [`BATCH`] per call. An extent
/// overlapping the range is returned whole, as the kernel gives it. Each
/// call must end further on than the one before, so a filesystem that
/// answers badly ends the walk with an error, never a longer loop.
pub fn extents(
    file: &File,
    path: &Path,
    start: u64,
    len: u64,
    max_extents: usize,
) -> Result<Map, FiemapError> {
    let end = start.saturating_add(len);
    let mut map = Map::default();
    let mut at = start;
    let mut buf = Box::new(Buffer([0; HEADER_BYTES + EXTENT_BYTES * BATCH]));
    loop {
        if at >= end {
            map.complete = true;
            return Ok(map);
        }
        if map.extents.len() >= max_extents {
            return Ok(map);
        }
        buf.0.fill(0);
        buf.0[..HEADER_BYTES].copy_from_slice(&request(at, end - at, BATCH as u32));
        // SAFETY: FS_IOC_FIEMAP reads the header and writes at most
        // fm_extent_count (BATCH) extents after it, which the buffer has
        // room for, and fm_mapped_extents into the header.
        let called = unsafe { ioctl(file, Updater::<FS_IOC_FIEMAP, Buffer>::new(&mut buf)) };
        if let Err(e) = called {
            return Err(match e {
                Errno::OPNOTSUPP | Errno::NOTTY => FiemapError::Unsupported { path: path.into() },
                e => FiemapError::Failed {
                    path: path.into(),
                    source: e.into(),
                },
            });
        }
        let batch = parse(&buf.0).map_err(|source| FiemapError::Bad {
            path: path.into(),
            source,
        })?;
        let Some(last) = batch.last().copied() else {
            // No extent from `at` on: the rest of the range is a hole.
            map.complete = true;
            return Ok(map);
        };
        if last.end() <= at {
            return Err(FiemapError::Bad {
                path: path.into(),
                source: ParseError::new(
                    "FIEMAP",
                    at,
                    format!(
                        "asked from byte {at}, the last extent ends at {}",
                        last.end()
                    ),
                ),
            });
        }
        let room = max_extents - map.extents.len();
        map.extents.extend(batch.into_iter().take(room));
        if last.flags.contains(ExtentFlags::LAST) && map.extents.last() == Some(&last) {
            map.complete = true;
            return Ok(map);
        }
        at = last.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer as the kernel fills it: the request's header, the count
    /// mapped, and each (logical, physical, length, flags).
    fn answer(room: u32, extents: &[(u64, u64, u64, u32)]) -> Vec<u8> {
        let mut b = request(0, u64::MAX, room).to_vec();
        b[20..24].copy_from_slice(&(extents.len() as u32).to_ne_bytes());
        for &(l, p, n, f) in extents {
            let mut e = [0u8; EXTENT_BYTES];
            e[0..8].copy_from_slice(&l.to_ne_bytes());
            e[8..16].copy_from_slice(&p.to_ne_bytes());
            e[16..24].copy_from_slice(&n.to_ne_bytes());
            // fe_reserved64 stays zero; a stray value there is ignored.
            e[24..32].copy_from_slice(&7u64.to_ne_bytes());
            e[40..44].copy_from_slice(&f.to_ne_bytes());
            b.extend_from_slice(&e);
        }
        b.resize(HEADER_BYTES + room as usize * EXTENT_BYTES, 0xee);
        b
    }

    #[test]
    fn extents_are_read_with_their_flags() {
        let b = answer(
            4,
            &[
                (0, 1 << 20, 4096, 0),
                (4096, 0, 8192, 0x4 | 0x2),
                (1 << 20, 9 << 20, 1 << 20, 0x800 | 0x1),
            ],
        );
        let got = parse(&b).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[0],
            Extent {
                logical: 0,
                physical: 1 << 20,
                length: 4096,
                flags: ExtentFlags(0)
            }
        );
        assert!(got[1].flags.contains(ExtentFlags::DELALLOC));
        assert_eq!(got[1].flags.names(), ["unknown", "delalloc"]);
        assert!(got[2].flags.contains(ExtentFlags::UNWRITTEN));
        assert!(got[2].flags.contains(ExtentFlags::LAST));
        assert_eq!(got[2].end(), 2 << 20);
        assert!(!got[0].flags.contains(ExtentFlags::LAST));
    }

    #[test]
    fn a_count_beyond_the_room_or_the_buffer_is_refused() {
        let mut b = answer(2, &[(0, 0, 4096, 0), (4096, 0, 4096, 1)]);
        b[20..24].copy_from_slice(&3u32.to_ne_bytes());
        let e = parse(&b).unwrap_err();
        assert!(
            e.to_string().contains("3 extents mapped, room for 2"),
            "{e}"
        );
        // Room claimed for more than the bytes given.
        let mut b = answer(1, &[(0, 0, 4096, 0)]);
        b[24..28].copy_from_slice(&100u32.to_ne_bytes());
        b[20..24].copy_from_slice(&2u32.to_ne_bytes());
        assert!(parse(&b).is_err());
        assert!(parse(&b[..10]).is_err());
        assert!(parse(&answer(0, &[])).unwrap().is_empty());
    }

    #[test]
    fn an_extent_past_two_to_the_64_is_refused() {
        let b = answer(1, &[(u64::MAX - 10, 0, 4096, 1)]);
        assert!(parse(&b).is_err());
    }

    #[test]
    fn every_flag_has_the_kernels_value_and_a_name() {
        assert_eq!(
            ExtentFlags(u32::MAX).names().len(),
            ExtentFlags::NAMED.len()
        );
        assert_eq!(ExtentFlags::UNWRITTEN.0, 0x800);
        assert_eq!(ExtentFlags::SHARED.0, 0x2000);
        assert_eq!(ExtentFlags::DATA_ENCRYPTED.0, 0x80);
    }

    /// The header is the kernel's: the opcode's size field says 32 bytes.
    #[test]
    fn the_request_is_the_kernels_header() {
        assert_eq!((FS_IOC_FIEMAP >> 16) & 0x3fff, HEADER_BYTES as Opcode);
        let h = request(512, 4096, 64);
        assert_eq!(ne_u64(&h, 0), 512);
        assert_eq!(ne_u64(&h, 8), 4096);
        assert_eq!(ne_u32(&h, 16), 0, "no FIEMAP_FLAG_SYNC");
        assert_eq!(ne_u32(&h, 24), 64);
    }

    #[test]
    fn a_written_file_maps_or_says_its_filesystem_cannot() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut f = File::create(&p).unwrap();
        f.write_all(&vec![1u8; 64 << 10]).unwrap();
        f.sync_all().unwrap();
        let f = File::open(&p).unwrap();
        match extents(&f, &p, 0, 64 << 10, 1000) {
            Ok(m) => {
                assert!(m.complete);
                let covered: u64 = m.extents.iter().map(|e| e.length).sum();
                assert!(covered >= 64 << 10, "{m:?}");
            }
            Err(FiemapError::Unsupported { .. }) => {}
            Err(e) => panic!("{e}"),
        }
        let e = extents(
            &File::open("/proc/self/stat").unwrap(),
            Path::new("x"),
            0,
            10,
            1,
        );
        assert!(matches!(e, Err(FiemapError::Unsupported { .. })), "{e:?}");
    }
}
