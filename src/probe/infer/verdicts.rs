//! The verdict about the unit: how sure, and the sentence. The unit comes
//! from the fit of every candidate ([`super::unitfit`]); "no difference"
//! only when every offset's interval excludes a penalty of `min_effect`,
//! else `inconclusive`, with what could be excluded and why not the rest.

use super::results::{bounded, paying, PatternPenalty};
use super::results::{span, Confidence, Noise};
use super::sequential::{Assessment, ContrastKind, Decision};
use super::unitfit::{Candidate, UnitFit};
use crate::probe::measure::Pattern;
use crate::units::{alignment_of, human};

/// What the block-size curve says: the unit is at least `curve`, because
/// aligned blocks of `pair.0` were slower per I/O than blocks of `pair.1`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Curve {
    pub curve: Option<u64>,
    pub pair: Option<(u32, u32)>,
}

/// The curve from the block-size contrasts decided slower.
pub fn curve(assessed: &[Assessment]) -> Curve {
    let pair = assessed
        .iter()
        .filter(|a| a.contrast.kind == ContrastKind::BlockSize && a.decision == Decision::Slower)
        .map(|a| {
            (
                a.contrast.subject.cell.block_size,
                a.contrast.reference.cell.block_size,
            )
        })
        .max();
    Curve {
        curve: pair.map(|(small, _)| 2 * u64::from(small)),
        pair,
    }
}

/// What the verdict is made from.
pub struct Inputs<'a> {
    pub assessed: &'a [Assessment],
    pub fit: Option<&'a UnitFit>,
    pub patterns: &'a [Pattern],
    pub min_effect: f64,
    pub noise: &'a [Noise],
    pub rounds: u32,
    /// What each pattern pays at the fit's unit (`analyse::pattern_penalties`), and
    /// the mean of the priced rows (NaN without any).
    pub at_unit: &'a [PatternPenalty],
    pub paid: f64,
}

/// " (randwrite only)" when some probed patterns showed nothing.
fn only(slow: &[Pattern], patterns: &[Pattern]) -> String {
    if slow.len() < patterns.len() && !slow.is_empty() {
        let names: Vec<&str> = slow.iter().map(|p| p.as_str()).collect();
        format!(" ({} only)", names.join(", "))
    } else {
        String::new()
    }
}

/// What the patterns that do not pay at the unit paid: " (randwrite
/// only)" when each is shown to pay at most half what the paying ones do,
/// else each one's bound: " (randwrite; randread at most 2.4 %)".
fn others_clause(i: &Inputs, paying: &[Pattern]) -> String {
    let others: Vec<&PatternPenalty> = i.at_unit.iter().filter(|p| !p.pays).collect();
    if paying.is_empty() || others.is_empty() {
        return String::new();
    }
    let names: Vec<&str> = paying.iter().map(|p| p.as_str()).collect();
    if others.iter().all(|p| bounded(p, i.paid)) {
        return format!(" ({} only)", names.join(", "));
    }
    let bounds: Vec<String> = others
        .iter()
        .map(|p| match p.ci_pct[1] {
            hi if hi.is_finite() => format!("{} at most {hi:.1} %", p.pattern.as_str()),
            _ => format!("{} not measured at this unit", p.pattern.as_str()),
        })
        .collect();
    format!(" ({}; {})", names.join(", "), bounds.join(", "))
}

/// `aligned 4 KiB blocks were slower per I/O than 16 KiB ones …`.
pub fn curve_words(c: &Curve) -> String {
    c.pair
        .map(|(small, big)| {
            format!(
                "aligned {} blocks were slower per I/O than {} ones (read-modify-write below the unit)",
                human(u64::from(small)),
                human(u64::from(big))
            )
        })
        .unwrap_or_default()
}

fn curve_clause(c: &Curve) -> String {
    if c.pair.is_some() {
        format!("; {}", curve_words(c))
    } else {
        String::new()
    }
}

fn offsets(assessed: &[Assessment]) -> impl Iterator<Item = &Assessment> {
    assessed
        .iter()
        .filter(|a| a.contrast.kind == ContrastKind::Offset)
}

/// The probed alignments below `unit` in the rows of `patterns`.
fn below(assessed: &[Assessment], patterns: &[Pattern], unit: u64) -> (u64, u64) {
    let classes: Vec<u64> = offsets(assessed)
        .filter(|a| patterns.contains(&a.contrast.subject.cell.pattern))
        .map(|a| alignment_of(a.contrast.subject.cell.offset))
        .filter(|&c| c < unit)
        .collect();
    (
        classes.iter().min().copied().unwrap_or(unit / 2),
        classes.iter().max().copied().unwrap_or(unit / 2),
    )
}

/// The unit, how sure, and the sentence.
pub fn unit_statement(i: &Inputs, c: &Curve) -> (Option<u64>, Confidence, String) {
    match i.fit {
        Some(f) if f.best().unit_bytes.is_some() && f.log_lr_none >= super::unitfit::STRONG => {
            with_unit(i, c, f)
        }
        _ => without_unit(i, c),
    }
}

/// `likelihood ratio 3.2e4 : 1 against 8 KiB`.
fn against(f: &UnitFit) -> String {
    let name = |c: &Candidate| match (c.unit_bytes, c.lower_bound) {
        (None, _) => "no penalty".to_string(),
        (Some(u), true) => format!("a unit of {} or more", human(u)),
        (Some(u), false) => human(u),
    };
    let lr = f.log_lr_next.exp();
    let lr = if lr < 1000.0 {
        format!("{lr:.0}")
    } else {
        format!("{lr:.1e}")
    };
    match f.next() {
        Some(n) => format!("likelihood ratio {lr} : 1 against {}", name(n)),
        None => "no other candidate".into(),
    }
}

fn with_unit(i: &Inputs, c: &Curve, f: &UnitFit) -> (Option<u64>, Confidence, String) {
    let best = f.best();
    let u = best.unit_bytes.expect("a unit");
    let paying = if i.at_unit.is_empty() {
        best.patterns.clone()
    } else {
        paying(i.at_unit)
    };
    let (lo, hi) = below(i.assessed, &paying, u);
    if best.lower_bound {
        let o = only(&best.patterns, i.patterns);
        let at_least = c.curve.unwrap_or(0).max(u);
        let confidence = if f.strong() {
            Confidence::LowerBound
        } else {
            Confidence::Likely
        };
        return (
            Some(at_least),
            confidence,
            format!(
                "effective internal unit at least {}: offsets aligned to {} were slower{o}{}; to bound it, probe offsets {} … {} with blocks of {} or more (--bs {}k --offsets {})",
                human(at_least),
                span(lo, hi),
                curve_clause(c),
                human(at_least),
                human(8 * at_least),
                human(16 * at_least),
                (16 * at_least) / 1024,
                (0..4)
                    .map(|k| format!("{}k", (at_least << k) / 1024))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        );
    }
    if let Some(cu) = c.curve.filter(|&cu| cu > u) {
        return (
            None,
            Confidence::Inconsistent,
            format!("offsets aligned to {} performed like aligned, yet aligned blocks below {} were slower: no single internal unit explains the results", human(u), human(cu)),
        );
    }
    let o = if i.at_unit.is_empty() {
        only(&best.patterns, i.patterns)
    } else {
        others_clause(i, &paying)
    };
    let head = format!(
        "offsets not aligned to {} ({}) were slower{o}; offsets aligned to {} were not",
        human(u),
        span(lo, hi),
        human(u)
    );
    if f.strong() {
        (
            Some(u),
            Confidence::Bracketed,
            format!(
                "effective internal unit {}: {head}{} ({})",
                human(u),
                curve_clause(c),
                against(f)
            ),
        )
    } else {
        (
            Some(u),
            Confidence::Likely,
            format!(
                "effective internal unit probably {}: {head}{}; but the evidence is weak ({}): a longer --max-time or --runtime would settle it",
                human(u),
                curve_clause(c),
                against(f)
            ),
        )
    }
}

fn without_unit(i: &Inputs, c: &Curve) -> (Option<u64>, Confidence, String) {
    if let Some(cu) = c.curve {
        return (
            Some(cu),
            Confidence::LowerBound,
            format!(
                "effective internal unit at least {}: {}{}, while the offset comparisons named no unit strongly; to bracket it, probe offsets {} … {} with blocks of {} or more",
                human(cu),
                curve_words(c),
                only(&[], i.patterns),
                human(cu / 2),
                human(4 * cu),
                human(8 * cu)
            ),
        );
    }
    let floor = 1.0 - i.min_effect;
    let all: Vec<&Assessment> = offsets(i.assessed).collect();
    let excluded = |a: &&Assessment| a.ci[0] > floor && a.decision != Decision::Slower;
    if all.iter().all(excluded) {
        return (
            None,
            Confidence::NoDifference,
            no_difference_sentence(i.min_effect),
        );
    }
    (
        None,
        Confidence::Inconclusive,
        inconclusive_sentence(&all, i.min_effect, i.noise, i.rounds),
    )
}

/// `… no penalty of 10 % or more at any offset (95 % confidence)`.
pub fn no_difference_sentence(min_effect: f64) -> String {
    format!(
        "misalignment made no measurable difference on this device: no penalty of {:.0} % or more at any offset (95 % confidence, all offsets together)",
        min_effect * 100.0
    )
}

/// `4 KiB randwrite at 512 B`.
fn where_(a: &Assessment) -> String {
    let c = a.contrast.subject.cell;
    format!(
        "{} {} at {}",
        human(u64::from(c.block_size)),
        c.pattern.as_str(),
        human(c.offset)
    )
}

/// What could be excluded, what not, and why: the noise.
pub fn inconclusive_sentence(
    offsets: &[&Assessment],
    min_effect: f64,
    noise: &[Noise],
    rounds: u32,
) -> String {
    let floor = 1.0 - min_effect;
    let pct = min_effect * 100.0;
    let open: Vec<&&Assessment> = offsets
        .iter()
        .filter(|a| !(a.ci[0] > floor && a.decision != Decision::Slower))
        .collect();
    let ruled_out = offsets.len() - open.len();
    let worst = open
        .iter()
        .map(|a| (1.0 - a.ci[0]) * 100.0)
        .filter(|x| x.is_finite())
        .fold(f64::NAN, f64::max);
    let names: Vec<String> = open.iter().take(4).map(|a| where_(a)).collect();
    let more = if open.len() > 4 {
        format!(" and {} more", open.len() - 4)
    } else {
        String::new()
    };
    let upto = if worst.is_finite() {
        format!(" (penalties up to {worst:.0} % remain possible)")
    } else {
        " (too few rounds for an interval)".to_string()
    };
    let slower = open
        .iter()
        .filter(|a| a.decision == Decision::Slower)
        .count();
    let slower = if slower > 0 {
        format!("; {slower} of them were slower, but no single unit explains that")
    } else {
        String::new()
    };
    let why = noise
        .iter()
        .map(|n| {
            format!(
                "{} rounds varied by ±{:.0} % against each other, so with {rounds} rounds a penalty below {:.0} % cannot be told from none",
                n.pattern.as_str(),
                n.paired_sd_pct,
                n.detectable_pct
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    format!(
        "inconclusive: a penalty of {pct:.0} % or more was ruled out at {ruled_out} of {} offsets (95 % confidence), not at {}{more}{upto}{slower}; why: {why}; a longer --max-time or --runtime, or a quieter machine, would settle it",
        offsets.len(),
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::super::sequential::Contrast;
    use super::*;
    use crate::probe::measure::Cell;
    use crate::probe::measure::Key;

    /// An offset contrast of `bs` writes at `offset`, as judged.
    fn judged(bs: u32, offset: u64, decision: Decision, ci: [f64; 2]) -> Assessment {
        let key = |offset| Key {
            target: 0,
            cell: Cell {
                block_size: bs,
                offset,
                pattern: Pattern::Randwrite,
            },
        };
        Assessment {
            contrast: Contrast {
                kind: ContrastKind::Offset,
                subject: key(offset),
                reference: key(0),
            },
            n: 8,
            outliers: 0,
            ratio: (ci[0] * ci[1]).sqrt(),
            ci,
            p: 0.5,
            p_adjusted: 1.0,
            decision,
        }
    }

    fn noise() -> Vec<Noise> {
        vec![Noise {
            pattern: Pattern::Randwrite,
            paired_sd_pct: 8.0,
            detectable_pct: 26.0,
            window_s: 0.125,
            jitter_pct: 6.0,
            drift_pct: 5.3,
        }]
    }

    fn verdict(a: &[Assessment]) -> (Option<u64>, Confidence, String) {
        let i = Inputs {
            assessed: a,
            fit: None,
            patterns: &[Pattern::Randwrite],
            min_effect: 0.1,
            noise: &noise(),
            rounds: 8,
            at_unit: &[],
            paid: f64::NAN,
        };
        unit_statement(&i, &curve(a))
    }

    #[test]
    fn no_difference_says_the_bound() {
        let a = vec![
            judged(65536, 512, Decision::Fine, [0.95, 1.04]),
            judged(65536, 4096, Decision::Fine, [0.93, 1.05]),
        ];
        let (unit, confidence, s) = verdict(&a);
        assert_eq!((unit, confidence), (None, Confidence::NoDifference));
        assert_eq!(
            s,
            "misalignment made no measurable difference on this device: no penalty of 10 % or more at any offset (95 % confidence, all offsets together)"
        );
    }

    #[test]
    fn an_interval_that_allows_the_penalty_is_inconclusive_and_says_why() {
        let a = vec![
            judged(65536, 512, Decision::Fine, [0.95, 1.04]),
            judged(65536, 4096, Decision::Open, [0.74, 1.2]),
            judged(4096, 512, Decision::Open, [0.8, 1.1]),
        ];
        let (unit, confidence, s) = verdict(&a);
        assert_eq!((unit, confidence), (None, Confidence::Inconclusive));
        assert_eq!(
            s,
            "inconclusive: a penalty of 10 % or more was ruled out at 1 of 3 offsets (95 % confidence), not at 64 KiB randwrite at 4 KiB, 4 KiB randwrite at 512 B (penalties up to 26 % remain possible); why: randwrite rounds varied by ±8 % against each other, so with 8 rounds a penalty below 26 % cannot be told from none; a longer --max-time or --runtime, or a quieter machine, would settle it"
        );
    }

    #[test]
    fn a_small_slower_offset_without_a_unit_is_not_no_difference() {
        let a = vec![
            judged(65536, 512, Decision::Slower, [0.95, 0.99]),
            judged(65536, 4096, Decision::Fine, [0.95, 1.04]),
        ];
        let (_, confidence, s) = verdict(&a);
        assert_eq!(confidence, Confidence::Inconclusive);
        assert!(
            s.contains("1 of them were slower, but no single unit explains that"),
            "{s}"
        );
    }

    #[test]
    fn without_intervals_the_sentence_says_so() {
        let a = vec![judged(
            65536,
            512,
            Decision::Open,
            [f64::NEG_INFINITY.exp(), f64::INFINITY],
        )];
        let (_, confidence, s) = verdict(&a);
        assert_eq!(confidence, Confidence::Inconclusive);
        assert!(s.contains("(penalties up to 100 % remain possible)"), "{s}");
    }
}
