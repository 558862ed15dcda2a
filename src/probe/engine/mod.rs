//! I/O engines: the part that issues reads and writes and times them.
//!
//! One small trait, like fio's ioengines: an engine is built once per job
//! for a file descriptor, then runs one [`Workload`] at a time and returns a
//! [`Measurement`]. [`uring`] is the fast path (io_uring, registered buffers
//! and file, batched submission); [`psync`] is the fallback (a pool of
//! threads doing `pread`/`pwrite`), used when io_uring is unavailable.

pub mod psync;
pub mod uring;

use hdrhistogram::Histogram;
use serde::Serialize;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Which engine ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    #[value(name = "io_uring")]
    #[serde(rename = "io_uring")]
    IoUring,
    Psync,
}

crate::spelled_as_serde!(EngineKind);

/// What the user asked for with `--engine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineChoice {
    /// io_uring when the kernel allows it, else psync.
    Auto,
    #[value(name = "io_uring")]
    IoUring,
    Psync,
}

/// The access pattern of a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Randread,
    Randwrite,
    Seqread,
    Seqwrite,
}

crate::spelled_as_serde!(Pattern);

impl Pattern {
    pub fn is_write(self) -> bool {
        matches!(self, Pattern::Randwrite | Pattern::Seqwrite)
    }
    pub fn is_random(self) -> bool {
        matches!(self, Pattern::Randread | Pattern::Randwrite)
    }
}

/// One timed run of one cell by one job.
#[derive(Clone, Debug)]
pub struct Workload {
    pub pattern: Pattern,
    pub block_size: u32,
    /// Every I/O lands at `offset + k × unit` (random) or starts a
    /// contiguous stream at `offset` (sequential).
    pub offset: u64,
    pub unit: u64,
    /// Bytes of the target that may be touched, from 0.
    pub size: u64,
    pub qd: u32,
    /// fdatasync after each write, counted as part of it.
    pub fdatasync: bool,
    /// Discarded run before measuring.
    pub warmup: Duration,
    pub duration: Duration,
    pub seed: u64,
    /// This job's index and the job count (sequential streams start apart).
    pub job: u32,
    pub jobs: u32,
}

/// Where the next I/O goes.
pub struct Positions {
    random: bool,
    rng: fastrand::Rng,
    offset: u64,
    unit: u64,
    slots: u64,
    bs: u64,
    size: u64,
    cursor: u64,
}

impl Positions {
    pub fn new(w: &Workload, stream: u64) -> Positions {
        let bs = u64::from(w.block_size);
        let span = w.size.saturating_sub(w.offset + bs);
        let slots = span / w.unit.max(1) + 1;
        let start = if w.jobs > 1 {
            let share = w.size / u64::from(w.jobs) * u64::from(w.job);
            w.offset + share / w.unit.max(1) * w.unit
        } else {
            w.offset
        };
        Positions {
            random: w.pattern.is_random(),
            rng: fastrand::Rng::with_seed(w.seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            offset: w.offset,
            unit: w.unit.max(1),
            slots,
            bs,
            size: w.size,
            cursor: start,
        }
    }

    pub fn next_offset(&mut self) -> u64 {
        if self.random {
            return self.offset + self.rng.u64(..self.slots) * self.unit;
        }
        if self.cursor + self.bs > self.size {
            self.cursor = self.offset;
        }
        let at = self.cursor;
        self.cursor += self.bs;
        at
    }
}

/// What one run measured (after the warm-up).
pub struct Measurement {
    pub ios: u64,
    pub bytes: u64,
    pub elapsed: Duration,
    /// Per-I/O latency in nanoseconds.
    pub latency: Histogram<u64>,
}

impl Measurement {
    pub fn new() -> Measurement {
        Measurement {
            ios: 0,
            bytes: 0,
            elapsed: Duration::ZERO,
            latency: new_histogram(),
        }
    }

    /// Fold another job's (or thread's) measurement of the same cell in.
    pub fn merge(&mut self, other: &Measurement) {
        self.ios += other.ios;
        self.bytes += other.bytes;
        self.elapsed = self.elapsed.max(other.elapsed);
        // Same bounds on both sides: adding cannot fail.
        let _ = self.latency.add(&other.latency);
    }
}

/// Run `f` on every item, each on its own thread, and merge what they
/// measured (the jobs of a cell, the threads of the psync engine).
pub fn in_parallel<T: Send>(
    items: impl Iterator<Item = T>,
    f: impl Fn(T) -> io::Result<Measurement> + Sync,
) -> io::Result<Measurement> {
    let f = &f;
    let results: Vec<io::Result<Measurement>> = std::thread::scope(|s| {
        let handles: Vec<_> = items.map(|item| s.spawn(move || f(item))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("I/O thread panicked")))
            })
            .collect()
    });
    let mut total = Measurement::new();
    for r in results {
        total.merge(&r?);
    }
    Ok(total)
}

/// Latency histogram: 1 ns to 1 hour at 2 significant digits (≤ 1 % error),
/// a few kilobytes however many I/Os are recorded.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 2).expect("valid histogram bounds")
}

/// An engine instance, bound to one open file.
pub trait Engine: Send {
    fn kind(&self) -> EngineKind;
    /// Run `w` until its warm-up and duration have passed or `stop` is set.
    fn run(&mut self, w: &Workload, stop: &AtomicBool) -> io::Result<Measurement>;
}

/// Build an engine for `fd` able to run I/Os up to `max_bs` bytes at depth
/// `qd`. With `Auto`, io_uring is tried first; the reason it could not be
/// used comes back with the psync engine. `same_thread`: the engine will
/// run only on the calling thread.
pub fn build(
    choice: EngineChoice,
    fd: RawFd,
    qd: u32,
    max_bs: u32,
    writes: bool,
    same_thread: bool,
) -> io::Result<(Box<dyn Engine>, Option<String>)> {
    let uring = || uring::Uring::new(fd, qd, max_bs, writes, same_thread);
    match choice {
        EngineChoice::IoUring => Ok((Box::new(uring()?), None)),
        EngineChoice::Psync => Ok((Box::new(psync::Psync::new(fd, qd, max_bs, writes)), None)),
        EngineChoice::Auto => match uring() {
            Ok(e) => Ok((Box::new(e), None)),
            Err(e) => Ok((
                Box::new(psync::Psync::new(fd, qd, max_bs, writes)),
                Some(format!("io_uring unavailable ({e}); using psync")),
            )),
        },
    }
}

/// A zeroed, page-aligned buffer (O_DIRECT needs aligned memory). Filled
/// with random bytes for writes, so compressing devices see real data.
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is plain memory owned by this value; it is only
// accessed through &/&mut of the owner or by the kernel during an I/O the
// owner waits for.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    const ALIGN: usize = 4096;

    pub fn new(len: usize, random: bool) -> AlignedBuf {
        let layout =
            std::alloc::Layout::from_size_align(len.max(1), Self::ALIGN).expect("buffer layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        let mut b = AlignedBuf { ptr, len };
        if random {
            let mut rng = fastrand::Rng::with_seed(0x5eed);
            for chunk in b.as_mut_slice().chunks_mut(8) {
                let v = rng.u64(..).to_le_bytes();
                chunk.copy_from_slice(&v[..chunk.len()]);
            }
        }
        b
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is a live allocation of len bytes owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.len.max(1), Self::ALIGN)
            .expect("buffer layout");
        // SAFETY: allocated in new() with this same layout.
        unsafe { std::alloc::dealloc(self.ptr, layout) }
    }
}

/// The error for an I/O that moved fewer bytes than asked.
pub fn short_io(pattern: Pattern, got: usize, want: u32, at: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!(
            "short {} of {got} of {want} bytes at byte {at}",
            if pattern.is_write() { "write" } else { "read" }
        ),
    )
}

impl Default for Measurement {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(pattern: Pattern) -> Workload {
        Workload {
            pattern,
            block_size: 4096,
            offset: 512,
            unit: 1 << 20,
            size: 64 << 20,
            qd: 4,
            fdatasync: false,
            warmup: Duration::ZERO,
            duration: Duration::from_millis(100),
            seed: 1,
            job: 0,
            jobs: 1,
        }
    }

    #[test]
    fn random_positions_keep_the_offset_and_stay_inside() {
        let w = workload(Pattern::Randread);
        let mut p = Positions::new(&w, 0);
        for _ in 0..10_000 {
            let at = p.next_offset();
            assert_eq!(at % w.unit, 512);
            assert!(at + 4096 <= w.size);
        }
    }

    #[test]
    fn sequential_positions_are_contiguous_and_wrap() {
        let w = Workload {
            size: 512 + 3 * 4096 + 100,
            ..workload(Pattern::Seqread)
        };
        let mut p = Positions::new(&w, 0);
        let got: Vec<u64> = (0..5).map(|_| p.next_offset()).collect();
        assert_eq!(got, vec![512, 4608, 8704, 512, 4608]);
    }
}
