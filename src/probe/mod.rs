//! `diskalign probe`: measure whether misalignment hurts a device.
//!
//! Target and safety checks ([`target`], [`safety`]) → grid plan ([`grid`])
//! → engine ([`engine`], driven by [`run`]) → samples → statistics
//! ([`stats`]) → inference ([`analyse`]) → what a run produced
//! ([`outcome`]), shared with the exporters. [`fio`] writes the same grid as a fio job file.

mod adaptive;
mod analyse;
mod declared;
mod document;
mod engine;
mod env;
mod figures;
mod filled;
mod fio;
mod fio_results;
mod focus;
mod grid;
mod noise;
mod outcome;
mod pacing;
mod results;
mod run;
mod safety;
mod sequential;
mod settle;
mod spread;
mod stats;
mod target;
mod unitfit;
mod verdicts;

pub use document::{axes, ProbeDoc, Producer};
pub use engine::{by_name, EngineKind, Pattern, ENGINES};
pub use env::Environment;
pub use fio_results::{FioDoc, NO_REPLICATES};
pub use grid::{budget, lay_out, Cell, Constraints, DioRule, Grid, GridRequest, Preset};
pub use outcome::{ProbeRun, ProbedTarget, TargetInfo};
pub use pacing::secs;
pub use results::{
    CellReport, Confidence, ContrastReport, Estimate, Inference, Noise, Penalty, Relative,
};
pub use sequential::{contrasts, resolvable, ContrastKind, Decision};
pub use stats::{geo_mean_ci, holm, t_quantile, welch_log};

use crate::topology::Sysfs;
use outcome::EngineInfo;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

pub struct ProbeOptions {
    /// One target, or several probed together (cells of all shuffled
    /// together in every round, and each compared with the first's).
    pub targets: Vec<PathBuf>,
    pub grid: GridRequest,
    /// The engine asked for; None: the first in `engine::ENGINES` that starts.
    pub engine: Option<EngineKind>,
    pub destructive: bool,
    pub force: bool,
    pub scratch_size: u64,
    pub sysfs: Sysfs,
}

fn access<'a>(
    o: &'a ProbeOptions,
    stop: &'a AtomicBool,
    on_fill: &'a dyn Fn(u64, u64),
) -> target::Access<'a> {
    target::Access {
        write: o.grid.write,
        destructive: o.destructive,
        force: o.force,
        buffered: o.grid.buffered,
        scratch_size: o.scratch_size,
        sysfs: &o.sysfs,
        stop,
        on_fill,
    }
}

/// The constraints every target meets: the coarsest O_DIRECT alignment
/// and block sizes, the smallest size. One grid runs on all.
fn common(ts: &[grid::Constraints]) -> grid::Constraints {
    let mut c = ts[0].clone();
    for t in &ts[1..] {
        c.logical_block_size = c.logical_block_size.max(t.logical_block_size);
        c.physical_block_size = c.physical_block_size.max(t.physical_block_size);
        c.size_bytes = c.size_bytes.min(t.size_bytes);
        if t.dio_offset_align > c.dio_offset_align {
            c.dio_offset_align = t.dio_offset_align;
            c.dio_rule = t.dio_rule;
        }
    }
    c
}

/// What [`dry_plan`] gives: the plan, each target's file for a job file
/// and the common size; or why the plan cannot be made.
type DryPlan = Result<(Grid, Vec<fio::File>, u64), grid::GridError>;

/// The plan this probe would run, without writing anything (a directory's
/// scratch file is not made). The outer error is a target's, the inner
/// one the plan's.
fn dry_plan(o: &ProbeOptions, stop: &AtomicBool) -> Result<DryPlan, String> {
    let no_fill = |_: u64, _: u64| {};
    let mut a = access(o, stop, &no_fill);
    a.write = false;
    let mut files = Vec::new();
    let mut constraints = Vec::new();
    for path in &o.targets {
        let named = |e: String| format!("{}: {e}", path.display());
        if path.is_dir() {
            constraints.push(target::scratch_constraints(path, &a).map_err(named)?);
            files.push(fio::File {
                path: path.join("diskalign-probe.fio.tmp"),
                create_size: Some(o.scratch_size),
            });
        } else {
            let t = target::open(path, &a).map_err(named)?;
            // The job file would send the random writes a write run is
            // refused (`a.write` is off here: nothing is written).
            if o.grid.write {
                if let Some(why) = t
                    .disk
                    .as_ref()
                    .and_then(|d| safety::zoned_refusal(path, &d.zoned))
                {
                    return Err(named(why));
                }
            }
            constraints.push(t.constraints.clone());
            files.push(fio::File {
                path: path.clone(),
                create_size: None,
            });
        }
    }
    let c = common(&constraints);
    Ok(grid::lay_out(&o.grid, &c).map(|plan| (plan, files, c.size_bytes)))
}

/// The fio job file for the plan this probe would run; nothing is written.
/// With several targets each section names its file.
pub fn emit_fio(o: &ProbeOptions, stop: &AtomicBool) -> Result<String, String> {
    let (plan, files, size) = dry_plan(o, stop)?.map_err(|e| e.to_string())?;
    // The job file names the engine asked for, else the preferred one.
    let kind = o.engine.unwrap_or(engine::ENGINES[0].kind);
    Ok(fio::job_file(&plan, &files, size, kind))
}

/// Progress callbacks, so the library stays free of terminal code.
pub trait Progress {
    /// Filling a scratch file: bytes done of total.
    fn filling(&self, done: u64, total: u64);
    /// The measurements start (before the first I/O), on `targets` targets.
    fn start(&self, plan: &Grid, targets: usize);
    /// Round `round` (from 0) of at most `plan.rounds` starts with `cells`.
    fn round(&self, round: u32, cells: usize);
    /// One cell of the current round is done, at `iops`.
    fn cell_done(&self, cell: &Cell, iops: f64);
    fn finish(&self);
}

/// What the rounds left: the samples, the final judgement of every
/// contrast, and how the run went.
struct Measured {
    cells: Vec<run::CellSamples>,
    assessed: Vec<sequential::Assessment>,
    noise: noise::NoiseModel,
    pacing: pacing::Pacing,
    rounds_run: u32,
    zoomed: bool,
    partial: bool,
    out_of_time: bool,
    engine: EngineKind,
    fallback: Option<String>,
}

/// The engine's rounds, as the adaptive loop asks for them.
struct Engines<'a, 'p> {
    runner: run::Runner<'p>,
    stop: &'a AtomicBool,
    progress: &'a dyn Progress,
    clock: std::time::Instant,
}

impl adaptive::Rounds for Engines<'_, '_> {
    fn round(
        &mut self,
        round: u32,
        keys: &[run::Key],
        window: std::time::Duration,
    ) -> Result<bool, String> {
        self.progress.round(round, keys.len());
        let progress = self.progress;
        self.runner
            .round(round, keys, window, self.stop, &mut |k, iops| {
                progress.cell_done(&k.cell, iops)
            })
            .map_err(|e| e.to_string())
    }

    fn cells(&self) -> &[run::CellSamples] {
        &self.runner.cells
    }

    fn elapsed_s(&self) -> f64 {
        self.clock.elapsed().as_secs_f64()
    }
}

/// Rounds until every contrast is decided, the unit is settled, or the
/// plan's most rounds or time budget are reached ([`adaptive`]).
fn measure(
    ts: &[target::ProbeTarget],
    plan: &Grid,
    o: &ProbeOptions,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<Measured, String> {
    let size = ts
        .iter()
        .map(|t| t.constraints.size_bytes)
        .min()
        .unwrap_or(0);
    let files: Vec<(&std::fs::File, u64)> = ts.iter().map(|t| (&t.file, size)).collect();
    let runner = run::Runner::new(&files, plan, o.engine).map_err(|e| e.to_string())?;
    let mut e = Engines {
        runner,
        stop,
        progress,
        clock: std::time::Instant::now(),
    };
    let out = adaptive::drive(plan, ts.len(), &mut e)?;
    Ok(Measured {
        cells: e.runner.cells,
        assessed: out.assessed,
        noise: out.noise,
        pacing: out.pacing,
        rounds_run: out.rounds_run,
        zoomed: out.zoomed,
        partial: out.partial,
        out_of_time: out.out_of_time,
        engine: e.runner.engine,
        fallback: e.runner.fallback,
    })
}

fn target_info(path: &std::path::Path, t: &target::ProbeTarget) -> TargetInfo {
    TargetInfo {
        path: path.to_path_buf(),
        kind: t.kind,
        size_bytes: t.constraints.size_bytes,
        logical_block_size: t.constraints.logical_block_size,
        physical_block_size: t.constraints.physical_block_size,
        dio_offset_align: t.constraints.dio_offset_align,
        dio_rule: t.constraints.dio_rule,
        node_block_size: t.node_block_size,
    }
}

/// One target's part of the run: its cells, its own contrasts and what
/// they say about its unit.
fn target_report(
    i: usize,
    path: &std::path::Path,
    t: &target::ProbeTarget,
    m: &Measured,
    params: &sequential::Params,
    plan: &Grid,
    o: &ProbeOptions,
) -> ProbedTarget {
    let samples: Vec<run::CellSamples> = m
        .cells
        .iter()
        .filter(|c| c.target == i)
        .map(|c| run::CellSamples {
            target: c.target,
            cell: c.cell,
            rounds: c.rounds.clone(),
            latency: c.latency.clone(),
        })
        .collect();
    let own: Vec<sequential::Assessment> = m
        .assessed
        .iter()
        .filter(|a| {
            a.contrast.kind != sequential::ContrastKind::Target && a.contrast.subject.target == i
        })
        .cloned()
        .collect();
    let environment = env::record(t, o.sysfs.root());
    let e = analyse::Evidence {
        samples: &samples,
        assessed: &own,
        noise: &m.noise,
    };
    let mut inference = analyse::infer(&e, params, m.rounds_run, plan.rounds);
    // What the device declares, next to the unit measured.
    let says = environment.declared.as_ref();
    if let Some(c) = declared::clause(inference.effective_unit_bytes, says) {
        inference.statement.push_str(&c);
    }
    ProbedTarget {
        target: target_info(path, t),
        environment,
        cells: analyse::cells(&samples, &own),
        contrasts: analyse::contrast_reports(&own),
        inference,
    }
}

/// Grid, run and analyse. `stop` set (Ctrl-C) ends the run after the I/Os
/// in flight; the report then holds what was measured, marked partial. A
/// scratch file is removed on every path out of here.
pub fn probe(
    o: &ProbeOptions,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<ProbeRun, String> {
    if o.targets.iter().any(|p| p.is_dir()) {
        // A plan that cannot run (--max-time shorter than a round, …) is
        // refused before a scratch file is written.
        // (A target's own error, and a --size too small for the grid,
        // are reported when it is opened below.)
        if let Ok(Err(e)) = dry_plan(o, stop) {
            if !matches!(e, grid::GridError::TooSmall { .. }) {
                let names = o.targets.iter().map(|p| p.display().to_string());
                return Err(format!("{}: {e}", names.collect::<Vec<_>>().join(", ")));
            }
        }
    }
    let on_fill = |done, total| progress.filling(done, total);
    let a = access(o, stop, &on_fill);
    let mut ts = Vec::new();
    for path in &o.targets {
        ts.push(target::open(path, &a).map_err(|e| format!("{}: {e}", path.display()))?);
    }
    let names = || {
        o.targets
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let c = common(&ts.iter().map(|t| t.constraints.clone()).collect::<Vec<_>>());
    let plan = grid::lay_out(&o.grid, &c).map_err(|e| format!("{}: {e}", names()))?;
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let clock = std::time::Instant::now();
    progress.start(&plan, ts.len());
    let m = measure(&ts, &plan, o, stop, progress);
    progress.finish();
    let m = m.map_err(|e| format!("{}: {e}", names()))?;
    let params = sequential::Params::of(&plan, ts.len());
    let mut reports: Vec<ProbedTarget> = o
        .targets
        .iter()
        .zip(&ts)
        .enumerate()
        .map(|(i, (path, t))| target_report(i, path, t, &m, &params, &plan, o))
        .collect();
    let versus: Vec<sequential::Assessment> = m
        .assessed
        .iter()
        .filter(|a| a.contrast.kind == sequential::ContrastKind::Target)
        .cloned()
        .collect();
    let first = reports[0].clone();
    if reports.len() == 1 {
        reports.clear();
    }
    Ok(ProbeRun {
        target: first.target,
        engine: EngineInfo {
            name: m.engine.into(),
            fallback_reason: m.fallback,
            queue_depth: plan.qd,
            jobs: plan.jobs,
            direct: plan.direct,
            fdatasync: plan.fdatasync,
        },
        environment: first.environment,
        rounds_run: m.rounds_run,
        zoomed: m.zoomed,
        partial: m.partial,
        out_of_time: m.out_of_time,
        pacing: m.pacing,
        elapsed_s: clock.elapsed().as_secs_f64(),
        started_unix,
        plan,
        cells: first.cells,
        contrasts: first.contrasts,
        inference: first.inference,
        targets: reports,
        versus: analyse::contrast_reports(&versus),
    })
}
#[cfg(test)]
mod simulated;
#[cfg(test)]
pub(crate) use document::fixtures;
#[cfg(test)]
pub(crate) use simulated::auto_plan;
