//! What a run measured: I/O and byte counts, elapsed time and a latency
//! histogram, merged across the jobs and threads of a cell.

use hdrhistogram::Histogram;
use std::io;
use std::time::Duration;

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

impl Default for Measurement {
    fn default() -> Self {
        Self::new()
    }
}
