//! The adaptive loop: rounds until every contrast is decided, the unit is
//! settled, the plan's most rounds are reached or the time budget
//! (`--max-time`) is spent. A decided contrast keeps its decision and
//! stops measuring. After every round the noise is measured again
//! (`noise`): rounds of a high-noise period are set aside and do not
//! count, the window of the next round is chosen (`pacing`), and once the
//! fit or the curve points at a unit of 8 KiB or more the rounds focus on
//! the cells that can see it (`focus`). The loop is independent of the
//! engine, so simulated rounds run through exactly what a probe runs.
//!
//! [`drive`] reads as its steps, each a method of [`Run`]: `budget` (may
//! the round start), `measure` (run it, judge every contrast), `focus`
//! or `zoom` (which contrasts are judged), `stop` or `next` (the cells of
//! the next round), `pace` (its window).

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

/// Run the plan's rounds on `targets` targets: each round within the
/// budget, measured and judged, then the focus or the zoom, the stop
/// rule or the cells of the next round, and its pace.
pub fn drive(plan: &Grid, targets: usize, r: &mut dyn Rounds) -> Result<Outcome, String> {
    let mut run = Run::new(plan, targets);
    while !run.active.is_empty() {
        let window = run.pacing.window().unwrap_or(plan.runtime);
        if !run.budget(r, window) {
            run.out_of_time = true;
            break;
        }
        if !run.measure(r, window)? {
            run.partial = true;
            break;
        }
        let aim = run.focus(r);
        if aim.is_none() {
            run.zoom(r);
        }
        run.active = if run.stop(r) {
            Vec::new()
        } else {
            run.next(r, aim.as_ref())
        };
        run.pace(r, window);
    }
    Ok(run.finish())
}

/// One adaptive run: what the loop carries from round to round.
struct Run<'p> {
    plan: &'p Grid,
    targets: usize,
    params: Params,
    judged: Judged,
    /// Every contrast as judged after the last round.
    assessed: Vec<Assessment>,
    /// The cells of the plan (all of them once zoomed).
    planned: Vec<Key>,
    /// The cells the next round runs; none: the run is over.
    active: Vec<Key>,
    noise: NoiseModel,
    pacing: Pacing,
    round: u32,
    zoomed: bool,
    partial: bool,
    out_of_time: bool,
}

impl<'p> Run<'p> {
    fn new(plan: &'p Grid, targets: usize) -> Self {
        let contrasts = contrasts(&plan.cells, targets);
        let planned = keys(&plan.cells, targets);
        Run {
            plan,
            targets,
            params: Params::of(plan, targets),
            judged: Judged {
                frozen: vec![None; contrasts.len()],
                contrasts,
            },
            assessed: Vec::new(),
            active: planned.clone(),
            planned,
            noise: NoiseModel::default(),
            pacing: Pacing::start(plan),
            round: 0,
            zoomed: false,
            partial: false,
            out_of_time: false,
        }
    }

    /// What the rounds so far say.
    fn evidence<'a>(&'a self, r: &'a dyn Rounds) -> Evidence<'a> {
        Evidence {
            samples: r.cells(),
            assessed: &self.assessed,
            noise: &self.noise,
        }
    }

    /// The budget: the first round always runs, a later one only if it
    /// is expected to end within `--max-time`.
    fn budget(&self, r: &dyn Rounds, window: Duration) -> bool {
        self.round == 0 || in_budget(self.plan, r, self.active.len(), window)
    }

    /// One round of the active cells, then the noise measured again and
    /// every contrast judged; false when the round was interrupted.
    fn measure(&mut self, r: &mut dyn Rounds, window: Duration) -> Result<bool, String> {
        let done = r.round(self.round, &self.active, window)?;
        self.round += 1;
        let reference_s = self.plan.runtime.as_secs_f64();
        self.noise = noise_model(r.cells(), &self.judged.contrasts, reference_s);
        self.assessed = self.judged.assess(r.cells(), &self.params, &self.noise);
        Ok(done)
    }

    /// The focus: once the rounds point at a unit (or search for one),
    /// its focus row's contrasts are judged too. The aim, if any.
    fn focus(&mut self, r: &dyn Rounds) -> Option<Aim> {
        let aim = aim(self.plan, self.targets, &self.evidence(r))?;
        self.pacing.focus_on(self.round, aim.unit, aim.reason);
        let row: Vec<Cell> = focus::keys(self.plan, &[], aim.unit)
            .iter()
            .map(|k| k.cell)
            .collect();
        let new: Vec<Contrast> = focus_contrasts(&row, 1)
            .into_iter()
            .filter(|c| !self.judged.contrasts.contains(c))
            .collect();
        if !new.is_empty() {
            let all = self.judged.contrasts.iter().copied().chain(new).collect();
            self.judge(r, all);
        }
        Some(aim)
    }

    /// The zoom, once: the plan's finer offsets join when the ladder
    /// asks for them or has said all it can.
    fn zoom(&mut self, r: &dyn Rounds) {
        let wanted = !self.zoomed
            && !self.plan.zoom.is_empty()
            && (wants_zoom(self.plan, &self.assessed)
                || (self.round >= self.params.min_rounds
                    && settle::beyond_ladder(&self.evidence(r))));
        if !wanted {
            return;
        }
        self.zoomed = true;
        let all: Vec<Cell> = self.plan.all_cells().copied().collect();
        self.planned = keys(&all, self.targets);
        let mut contrasts = contrasts(&all, self.targets);
        // Focus contrasts judged so far stay judged.
        contrasts.extend(
            self.judged
                .contrasts
                .iter()
                .filter(|c| !contrasts.contains(c))
                .copied()
                .collect::<Vec<_>>(),
        );
        self.judge(r, contrasts);
    }

    /// Judge `contrasts` from now on, on what was measured.
    fn judge(&mut self, r: &dyn Rounds, contrasts: Vec<Contrast>) {
        self.judged.replace(contrasts);
        self.assessed = self.judged.assess(r.cells(), &self.params, &self.noise);
    }

    /// The stop rule: the most rounds are run (rounds set aside do not
    /// count, and at most as many again are run), or the unit is
    /// bracketed, so the comparisons still open cannot change the
    /// verdict: they are reported as undecided.
    fn stop(&self, r: &dyn Rounds) -> bool {
        let (plan, useful) = (self.plan, self.noise.kept());
        let over = useful >= plan.rounds || self.round >= 2 * plan.rounds;
        over || (useful >= self.params.min_rounds
            && settle::settled(&self.evidence(r), &self.params))
    }

    /// The cells the next round runs.
    fn next(&self, r: &dyn Rounds, aim: Option<&Aim>) -> Vec<Key> {
        let (plan, e) = (self.plan, self.evidence(r));
        let useful = self.noise.kept();
        let open = still_needed(
            &self.planned,
            &self.judged.contrasts,
            &self.assessed,
            useful,
            plan.rounds,
        );
        let named = e.fit().is_some_and(|f| f.best().unit_bytes.is_some());
        let mut v = match aim {
            // Only the cells that can see the unit, and the block-size
            // curve up to it, of the patterns that pay there: the
            // comparisons still open elsewhere (4 KiB offsets for an
            // 8 KiB unit, reads that pay nothing) cannot change a
            // bracketed verdict, and are counted as undecided if it
            // comes.
            Some(a) if a.reason == FocusReason::Unit => {
                let measured = focus::patterns(&e, a.unit, &self.params);
                [
                    focus::keys(plan, &self.planned, a.unit),
                    focus::curve_keys(&self.assessed, a.unit, plan.rounds, plan.min_effect),
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
            Some(a) => [open, focus::keys(plan, &self.planned, a.unit)].concat(),
            None if named || settle::pursue(&e, plan.min_effect) => [open, looking(&e)].concat(),
            None => open,
        };
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The pace: the window of the next rounds. It moves once the model
    /// rests on a few rounds kept, and only under the auto preset
    /// (`--runtime` says so): a fixed preset measures at the windows it
    /// names.
    fn pace(&mut self, r: &dyn Rounds, window: Duration) {
        let (plan, useful) = (self.plan, self.noise.kept());
        let paced = plan.preset == crate::probe::measure::Preset::Auto;
        if !paced || self.active.is_empty() || useful <= self.params.min_rounds {
            return;
        }
        let o = overhead_s(r);
        let left_s = match plan.max_time {
            Some(t) => t.as_secs_f64() - r.elapsed_s(),
            None => {
                let rounds = plan.rounds.saturating_sub(useful);
                f64::from(rounds) * self.active.len() as f64 * (window.as_secs_f64() + o)
            }
        };
        let now = pacing::Now {
            plan,
            noise: &self.noise,
            current: window,
            overhead_s: o,
            cells: self.active.len(),
            left_s,
            alpha: self.params.per_interval_alpha(),
        };
        if let Some((w, why)) = pacing::next(&now) {
            self.pacing.windows.push(pacing::Step {
                from_round: self.round,
                window_s: w,
                why,
            });
        }
    }

    /// What the run left.
    fn finish(mut self) -> Outcome {
        self.pacing.finish(&self.noise);
        Outcome {
            assessed: self.assessed,
            noise: self.noise,
            rounds_run: self.round,
            zoomed: self.zoomed,
            partial: self.partial,
            out_of_time: self.out_of_time,
            pacing: self.pacing,
        }
    }
}
