//! The adaptive loop: rounds until every contrast is decided, the unit is
//! settled, the plan's most rounds are reached or the time budget
//! (`--max-time`) is spent. A decided contrast keeps its decision and
//! stops measuring. After every round the noise is measured again
//! (`noise`): rounds of a high-noise period are set aside and do not
//! count, the window of the next round is chosen (`pacing`), and once the
//! fit or the curve points at a unit of 8 KiB or more the rounds focus on
//! the cells that can see it (`focus`). The loop is independent of the
//! engine, so simulated rounds run through exactly what a probe runs.

use super::focus;
use super::pacing::{self, FocusReason, Pacing};
use super::settle;
use crate::probe::infer::{
    assess, contrasts, curve, focus_contrasts, noise_model, still_needed, wants_zoom, Assessment,
    Contrast, ContrastKind, Decision, Evidence, NoiseModel, Params,
};
use crate::probe::measure::{Cell, CellSamples, Grid, Key, FOCUS_SEARCH};
use std::time::Duration;

/// Something that runs rounds: the engine, or a simulation.
pub trait Rounds {
    /// Run `keys` once in round `round`, each window at least `window`
    /// long; false when interrupted.
    fn round(&mut self, round: u32, keys: &[Key], window: Duration) -> Result<bool, String>;
    /// Everything measured so far.
    fn cells(&self) -> &[CellSamples];
    /// Time spent so far, in seconds.
    fn elapsed_s(&self) -> f64;
}

/// What the loop left.
pub struct Outcome {
    pub assessed: Vec<Assessment>,
    /// The noise as measured over the whole run: the weights of the
    /// rounds, and those set aside.
    pub noise: NoiseModel,
    pub rounds_run: u32,
    pub zoomed: bool,
    pub partial: bool,
    /// The time budget ran out before every comparison was decided.
    pub out_of_time: bool,
    /// The windows chosen, the focus, the rounds set aside, and why.
    pub pacing: Pacing,
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

/// The contrasts being judged, and each one's first decision.
struct Judged {
    contrasts: Vec<Contrast>,
    frozen: Vec<Option<Assessment>>,
}

impl Judged {
    /// Judge `contrasts` from now on, keeping the decisions already made.
    fn replace(&mut self, contrasts: Vec<Contrast>) {
        let before: Vec<(Contrast, Option<Assessment>)> = self
            .contrasts
            .iter()
            .copied()
            .zip(std::mem::take(&mut self.frozen))
            .collect();
        self.frozen = contrasts
            .iter()
            .map(|c| before.iter().find(|b| b.0 == *c).and_then(|b| b.1.clone()))
            .collect();
        self.contrasts = contrasts;
    }

    /// Every contrast judged on what was measured, first decisions kept.
    fn assess(
        &mut self,
        samples: &[CellSamples],
        params: &Params,
        noise: &NoiseModel,
    ) -> Vec<Assessment> {
        let mut a = assess(&self.contrasts, samples, params, noise);
        keep_decided(&mut self.frozen, &mut a);
        a
    }
}

/// While the fit sees a penalty but cannot yet name its unit strongly,
/// or a small penalty is not yet ruled out at any candidate unit
/// (`settle::pursue`), every offset comparison goes on, decided or not: a
/// 3 % penalty is decided "fine" against a 10 % min_effect long before
/// its unit is bracketed, and a pattern the fit leaves out must be
/// resolved before the verdict says what it pays (`settle::settled`).
/// (With a focus, `focus::keys` says which cells instead.)
fn looking(e: &Evidence) -> Vec<Key> {
    e.assessed
        .iter()
        .filter(|a| a.contrast.kind == ContrastKind::Offset)
        .flat_map(|a| [a.contrast.subject, a.contrast.reference])
        .collect()
}

/// What the next rounds aim at: a unit the fit or the curve points at
/// (8 KiB to 64 KiB), or, while no unit is named and a small penalty is
/// not ruled out, the search for one in the ladder's blocks (64 KiB, with
/// the aligned offsets of its focus row as more references: the ladder's
/// one reference cell otherwise carries every row comparison alone).
fn aim(plan: &Grid, targets: usize, e: &Evidence) -> Option<Aim> {
    if targets != 1 || plan.focus.is_empty() {
        return None;
    }
    let fit = e.fit();
    if let Some(u) = focus::unit(fit.as_ref(), &curve(e.assessed)) {
        return Some(Aim {
            unit: u,
            reason: FocusReason::Unit,
        });
    }
    let named = fit.is_some_and(|f| f.best().unit_bytes.is_some());
    (!named && settle::pursue(e, plan.min_effect)).then_some(Aim {
        unit: FOCUS_SEARCH,
        reason: FocusReason::Search,
    })
}

struct Aim {
    unit: u64,
    reason: FocusReason,
}

/// Seconds a cell took beyond its window, on average so far.
fn overhead_s(r: &dyn Rounds) -> f64 {
    let (n, windows) = r
        .cells()
        .iter()
        .flat_map(|c| &c.rounds)
        .fold((0usize, 0.0), |(n, s), x| (n + 1, s + x.window.length_s));
    if n == 0 {
        return 0.0;
    }
    ((r.elapsed_s() - windows) / n as f64).max(0.0)
}

/// Whether a round of `cells` cells with windows of `window` may start:
/// it is expected to end within `--max-time` (each cell as long as its
/// window and what cells took beyond theirs so far, with a tenth more:
/// windows grow on slow I/O, broken ones are measured again).
fn in_budget(plan: &Grid, r: &dyn Rounds, cells: usize, window: Duration) -> bool {
    plan.max_time.is_none_or(|t| {
        let round = 1.1 * cells as f64 * (window.as_secs_f64() + overhead_s(r));
        r.elapsed_s() + round <= t.as_secs_f64()
    })
}

/// Run the plan's rounds on `targets` targets.
pub fn drive(plan: &Grid, targets: usize, r: &mut dyn Rounds) -> Result<Outcome, String> {
    let params = Params::of(plan, targets);
    let mut judged = Judged {
        contrasts: contrasts(&plan.cells, targets),
        frozen: Vec::new(),
    };
    judged.frozen = vec![None; judged.contrasts.len()];
    let mut assessed = Vec::new();
    let mut planned = keys(&plan.cells, targets);
    let mut active = planned.clone();
    let mut noise = NoiseModel::default();
    let mut pacing = Pacing::start(plan);
    let reference_s = plan.runtime.as_secs_f64();
    let (mut round, mut zoomed, mut partial, mut out_of_time) = (0, false, false, false);
    while !active.is_empty() {
        let window = pacing.window().unwrap_or(plan.runtime);
        if round > 0 && !in_budget(plan, r, active.len(), window) {
            out_of_time = true;
            break;
        }
        let done = r.round(round, &active, window)?;
        round += 1;
        noise = noise_model(r.cells(), &judged.contrasts, reference_s);
        assessed = judged.assess(r.cells(), &params, &noise);
        if !done {
            partial = true;
            break;
        }
        let e = Evidence {
            samples: r.cells(),
            assessed: &assessed,
            noise: &noise,
        };
        let aim = aim(plan, targets, &e);
        if let Some(a) = &aim {
            let u = a.unit;
            pacing.focus_on(round, u, a.reason);
            let row: Vec<Cell> = focus::keys(plan, &[], u).iter().map(|k| k.cell).collect();
            let new: Vec<Contrast> = focus_contrasts(&row, 1)
                .into_iter()
                .filter(|c| !judged.contrasts.contains(c))
                .collect();
            if !new.is_empty() {
                let all = judged.contrasts.iter().copied().chain(new).collect();
                judged.replace(all);
                assessed = judged.assess(r.cells(), &params, &noise);
            }
        } else if !zoomed
            && !plan.zoom.is_empty()
            && (wants_zoom(plan, &assessed)
                || (round >= params.min_rounds && settle::beyond_ladder(&e)))
        {
            zoomed = true;
            let all: Vec<Cell> = plan.all_cells().copied().collect();
            planned = keys(&all, targets);
            let mut contrasts = contrasts(&all, targets);
            // Focus contrasts judged so far stay judged.
            contrasts.extend(
                judged
                    .contrasts
                    .iter()
                    .filter(|c| !contrasts.contains(c))
                    .copied()
                    .collect::<Vec<_>>(),
            );
            judged.replace(contrasts);
            assessed = judged.assess(r.cells(), &params, &noise);
        }
        let e = Evidence {
            samples: r.cells(),
            assessed: &assessed,
            noise: &noise,
        };
        let useful = noise.kept();
        // Once the unit is bracketed, the comparisons still open cannot
        // change the verdict: they are reported as undecided. Rounds set
        // aside do not count toward the most rounds (at most as many
        // again are run).
        let over = useful >= plan.rounds || round >= 2 * plan.rounds;
        active = if over || (useful >= params.min_rounds && settle::settled(&e, &params)) {
            Vec::new()
        } else {
            let open = still_needed(&planned, &judged.contrasts, &assessed, useful, plan.rounds);
            let named = e.fit().is_some_and(|f| f.best().unit_bytes.is_some());
            let mut v = match &aim {
                // Only the cells that can see the unit, and the block-size
                // curve up to it, of the patterns that pay there: the
                // comparisons still open elsewhere (4 KiB offsets for an
                // 8 KiB unit, reads that pay nothing) cannot change a
                // bracketed verdict, and are counted as undecided if it
                // comes.
                Some(a) if a.reason == FocusReason::Unit => {
                    let measured = focus::patterns(&e, a.unit, &params);
                    [
                        focus::keys(plan, &planned, a.unit),
                        focus::curve_keys(&assessed, a.unit, plan.rounds, plan.min_effect),
                    ]
                    .concat()
                    .into_iter()
                    .filter(|k| {
                        measured
                            .as_ref()
                            .is_none_or(|m| m.contains(&k.cell.pattern))
                    })
                    .collect()
                }
                Some(a) => [open, focus::keys(plan, &planned, a.unit)].concat(),
                None if named || settle::pursue(&e, plan.min_effect) => {
                    [open, looking(&e)].concat()
                }
                None => open,
            };
            v.sort_unstable();
            v.dedup();
            v
        };
        // The window moves once the model rests on a few rounds kept, and
        // only under the auto preset (`--runtime` says so): a fixed
        // preset measures at the windows it names.
        let paced = plan.preset == crate::probe::measure::Preset::Auto;
        if paced && !active.is_empty() && useful > params.min_rounds {
            let o = overhead_s(r);
            let left_s = match plan.max_time {
                Some(t) => t.as_secs_f64() - r.elapsed_s(),
                None => {
                    let rounds = plan.rounds.saturating_sub(useful);
                    f64::from(rounds) * active.len() as f64 * (window.as_secs_f64() + o)
                }
            };
            let now = pacing::Now {
                plan,
                noise: &noise,
                current: window,
                overhead_s: o,
                cells: active.len(),
                left_s,
                alpha: params.per_interval_alpha(),
            };
            if let Some((w, why)) = pacing::next(&now) {
                pacing.windows.push(pacing::Step {
                    from_round: round,
                    window_s: w,
                    why,
                });
            }
        }
    }
    pacing.finish(&noise);
    Ok(Outcome {
        assessed,
        noise,
        rounds_run: round,
        zoomed,
        partial,
        out_of_time,
        pacing,
    })
}
