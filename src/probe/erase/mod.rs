//! The erase-unit search (`probe --erase-unit`): read-only reads that end
//! at, straddle and start at each candidate boundary (powers of two from
//! 64 KiB to 64 MiB, 12 and 24 MiB), paired and shuffled in rounds as the
//! probe's other comparisons are, deciding the smallest boundary whose
//! straddling reads are slower by `--min-effect` or more
//! ([`layout`]: where it reads; [`judge`]: what the rounds say).
//!
//! A flash card's controller maps whole allocation units; a read that
//! spans two of them is two lookups, which flashbench's `-a` test shows
//! as a step in its table of "pre", "on" and "post" times for a person
//! to read. This search decides it, with intervals.
//!
//! It sits after `steer/` and before `document/`: it runs the rounds on
//! `measure`'s engines and judges them with `infer`'s statistics; the
//! document holds what it found.

mod judge;
mod layout;

pub use judge::{CandidateReport, EraseUnit};
pub use layout::{Place, DEFAULT_READ};

use super::measure::{self, Cell, CellSamples, EngineKind, Grid, Preset, ProbeTarget};
use super::Progress;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// How the search's comparisons are made (the document's `method`).
pub const METHOD: &str = "reads of one size at random places spaced six times the largest candidate apart, each cell's reads ending at, straddling or starting at one boundary of its candidate (an odd multiple of it, and for a power of two not a multiple of three of it, so no larger candidate's boundary is read); a candidate's three cells read interleaved in one window per round (each random place read at all three in a random order), one 0.2 quantile latency per cell and round (delays only add to a read), candidates shuffled; each candidate judged on its per-round log difference, straddling against the mean of ending and starting, variance moderated toward the other candidates' pool (6 prior degrees of freedom at most), interval at level 1 - 0.05/(candidates x most rounds); slower when the interval excludes 0 and the estimate is min_effect or more, fine when it excludes min_effect; the unit is the smallest candidate decided slower, bracketed when every smaller one is fine; the search ends once that is so";

/// The defaults of the search, where the probe's options do not say.
const ROUNDS: u32 = 16;
const MIN_ROUNDS: u32 = 3;
const WINDOW: Duration = Duration::from_millis(150);
const WARMUP: Duration = Duration::from_millis(10);
const MIN_COMPLETIONS: u64 = 36;
pub const DEFAULT_QD: u32 = 1;
const BUDGET: Duration = Duration::from_secs(120);

/// What the search is asked.
pub struct Request {
    /// Bytes per read; None: [`DEFAULT_READ`].
    pub read: Option<u64>,
    pub qd: u32,
    pub rounds: Option<u32>,
    pub runtime: Option<Duration>,
    pub warmup: Option<Duration>,
    pub min_effect: f64,
    pub max_time: Option<Duration>,
    pub seed: u64,
    pub engine: Option<EngineKind>,
}

/// What the search measured and found.
pub struct Searched {
    pub plan: Grid,
    pub cells: Vec<CellSamples>,
    pub found: EraseUnit,
    pub rounds_run: u32,
    pub partial: bool,
    pub out_of_time: bool,
    pub engine: EngineKind,
    pub fallback: Option<String>,
    pub elapsed_s: f64,
}

/// The device byte where the target starts: a partition's start (its
/// reads must sit on the device's boundaries), else 0.
fn start_on_device(t: &ProbeTarget) -> u64 {
    let (Some(d), Some(n)) = (&t.disk, t.partition) else {
        return 0;
    };
    d.partitions
        .iter()
        .find(|p| p.number == n)
        .map_or(0, |p| p.start_bytes)
}

/// The grid the search runs on `t`.
pub fn plan(t: &ProbeTarget, r: &Request) -> Result<(Grid, layout::Layout), String> {
    let c = &t.constraints;
    let read = r
        .read
        .unwrap_or(DEFAULT_READ.max(2 * u64::from(c.dio_offset_align)));
    let l = layout::lay_out(
        c.size_bytes,
        start_on_device(t),
        read,
        u64::from(c.dio_offset_align),
    )
    .map_err(|e| e.to_string())?;
    if !(1..=4096).contains(&r.qd) {
        return Err(format!("--qd {}: must be between 1 and 4096", r.qd));
    }
    let runtime = r.runtime.unwrap_or(WINDOW);
    if runtime < Duration::from_millis(10) {
        return Err("--runtime: at least 10ms per cell".into());
    }
    let rounds = r.rounds.unwrap_or(ROUNDS).max(MIN_ROUNDS);
    let grid = Grid {
        preset: Preset::EraseUnit,
        cells: l.cells(),
        zoom: Vec::new(),
        focus: Vec::new(),
        unit: l.spacing,
        rounds,
        min_rounds: MIN_ROUNDS,
        runtime,
        max_runtime: runtime * 8,
        min_completions: MIN_COMPLETIONS,
        min_effect: r.min_effect,
        max_time: Some(r.max_time.unwrap_or(BUDGET)),
        warmup: r.warmup.unwrap_or(WARMUP),
        qd: r.qd,
        jobs: 1,
        direct: true,
        fdatasync: false,
        seed: r.seed,
    };
    Ok((grid, l))
}

/// The candidates a round measures (every one in the first rounds, then
/// those still open), each as its three cells, in a random order: a
/// candidate's cells are read interleaved in one window (each random
/// position at all three places, in a random order), so drift between
/// windows cancels from their comparison. Back to back windows differed
/// by about 8 % in a guest (bench/erase-unit at f3df3597), more than the
/// penalties sought.
fn round_groups(
    l: &layout::Layout,
    judged: &[CandidateReport],
    round: u32,
    seed: u64,
) -> Vec<Vec<measure::Key>> {
    let mut groups: Vec<Vec<measure::Key>> = l
        .candidates
        .iter()
        .zip(judged)
        .filter(|(_, j)| round < MIN_ROUNDS || j.decision == crate::probe::Decision::Open)
        .map(|(c, _)| {
            c.cells
                .iter()
                .map(|&cell: &Cell| measure::Key { target: 0, cell })
                .collect()
        })
        .collect();
    fastrand::Rng::with_seed(seed ^ u64::from(round + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .shuffle(&mut groups);
    groups
}

/// Rounds until every candidate is decided, the most rounds are run or
/// the budget is spent; `stop` (Ctrl-C) ends it after the reads in flight.
pub fn search(
    t: &ProbeTarget,
    r: &Request,
    stop: &AtomicBool,
    progress: &dyn Progress,
) -> Result<Searched, String> {
    let (grid, l) = plan(t, r)?;
    let declared = t
        .disk
        .as_ref()
        .map(|d| d.topology.erase_unit_bytes)
        .filter(|u| *u > 0);
    let size = t.constraints.size_bytes;
    let mut runner =
        measure::Runner::new(&[(&t.file, size)], &grid, r.engine).map_err(|e| e.to_string())?;
    let clock = Instant::now();
    let budget = grid.max_time.unwrap_or(BUDGET);
    let per_group = grid.runtime + grid.warmup;
    progress.start(&grid, 1);
    let mut judged = judge::assess(&l, &runner.cells, grid.min_effect, grid.rounds);
    let (mut rounds_run, mut partial, mut out_of_time) = (0, false, false);
    'rounds: for round in 0..grid.rounds {
        let groups = round_groups(&l, &judged, round, grid.seed);
        let cells: usize = groups.iter().map(Vec::len).sum();
        if cells == 0 {
            break;
        }
        if round > 0 && clock.elapsed() + per_group * groups.len() as u32 > budget {
            out_of_time = true;
            break;
        }
        progress.round(round, cells);
        for keys in groups {
            let done = runner
                .round_together(round, &keys, grid.runtime, stop, &mut |k, iops| {
                    progress.cell_done(&k.cell, iops)
                })
                .map_err(|e| e.to_string())?;
            if !done {
                partial = true;
                break 'rounds;
            }
        }
        rounds_run = round + 1;
        judged = judge::assess(&l, &runner.cells, grid.min_effect, grid.rounds);
        if round + 1 >= MIN_ROUNDS && judge::settled(&judged) {
            break;
        }
    }
    progress.finish();
    let found = judge::verdict(&l, judged, grid.min_effect, declared);
    Ok(Searched {
        cells: runner.cells,
        found,
        rounds_run,
        partial,
        out_of_time,
        engine: runner.engine,
        fallback: runner.fallback,
        elapsed_s: clock.elapsed().as_secs_f64(),
        plan: grid,
    })
}
