//! Asking the cells that can tell: once the fit or the block-size curve
//! points at a unit of 8 KiB or more, rounds go to requests at least as
//! large as that unit, and to a row that tells it from its neighbours.
//!
//! A request smaller than the unit covers part of one wherever it starts,
//! so its aligned and misaligned cells cost the same: the 4 KiB row says
//! nothing about an 8 KiB unit. What does: blocks that are whole units.
//! The **focus row** of a unit U is blocks of B = 2U (at most the
//! ladder's 64 KiB) at offset 0, at the odd multiples of U/2 (U/2, 3U/2,
//! …: they cover part of a unit at each end) and at the multiples of U
//! (U, 2U, 3U: whole units). Under U only the odd multiples of U/2 pay;
//! under U/2 nothing in the row pays; under 2U everything but the
//! multiples of 2U does; under anything larger than B everything does. So
//! each candidate predicts its own pattern and the row tells U from all
//! of them, where the ladder tells it from U/2 by one cell (64 KiB
//! blocks at U/2). Blocks of 2U rather than U: a device may treat
//! requests below some size apart (a write buffer for small ones), and
//! the unit shows in large requests. Several offsets of each kind are
//! replicates: each is measured on its own, so their noise averages.

use crate::probe::infer::Curve;
use crate::probe::infer::UnitFit;
use crate::probe::infer::{pattern_penalties, Evidence};
use crate::probe::infer::{Assessment, ContrastKind, Decision, Params};
use crate::probe::measure::Key;
use crate::probe::measure::Pattern;
use crate::probe::measure::{focus_row, large_block, Cell, Grid, FOCUS_UNITS};

/// The fit's best unit is focused on once it beats "no penalty" by this
/// much (natural log, after its BIC price: 10 : 1). Focusing on a
/// wrong unit costs rounds, not a verdict: the fit still weighs every
/// candidate on everything measured.
pub const EVIDENCE: f64 = 2.3;

/// The unit the rounds should focus on: the fit's best candidate when it
/// is one of [`FOCUS_UNITS`] (a lower bound of 64 KiB too: every ladder offset
/// pays, so blocks of 64 KiB at multiples of 64 KiB tell) and beats "no
/// penalty" by [`EVIDENCE`]; else what the block-size curve says, when
/// that is 8 KiB or more and the fit has nothing larger.
pub fn unit(fit: Option<&UnitFit>, curve: &Curve) -> Option<u64> {
    let best = fit
        .filter(|f| f.log_lr_none >= EVIDENCE)
        .and_then(|f| f.best().unit_bytes);
    let at_least = curve.curve.unwrap_or(0);
    match best {
        Some(u) if u >= at_least => FOCUS_UNITS.contains(&u).then_some(u),
        _ => FOCUS_UNITS.contains(&at_least).then_some(at_least),
    }
}

/// The cells a round focused on `unit` runs: the unit's focus row (what
/// of it the plan allows), and every row of `planned` whose blocks are
/// whole units of it and up to the ladder's (the large blocks of the zoom
/// are far noisier, and the focus row tells a unit from larger ones by
/// itself).
pub fn keys(plan: &Grid, planned: &[Key], unit: u64) -> Vec<Key> {
    let sees = |c: &Cell| u64::from(c.block_size) % unit == 0 && !large_block(c.block_size);
    let mut v: Vec<Key> = planned.iter().filter(|k| sees(&k.cell)).copied().collect();
    for p in plan.patterns() {
        v.extend(
            focus_row(p, unit)
                .into_iter()
                .filter(|c| plan.focus.contains(c) || plan.cells.contains(c))
                .map(|cell| Key { target: 0, cell }),
        );
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// The patterns a round focused on `unit` measures, when the fit's best
/// candidate is that unit: those that pay there (the fit names them, or
/// their interval at the unit lies above 0), and any not yet measured at
/// it (the verdict states every pattern's bound). A pattern that shows
/// nothing at the unit cannot make it stronger: on the VM's 64 KiB device
/// whose writes pay 3 %, half of every focused round went to reads that
/// paid nothing. None (every pattern) while the fit names another unit or
/// none.
pub fn patterns(e: &Evidence, unit: u64, p: &Params) -> Option<Vec<Pattern>> {
    let fit = e.fit()?;
    let best = fit.best();
    if best.unit_bytes != Some(unit) || best.lower_bound {
        return None;
    }
    let v: Vec<Pattern> = pattern_penalties(e, unit, &best.patterns, p)
        .into_iter()
        .filter(|x| x.pays || !x.ci_pct[1].is_finite())
        .map(|x| x.pattern)
        .collect();
    (!v.is_empty()).then_some(v)
}

/// The cells of the block-size contrast just below `unit` while it is
/// open: aligned blocks smaller than the unit are read-modify-write at
/// it ("aligned 4 KiB blocks were slower per I/O than 16 KiB ones"), part
/// of the unit's verdict, so a focused round goes on asking the contrast
/// whose reference is the smallest block size of a whole unit until it is
/// decided or has had `max_rounds`, and only while its rounds so far
/// put smaller blocks slower per I/O by at least `min_effect` (without
/// read-modify-write they are as fast or faster: less to move). One
/// contrast per pattern, and only then: asked whenever it was open, the
/// cells slowed the simulated weak devices (simulated/changing.rs), whose
/// ratio wanders about 1, below their bar.
pub fn curve_keys(
    assessed: &[Assessment],
    unit: u64,
    max_rounds: u32,
    min_effect: f64,
) -> Vec<Key> {
    let below = |a: &&Assessment| {
        a.contrast.kind == ContrastKind::BlockSize
            && u64::from(a.contrast.subject.cell.block_size) < unit
            && u64::from(a.contrast.reference.cell.block_size) >= unit
            && a.ratio < 1.0 - min_effect
    };
    assessed
        .iter()
        .filter(below)
        .filter(|a| a.decision == Decision::Open && (a.n as u32) < max_rounds)
        .flat_map(|a| [a.contrast.subject, a.contrast.reference])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::infer::focus_contrasts;
    use crate::probe::measure::focus_cells;
    use crate::probe::measure::Pattern;

    /// Whether an I/O of `c` covers part of a unit.
    fn pays(c: &Cell, unit: u64) -> bool {
        c.offset % unit != 0 || (c.offset + u64::from(c.block_size)) % unit != 0
    }

    #[test]
    fn a_focus_row_tells_its_unit_from_every_other() {
        for u in FOCUS_UNITS {
            let cells = focus_row(Pattern::Randwrite, u);
            assert_eq!(cells.len(), 8, "{u}");
            assert!(
                cells.iter().all(|c| u64::from(c.block_size) % u == 0),
                "{u}"
            );
            let paying = |v: u64| -> Vec<bool> { cells.iter().map(|c| pays(c, v)).collect() };
            // Under its own unit: the four odd multiples of U/2 pay.
            assert_eq!(paying(u).iter().filter(|&&p| p).count(), 4, "{u}");
            // Every other candidate predicts another pattern.
            for other in [u / 4, u / 2, 2 * u, 4 * u, 16 * u] {
                assert_ne!(paying(other), paying(u), "{u} under {other}");
            }
        }
    }

    #[test]
    fn plan_cells_leave_out_what_the_plan_has() {
        let plan = super::super::simulated::auto_plan(None);
        let focus = focus_cells(&plan.cells, 512, plan.unit);
        assert!(focus.iter().all(|c| !plan.cells.contains(c)));
        // The ladder's 64 KiB blocks at 0 and 32 KiB are the plan's own.
        let at = |bs: u32, o: u64| focus.iter().any(|c| c.block_size == bs && c.offset == o);
        assert!(!at(65536, 32768) && at(65536, 98304) && at(65536, 65536));
        // An 8 KiB unit's row: blocks of 16 KiB.
        assert!(!at(16384, 0) && at(16384, 4096) && at(16384, 12288) && at(16384, 8192));
        assert_eq!(
            focus_contrasts(&focus, 1).len(),
            focus.iter().filter(|c| c.offset != 0).count()
        );
    }

    fn block_size(subject: u32, reference: u32, decision: Decision, n: usize) -> Assessment {
        let key = |bs| Key {
            target: 0,
            cell: Cell {
                block_size: bs,
                offset: 0,
                pattern: Pattern::Randwrite,
            },
        };
        Assessment {
            contrast: crate::probe::infer::Contrast {
                kind: ContrastKind::BlockSize,
                subject: key(subject),
                reference: key(reference),
            },
            n,
            outliers: 0,
            ratio: 0.5,
            ci: [0.25, 2.0],
            p: 1.0,
            p_adjusted: 1.0,
            decision,
        }
    }

    #[test]
    fn a_focused_round_asks_the_open_contrast_just_below_its_unit() {
        let assessed = [
            block_size(512, 4096, Decision::Open, 2),
            block_size(4096, 16384, Decision::Open, 2),
            block_size(16384, 65536, Decision::Open, 2),
        ];
        let bs = |v: Vec<Key>| -> Vec<u32> { v.iter().map(|k| k.cell.block_size).collect() };
        // Under a 16 KiB unit: 4 KiB against 16 KiB only.
        assert_eq!(bs(curve_keys(&assessed, 16384, 16, 0.1)), [4096, 16384]);
        // Under an 8 KiB unit: the same contrast, whose reference is the
        // smallest whole unit.
        assert_eq!(bs(curve_keys(&assessed, 8192, 16, 0.1)), [4096, 16384]);
        // Smaller blocks about as fast per I/O, as without
        // read-modify-write: not asked.
        let faster = [Assessment {
            ratio: 0.95,
            ..block_size(4096, 16384, Decision::Open, 2)
        }];
        assert!(curve_keys(&faster, 16384, 16, 0.1).is_empty());
        // Decided, or out of rounds: no longer asked.
        let decided = [
            block_size(4096, 16384, Decision::Slower, 2),
            block_size(512, 4096, Decision::Open, 16),
        ];
        assert!(curve_keys(&decided, 16384, 16, 0.1).is_empty());
    }
}
