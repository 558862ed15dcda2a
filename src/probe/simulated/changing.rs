//! Simulated rates on noise that changes during a run (jitter that comes
//! and goes, drift, bursts from a neighbour) and on penalties visible only
//! in requests at least as large as the unit: the devices, run
//! after run through the same loop and inference as a probe.

use super::*;

/// What a series of runs on one device gave.
#[derive(Debug, Default)]
pub struct Rates {
    pub runs: usize,
    /// The right unit, bracketed; the right unit, likely.
    pub bracketed: usize,
    pub likely: usize,
    pub inconclusive: usize,
    /// A wrong unit named (bracketed or likely), and bracketed.
    pub wrong: usize,
    pub wrong_bracketed: usize,
    /// Anything else (lower bound, no difference, inconsistent).
    pub other: usize,
    /// Bracketed runs whose penalty row of the paying pattern held the
    /// truth in its interval.
    pub covered: usize,
    /// Simulated seconds of every run.
    pub seconds: Vec<f64>,
    /// The verdicts counted as other, by confidence.
    pub others: Vec<String>,
}

impl Rates {
    fn median(v: &[f64]) -> f64 {
        crate::probe::stats::median(v)
    }

    pub fn line(&self, name: &str) -> String {
        let mut s = self.seconds.clone();
        s.sort_by(f64::total_cmp);
        let p90 = s.get((s.len() * 9) / 10).copied().unwrap_or(f64::NAN);
        format!(
            "{name}: {} runs: bracketed {}, likely {}, inconclusive {}, other {}, wrong unit {} (bracketed {}); interval held the truth in {} of {} bracketed; seconds median {:.0}, 90th {:.0}, max {:.0}",
            self.runs,
            self.bracketed,
            self.likely,
            self.inconclusive,
            self.other,
            self.wrong,
            self.wrong_bracketed,
            self.covered,
            self.bracketed,
            Self::median(&s),
            p90,
            s.last().copied().unwrap_or(f64::NAN)
        ) + &format!(" {:?}", self.others.iter().take(6).collect::<Vec<_>>())
    }
}

/// `runs` runs of the auto plan on a device of `unit` (None: no penalty)
/// whose paying pattern's rows lose `true_pct` per cent of their IOPS.
pub fn rates(
    plan: &Plan,
    seed: u64,
    runs: usize,
    noise: Noise,
    speed: &Speed,
    unit: Option<u64>,
    true_pct: f64,
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
        let right = inf.effective_unit_bytes == unit && unit.is_some();
        match (inf.confidence, right) {
            (Confidence::Bracketed, true) => {
                r.bracketed += 1;
                let held = inf.penalties.iter().any(|p| {
                    p.kind == ContrastKind::Offset
                        && p.pattern == Pattern::Randwrite
                        && p.ci95_pct[0] <= true_pct
                        && true_pct <= p.ci95_pct[1]
                });
                r.covered += usize::from(held);
            }
            (Confidence::Likely, true) => r.likely += 1,
            (Confidence::Bracketed | Confidence::Likely, false) => {
                r.wrong += 1;
                r.wrong_bracketed += usize::from(inf.confidence == Confidence::Bracketed);
            }
            (Confidence::Inconclusive, _) => r.inconclusive += 1,
            (c, _) => {
                r.other += 1;
                r.others.push(format!("{c} {:?}", inf.effective_unit_bytes));
            }
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

/// The seed's device: rounds that vary by ±5–7 % while the jitter is on
/// (at the auto preset's 0.125 s windows, paired), quiet while it is off,
/// on and off for 20 s in turn; some drift that windows do not average.
pub const SEED_NOISE: Noise = Noise {
    round_sd: 0.05,
    cell_sd: 0.01,
    jitter_1s: 0.0141,
    drift_sd: 0.03,
    drift_tau_s: 30.0,
    switching: Some((20.0, 20.0)),
    burst: 1.0,
};

#[test]
fn rates_on_changing_noise() {
    let plan = auto_plan(None);
    let seed_case = costdisk(65536, 3.0, 0.0);
    let r = rates(
        &plan,
        1,
        40,
        SEED_NOISE,
        &seed_case,
        Some(65536),
        fewer_iops(3.0),
    );
    eprintln!("{}", r.line("64 KiB unit, writes 3 %, jitter on and off"));
    let eight = costdisk(8192, 4.0, 2.0);
    let r = rates(
        &plan,
        2,
        40,
        SEED_NOISE,
        &eight,
        Some(8192),
        fewer_iops(4.0),
    );
    eprintln!(
        "{}",
        r.line("8 KiB unit, writes 4 %, reads 2 %, jitter on and off")
    );
    let none = |_: &Cell| 1.0;
    let r = rates(&plan, 3, 40, SEED_NOISE, &none, None, 0.0);
    eprintln!("{}", r.line("no penalty, jitter on and off"));
}
