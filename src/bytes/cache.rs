//! A device read once per block for a whole run: the layer probes of a
//! region each ask for a few sectors at fixed offsets (a superblock, a
//! label, a magic), often the same ones, and on a device opened with
//! O_DIRECT every one of those asks would be its own trip to the disk.
//! Reads go through aligned [`BLOCK`]s kept in memory, the missing blocks
//! of one ask fetched in one read, as libblkid's probe buffers do
//! (util-linux libblkid/src/probe.c `blkid_probe_get_buffer`, which keeps
//! every area read for the probe's life). What is known to be wanted
//! before it is asked (a disk's table, every partition's first block, the
//! few bytes each format looks at far from it) is read ahead with
//! [`BlockCache::prefetch`], all of it in flight at once
//! ([`ReadAt::read_many`]), the far bytes as single pages.

use super::ReadAt;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;

/// The unit read and kept: 128 KiB covers every fixed-offset header at a
/// region's start (LVM labels, md 1.1/1.2, LUKS, bcache, ext, XFS,
/// btrfs at 64 KiB, swap, FAT, NTFS, exFAT, BlueStore, ISO 9660, ZFS
/// label 0), each of ZFS's other labels' two probes (the nvlist at
/// +16 KiB, the checksum tail 112 KiB on) on a region aligned to it, and
/// an md 1.0/0.90 superblock near the end; and costs a disk little more
/// than one sector does. What is read ahead as pages is kept as pages: an
/// ask beside them reads its block around them.
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
    /// Runs of bytes read together, by their first byte's offset.
    kept: RefCell<BTreeMap<u64, Run>>,
    /// The bytes of the runs kept.
    held: Cell<u64>,
    inner: R,
}

/// Bytes read in one read (whole blocks, or a probe's pages), in a
/// buffer whose bytes start on a page, so a device opened with O_DIRECT
/// reads straight into it.
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
        let need = len + PAGE;
        // A kept buffer of about the size asked: a page's run does not
        // hold a block's buffer, nor a block's run drop a page's.
        let fits = |b: &Vec<u8>| (need..=2 * need).contains(&b.len());
        let reused = POOL.lock().ok().and_then(|mut p| {
            let at = p.iter().rposition(fits)?;
            Some(p.swap_remove(at))
        });
        // A new buffer comes zeroed from calloc, which need not clear
        // memory fresh from the kernel (resize would write every byte).
        let buf = reused.unwrap_or_else(|| vec![0; need]);
        let skip = buf.as_ptr().align_offset(PAGE).min(PAGE);
        Run { buf, skip, len }
    }
    fn bytes(&self) -> &[u8] {
        &self.buf[self.skip..self.skip + self.len]
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.skip..self.skip + self.len]
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
            held: Cell::new(0),
            inner,
        }
    }

    /// The source read through.
    pub fn inner(&self) -> &R {
        &self.inner
    }

    /// Bring `blocks` and `pages` (offset, length) into the cache before
    /// they are asked for: each span of `blocks` as the [`BLOCK`]s that
    /// hold it (what an ask reads), each of `pages` as its pages alone (a
    /// probe's few bytes far from the blocks, which an ask would read a
    /// whole block for). Spans that touch one another are read in one
    /// read, where asked one by one each would be a read of its own. A
    /// span that cannot be read is left to its ask.
    pub fn prefetch(&self, blocks: &[(u64, u64)], pages: &[(u64, u64)]) {
        let len = self.inner.len();
        let fits =
            |&&(at, n): &&(u64, u64)| n > 0 && at.checked_add(n).is_some_and(|end| end <= len);
        let round = |unit: u64| {
            move |&(at, n): &(u64, u64)| (at / unit * unit, (at + n).div_ceil(unit) * unit)
        };
        let mut spans: Vec<(u64, u64)> = blocks
            .iter()
            .filter(fits)
            .map(round(BLOCK))
            .chain(pages.iter().filter(fits).map(round(PAGE as u64)))
            .collect();
        spans.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (from, to) in spans {
            match merged.last_mut() {
                Some(m) if from <= m.1 => m.1 = m.1.max(to),
                _ => merged.push((from, to)),
            }
        }
        // At most ASK_MAX a read, as an ask is kept; all in flight at once,
        // as many as fit beside what is kept (a table of thousands of
        // partitions leaves the rest to the asks).
        let mut room = KEPT_MAX.saturating_sub(self.held.get());
        let mut runs: Vec<(u64, u64, Run)> = Vec::new();
        let pieces = merged.into_iter().flat_map(|(from, to)| {
            (from..to)
                .step_by(ASK_MAX as usize)
                .map(move |at| (at, to.min(at + ASK_MAX).min(len)))
        });
        for (lo, hi) in pieces.filter_map(|(from, to)| self.missing(from, to)) {
            let Some(left) = room.checked_sub(hi - lo) else {
                break;
            };
            room = left;
            runs.push((lo, hi, Run::new((hi - lo) as usize)));
        }
        let mut reads: Vec<(u64, &mut [u8])> = runs
            .iter_mut()
            .map(|(lo, _, run)| (*lo, run.bytes_mut()))
            .collect();
        let done = self.inner.read_many(&mut reads);
        drop(reads);
        for ((lo, hi, run), ok) in runs.into_iter().zip(done) {
            if ok.is_ok() {
                self.keep(lo, hi, run);
            }
        }
    }
}

impl<R: ReadAt + ?Sized> BlockCache<R> {
    /// The kept run that holds byte `at`, with `at`'s place in it.
    fn holding(kept: &BTreeMap<u64, Run>, at: u64) -> Option<(&Run, usize)> {
        let (first, run) = kept.range(..=at).next_back()?;
        let inside = usize::try_from(at - first).ok()?;
        (inside < run.len).then_some((run, inside))
    }

    /// The bytes of `from..to` not kept yet, from the first missing byte
    /// to the last: None when all are kept.
    fn missing(&self, from: u64, to: u64) -> Option<(u64, u64)> {
        let kept = self.kept.borrow();
        let mut lo = from;
        while let Some((run, inside)) = Self::holding(&kept, lo).filter(|_| lo < to) {
            lo += (run.len - inside) as u64;
        }
        let mut hi = to;
        while let Some((_, inside)) = Self::holding(&kept, hi.wrapping_sub(1)).filter(|_| hi > lo) {
            hi -= inside as u64 + 1;
        }
        (lo < hi).then_some((lo, hi))
    }

    /// Fetch the bytes of `from..to` that are not kept yet in one read of
    /// the inner source, from the first missing byte to the last (a page
    /// kept between them is read again rather than split the read).
    fn fetch(&self, from: u64, to: u64) -> io::Result<()> {
        let Some((lo, hi)) = self.missing(from, to) else {
            return Ok(());
        };
        let mut run = Run::new((hi - lo) as usize);
        self.inner.read_exact_at(run.bytes_mut(), lo)?;
        self.keep(lo, hi, run);
        Ok(())
    }

    /// Keep `run`, the bytes `from..to`, in place of the runs inside it.
    fn keep(&self, from: u64, to: u64, run: Run) {
        let mut kept = self.kept.borrow_mut();
        let inside: Vec<u64> = kept.range(from..to).map(|(&at, _)| at).collect();
        let mut held = self.held.get();
        for at in inside {
            held = held.saturating_sub(kept.remove(&at).map_or(0, |r| r.len as u64));
        }
        if held + run.len as u64 > KEPT_MAX {
            kept.clear();
            held = 0;
        }
        self.held.set(held + run.len as u64);
        kept.insert(from, run);
    }

    /// Copy `buf.len()` bytes at `offset` out of the kept runs.
    fn copy_out(&self, buf: &mut [u8], offset: u64) -> Option<()> {
        let kept = self.kept.borrow();
        let mut done = 0usize;
        while done < buf.len() {
            let (run, inside) = Self::holding(&kept, offset + done as u64)?;
            let n = (run.len - inside).min(buf.len() - done);
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
        // Kept already (a page read ahead, a block asked before).
        if self.copy_out(buf, offset).is_some() {
            return Ok(());
        }
        // A block that cannot be read whole (a bad sector in it, but not
        // in the bytes asked) must not fail an ask the device answers.
        let from = offset / BLOCK * BLOCK;
        let to = ((last_byte / BLOCK + 1) * BLOCK).min(self.len());
        let fetched = self.fetch(from, to);
        match fetched.ok().and_then(|()| self.copy_out(buf, offset)) {
            Some(()) => Ok(()),
            None => self.inner.read_exact_at(buf, offset),
        }
    }

    fn forget(&self) {
        self.kept.borrow_mut().clear();
        self.held.set(0);
    }

    fn file_offset(&self, at: u64) -> Option<u64> {
        self.inner.file_offset(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// A source that counts the reads that reach it, fails those touching
    /// `bad`, and checks each is in bounds.
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
            assert!(
                end <= self.len(),
                "read past the end: {offset}+{}",
                buf.len()
            );
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
        c.prefetch(
            &[(b + 5, b), (3 * b, 10), (6 * b + 1, 1), (0, 0), (9 * b, 1)],
            &[],
        );
        assert_eq!(c.inner.reads.get(), 2);
        assert_eq!(read(&c, b, 3 * b as usize), want(b, 3 * b as usize));
        assert_eq!(read(&c, 6 * b + 7, 9), want(6 * b + 7, 9));
        assert_eq!(c.inner.reads.get(), 2);
        c.prefetch(&[(2 * b, 2 * b)], &[]);
        assert_eq!(c.inner.reads.get(), 2, "nothing read twice");
    }

    #[test]
    fn pages_are_read_alone_and_a_block_over_them_reads_once() {
        let c = source(8 * BLOCK as usize, None);
        let b = BLOCK;
        let p = PAGE as u64;
        // Two pages apart, and a block; the page that touches the block
        // joins its read.
        c.prefetch(
            &[(0, 10)],
            &[(3 * b + 16384, 4), (3 * b + b - 40, 8), (b, 1)],
        );
        assert_eq!(c.inner.reads.get(), 3);
        let held: usize = c.kept.borrow().values().map(|r| r.len).sum();
        assert_eq!(held as u64, b + p + 2 * p);
        assert_eq!(read(&c, 3 * b + 16386, 2), want(3 * b + 16386, 2));
        assert_eq!(read(&c, b + 100, 8), want(b + 100, 8));
        assert_eq!(c.inner.reads.get(), 3);
        // An ask beside the pages reads its block in one read, over them.
        assert_eq!(read(&c, 3 * b + 8192, 4), want(3 * b + 8192, 4));
        assert_eq!(c.inner.reads.get(), 4);
        assert_eq!(c.kept.borrow().len(), 3);
        assert_eq!(read(&c, 3 * b, b as usize), want(3 * b, b as usize));
        assert_eq!(c.inner.reads.get(), 4);
    }

    #[test]
    fn an_ask_across_kept_and_missing_bytes_reads_the_missing_once() {
        let c = source(4 * BLOCK as usize, None);
        c.prefetch(&[], &[(BLOCK, 1), (3 * BLOCK - 1, 1)]);
        assert_eq!(c.inner.reads.get(), 2);
        // Blocks 1 and 2 are asked: kept at both ends, one read between.
        let n = 2 * BLOCK as usize;
        assert_eq!(read(&c, BLOCK, n), want(BLOCK, n));
        assert_eq!(c.inner.reads.get(), 3);
        assert_eq!(c.kept.borrow().len(), 3);
    }

    #[test]
    fn a_prefetch_that_fails_leaves_the_asks_to_read() {
        let c = source(2 * BLOCK as usize, Some(BLOCK - 4000));
        c.prefetch(&[(0, 2 * BLOCK)], &[]);
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

    /// The kept runs do not overlap, start on a page, end on one or at
    /// the end, hold the source's bytes, and add up to `held`.
    fn check_runs(c: &BlockCache<Counted>) {
        let kept = c.kept.borrow();
        let len = c.inner.len();
        let (mut prev_end, mut held) = (0u64, 0u64);
        for (&at, run) in kept.iter() {
            let end = at + run.len as u64;
            assert!(
                run.len > 0 && at >= prev_end && end <= len,
                "run {at}..{end}"
            );
            assert_eq!(at % PAGE as u64, 0, "run start {at} off a page");
            assert!(end % PAGE as u64 == 0 || end == len, "run end {end}");
            assert_eq!(run.bytes(), &c.inner.bytes[at as usize..end as usize]);
            prev_end = end;
            held += run.len as u64;
        }
        assert_eq!(held, c.held.get());
        assert!(held <= KEPT_MAX + ASK_MAX + BLOCK, "held {held}");
    }

    /// Random prefetches of blocks and pages, asks and forgets against
    /// sources of every kind of length, a bad byte in some: every ask
    /// gets the source's bytes or the error the source gives.
    #[test]
    fn random_prefetches_and_asks_read_what_the_source_holds() {
        for case in 0..120u64 {
            let mut rng = fastrand::Rng::with_seed(case);
            let sizes = [
                rng.u64(1..3 * PAGE as u64),
                rng.u64(1..4 * BLOCK),
                rng.u64(1..20 * BLOCK),
                rng.u64(1..3 * ASK_MAX),
                rng.u64(0..40) * BLOCK + rng.u64(0..2) * 512 * rng.u64(0..8),
            ];
            let len = sizes[rng.usize(..sizes.len())].max(1);
            let bad = rng
                .bool()
                .then(|| rng.u64(0..len))
                .filter(|_| rng.u8(..) < 60);
            let c = BlockCache::new(Counted {
                bytes: (0..len)
                    .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
                    .collect(),
                reads: Cell::new(0),
                bad,
            });
            let span = |rng: &mut fastrand::Rng| {
                let at = match rng.u8(0..4) {
                    0 => rng.u64(0..len),
                    1 => len.saturating_sub(rng.u64(0..(2 * PAGE as u64))),
                    2 => rng.u64(0..len / PAGE as u64 + 1) * PAGE as u64,
                    _ => rng.u64(0..len + 10),
                };
                let n = match rng.u8(0..4) {
                    0 => rng.u64(0..16),
                    1 => rng.u64(0..2 * PAGE as u64),
                    2 => rng.u64(0..2 * BLOCK),
                    _ => rng.u64(0..ASK_MAX + 3 * BLOCK),
                };
                (at, n)
            };
            for step in 0..60 {
                match rng.u8(0..10) {
                    0..=2 => {
                        let blocks: Vec<_> = (0..rng.usize(0..5)).map(|_| span(&mut rng)).collect();
                        let pages: Vec<_> = (0..rng.usize(0..12)).map(|_| span(&mut rng)).collect();
                        c.prefetch(&blocks, &pages);
                    }
                    3 => c.forget(),
                    _ => {
                        let (at, n) = span(&mut rng);
                        let n = n.min(ASK_MAX + 2 * BLOCK) as usize;
                        let mut buf = vec![0xaa; n];
                        let r = c.read_exact_at(&mut buf, at);
                        let end = at + n as u64;
                        let at_step = format!("case {case} step {step}: {at}+{n} of {len}");
                        if end > len || (n > 0 && bad.is_some_and(|b| (at..end).contains(&b))) {
                            assert!(r.is_err(), "{at_step}");
                        } else {
                            assert!(r.is_ok(), "{at_step}: {r:?}");
                            assert_eq!(buf, c.inner.bytes[at as usize..end as usize], "{at_step}");
                        }
                    }
                }
                check_runs(&c);
            }
        }
    }

    /// A large source of zeros that notes the most bytes one read_many
    /// was handed.
    struct Sparse {
        len: u64,
        at_once: Cell<u64>,
    }

    impl ReadAt for Sparse {
        fn len(&self) -> u64 {
            self.len
        }
        fn read_exact_at(&self, buf: &mut [u8], _: u64) -> io::Result<()> {
            buf.fill(0);
            Ok(())
        }
        fn read_many(&self, reads: &mut [(u64, &mut [u8])]) -> Vec<io::Result<()>> {
            let total: u64 = reads.iter().map(|(_, b)| b.len() as u64).sum();
            self.at_once.set(self.at_once.get().max(total));
            reads.iter_mut().map(|(_, b)| b.fill(0)).map(Ok).collect()
        }
    }

    #[test]
    fn a_prefetch_of_thousands_of_regions_holds_no_more_than_is_kept() {
        // A table of 2048 partitions 1 MiB apart: each one's first block,
        // and pages near its end and at 256 KiB as md's and ZFS's peeks.
        let c = BlockCache::new(Sparse {
            len: 4 << 30,
            at_once: Cell::new(0),
        });
        let (mut blocks, mut pages) = (Vec::new(), Vec::new());
        for k in 0..2048u64 {
            let at = k << 20;
            blocks.push((at, 4096));
            let far = [(256 + 16) << 10, (1 << 20) - 65536, (1 << 20) - 8192];
            pages.extend(far.map(|p| (at + p, 4)));
        }
        c.prefetch(&blocks, &pages);
        assert!(
            c.inner.at_once.get() <= KEPT_MAX,
            "{}",
            c.inner.at_once.get()
        );
        assert!(c.held.get() > KEPT_MAX / 2 && c.held.get() <= KEPT_MAX);
    }
}
