//! The answer to "is B slower than A?": per pattern (and over every cell),
//! the geometric mean of B/A over the cells both runs measured, with its
//! 95 % interval, and a sentence that says it.
//!
//! **Interval.** The question is about the grid as measured: the
//! geometric mean of the true B/A over exactly the cells both runs
//! measured. The cells' true ratios may differ (a misaligned offset
//! slower in B, an aligned one not), but that mean is fixed by the grid,
//! so its error comes from the rounds, in three ways, the first that
//! applies:
//!
//! - `rounds`: every cell has the same number of rounds on a side (a
//!   fixed plan). The probe measures every cell once per round, so a slow
//!   round (a busy minute) slows every cell in it: the cells of one round
//!   are not independent, the rounds are. Round r's grid mean (the
//!   geometric mean over the cells of its IOPS) is one replicate; Welch's
//!   t on A's round means against B's gives the interval. Its centre is
//!   exactly the geometric mean of the cells' B/A. Simulated runs where a
//!   round moves every cell by 5 % cover the truth at 95 %, where the
//!   pooled interval below covers it in under 85 %.
//! - `pooled`: rounds differ between cells (an adaptive plan stopped some
//!   early). With m_i = ln(B/A) of cell i, the variance of their mean is
//!   Σ (s²_A,i/n_A,i + s²_B,i/n_B,i) / n², Student's t at
//!   Welch–Satterthwaite degrees of freedom. It takes the cells as
//!   independent, so shared round-to-round noise makes it too narrow.
//! - `across-cells`: some cell has no replicates (one fio pass): the
//!   rounds cannot give the error, and the t interval over the cells' log
//!   ratios (n − 1 degrees of freedom) counts their real differences as
//!   noise, so it is conservative for the grid's mean. Not the first
//!   choice: it answers another question (a population of cells), and on
//!   a grid of two or three cells 1–2 degrees of freedom make it useless
//!   (a 3× change seen in every cell came out [0.02, 530]).
//!
//! One cell without replicates has no interval (`none`).
//!
//! **Direction.** `slower`/`faster`: the interval lies below/above 1.
//! `same`: it lies inside 1 ± `min_effect`. `undecided`: neither (or no
//! interval).

use super::probe::{CellRatio, Decision, Direction, Method, ProbeComparison, ScopeRatio};
use crate::probe::Pattern;
use crate::probe::{t_quantile, welch_log};

/// Compares A (the reference) with B: every cell both measured
/// (`probe::cells`), then the answer per pattern and over every cell, and
/// the outcome the exit status follows.
pub fn compare_probes(a: &crate::probe::ProbeDoc, b: &crate::probe::ProbeDoc) -> ProbeComparison {
    let mut c = super::probe::cells(a, b);
    (c.overall, c.patterns) = scopes(&c);
    let (faster, slower) = (c.count(Decision::Faster), c.count(Decision::Slower));
    let rest = c.cells.len() - faster - slower;
    c.outcome = super::Outcome::new(faster, slower, rest, c.differs());
    c
}

/// The geometric mean of `ratios` and its `level` interval. With every
/// cell's `spreads` (each side's s²/n of log IOPS and its degrees of
/// freedom) the interval is pooled from the rounds (Welch–Satterthwaite
/// degrees of freedom); otherwise the t interval over the cells' log
/// ratios, which needs two cells.
pub fn geo_mean_interval(
    ratios: &[f64],
    spreads: Option<&[[(f64, f64); 2]]>,
    level: f64,
) -> Option<(f64, Option<[f64; 2]>, Method)> {
    let logs: Vec<f64> = ratios
        .iter()
        .filter(|r| **r > 0.0 && r.is_finite())
        .map(|r| r.ln())
        .collect();
    let n = logs.len();
    if n == 0 {
        return None;
    }
    let mean = logs.iter().sum::<f64>() / n as f64;
    let spreads = spreads.filter(|s| s.len() == n);
    let (var, df, method) = match spreads {
        Some(s) => {
            let parts: Vec<(f64, f64)> = s.iter().flatten().copied().collect();
            let total: f64 = parts.iter().map(|p| p.0).sum();
            let denom: f64 = parts.iter().map(|(v, d)| v * v / d).sum();
            let df = if denom > 0.0 {
                total * total / denom
            } else {
                f64::INFINITY
            };
            (total / (n * n) as f64, df, Method::Pooled)
        }
        None if n >= 2 => {
            let v = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            (v / n as f64, (n - 1) as f64, Method::AcrossCells)
        }
        None => return Some((mean.exp(), None, Method::None)),
    };
    let t = t_quantile(1.0 - level, df.clamp(1.0, 1.0e6));
    Some((mean.exp(), Some(ratio_interval(mean, var, t)), method))
}

/// Each round's geometric mean over the cells on `side` (0 A, 1 B);
/// None unless every cell has the same number of rounds there, two or
/// more.
fn round_means(cells: &[&[Vec<f64>; 2]], side: usize) -> Option<Vec<f64>> {
    let n = cells.first()?[side].len();
    if n < 2 || cells.iter().any(|c| c[side].len() != n) {
        return None;
    }
    let k = cells.len() as f64;
    let mean = |r: usize| cells.iter().map(|c| c[side][r].ln()).sum::<f64>() / k;
    Some((0..n).map(|r| mean(r).exp()).collect())
}

/// The geometric mean of B/A over `cells` and its `level` interval from
/// the rounds' grid means (Welch's t, A's rounds against B's): a slow
/// round slows every cell measured in it, so the rounds, not the cells,
/// are the independent replicates of the grid's mean.
pub fn by_rounds(cells: &[&[Vec<f64>; 2]], level: f64) -> Option<(f64, [f64; 2])> {
    let a = round_means(cells, 0)?;
    let b = round_means(cells, 1)?;
    let w = welch_log(&b, &a, level);
    (w.ci[0].is_finite() && w.ci[1].is_finite() && w.ci[0] > 0.0).then_some((w.ratio, w.ci))
}

/// `mean ± t·√var` on the log scale, as ratios.
fn ratio_interval(mean: f64, var: f64, t: f64) -> [f64; 2] {
    let half = t * var.sqrt();
    [(mean - half).exp(), (mean + half).exp()]
}

fn direction(ci: Option<[f64; 2]>, min_effect: f64) -> Direction {
    match ci {
        Some([_, hi]) if hi < 1.0 => Direction::Slower,
        Some([lo, _]) if lo > 1.0 => Direction::Faster,
        Some([lo, hi]) if lo >= 1.0 - min_effect && hi <= 1.0 + min_effect => Direction::Same,
        _ => Direction::Undecided,
    }
}

/// B/A over `cells` (the scope's), `min_effect` deciding `same`.
pub fn scope(
    target: Option<usize>,
    pattern: Option<Pattern>,
    cells: &[&CellRatio],
    min_effect: f64,
    label: &str,
) -> ScopeRatio {
    let with: Vec<&&CellRatio> = cells.iter().filter(|c| c.ratio.is_some()).collect();
    let ratios: Vec<f64> = with.iter().filter_map(|c| c.ratio).collect();
    let rounds: Option<Vec<&[Vec<f64>; 2]>> = with.iter().map(|c| c.rounds.as_ref()).collect();
    let spreads: Option<Vec<[(f64, f64); 2]>> = with.iter().map(|c| c.spread).collect();
    let fit = match rounds.as_deref().and_then(|r| by_rounds(r, 0.95)) {
        Some((g, ci)) => Some((g, Some(ci), Method::Rounds)),
        None => geo_mean_interval(&ratios, spreads.as_deref(), 0.95),
    };
    let count = |d: Decision| with.iter().filter(|c| c.decision == d).count();
    let mut s = ScopeRatio {
        target,
        pattern,
        cells: ratios.len(),
        geo_mean: fit.map(|f| f.0),
        ci95: fit.and_then(|f| f.1),
        method: fit.map_or(Method::None, |f| f.2),
        slower: count(Decision::Slower),
        faster: count(Decision::Faster),
        same: count(Decision::Same),
        open: count(Decision::Open),
        untested: count(Decision::Untested),
        ..ScopeRatio::default()
    };
    s.direction = direction(s.ci95, min_effect);
    s.sentence = super::sentence::of(&s, min_effect, label);
    s
}

/// Every cell together, then each pattern of each target, in the order
/// the cells come.
pub fn scopes(c: &ProbeComparison) -> (ScopeRatio, Vec<ScopeRatio>) {
    let all: Vec<&CellRatio> = c.cells.iter().collect();
    let overall = scope(None, None, &all, c.min_effect, "");
    let multi = c.target_count() > 1;
    let mut keys: Vec<(usize, Pattern)> = Vec::new();
    for r in &c.cells {
        if !keys.contains(&(r.key.target, r.key.pattern)) {
            keys.push((r.key.target, r.key.pattern));
        }
    }
    let per = keys
        .into_iter()
        .map(|(t, p)| {
            let cells: Vec<&CellRatio> = c
                .cells
                .iter()
                .filter(|r| r.key.target == t && r.key.pattern == p)
                .collect();
            let label = match multi {
                true => format!(" for {p} on target {}", t.saturating_add(1)),
                false => format!(" for {p}"),
            };
            scope(Some(t), Some(p), &cells, c.min_effect, &label)
        })
        .collect();
    (overall, per)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::fixtures::{cell, probe_doc, probe_run, rounds};

    fn normal(rng: &mut fastrand::Rng) -> f64 {
        let (u, v) = (rng.f64().max(1e-300), rng.f64());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// A cell's B/A from five simulated rounds a side, log-normal with
    /// `sd` around A = 1000 and B = 1000 × `ratio`, and each side's s²/n.
    fn simulated_cell(rng: &mut fastrand::Rng, ratio: f64, sd: f64) -> (f64, [(f64, f64); 2]) {
        let mut side = |iops: f64| {
            let logs: Vec<f64> = (0..5).map(|_| iops.ln() + sd * normal(rng)).collect();
            let m = logs.iter().sum::<f64>() / 5.0;
            let v = logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 4.0;
            (m, (v / 5.0, 4.0))
        };
        let (b, sb) = side(1000.0 * ratio);
        let (a, sa) = side(1000.0);
        ((b - a).exp(), [sa, sb])
    }

    /// How often the interval over `cells` cells covers the geometric
    /// mean of their true ratios, each cell's true log ratio spread
    /// around ln(`truth`) by `tau`; `pooled` uses the rounds.
    fn coverage(seed: u64, truth: f64, tau: f64, cells: usize, pooled: bool) -> f64 {
        let mut rng = fastrand::Rng::with_seed(seed);
        let runs = 1000;
        let covered = (0..runs)
            .filter(|_| {
                let true_logs: Vec<f64> = (0..cells)
                    .map(|_| truth.ln() + tau * normal(&mut rng))
                    .collect();
                let grid = (true_logs.iter().sum::<f64>() / cells as f64).exp();
                let sim: Vec<(f64, [(f64, f64); 2])> = true_logs
                    .iter()
                    .map(|l| simulated_cell(&mut rng, l.exp(), 0.05))
                    .collect();
                let ratios: Vec<f64> = sim.iter().map(|c| c.0).collect();
                let spreads: Vec<[(f64, f64); 2]> = sim.iter().map(|c| c.1).collect();
                let (_, ci, _) =
                    geo_mean_interval(&ratios, pooled.then_some(&spreads[..]), 0.95).unwrap();
                let [lo, hi] = ci.unwrap();
                lo <= grid && grid <= hi
            })
            .count();
        covered as f64 / runs as f64
    }

    #[test]
    fn the_pooled_interval_covers_the_grids_mean_at_95_percent() {
        // A common ratio, and cells whose ratios differ by ±10 %: the
        // grid's own mean is covered either way.
        for (seed, truth, tau, cells) in [
            (1, 0.164, 0.0, 18),
            (2, 0.97, 0.1, 18),
            (3, 1.0, 0.1, 2),
            (4, 1.3, 0.0, 1),
        ] {
            let c = coverage(seed, truth, tau, cells, true);
            assert!((0.93..=0.97).contains(&c), "{truth} over {cells}: {c}");
        }
    }

    /// One run of `cells` cells × five rounds a side where each round
    /// moves every cell by a shared `round_sd` (a slow minute) and each
    /// cell by its own 3 %; B is `truth` × A. Returns each cell's rounds.
    fn shared_rounds(
        rng: &mut fastrand::Rng,
        truth: f64,
        cells: usize,
        round_sd: f64,
    ) -> Vec<[Vec<f64>; 2]> {
        let mut side = |iops: f64| -> Vec<Vec<f64>> {
            let shift: Vec<f64> = (0..5).map(|_| round_sd * normal(rng)).collect();
            (0..cells)
                .map(|_| {
                    shift
                        .iter()
                        .map(|e| iops * (e + 0.03 * normal(rng)).exp())
                        .collect()
                })
                .collect()
        };
        let a = side(1000.0);
        let b = side(1000.0 * truth);
        a.into_iter().zip(b).map(|(x, y)| [x, y]).collect()
    }

    #[test]
    fn the_by_round_interval_holds_when_a_round_slows_every_cell() {
        let mut rng = fastrand::Rng::with_seed(8);
        let (runs, truth) = (1000, 0.9);
        let (mut by_round, mut pooled) = (0, 0);
        for _ in 0..runs {
            let cells = shared_rounds(&mut rng, truth, 12, 0.05);
            let refs: Vec<&[Vec<f64>; 2]> = cells.iter().collect();
            let (_, [lo, hi]) = by_rounds(&refs, 0.95).unwrap();
            by_round += usize::from(lo <= truth && truth <= hi);
            let ratios: Vec<f64> = cells
                .iter()
                .map(|c| {
                    crate::probe::geo_mean_ci(&c[1], 0.95).0
                        / crate::probe::geo_mean_ci(&c[0], 0.95).0
                })
                .collect();
            let spreads: Vec<[(f64, f64); 2]> = cells
                .iter()
                .map(|c| {
                    [
                        crate::compare::probe::log_spread(&c[0]),
                        crate::compare::probe::log_spread(&c[1]),
                    ]
                })
                .collect();
            let (_, ci, _) = geo_mean_interval(&ratios, Some(&spreads), 0.95).unwrap();
            let [lo, hi] = ci.unwrap();
            pooled += usize::from(lo <= truth && truth <= hi);
        }
        let (r, p) = (by_round as f64 / runs as f64, pooled as f64 / runs as f64);
        assert!((0.93..=0.97).contains(&r), "by round: {r}");
        // Treating the cells as independent claims too much here.
        assert!(p < 0.85, "pooled: {p}");
    }

    #[test]
    fn unequal_rounds_fall_back_to_the_pooled_interval() {
        let a = [vec![100.0, 101.0, 99.0], vec![50.0, 51.0, 49.0]];
        let b = [vec![100.0, 101.0], vec![50.0, 51.0, 49.0]];
        assert!(by_rounds(&[&a, &b], 0.95).is_none());
        let one = [vec![100.0], vec![50.0, 51.0]];
        assert!(by_rounds(&[&one], 0.95).is_none());
        let (g, ci) = by_rounds(&[&a], 0.95).unwrap();
        assert!(
            (g - 0.5).abs() < 0.01 && ci[0] < g && g < ci[1],
            "{g} {ci:?}"
        );
    }

    #[test]
    fn without_replicates_the_interval_over_the_cells_is_exact_or_conservative() {
        let c = coverage(5, 0.8, 0.0, 6, false);
        assert!((0.93..=0.97).contains(&c), "common ratio: {c}");
        let c = coverage(6, 0.8, 0.1, 18, false);
        assert!(c >= 0.95, "cells that differ: {c}");
    }

    #[test]
    fn one_ratio_without_replicates_has_no_interval_and_none_gives_nothing() {
        assert_eq!(
            geo_mean_interval(&[0.5], None, 0.95),
            Some((0.5, None, Method::None))
        );
        assert_eq!(geo_mean_interval(&[0.0, f64::NAN], None, 0.95), None);
        // Two ratios across cells: t with one degree of freedom (12.71).
        let (g, ci, m) = geo_mean_interval(&[0.5, 2.0], None, 0.95).unwrap();
        assert_eq!(m, Method::AcrossCells);
        assert!((g - 1.0).abs() < 1e-12);
        assert!(
            (ci.unwrap()[1].ln() - 12.706 * 2f64.ln()).abs() < 1e-3,
            "{ci:?}"
        );
        // Pooled: two cells, each side s²/n = 0.01 at 4 df: variance
        // 0.04 / 4, 16 df by Welch–Satterthwaite (t 2.120).
        let s = [[(0.01, 4.0), (0.01, 4.0)]; 2];
        let (_, ci, m) = geo_mean_interval(&[1.0, 1.0], Some(&s), 0.95).unwrap();
        assert_eq!(m, Method::Pooled);
        assert!((ci.unwrap()[1].ln() - 2.120 * 0.1).abs() < 1e-3, "{ci:?}");
    }

    /// A against B with each randwrite cell of B scaled by `scale[i]`
    /// and one randread cell unchanged.
    fn versus(scale: &[f64]) -> crate::compare::ProbeComparison {
        let offsets = [0u64, 512, 1024, 2048, 4096, 8192];
        let mk = |s: &[f64]| {
            let mut cells: Vec<_> = s
                .iter()
                .zip(offsets)
                .map(|(k, o)| cell("randwrite", 4096, o, rounds(1000.0 * k)))
                .collect();
            cells.push(cell("randread", 4096, 0, rounds(5000.0)));
            probe_doc("6.1.0", "sata", cells)
        };
        let a = probe_run(&mk(&vec![1.0; scale.len()]), "a.json");
        let b = probe_run(&mk(scale), "b.json");
        compare_probes(&a, &b)
    }

    #[test]
    fn every_cell_slower_is_said_as_a_factor_in_every_cell() {
        let p = versus(&[1.0 / 6.1; 4]);
        let w = &p.patterns[0];
        assert_eq!(
            (w.pattern, w.cells, w.slower),
            (Some(Pattern::Randwrite), 4, 4)
        );
        assert_eq!(w.direction, Direction::Slower);
        assert!(
            w.sentence
                .starts_with("B is 6.1× slower than A for randwrite in every cell, [6.0, 6.2]"),
            "{}",
            w.sentence
        );
        let r = &p.patterns[1];
        assert_eq!(r.direction, Direction::Same, "{}", r.sentence);
        assert!(r
            .sentence
            .starts_with("B is the same as A for randread within ±10 % in the one cell: B/A 1.00"));
    }

    #[test]
    fn mixed_cells_say_how_they_split() {
        // Three cells 20 % slower, three 5 % slower: slower as a whole.
        let p = versus(&[0.8, 0.8, 0.8, 0.95, 0.95, 0.95]);
        let w = &p.patterns[0];
        assert_eq!(w.direction, Direction::Slower);
        assert!(
            w.sentence
                .starts_with("B is 13 % slower than A for randwrite "),
            "{}",
            w.sentence
        );
        // Some 30 % slower, some 40 % faster: the same on the mean, and
        // the sentence says the cells are not.
        let p = versus(&[0.7, 1.4, 0.7, 1.4]);
        let w = &p.patterns[0];
        assert_eq!(w.direction, Direction::Same);
        assert_eq!((w.slower, w.faster), (2, 2));
        assert!(
            w.sentence
                .ends_with("but not in every cell: of the cells, 2 slower, 2 faster"),
            "{}",
            w.sentence
        );
        // Without replicates (across the cells) the same cells are
        // undecided, and the sentence says what the interval holds.
        let cells: Vec<CellRatio> = [0.7, 1.4, 0.7, 1.4]
            .iter()
            .map(|r| CellRatio {
                ratio: Some(*r),
                ..CellRatio::default()
            })
            .collect();
        let refs: Vec<&CellRatio> = cells.iter().collect();
        let w = scope(None, Some(Pattern::Randwrite), &refs, 0.1, " for randwrite");
        assert_eq!(
            (w.direction, w.method, w.untested),
            (Direction::Undecided, Method::AcrossCells, 4)
        );
        assert!(
            w.sentence
                .starts_with("B cannot be told from A for randwrite over 4 cells: B/A 0.99, ["),
            "{}",
            w.sentence
        );
        assert!(
            w.sentence
                .ends_with("which holds both no difference and one of 10 % or more"),
            "{}",
            w.sentence
        );
    }

    #[test]
    fn the_overall_line_covers_every_cell() {
        let p = versus(&[0.5; 4]);
        assert_eq!((p.overall.pattern, p.overall.cells), (None, 5));
        // Four cells at half speed and one unchanged: slower overall, but
        // not in every cell.
        assert!(
            p.overall
                .sentence
                .starts_with("B is 1.7× slower than A over 5 cells, ["),
            "{}",
            p.overall.sentence
        );
        assert!(p
            .overall
            .sentence
            .ends_with(": of the cells, 4 slower, 1 the same"));
    }

    #[test]
    fn the_magnitude_is_a_factor_or_a_percentage() {
        use crate::compare::sentence::magnitude;
        assert_eq!(magnitude(0.5, [0.4, 0.6]).0, "2.0× slower");
        assert_eq!(magnitude(0.5, [0.4, 0.625]).1, "[1.6, 2.5]");
        assert_eq!(
            magnitude(0.97, [0.96, 0.98]),
            ("3.0 % slower".into(), "[2.0, 4.0] %".into())
        );
        assert_eq!(
            magnitude(1.2, [1.1, 1.3]),
            ("20 % faster".into(), "[10, 30] %".into())
        );
        assert_eq!(
            magnitude(3.0, [2.0, 4.0]),
            ("3.0× faster".into(), "[2.0, 4.0]".into())
        );
    }
}
