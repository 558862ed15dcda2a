//! Run a plan: every cell, every round, in a fresh random order each round,
//! on one engine per job. Returns the raw per-round measurements.

use super::engine::{self, Engine, EngineKind, Measurement, Setup, Workload};
use super::grid::{Cell, Plan};
use hdrhistogram::Histogram;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// One round of one cell.
pub struct RoundSample {
    pub iops: f64,
    pub bytes_per_s: f64,
}

/// Everything measured for one cell.
pub struct CellSamples {
    pub cell: Cell,
    pub rounds: Vec<RoundSample>,
    pub latency: Histogram<u64>,
}

pub struct Outcome {
    pub engine: EngineKind,
    /// Why io_uring was not used, when `auto` fell back.
    pub fallback: Option<String>,
    pub cells: Vec<CellSamples>,
}

fn workload(plan: &Plan, cell: &Cell, size: u64, round: u32, job: u32) -> Workload {
    Workload {
        pattern: cell.pattern,
        block_size: cell.block_size,
        offset: cell.offset,
        unit: plan.unit,
        size,
        qd: plan.qd,
        fdatasync: plan.fdatasync,
        warmup: plan.warmup,
        duration: plan.runtime,
        seed: plan.seed
            ^ (u64::from(round) << 40)
            ^ (u64::from(job) << 20)
            ^ cell.offset
            ^ u64::from(cell.block_size) << 8,
        job,
        jobs: plan.jobs,
    }
}

/// Run every job's engine on the cell at once and merge what they measured.
fn run_cell(
    engines: &mut [Box<dyn Engine>],
    ws: &[Workload],
    stop: &AtomicBool,
) -> std::io::Result<Measurement> {
    if engines.len() == 1 {
        return engines[0].run(&ws[0], stop);
    }
    engine::in_parallel(engines.iter_mut().zip(ws), |(e, w)| e.run(w, stop))
}

/// Run `plan` on `file` (`size` bytes). `tick` is called after each cell
/// round with its description; `stop` ends the run early (Ctrl-C).
pub fn run(
    file: &std::fs::File,
    size: u64,
    plan: &Plan,
    choice: Option<EngineKind>,
    stop: &AtomicBool,
    tick: &mut dyn FnMut(&Cell, u32),
) -> Result<Outcome, String> {
    let setup = Setup {
        fd: file.as_raw_fd(),
        qd: plan.qd,
        max_bs: plan.max_block_size(),
        writes: plan.cells.iter().any(|c| c.pattern.is_write()),
        same_thread: plan.jobs == 1,
    };
    let mut engines = Vec::new();
    let mut fallback = None;
    for _ in 0..plan.jobs {
        let (e, why) = engine::build(choice, &setup)
            .map_err(|e| format!("cannot start the I/O engine: {e}"))?;
        fallback = fallback.or(why);
        engines.push(e);
    }
    let kind = engines[0].kind();
    let mut cells: Vec<CellSamples> = plan
        .cells
        .iter()
        .map(|&cell| CellSamples {
            cell,
            rounds: Vec::new(),
            latency: engine::new_histogram(),
        })
        .collect();
    for round in 0..plan.rounds {
        for cell in plan.round_order(round) {
            let ws: Vec<Workload> = (0..plan.jobs)
                .map(|j| workload(plan, &cell, size, round, j))
                .collect();
            let m = run_cell(&mut engines, &ws, stop).map_err(|e| {
                format!(
                    "{} {} at offset {}: {e}",
                    cell.pattern.as_str(),
                    crate::units::human(u64::from(cell.block_size)),
                    cell.offset
                )
            })?;
            if stop.load(Ordering::Relaxed) {
                return Err("interrupted".into());
            }
            let secs = m.elapsed.as_secs_f64().max(1e-9);
            let slot = cells
                .iter_mut()
                .find(|c| c.cell == cell)
                .expect("cell of the plan");
            slot.rounds.push(RoundSample {
                iops: m.ios as f64 / secs,
                bytes_per_s: m.bytes as f64 / secs,
            });
            let _ = slot.latency.add(&m.latency);
            tick(&cell, round);
        }
    }
    Ok(Outcome {
        engine: kind,
        fallback,
        cells,
    })
}
