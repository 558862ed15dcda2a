//! The adaptive loop: rounds until every contrast is decided, the unit is
//! settled, the plan's most rounds are reached or the time budget
//! (`--max-time`) is spent. A decided contrast keeps its decision and
//! stops measuring. The loop is independent of the engine, so simulated
//! rounds run through exactly what a probe runs.

use super::analyse;
use super::grid::{Cell, Plan};
use super::run::{CellSamples, Key};
use super::sequential::{self, Assessment, Contrast, Decision};

/// Something that runs rounds: the engine, or a simulation.
pub trait Rounds {
    /// Run `keys` once in round `round`; false when interrupted.
    fn round(&mut self, round: u32, keys: &[Key]) -> Result<bool, String>;
    /// Everything measured so far.
    fn cells(&self) -> &[CellSamples];
    /// Time spent so far, in seconds.
    fn elapsed_s(&self) -> f64;
}

/// What the loop left.
pub struct Outcome {
    pub assessed: Vec<Assessment>,
    pub rounds_run: u32,
    pub zoomed: bool,
    pub partial: bool,
    /// The time budget ran out before every comparison was decided.
    pub out_of_time: bool,
}

/// Each contrast keeps its first decision: it stopped measuring then.
fn keep_decided(frozen: &mut [Option<Assessment>], now: &mut [Assessment]) {
    for (slot, a) in frozen.iter_mut().zip(now.iter_mut()) {
        match slot {
            Some(f) => *a = f.clone(),
            None if a.decision != Decision::Open => *slot = Some(a.clone()),
            None => {}
        }
    }
}

fn keys(cells: &[Cell], targets: usize) -> Vec<Key> {
    (0..targets)
        .flat_map(|target| cells.iter().map(move |&cell| Key { target, cell }))
        .collect()
}

/// While the fit sees a penalty but cannot yet name its unit strongly,
/// every offset comparison goes on, decided or not: a 3 % penalty is
/// decided "fine" against a 10 % min_effect long before its unit is
/// bracketed, and a pattern the fit leaves out must be shown to pay much
/// less than the others before the verdict says they alone pay
/// (`analyse::settled`).
fn unsettled(cells: &[CellSamples], assessed: &[Assessment]) -> Vec<Key> {
    let Some(f) = analyse::fit(cells, assessed) else {
        return Vec::new();
    };
    if f.best().unit_bytes.is_none() {
        return Vec::new();
    }
    assessed
        .iter()
        .filter(|a| a.contrast.kind == sequential::ContrastKind::Offset)
        .flat_map(|a| [a.contrast.subject, a.contrast.reference])
        .collect()
}

/// Run the plan's rounds on `targets` targets.
pub fn drive(plan: &Plan, targets: usize, r: &mut dyn Rounds) -> Result<Outcome, String> {
    let params = sequential::Params::of(plan, targets);
    let mut contrasts = sequential::contrasts(&plan.cells, targets);
    let mut frozen = vec![None; contrasts.len()];
    let mut assessed = Vec::new();
    let mut planned = keys(&plan.cells, targets);
    let mut active = planned.clone();
    let (mut round, mut zoomed, mut partial, mut out_of_time) = (0, false, false, false);
    while !active.is_empty() {
        if round > 0
            && plan
                .max_time
                .is_some_and(|t| r.elapsed_s() >= t.as_secs_f64())
        {
            out_of_time = true;
            break;
        }
        let done = r.round(round, &active)?;
        round += 1;
        assessed = sequential::assess(&contrasts, r.cells(), &params);
        keep_decided(&mut frozen, &mut assessed);
        if !done {
            partial = true;
            break;
        }
        if !zoomed
            && !plan.zoom.is_empty()
            && (sequential::wants_zoom(plan, &assessed)
                || (round >= params.min_rounds && analyse::beyond_ladder(r.cells(), &assessed)))
        {
            zoomed = true;
            let all: Vec<Cell> = plan.all_cells().copied().collect();
            planned = keys(&all, targets);
            let before: Vec<(Contrast, Option<Assessment>)> =
                contrasts.iter().copied().zip(frozen).collect();
            contrasts = sequential::contrasts(&all, targets);
            frozen = contrasts
                .iter()
                .map(|c| before.iter().find(|b| b.0 == *c).and_then(|b| b.1.clone()))
                .collect();
            assessed = sequential::assess(&contrasts, r.cells(), &params);
            keep_decided(&mut frozen, &mut assessed);
        }
        // Once the unit is bracketed, the comparisons still open cannot
        // change the verdict: they are reported as undecided.
        active = if round >= params.min_rounds && analyse::settled(r.cells(), &assessed) {
            Vec::new()
        } else {
            let mut v =
                sequential::still_needed(&planned, &contrasts, &assessed, round, plan.rounds);
            if round < plan.rounds {
                v.extend(unsettled(r.cells(), &assessed));
                v.sort_unstable();
                v.dedup();
            }
            v
        };
    }
    Ok(Outcome {
        assessed,
        rounds_run: round,
        zoomed,
        partial,
        out_of_time,
    })
}
