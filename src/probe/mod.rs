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
    /// The measurements start; they take about `plan.planned_time()`.
    fn start(&self, plan: &Plan);
    /// One cell of one round is done.
    fn cell_done(&self, cell: &Cell, round: u32);
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

/// Plan, run and analyse. `stop` set (Ctrl-C) ends the run early with an
/// error; a scratch file is removed on every path out of here.
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
    progress.start(&plan);
    let outcome = run::run(
        &t.file,
        t.constraints.size_bytes,
        &plan,
        o.engine,
        stop,
        &mut |cell, round| progress.cell_done(cell, round),
    );
    progress.finish();
    let outcome = outcome.map_err(|e| format!("{}: {e}", t.path.display()))?;
    let cells = analyse::cells(&outcome.cells);
    let inference = analyse::infer(
        &cells,
        u64::from(t.constraints.logical_block_size.max(1)),
        plan.rounds,
    );
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
            name: outcome.engine,
            fallback_reason: outcome.fallback,
            queue_depth: plan.qd,
            jobs: plan.jobs,
            direct: plan.direct,
            fdatasync: plan.fdatasync,
        },
        environment,
        plan,
        cells,
        inference,
    })
}
