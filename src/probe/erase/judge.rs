//! What the erase-unit search's rounds say: each candidate's reads across
//! its boundaries against the reads ending and starting there, and the
//! unit they point at.
//!
//! **Pairing.** Every round runs a candidate's three cells together, in
//! a random order among the others', and the candidate is judged on its
//! per-round differences d_r = ln(across_r) − (ln(ends_r) + ln(starts_r))
//! / 2 of IOPS: drift over the run hits the three alike and cancels, as
//! in the probe's other comparisons (`infer::sequential`).
//!
//! **Intervals.** Each candidate's variance is moderated toward the pool
//! of the other candidates' (6 prior degrees of freedom at most), and
//! its interval is taken at level 1 − α / (candidates × most rounds):
//! whenever the search stops, every interval holds at once at 95 %.
//!
//! **Decisions.** Slower: the interval shows reads across take longer and
//! the estimate is `min_effect` or more. Fine: the interval excludes a
//! penalty of `min_effect`. Else open.

use super::layout::{Candidate, Layout};
use crate::probe::infer::{self, Confidence, Decision};
use crate::probe::measure::CellSamples;
use crate::units::human;
use serde::{Deserialize, Serialize};

/// Family-wise error rate of every candidate's decision in one search.
const ALPHA: f64 = 0.05;
/// Most prior degrees of freedom lent by the pool.
const PRIOR_DF: f64 = 6.0;

/// One candidate as the rounds judged it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CandidateReport {
    pub unit_bytes: u64,
    /// Its cells' offsets (`Cell::offset`): the reads ending at, across
    /// and starting at its boundaries.
    pub offsets: [u64; 3],
    /// Rounds in which all three of its cells ran.
    pub rounds: usize,
    /// How much longer reads across its boundaries took than those
    /// ending or starting there, in per cent (negative: shorter).
    #[serde(deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub slower_pct: f64,
    /// Its simultaneous interval (see the module notes).
    pub ci95_pct: [f64; 2],
    pub decision: Decision,
}

/// The search's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EraseUnit {
    pub confidence: Confidence,
    /// The unit measured: the smallest candidate decided slower.
    pub unit_bytes: Option<u64>,
    /// The largest candidate below the unit decided fine (null when the
    /// unit is the smallest candidate), and the unit.
    pub bracket_bytes: Option<[Option<u64>; 2]>,
    /// What the kernel declares (`preferred_erase_size`, or `--topology
    /// erase=`), when it does.
    pub declared_bytes: Option<u64>,
    /// The bytes each read moves, and how far apart a cell's reads are.
    pub read_bytes: u64,
    pub spacing_bytes: u64,
    #[serde(deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub min_effect_pct: f64,
    pub statement: String,
    pub summary: String,
    /// Smallest first.
    pub candidates: Vec<CandidateReport>,
}

impl EraseUnit {
    /// A candidate was decided slower: a unit (or a doubt about one) to
    /// act on.
    pub fn found(&self) -> bool {
        self.candidates
            .iter()
            .any(|c| c.decision == Decision::Slower)
    }

    /// The answer leaves a unit of `min_effect` neither decided nor ruled
    /// out: exit bit 4, as the probe's internal-unit verdicts.
    pub fn open(&self) -> bool {
        !matches!(
            self.confidence,
            Confidence::Bracketed | Confidence::NoDifference
        )
    }
}

/// The per-round differences of one candidate (see the module notes).
fn differences(c: &Candidate, samples: &[CellSamples]) -> Vec<f64> {
    let of = |i: usize| samples.iter().find(|s| s.cell == c.cells[i]);
    let (Some(ends), Some(across), Some(starts)) = (of(0), of(1), of(2)) else {
        return Vec::new();
    };
    // The rate of a round's reads: one over their low quantile latency
    // where the window recorded it (`measure::LOW_QUANTILE`: the host's
    // delays only add to a read's time), else its IOPS.
    let rate = |c: &CellSamples, round: u32| {
        let r = c.rounds.iter().find(|r| r.round == round)?;
        let x = if r.low_ns > 0 {
            1e9 / r.low_ns as f64
        } else {
            r.iops
        };
        (x.is_finite() && x > 0.0).then_some(x)
    };
    across
        .rounds
        .iter()
        .filter_map(|r| {
            let (e, a, s) = (
                rate(ends, r.round)?,
                rate(across, r.round)?,
                rate(starts, r.round)?,
            );
            Some(a.ln() - (e.ln() + s.ln()) / 2.0)
        })
        .collect()
}

/// Every candidate judged on the rounds so far; `looks` is the most
/// rounds the search may run.
pub fn assess(
    layout: &Layout,
    samples: &[CellSamples],
    min_effect: f64,
    looks: u32,
) -> Vec<CandidateReport> {
    let ds: Vec<Vec<f64>> = layout
        .candidates
        .iter()
        .map(|c| differences(c, samples))
        .collect();
    let ones: Vec<Vec<f64>> = ds.iter().map(|d| vec![1.0; d.len()]).collect();
    let alpha = ALPHA / (layout.candidates.len().max(1) as f64 * f64::from(looks.max(1)));
    layout
        .candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let others = (0..ds.len())
                .filter(|&j| j != i)
                .map(|j| (ds[j].as_slice(), ones[j].as_slice()));
            let pooled = infer::pooled_variance(others);
            let prior_df = pooled.map_or(PRIOR_DF, |p| p.df.min(PRIOR_DF));
            let t = infer::moderated_t(&ds[i], &ones[i], pooled.map(|p| p.var), prior_df, alpha);
            // Time per read across over time per read beside: the IOPS
            // ratio turned over.
            let pct = |x: f64| ((-x).exp() - 1.0) * 100.0;
            let (slower, ci) = (pct(t.mean), [pct(t.ci[1]), pct(t.ci[0])]);
            let decision = if ds[i].len() < 2 || !ci[0].is_finite() || !ci[1].is_finite() {
                Decision::Open
            } else if ci[0] > 0.0 && slower >= min_effect * 100.0 {
                Decision::Slower
            } else if ci[1] < min_effect * 100.0 {
                Decision::Fine
            } else {
                Decision::Open
            };
            CandidateReport {
                unit_bytes: c.unit,
                offsets: c.cells.map(|x| x.offset),
                rounds: ds[i].len(),
                slower_pct: slower,
                ci95_pct: ci,
                decision,
            }
        })
        .collect()
}

/// `21% [15, 27]`.
fn pct(c: &CandidateReport) -> String {
    format!(
        "{:.0}% [{:.0}, {:.0}]",
        c.slower_pct, c.ci95_pct[0], c.ci95_pct[1]
    )
}

/// Nothing more to measure for the verdict: the smallest candidate
/// decided slower has every smaller one decided fine (bracketed), or
/// every candidate is decided. A larger candidate still open changes
/// neither the unit nor its bracket; measuring it on only kept a search
/// going for 16 rounds where a multiple of the unit cost just about
/// `--min-effect` (bench/erase-unit: 12 and 64 MiB on the 4 MiB device).
pub fn settled(cands: &[CandidateReport]) -> bool {
    match cands.iter().position(|c| c.decision == Decision::Slower) {
        Some(u) => cands[..u].iter().all(|c| c.decision == Decision::Fine),
        None => cands.iter().all(|c| c.decision != Decision::Open),
    }
}

/// The answer from every candidate's decision; `declared` is what the
/// kernel says the unit is.
pub fn verdict(
    layout: &Layout,
    cands: Vec<CandidateReport>,
    min_effect: f64,
    declared: Option<u64>,
) -> EraseUnit {
    let read = human(layout.read);
    let min_pct = min_effect * 100.0;
    let unit = cands.iter().find(|c| c.decision == Decision::Slower);
    let (confidence, bracket) = match unit {
        _ if cands.iter().all(|c| c.rounds < 2) => (Confidence::Untested, None),
        None if cands.iter().all(|c| c.decision == Decision::Fine) => {
            (Confidence::NoDifference, None)
        }
        None => (Confidence::Inconclusive, None),
        Some(u) => {
            let below: Vec<&CandidateReport> = cands
                .iter()
                .filter(|c| c.unit_bytes < u.unit_bytes)
                .collect();
            let multiple_fine = cands.iter().any(|c| {
                c.unit_bytes > u.unit_bytes
                    && c.unit_bytes % u.unit_bytes == 0
                    && c.decision == Decision::Fine
            });
            let lower = below.last().map(|c| c.unit_bytes);
            if multiple_fine {
                (Confidence::Inconsistent, None)
            } else if !below.is_empty() && below.iter().all(|c| c.decision == Decision::Fine) {
                (Confidence::Bracketed, Some([lower, Some(u.unit_bytes)]))
            } else {
                (Confidence::Likely, Some([lower, Some(u.unit_bytes)]))
            }
        }
    };
    let named = matches!(confidence, Confidence::Bracketed | Confidence::Likely);
    let unit_bytes = unit.filter(|_| named).map(|u| u.unit_bytes);
    let said = declared.map_or_else(
        || "; the kernel declares no unit".to_string(),
        |d| match unit_bytes {
            Some(u) if u == d => format!("; the kernel declares {} too", human(d)),
            _ => format!("; the kernel declares {}", human(d)),
        },
    );
    let open: Vec<String> = cands
        .iter()
        .filter(|c| c.decision == Decision::Open)
        .map(|c| human(c.unit_bytes))
        .collect();
    let (statement, summary) = match (confidence, unit) {
        (Confidence::Bracketed | Confidence::Likely, Some(u)) => {
            let below = cands
                .iter()
                .rfind(|c| c.unit_bytes < u.unit_bytes)
                .map(|b| {
                    format!(
                        "; across {} boundaries {}",
                        human(b.unit_bytes),
                        pct(b)
                    )
                })
                .unwrap_or_default();
            let how = if confidence == Confidence::Bracketed {
                String::new()
            } else if cands.first().is_some_and(|c| c.unit_bytes == u.unit_bytes) {
                " or smaller (likely: the smallest boundary searched; the probe's grid measures below it)".to_string()
            } else {
                format!(" (likely: {} still open)", open.join(", "))
            };
            (
                format!(
                    "erase unit {}{how}: {read} reads across a {} boundary took {} longer than reads ending or starting at it{below}{said}",
                    human(u.unit_bytes),
                    human(u.unit_bytes),
                    pct(u)
                ),
                format!(
                    "reads across {} boundaries are slower: start partitions and filesystems' data on multiples of {}",
                    human(u.unit_bytes),
                    human(u.unit_bytes)
                ),
            )
        }
        (Confidence::Inconsistent, Some(u)) => (
            format!(
                "no erase unit: reads across {} boundaries were slower ({}), but not across some of its multiples{said}",
                human(u.unit_bytes),
                pct(u)
            ),
            "the boundaries that slow reads do not nest as an erase unit's would: measure again when the device is idle".into(),
        ),
        (Confidence::NoDifference, _) => (
            format!(
                "no erase unit found: {read} reads across boundaries of {} to {} were not {min_pct:.0}% slower than reads beside them (every interval excludes it){said}",
                human(cands.first().map_or(0, |c| c.unit_bytes)),
                human(cands.last().map_or(0, |c| c.unit_bytes)),
            ),
            "reading does not show this device's unit: use what it declares, or a multiple of 4 MiB".into(),
        ),
        _ => (
            format!(
                "no erase unit decided: {} still open at {min_pct:.0}%{said}",
                if open.is_empty() { "every candidate".to_string() } else { open.join(", ") }
            ),
            "too noisy or too short to tell: run longer (--max-time) on an idle device".into(),
        ),
    };
    EraseUnit {
        confidence,
        unit_bytes,
        bracket_bytes: bracket.filter(|_| named),
        declared_bytes: declared,
        read_bytes: layout.read,
        spacing_bytes: layout.spacing,
        min_effect_pct: min_pct,
        statement,
        summary,
        candidates: cands,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::erase::layout::lay_out;
    use crate::probe::measure::{new_histogram, RoundSample, Window};
    use crate::units::MIB;

    const GIB: u64 = 1 << 30;

    /// Rounds of a simulated card whose reads across a multiple of
    /// `unit` take `pct` per cent longer, each window's median off by a
    /// lognormal factor of `sd`.
    fn card(l: &Layout, unit: Option<u64>, pct: f64, sd: f64, rounds: u32) -> Vec<CellSamples> {
        let mut rng = fastrand::Rng::with_seed(7);
        let mut gauss = move || {
            let (u1, u2) = (rng.f64().max(1e-12), rng.f64());
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        };
        let mut out = Vec::new();
        for c in &l.candidates {
            for (i, cell) in c.cells.iter().enumerate() {
                let slow = i == 1 && unit.is_some_and(|u| c.unit % u == 0);
                let rounds = (0..rounds)
                    .map(|round| {
                        let ns =
                            1e6 * if slow { 1.0 + pct / 100.0 } else { 1.0 } * (sd * gauss()).exp();
                        RoundSample {
                            round,
                            iops: 1e9 / ns,
                            low_ns: ns as u64,
                            retries: 0,
                            broken: false,
                            window: Window {
                                length_s: 0.1,
                                first_s: 0.05,
                                parts_iops: [1e9 / ns; 2],
                            },
                        }
                    })
                    .collect();
                out.push(CellSamples {
                    target: 0,
                    cell: *cell,
                    rounds,
                    latency: new_histogram(),
                });
            }
        }
        out
    }

    fn search(unit: Option<u64>, pct: f64, sd: f64, rounds: u32) -> EraseUnit {
        let l = lay_out(4 * GIB, 0, 16384, 512).unwrap();
        let s = card(&l, unit, pct, sd, rounds);
        verdict(&l, assess(&l, &s, 0.1, 16), 0.1, Some(4 * MIB))
    }

    #[test]
    fn each_card_unit_is_bracketed_between_its_neighbours() {
        for (unit, below) in [(4, 2), (8, 4), (12, 8), (24, 16), (64, 32)] {
            let e = search(Some(unit * MIB), 20.0, 0.02, 6);
            assert_eq!(
                e.confidence,
                Confidence::Bracketed,
                "{unit}: {}",
                e.statement
            );
            assert_eq!(e.unit_bytes, Some(unit * MIB));
            assert_eq!(e.bracket_bytes, Some([Some(below * MIB), Some(unit * MIB)]));
            assert!(e.found() && !e.open());
            assert!(
                e.statement.contains(&format!("erase unit {unit} MiB")),
                "{}",
                e.statement
            );
        }
    }

    #[test]
    fn a_flat_device_is_never_given_a_unit() {
        let e = search(None, 0.0, 0.02, 6);
        assert_eq!(e.confidence, Confidence::NoDifference, "{}", e.statement);
        assert_eq!(e.unit_bytes, None);
        assert!(!e.found() && !e.open());
        assert!(
            e.statement.contains("the kernel declares 4 MiB"),
            "{}",
            e.statement
        );
    }

    #[test]
    fn noise_too_large_leaves_it_open_and_names_no_unit() {
        let e = search(Some(4 * MIB), 20.0, 0.5, 3);
        assert_eq!(e.unit_bytes, None, "{}", e.statement);
        assert_eq!(e.confidence, Confidence::Inconclusive);
        assert!(e.open());
    }

    #[test]
    fn a_penalty_below_the_smallest_worth_finding_is_no_unit() {
        let e = search(Some(4 * MIB), 3.0, 0.005, 8);
        assert_eq!(e.confidence, Confidence::NoDifference, "{}", e.statement);
    }

    #[test]
    fn one_round_is_untested() {
        let e = search(Some(4 * MIB), 20.0, 0.02, 1);
        assert_eq!(e.confidence, Confidence::Untested);
        assert!(e.open());
    }

    #[test]
    fn the_search_is_settled_once_the_bracket_is_decided() {
        let l = lay_out(4 * GIB, 0, 16384, 512).unwrap();
        let mut cands = assess(&l, &card(&l, Some(4 * MIB), 20.0, 0.02, 6), 0.1, 16);
        assert!(settled(&cands));
        // A larger candidate still open changes neither unit nor bracket.
        let at = |c: &[CandidateReport], u: u64| c.iter().position(|c| c.unit_bytes == u).unwrap();
        let twelve = at(&cands, 12 * MIB);
        cands[twelve].decision = Decision::Open;
        assert!(settled(&cands));
        // A smaller one still open could still be the unit.
        let two = at(&cands, 2 * MIB);
        cands[two].decision = Decision::Open;
        assert!(!settled(&cands));
        // No unit: settled only once every candidate is decided.
        let mut flat = assess(&l, &card(&l, None, 0.0, 0.02, 6), 0.1, 16);
        assert!(settled(&flat));
        flat[0].decision = Decision::Open;
        assert!(!settled(&flat));
    }
}
