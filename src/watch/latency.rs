//! Does the straddling part cost more? Issue-to-complete latencies of
//! aligned and straddling requests of the same size bucket and direction,
//! compared by their medians. The tracer hands log2 buckets, not values,
//! so a median is known only to its bucket [2^k, 2^(k+1)) µs, and its
//! interval only to bucket bounds: each median's 97.5 % interval comes
//! from the order statistics (the ranks n/2 ± z·√n/2, distribution-free,
//! the quantile test's interval in Conover's Practical Nonparametric
//! Statistics), widened to
//! the bounds of the buckets those ranks fall in; the two together hold
//! at 95 % (Bonferroni). Straddling requests are called slower only when
//! the lower bound of their interval is at or above the upper bound of
//! the aligned ones'; nothing finer is claimed.

use crate::sys::{Direction, Latency, Snapshot};
use crate::topology::{DeviceLayer, Watched};
use serde::{Deserialize, Serialize};

/// Fewer requests than this in either group decide nothing.
pub const MIN_REQUESTS: u64 = 10;

/// z for a two-sided 97.5 % interval per median (95 % for the pair).
const Z: f64 = 2.2414;

/// A span of microseconds from bucket bounds; `to_us` null when the
/// span reaches the open last bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Span {
    pub from_us: u64,
    pub to_us: Option<u64>,
}

/// One group's requests: how many, the bucket of their median and the
/// median's interval in bucket bounds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Group {
    pub ios: u64,
    pub median_us: Span,
    pub ci_us: Span,
}

/// What the bounds allow to say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LatencyDecision {
    /// The straddling median's interval lies at or above the aligned one's.
    Slower,
    /// The other way round.
    Faster,
    /// The intervals overlap: no difference the buckets can show.
    #[default]
    Undecided,
    /// Fewer than 10 requests in a group.
    TooFew,
}

crate::spelled_as_serde!(LatencyDecision);

/// Aligned against straddling requests of one device, direction and size
/// bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LatencyComparison {
    pub device: String,
    pub layer: DeviceLayer,
    pub direction: Option<Direction>,
    /// The size bucket: requests from this size to twice it.
    pub size_from_bytes: u64,
    pub aligned: Group,
    pub straddling: Group,
    /// Bounds of (straddling median / aligned median) from the two
    /// intervals; null where a bound is open or zero.
    pub ratio_bounds: [Option<f64>; 2],
    pub decision: LatencyDecision,
    /// The confidence of the pair of intervals.
    pub level: f64,
}

/// Every (device, direction, size bucket) with requests in both groups.
pub fn compare(watched: &[Watched], snap: &Snapshot) -> Vec<LatencyComparison> {
    let mut out = Vec::new();
    for w in watched {
        for d in super::summary::DIRECTIONS {
            let mine: Vec<&Latency> = snap
                .latency
                .iter()
                .filter(|l| l.dev == w.dev() && l.direction == d)
                .collect();
            let mut sizes: Vec<u8> = mine.iter().map(|l| l.size_bucket).collect();
            sizes.sort_unstable();
            sizes.dedup();
            for size in sizes {
                let counts = |straddles: bool| {
                    mine.iter()
                        .find(|l| l.size_bucket == size && l.straddles == straddles)
                        .map_or(&[][..], |l| l.micros_log2.as_slice())
                };
                let (a, s) = (counts(false), counts(true));
                if a.iter().sum::<u64>() == 0 || s.iter().sum::<u64>() == 0 {
                    continue;
                }
                out.push(one(w, d, size, a, s));
            }
        }
    }
    out
}

fn one(
    w: &Watched,
    d: Direction,
    size: u8,
    aligned: &[u64],
    straddling: &[u64],
) -> LatencyComparison {
    let (a, s) = (group(aligned), group(straddling));
    let ratio_bounds = [
        ratio(Some(s.ci_us.from_us), a.ci_us.to_us),
        ratio(s.ci_us.to_us, Some(a.ci_us.from_us)),
    ];
    let decision = if a.ios < MIN_REQUESTS || s.ios < MIN_REQUESTS {
        LatencyDecision::TooFew
    } else if a.ci_us.to_us.is_some_and(|hi| s.ci_us.from_us >= hi) {
        LatencyDecision::Slower
    } else if s.ci_us.to_us.is_some_and(|hi| a.ci_us.from_us >= hi) {
        LatencyDecision::Faster
    } else {
        LatencyDecision::Undecided
    };
    LatencyComparison {
        device: w.device.clone(),
        layer: w.layer,
        direction: Some(d),
        size_from_bytes: 512u64.checked_shl(u32::from(size)).unwrap_or(u64::MAX),
        aligned: a,
        straddling: s,
        ratio_bounds,
        decision,
        level: 0.95,
    }
}

fn ratio(num: Option<u64>, den: Option<u64>) -> Option<f64> {
    match (num, den) {
        (Some(n), Some(d)) if d > 0 => Some(n as f64 / d as f64),
        _ => None,
    }
}

/// Bucket k's bounds in µs: [2^k, 2^(k+1)), the first from 0 (below
/// 1 µs too), the last open.
fn bucket_span(k: usize, buckets: usize) -> Span {
    let from_us = if k == 0 {
        0
    } else {
        1u64.checked_shl(k as u32).unwrap_or(u64::MAX)
    };
    let to_us = (k + 1 < buckets).then(|| 1u64.checked_shl(k as u32 + 1).unwrap_or(u64::MAX));
    Span { from_us, to_us }
}

/// The bucket holding the `rank`-th smallest value (1-based).
fn bucket_of(counts: &[u64], rank: u64) -> usize {
    let mut seen = 0;
    for (k, n) in counts.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return k;
        }
    }
    counts.len().saturating_sub(1)
}

fn group(counts: &[u64]) -> Group {
    let n: u64 = counts.iter().sum();
    let len = counts.len();
    let half = n as f64 / 2.0;
    let reach = Z * (n as f64).sqrt() / 2.0;
    let clamp = |r: f64| (r as u64).clamp(1, n.max(1));
    let lo = clamp((half - reach).floor());
    let hi = clamp((half + reach).ceil() + 1.0);
    let median = bucket_span(bucket_of(counts, clamp(half.ceil())), len);
    let (l, h) = (
        bucket_span(bucket_of(counts, lo), len),
        bucket_span(bucket_of(counts, hi), len),
    );
    Group {
        ios: n,
        median_us: median,
        ci_us: Span {
            from_us: l.from_us,
            to_us: h.to_us,
        },
    }
}

#[cfg(test)]
mod tests {
    //! Synthetic histograms, made up here.
    use super::*;

    fn hist(pairs: &[(usize, u64)]) -> Vec<u64> {
        let mut v = vec![0; 32];
        for (k, n) in pairs {
            v[*k] = *n;
        }
        v
    }

    #[test]
    fn a_median_is_known_to_its_bucket_only() {
        let g = group(&hist(&[(6, 100)]));
        assert_eq!(
            g.median_us,
            Span {
                from_us: 64,
                to_us: Some(128)
            }
        );
        assert_eq!(g.ci_us, g.median_us);
        // Spread over two buckets, the interval spans both.
        let g = group(&hist(&[(6, 50), (7, 50)]));
        assert_eq!(
            g.ci_us,
            Span {
                from_us: 64,
                to_us: Some(256)
            }
        );
    }

    #[test]
    fn straddling_is_slower_only_when_the_intervals_part() {
        let w = Watched::default();
        let c = one(
            &w,
            Direction::Write,
            3,
            &hist(&[(6, 200)]),
            &hist(&[(8, 200)]),
        );
        assert_eq!(c.decision, LatencyDecision::Slower);
        assert_eq!(c.ratio_bounds, [Some(2.0), Some(8.0)]);
        let c = one(
            &w,
            Direction::Write,
            3,
            &hist(&[(6, 100), (7, 100)]),
            &hist(&[(7, 200)]),
        );
        assert_eq!(c.decision, LatencyDecision::Undecided);
        let c = one(&w, Direction::Write, 3, &hist(&[(6, 5)]), &hist(&[(9, 5)]));
        assert_eq!(c.decision, LatencyDecision::TooFew);
        assert_eq!(c.size_from_bytes, 4096);
    }

    #[test]
    fn the_last_bucket_is_open() {
        let g = group(&hist(&[(31, 20)]));
        assert_eq!(g.median_us.to_us, None);
    }
}
