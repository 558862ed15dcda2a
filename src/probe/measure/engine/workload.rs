//! What one engine run does: the access pattern, the cell's geometry and
//! timing ([`Workload`]), and where each I/O lands ([`Positions`]).

use serde::Serialize;
use std::io;
use std::time::Duration;

/// The access pattern of a cell.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    clap::ValueEnum,
    serde::Deserialize,
)]
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
    /// Offsets read interleaved in one window (random reads only): each
    /// random `k` is read at `place + k × unit` for every place, in a
    /// fresh random order, and each I/O is timed as its place's. Empty:
    /// the one place `offset`.
    pub places: Vec<u64>,
    pub unit: u64,
    /// Bytes of the target that may be touched, from 0.
    pub size: u64,
    pub qd: u32,
    /// fdatasync after each write, counted as part of it.
    pub fdatasync: bool,
    /// Discarded run before measuring.
    pub warmup: Duration,
    /// The measured window lasts at least this, and until `min_completions`
    /// I/Os completed in it, but no longer than `max_duration`.
    pub duration: Duration,
    pub max_duration: Duration,
    pub min_completions: u64,
    pub seed: u64,
    /// This job's index and the job count (sequential streams start apart).
    pub job: u32,
    pub jobs: u32,
}

/// Where the next I/O goes, and which of the workload's places it is.
pub struct Positions {
    random: bool,
    rng: fastrand::Rng,
    /// The places (one: `offset`), and the order the current `k` still
    /// reads them in (popped from the end).
    places: Vec<u64>,
    pending: Vec<(usize, u64)>,
    unit: u64,
    slots: u64,
    bs: u64,
    size: u64,
    cursor: u64,
}

impl Positions {
    pub fn new(w: &Workload, stream: u64) -> Positions {
        let bs = u64::from(w.block_size);
        let places = if w.places.is_empty() || !w.pattern.is_random() {
            vec![w.offset]
        } else {
            w.places.clone()
        };
        let last = places.iter().copied().max().unwrap_or(w.offset);
        let span = w.size.saturating_sub(last + bs);
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
            places,
            pending: Vec::new(),
            unit: w.unit.max(1),
            slots,
            bs,
            size: w.size,
            cursor: start,
        }
    }

    /// The next I/O: its place (an index into the workload's places; 0
    /// with none) and its byte offset.
    pub fn next(&mut self) -> (usize, u64) {
        if self.random {
            if let [only] = self.places[..] {
                return (0, only + self.rng.u64(..self.slots) * self.unit);
            }
            if self.pending.is_empty() {
                let base = self.rng.u64(..self.slots) * self.unit;
                let at = self.places.iter().map(|p| p + base);
                self.pending.extend(at.enumerate());
                self.rng.shuffle(&mut self.pending);
            }
            return self.pending.pop().expect("refilled above");
        }
        if self.cursor + self.bs > self.size {
            self.cursor = self.places[0];
        }
        let at = self.cursor;
        self.cursor += self.bs;
        (0, at)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(pattern: Pattern) -> Workload {
        Workload {
            pattern,
            block_size: 4096,
            offset: 512,
            places: Vec::new(),
            unit: 1 << 20,
            size: 64 << 20,
            qd: 4,
            fdatasync: false,
            warmup: Duration::ZERO,
            duration: Duration::from_millis(100),
            max_duration: Duration::from_secs(1),
            min_completions: 0,
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
            let (place, at) = p.next();
            assert_eq!(place, 0);
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
        let got: Vec<u64> = (0..5).map(|_| p.next().1).collect();
        assert_eq!(got, vec![512, 4608, 8704, 512, 4608]);
    }

    #[test]
    fn interleaved_places_read_one_k_each_in_a_shuffled_order() {
        let w = Workload {
            places: vec![512, 4608, 8704],
            ..workload(Pattern::Randread)
        };
        let mut p = Positions::new(&w, 0);
        let mut orders = std::collections::HashSet::new();
        for _ in 0..200 {
            let visit: Vec<(usize, u64)> = (0..3).map(|_| p.next()).collect();
            let k = (visit[0].1 - w.places[visit[0].0]) / w.unit;
            let mut seen: Vec<usize> = visit.iter().map(|v| v.0).collect();
            orders.insert(seen.clone());
            seen.sort_unstable();
            assert_eq!(seen, vec![0, 1, 2], "every place once per k");
            for (place, at) in visit {
                assert_eq!(at, w.places[place] + k * w.unit);
                assert!(at + 4096 <= w.size);
            }
        }
        assert_eq!(orders.len(), 6, "every order of three places occurs");
    }
}
