//! The sequential procedure: which comparisons (contrasts) the grid asks,
//! how each is judged after every round, and which cells still need
//! measuring.
//!
//! **Pairing.** Every round runs every active cell, so a contrast is judged
//! on its per-round differences of log IOPS, d_r = ln(cell_r) − ln(ref_r):
//! drift over the run (heat, background work) hits both alike and cancels.
//!
//! **Robustness.** A round whose difference lies more than 5 robust
//! standard deviations (1.4826 × the median absolute deviation, pooled over
//! the contrasts of its noise class) from its contrast's median is left out, at most
//! one round in five: one bad round cannot move the estimate. Broken
//! measurements (too few completions, a stall) were already run again by
//! the runner.
//!
//! **Moderated t.** Each contrast's variance is shrunk toward the variance
//! pooled over the contrasts of its noise class (its pattern, and blocks
//! up to the ladder's or larger ones: large blocks can be far noisier), as
//! if it had [`PRIOR_DF`] more rounds of that pooled noise, or as many as
//! the pool has when that is fewer (Smyth's moderated t, 2004): few rounds
//! then still give a usable test, and a contrast noisier than the rest
//! keeps most of its own variance.
//!
//! **Error rates under optional stopping.** After round `min_rounds` and
//! every round after it, each open contrast is looked at. Its interval is
//! taken at level 1 − α / (m × K), for m contrasts the plan may ask and K
//! looks at most (Bonferroni over contrasts and looks): whenever the run
//! stops, every interval holds at once with probability ≥ 1 − α, so the
//! decisions are simultaneously right at that rate.
//!
//! **Decisions.** Slower: the interval lies below 1. Faster: above 1. Fine:
//! its lower end is above 1 − `min_effect` (no penalty as large as the
//! smallest one worth finding). Otherwise open: measured again, until the
//! plan's most rounds.

use super::stats;
use crate::probe::measure::Pattern;
use crate::probe::measure::{large_block, Cell, Grid};
use crate::probe::measure::{CellSamples, Key};
use serde::Serialize;

/// Family-wise error rate of all decisions of one run.
pub const ALPHA: f64 = 0.05;
/// Prior degrees of freedom of the moderated variance.
pub const PRIOR_DF: f64 = 6.0;
/// A paired difference further than this many robust SDs is an outlier.
const OUTLIER_SDS: f64 = 5.0;
/// The robust scale is never taken below 0.5 % (log units), so a
/// near-noiseless run does not call ordinary jitter an outlier.
const MIN_SCALE: f64 = 0.005;

/// What a contrast compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContrastKind {
    /// A misaligned cell against offset 0 of its block size and pattern.
    Offset,
    /// Aligned IOPS of a block size against the next larger one: smaller
    /// blocks significantly slower per I/O are read-modify-write.
    BlockSize,
    /// The same cell on another target against the first target.
    Target,
}

crate::spelled_as_serde!(ContrastKind);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    Slower,
    Faster,
    /// No penalty as large as `min_effect`.
    Fine,
    /// Not decided (yet, or within the plan's rounds).
    Open,
}

crate::spelled_as_serde!(Decision);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contrast {
    pub kind: ContrastKind,
    pub subject: Key,
    pub reference: Key,
}

/// One contrast as judged at a look.
#[derive(Clone, Debug)]
pub struct Assessment {
    pub contrast: Contrast,
    /// Paired rounds measured, and how many of them were left out as
    /// outliers.
    pub n: usize,
    pub outliers: usize,
    /// exp(mean paired log difference): subject IOPS over reference IOPS.
    pub ratio: f64,
    /// The simultaneous interval of the ratio (see the module notes).
    pub ci: [f64; 2],
    pub p: f64,
    /// p × m × K, capped at 1: below α exactly when the interval excludes 1.
    pub p_adjusted: f64,
    pub decision: Decision,
}

/// The settings of the procedure for one plan.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Contrasts the plan may ask (zoom and focus included) and looks at
    /// most.
    pub family: usize,
    pub looks: u32,
    pub min_rounds: u32,
    pub min_effect: f64,
}

impl Params {
    pub fn of(plan: &Grid, targets: usize) -> Params {
        let all: Vec<Cell> = plan.all_cells().copied().collect();
        // Focus rows are asked of one target only (`adaptive`).
        let focus = if targets == 1 {
            focus_contrasts(&plan.focus, 1).len()
        } else {
            0
        };
        Params {
            family: (contrasts(&all, targets).len() + focus).max(1),
            // Every round is a look, and a round set aside as a burst is
            // replaced: a run takes up to twice the plan's rounds
            // (`adaptive::drive`).
            // Every round is a look, and a round set aside as a burst is
            // replaced: a run takes up to twice the plan's rounds
            // (`adaptive::drive`).
            looks: (2 * plan.rounds).saturating_sub(plan.min_rounds) + 1,
            min_rounds: plan.min_rounds.max(2),
            min_effect: plan.min_effect,
        }
    }

    /// Two-sided error level of each comparison's interval: half the
    /// run's [`ALPHA`] over the comparisons and looks (the other half is
    /// the patterns' at the unit, [`Params::pattern_alpha`]).
    pub fn per_interval_alpha(&self) -> f64 {
        ALPHA / 2.0 / (self.family as f64 * f64::from(self.looks))
    }

    /// Two-sided error level of each pattern's penalty at the unit
    /// (`analyse::pattern_penalties`): the other half of [`ALPHA`], over
    /// `patterns` and the looks, so every interval of the run holds
    /// together at 95 %.
    pub fn pattern_alpha(&self, patterns: usize) -> f64 {
        ALPHA / 2.0 / (patterns.max(1) as f64 * f64::from(self.looks))
    }
}

/// The rounds the plan can run in its budget (every cell in every round),
/// and the largest round-to-round noise (SD of the paired differences, in
/// percent) at which those rounds can still decide a penalty of
/// `min_effect`: the simultaneous interval's half-width t · sd / √n must
/// not exceed ln(1 / (1 − min_effect)).
pub fn resolvable(plan: &Grid, targets: usize) -> (u32, f64) {
    let p = Params::of(plan, targets);
    let round = (plan.runtime + plan.warmup) * (plan.cells.len() * targets.max(1)) as u32;
    let n = match plan.max_time {
        Some(max) => {
            let fit = (max.as_secs_f64() / round.as_secs_f64().max(1e-9)).floor() as u32;
            fit.clamp(1, plan.rounds)
        }
        None => plan.rounds,
    };
    let n_f = f64::from(n.max(2));
    let t = stats::t_quantile(p.per_interval_alpha(), PRIOR_DF + n_f - 1.0);
    let sd = -(1.0 - plan.min_effect).ln() * n_f.sqrt() / t;
    (n, (sd.exp() - 1.0) * 100.0)
}

/// Every contrast among `cells` on `targets` targets: on each target,
/// each misaligned cell against offset 0 of its block size and pattern,
/// and each aligned block size against the next larger aligned one of its
/// pattern; then each cell of every further target against the first's.
pub fn contrasts(cells: &[Cell], targets: usize) -> Vec<Contrast> {
    let mut v = Vec::new();
    for target in 0..targets {
        let key = |cell: Cell| Key { target, cell };
        for c in cells.iter().filter(|c| c.offset != 0) {
            let reference = Cell { offset: 0, ..*c };
            if cells.contains(&reference) {
                v.push(Contrast {
                    kind: ContrastKind::Offset,
                    subject: key(*c),
                    reference: key(reference),
                });
            }
        }
        let mut aligned: Vec<Cell> = cells.iter().filter(|c| c.offset == 0).copied().collect();
        aligned.sort_by_key(|c| (c.pattern, c.block_size));
        aligned.dedup();
        for w in aligned.windows(2) {
            if w[0].pattern == w[1].pattern {
                v.push(Contrast {
                    kind: ContrastKind::BlockSize,
                    subject: key(w[0]),
                    reference: key(w[1]),
                });
            }
        }
    }
    for target in 1..targets {
        for &cell in cells {
            v.push(Contrast {
                kind: ContrastKind::Target,
                subject: Key { target, cell },
                reference: Key { target: 0, cell },
            });
        }
    }
    v
}

/// Per-round paired log differences of a contrast, with their rounds.
pub fn paired_of(c: &Contrast, samples: &[CellSamples]) -> Vec<(u32, f64)> {
    let find = |k: &Key| samples.iter().find(|s| s.key() == *k);
    let (Some(s), Some(r)) = (find(&c.subject), find(&c.reference)) else {
        return Vec::new();
    };
    s.rounds
        .iter()
        .filter_map(|x| {
            let y = r.in_round(x.round)?;
            (x.iops > 0.0 && y > 0.0).then(|| (x.round, x.iops.ln() - y.ln()))
        })
        .collect()
}

/// Weighted values: `x[i]` has variance σ² / `w[i]` ([`RoundWeights`]'s
/// weights; all 1 while every window is alike).
#[derive(Clone, Debug, Default)]
pub struct Weighted {
    pub x: Vec<f64>,
    pub w: Vec<f64>,
}

impl Weighted {
    /// `pairs` (round, value) weighted by `weight(round)`, those of
    /// weight 0 (rounds set aside) left out.
    pub fn of(pairs: &[(u32, f64)], weight: &dyn Fn(u32) -> f64) -> Weighted {
        let (mut x, mut w) = (Vec::new(), Vec::new());
        for &(round, v) in pairs {
            let wt = weight(round);
            if wt > 0.0 {
                x.push(v);
                w.push(wt);
            }
        }
        Weighted { x, w }
    }

    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// Each value's deviation from the median, in units of its own SD
    /// (× √w).
    fn standardized(&self) -> Vec<f64> {
        let m = stats::median(&self.x);
        self.x
            .iter()
            .zip(&self.w)
            .map(|(x, w)| (x - m) * w.sqrt())
            .collect()
    }
}

/// The robust SD (at weight 1) of a class's paired differences around
/// their contrasts' medians (the median's own zero deviation left out).
pub(crate) fn robust_scale(groups: &[Weighted]) -> f64 {
    let mut dev = Vec::new();
    for g in groups.iter().filter(|g| g.len() >= 3) {
        let mut d: Vec<f64> = g.standardized().iter().map(|x| x.abs()).collect();
        d.sort_by(f64::total_cmp);
        if g.len() % 2 == 1 {
            d.remove(0);
        }
        dev.extend(d);
    }
    (1.4826 * stats::median(&dev)).max(MIN_SCALE)
}

/// `xs` without its outliers (at most one in five, largest first, by
/// their standardized deviation), and how many were left out.
pub(crate) fn without_outliers(xs: &Weighted, scale: f64) -> (Weighted, usize) {
    if xs.len() < 4 {
        return (xs.clone(), 0);
    }
    let z = xs.standardized();
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&a, &b| z[b].abs().total_cmp(&z[a].abs()));
    let cap = xs.len().div_ceil(5);
    let drop: Vec<usize> = idx
        .into_iter()
        .take(cap)
        .filter(|&i| z[i].abs() > OUTLIER_SDS * scale)
        .collect();
    let keep = |i: &usize| !drop.contains(i);
    let kept = Weighted {
        x: (0..xs.len()).filter(keep).map(|i| xs.x[i]).collect(),
        w: (0..xs.len()).filter(keep).map(|i| xs.w[i]).collect(),
    };
    (kept, drop.len())
}

/// How much each round's paired differences weigh in a noise class: the
/// precision its window and its own cells' spread gave (`probe::spread`),
/// 0 for a round set aside (`noise::NoiseModel`
/// says it from the noise it measured; the decisions here only read it).
pub trait RoundWeights {
    fn weight(&self, class: NoiseClass, round: u32) -> f64;
}

/// Every round weighs the same.
#[cfg(test)]
pub struct Equal;

#[cfg(test)]
impl RoundWeights for Equal {
    fn weight(&self, _: NoiseClass, _: u32) -> f64 {
        1.0
    }
}

/// The contrasts whose noise is pooled together: one pattern, and blocks
/// up to the ladder's or larger ones ([`large_block`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct NoiseClass {
    pub pattern: Pattern,
    pub large: bool,
}

impl NoiseClass {
    /// A row's class: its pattern and block size.
    pub fn of_cell(cell: &Cell) -> NoiseClass {
        NoiseClass {
            pattern: cell.pattern,
            large: large_block(cell.block_size),
        }
    }

    /// A contrast's class: large when either of its cells is.
    pub fn of(c: &Contrast) -> NoiseClass {
        let bs = c.subject.cell.block_size.max(c.reference.cell.block_size);
        NoiseClass::of_cell(&Cell {
            block_size: bs,
            ..c.subject.cell
        })
    }
}

/// One class's contrasts: each one's index, its paired differences with
/// outliers left out and how many were, and the variance pooled over them.
struct Group {
    class: NoiseClass,
    members: Vec<(usize, Weighted, usize)>,
    pooled: Option<stats::Pooled>,
}

fn by_class(
    contrasts: &[Contrast],
    samples: &[CellSamples],
    noise: &dyn RoundWeights,
) -> Vec<Group> {
    let mut classes: Vec<NoiseClass> = contrasts.iter().map(NoiseClass::of).collect();
    classes.sort_unstable();
    classes.dedup();
    classes
        .into_iter()
        .map(|class| {
            let idx: Vec<usize> = (0..contrasts.len())
                .filter(|&i| NoiseClass::of(&contrasts[i]) == class)
                .collect();
            let weight = |round| noise.weight(class, round);
            let raw: Vec<Weighted> = idx
                .iter()
                .map(|&i| Weighted::of(&paired_of(&contrasts[i], samples), &weight))
                .collect();
            let scale = robust_scale(&raw);
            let members: Vec<(usize, Weighted, usize)> = idx
                .into_iter()
                .zip(&raw)
                .map(|(i, g)| {
                    let (kept, dropped) = without_outliers(g, scale);
                    (i, kept, dropped)
                })
                .collect();
            let pooled = stats::pooled_variance(
                members.iter().map(|m| (m.1.x.as_slice(), m.1.w.as_slice())),
            );
            Group {
                class,
                members,
                pooled,
            }
        })
        .collect()
}

/// Judge every contrast on what was measured so far, each round weighted
/// as `noise` says (rounds set aside left out).
pub fn assess(
    contrasts: &[Contrast],
    samples: &[CellSamples],
    p: &Params,
    noise: &dyn RoundWeights,
) -> Vec<Assessment> {
    let mut out: Vec<Option<Assessment>> = vec![None; contrasts.len()];
    for g in by_class(contrasts, samples, noise) {
        for (i, d, dropped) in g.members {
            out[i] = Some(judge(contrasts[i], &d, dropped, g.pooled, p));
        }
    }
    out.into_iter()
        .map(|a| a.expect("every contrast is in its class's group"))
        .collect()
}

/// The variance of the paired differences pooled per noise class,
/// outliers left out: the noise the decisions were made against (at the
/// weight-1 window, `noise::NoiseModel`).
pub fn pooled_variances(
    contrasts: &[Contrast],
    samples: &[CellSamples],
    noise: &dyn RoundWeights,
) -> Vec<(NoiseClass, stats::Pooled)> {
    by_class(contrasts, samples, noise)
        .into_iter()
        .filter_map(|g| Some((g.class, g.pooled?)))
        .collect()
}

/// The moderated t of `d` with `pooled` as its prior: [`PRIOR_DF`]
/// degrees of freedom, or fewer when the pool itself has fewer (a class
/// of one contrast measured twice lends it one, not six).
pub fn moderated(d: &Weighted, pooled: Option<stats::Pooled>, alpha: f64) -> stats::TInterval {
    let prior_df = pooled.map_or(PRIOR_DF, |p| p.df.min(PRIOR_DF));
    stats::moderated_t(&d.x, &d.w, pooled.map(|p| p.var), prior_df, alpha)
}

/// The pool of a class without one of its members, `d`: the prior a
/// contrast's own variance is shrunk toward must come from the others
/// (Smyth's prior is what the other genes say). Counting its own rounds
/// twice, in the pool and as its own, overstated the degrees of freedom
/// where the pool is small: the large blocks' class has two contrasts, so
/// after two rounds half the pool was the contrast itself, and its own
/// luck decided 64 KiB against 1 MiB in 5 of 400 simulated runs without
/// a penalty. None when nothing is left.
fn pool_without(pooled: Option<stats::Pooled>, d: &Weighted) -> Option<stats::Pooled> {
    let p = pooled?;
    let own = stats::pooled_variance(std::iter::once((d.x.as_slice(), d.w.as_slice())));
    let Some(own) = own else {
        return Some(p);
    };
    let df = p.df - own.df;
    (df > 0.5).then(|| stats::Pooled {
        var: ((p.var * p.df - own.var * own.df) / df).max(0.0),
        df,
    })
}

/// One contrast's interval and decision.
fn judge(
    c: Contrast,
    d: &Weighted,
    outliers: usize,
    pooled: Option<stats::Pooled>,
    p: &Params,
) -> Assessment {
    let a = p.per_interval_alpha();
    let t = moderated(d, pool_without(pooled, d), a);
    let decided = d.len() as u32 >= p.min_rounds;
    let decision = if !decided || !t.ci[0].is_finite() {
        Decision::Open
    } else if t.ci[1] < 0.0 {
        Decision::Slower
    } else if t.ci[0] > 0.0 {
        Decision::Faster
    } else if t.ci[0] > (1.0 - p.min_effect).ln() {
        Decision::Fine
    } else {
        Decision::Open
    };
    // Against the run's 0.05: p_adjusted below it is a decision.
    let factor = ALPHA / a;
    Assessment {
        contrast: c,
        n: d.len() + outliers,
        outliers,
        ratio: t.mean.exp(),
        ci: [t.ci[0].exp(), t.ci[1].exp()],
        p: t.p,
        p_adjusted: (t.p * factor).min(1.0),
        decision,
    }
}

/// The cells round `rounds_done + 1` runs, among `keys` (every cell
/// planned so far): those the open contrasts still need (subjects and
/// references that have had fewer than `max_rounds`), and those no contrast
/// covers (nothing to decide: they run every round, for their own
/// intervals).
pub fn still_needed(
    keys: &[Key],
    contrasts: &[Contrast],
    assessed: &[Assessment],
    rounds_done: u32,
    max_rounds: u32,
) -> Vec<Key> {
    let covered = |k: &Key| {
        contrasts
            .iter()
            .any(|c| c.subject == *k || c.reference == *k)
    };
    let mut v: Vec<Key> = assessed
        .iter()
        .filter(|a| a.decision == Decision::Open && (a.n as u32) < max_rounds)
        .flat_map(|a| [a.contrast.subject, a.contrast.reference])
        .chain(
            keys.iter()
                .filter(|k| rounds_done < max_rounds && !covered(k))
                .copied(),
        )
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The zoom is wanted when an offset contrast at the largest alignment of
/// the first cells was slower, or aligned blocks of the ladder's size were
/// slower than larger ones: the unit may be larger than they can tell.
pub fn wants_zoom(plan: &Grid, assessed: &[Assessment]) -> bool {
    let ladder_bs = plan
        .cells
        .iter()
        .filter(|c| c.offset != 0)
        .map(|c| c.block_size)
        .max();
    let curve = assessed.iter().any(|a| {
        a.contrast.kind == ContrastKind::BlockSize
            && a.decision == Decision::Slower
            && Some(a.contrast.subject.cell.block_size) == ladder_bs
    });
    let top = plan
        .cells
        .iter()
        .filter(|c| c.offset != 0)
        .map(|c| crate::units::alignment_of(c.offset))
        .max();
    !plan.zoom.is_empty()
        && (curve
            || assessed.iter().any(|a| {
                a.contrast.kind == ContrastKind::Offset
                    && a.decision == Decision::Slower
                    && Some(crate::units::alignment_of(a.contrast.subject.cell.offset)) == top
            }))
}

/// The offset contrasts of focus cells: each against offset 0 of its
/// block size. No block-size contrasts: the curve keeps the plan's own
/// block sizes.
pub fn focus_contrasts(cells: &[Cell], targets: usize) -> Vec<Contrast> {
    (0..targets)
        .flat_map(|target| {
            cells
                .iter()
                .filter(|c| c.offset != 0)
                .map(move |&c| Contrast {
                    kind: ContrastKind::Offset,
                    subject: Key { target, cell: c },
                    reference: Key {
                        target,
                        cell: Cell { offset: 0, ..c },
                    },
                })
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::probe::measure::new_histogram;
    use crate::probe::measure::RoundSample;

    fn normal(rng: &mut fastrand::Rng) -> f64 {
        let u1 = rng.f64().max(1e-300);
        let u2 = rng.f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    fn cell(bs: u32, offset: u64) -> Cell {
        Cell {
            block_size: bs,
            offset,
            pattern: Pattern::Randwrite,
        }
    }

    /// Rounds of a grid: `speed(cell)` scales 1000 IOPS; each round has a
    /// drift shared by all cells (`drift` SD) and each measurement its own
    /// noise (`noise` SD), both on log IOPS.
    pub(crate) fn simulate(
        cells: &[Cell],
        rounds: u32,
        drift: f64,
        noise: f64,
        rng: &mut fastrand::Rng,
        speed: &dyn Fn(&Cell) -> f64,
    ) -> Vec<CellSamples> {
        let mut out: Vec<CellSamples> = cells
            .iter()
            .map(|&c| CellSamples {
                target: 0,
                cell: c,
                rounds: Vec::new(),
                latency: new_histogram(),
            })
            .collect();
        for round in 0..rounds {
            let shared = drift * normal(rng);
            for s in &mut out {
                let iops = 1000.0 * speed(&s.cell) * (shared + noise * normal(rng)).exp();
                s.rounds.push(RoundSample {
                    round,
                    iops,
                    low_ns: 0,
                    retries: 0,
                    broken: false,
                    window: Default::default(),
                });
            }
        }
        out
    }

    fn params(family: usize, looks: u32) -> Params {
        Params {
            family,
            looks,
            min_rounds: 3,
            min_effect: 0.1,
        }
    }

    /// Runs the sequential procedure on a simulated grid, as the prober
    /// does: look after every round from the third, drop decided contrasts.
    fn sequential(
        cells: &[Cell],
        max_rounds: u32,
        drift: f64,
        noise: f64,
        rng: &mut fastrand::Rng,
        speed: &dyn Fn(&Cell) -> f64,
    ) -> Vec<Assessment> {
        let all = simulate(cells, max_rounds, drift, noise, rng, speed);
        let cs = contrasts(cells, 1);
        let p = params(cs.len(), max_rounds - 2);
        let mut final_: Vec<Option<Assessment>> = vec![None; cs.len()];
        for r in 3..=max_rounds {
            let seen: Vec<CellSamples> = all
                .iter()
                .map(|s| CellSamples {
                    target: 0,
                    cell: s.cell,
                    rounds: s.rounds[..r as usize].to_vec(),
                    latency: new_histogram(),
                })
                .collect();
            let look = assess(&cs, &seen, &p, &Equal);
            for (i, a) in look.into_iter().enumerate() {
                let done = final_[i]
                    .as_ref()
                    .is_some_and(|f| f.decision != Decision::Open);
                if !done {
                    final_[i] = Some(a);
                }
            }
        }
        final_.into_iter().map(|a| a.expect("judged")).collect()
    }

    fn ladder() -> Vec<Cell> {
        let mut v = vec![cell(4096, 0), cell(16384, 0), cell(65536, 0)];
        v.extend([512, 1024, 2048, 4096, 8192, 16384, 32768].map(|o| cell(65536, o)));
        v.push(cell(4096, 512));
        v
    }

    #[test]
    fn contrasts_pair_offsets_with_aligned_and_block_sizes_in_order() {
        let cs = contrasts(&ladder(), 1);
        assert_eq!(
            cs.iter().filter(|c| c.kind == ContrastKind::Offset).count(),
            8
        );
        let bs: Vec<(u32, u32)> = cs
            .iter()
            .filter(|c| c.kind == ContrastKind::BlockSize)
            .map(|c| (c.subject.cell.block_size, c.reference.cell.block_size))
            .collect();
        assert_eq!(bs, vec![(4096, 16384), (16384, 65536)]);
    }

    #[test]
    fn no_false_decisions_beyond_alpha_on_a_null_grid() {
        // Every cell equally fast: any "slower" or "faster" is an error of
        // the family. Drift is large, so unpaired tests would drown in it.
        let mut rng = fastrand::Rng::with_seed(5);
        let cells = ladder();
        let runs = 300;
        let mut errors = 0;
        let mut fine = 0;
        for _ in 0..runs {
            let a = sequential(&cells, 12, 0.2, 0.04, &mut rng, &|_| 1.0);
            if a.iter()
                .any(|x| matches!(x.decision, Decision::Slower | Decision::Faster))
            {
                errors += 1;
            }
            fine += a.iter().filter(|x| x.decision == Decision::Fine).count();
        }
        let rate = errors as f64 / runs as f64;
        assert!(rate <= 0.05, "family-wise error rate {rate}");
        // And the procedure does decide: most contrasts end "fine".
        assert!(fine as f64 / (runs * 10) as f64 > 0.9, "fine {fine}");
    }

    #[test]
    fn intervals_cover_the_true_ratio_simultaneously() {
        // Offsets below 4 KiB are 30 % slower; every decided interval must
        // hold the true ratio, in at least 95 % of runs all at once.
        let mut rng = fastrand::Rng::with_seed(9);
        let cells = ladder();
        let truth = |c: &Cell| {
            if c.offset % 4096 == 0 {
                1.0
            } else {
                0.7
            }
        };
        let runs = 300;
        let mut all_covered = 0;
        for _ in 0..runs {
            let a = sequential(&cells, 12, 0.1, 0.05, &mut rng, &truth);
            let ok = a.iter().all(|x| {
                let want = truth(&x.contrast.subject.cell) / truth(&x.contrast.reference.cell);
                x.ci[0] <= want && want <= x.ci[1]
            });
            all_covered += usize::from(ok);
        }
        let rate = all_covered as f64 / runs as f64;
        assert!(rate >= 0.95, "simultaneous coverage {rate}");
    }

    #[test]
    fn penalties_of_10_to_50_percent_are_found_early() {
        let mut rng = fastrand::Rng::with_seed(17);
        let cells = ladder();
        for pen in [0.5, 0.3, 0.15, 0.1] {
            let speed = |c: &Cell| if c.offset % 4096 == 0 { 1.0 } else { 1.0 - pen };
            let a = sequential(&cells, 12, 0.1, 0.03, &mut rng, &speed);
            for x in a.iter().filter(|x| x.contrast.kind == ContrastKind::Offset) {
                let slow = x.contrast.subject.cell.offset % 4096 != 0;
                let want = if slow {
                    Decision::Slower
                } else {
                    Decision::Fine
                };
                assert_eq!(x.decision, want, "penalty {pen}: {x:?}");
                if slow && pen >= 0.3 {
                    assert!(x.n <= 4, "penalty {pen} took {} rounds", x.n);
                }
            }
        }
    }

    #[test]
    fn one_bad_round_does_not_hide_a_penalty() {
        // The case: the reference's rounds 2696 1531 2633 2679 2810
        // and a true 47 % penalty.
        let ref_rounds = [2696.0, 1531.0, 2633.0, 2679.0, 2810.0];
        let mk = |c: Cell, xs: &[f64]| CellSamples {
            target: 0,
            cell: c,
            rounds: xs
                .iter()
                .enumerate()
                .map(|(i, &iops)| RoundSample {
                    round: i as u32,
                    iops,
                    low_ns: 0,
                    retries: 0,
                    broken: false,
                    window: Default::default(),
                })
                .collect(),
            latency: new_histogram(),
        };
        let slow: Vec<f64> = [1430.0, 1411.0, 1395.0, 1440.0, 1462.0].to_vec();
        let fine: Vec<f64> = [2710.0, 2650.0, 2600.0, 2690.0, 2790.0].to_vec();
        let samples = vec![
            mk(cell(4096, 0), &ref_rounds),
            mk(cell(4096, 512), &slow),
            mk(cell(4096, 2048), &slow),
            mk(cell(4096, 8192), &fine),
        ];
        let cs = contrasts(&samples.iter().map(|s| s.cell).collect::<Vec<_>>(), 1);
        let a = assess(&cs, &samples, &params(36, 10), &Equal);
        for x in &a {
            let want = if x.contrast.subject.cell.offset == 8192 {
                Decision::Fine
            } else {
                Decision::Slower
            };
            assert_eq!(x.decision, want, "{x:?}");
        }
        assert!(a.iter().all(|x| x.outliers == 1), "{a:?}");
        assert!((a[0].ratio - 0.53).abs() < 0.03, "{}", a[0].ratio);
    }

    #[test]
    fn cells_no_contrast_covers_run_every_round() {
        let k = Key {
            target: 0,
            cell: cell(65536, 0),
        };
        assert_eq!(still_needed(&[k], &[], &[], 1, 3), vec![k]);
        assert!(still_needed(&[k], &[], &[], 3, 3).is_empty());
    }
}
