//! The device's internal unit, inferred from the estimates as a whole
//! rather than from per-comparison decisions.
//!
//! **Model.** For a candidate unit U, an I/O that covers part of a unit
//! (its offset or its end not a multiple of U) pays one penalty common to
//! its pattern; I/Os of whole units pay none. For blocks that are
//! multiples of U this is "offsets not a multiple of U pay"; blocks
//! smaller than U pay at every offset, so their row says nothing about U.
//! In log IOPS, for cell c of a row in round r: y = γ(row, round) − δ ·
//! [c covers part of a unit] + ε, ε normal with the variance σ² of the
//! pattern's noise class (blocks up to the ladder's, or larger ones: in a
//! qemu guest 256 KiB to 1 MiB writes varied five times as much from round
//! to round, and one σ² would let their luck pass for a penalty). One δ per
//! class, not per row: a row whose cells are all equally
//! fast then counts against a unit that says some of them should pay
//! (the zoom's 256 KiB blocks at 128 KiB against a 256 KiB unit when the
//! unit is 64 KiB). The block effect γ
//! takes each round's level of the row (drift, and the reference's own
//! luck of that round), so only differences inside a round count.
//!
//! **Fit.** Within each (row, round) block the log IOPS and the indicator
//! are centred; δ is their least-squares slope over all of the class's
//! blocks, kept only when it is a penalty (paying cells slower), and it
//! removes S_xy² / S_xx from the residual sum of squares. σ² is estimated
//! per class under each model (profile likelihood), so few rounds do not make the evidence look
//! stronger than it is: the log-likelihood gained is (ν/2) ln(RSS₀/RSS),
//! ν the residual degrees of freedom (observations less blocks).
//!
//! **Criterion.** BIC: a class's δ counts only when it gains more than
//! ½ ln ν; a candidate's score is the sum over classes, "no unit / no
//! penalty" scores 0. Candidates that split the probed
//! offsets alike are the same model, so one stands for each: the smallest
//! probed alignment that is a multiple of U, or twice the largest probed
//! alignment when every probed offset would be misaligned (a lower bound).
//! The best candidate's evidence is its score minus the next best's: a
//! log-likelihood ratio.

use super::noise::NoiseModel;
use super::sequential::{Assessment, ContrastKind, NoiseClass};
use crate::probe::measure::CellSamples;
use crate::probe::measure::Pattern;
use crate::units::alignment_of;
use serde::{Deserialize, Serialize};

/// A log-likelihood ratio at least this large (1000 : 1) is strong: a
/// unit is `bracketed` only when it beats the next best candidate and "no
/// penalty" by this much. Under the true model a wrong candidate's
/// likelihood ratio is a martingale, so the chance it ever reaches 1000:1,
/// however often the run looks, is about 1/1000 per candidate.
pub const STRONG: f64 = 6.907_755_278_982_137;

/// One candidate and its score.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Candidate {
    /// The unit, or null for "no unit / no penalty".
    pub unit_bytes: Option<u64>,
    /// Every probed offset is misaligned to it: the unit is at least this.
    #[serde(default)]
    pub lower_bound: bool,
    /// Log-likelihood gained over "no penalty", less the BIC penalty.
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub score: f64,
    /// The patterns that pay the penalty: those whose own evidence is
    /// strong (1000 : 1), else every one whose penalty counted.
    pub patterns: Vec<Pattern>,
}

/// The fit of every candidate, best first.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UnitFit {
    pub candidates: Vec<Candidate>,
    /// The best candidate's score less the next best's (natural log).
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub log_lr_next: f64,
    /// The best candidate's score less that of "no penalty".
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub log_lr_none: f64,
}

impl UnitFit {
    pub fn best(&self) -> &Candidate {
        &self.candidates[0]
    }

    pub fn next(&self) -> Option<&Candidate> {
        self.candidates.get(1)
    }

    /// A unit (or a lower bound) that beats every other candidate strongly.
    pub fn strong(&self) -> bool {
        self.best().unit_bytes.is_some() && self.log_lr_next >= STRONG && self.log_lr_none >= STRONG
    }
}

/// One row of the offset ladder: its reference and its misaligned cells.
struct Row<'a> {
    class: NoiseClass,
    cells: Vec<&'a CellSamples>,
}

fn rows<'a>(samples: &'a [CellSamples], assessed: &[Assessment]) -> Vec<Row<'a>> {
    let mut out: Vec<Row<'a>> = Vec::new();
    let find = |k| samples.iter().find(|s| s.key() == k);
    for a in assessed
        .iter()
        .filter(|a| a.contrast.kind == ContrastKind::Offset)
    {
        let (Some(s), Some(r)) = (find(a.contrast.subject), find(a.contrast.reference)) else {
            continue;
        };
        match out.iter_mut().find(|row| row.cells[0].key() == r.key()) {
            Some(row) => row.cells.push(s),
            None => out.push(Row {
                class: NoiseClass::of_cell(&r.cell),
                cells: vec![r, s],
            }),
        }
    }
    out
}

/// Sums over a row's (row, round) blocks of the centred indicator x
/// (`pays`) and log IOPS y, each block weighted as `noise` weighs its
/// round (rounds set aside left out): S_xx, S_xy, S_yy, and the residual
/// degrees of freedom (observations less blocks).
fn row_sums(
    row: &Row,
    pays: &dyn Fn(&crate::probe::measure::Cell) -> bool,
    noise: &NoiseModel,
) -> [f64; 4] {
    let rounds: Vec<u32> = row.cells[0].rounds.iter().map(|r| r.round).collect();
    let mut s = [0.0; 4];
    for round in rounds {
        let w = noise.weight(row.class, round);
        if w <= 0.0 {
            continue;
        }
        let block: Vec<(f64, f64)> = row
            .cells
            .iter()
            .filter_map(|c| {
                let y = c.in_round(round).filter(|&v| v > 0.0)?.ln();
                Some((f64::from(u8::from(pays(&c.cell))), y))
            })
            .collect();
        if block.len() < 2 {
            continue;
        }
        let k = block.len() as f64;
        let mx = block.iter().map(|b| b.0).sum::<f64>() / k;
        let my = block.iter().map(|b| b.1).sum::<f64>() / k;
        for (x, y) in &block {
            s[0] += w * (x - mx) * (x - mx);
            s[1] += w * (x - mx) * (y - my);
            s[2] += w * (y - my) * (y - my);
        }
        s[3] += k - 1.0;
    }
    s
}

/// The candidate units among the rows' offsets: each probed alignment
/// but the finest, and twice the coarsest (a lower bound).
fn candidate_units(rows: &[Row]) -> Option<Vec<(u64, bool)>> {
    let mut classes: Vec<u64> = rows
        .iter()
        .flat_map(|r| r.cells[1..].iter().map(|c| alignment_of(c.cell.offset)))
        .collect();
    classes.sort_unstable();
    classes.dedup();
    let top = *classes.last()?;
    let mut units: Vec<(u64, bool)> = classes[1..].iter().map(|&u| (u, false)).collect();
    units.push((2 * top, true));
    Some(units)
}

/// Every candidate's score, each round weighted as `noise` says; None
/// without offset comparisons or noise.
pub fn fit(
    samples: &[CellSamples],
    assessed: &[Assessment],
    noise: &NoiseModel,
) -> Option<UnitFit> {
    let rows = rows(samples, assessed);
    let mut candidates: Vec<Candidate> = candidate_units(&rows)?
        .into_iter()
        .map(|(unit, lower_bound)| {
            let (score, patterns) = score(&rows, unit, noise);
            Candidate {
                unit_bytes: Some(unit),
                lower_bound,
                score,
                patterns,
            }
        })
        .collect();
    candidates.push(Candidate {
        unit_bytes: None,
        lower_bound: false,
        score: 0.0,
        patterns: Vec::new(),
    });
    // Best first; on a tie "no penalty" goes first, then the smaller unit.
    candidates.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.unit_bytes.is_some().cmp(&b.unit_bytes.is_some()))
            .then(a.unit_bytes.cmp(&b.unit_bytes))
    });
    let best = candidates[0].score;
    Some(UnitFit {
        log_lr_next: best - candidates.get(1).map_or(0.0, |c| c.score),
        log_lr_none: best,
        candidates,
    })
}

/// A candidate's score and the patterns that pay its penalty: per
/// pattern, the profile log-likelihood ratio (σ² estimated under each
/// model) of one common penalty δ against none, less its BIC price.
fn score(rows: &[Row], unit: u64, noise: &NoiseModel) -> (f64, Vec<Pattern>) {
    let (mut total, mut paying) = (0.0, Vec::new());
    for (class, [sxx, sxy, syy, df]) in class_sums(rows, unit, noise) {
        // A penalty only: cells that pay are slower (a negative slope).
        if df < 3.0 || syy <= 0.0 || sxx <= 0.0 || sxy >= 0.0 {
            continue;
        }
        let rss = (syy - sxy * sxy / sxx).max(syy * 1e-9);
        let gained = 0.5 * df * (syy / rss).ln() - 0.5 * df.ln();
        if gained > 0.0 {
            total += gained;
            paying.push((class.pattern, gained));
        }
    }
    // The patterns said to pay: those with strong evidence of their own
    // (a pattern that gains a little by chance is not named), else every
    // one that gained.
    let strong: Vec<Pattern> = paying
        .iter()
        .filter(|(_, g)| *g >= STRONG)
        .map(|(p, _)| *p)
        .collect();
    let mut named = if strong.is_empty() {
        paying.iter().map(|(p, _)| *p).collect()
    } else {
        strong
    };
    named.sort_unstable();
    named.dedup();
    (total, named)
}

/// Whether an I/O of `c` covers part of a unit of `unit` bytes.
fn pays(c: &crate::probe::measure::Cell, unit: u64) -> bool {
    c.offset % unit != 0 || (c.offset + u64::from(c.block_size)) % unit != 0
}

/// Per noise class, the sums of [`row_sums`] over its rows at `unit`.
fn class_sums(rows: &[Row], unit: u64, noise: &NoiseModel) -> Vec<(NoiseClass, [f64; 4])> {
    let mut classes: Vec<NoiseClass> = rows.iter().map(|r| r.class).collect();
    classes.sort_unstable();
    classes.dedup();
    classes
        .into_iter()
        .map(|class| {
            let mut s = [0.0; 4];
            for r in rows.iter().filter(|r| r.class == class) {
                for (acc, v) in s.iter_mut().zip(row_sums(r, &|c| pays(c, unit), noise)) {
                    *acc += v;
                }
            }
            (class, s)
        })
        .collect()
}

/// A penalty as the fit estimates it for one class at one unit: δ (log
/// IOPS, positive when paying cells are slower), its standard error (σ²
/// from the residuals) and the residual degrees of freedom.
#[derive(Clone, Copy, Debug)]
pub struct Fitted {
    pub delta: f64,
    pub se: f64,
    pub df: f64,
}

impl Fitted {
    fn of([sxx, sxy, syy, df]: [f64; 4]) -> Option<Fitted> {
        if sxx <= 0.0 || df < 3.0 {
            return None;
        }
        let rss = (syy - sxy * sxy / sxx).max(0.0);
        Some(Fitted {
            delta: -sxy / sxx,
            se: (rss / (df - 1.0) / sxx).sqrt(),
            df: df - 1.0,
        })
    }

    /// δ + `k` standard errors as per cent fewer IOPS.
    pub fn pct(&self, k: f64) -> f64 {
        (1.0 - (-(self.delta + k * self.se)).exp()) * 100.0
    }
}

/// Pattern `p`'s penalty at `unit` over its rows of blocks up to the
/// ladder's: the fit's δ with every cell of those rows, not row by row.
pub fn pattern_penalty(
    samples: &[CellSamples],
    assessed: &[Assessment],
    noise: &NoiseModel,
    unit: u64,
    p: Pattern,
) -> Option<Fitted> {
    let rows = rows(samples, assessed);
    class_sums(&rows, unit, noise)
        .into_iter()
        .find(|(class, _)| class.pattern == p && !class.large)
        .and_then(|(_, sums)| Fitted::of(sums))
}

/// The largest penalty (per cent fewer IOPS) the rounds still allow at
/// any candidate unit, for any pattern of the blocks up to the ladder's:
/// per candidate and class, the fitted δ plus `z` standard errors. A run
/// looking for small penalties measures on while this is large
/// (`settle::pursue`); NaN when nothing can be fitted yet.
pub fn hidden_penalty(
    samples: &[CellSamples],
    assessed: &[Assessment],
    noise: &NoiseModel,
    z: f64,
) -> f64 {
    let rows = rows(samples, assessed);
    let Some(units) = candidate_units(&rows) else {
        return f64::NAN;
    };
    units
        .into_iter()
        .flat_map(|(unit, _)| class_sums(&rows, unit, noise))
        .filter(|(class, _)| !class.large)
        .filter_map(|(_, sums)| Fitted::of(sums))
        .map(|f| f.pct(z))
        .fold(f64::NAN, f64::max)
}
