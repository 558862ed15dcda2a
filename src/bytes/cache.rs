//! A device read once per block for a whole run: the layer probes of a
//! region each ask for a few sectors at fixed offsets (a superblock, a
//! label, a magic), often the same ones, and on a device opened with
//! O_DIRECT every one of those asks would be its own trip to the disk.
//! Reads go through aligned [`BLOCK`]s kept in memory, the missing blocks
//! of one ask fetched in one read, as libblkid's probe buffers do
//! (util-linux libblkid/src/probe.c `blkid_probe_get_buffer`, which keeps
//! every area read for the probe's life).

use super::ReadAt;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;

/// The unit read and kept: 128 KiB covers every fixed-offset header at a
/// region's start (LVM labels, md 1.1/1.2, LUKS, bcache, ext, XFS,
/// btrfs at 64 KiB, swap, FAT, NTFS, exFAT, BlueStore, ISO 9660, ZFS
/// label 0), each of ZFS's other labels' two probes (the nvlist at
/// +16 KiB, the checksum tail 112 KiB on) on a region aligned to it, and
/// an md 1.0/0.90 superblock near the end; and costs a disk little more
/// than one sector does.
pub const BLOCK: u64 = 128 << 10;

/// The most bytes kept per source. Past it the blocks kept are dropped
/// and the run goes on reading; a probe never needs more than a few MiB
/// of one device.
const KEPT_MAX: u64 = 32 << 20;

/// An ask larger than this is read straight through, uncached: a bulk
/// read (an empty partition's first MiB, a table of clusters) is read
/// once and would only push out the small blocks worth keeping.
const ASK_MAX: u64 = 1 << 20;

/// `inner` read through blocks kept for the run.
pub struct BlockCache<R: ReadAt + ?Sized> {
    /// Runs of blocks read together, by their first block.
    kept: RefCell<BTreeMap<u64, Run>>,
    inner: R,
}

/// Blocks read in one read, in a buffer whose bytes start on a page, so
/// a device opened with O_DIRECT reads straight into it.
struct Run {
    buf: Vec<u8>,
    skip: usize,
    len: usize,
}

/// A page: what O_DIRECT buffers are aligned to.
const PAGE: usize = 4096;

/// The most buffers kept for reuse, and the largest one kept.
const POOL_MAX: usize = 64;
const POOL_BUF_MAX: usize = 4 * BLOCK as usize + PAGE;

/// Buffers of runs dropped with their cache, for the next target's: a
/// new one is zeroed before it is read into, 128 KiB a read, which cost
/// a check of many disks more than any other work it did. Shared by the
/// threads: runs are read ahead in one and dropped in another.
static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

impl Run {
    fn new(len: usize) -> Run {
        let reused = POOL.lock().ok().and_then(|mut p| p.pop());
        // A new buffer comes zeroed from calloc, which need not clear
        // memory fresh from the kernel (resize would write every byte).
        let buf = match reused {
            Some(b) if b.len() >= len + PAGE => b,
            _ => vec![0; len + PAGE],
        };
        let skip = buf.as_ptr().align_offset(PAGE).min(PAGE);
        Run { buf, skip, len }
    }
    fn bytes(&self) -> &[u8] {
        &self.buf[self.skip..self.skip + self.len]
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.skip..self.skip + self.len]
    }
    fn blocks(&self) -> u64 {
        (self.len as u64).div_ceil(BLOCK)
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        if buf.len() <= POOL_BUF_MAX {
            if let Ok(mut p) = POOL.lock() {
                if p.len() < POOL_MAX {
                    p.push(buf);
                }
            }
        }
    }
}

impl<R: ReadAt> BlockCache<R> {
    pub fn new(inner: R) -> Self {
        BlockCache {
            kept: RefCell::new(BTreeMap::new()),
            inner,
        }
    }

    /// The source read through.
    pub fn inner(&self) -> &R {
        &self.inner
    }

    /// Bring the blocks holding `spans` (offset, length) into the cache
    /// before they are asked for: blocks that touch one another are read
    /// in one read, where asked one by one each would be a read of its
    /// own. A span that cannot be read is left to its ask.
    pub fn prefetch(&self, spans: &[(u64, u64)]) {
        let len = self.inner.len();
        let mut blocks: Vec<(u64, u64)> = spans
            .iter()
            .filter(|&&(at, n)| n > 0 && at.checked_add(n).is_some_and(|end| end <= len))
            .map(|&(at, n)| (at / BLOCK, (at + n - 1) / BLOCK))
            .collect();
        blocks.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (first, last) in blocks {
            match merged.last_mut() {
                Some(m) if first <= m.1 + 1 => m.1 = m.1.max(last),
                _ => merged.push((first, last)),
            }
        }
        // At most ASK_MAX a read, as an ask is kept.
        let most = (ASK_MAX / BLOCK).max(1);
        for (first, last) in merged {
            for from in (first..=last).step_by(most as usize) {
                let _ = self.fetch(from, last.min(from + most - 1));
            }
        }
    }
}

impl<R: ReadAt + ?Sized> BlockCache<R> {
    /// The kept run that holds block `b`, with `b`'s place in it.
    fn holding(kept: &BTreeMap<u64, Run>, b: u64) -> Option<(&Run, usize)> {
        let (first, run) = kept.range(..=b).next_back()?;
        let at = ((b - first) * BLOCK) as usize;
        (b - first < run.blocks()).then_some((run, at))
    }

    fn is_kept(&self, b: u64) -> bool {
        Self::holding(&self.kept.borrow(), b).is_some()
    }

    /// Fetch the blocks `first..=last` that are not kept yet, each run of
    /// missing blocks in one read of the inner source.
    fn fetch(&self, first: u64, last: u64) -> io::Result<()> {
        let len = self.inner.len();
        let mut b = first;
        while b <= last {
            if self.is_kept(b) {
                b += 1;
                continue;
            }
            let mut end = b;
            while end < last && !self.is_kept(end + 1) {
                end += 1;
            }
            let from = b * BLOCK;
            let to = ((end + 1) * BLOCK).min(len);
            let mut run = Run::new((to - from) as usize);
            self.inner.read_exact_at(run.bytes_mut(), from)?;
            self.keep(b, run);
            b = end + 1;
        }
        Ok(())
    }

    /// Keep `run`, read from block `first` on.
    fn keep(&self, first: u64, run: Run) {
        let mut kept = self.kept.borrow_mut();
        let held: u64 = kept.values().map(|r| r.len as u64).sum();
        if held + run.len as u64 > KEPT_MAX {
            kept.clear();
        }
        kept.insert(first, run);
    }

    /// Copy `buf.len()` bytes at `offset` out of the kept blocks.
    fn copy_out(&self, buf: &mut [u8], offset: u64) -> Option<()> {
        let kept = self.kept.borrow();
        let mut done = 0usize;
        while done < buf.len() {
            let at = offset + done as u64;
            let (run, start) = Self::holding(&kept, at / BLOCK)?;
            let inside = start + (at % BLOCK) as usize;
            let n = (run.len.checked_sub(inside)?).min(buf.len() - done);
            if n == 0 {
                return None;
            }
            buf[done..done + n].copy_from_slice(&run.bytes()[inside..inside + n]);
            done += n;
        }
        Some(())
    }
}

impl<R: ReadAt + ?Sized> ReadAt for BlockCache<R> {
    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        super::in_bounds(self.len(), offset, buf.len())?;
        if buf.is_empty() {
            return Ok(());
        }
        let last_byte = offset + buf.len() as u64 - 1;
        if buf.len() as u64 > ASK_MAX {
            return self.inner.read_exact_at(buf, offset);
        }
        // A block that cannot be read whole (a bad sector in it, but not
        // in the bytes asked) must not fail an ask the device answers.
        let fetched = self.fetch(offset / BLOCK, last_byte / BLOCK);
        match fetched.ok().and_then(|()| self.copy_out(buf, offset)) {
            Some(()) => Ok(()),
            None => self.inner.read_exact_at(buf, offset),
        }
    }

    fn forget(&self) {
        self.kept.borrow_mut().clear();
    }

    fn file_offset(&self, at: u64) -> Option<u64> {
        self.inner.file_offset(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A source that counts the reads that reach it.
    struct Counted {
        bytes: Vec<u8>,
        reads: Cell<u32>,
        bad: Option<u64>,
    }

    impl ReadAt for Counted {
        fn len(&self) -> u64 {
            self.bytes.len() as u64
        }
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            self.reads.set(self.reads.get() + 1);
            let end = offset + buf.len() as u64;
            if self.bad.is_some_and(|b| (offset..end).contains(&b)) {
                return Err(io::ErrorKind::Other.into());
            }
            self.bytes.read_exact_at(buf, offset)
        }
    }

    fn source(len: usize, bad: Option<u64>) -> BlockCache<Counted> {
        BlockCache::new(Counted {
            bytes: (0..len).map(|i| (i % 251) as u8).collect(),
            reads: Cell::new(0),
            bad,
        })
    }

    fn read(c: &BlockCache<Counted>, at: u64, n: usize) -> Vec<u8> {
        let mut b = vec![0; n];
        c.read_exact_at(&mut b, at).unwrap();
        b
    }

    fn want(at: u64, n: usize) -> Vec<u8> {
        (at..at + n as u64).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn small_asks_in_one_block_read_it_once() {
        let b = BLOCK;
        let c = source(3 * b as usize, None);
        for (at, n) in [(0, 512), (512, 512), (1024, 16384), (4096, 4), (b - 6, 12)] {
            assert_eq!(read(&c, at, n), want(at, n));
        }
        // Blocks 0 and 1; the last ask straddled them.
        assert_eq!(c.inner.reads.get(), 2);
        assert_eq!(read(&c, b + 5000, 100), want(b + 5000, 100));
        assert_eq!(c.inner.reads.get(), 2);
    }

    #[test]
    fn the_last_block_is_short_and_past_the_end_is_refused() {
        let len = 2 * BLOCK + 4000;
        let c = source(len as usize, None);
        assert_eq!(read(&c, len - 10, 10), want(len - 10, 10));
        assert!(c.read_exact_at(&mut [0; 11], len - 10).is_err());
        assert_eq!(read(&c, 2 * BLOCK, 4000), want(2 * BLOCK, 4000));
        assert_eq!(c.inner.reads.get(), 1);
    }

    #[test]
    fn missing_blocks_of_one_ask_are_one_read() {
        let c = source(8 * BLOCK as usize, None);
        read(&c, 0, 10);
        assert_eq!(
            read(&c, 10, 3 * BLOCK as usize),
            want(10, 3 * BLOCK as usize)
        );
        assert_eq!(c.inner.reads.get(), 2);
    }

    #[test]
    fn blocks_prefetched_together_are_read_together() {
        let c = source(8 * BLOCK as usize, None);
        let b = BLOCK;
        // Blocks 1-2 (one span across them) and 3 touch: one read; 6 alone.
        c.prefetch(&[(b + 5, b), (3 * b, 10), (6 * b + 1, 1), (0, 0), (9 * b, 1)]);
        assert_eq!(c.inner.reads.get(), 2);
        assert_eq!(read(&c, b, 3 * b as usize), want(b, 3 * b as usize));
        assert_eq!(read(&c, 6 * b + 7, 9), want(6 * b + 7, 9));
        assert_eq!(c.inner.reads.get(), 2);
        c.prefetch(&[(2 * b, 2 * b)]);
        assert_eq!(c.inner.reads.get(), 2, "nothing read twice");
    }

    #[test]
    fn a_prefetch_that_fails_leaves_the_asks_to_read() {
        let c = source(2 * BLOCK as usize, Some(BLOCK - 4000));
        c.prefetch(&[(0, 2 * BLOCK)]);
        assert_eq!(read(&c, 0, 512), want(0, 512));
    }

    #[test]
    fn a_bad_sector_outside_the_ask_does_not_fail_it() {
        let c = source(2 * BLOCK as usize, Some(BLOCK - 4000));
        assert_eq!(read(&c, 0, 512), want(0, 512));
        assert!(c.read_exact_at(&mut [0; 8], BLOCK - 4004).is_err());
    }

    #[test]
    fn bulk_asks_go_straight_through() {
        let c = source(3 * ASK_MAX as usize, None);
        assert_eq!(
            read(&c, 5, 2 * ASK_MAX as usize),
            want(5, 2 * ASK_MAX as usize)
        );
        assert!(c.kept.borrow().is_empty());
    }

    #[test]
    fn runs_start_on_a_page() {
        let r = Run::new(BLOCK as usize);
        assert_eq!(r.bytes().as_ptr() as usize % PAGE, 0);
        assert_eq!(r.bytes().len(), BLOCK as usize);
    }
}
