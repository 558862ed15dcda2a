//! From raw samples to the report: per-cell estimates, each misaligned
//! cell compared with the aligned cell of its block size and pattern, and
//! the inference of the device's effective internal unit.

use super::grid::Cell;
use super::run::CellSamples;
use super::stats;
use crate::units::{alignment_of, human};
use serde::Serialize;

/// Family-wise error rate of the "significant" flags of one grid.
pub const ALPHA: f64 = 0.05;
const LEVEL: f64 = 0.95;

/// How comparisons are made, spelled out in every report.
pub const METHOD: &str = "one IOPS figure per cell and round (rounds are the replicates: I/Os within a run share the device's momentary state); 95% CI of the geometric mean over rounds from Student's t on log IOPS; each misaligned cell against the aligned cell of its block size and pattern by Welch's t-test on log IOPS (ratio of geometric means with its 95% CI), Holm-corrected over every comparison of the grid (family-wise alpha 0.05)";

#[derive(Clone, Debug, Serialize)]
pub struct Estimate {
    /// Median over rounds.
    pub median: f64,
    /// Geometric mean over rounds and its 95 % confidence interval.
    pub geo_mean: f64,
    pub ci95: [f64; 2],
}

#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Relative {
    /// Geometric-mean IOPS of this cell over that of the aligned cell.
    pub ratio: f64,
    pub ci95: [f64; 2],
    pub p_value: f64,
    /// Holm-adjusted p-value.
    pub p_adjusted: f64,
    pub significant: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct CellReport {
    #[serde(flatten)]
    pub cell: Cell,
    pub iops: Estimate,
    pub mib_s: Estimate,
    pub lat_us: Latency,
    /// IOPS of each round.
    pub rounds: Vec<f64>,
    /// Against offset 0 of the same block size and pattern; null there.
    pub relative: Option<Relative>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Penalty {
    pub pattern: super::engine::Pattern,
    pub block_size: u32,
    pub worst_offset: u64,
    /// Percent slower than aligned, and its 95 % CI.
    pub slower_pct: f64,
    pub ci95_pct: [f64; 2],
    pub p_adjusted: f64,
}

/// How far the grid pins the internal unit down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confidence {
    /// Between a slower offset and a coarser one that was not.
    Bracketed,
    /// Every probed offset was slower: the unit is at least twice the largest.
    LowerBound,
    /// No misaligned offset was significantly slower.
    NoDifference,
    /// Slower offsets and unaffected ones do not nest.
    Inconsistent,
    /// One round: nothing to compare with.
    Untested,
}

crate::spelled_as_serde!(Confidence);

#[derive(Clone, Debug, Serialize)]
pub struct Inference {
    /// Smallest offset granularity that performed like aligned; null when
    /// the grid cannot tell.
    pub effective_unit_bytes: Option<u64>,
    pub confidence: Confidence,
    /// The sentence about the unit alone.
    pub statement: String,
    /// The statement followed by every penalty found.
    pub summary: String,
    pub penalties: Vec<Penalty>,
    pub method: &'static str,
}

fn estimate(samples: &[f64], scale: f64) -> Estimate {
    let (g, [lo, hi]) = stats::geo_mean_ci(samples, LEVEL);
    Estimate {
        median: stats::median(samples) * scale,
        geo_mean: g * scale,
        ci95: [lo * scale, hi * scale],
    }
}

fn round_iops(c: &CellSamples) -> Vec<f64> {
    c.rounds.iter().map(|r| r.iops).collect()
}

/// Per-cell reports, in plan order.
pub fn cells(samples: &[CellSamples]) -> Vec<CellReport> {
    let mut reports: Vec<CellReport> = samples
        .iter()
        .map(|c| {
            let s = round_iops(c);
            let mib = f64::from(c.cell.block_size) / (1024.0 * 1024.0);
            let us = |q: f64| c.latency.value_at_quantile(q) as f64 / 1000.0;
            CellReport {
                cell: c.cell,
                iops: estimate(&s, 1.0),
                mib_s: estimate(&s, mib),
                lat_us: Latency {
                    p50: us(0.5),
                    p99: us(0.99),
                    p999: us(0.999),
                    max: c.latency.max() as f64 / 1000.0,
                },
                rounds: s.clone(),
                relative: None,
            }
        })
        .collect();
    // Compare every misaligned cell with its aligned sibling.
    let mut compared = Vec::new();
    for (i, c) in samples.iter().enumerate() {
        if c.cell.offset == 0 {
            continue;
        }
        let Some(base) = samples.iter().find(|b| {
            b.cell.offset == 0
                && b.cell.block_size == c.cell.block_size
                && b.cell.pattern == c.cell.pattern
        }) else {
            continue;
        };
        let cmp = stats::welch_log(&round_iops(c), &round_iops(base), LEVEL);
        compared.push(i);
        reports[i].relative = Some(Relative {
            ratio: cmp.ratio,
            ci95: cmp.ci,
            p_value: cmp.p,
            p_adjusted: cmp.p,
            significant: false,
        });
    }
    let ps: Vec<f64> = compared
        .iter()
        .map(|&i| reports[i].relative.as_ref().map_or(1.0, |r| r.p_value))
        .collect();
    for (&i, q) in compared.iter().zip(stats::holm(&ps)) {
        if let Some(r) = reports[i].relative.as_mut() {
            r.p_adjusted = q;
            r.significant = q < ALPHA && (r.ci95[1] < 1.0 || r.ci95[0] > 1.0);
        }
    }
    reports
}

fn slower(r: &CellReport) -> bool {
    r.relative
        .as_ref()
        .is_some_and(|x| x.significant && x.ratio < 1.0)
}

impl Penalty {
    /// `4 KiB randwrite 14% ± 3% slower at offset 512 (not 4 KiB aligned) (p < 0.01)`.
    pub fn sentence(&self) -> String {
        format!(
            "{} {} {:.0}% ± {:.0}% slower at offset {} (aligned only to {}) ({})",
            human(u64::from(self.block_size)),
            self.pattern.as_str(),
            self.slower_pct,
            (self.ci95_pct[1] - self.ci95_pct[0]) / 2.0,
            self.worst_offset,
            human(alignment_of(self.worst_offset)),
            p_text(self.p_adjusted)
        )
    }
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else if p < 0.01 {
        "p < 0.01".into()
    } else {
        format!("p = {p:.2}")
    }
}

/// The effective unit and the worst penalty per block size and pattern.
pub fn infer(reports: &[CellReport], lbs: u64, rounds: u32) -> Inference {
    let mut penalties = Vec::new();
    let mut keys: Vec<(super::engine::Pattern, u32)> = reports
        .iter()
        .map(|r| (r.cell.pattern, r.cell.block_size))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    for (pattern, bs) in keys {
        let worst = reports
            .iter()
            .filter(|r| r.cell.pattern == pattern && r.cell.block_size == bs && slower(r))
            .min_by(|a, b| {
                let ra = a.relative.as_ref().map_or(1.0, |x| x.ratio);
                let rb = b.relative.as_ref().map_or(1.0, |x| x.ratio);
                ra.total_cmp(&rb)
            });
        if let Some(w) = worst {
            let rel = w.relative.as_ref().expect("compared cell");
            penalties.push(Penalty {
                pattern,
                block_size: bs,
                worst_offset: w.cell.offset,
                slower_pct: (1.0 - rel.ratio) * 100.0,
                ci95_pct: [(1.0 - rel.ci95[1]) * 100.0, (1.0 - rel.ci95[0]) * 100.0],
                p_adjusted: rel.p_adjusted,
            });
        }
    }
    // Per offset: slow when any of its cells is significantly slower.
    let mut offsets: Vec<u64> = reports
        .iter()
        .map(|r| r.cell.offset)
        .filter(|&o| o != 0)
        .collect();
    offsets.sort_unstable();
    offsets.dedup();
    let slow: Vec<(u64, bool)> = offsets
        .iter()
        .map(|&o| {
            (
                alignment_of(o),
                reports.iter().any(|r| r.cell.offset == o && slower(r)),
            )
        })
        .collect();
    let max_slow = slow.iter().filter(|s| s.1).map(|s| s.0).max();
    let min_fine = slow
        .iter()
        .filter(|s| !s.1)
        .map(|s| s.0)
        .filter(|&a| max_slow.is_none_or(|m| a > m))
        .min();
    let inconsistent = match max_slow {
        Some(m) => slow.iter().any(|&(a, is_slow)| !is_slow && a <= m),
        None => false,
    };
    let (unit, confidence, statement) = match (max_slow, min_fine) {
        _ if rounds < 2 => (
            None,
            Confidence::Untested,
            "one round only: nothing to compare the differences with, so no verdict (use --rounds 3 or more)".to_string(),
        ),
        (None, _) => (
            Some(lbs),
            Confidence::NoDifference,
            "misalignment made no measurable difference on this device: no misaligned offset was significantly slower than aligned".to_string(),
        ),
        (Some(m), _) if inconsistent => (
            None,
            Confidence::Inconsistent,
            format!(
                "offsets aligned to {} were slower while coarser or equal ones were not: no single internal unit explains the results (noisy device? try more --rounds)",
                human(m)
            ),
        ),
        (Some(m), Some(f)) => (
            Some(f),
            Confidence::Bracketed,
            format!(
                "effective internal unit {}: offsets aligned only to {} were significantly slower, offsets aligned to {} performed like aligned",
                human(f),
                human(m),
                human(f)
            ),
        ),
        (Some(m), None) => (
            Some(2 * m),
            Confidence::LowerBound,
            format!(
                "effective internal unit at least {}: every probed offset aligned to {} or less was slower; probe larger offsets to bound it",
                human(2 * m),
                human(m)
            ),
        ),
    };
    let mut summary = statement.clone();
    for p in &penalties {
        summary.push_str("; ");
        summary.push_str(&p.sentence());
    }
    Inference {
        effective_unit_bytes: unit,
        confidence,
        statement,
        summary,
        penalties,
        method: METHOD,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::engine::{new_histogram, Pattern};
    use crate::probe::run::RoundSample;

    /// A synthetic grid: `speed(offset)` scales the aligned IOPS; rounds
    /// jitter by about 1 %.
    fn grid(offsets: &[u64], rounds: usize, speed: impl Fn(u64) -> f64) -> Vec<CellSamples> {
        let mut rng = fastrand::Rng::with_seed(42);
        let mut out = Vec::new();
        for bs in [4096u32, 65536] {
            for &offset in offsets {
                let base = 10_000.0 * speed(offset);
                out.push(CellSamples {
                    cell: Cell {
                        block_size: bs,
                        offset,
                        pattern: Pattern::Randwrite,
                    },
                    rounds: (0..rounds)
                        .map(|_| {
                            let iops = base * (1.0 + (rng.f64() - 0.5) * 0.02);
                            RoundSample {
                                iops,
                                bytes_per_s: iops * f64::from(bs),
                            }
                        })
                        .collect(),
                    latency: new_histogram(),
                });
            }
        }
        out
    }

    const OFFSETS: [u64; 9] = [0, 512, 1024, 1536, 2048, 3584, 4096, 8192, 4608];

    #[test]
    fn a_4k_device_is_bracketed_at_4k() {
        let cells = cells(&grid(
            &OFFSETS,
            5,
            |o| if o % 4096 == 0 { 1.0 } else { 0.8 },
        ));
        let inf = infer(&cells, 512, 5);
        assert_eq!(inf.effective_unit_bytes, Some(4096), "{}", inf.summary);
        assert_eq!(inf.confidence.as_str(), "bracketed");
        assert_eq!(inf.penalties.len(), 2);
        let p = &inf.penalties[0];
        assert!((p.slower_pct - 20.0).abs() < 2.0, "{}", p.sentence());
        assert!(
            p.ci95_pct[0] < 20.0 && 20.0 < p.ci95_pct[1] + 0.5,
            "{:?}",
            p.ci95_pct
        );
        assert!(
            inf.summary.contains("effective internal unit 4 KiB"),
            "{}",
            inf.summary
        );
    }

    #[test]
    fn no_penalty_says_so() {
        let cells = cells(&grid(&OFFSETS, 5, |_| 1.0));
        let inf = infer(&cells, 512, 5);
        assert_eq!(inf.confidence.as_str(), "no-difference");
        assert!(inf.penalties.is_empty());
        assert!(inf.summary.contains("no measurable difference"));
        assert!(cells
            .iter()
            .all(|c| c.relative.as_ref().is_none_or(|r| !r.significant)));
    }

    #[test]
    fn every_offset_slow_gives_a_lower_bound() {
        let cells = cells(&grid(&OFFSETS, 5, |o| if o == 0 { 1.0 } else { 0.7 }));
        let inf = infer(&cells, 512, 5);
        assert_eq!(inf.confidence.as_str(), "lower-bound");
        assert_eq!(inf.effective_unit_bytes, Some(16384));
    }

    #[test]
    fn one_round_gives_no_verdict() {
        let cells = cells(&grid(&OFFSETS, 1, |o| if o == 0 { 1.0 } else { 0.5 }));
        let inf = infer(&cells, 512, 1);
        assert_eq!(inf.confidence.as_str(), "untested");
        assert!(inf.penalties.is_empty());
    }
}
