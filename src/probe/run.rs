//! Run rounds: the cells asked for, in a fresh random order each round, on
//! one engine per job. A broken round of a cell (too few completions, or a
//! stall of half the window) is measured again. Keeps the raw per-round
//! figures; which cells a round runs is the sequential procedure's choice
//! ([`super::sequential`]).

use super::engine::{self, Engine, EngineKind, Measurement, Setup, Workload};
use super::grid::{Cell, Plan};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// How often a broken round of a cell is measured again before it is kept.
pub const RETRIES: u32 = 2;

/// One round of one cell.
#[derive(Clone, Debug, Serialize)]
pub struct RoundSample {
    /// The round (from 0): pairs this figure with the other cells' figures
    /// of the same round.
    pub round: u32,
    pub iops: f64,
    pub bytes_per_s: f64,
    /// The measured window, in seconds.
    pub window_s: f64,
    /// Broken measurements of this round that were run again.
    pub retries: u32,
    /// Still broken after the retries (kept, and marked).
    pub broken: bool,
}

/// Everything measured for one cell.
pub struct CellSamples {
    pub cell: Cell,
    pub rounds: Vec<RoundSample>,
    pub latency: Histogram<u64>,
}

impl CellSamples {
    /// The IOPS of round `round`, when this cell ran in it.
    pub fn in_round(&self, round: u32) -> Option<f64> {
        self.rounds
            .iter()
            .find(|r| r.round == round)
            .map(|r| r.iops)
    }
}

/// Why a run ended before the plan's end.
#[derive(Debug)]
pub enum RunError {
    /// An I/O failed, or no engine could start.
    Io(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Io(m) => f.write_str(m),
        }
    }
}

/// The engines of a run and what they measured so far.
pub struct Runner<'a> {
    plan: &'a Plan,
    size: u64,
    engines: Vec<Box<dyn Engine>>,
    pub engine: EngineKind,
    /// Why io_uring was not used, when `auto` fell back.
    pub fallback: Option<String>,
    pub cells: Vec<CellSamples>,
}

impl<'a> Runner<'a> {
    /// Start one engine per job on `file` (`size` bytes).
    pub fn new(
        file: &std::fs::File,
        size: u64,
        plan: &'a Plan,
        choice: Option<EngineKind>,
    ) -> Result<Runner<'a>, RunError> {
        let setup = Setup {
            fd: file.as_raw_fd(),
            qd: plan.qd,
            max_bs: plan.max_block_size(),
            writes: plan.all_cells().any(|c| c.pattern.is_write()),
            same_thread: plan.jobs == 1,
        };
        let mut engines = Vec::new();
        let mut fallback = None;
        for _ in 0..plan.jobs {
            let (e, why) = engine::build(choice, &setup)
                .map_err(|e| RunError::Io(format!("cannot start the I/O engine: {e}")))?;
            fallback = fallback.or(why);
            engines.push(e);
        }
        Ok(Runner {
            plan,
            size,
            engine: engines[0].kind(),
            engines,
            fallback,
            cells: Vec::new(),
        })
    }

    /// Run `cells` once each, in round `round`'s random order. `tick` gets
    /// each cell and its IOPS; returns false when `stop` ended the round
    /// early (what was measured before is kept).
    pub fn round(
        &mut self,
        round: u32,
        cells: &[Cell],
        stop: &AtomicBool,
        tick: &mut dyn FnMut(&Cell, f64),
    ) -> Result<bool, RunError> {
        for cell in self.plan.shuffled(cells, round) {
            let Some((m, retries)) = self.measure(&cell, round, stop)? else {
                return Ok(false);
            };
            let bs = f64::from(cell.block_size);
            let sample = RoundSample {
                round,
                iops: m.iops,
                bytes_per_s: m.iops * bs,
                window_s: m.window.as_secs_f64(),
                retries,
                broken: m.is_broken(),
            };
            tick(&cell, m.iops);
            let slot = self.slot(cell);
            slot.rounds.push(sample);
            let _ = slot.latency.add(&m.latency);
        }
        Ok(true)
    }

    /// One cell, measured again while broken (up to [`RETRIES`] times);
    /// None when `stop` was set during it.
    fn measure(
        &mut self,
        cell: &Cell,
        round: u32,
        stop: &AtomicBool,
    ) -> Result<Option<(Measurement, u32)>, RunError> {
        let mut retries = 0;
        loop {
            let ws: Vec<Workload> = (0..self.plan.jobs)
                .map(|j| workload(self.plan, cell, self.size, round, j, retries))
                .collect();
            let m = run_cell(&mut self.engines, &ws, stop).map_err(|e| {
                RunError::Io(format!(
                    "{} {} at offset {}: {e}",
                    cell.pattern.as_str(),
                    crate::units::human(u64::from(cell.block_size)),
                    cell.offset
                ))
            })?;
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            if !m.is_broken() || retries == RETRIES {
                return Ok(Some((m, retries)));
            }
            retries += 1;
        }
    }

    fn slot(&mut self, cell: Cell) -> &mut CellSamples {
        match self.cells.iter().position(|c| c.cell == cell) {
            Some(i) => &mut self.cells[i],
            None => {
                self.cells.push(CellSamples {
                    cell,
                    rounds: Vec::new(),
                    latency: engine::new_histogram(),
                });
                self.cells.last_mut().expect("just pushed")
            }
        }
    }
}

fn workload(plan: &Plan, cell: &Cell, size: u64, round: u32, job: u32, retry: u32) -> Workload {
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
        max_duration: plan.max_runtime,
        min_completions: plan.min_completions,
        seed: plan.seed
            ^ (u64::from(round) << 40)
            ^ (u64::from(retry) << 56)
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
