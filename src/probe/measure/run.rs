//! Run rounds: the cells asked for, in a fresh random order each round, on
//! one engine per job. A broken round of a cell (too few completions, or a
//! stall of half the window) is measured again. Keeps the raw per-round
//! figures; which cells a round runs is the sequential procedure's choice
//! (`infer`'s sequential procedure, asked by `steer`).

use super::engine::{self, Engine, EngineKind, Measurement, Setup, Workload};
use super::grid::{Cell, Grid};
use hdrhistogram::Histogram;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often a broken round of a cell is measured again before it is kept.
pub const RETRIES: u32 = 2;

/// The latency quantile a round is timed by where single reads are
/// compared (the erase-unit search). Delays only add to a read's time,
/// so a low quantile is the device's own time with the least of the
/// host's noise (flashbench keeps the fastest of 8 tries): in a TCG guest
/// at 2 ms per read the median read took 4.8 ms and the 99th percentile
/// 11 ms (bench/erase-unit at 7f42dbd), and for a delay that is
/// exponential the 0.2 quantile varies half as much as the median.
pub const LOW_QUANTILE: f64 = 0.2;

/// One round of one cell.
#[derive(Clone, Debug)]
pub struct RoundSample {
    /// The round (from 0): pairs this figure with the other cells' figures
    /// of the same round.
    pub round: u32,
    pub iops: f64,
    /// The window's [`LOW_QUANTILE`] latency, in nanoseconds (0: not
    /// recorded): what the erase-unit search compares.
    pub low_ns: u64,
    /// Broken measurements of this round that were run again.
    pub retries: u32,
    /// Still broken after the retries (kept, and marked).
    pub broken: bool,
    /// The window measured and its two parts.
    pub window: Window,
}

/// A measured window: its length, and the rate in each of its two parts
/// (split at half the window asked for). How far the parts differ is the
/// jitter inside a window (`probe::noise`). All zero when unknown.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Window {
    pub length_s: f64,
    pub first_s: f64,
    pub parts_iops: [f64; 2],
}

impl Window {
    pub fn of(m: &Measurement) -> Window {
        Window {
            length_s: m.window.as_secs_f64(),
            first_s: m.first_part.as_secs_f64(),
            parts_iops: m.parts_iops,
        }
    }

    /// Both parts measured something.
    pub fn has_parts(&self) -> bool {
        self.first_s > 0.0
            && self.length_s > self.first_s
            && self.parts_iops.iter().all(|&x| x > 0.0)
    }
}

/// Everything measured for one cell of one target.
pub struct CellSamples {
    /// Index of the target among those probed together.
    pub target: usize,
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

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot start the I/O engine: {0}")]
    EngineStart(std::io::Error),
    #[error("{} {} at offset {}: {source}", .cell.pattern.as_str(), crate::units::human(u64::from(.cell.block_size)), .cell.offset)]
    Io { cell: Cell, source: std::io::Error },
    #[error("no target to probe")]
    NoTarget,
}

/// One target's engines (one per job) and the bytes its I/O may touch.
struct Bound {
    engines: Vec<Box<dyn Engine>>,
    size: u64,
}

/// The engines of a run and what they measured so far.
pub struct Runner<'a> {
    plan: &'a Grid,
    targets: Vec<Bound>,
    pub engine: EngineKind,
    /// Why io_uring was not used, when `auto` fell back.
    pub fallback: Option<String>,
    pub cells: Vec<CellSamples>,
}

impl<'a> Runner<'a> {
    /// Start one engine per job on each target (its file and the bytes
    /// its I/O may touch).
    pub fn new(
        targets: &[(&std::fs::File, u64)],
        plan: &'a Grid,
        choice: Option<EngineKind>,
    ) -> Result<Runner<'a>, RunError> {
        let mut bound = Vec::new();
        let mut fallback = None;
        for (file, size) in targets {
            let setup = Setup {
                fd: file.as_raw_fd(),
                qd: plan.qd,
                max_bs: plan.max_block_size(),
                writes: plan.all_cells().any(|c| c.pattern.is_write()),
                same_thread: plan.jobs == 1,
            };
            let mut engines = Vec::new();
            for _ in 0..plan.jobs {
                let (e, why) = engine::build(choice, &setup).map_err(RunError::EngineStart)?;
                fallback = fallback.or(why);
                engines.push(e);
            }
            bound.push(Bound {
                engines,
                size: *size,
            });
        }
        let engine = bound
            .first()
            .and_then(|b| b.engines.first())
            .map(|e| e.kind())
            .ok_or(RunError::NoTarget)?;
        Ok(Runner {
            plan,
            targets: bound,
            engine,
            fallback,
            cells: Vec::new(),
        })
    }

    /// Run each (target, cell) once with windows of at least `window`,
    /// all shuffled together in round `round`'s random order, so drift
    /// hits every target alike. `tick` gets each and its IOPS; returns
    /// false when `stop` ended the round early (what was measured before
    /// is kept).
    pub fn round(
        &mut self,
        round: u32,
        keys: &[Key],
        window: Duration,
        stop: &AtomicBool,
        tick: &mut dyn FnMut(&Key, f64),
    ) -> Result<bool, RunError> {
        for key in self.plan.shuffled(keys, round, Key::row) {
            if !self.round_together(round, &[key], window, stop, tick)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Run `keys` (cells of one target, one pattern and block size)
    /// interleaved in one window of at least `window`: each random
    /// position is read at every cell's offset in a fresh random order,
    /// so drift between windows cancels from their comparison; each cell
    /// gets the rate and latency its own I/Os had (one key: the cell
    /// alone). Returns false when `stop` ended it.
    pub fn round_together(
        &mut self,
        round: u32,
        keys: &[Key],
        window: Duration,
        stop: &AtomicBool,
        tick: &mut dyn FnMut(&Key, f64),
    ) -> Result<bool, RunError> {
        if keys.is_empty() {
            return Ok(true);
        }
        let Some((m, retries)) = self.measure(keys, round, window, stop)? else {
            return Ok(false);
        };
        let broken = m.is_broken();
        if let [key] = keys {
            self.keep(*key, round, &m, retries, broken, tick);
        }
        for (key, place) in keys.iter().zip(&m.places) {
            self.keep(*key, round, place, retries, broken, tick);
        }
        Ok(true)
    }

    /// Record what `m` measured as `key`'s figure of round `round`.
    fn keep(
        &mut self,
        key: Key,
        round: u32,
        m: &Measurement,
        retries: u32,
        broken: bool,
        tick: &mut dyn FnMut(&Key, f64),
    ) {
        let sample = RoundSample {
            round,
            iops: m.iops,
            low_ns: m.latency.value_at_quantile(LOW_QUANTILE),
            retries,
            broken,
            window: Window::of(m),
        };
        tick(&key, m.iops);
        let slot = self.slot(key);
        slot.rounds.push(sample);
        let _ = slot.latency.add(&m.latency);
    }

    /// `keys` (one cell, or cells read interleaved), measured again while
    /// broken (up to [`RETRIES`] times); None when `stop` was set during it.
    fn measure(
        &mut self,
        keys: &[Key],
        round: u32,
        window: Duration,
        stop: &AtomicBool,
    ) -> Result<Option<(Measurement, u32)>, RunError> {
        let mut retries = 0;
        let plan = self.plan;
        let key = keys[0];
        let places: Vec<u64> = if keys.len() > 1 {
            keys.iter().map(|k| k.cell.offset).collect()
        } else {
            Vec::new()
        };
        let bound = &mut self.targets[key.target];
        loop {
            let ws: Vec<Workload> = (0..plan.jobs)
                .map(|j| {
                    let mut w = workload(plan, &key.cell, bound.size, round, j, retries);
                    w.duration = window;
                    w.max_duration = w.max_duration.max(window);
                    w.places.clone_from(&places);
                    w
                })
                .collect();
            let m = run_cell(&mut bound.engines, &ws, stop).map_err(|source| RunError::Io {
                cell: key.cell,
                source,
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

    fn slot(&mut self, key: Key) -> &mut CellSamples {
        let found = self
            .cells
            .iter()
            .position(|c| c.cell == key.cell && c.target == key.target);
        match found {
            Some(i) => &mut self.cells[i],
            None => {
                self.cells.push(CellSamples {
                    target: key.target,
                    cell: key.cell,
                    rounds: Vec::new(),
                    latency: engine::new_histogram(),
                });
                self.cells.last_mut().expect("just pushed")
            }
        }
    }
}

/// A cell of one target: what a round runs and a contrast compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub target: usize,
    pub cell: Cell,
}

impl Key {
    /// The row a cell is measured with in a round (`Grid::shuffled`): its
    /// pattern and block size, across targets.
    pub fn row(&self) -> (super::engine::Pattern, u32) {
        (self.cell.pattern, self.cell.block_size)
    }
}

impl CellSamples {
    pub fn key(&self) -> Key {
        Key {
            target: self.target,
            cell: self.cell,
        }
    }
}

fn workload(plan: &Grid, cell: &Cell, size: u64, round: u32, job: u32, retry: u32) -> Workload {
    Workload {
        pattern: cell.pattern,
        block_size: cell.block_size,
        offset: cell.offset,
        places: Vec::new(),
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
