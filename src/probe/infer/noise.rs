//! The noise a run meets, measured as it goes: how much of a cell's
//! round-to-round variation averages out as its window grows (jitter) and
//! how much does not (drift between a cell and its reference, which are
//! measured at different moments), and which rounds fell in a period of
//! much higher noise (a burst from a neighbour), to be set aside.
//!
//! **Jitter.** Every window is measured in two parts (split at half the
//! window asked for, `run::Window`). Jitter at time scales below a window
//! makes the parts differ: with variance c / L for a part of L seconds
//! (jitter white at that scale), ln(part₁) − ln(part₂) has variance
//! c (1/L₁ + 1/L₂), from which c is estimated per noise class. A whole
//! window of W seconds then carries c / W of it, and a paired difference
//! (two cells) 2c / W.
//!
//! **Drift.** What the paired differences vary by beyond 2c / W: b, the
//! same whatever the window. The variance of a paired difference at a
//! window of W seconds is modelled as v(W) = 2c / W + b.
//!
//! **Weights.** A round measured with windows of W seconds gets the
//! weight v(W₀) / v(W) (W₀ the plan's `runtime`): the relative precision
//! of its paired differences, which the tests and the unit fit take
//! (`stats::moderated_t`), times the round's own precision
//! (`probe::spread`: how far its cells strayed, against an ordinary
//! round). While every window is the same length and the noise steady,
//! every weight is about 1.
//!
//! **Set aside.** Per round, the squared deviations of its window parts and
//! of its paired differences (around each contrast's mean), each over
//! what the model expects, averaged: about 1 in an ordinary round. A round
//! whose average is more than [`SET_ASIDE`] times the median round's (and
//! beyond the 99.9 % point of a χ² average of that many terms) is set
//! aside: weight 0, and it does not count toward the plan's rounds. The
//! median round is the yardstick, so the noise most rounds have is the
//! ordinary one and only a minority can be set aside. Selecting rounds by
//! their spread, not by their differences' signs, leaves the tests'
//! means unbiased (for normal noise, a sample's mean and spread are
//! independent). The model is estimated again on the rounds kept, three
//! times.

use super::sequential::{paired_of, Contrast, NoiseClass, RoundWeights};
use super::spread;
use crate::probe::measure::CellSamples;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// A round whose noise (variance) exceeds the median round's this many
/// times is set aside: its SD twice the ordinary one or more.
pub const SET_ASIDE: f64 = 4.0;
/// Rounds needed before any can be set aside: the median of fewer is no
/// yardstick.
const MIN_ROUNDS: usize = 3;
/// The most of the paired differences' variance the window parts' jitter
/// is taken to explain.
const JITTER_SHARE: f64 = 0.9;
/// Deviations beyond this many robust SDs count as this many: one broken
/// measurement is an outlier (sequential.rs), not a burst.
const CLIP_SDS: f64 = 5.0;

/// One noise class's model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassNoise {
    pub class: NoiseClass,
    /// c: the variance of a cell's log rate times the window's seconds.
    pub jitter: f64,
    /// b: the variance of a paired difference that no window averages.
    pub drift: f64,
    /// The mean of ln(part₁ / part₂) (a window's start may differ from its
    /// end whatever the noise).
    pub parts_mean: f64,
}

impl ClassNoise {
    /// v(W): the variance of a paired difference with windows of `w` s.
    pub fn paired_var(&self, w: f64) -> f64 {
        2.0 * self.jitter / w.max(1e-3) + self.drift
    }
}

/// One round as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoundNoise {
    /// The round (from 0).
    pub round: u32,
    /// Its windows' median length, in seconds.
    pub window_s: f64,
    /// Cells it measured.
    pub cells: usize,
    /// Its noise against the median round's, as a ratio of SDs (1: an
    /// ordinary round); null when it had nothing to compare.
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub noise_ratio: f64,
    /// Set aside as a high-noise period: not used, not counted.
    pub set_aside: bool,
    /// Its cells' own precision against an ordinary round's
    /// (`probe::spread`): the inverse of its residual variance over the
    /// median round's, shrunk toward 1. Every weight of the round is
    /// multiplied by it.
    #[serde(default = "one")]
    pub precision: f64,
}

fn one() -> f64 {
    1.0
}

/// The model of one run's noise.
#[derive(Clone, Debug, Default)]
pub struct NoiseModel {
    /// W₀: the window every weight is relative to.
    pub reference_s: f64,
    pub classes: Vec<ClassNoise>,
    pub rounds: Vec<RoundNoise>,
}

impl RoundWeights for NoiseModel {
    fn weight(&self, class: NoiseClass, round: u32) -> f64 {
        NoiseModel::weight(self, class, round)
    }
}

impl NoiseModel {
    /// The weight of round `round`'s paired differences in `class`: 0 when
    /// set aside, else v(W₀) / v(W) (1 without a model).
    pub fn weight(&self, class: NoiseClass, round: u32) -> f64 {
        let Some(r) = self.rounds.iter().find(|r| r.round == round) else {
            return 1.0;
        };
        if r.set_aside {
            return 0.0;
        }
        let window = match self.class(class) {
            Some(c) if c.paired_var(r.window_s) > 0.0 => {
                c.paired_var(self.reference_s) / c.paired_var(r.window_s)
            }
            _ => 1.0,
        };
        window * r.precision
    }

    pub fn class(&self, class: NoiseClass) -> Option<&ClassNoise> {
        self.classes.iter().find(|c| c.class == class)
    }

    /// Rounds not set aside.
    pub fn kept(&self) -> u32 {
        self.rounds.iter().filter(|r| !r.set_aside).count() as u32
    }

    /// The rounds set aside, in order.
    pub fn set_aside(&self) -> Vec<u32> {
        self.rounds
            .iter()
            .filter(|r| r.set_aside)
            .map(|r| r.round)
            .collect()
    }
}

/// A window part difference: its class, round, ln(part₁ / part₂) and
/// 1/L₁ + 1/L₂.
struct Part {
    class: NoiseClass,
    round: u32,
    j: f64,
    inv: f64,
}

/// A paired difference's squared deviation from its contrast's mean over
/// the rounds kept, corrected for that mean (× n / (n − 1)).
struct Dev {
    class: NoiseClass,
    round: u32,
    sq: f64,
}

/// The model of `samples`' noise, judged on `contrasts`, with weights
/// relative to windows of `reference_s` seconds.
pub fn model(samples: &[CellSamples], contrasts: &[Contrast], reference_s: f64) -> NoiseModel {
    let parts = parts(samples);
    let mut rounds = round_list(samples);
    // Judge, fit on what is kept, judge again, until the rounds set aside
    // stop changing; then the model is fitted on that set.
    for _ in 0..MAX_PASSES {
        let before: Vec<bool> = rounds.iter().map(|r| r.set_aside).collect();
        let kept = kept_of(&rounds);
        let devs = deviations(samples, contrasts, &kept);
        let classes = fit_classes(&parts, &devs, &rounds, &kept);
        judge_rounds(&mut rounds, &parts, &devs, &classes);
        if rounds.iter().map(|r| r.set_aside).eq(before) {
            break;
        }
    }
    let kept = kept_of(&rounds);
    let devs = deviations(samples, contrasts, &kept);
    let classes = fit_classes(&parts, &devs, &rounds, &kept);
    let numbers: Vec<u32> = rounds.iter().map(|r| r.round).collect();
    for (r, p) in rounds.iter_mut().zip(spread::precisions(samples, &numbers)) {
        r.precision = p;
    }
    NoiseModel {
        reference_s,
        classes,
        rounds,
    }
}

/// Passes of judging the rounds at most (it settles in two or three).
const MAX_PASSES: usize = 8;

/// Whether a round of `rounds` is kept (not set aside).
fn kept_of(rounds: &[RoundNoise]) -> impl Fn(u32) -> bool {
    let kept: Vec<u32> = rounds
        .iter()
        .filter(|x| !x.set_aside)
        .map(|x| x.round)
        .collect();
    move |r| kept.contains(&r)
}

/// Every round measured, its median window and how many cells it ran.
fn round_list(samples: &[CellSamples]) -> Vec<RoundNoise> {
    let mut numbers: Vec<u32> = samples
        .iter()
        .flat_map(|s| s.rounds.iter().map(|r| r.round))
        .collect();
    numbers.sort_unstable();
    numbers.dedup();
    numbers
        .into_iter()
        .map(|round| {
            let windows: Vec<f64> = samples
                .iter()
                .flat_map(|s| s.rounds.iter().filter(|r| r.round == round))
                .map(|r| r.window.length_s)
                .collect();
            RoundNoise {
                round,
                window_s: super::stats::median(&windows),
                cells: windows.len(),
                noise_ratio: f64::NAN,
                set_aside: false,
                precision: 1.0,
            }
        })
        .collect()
}

fn parts(samples: &[CellSamples]) -> Vec<Part> {
    samples
        .iter()
        .flat_map(|s| {
            let class = NoiseClass::of_cell(&s.cell);
            s.rounds
                .iter()
                .filter(|r| r.window.has_parts())
                .map(move |r| {
                    let w = r.window;
                    Part {
                        class,
                        round: r.round,
                        j: (w.parts_iops[0] / w.parts_iops[1]).ln(),
                        inv: 1.0 / w.first_s + 1.0 / (w.length_s - w.first_s),
                    }
                })
        })
        .collect()
}

/// Every round's paired differences against their contrast's mean over
/// the rounds kept: a kept round's squared deviation corrected for that
/// mean (× n / (n − 1)), a set-aside round's as a new observation's
/// (÷ (1 + 1 / n)), so both estimate the same variance and a round set
/// aside is judged again on its own differences, not on its halves alone.
fn deviations(
    samples: &[CellSamples],
    contrasts: &[Contrast],
    kept: &dyn Fn(u32) -> bool,
) -> Vec<Dev> {
    let mut out = Vec::new();
    for c in contrasts {
        let all = paired_of(c, samples);
        let own: Vec<f64> = all.iter().filter(|&&(r, _)| kept(r)).map(|x| x.1).collect();
        if own.len() < 2 {
            continue;
        }
        let n = own.len() as f64;
        let mean = own.iter().sum::<f64>() / n;
        let class = NoiseClass::of(c);
        out.extend(all.iter().map(|&(round, x)| Dev {
            class,
            round,
            sq: if kept(round) {
                (x - mean).powi(2) * n / (n - 1.0)
            } else {
                (x - mean).powi(2) / (1.0 + 1.0 / n)
            },
        }));
    }
    out
}

/// The squared deviations of `xs` clipped at [`CLIP_SDS`] robust SDs; as
/// they are when their median is 0 (exact ties: a cap of 0 would zero
/// every term).
fn clipped(xs: &[f64]) -> Vec<f64> {
    let scale2 = super::stats::median(xs) / 0.4549; // median of χ²₁ is 0.4549
    if scale2.is_nan() || scale2 <= 0.0 {
        return xs.to_vec();
    }
    let cap = CLIP_SDS * CLIP_SDS * scale2;
    xs.iter().map(|&x| x.min(cap)).collect()
}

/// c and b of every class, from the parts and deviations of kept rounds.
fn fit_classes(
    parts: &[Part],
    devs: &[Dev],
    rounds: &[RoundNoise],
    kept: &dyn Fn(u32) -> bool,
) -> Vec<ClassNoise> {
    let mut classes: Vec<NoiseClass> = parts
        .iter()
        .map(|p| p.class)
        .chain(devs.iter().map(|d| d.class))
        .collect();
    classes.sort_unstable();
    classes.dedup();
    let window = |r: u32| {
        rounds
            .iter()
            .find(|x| x.round == r)
            .map_or(0.0, |x| x.window_s)
    };
    classes
        .into_iter()
        .map(|class| {
            let ps: Vec<&Part> = parts
                .iter()
                .filter(|p| p.class == class && kept(p.round))
                .collect();
            let (jitter, parts_mean) = jitter(&ps);
            let ds: Vec<&Dev> = devs
                .iter()
                .filter(|d| d.class == class && kept(d.round))
                .collect();
            let sq = clipped(&ds.iter().map(|d| d.sq).collect::<Vec<_>>());
            let mean = |xs: &mut dyn Iterator<Item = f64>| {
                let (n, s) = xs.fold((0.0, 0.0), |(n, s), x| (n + 1.0, s + x));
                if n > 0.0 {
                    s / n
                } else {
                    0.0
                }
            };
            // The jitter the parts show may explain at most
            // [`JITTER_SHARE`] of what the paired differences vary by: noise
            // correlated over longer than a part (a loaded host's) makes
            // the parts look jittery where longer windows would not help.
            let jitter = if ds.is_empty() {
                jitter
            } else {
                let most = mean(
                    &mut ds
                        .iter()
                        .zip(&sq)
                        .map(|(d, s)| s * window(d.round).max(1e-3) / 2.0),
                );
                jitter.min(JITTER_SHARE * most)
            };
            let drift = mean(
                &mut ds
                    .iter()
                    .zip(&sq)
                    .map(|(d, s)| s - 2.0 * jitter / window(d.round).max(1e-3)),
            )
            .max(0.0);
            ClassNoise {
                class,
                jitter,
                drift,
                parts_mean,
            }
        })
        .collect()
}

/// c from window parts: Σ (j − mean)² / Σ (1/L₁ + 1/L₂), corrected for
/// the mean; and the mean.
fn jitter(ps: &[&Part]) -> (f64, f64) {
    if ps.len() < 2 {
        return (0.0, 0.0);
    }
    let n = ps.len() as f64;
    let mean = ps.iter().map(|p| p.j).sum::<f64>() / n;
    let sq = clipped(&ps.iter().map(|p| (p.j - mean).powi(2)).collect::<Vec<_>>());
    let inv: f64 = ps.iter().map(|p| p.inv).sum();
    (sq.iter().sum::<f64>() / inv * n / (n - 1.0), mean)
}

/// Each round's noise against the model, and which to set aside.
fn judge_rounds(rounds: &mut [RoundNoise], parts: &[Part], devs: &[Dev], classes: &[ClassNoise]) {
    let class = |k: NoiseClass| classes.iter().find(|c| c.class == k);
    let means: Vec<(f64, usize)> = rounds
        .iter()
        .map(|r| {
            let mut terms: Vec<f64> = parts
                .iter()
                .filter(|p| p.round == r.round)
                .filter_map(|p| {
                    let c = class(p.class)?;
                    (c.jitter > 0.0).then(|| (p.j - c.parts_mean).powi(2) / (c.jitter * p.inv))
                })
                .collect();
            terms.extend(devs.iter().filter(|d| d.round == r.round).filter_map(|d| {
                let v = class(d.class)?.paired_var(r.window_s);
                (v > 0.0).then(|| d.sq / v)
            }));
            let n = terms.len();
            let sum: f64 = terms.iter().map(|t| t.min(CLIP_SDS * CLIP_SDS)).sum();
            (if n > 0 { sum / n as f64 } else { f64::NAN }, n)
        })
        .collect();
    let known: Vec<f64> = means.iter().filter(|m| m.1 > 0).map(|m| m.0).collect();
    let typical = super::stats::median(&known);
    for (r, (mean, n)) in rounds.iter_mut().zip(means) {
        r.noise_ratio = if n > 0 && typical > 0.0 {
            (mean / typical).sqrt()
        } else {
            f64::NAN
        };
        // Against a typical round of no noise at all every noisy round
        // would stand out: set nothing aside then.
        r.set_aside = known.len() >= MIN_ROUNDS
            && typical > 0.0
            && n > 0
            && mean > typical * SET_ASIDE.max(chi2_mean_quantile(n));
    }
}

/// The 99.9 % point of the mean of `n` χ²₁ values.
fn chi2_mean_quantile(n: usize) -> f64 {
    let k = n as f64;
    ChiSquared::new(k).map_or(f64::INFINITY, |d| d.inverse_cdf(0.999) / k)
}
