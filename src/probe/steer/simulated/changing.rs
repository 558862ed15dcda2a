//! Simulated rates on noise that changes during a run (jitter that comes
//! and goes, drift, bursts from a neighbour) and on penalties visible only
//! in requests at least as large as the unit: the devices of issue 39,
//! run after run through the same loop and inference as a probe.
//!
//! `cargo test --lib probe::simulated::changing -- --nocapture` prints
//! every device's rates.

use super::*;

/// What a device's unit and penalty are, and how soon the run should
/// have settled it.
#[derive(Clone, Copy)]
pub struct Truth {
    /// None: no penalty.
    pub unit: Option<u64>,
    /// The paying pattern's penalty, in per cent fewer IOPS.
    pub pct: f64,
    /// Seconds within which the run should have bracketed it.
    pub within_s: f64,
}

/// What a series of runs on one device gave.
#[derive(Debug, Default)]
pub struct Rates {
    pub runs: usize,
    /// The right unit, bracketed; of those, with a randwrite offset row
    /// whose 95 % interval held the truth; of those, within the time.
    pub bracketed: usize,
    pub covered: usize,
    pub in_time: usize,
    /// The right unit, likely.
    pub likely: usize,
    pub inconclusive: usize,
    pub no_difference: usize,
    /// Lower bound or inconsistent.
    pub other: usize,
    /// A unit named (bracketed, likely or lower bound) that is not the
    /// device's.
    pub wrong: usize,
    /// Runs that set rounds aside, and that chose longer windows.
    pub set_aside: usize,
    pub longer_windows: usize,
    /// Simulated seconds of every run.
    pub seconds: Vec<f64>,
}

impl Rates {
    pub fn line(&self, name: &str) -> String {
        let mut s = self.seconds.clone();
        s.sort_by(f64::total_cmp);
        let p90 = s.get((s.len() * 9) / 10).copied().unwrap_or(f64::NAN);
        format!(
            "{name}: {} runs: bracketed {} (interval held the truth in {}, of them in time {}), likely {}, inconclusive {}, no-difference {}, other {}, wrong unit {}; rounds set aside in {}, longer windows in {}; seconds median {:.0}, 90th {:.0}, max {:.0}",
            self.runs,
            self.bracketed,
            self.covered,
            self.in_time,
            self.likely,
            self.inconclusive,
            self.no_difference,
            self.other,
            self.wrong,
            self.set_aside,
            self.longer_windows,
            crate::probe::infer::median(&s),
            p90,
            s.last().copied().unwrap_or(f64::NAN)
        )
    }
}

/// `runs` runs of the auto plan on a device.
pub fn rates(seed: u64, runs: usize, noise: Noise, speed: &Speed, truth: Truth) -> Rates {
    rates_of(&auto_plan(None), seed, runs, noise, speed, truth)
}

/// `runs` runs of `plan` on a device.
pub fn rates_of(
    plan: &Grid,
    seed: u64,
    runs: usize,
    noise: Noise,
    speed: &Speed,
    truth: Truth,
) -> Rates {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut r = Rates {
        runs,
        ..Rates::default()
    };
    for _ in 0..runs {
        let run = run_timed(plan, &mut rng, noise, speed);
        let inf = &run.inference;
        r.seconds.push(run.seconds);
        r.set_aside += usize::from(!run.pacing.set_aside.is_empty());
        r.longer_windows += usize::from(run.pacing.windows.len() > 1);
        let named = inf.effective_unit_bytes;
        r.wrong += usize::from(named.is_some() && named != truth.unit);
        match inf.confidence {
            Confidence::Bracketed if named == truth.unit => {
                r.bracketed += 1;
                let held = inf.penalties.iter().any(|p| {
                    p.kind == ContrastKind::Offset
                        && p.pattern == Pattern::Randwrite
                        && p.ci95_pct[0] <= truth.pct
                        && truth.pct <= p.ci95_pct[1]
                });
                r.covered += usize::from(held);
                r.in_time += usize::from(held && run.seconds <= truth.within_s);
            }
            Confidence::Likely if named == truth.unit => r.likely += 1,
            Confidence::Inconclusive => r.inconclusive += 1,
            Confidence::NoDifference => r.no_difference += 1,
            _ => r.other += 1,
        }
    }
    r
}

/// Per cent fewer IOPS when each I/O takes `pct` per cent longer.
pub fn fewer_iops(pct: f64) -> f64 {
    (1.0 - 1.0 / (1.0 + pct / 100.0)) * 100.0
}

/// Writes covering part of `unit` take `write_pct` per cent longer, reads
/// `read_pct`: as the nbddisk (tests/vm/costdisk.py) charges. Requests
/// smaller than the unit cover part of one wherever they are, so their
/// aligned and misaligned cells cost the same: the penalty shows only in
/// requests at least as large as the unit.
pub fn costdisk(unit: u64, write_pct: f64, read_pct: f64) -> impl Fn(&Cell) -> f64 {
    move |c: &Cell| {
        let end = c.offset + u64::from(c.block_size);
        let pct = if c.pattern.is_write() {
            write_pct
        } else {
            read_pct
        };
        if c.offset % unit != 0 || end % unit != 0 {
            1.0 / (1.0 + pct / 100.0)
        } else {
            1.0
        }
    }
}

/// The seed's device: rounds that vary by ±5–7 % (paired, at the auto
/// preset's 0.125 s windows) while the jitter is on, quiet while it is
/// off, on and off for 20 s in turn; a drift that windows do not average.
pub const SEED_NOISE: Noise = Noise {
    round_sd: 0.05,
    cell_sd: 0.01,
    jitter_1s: 0.0141,
    drift_sd: 0.03,
    drift_tau_s: 30.0,
    switching: Some((20.0, 20.0)),
    burst: 1.0,
    overhead_s: OVERHEAD_S,
};

/// A quiet device with a neighbour's bursts: 6 s of strong jitter (cells
/// ±8 % apart, paired ±11 %) every 36 s.
pub const BURSTS: Noise = Noise {
    jitter_1s: 0.02,
    switching: Some((6.0, 30.0)),
    ..Noise::steady(0.05, 0.01)
};

/// Seconds of one fio pass over the bench's 36-cell grid in the VM
/// (bench/time-to-verdict: 47.8 s).
const FIO_PASS_S: f64 = 47.8;

#[test]
fn the_seeds_64k_unit_is_bracketed_within_two_minutes() {
    // The seed's 2.5 % at 64 KiB, and the 3 to 4 %, on rounds that
    // vary by ±5-7 % while the jitter is on.
    for (seed, pct) in [(1, 2.5), (2, 3.0), (3, 4.0)] {
        let truth = Truth {
            unit: Some(65536),
            pct: fewer_iops(pct),
            within_s: 120.0,
        };
        let runs = 40;
        let r = rates(seed, runs, SEED_NOISE, &costdisk(65536, pct, 0.0), truth);
        eprintln!(
            "{}",
            r.line(&format!("64 KiB unit, writes {pct} %, jitter on and off"))
        );
        assert_eq!(r.wrong, 0, "{pct}");
        assert!(r.in_time * 10 >= runs * 9, "{pct}: {}", r.in_time);
    }
}

#[test]
fn an_8k_unit_seen_only_from_16k_is_bracketed_within_a_fio_pass() {
    // 4 KiB requests cover part of an 8 KiB unit wherever they start;
    // reads pay half what writes do.
    let truth = Truth {
        unit: Some(8192),
        pct: fewer_iops(4.0),
        within_s: FIO_PASS_S,
    };
    let runs = 40;
    let speed = costdisk(8192, 4.0, 2.0);
    // And a device on which the small requests pay nothing at all, so the
    // block-size curve cannot point at the unit either.
    let full = costdisk(8192, 4.0, 2.0);
    let only_large = move |c: &Cell| {
        if c.block_size < 16384 {
            1.0
        } else {
            full(c)
        }
    };
    for (name, noise, device) in [
        ("quiet", QUIET, &speed as &Speed),
        ("jitter on and off", SEED_NOISE, &speed),
        (
            "small requests free, jitter on and off",
            SEED_NOISE,
            &only_large,
        ),
    ] {
        let r = rates(8, runs, noise, device, truth);
        eprintln!(
            "{}",
            r.line(&format!("8 KiB unit, writes 4 %, reads 2 %, {name}"))
        );
        assert_eq!(r.wrong, 0, "{name}");
        assert!(r.in_time * 10 >= runs * 9, "{name}: {}", r.in_time);
    }
}

#[test]
fn bursts_are_set_aside_and_decide_nothing() {
    let none = Truth {
        unit: None,
        pct: 0.0,
        within_s: 120.0,
    };
    let runs = 40;
    let r = rates(5, runs, BURSTS, &|_| 1.0, none);
    eprintln!("{}", r.line("no penalty, bursts"));
    // No unit is claimed, and "no difference" comes with its bound.
    assert_eq!(r.wrong, 0);
    assert_eq!(r.no_difference + r.inconclusive, runs);
    assert!(r.set_aside * 2 >= runs, "set aside in {}", r.set_aside);
    let truth = Truth {
        unit: Some(16384),
        pct: fewer_iops(5.0),
        within_s: 120.0,
    };
    let r = rates(6, runs, BURSTS, &costdisk(16384, 5.0, 0.0), truth);
    eprintln!("{}", r.line("16 KiB unit, writes 5 %, bursts"));
    assert_eq!(r.wrong, 0);
    assert!(r.in_time * 10 >= runs * 9, "{}", r.in_time);
}

#[test]
fn windows_grow_for_jitter_on_slow_cells_and_not_for_drift() {
    let truth = Truth {
        unit: Some(65536),
        pct: fewer_iops(3.0),
        within_s: 120.0,
    };
    let runs = 20;
    let device = costdisk(65536, 3.0, 0.0);
    // Drift alone: longer windows buy nothing.
    let drift = Noise {
        drift_sd: 0.05,
        drift_tau_s: 5.0,
        ..QUIET
    };
    let r = rates(11, runs, drift, &device, truth);
    eprintln!("{}", r.line("64 KiB unit, writes 3 %, strong drift"));
    assert_eq!(r.longer_windows, 0);
    assert_eq!(r.wrong, 0);
    assert!(r.in_time * 10 >= runs * 9, "{}", r.in_time);
    // Jitter (cells ±5.7 % apart at 0.125 s) on cells that cost 0.3 s
    // beyond their window, with ten minutes: longer windows buy more
    // precision by the end than more rounds of short ones. Two minutes
    // hold too few rounds of them.
    let slow = Noise {
        jitter_1s: 0.02,
        overhead_s: 0.3,
        ..QUIET
    };
    let plan = auto_plan_within(None, Some(Duration::from_secs(600)));
    let truth = Truth {
        within_s: 600.0,
        ..truth
    };
    let r = rates_of(&plan, 12, runs, slow, &device, truth);
    eprintln!(
        "{}",
        r.line("64 KiB unit, writes 3 %, jitter, slow cells, 10 minutes")
    );
    // Most runs: the others settled before the model rested on three
    // rounds (15 of 20 chose longer windows before each round's own
    // precision weighed in, 14 since: the runs settle sooner).
    assert!(r.longer_windows * 10 >= runs * 7, "{}", r.longer_windows);
    assert_eq!(r.wrong, 0);
}
