//! The window a round measures each cell for, chosen from the noise the
//! run has met (`noise`): longer windows average jitter out but not
//! drift, and cost time; the window that narrows the intervals most
//! within the time left is the one that reaches a decision soonest.
//!
//! With v(W) = 2c / W + b the variance of a paired difference at a window
//! of W seconds (`noise::ClassNoise`) and W + o the time a cell takes (o:
//! its warm-up and what else a cell costs, measured), the time left holds
//! n = left / (cells (W + o)) more rounds, and a comparison's interval at
//! the end is t(α, 6 + N − 1) / √(Σ 1/v) wide: every round kept so far at
//! its own window, and n more at W (N in all). A second of measuring
//! buys 1 / (v(W) (W + o)) of precision, so longer windows pay when jitter
//! dominates and the overhead o is large, but fewer rounds mean fewer
//! degrees of freedom for the variance and a larger t: the candidates
//! (the plan's `runtime` times 1, 2, 4 and 8, up to its longest window)
//! are compared on the interval they reach. The run moves to another only
//! when that buys [`GAIN`] times the precision (1 / width²), so the noise
//! model's own uncertainty does not make it hop.

use crate::probe::infer::t_quantile;
use crate::probe::infer::PRIOR_DF;
use crate::probe::infer::{NoiseModel, RoundNoise};
use crate::probe::measure::Grid;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How much more precision a window must buy to be moved to.
pub const GAIN: f64 = 1.25;

/// A window the run chose, from which round, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The first round (from 0) measured with it.
    pub from_round: u32,
    #[serde(with = "crate::probe::serde_figures::secs")]
    pub window_s: Duration,
    /// Why, in a sentence: the noise measured and the gain expected.
    pub why: String,
}

/// Why the rounds focused where they did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FocusReason {
    /// The fit or the block-size curve pointed at this unit.
    Unit,
    /// No unit named yet, and a small penalty not ruled out: the search
    /// in the ladder's 64 KiB blocks, with more aligned references.
    Search,
}

crate::spelled_as_serde!(FocusReason);

/// The unit the rounds focused on (`focus`), from which round, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Focus {
    pub from_round: u32,
    pub unit_bytes: u64,
    pub reason: FocusReason,
}

/// How the run spent its rounds: the windows it chose, the unit it
/// focused on, and the rounds it set aside, each with why.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pacing {
    /// Each window length the run measured with, from which round.
    pub windows: Vec<Step>,
    /// Each unit the rounds focused on, from which round (none: the
    /// plan's cells throughout).
    #[serde(default)]
    pub focus: Vec<Focus>,
    /// Every round as the noise model saw it at the end.
    #[serde(default)]
    pub rounds: Vec<RoundNoise>,
    /// The rounds set aside as a high-noise period.
    #[serde(default)]
    pub set_aside: Vec<u32>,
    /// All of it in a sentence.
    #[serde(default)]
    pub statement: String,
}

impl Pacing {
    /// The plan's first window, before any noise was measured.
    pub fn start(plan: &Grid) -> Pacing {
        Pacing {
            windows: vec![Step {
                from_round: 0,
                window_s: plan.runtime,
                why: "the plan's --runtime, while the first rounds measure the noise".into(),
            }],
            ..Pacing::default()
        }
    }

    /// The window in use.
    pub fn window(&self) -> Option<Duration> {
        self.windows.last().map(|s| s.window_s)
    }

    /// Rounds focused on `unit` from round `round`, if not already.
    pub fn focus_on(&mut self, round: u32, unit: u64, reason: FocusReason) {
        let now = Some((unit, reason));
        if self.focus.last().map(|f| (f.unit_bytes, f.reason)) != now {
            self.focus.push(Focus {
                from_round: round,
                unit_bytes: unit,
                reason,
            });
        }
    }

    /// The rounds as the final noise model saw them, and the sentence.
    pub fn finish(&mut self, noise: &NoiseModel) {
        self.rounds = noise.rounds.clone();
        self.set_aside = noise.set_aside();
        self.statement = statement(self);
    }
}

/// `windows of 0.125 s, then 0.5 s from round 4 (at 0.125 s …); rounds
/// focused on 64 KiB from round 3 (…); rounds 6–7 set aside as a
/// high-noise period (noise 2.6 × an ordinary round's)`.
fn statement(p: &Pacing) -> String {
    let mut parts = Vec::new();
    let windows: Vec<String> = p
        .windows
        .iter()
        .enumerate()
        .map(|(i, s)| match i {
            0 => format!("windows of {}", secs(s.window_s)),
            _ => format!(
                "{} from round {} ({})",
                secs(s.window_s),
                s.from_round + 1,
                s.why
            ),
        })
        .collect();
    parts.push(windows.join(", then "));
    for f in &p.focus {
        let u = crate::units::human(f.unit_bytes);
        parts.push(match f.reason {
            FocusReason::Unit => format!(
                "from round {} rounds focused on a unit of {u}: blocks of twice it (at most 64 KiB) at odd multiples of half of it and at multiples of it, which tell {u} from every other unit, and the rows whose blocks are whole units of it (smaller blocks cover part of a unit wherever they start), and aligned blocks just below it while they look slower per I/O",
                f.from_round + 1
            ),
            FocusReason::Search => format!(
                "from round {} rounds searched for a small penalty in blocks of {u}, with more offsets aligned to {u} as references (no unit named yet, and a penalty of a fifth of --min-effect not ruled out)",
                f.from_round + 1
            ),
        });
    }
    parts.extend(precision_clause(&p.rounds));
    if !p.set_aside.is_empty() {
        let worst = p
            .rounds
            .iter()
            .filter(|r| r.set_aside)
            .map(|r| r.noise_ratio)
            .fold(f64::NAN, f64::max);
        let names: Vec<String> = p.set_aside.iter().map(|r| (r + 1).to_string()).collect();
        parts.push(format!(
            "round{} {} set aside as a high-noise period (noise up to {worst:.1} × an ordinary round's): not used for any decision and not counted",
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        ));
    }
    parts.join("; ")
}

/// `rounds weighed by their own precision, 0.4 to 2.1 × an ordinary
/// round's (…)`, when the rounds kept differ by 2 × or more.
fn precision_clause(rounds: &[RoundNoise]) -> Option<String> {
    let (lo, hi) = rounds
        .iter()
        .filter(|r| !r.set_aside && r.precision.is_finite())
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), r| {
            (lo.min(r.precision), hi.max(r.precision))
        });
    (lo > 0.0 && hi >= 2.0 * lo).then(|| {
        format!("rounds weighed by their own precision, {lo:.1} to {hi:.1} × an ordinary round's (how far their cells strayed from the other rounds)")
    })
}

/// What the run knows when it picks the next round's window.
pub struct Now<'a> {
    pub plan: &'a Grid,
    pub noise: &'a NoiseModel,
    pub current: Duration,
    /// Seconds a cell took beyond its window so far, on average.
    pub overhead_s: f64,
    /// Cells the next round runs.
    pub cells: usize,
    /// Seconds left to measure: what is left of `--max-time`, else of the
    /// plan's most rounds at the current window.
    pub left_s: f64,
    /// The error level of each interval (`sequential::Params`).
    pub alpha: f64,
}

/// The windows to choose from.
fn candidates(plan: &Grid) -> Vec<Duration> {
    (0..4)
        .map(|k| plan.runtime * (1 << k))
        .filter(|w| *w <= plan.max_runtime.max(plan.runtime))
        .collect()
}

/// The paired variance at a window of `w` seconds, averaged over the
/// classes of blocks up to the ladder's (they decide the unit).
fn variance(noise: &NoiseModel, w: f64) -> Option<f64> {
    let v: Vec<f64> = noise
        .classes
        .iter()
        .filter(|c| !c.class.large)
        .map(|c| c.paired_var(w))
        .filter(|v| *v > 0.0)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The half-width (log IOPS) of a comparison's interval by the end of the
/// time left, were every round from now on measured with windows of `w`:
/// the rounds kept so far at their own windows' precision, and as many
/// of `w` as fit, under the t quantile of the moderated t's degrees of
/// freedom (few long rounds pay for it). None when the model has no
/// variance yet, or not one round of `w` fits.
fn reach(now: &Now, w: Duration) -> Option<f64> {
    let s = w.as_secs_f64();
    let v = variance(now.noise, s)?;
    let kept = now.noise.rounds.iter().filter(|r| !r.set_aside);
    let (done, precision) = kept.fold((0.0, 0.0), |(n, p), r| {
        let vr = variance(now.noise, r.window_s).unwrap_or(v);
        (n + 1.0, p + 1.0 / vr)
    });
    let more = (now.left_s / (now.cells.max(1) as f64 * (s + now.overhead_s))).floor();
    if more < 1.0 {
        return None;
    }
    let n = done + more;
    let t = t_quantile(now.alpha, PRIOR_DF + n - 1.0);
    Some(t / (precision + more / v).sqrt())
}

/// The next round's window and, when it changes, why: the candidate that
/// narrows the intervals most by the end, moved to when it buys [`GAIN`]
/// times the precision (1 / half-width²) of the window in use.
pub fn next(now: &Now) -> Option<(Duration, String)> {
    let here = reach(now, now.current)?;
    let (best, width) = candidates(now.plan)
        .into_iter()
        .filter_map(|w| Some((w, reach(now, w)?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    let gain = (here / width).powi(2);
    (best != now.current && gain >= GAIN).then(|| (best, why(now, best, gain)))
}

/// `at 0.125 s windows rounds varied by ±6.2 % (±5.6 % jitter, which
/// longer windows average out; ±2.7 % drift, which they do not): 0.5 s
/// windows buy 1.9 × the precision by the end`.
fn why(now: &Now, next: Duration, gain: f64) -> String {
    let w = now.current.as_secs_f64();
    let total = variance(now.noise, w).unwrap_or(0.0);
    let jitter: Vec<f64> = now
        .noise
        .classes
        .iter()
        .filter(|c| !c.class.large)
        .map(|c| 2.0 * c.jitter / w)
        .collect();
    let jitter = jitter.iter().sum::<f64>() / jitter.len().max(1) as f64;
    let pct = |v: f64| (v.max(0.0).sqrt().exp() - 1.0) * 100.0;
    format!(
        "at {} windows rounds varied by ±{:.1} % (±{:.1} % jitter, which longer windows average out; ±{:.1} % drift, which they do not): {} windows buy {:.1} × the precision by the end",
        secs(now.current),
        pct(total),
        pct(jitter),
        pct(total - jitter),
        secs(next),
        gain
    )
}

/// `0.125 s`.
pub fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{} s", (s * 1000.0).round() / 1000.0)
    } else {
        format!("{s:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::infer::NoiseClass;
    use crate::probe::infer::{ClassNoise, RoundNoise};

    fn model(jitter: f64, drift: f64) -> NoiseModel {
        let class = NoiseClass {
            pattern: crate::probe::measure::Pattern::Randwrite,
            large: false,
        };
        NoiseModel {
            reference_s: 0.125,
            classes: vec![ClassNoise {
                class,
                jitter,
                drift,
                parts_mean: 0.0,
            }],
            rounds: vec![RoundNoise {
                round: 0,
                window_s: 0.125,
                cells: 30,
                noise_ratio: 1.0,
                set_aside: false,
                precision: 1.0,
            }],
        }
    }

    /// A device whose cells cost 0.2 s beyond their window (slow I/Os
    /// drained after it, a long warm-up).
    fn now<'a>(plan: &'a Grid, noise: &'a NoiseModel, left_s: f64) -> Now<'a> {
        Now {
            plan,
            noise,
            current: plan.runtime,
            overhead_s: 0.2,
            cells: 30,
            left_s,
            alpha: 1e-5,
        }
    }

    #[test]
    fn the_statement_says_when_rounds_weighed_apart() {
        let rounds = |ps: &[f64]| -> Vec<RoundNoise> {
            ps.iter()
                .enumerate()
                .map(|(i, &precision)| RoundNoise {
                    precision,
                    round: i as u32,
                    ..model(0.0, 0.0).rounds[0].clone()
                })
                .collect()
        };
        let c = precision_clause(&rounds(&[0.42, 1.0, 2.1])).unwrap();
        assert!(c.contains("0.4 to 2.1 × an ordinary round's"), "{c}");
        assert_eq!(precision_clause(&rounds(&[0.8, 1.0, 1.3])), None);
        assert_eq!(precision_clause(&[]), None);
    }

    #[test]
    fn jitter_buys_longer_windows_and_drift_does_not() {
        let plan = super::super::simulated::auto_plan(None);
        // ±4 % per cell at 0.125 s of jitter, little drift, cells that
        // cost 0.2 s beyond their window, 10 minutes left: 0.5 s windows
        // (1 s ones would leave too few rounds for the t).
        let jittery = model(0.0002, 0.00005);
        let (w, why) = next(&now(&plan, &jittery, 600.0)).expect("a longer window");
        assert_eq!(w, Duration::from_millis(500), "{why}");
        assert!(
            why.starts_with("at 0.125 s windows rounds varied by ±5.9 % (±5.8 % jitter"),
            "{why}"
        );
        assert!(
            why.ends_with("0.5 s windows buy 1.5 × the precision by the end"),
            "{why}"
        );
        // Drift alone: the shortest window stays.
        assert_eq!(next(&now(&plan, &model(0.0, 0.004), 600.0)), None);
        // Two minutes left: the rounds of longer windows are too few.
        assert_eq!(next(&now(&plan, &jittery, 120.0)), None);
        // With little besides the window per cell, jitter alone buys less
        // than the move is worth: information per second hardly depends
        // on the window then.
        let quick = Now {
            overhead_s: 0.03,
            ..now(&plan, &jittery, 600.0)
        };
        assert_eq!(next(&quick), None);
    }
}
