//! When measuring may stop: the unit is bracketed and priced, every
//! pattern the fit leaves out is shown to pay much less, and no small
//! penalty is left that the rounds could still find.

use super::analyse::{self, Evidence};
use super::engine::Pattern;
use super::results::Penalty;
use super::sequential::{Assessment, ContrastKind, Params, ALPHA};
use super::stats;
use super::unitfit;
use super::verdicts;
use serde::{Deserialize, Serialize};

/// The unit is bracketed already: the fit names one unit strongly against
/// every other candidate and the block-size curve agrees, every pattern
/// the fit names has a priced row, and every pattern is resolved
/// (`resolved`), so the rest of the open contrasts cannot change the
/// verdict and measuring may stop.
pub fn settled(e: &Evidence, p: &Params) -> bool {
    let Some(f) = e.fit() else {
        return false;
    };
    let c = verdicts::curve(e.assessed);
    f.strong()
        && !f.best().lower_bound
        && f.best().unit_bytes.is_some_and(|u| {
            let named = &f.best().patterns;
            let priced = priced_rows(e, u, named);
            c.curve.is_none_or(|cu| cu <= u)
                && measured(e.assessed, u, named, &priced)
                && resolved(&patterns(e, u, named, p), &priced)
        })
}

/// The fit strongly sees a penalty, and its best unit is larger than
/// every probed offset.
pub fn beyond_ladder(e: &Evidence) -> bool {
    e.fit()
        .is_some_and(|f| f.best().lower_bound && f.log_lr_none >= unitfit::STRONG)
}

/// The smallest penalty a run goes on looking for, as a fraction of
/// `min_effect`: with the default 10 %, penalties of 2 % and more keep the
/// offset rows measured (within the rounds and the budget) until the fit
/// names their unit or rules them out. The seed's SSD paid 2.5 % at a
/// 64 KiB unit; a run that stopped once 10 % was ruled out never saw it.
pub const PURSUE: f64 = 0.2;
/// Standard errors above the fitted penalty that must still lie below the
/// pursued size before the run stops looking (one-sided 99 %). A rule for
/// measuring on, not a claim: the verdict claims only what its intervals
/// say.
const PURSUE_Z: f64 = 2.326;

/// A penalty of `PURSUE × min_effect` or more is still possible at some
/// candidate unit for some pattern: measuring on could find it.
pub fn pursue(e: &Evidence, min_effect: f64) -> bool {
    let hidden = unitfit::hidden_penalty(e.samples, e.assessed, e.noise, PURSUE_Z);
    hidden.is_nan() || hidden >= PURSUE * min_effect * 100.0
}

/// The offset rows of the paying patterns whose interval excludes no
/// penalty at `unit`: decided ones, and fitted ones for the rest.
pub fn priced_rows(e: &Evidence, unit: u64, paying: &[Pattern]) -> Vec<Penalty> {
    let mut rows = analyse::penalties(e, Some(unit));
    let fitted = analyse::fitted_penalties(e, unit, paying, &rows);
    rows.extend(fitted);
    rows.retain(|r| r.kind == ContrastKind::Offset && paying.contains(&r.pattern));
    rows
}

/// Every paying pattern that has an offset row of whole units has its
/// penalty measured: an interval that excludes none, decided or fitted.
/// A unit the fit names strongly after two rounds may still leave the
/// penalty's interval touching zero; measuring goes on until it does not
/// (or the rounds run out), so a bracketed unit comes with its cost.
fn measured(assessed: &[Assessment], unit: u64, paying: &[Pattern], priced: &[Penalty]) -> bool {
    paying.iter().all(|&p| {
        let has_row = assessed.iter().any(|a| {
            let c = a.contrast.subject.cell;
            a.contrast.kind == ContrastKind::Offset
                && c.pattern == p
                && u64::from(c.block_size) % unit == 0
                && c.offset % unit != 0
        });
        !has_row || priced.iter().any(|r| r.pattern == p)
    })
}

/// What one pattern pays at the unit, all its rows of blocks up to the
/// ladder's together: the fit's δ (every cell of those rows, weighted as
/// the rows' layout gives) as per cent fewer IOPS, with its interval. The
/// interval holds at 95 % over every pattern and every look of the run
/// (level 1 − 0.05 / (patterns × looks)), since the run stops on it. A
/// pattern pays when the fit names it, or when that interval lies above
/// 0: a 2 % read penalty beside 4 % on writes is priced so long before
/// the fit's 1000 : 1 names it, or any one row's interval clears 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PatternPenalty {
    pub pattern: Pattern,
    #[serde(default, deserialize_with = "crate::probe::figures::f64_or_nan")]
    pub slower_pct: f64,
    #[serde(default, deserialize_with = "crate::probe::figures::pair_or_nan")]
    pub ci95_pct: [f64; 2],
    pub pays: bool,
}

/// Every pattern of the run as the fit prices it at `unit`; `named` are
/// the patterns the fit names (they pay).
pub fn patterns(e: &Evidence, unit: u64, named: &[Pattern], p: &Params) -> Vec<PatternPenalty> {
    let mut all: Vec<Pattern> = e
        .assessed
        .iter()
        .map(|a| a.contrast.subject.cell.pattern)
        .collect();
    all.sort_unstable();
    all.dedup();
    let alpha = ALPHA / (all.len().max(1) as f64 * f64::from(p.looks.max(1)));
    all.into_iter()
        .map(|pattern| {
            let f = unitfit::pattern_penalty(e.samples, e.assessed, e.noise, unit, pattern);
            let (slower_pct, ci95_pct) = f.map_or((f64::NAN, [f64::NAN; 2]), |f| {
                let t = stats::t_quantile(alpha, f.df);
                (f.pct(0.0), [f.pct(-t), f.pct(t)])
            });
            PatternPenalty {
                pattern,
                slower_pct,
                ci95_pct,
                pays: named.contains(&pattern) || ci95_pct[0] > 0.0,
            }
        })
        .collect()
}

/// The patterns that pay among `patterns`.
pub fn paying(patterns: &[PatternPenalty]) -> Vec<Pattern> {
    patterns
        .iter()
        .filter(|p| p.pays)
        .map(|p| p.pattern)
        .collect()
}

/// The mean penalty of the priced rows, in per cent: what the patterns
/// the fit names pay; NaN without any.
pub fn paid(priced: &[Penalty]) -> f64 {
    priced.iter().map(|r| r.slower_pct).sum::<f64>() / priced.len() as f64
}

/// A pattern that does not pay is shown to pay at most half what the
/// paying ones do (`paid`): the upper end of its interval lies below it.
/// Until then "(randwrite only)" would be a claim without evidence.
pub fn bounded(p: &PatternPenalty, paid: f64) -> bool {
    p.ci95_pct[1].is_finite() && p.ci95_pct[1] < paid / 2.0
}

/// Every pattern is resolved: it pays (named, or priced above 0), or it
/// is bounded below half of what the others pay.
fn resolved(patterns: &[PatternPenalty], priced: &[Penalty]) -> bool {
    priced.is_empty() || {
        let paid = paid(priced);
        patterns.iter().all(|p| p.pays || bounded(p, paid))
    }
}
