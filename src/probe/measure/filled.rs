//! Does reading a file reach its device? A probe times reads; a read of a
//! hole (a sparse file), of an unwritten extent (fallocate) or of data
//! still waiting in the page cache for its place on the device (delayed
//! allocation) is answered without the device, and the probe would time
//! the kernel instead (1.6 M IOPS of zero pages). Such a file is refused
//! in one line naming the share, and what to do instead. Pure: it takes
//! the file's size, its allocated bytes (st_blocks) and its extents
//! (`sys::fiemap`, None where the filesystem has no FIEMAP).

use crate::names::shell_word;
use crate::sys::{ExtentFlags, Map};
use crate::units::{human, MIB};
use std::path::Path;

/// What a probe tolerates of each: st_blocks counts whole blocks and
/// metadata, so a filled file may differ from its size by a little.
pub const SLACK: u64 = MIB;

/// The most extents read: a file more fragmented than that is judged on
/// its first ones.
pub const MAX_EXTENTS: usize = 1 << 16;

/// How a file's bytes stand, as far as known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shares {
    pub len: u64,
    /// Bytes not allocated at all (size less st_blocks × 512).
    pub holes: u64,
    /// Bytes in unwritten extents.
    pub unwritten: u64,
    /// Bytes in delayed-allocation extents.
    pub delalloc: u64,
    /// No byte of it holds data (every allocated byte is unwritten), when
    /// that is known: then writing over it loses nothing.
    pub empty: bool,
}

impl Shares {
    /// The shares of a file of `len` bytes with `allocated` bytes (st_blocks
    /// × 512) and, where the filesystem maps extents, `map`.
    pub fn of(len: u64, allocated: u64, map: Option<&Map>) -> Shares {
        let mut s = Shares {
            len,
            holes: len.saturating_sub(allocated),
            empty: allocated == 0,
            ..Shares::default()
        };
        let Some(m) = map else { return s };
        let mut data = 0u64;
        for e in &m.extents {
            let from = e.logical.min(len);
            let n = e.end().min(len).saturating_sub(from);
            if e.flags.contains(ExtentFlags::UNWRITTEN) {
                s.unwritten = s.unwritten.saturating_add(n);
            } else if e.flags.contains(ExtentFlags::DELALLOC) {
                s.delalloc = s.delalloc.saturating_add(n);
            } else {
                data = data.saturating_add(n);
            }
        }
        s.empty = m.complete && data == 0 && s.delalloc == 0;
        s
    }

    /// Why `path` cannot be probed, in one line (without the path, which
    /// the caller puts first), or None when its reads reach the device.
    pub fn refusal(&self, path: &Path) -> Option<String> {
        let of = |n: u64| format!("{} of its {}", human(n), human(self.len));
        let scratch = "give a directory to probe a filled scratch file there";
        let remedy = if self.empty {
            format!("write it first ({}) or {scratch}", self.fill_command(path))
        } else {
            scratch.to_string()
        };
        let zeros = "reads of it return zeros without reaching the device";
        if self.holes > SLACK {
            return Some(format!(
                "{} is not allocated (a sparse file, holes): {zeros}; {remedy}",
                of(self.holes)
            ));
        }
        if self.unwritten > SLACK {
            return Some(format!(
                "{} is allocated but never written (unwritten extents, FIEMAP): {zeros}; {remedy}",
                of(self.unwritten)
            ));
        }
        if self.delalloc > SLACK {
            return Some(format!(
                "{} is not on the device yet (delayed allocation, FIEMAP): it is still in the page cache; flush it first (sync {}) or {scratch}",
                of(self.delalloc),
                shell_word(&path.display().to_string())
            ));
        }
        None
    }

    /// The dd that fills the whole file with random bytes, in place and to
    /// the device (offered only when nothing in it is data).
    fn fill_command(&self, path: &Path) -> String {
        let of = shell_word(&path.display().to_string());
        // count_bytes: an odd size is filled to its last byte, not past it.
        let (count, iflag) = if self.len % MIB == 0 {
            (self.len / MIB, "fullblock")
        } else {
            (self.len, "fullblock,count_bytes")
        };
        format!("dd if=/dev/urandom of={of} bs=1M count={count} iflag={iflag} conv=notrunc,fsync")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::Extent;

    const GIB: u64 = 1 << 30;

    fn map(extents: &[(u64, u64, u32)], complete: bool) -> Map {
        Map {
            extents: extents
                .iter()
                .map(|&(logical, length, f)| Extent {
                    logical,
                    physical: 0,
                    length,
                    flags: ExtentFlags(f),
                })
                .collect(),
            complete,
        }
    }

    #[test]
    fn a_fallocated_file_is_refused_with_the_dd_that_fills_it() {
        let m = map(&[(0, GIB, 0x800 | 0x1)], true);
        let s = Shares::of(GIB, GIB, Some(&m));
        assert_eq!((s.unwritten, s.holes, s.empty), (GIB, 0, true));
        let why = s.refusal(Path::new("f.img")).unwrap();
        assert_eq!(
            why,
            "1 GiB of its 1 GiB is allocated but never written (unwritten extents, FIEMAP): reads of it return zeros without reaching the device; write it first (dd if=/dev/urandom of=f.img bs=1M count=1024 iflag=fullblock conv=notrunc,fsync) or give a directory to probe a filled scratch file there"
        );
    }

    #[test]
    fn data_in_it_is_never_written_over() {
        // Half written, half fallocated: no dd that would lose the half.
        let m = map(&[(0, GIB / 2, 0), (GIB / 2, GIB / 2, 0x801)], true);
        let why = Shares::of(GIB, GIB, Some(&m))
            .refusal(Path::new("my disk.img"))
            .unwrap();
        assert!(why.starts_with("512 MiB of its 1 GiB is allocated but never written"));
        assert!(!why.contains("dd "), "{why}");
        assert!(why.ends_with("; give a directory to probe a filled scratch file there"));
        // A map cut short cannot say the rest holds nothing.
        let m = map(&[(0, GIB / 2, 0x800)], false);
        let s = Shares::of(GIB, GIB, Some(&m));
        assert!(!s.empty);
    }

    #[test]
    fn a_sparse_file_is_refused_and_an_empty_one_gets_its_dd() {
        let s = Shares::of(GIB, 0, None);
        let why = s.refusal(Path::new("/tmp/a b.img")).unwrap();
        assert!(
            why.starts_with("1 GiB of its 1 GiB is not allocated (a sparse file, holes): reads of it return zeros without reaching the device; write it first (dd if=/dev/urandom of='/tmp/a b.img' bs=1M count=1024 "),
            "{why}"
        );
        let s = Shares::of(GIB + 512, GIB / 2 + 512, None);
        let why = s.refusal(Path::new("x")).unwrap();
        assert!(
            why.starts_with("512 MiB of its ~1.0 GiB is not allocated"),
            "{why}"
        );
        assert!(!why.contains("dd "));
        // An odd size is filled to its last byte.
        let s = Shares::of(3 * MIB + 512, 0, None);
        assert!(s
            .refusal(Path::new("x"))
            .unwrap()
            .contains("bs=1M count=3146240 iflag=fullblock,count_bytes conv=notrunc,fsync"));
    }

    #[test]
    fn delayed_allocation_is_refused_with_sync() {
        let m = map(&[(0, 8 * MIB, 0x4 | 0x2 | 0x1)], true);
        let s = Shares::of(8 * MIB, 8 * MIB, Some(&m));
        let why = s.refusal(Path::new("new.img")).unwrap();
        assert_eq!(
            why,
            "8 MiB of its 8 MiB is not on the device yet (delayed allocation, FIEMAP): it is still in the page cache; flush it first (sync new.img) or give a directory to probe a filled scratch file there"
        );
    }

    #[test]
    fn a_filled_file_is_probed() {
        let m = map(&[(0, GIB, 0x1)], true);
        assert_eq!(Shares::of(GIB, GIB, Some(&m)).refusal(Path::new("x")), None);
        // Without FIEMAP, st_blocks alone: allocated is enough.
        assert_eq!(Shares::of(GIB, GIB, None).refusal(Path::new("x")), None);
        // A little of each, within the slack; extents past the end count
        // only up to it (fallocate --keep-size).
        let m = map(&[(0, GIB - MIB, 0), (GIB - MIB, 2 * GIB, 0x801)], true);
        assert_eq!(Shares::of(GIB, GIB, Some(&m)).refusal(Path::new("x")), None);
    }
}
