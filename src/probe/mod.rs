//! `diskalign probe`: measure whether misalignment hurts a device.
//!
//! Target and safety checks ([`target`], [`safety`]) → grid plan ([`grid`])
//! → engine ([`engine`], driven by [`run`]) → samples → statistics
//! ([`stats`]) → inference ([`analyse`]) → the report ([`report`]), shared
//! with the exporters. [`fio`] writes the same grid as a fio job file.

pub mod analyse;
pub mod engine;
pub mod env;
pub mod fio;
pub mod grid;
pub mod report;
pub mod run;
pub mod safety;
pub mod sequential;
pub mod stats;
pub mod target;

use crate::topology::Sysfs;
use engine::EngineKind;
use grid::{Cell, GridRequest, Plan};
use report::{EngineInfo, ProbeReport, TargetInfo};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

pub struct ProbeOptions {
    pub target: PathBuf,
    pub grid: GridRequest,
    /// The engine asked for; None: the first in `engine::ENGINES` that starts.
    pub engine: Option<EngineKind>,
    pub destructive: bool,
    pub force: bool,
    pub scratch_size: u64,
    pub sysfs: Sysfs,
}

/// Progress callbacks, so the library stays free of terminal code.
pub trait Progress {
    /// Filling a scratch file: bytes done of total.
    fn filling(&self, done: u64, total: u64);
    /// The measurements start (before the first I/O).
    fn start(&self, plan: &Plan);
    /// Round `round` (from 0) of at most `plan.rounds` starts with `cells`.
    fn round(&self, round: u32, cells: usize);
    /// One cell of the current round is done, at `iops`.
    fn cell_done(&self, cell: &Cell, iops: f64);
    fn finish(&self);
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

/// The fio job file for the plan this probe would run; nothing is written.
pub fn emit_fio(o: &ProbeOptions, stop: &AtomicBool) -> Result<String, String> {
    let no_fill = |_: u64, _: u64| {};
    let mut a = access(o, stop, &no_fill);
    a.write = false;
    let is_dir = o.target.is_dir();
    let (constraints, filename, file_size) = if is_dir {
        let c = target::scratch_constraints(&o.target, &a)?;
        (
            c,
            o.target.join("diskalign-probe.fio.tmp"),
            Some(o.scratch_size),
        )
    } else {
        let t = target::open(&o.target, &a)?;
        (t.constraints.clone(), o.target.clone(), None)
    };
    let plan = grid::plan(&o.grid, &constraints).map_err(|e| e.to_string())?;
    // The job file names the engine asked for, else the preferred one.
    let kind = o.engine.unwrap_or(engine::ENGINES[0].kind);
    Ok(fio::job_file(
        &plan,
        &filename,
        constraints.size_bytes,
        kind,
        file_size,
    ))
}

/// What the rounds left: the samples, the final judgement of every
/// contrast, and how the run went.
struct Measured {
    cells: Vec<run::CellSamples>,
    assessed: Vec<sequential::Assessment>,
    rounds_run: u32,
    zoomed: bool,
    partial: bool,
    engine: EngineKind,
    fallback: Option<String>,
}

/// Rounds until every contrast is decided or has had the plan's most
/// rounds; a decided contrast keeps its decision and stops measuring.
fn measure(
    t: &target::Target,
    plan: &Plan,
    o: &ProbeOptions,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<Measured, String> {
    let mut runner = run::Runner::new(&t.file, t.constraints.size_bytes, plan, o.engine)
        .map_err(|e| e.to_string())?;
    let params = sequential::Params::of(plan);
    let mut contrasts = sequential::contrasts(&plan.cells);
    let mut frozen: Vec<Option<sequential::Assessment>> = vec![None; contrasts.len()];
    let mut assessed = Vec::new();
    let mut active = plan.cells.clone();
    let (mut round, mut zoomed, mut partial) = (0, false, false);
    while !active.is_empty() {
        progress.round(round, active.len());
        let done = runner
            .round(round, &active, stop, &mut |c, iops| {
                progress.cell_done(c, iops)
            })
            .map_err(|e| e.to_string())?;
        round += 1;
        assessed = sequential::assess(&contrasts, &runner.cells, &params);
        for (slot, a) in frozen.iter_mut().zip(assessed.iter_mut()) {
            match slot {
                Some(f) => *a = f.clone(),
                None if a.decision != sequential::Decision::Open => *slot = Some(a.clone()),
                None => {}
            }
        }
        if !done {
            partial = true;
            break;
        }
        if !zoomed && sequential::wants_zoom(plan, &assessed) {
            zoomed = true;
            let all: Vec<Cell> = plan.all_cells().copied().collect();
            contrasts = sequential::contrasts(&all);
            frozen = contrasts
                .iter()
                .map(|c| {
                    assessed
                        .iter()
                        .find(|a| a.contrast == *c)
                        .and_then(|a| (a.decision != sequential::Decision::Open).then(|| a.clone()))
                })
                .collect();
            assessed = sequential::assess(&contrasts, &runner.cells, &params);
        }
        active = sequential::still_needed(&assessed, plan.rounds);
    }
    Ok(Measured {
        cells: runner.cells,
        assessed,
        rounds_run: round,
        zoomed,
        partial,
        engine: runner.engine,
        fallback: runner.fallback,
    })
}

/// Plan, run and analyse. `stop` set (Ctrl-C) ends the run after the I/Os
/// in flight; the report then holds what was measured, marked partial. A
/// scratch file is removed on every path out of here.
pub fn probe(
    o: &ProbeOptions,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<ProbeReport, String> {
    let on_fill = |done, total| progress.filling(done, total);
    let a = access(o, stop, &on_fill);
    let t = target::open(&o.target, &a).map_err(|e| format!("{}: {e}", o.target.display()))?;
    let plan =
        grid::plan(&o.grid, &t.constraints).map_err(|e| format!("{}: {e}", t.path.display()))?;
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let clock = std::time::Instant::now();
    progress.start(&plan);
    let m = measure(&t, &plan, o, stop, progress);
    progress.finish();
    let m = m.map_err(|e| format!("{}: {e}", t.path.display()))?;
    let params = sequential::Params::of(&plan);
    let cells = analyse::cells(&m.cells, &m.assessed);
    let inference = analyse::infer(&m.cells, &m.assessed, &params, m.rounds_run, plan.rounds);
    let environment = env::record(&t, o.sysfs.root());
    Ok(ProbeReport {
        target: TargetInfo {
            path: o.target.clone(),
            kind: t.kind,
            size_bytes: t.constraints.size_bytes,
            logical_block_size: t.constraints.logical_block_size,
            physical_block_size: t.constraints.physical_block_size,
            dio_offset_align: t.constraints.dio_offset_align,
            dio_rule: t.constraints.dio_rule,
            node_block_size: t.node_block_size,
        },
        engine: EngineInfo {
            name: m.engine,
            fallback_reason: m.fallback,
            queue_depth: plan.qd,
            jobs: plan.jobs,
            direct: plan.direct,
            fdatasync: plan.fdatasync,
        },
        environment,
        rounds_run: m.rounds_run,
        zoomed: m.zoomed,
        partial: m.partial,
        elapsed_s: clock.elapsed().as_secs_f64(),
        started_unix,
        plan,
        contrasts: analyse::contrast_reports(&m.assessed),
        cells,
        inference,
    })
}
