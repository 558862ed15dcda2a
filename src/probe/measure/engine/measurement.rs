//! What a run measured, and how: the [`Meter`] that turns per-I/O issue and
//! completion times into a rate over the measured window, merged across the
//! jobs and threads of a cell into a [`Measurement`].
//!
//! The rate is fio's `time_based` figure (I/Os done ÷ time), counted
//! without end effects: each I/O contributes the fraction of its own life
//! (issue to completion) that lies inside the window, so the I/Os in flight
//! when the window opens and when it closes count for the part of them the
//! window saw. Counting whole completions and dividing by the time of the
//! last one overstates IOPS when an I/O's latency is not small next to the
//! window (a 64 KiB cell at 160 ms per I/O read +55 % against fio).

use super::Workload;
use hdrhistogram::Histogram;
use std::io;
use std::time::{Duration, Instant};

/// What one run measured (after the warm-up).
pub struct Measurement {
    /// I/Os per second over the window (a sum over merged jobs/threads).
    pub iops: f64,
    /// Completions inside the window.
    pub completions: u64,
    /// The longest window of the merged parts.
    pub window: Duration,
    /// The window reached its longest allowed length before enough I/Os
    /// completed: too few to trust.
    pub starved: bool,
    /// Per-I/O latency in nanoseconds.
    pub latency: Histogram<u64>,
    /// The window in two parts, split at half its shortest length: the
    /// length of the first, and the rate in each (summed over merged jobs).
    /// How much the two differ is the jitter inside one window, which
    /// averages out as windows grow (`probe::noise`).
    pub first_part: Duration,
    pub parts_iops: [f64; 2],
    /// With places read interleaved (`Workload::places`): what each place
    /// measured, in the workload's order; empty otherwise.
    pub places: Vec<Measurement>,
}

impl Measurement {
    pub fn new() -> Measurement {
        Measurement {
            iops: 0.0,
            completions: 0,
            window: Duration::ZERO,
            starved: false,
            latency: new_histogram(),
            first_part: Duration::ZERO,
            parts_iops: [0.0; 2],
            places: Vec::new(),
        }
    }

    /// Fold another job's (or thread's) measurement of the same cell in:
    /// they ran at the same time, so their rates add.
    pub fn merge(&mut self, other: &Measurement) {
        self.iops += other.iops;
        self.completions += other.completions;
        self.window = self.window.max(other.window);
        self.starved |= other.starved;
        self.first_part = self.first_part.max(other.first_part);
        self.parts_iops[0] += other.parts_iops[0];
        self.parts_iops[1] += other.parts_iops[1];
        // Same bounds on both sides: adding cannot fail.
        let _ = self.latency.add(&other.latency);
        if self.places.len() < other.places.len() {
            self.places
                .resize_with(other.places.len(), Measurement::new);
        }
        for (mine, theirs) in self.places.iter_mut().zip(&other.places) {
            mine.merge(theirs);
        }
    }

    /// Broken: too few completions, or one I/O stalled for half the window
    /// or more (a hiccup of the device, not its steady state). The runner
    /// measures such a round again.
    pub fn is_broken(&self) -> bool {
        let max = Duration::from_nanos(self.latency.max());
        self.starved || self.completions == 0 || max * 2 >= self.window
    }
}

/// Times one engine loop (one job, or one psync thread): when to stop
/// issuing, and how much of each I/O falls inside the window.
pub struct Meter {
    from: Instant,
    /// Where the window's first part ends: half its shortest length in.
    split: Instant,
    min_end: Instant,
    max_end: Instant,
    min_completions: u64,
    end: Option<Instant>,
    work: f64,
    /// The work inside each part of the window.
    parts: [f64; 2],
    completions: u64,
    latency: Histogram<u64>,
    /// Per place, with places read interleaved.
    places: Vec<Tally>,
}

/// What one place of an interleaved workload got inside the window.
struct Tally {
    work: f64,
    completions: u64,
    latency: Histogram<u64>,
    latency_sum: f64,
}

impl Meter {
    /// The window opens after the warm-up and lasts at least
    /// `w.duration` and until `share` of the workload's completions were
    /// seen, but no longer than `w.max_duration`.
    pub fn new(start: Instant, w: &Workload, share: u64) -> Meter {
        let from = start + w.warmup;
        Meter {
            from,
            split: from + w.duration / 2,
            min_end: from + w.duration,
            max_end: from + w.max_duration.max(w.duration),
            min_completions: w.min_completions.div_ceil(share.max(1)),
            end: None,
            work: 0.0,
            parts: [0.0; 2],
            completions: 0,
            latency: new_histogram(),
            places: if w.places.len() > 1 && w.pattern.is_random() {
                (0..w.places.len())
                    .map(|_| Tally {
                        work: 0.0,
                        completions: 0,
                        latency: new_histogram(),
                        latency_sum: 0.0,
                    })
                    .collect()
            } else {
                Vec::new()
            },
        }
    }

    /// May another I/O be issued at `now`? Closes the window (for good)
    /// when it has lasted long enough, or when `stop` is set.
    pub fn open(&mut self, now: Instant, stop: bool) -> bool {
        if self.end.is_some() {
            return false;
        }
        let enough = now >= self.min_end && self.completions >= self.min_completions;
        if stop || enough || now >= self.max_end {
            self.end = Some(now.max(self.from));
            return false;
        }
        true
    }

    /// An I/O of place `place` (0 without places) issued at `issued`
    /// completed at `done`.
    pub fn complete(&mut self, place: usize, issued: Instant, done: Instant) {
        let end = self.end.unwrap_or(done);
        let inside = done > self.from && done <= end;
        let ns = done.saturating_duration_since(issued).as_nanos() as u64;
        let work = overlap(issued, done, self.from, end);
        if inside {
            self.completions += 1;
        }
        if done >= self.from {
            self.latency.saturating_record(ns.max(1));
        }
        self.work += work;
        self.parts[0] += overlap(issued, done, self.from, end.min(self.split));
        self.parts[1] += overlap(issued, done, self.split, end);
        if let Some(t) = self.places.get_mut(place) {
            t.completions += u64::from(inside);
            t.work += work;
            if done >= self.from {
                t.latency.saturating_record(ns.max(1));
                t.latency_sum += ns as f64;
            }
        }
    }

    /// The measurement, once every I/O issued has completed.
    pub fn finish(self) -> Measurement {
        let end = self.end.unwrap_or(self.from);
        let window = end.saturating_duration_since(self.from);
        let first_part = self.split.min(end).saturating_duration_since(self.from);
        let rate = |work: f64, d: Duration| {
            let s = d.as_secs_f64();
            if s > 0.0 {
                work / s
            } else {
                0.0
            }
        };
        let iops = rate(self.work, window);
        let mean = |sum: f64, n: u64| if n > 0 { sum / n as f64 } else { 0.0 };
        let all_mean = mean(
            self.places.iter().map(|t| t.latency_sum).sum(),
            self.places.iter().map(|t| t.latency.len()).sum(),
        );
        let places = self
            .places
            .into_iter()
            .map(|t| {
                // Little's law: the window kept iops × mean latency I/Os
                // in flight; the same depth at this place's mean latency
                // is the rate it would have alone (at depth 1: 1/latency).
                let own = mean(t.latency_sum, t.latency.len());
                Measurement {
                    iops: if own > 0.0 {
                        iops * all_mean / own
                    } else {
                        0.0
                    },
                    completions: t.completions,
                    window,
                    starved: false,
                    latency: t.latency,
                    first_part: Duration::ZERO,
                    parts_iops: [0.0; 2],
                    places: Vec::new(),
                }
            })
            .collect();
        Measurement {
            iops,
            completions: self.completions,
            window,
            starved: self.completions < self.min_completions,
            latency: self.latency,
            first_part,
            parts_iops: [
                rate(self.parts[0], first_part),
                rate(self.parts[1], window.saturating_sub(first_part)),
            ],
            places,
        }
    }
}

/// The fraction of the I/O's life [issued, done] inside [from, end]; an
/// I/O too fast for the clock counts whole when it completed inside.
pub fn overlap(issued: Instant, done: Instant, from: Instant, end: Instant) -> f64 {
    let life = done.saturating_duration_since(issued).as_secs_f64();
    if life <= 0.0 {
        return if done >= from && done <= end {
            1.0
        } else {
            0.0
        };
    }
    let a = issued.max(from);
    let b = done.min(end);
    b.saturating_duration_since(a).as_secs_f64() / life
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::measure::engine::Pattern;

    fn workload(duration_ms: u64, min_completions: u64) -> Workload {
        Workload {
            pattern: Pattern::Randread,
            block_size: 4096,
            offset: 0,
            places: Vec::new(),
            unit: 1 << 20,
            size: 1 << 30,
            qd: 32,
            fdatasync: false,
            warmup: Duration::from_millis(100),
            duration: Duration::from_millis(duration_ms),
            max_duration: Duration::from_millis(duration_ms * 20),
            min_completions,
            seed: 1,
            job: 0,
            jobs: 1,
        }
    }

    /// A simulated device: `qd` I/Os always in flight, each taking
    /// `latency`; the meter decides when to stop, as an engine loop does.
    fn simulate(w: &Workload, qd: usize, latency: Duration) -> Measurement {
        let t0 = Instant::now() + Duration::from_secs(1);
        let mut m = Meter::new(t0, w, 1);
        // Slot i's current I/O was issued at issued[i]: staggered, as in a
        // queue that has been full for a while.
        let step = latency / qd as u32;
        let mut issued: Vec<Instant> = (0..qd).map(|i| t0 - step * i as u32).collect();
        let mut live = vec![true; qd];
        while live.iter().any(|&l| l) {
            let i = (0..qd)
                .filter(|&i| live[i])
                .min_by_key(|&i| issued[i])
                .expect("a live slot");
            let done = issued[i] + latency;
            m.complete(0, issued[i], done);
            if m.open(done, false) {
                issued[i] = done;
            } else {
                live[i] = false;
            }
        }
        m.finish()
    }

    #[test]
    fn long_latency_gives_the_true_rate() {
        // 32 in flight at 160 ms: 200 IOPS. The old divisor (last
        // completion) read about +55 % on such a cell.
        let w = workload(400, 0);
        let m = simulate(&w, 32, Duration::from_millis(160));
        assert!((m.iops - 200.0).abs() < 200.0 * 0.02, "{}", m.iops);
    }

    #[test]
    fn both_parts_of_a_steady_window_give_its_rate() {
        // 32 in flight at 10 ms: 3200 IOPS in each half as in the whole.
        let w = workload(400, 0);
        let m = simulate(&w, 32, Duration::from_millis(10));
        assert_eq!(m.first_part, Duration::from_millis(200));
        for part in m.parts_iops {
            assert!((part - 3200.0).abs() < 3200.0 * 0.02, "{:?}", m.parts_iops);
        }
        // A window that grew: the second part is the longer one.
        let m = simulate(&workload(200, 64), 4, Duration::from_millis(100));
        assert_eq!(m.first_part, Duration::from_millis(100));
        assert!(m.window - m.first_part > m.first_part, "{:?}", m.window);
        assert!(
            (m.parts_iops[1] - 40.0).abs() < 40.0 * 0.05,
            "{:?}",
            m.parts_iops
        );
    }

    #[test]
    fn the_window_grows_until_enough_completions() {
        // 4 in flight at 100 ms: 40 IOPS; 64 completions need 1.6 s.
        let w = workload(200, 64);
        let m = simulate(&w, 4, Duration::from_millis(100));
        assert!(m.completions >= 64, "{}", m.completions);
        assert!(m.window >= Duration::from_millis(1500), "{:?}", m.window);
        assert!((m.iops - 40.0).abs() < 40.0 * 0.03, "{}", m.iops);
        assert!(!m.is_broken());
    }

    #[test]
    fn a_stall_makes_the_round_broken() {
        let w = workload(200, 0);
        let mut m = simulate(&w, 8, Duration::from_millis(1));
        assert!(!m.is_broken());
        m.latency.saturating_record(150_000_000);
        assert!(m.is_broken());
        let starved = simulate(&workload(10, 1_000_000), 1, Duration::from_millis(50));
        assert!(starved.starved && starved.is_broken());
    }

    #[test]
    fn overlap_counts_the_part_inside() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        assert_eq!(overlap(t, t + ms(10), t + ms(5), t + ms(100)), 0.5);
        assert_eq!(overlap(t, t + ms(10), t + ms(20), t + ms(100)), 0.0);
        assert_eq!(overlap(t + ms(90), t + ms(110), t, t + ms(100)), 0.5);
        assert_eq!(overlap(t + ms(1), t + ms(1), t, t + ms(100)), 1.0);
    }

    #[test]
    fn merged_rates_add() {
        let mut a = Measurement::new();
        a.iops = 100.0;
        a.window = Duration::from_millis(100);
        let mut b = Measurement::new();
        b.iops = 50.0;
        b.window = Duration::from_millis(120);
        a.merge(&b);
        assert_eq!(a.iops, 150.0);
        assert_eq!(a.window, Duration::from_millis(120));
    }

    #[test]
    fn each_place_gets_the_rate_it_would_have_alone() {
        // Depth 1, places 0 and 1 alternating at 2 ms and 3 ms: alone
        // they run at 500 and 333 IOPS; together at 400.
        let w = Workload {
            places: vec![0, 4096],
            max_duration: Duration::from_secs(10),
            ..workload(1000, 0)
        };
        let t0 = Instant::now() + Duration::from_secs(1);
        let mut m = Meter::new(t0, &w, 1);
        let mut at = t0;
        let mut place = 0;
        while m.open(at, false) {
            let done = at + Duration::from_millis(2 + place as u64);
            m.complete(place, at, done);
            at = done;
            place = 1 - place;
        }
        let m = m.finish();
        assert!((m.iops - 400.0).abs() < 4.0, "{}", m.iops);
        assert_eq!(m.places.len(), 2);
        assert!(
            (m.places[0].iops - 500.0).abs() < 5.0,
            "{}",
            m.places[0].iops
        );
        assert!(
            (m.places[1].iops - 333.3).abs() < 4.0,
            "{}",
            m.places[1].iops
        );
        assert_eq!(m.places[0].latency.value_at_quantile(0.5) / 100_000, 20);
        let mut merged = Measurement::new();
        merged.merge(&m);
        merged.merge(&m);
        assert!((merged.places[1].iops - 666.7).abs() < 8.0);
    }
}
