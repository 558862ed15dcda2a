//! `diskalign probe`: measure whether misalignment hurts a device.
//!
//! The probe's one door. Behind it, four folders by job, whose imports
//! run one way (each uses only the folders before it):
//!
//! - `measure/`: the target and its safety, the grid, the engines and
//!   the rounds that time them, the environment, the fio job file;
//! - `infer/`: the statistics, the sequential procedure, the noise, the
//!   unit fit, the verdicts, and what they conclude (`results.rs`);
//! - `steer/`: the adaptive run, round by round (its budget, focus,
//!   zoom, stop rule and pacing);
//! - `document/`: what a run produced, as its saved document holds it,
//!   read back, and fio's results read as one.
//!
//! `serde_figures.rs` sits beside them, below all four: how every
//! folder's types write durations and the figures JSON cannot hold.
//! This file runs them in order: target → grid → rounds → inference →
//! the run's document.

mod document;
mod erase;
mod infer;
mod measure;
mod serde_figures;
mod steer;

/// What a run produced, its saved document read back, and fio's results.
pub use document::{
    axes, FioDoc, ProbeDoc, ProbeRun, ProbedTarget, Producer, TargetInfo, NO_REPLICATES,
};
/// The erase-unit search's answer.
pub use erase::{CandidateReport, EraseUnit, Place, DEFAULT_QD as ERASE_QD};
/// The statistics, the contrasts and what the run concludes.
pub use infer::{
    contrasts, geo_mean_ci, holm, resolvable, t_quantile, welch_log, CellReport, Confidence,
    ContrastKind, ContrastReport, Decision, Estimate, Inference, Noise, Penalty, Relative,
};
/// The grid of cells, the engines and the environment measured in.
pub use measure::{
    budget, by_name, lay_out, Cell, Constraints, DioRule, EngineKind, Environment, Grid,
    GridRequest, Pattern, Preset, ENGINES,
};
/// A duration in seconds as the probe's lines print it.
pub use steer::secs;

use crate::topology::Sysfs;
use document::EngineInfo;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

pub struct ProbeOptions {
    /// One target, or several probed together (cells of all shuffled
    /// together in every round, and each compared with the first's).
    pub targets: Vec<PathBuf>,
    pub grid: GridRequest,
    /// The engine asked for; None: the first in `ENGINES` that starts.
    pub engine: Option<EngineKind>,
    pub destructive: bool,
    pub force: bool,
    pub scratch_size: u64,
    pub sysfs: Sysfs,
    /// `--erase-unit`: the read-only erase-unit search instead of the
    /// grid (`erase`).
    pub erase_unit: bool,
}

fn access<'a>(
    o: &'a ProbeOptions,
    stop: &'a AtomicBool,
    on_fill: &'a dyn Fn(u64, u64),
) -> measure::Access<'a> {
    measure::Access {
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
fn common(ts: &[Constraints]) -> Constraints {
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
type DryPlan = Result<(Grid, Vec<measure::JobFile>, u64), measure::GridError>;

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
            constraints.push(measure::scratch_constraints(path, &a).map_err(named)?);
            files.push(measure::JobFile {
                path: path.join("diskalign-probe.fio.tmp"),
                create_size: Some(o.scratch_size),
            });
        } else {
            let t = measure::open(path, &a).map_err(named)?;
            // The job file would send the random writes a write run is
            // refused (`a.write` is off here: nothing is written).
            if o.grid.write {
                if let Some(why) = t
                    .disk
                    .as_ref()
                    .and_then(|d| measure::zoned_refusal(path, &d.zoned))
                {
                    return Err(named(why));
                }
            }
            constraints.push(t.constraints.clone());
            files.push(measure::JobFile {
                path: path.clone(),
                create_size: None,
            });
        }
    }
    let c = common(&constraints);
    Ok(lay_out(&o.grid, &c).map(|plan| (plan, files, c.size_bytes)))
}

/// The fio job file for the plan this probe would run; nothing is written.
/// With several targets each section names its file.
pub fn emit_fio(o: &ProbeOptions, stop: &AtomicBool) -> Result<String, String> {
    let (plan, files, size) = dry_plan(o, stop)?.map_err(|e| e.to_string())?;
    // The job file names the engine asked for, else the preferred one.
    let kind = o.engine.unwrap_or(ENGINES[0].kind);
    Ok(measure::job_file(&plan, &files, size, kind))
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
    cells: Vec<measure::CellSamples>,
    assessed: Vec<infer::Assessment>,
    noise: infer::NoiseModel,
    pacing: steer::Pacing,
    rounds_run: u32,
    zoomed: bool,
    partial: bool,
    out_of_time: bool,
    engine: EngineKind,
    fallback: Option<String>,
}

/// The engine's rounds, as the adaptive loop asks for them.
struct Engines<'a, 'p> {
    runner: measure::Runner<'p>,
    stop: &'a AtomicBool,
    progress: &'a dyn Progress,
    clock: std::time::Instant,
}

impl steer::Rounds for Engines<'_, '_> {
    fn round(
        &mut self,
        round: u32,
        keys: &[measure::Key],
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

    fn cells(&self) -> &[measure::CellSamples] {
        &self.runner.cells
    }

    fn elapsed_s(&self) -> f64 {
        self.clock.elapsed().as_secs_f64()
    }
}

/// Rounds until every contrast is decided, the unit is settled, or the
/// plan's most rounds or time budget are reached ([`adaptive`]).
fn measure(
    ts: &[measure::ProbeTarget],
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
    let runner = measure::Runner::new(&files, plan, o.engine).map_err(|e| e.to_string())?;
    let mut e = Engines {
        runner,
        stop,
        progress,
        clock: std::time::Instant::now(),
    };
    let out = steer::drive(plan, ts.len(), &mut e)?;
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

fn target_info(path: &std::path::Path, t: &measure::ProbeTarget) -> TargetInfo {
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
    t: &measure::ProbeTarget,
    m: &Measured,
    params: &infer::Params,
    plan: &Grid,
    o: &ProbeOptions,
) -> ProbedTarget {
    let samples: Vec<measure::CellSamples> = m
        .cells
        .iter()
        .filter(|c| c.target == i)
        .map(|c| measure::CellSamples {
            target: c.target,
            cell: c.cell,
            rounds: c.rounds.clone(),
            latency: c.latency.clone(),
        })
        .collect();
    let own: Vec<infer::Assessment> = m
        .assessed
        .iter()
        .filter(|a| {
            a.contrast.kind != infer::ContrastKind::Target && a.contrast.subject.target == i
        })
        .cloned()
        .collect();
    let environment = measure::record(t, o.sysfs.root());
    let e = infer::Evidence {
        samples: &samples,
        assessed: &own,
        noise: &m.noise,
    };
    let mut inference = infer::infer(&e, params, m.rounds_run, plan.rounds);
    // What the device declares, next to the unit measured.
    let says = environment.declared.as_ref();
    if let Some(c) = infer::clause(inference.effective_unit_bytes, says) {
        inference.statement.push_str(&c);
    }
    ProbedTarget {
        target: target_info(path, t),
        environment,
        cells: infer::cells(&samples, &own),
        contrasts: infer::contrast_reports(&own),
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
    if o.erase_unit {
        return erase_run(o, stop, progress);
    }
    if o.targets.iter().any(|p| p.is_dir()) {
        // A plan that cannot run (--max-time shorter than a round, …) is
        // refused before a scratch file is written.
        // (A target's own error, and a --size too small for the grid,
        // are reported when it is opened below.)
        if let Ok(Err(e)) = dry_plan(o, stop) {
            if !matches!(e, measure::GridError::TooSmall { .. }) {
                let names = o.targets.iter().map(|p| p.display().to_string());
                return Err(format!("{}: {e}", names.collect::<Vec<_>>().join(", ")));
            }
        }
    }
    let on_fill = |done, total| progress.filling(done, total);
    let a = access(o, stop, &on_fill);
    let mut ts = Vec::new();
    for path in &o.targets {
        ts.push(measure::open(path, &a).map_err(|e| format!("{}: {e}", path.display()))?);
    }
    let names = || {
        o.targets
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let c = common(&ts.iter().map(|t| t.constraints.clone()).collect::<Vec<_>>());
    let plan = lay_out(&o.grid, &c).map_err(|e| format!("{}: {e}", names()))?;
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let clock = std::time::Instant::now();
    progress.start(&plan, ts.len());
    let m = measure(&ts, &plan, o, stop, progress);
    progress.finish();
    let m = m.map_err(|e| format!("{}: {e}", names()))?;
    let params = infer::Params::of(&plan, ts.len());
    let mut reports: Vec<ProbedTarget> = o
        .targets
        .iter()
        .zip(&ts)
        .enumerate()
        .map(|(i, (path, t))| target_report(i, path, t, &m, &params, &plan, o))
        .collect();
    let versus: Vec<infer::Assessment> = m
        .assessed
        .iter()
        .filter(|a| a.contrast.kind == infer::ContrastKind::Target)
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
        versus: infer::contrast_reports(&versus),
        erase_unit: None,
    })
}
/// `--erase-unit`: the search on one device or file, as a run.
fn erase_run(
    o: &ProbeOptions,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<ProbeRun, String> {
    let [path] = o.targets.as_slice() else {
        return Err("--erase-unit searches one device at a time: give one target".into());
    };
    let named = |e: String| format!("{}: {e}", path.display());
    if path.is_dir() {
        return Err(named("--erase-unit reads a device's own offsets: give the device (/dev/mmcblk0, /dev/sdb), not a directory".into()));
    }
    let no_fill = |_: u64, _: u64| {};
    let mut a = access(o, stop, &no_fill);
    a.write = false;
    let t = measure::open(path, &a).map_err(named)?;
    let r = erase::Request {
        read: o.grid.block_sizes.as_ref().and_then(|b| b.first().copied()),
        qd: o.grid.qd,
        rounds: o.grid.rounds,
        runtime: o.grid.runtime,
        warmup: o.grid.warmup,
        min_effect: o.grid.min_effect.unwrap_or(measure::DEFAULT_MIN_EFFECT),
        max_time: o.grid.max_time,
        seed: o.grid.seed,
        engine: o.engine,
    };
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let s = erase::search(&t, &r, stop, progress).map_err(named)?;
    let environment = measure::record(&t, o.sysfs.root());
    let e = &s.found;
    let inference = Inference {
        effective_unit_bytes: None,
        confidence: e.confidence,
        statement: e.statement.clone(),
        summary: e.summary.clone(),
        penalties: Vec::new(),
        noise: Vec::new(),
        advice: None,
        undecided: e
            .candidates
            .iter()
            .filter(|c| c.decision == Decision::Open)
            .count(),
        method: std::borrow::Cow::Borrowed(erase::METHOD),
        unit_fit: None,
        patterns: Vec::new(),
    };
    Ok(ProbeRun {
        target: target_info(path, &t),
        engine: EngineInfo {
            name: s.engine.into(),
            fallback_reason: s.fallback,
            queue_depth: s.plan.qd,
            jobs: s.plan.jobs,
            direct: s.plan.direct,
            fdatasync: false,
        },
        environment,
        rounds_run: s.rounds_run,
        zoomed: false,
        partial: s.partial,
        out_of_time: s.out_of_time,
        pacing: Default::default(),
        elapsed_s: s.elapsed_s,
        started_unix,
        cells: infer::cells(&s.cells, &[]),
        contrasts: Vec::new(),
        inference,
        targets: Vec::new(),
        versus: Vec::new(),
        erase_unit: Some(s.found),
        plan: s.plan,
    })
}

#[cfg(test)]
pub(crate) use document::fixtures;
#[cfg(test)]
pub(crate) use steer::auto_plan;
