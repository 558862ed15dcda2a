//! Each round's own spread: how far its cells strayed from what the
//! other rounds say of them, against an ordinary round.
//!
//! A row is the cells of one target, pattern and block size (every offset
//! of a ladder row and of a focus row). Its log IOPS are fitted as a cell
//! effect (the cell's speed, its penalty included) plus a (row, round)
//! effect (the round's level: drift, the host's load); what is left is
//! the round's noise in that row. Per noise class, each round's residual
//! variance over the class's median round's, pooled over the classes by
//! their degrees of freedom, is the round's relative variance; shrunk
//! toward 1 by [`PRIOR_DF`] ordinary degrees of freedom, its inverse is
//! the round's precision, which `noise::NoiseModel::weight` multiplies in.
//!
//! Why: on the VM's device whose jitter comes and goes, a jittery round
//! moves a whole row by 5-30 % with one cell's luck while a quiet one
//! varies by about 1 %, and equal weights let the jittery rounds drown
//! the quiet ones' evidence. A residual's variance is the spread of a
//! round, not the sign of its differences: the weights are even in the
//! noise, so the weighted means stay unbiased (as setting rounds aside
//! does, `noise`).

use super::sequential::NoiseClass;
use super::stats;
use crate::probe::measure::CellSamples;

/// Ordinary degrees of freedom a round's own variance is averaged with:
/// a round of few cells is not trusted far from ordinary.
pub const PRIOR_DF: f64 = 8.0;
/// Passes of the alternating fit of cell and round effects (it settles in
/// a few; rows are small).
const PASSES: usize = 12;

/// One round's residual sum of squares and degrees of freedom in a class.
struct Part {
    class: NoiseClass,
    round: u32,
    ss: f64,
    df: f64,
}

/// Each round's precision against an ordinary round's (1 with nothing to
/// compare), in the order of `rounds`.
pub fn precisions(samples: &[CellSamples], rounds: &[u32]) -> Vec<f64> {
    let parts = residuals(samples);
    let mut classes: Vec<NoiseClass> = parts.iter().map(|p| p.class).collect();
    classes.sort_unstable();
    classes.dedup();
    let typical: Vec<(NoiseClass, f64)> = classes
        .into_iter()
        .filter_map(|c| {
            let v: Vec<f64> = parts
                .iter()
                .filter(|p| p.class == c && p.df > 0.0)
                .map(|p| p.ss / p.df)
                .collect();
            let m = stats::median(&v);
            (m.is_finite() && m > 0.0).then_some((c, m))
        })
        .collect();
    rounds
        .iter()
        .map(|&r| {
            let (mut rel, mut df) = (0.0, 0.0);
            for p in parts.iter().filter(|p| p.round == r) {
                if let Some((_, t)) = typical.iter().find(|(c, _)| *c == p.class) {
                    rel += p.ss / t;
                    df += p.df;
                }
            }
            (df + PRIOR_DF) / (rel + PRIOR_DF)
        })
        .collect()
}

/// Every row's residuals, summed per (class, round).
fn residuals(samples: &[CellSamples]) -> Vec<Part> {
    let mut keys: Vec<(usize, u32, crate::probe::measure::Pattern)> = samples
        .iter()
        .map(|s| (s.target, s.cell.block_size, s.cell.pattern))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let mut out: Vec<Part> = Vec::new();
    for (target, bs, pattern) in keys {
        let row: Vec<&CellSamples> = samples
            .iter()
            .filter(|s| s.target == target && s.cell.block_size == bs && s.cell.pattern == pattern)
            .collect();
        if row.len() < 2 {
            continue;
        }
        let class = NoiseClass::of_cell(&row[0].cell);
        for (round, ss, df) in row_residuals(&row) {
            match out
                .iter_mut()
                .find(|p| p.class == class && p.round == round)
            {
                Some(p) => {
                    p.ss += ss;
                    p.df += df;
                }
                None => out.push(Part {
                    class,
                    round,
                    ss,
                    df,
                }),
            }
        }
    }
    out
}

/// One row's (round, residual sum of squares, degrees of freedom): log
/// IOPS less the cell's and the round's effects (alternating least
/// squares over the cells' rounds). A round's share of the degrees of
/// freedom is its cells less one, scaled so the row's total is its
/// observations less its cells and rounds, plus one.
fn row_residuals(row: &[&CellSamples]) -> Vec<(u32, f64, f64)> {
    let ys: Vec<Vec<(u32, f64)>> = row
        .iter()
        .map(|c| {
            c.rounds
                .iter()
                .filter(|r| r.iops > 0.0 && r.iops.is_finite())
                .map(|r| (r.round, r.iops.ln()))
                .collect()
        })
        .collect();
    let mut rounds: Vec<u32> = ys.iter().flatten().map(|x| x.0).collect();
    rounds.sort_unstable();
    rounds.dedup();
    let mut cell = vec![0.0; ys.len()];
    let mut level = vec![0.0; rounds.len()];
    let at = |r: u32| rounds.binary_search(&r).unwrap_or(0);
    for _ in 0..PASSES {
        let (mut sum, mut n) = (vec![0.0; rounds.len()], vec![0.0; rounds.len()]);
        for (i, y) in ys.iter().enumerate() {
            for &(r, v) in y {
                sum[at(r)] += v - cell[i];
                n[at(r)] += 1.0;
            }
        }
        for k in 0..rounds.len() {
            level[k] = if n[k] > 0.0 { sum[k] / n[k] } else { 0.0 };
        }
        for (i, y) in ys.iter().enumerate() {
            if !y.is_empty() {
                cell[i] = y.iter().map(|&(r, v)| v - level[at(r)]).sum::<f64>() / y.len() as f64;
            }
        }
    }
    let obs = ys.iter().map(Vec::len).sum::<usize>() as f64;
    let free = obs - (ys.len() + rounds.len()) as f64 + 1.0;
    let raw = obs - rounds.len() as f64;
    if free <= 0.0 || raw <= 0.0 {
        return Vec::new();
    }
    rounds
        .iter()
        .enumerate()
        .filter_map(|(k, &r)| {
            let res: Vec<f64> = ys
                .iter()
                .enumerate()
                .filter_map(|(i, y)| {
                    y.iter()
                        .find(|x| x.0 == r)
                        .map(|x| x.1 - cell[i] - level[k])
                })
                .collect();
            (res.len() >= 2).then(|| {
                let ss = res.iter().map(|e| e * e).sum::<f64>();
                (r, ss, (res.len() - 1) as f64 * free / raw)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::measure::Cell;
    use crate::probe::measure::{new_histogram, Pattern};
    use crate::probe::measure::{RoundSample, Window};

    fn cells(noise: &dyn Fn(u32, usize) -> f64) -> Vec<CellSamples> {
        (0..8)
            .map(|i| CellSamples {
                target: 0,
                cell: Cell {
                    pattern: Pattern::Randwrite,
                    block_size: 65536,
                    offset: 4096 * i as u64,
                },
                rounds: (0..12)
                    .map(|r| RoundSample {
                        round: r,
                        iops: 1000.0 * (if i % 2 == 1 { 0.97 } else { 1.0 }) * noise(r, i).exp(),
                        low_ns: 0,
                        retries: 0,
                        broken: false,
                        window: Window {
                            length_s: 0.125,
                            ..Window::default()
                        },
                    })
                    .collect(),
                latency: new_histogram(),
            })
            .collect()
    }

    /// Uniform noise in [-1, 1) per round and cell.
    fn uniform(seed: u64) -> Vec<Vec<f64>> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..12)
            .map(|_| (0..8).map(|_| rng.f64() * 2.0 - 1.0).collect())
            .collect()
    }

    #[test]
    fn quiet_rounds_weigh_more_than_jittery_ones() {
        let z = uniform(4);
        // Rounds 4 to 7 ten times as noisy; a penalty and a round level
        // (drift) change nothing.
        let s = cells(&|r, i| {
            let sd = if (4..8).contains(&r) { 0.1 } else { 0.01 };
            sd * z[r as usize][i] + 0.05 * f64::from(r)
        });
        let p = precisions(&s, &(0..12).collect::<Vec<_>>());
        for (r, w) in p.iter().enumerate() {
            if (4..8).contains(&r) {
                assert!(*w < 0.2, "{r}: {p:?}");
            } else {
                assert!(*w > 0.8, "{r}: {p:?}");
            }
        }
    }

    #[test]
    fn steady_noise_weighs_every_round_about_alike() {
        let z = uniform(5);
        let s = cells(&|r, i| 0.03 * z[r as usize][i]);
        let p = precisions(&s, &(0..12).collect::<Vec<_>>());
        assert!(p.iter().all(|w| (0.4..2.5).contains(w)), "{p:?}");
        // Nothing measured: every round weighs 1.
        assert_eq!(precisions(&[], &[0, 1]), vec![1.0, 1.0]);
    }
}
