//! The grid plan: which cells (block size × offset × pattern) to run, for
//! how long, in which order, and whether the target can run them.

use super::engine::Pattern;
use crate::units::{human, KIB, MIB};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `--preset`: how much of the grid to run and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// Adaptive (the default): the block-size curve at aligned offsets, an
    /// offset ladder (512 B to 32 KiB) with 64 KiB blocks, the 4 KiB and
    /// 16 KiB rows at the first misaligned offset; a zoom (blocks of twice
    /// each offset from 64 KiB to 512 KiB) when every
    /// ladder offset is slower; each comparison stops once decided.
    Auto,
    /// 3 block sizes, 6 offsets, 5 rounds of 0.2 s: under a minute.
    Quick,
    /// Block sizes up to 64 KiB, every offset step below 4 KiB (or the
    /// physical block) plus a few large ones, 5 rounds of 0.4 s.
    Standard,
    /// Block sizes up to 1 MiB, offsets up to 8 KiB, 7 rounds of 1 s.
    Full,
    /// Not a grid of offsets: the erase-unit search's reads around
    /// candidate boundaries (`probe --erase-unit`), laid out by
    /// `probe::erase`.
    #[value(skip)]
    #[serde(rename = "erase-unit")]
    EraseUnit,
}

crate::spelled_as_serde!(Preset);

/// What the user asked for; `None` takes the preset's value.
#[derive(Clone, Debug)]
pub struct GridRequest {
    pub preset: Preset,
    pub block_sizes: Option<Vec<u64>>,
    pub offsets: Option<Vec<u64>>,
    pub patterns: Option<Vec<Pattern>>,
    pub write: bool,
    pub runtime: Option<Duration>,
    pub warmup: Option<Duration>,
    pub rounds: Option<u32>,
    /// `--min-effect` as a fraction; None: [`DEFAULT_MIN_EFFECT`].
    pub min_effect: Option<f64>,
    /// `--max-time`: a budget for the whole run.
    pub max_time: Option<Duration>,
    pub qd: u32,
    pub jobs: u32,
    pub buffered: bool,
    pub fdatasync: bool,
    pub seed: u64,
}

/// Why a grid cannot be planned: each names the option to change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GridError {
    #[error("--pattern: give at least one pattern")]
    NoPattern,
    #[error("pattern {0} writes: add --write to allow writing")]
    WriteNotAllowed(Pattern),
    #[error("--fdatasync needs a write pattern (--write)")]
    FdatasyncWithoutWrite,
    #[error("--qd {0}: must be between 1 and 4096")]
    QueueDepth(u32),
    #[error("--jobs {0}: must be between 1 and 256")]
    Jobs(u32),
    #[error("block size {0}: must be between 1 byte and 64 MiB")]
    BlockSize(u64),
    #[error("block size {bs} is not a multiple of {align} bytes, the O_DIRECT alignment of this target ({rule}): O_DIRECT transfers must be whole multiples of it; use --buffered to measure through the page cache")]
    BlockSizeNotDirect { bs: u64, align: u64, rule: DioRule },
    #[error("offset {off} is not a multiple of {align} bytes, the O_DIRECT alignment of this target ({rule}): O_DIRECT I/O must start on that boundary; use --buffered to measure through the page cache")]
    OffsetNotDirect { off: u64, align: u64, rule: DioRule },
    #[error("--bs: give at least one block size")]
    NoBlockSize,
    #[error("the target ({}) is too small for this grid: offsets up to {} with {} blocks need at least {}; give smaller --offsets or a larger --size", human(*size), human(*max_off), human(*max_bs), human(*needed))]
    TooSmall {
        size: u64,
        max_off: u64,
        max_bs: u64,
        needed: u64,
    },
    #[error("--runtime: at least 10ms per cell")]
    Runtime,
    #[error("--rounds: at least 1")]
    Rounds,
    #[error("--max-time {}s is shorter than one round of this plan ({:.1}s: {cells} cells of {:.2}s each, warm-up included)", .max.as_secs_f64(), .round.as_secs_f64(), (*.round / (*.cells).max(1) as u32).as_secs_f64())]
    MaxTime {
        max: Duration,
        round: Duration,
        cells: usize,
    },
    #[error("--min-effect {0}: give a percentage above 0 and below 100")]
    MinEffect(String),
}

/// Where the O_DIRECT alignment rule comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DioRule {
    /// The filesystem or device said so (Linux 6.1+).
    #[serde(rename = "statx STATX_DIOALIGN")]
    Statx,
    /// No statx answer: the logical block size, which always works.
    #[serde(rename = "logical block size")]
    LogicalBlockSize,
}

crate::spelled_as_serde!(DioRule);

/// What the target allows.
#[derive(Clone, Debug, Serialize)]
pub struct Constraints {
    pub logical_block_size: u32,
    pub physical_block_size: u32,
    pub size_bytes: u64,
    /// Offsets and lengths of O_DIRECT I/O must be multiples of this.
    pub dio_offset_align: u32,
    /// Where that rule comes from: "statx STATX_DIOALIGN" or "logical block size".
    pub dio_rule: DioRule,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Cell {
    pub block_size: u32,
    pub offset: u64,
    pub pattern: Pattern,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Grid {
    pub preset: Preset,
    /// The cells measured from the first round.
    pub cells: Vec<Cell>,
    /// Cells added only when the search asks for them (auto: every ladder
    /// offset was slower, so the unit is 64 KiB or more).
    #[serde(default)]
    pub zoom: Vec<Cell>,
    /// Cells the search may add once it points at a unit of 8 KiB or more
    /// (auto, one target): each unit's focus row (`probe::focus`).
    #[serde(default)]
    pub focus: Vec<Cell>,
    /// I/Os land at `offset + k × unit`: one unit for every cell, larger
    /// than every offset, so cells differ only in their offset.
    pub unit: u64,
    /// The most rounds any comparison gets; one stops earlier once decided.
    pub rounds: u32,
    /// Rounds before the first decision.
    #[serde(default)]
    pub min_rounds: u32,
    /// A window lasts at least `runtime` and until this many I/Os
    /// completed in it (per job), up to `max_runtime`.
    #[serde(with = "crate::probe::serde_figures::secs", default)]
    pub runtime: Duration,
    #[serde(with = "crate::probe::serde_figures::secs", default)]
    pub max_runtime: Duration,
    #[serde(default)]
    pub min_completions: u64,
    /// The smallest penalty worth finding, as a fraction (0.1 = 10 %): a
    /// comparison whose interval excludes a penalty this large is decided.
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub min_effect: f64,
    /// `--max-time`: the budget of the whole run (no new round starts once
    /// it is spent); null: only the most rounds bound the run.
    #[serde(with = "crate::probe::serde_figures::opt_secs", default)]
    pub max_time: Option<Duration>,
    #[serde(with = "crate::probe::serde_figures::secs", default)]
    pub warmup: Duration,
    pub qd: u32,
    pub jobs: u32,
    pub direct: bool,
    pub fdatasync: bool,
    pub seed: u64,
}

/// The smallest penalty worth finding when `--min-effect` is not given.
pub const DEFAULT_MIN_EFFECT: f64 = 0.1;

/// The auto preset's budget per target when neither `--max-time` nor
/// `--rounds` is given: the run looks for penalties well below
/// `--min-effect` (`probe::settle::pursue`) and chooses its windows
/// (`probe::pacing`) within it.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(120);

/// The budget of a run: `max_time` when given; else, for the adaptive
/// auto plan (no `--bs`, `--offsets` or `--rounds`), [`DEFAULT_BUDGET`]
/// per target.
pub fn budget(req: &GridRequest, targets: usize) -> Option<Duration> {
    let adaptive = req.preset == Preset::Auto
        && req.block_sizes.is_none()
        && req.offsets.is_none()
        && req.rounds.is_none();
    req.max_time
        .or_else(|| adaptive.then(|| DEFAULT_BUDGET * targets.max(1) as u32))
}

impl Grid {
    pub fn block_sizes(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.cells.iter().map(|c| c.block_size).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    pub fn offsets(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.cells.iter().map(|c| c.offset).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    pub fn patterns(&self) -> Vec<Pattern> {
        let mut v: Vec<Pattern> = self.cells.iter().map(|c| c.pattern).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    pub fn max_block_size(&self) -> u32 {
        self.all_cells().map(|c| c.block_size).max().unwrap_or(0)
    }

    /// Wall time of every cell for every round, warm-ups included: the
    /// most the measurements take unless windows grow for slow devices.
    pub fn planned_time(&self) -> Duration {
        (self.runtime + self.warmup) * (self.cells.len() as u32 * self.rounds)
    }

    /// Wall time until the first decision (`min_rounds` of every cell).
    pub fn first_look_time(&self) -> Duration {
        (self.runtime + self.warmup) * (self.cells.len() as u32 * self.min_rounds)
    }

    /// Every cell that may run: the first ones, then the zoom.
    pub fn all_cells(&self) -> impl Iterator<Item = &Cell> {
        self.cells.iter().chain(&self.zoom)
    }

    /// `cells` of round `round`, in a random order of their own so that
    /// drift over the run (heat, background work) hits every cell alike,
    /// kept together by row (`row` of each: its pattern and block size):
    /// the rows in a random order, and each row's cells in a random order
    /// of their own. A cell and the references it is compared with (the
    /// row's aligned cells) are then measured a row's time apart, not a
    /// round's, so drift that does not cancel in a round weighs less. (With
    /// strong drift, 5 % moving over 5 s, and 30 cells to a round, the unit
    /// fit named 32 KiB for a 64 KiB unit in 1 of 100 simulated runs when
    /// every cell of a round was shuffled alike.)
    pub fn shuffled<T: Clone, R: Ord>(
        &self,
        cells: &[T],
        round: u32,
        row: impl Fn(&T) -> R,
    ) -> Vec<T> {
        let mut rng = fastrand::Rng::with_seed(
            self.seed ^ (u64::from(round) + 1).wrapping_mul(0x2545_f491_4f6c_dd1d),
        );
        let mut rows: Vec<(R, Vec<T>)> = Vec::new();
        for c in cells {
            let r = row(c);
            match rows.iter_mut().find(|x| x.0 == r) {
                Some(x) => x.1.push(c.clone()),
                None => rows.push((r, vec![c.clone()])),
            }
        }
        rng.shuffle(&mut rows);
        rows.into_iter()
            .flat_map(|(_, mut v)| {
                rng.shuffle(&mut v);
                v
            })
            .collect()
    }
}

/// The default offsets: every step of `align` below `span` (the physical
/// block, at least 4 KiB), `span` itself, and crossings of larger
/// boundaries; the full preset goes to twice the span.
fn default_offsets(preset: Preset, align: u64, pbs: u64) -> Vec<u64> {
    let span = pbs.max(4 * KIB);
    let mut v = match preset {
        Preset::Quick | Preset::EraseUnit => {
            vec![0, align, span / 2, span - align, span, span + align]
        }
        Preset::Auto | Preset::Standard => {
            let mut v: Vec<u64> = (0..span).step_by(align as usize).collect();
            v.extend([span, span + align, 64 * KIB - align, MIB - align]);
            v
        }
        Preset::Full => {
            let mut v: Vec<u64> = (0..2 * span).step_by(align as usize).collect();
            v.extend([
                2 * span,
                2 * span + align,
                64 * KIB - align,
                128 * KIB - align,
                MIB - align,
            ]);
            v
        }
    };
    v.retain(|o| o % align == 0);
    v
}

fn default_block_sizes(preset: Preset, min: u64) -> Vec<u64> {
    let min = min.next_power_of_two().max(512);
    match preset {
        Preset::Quick | Preset::EraseUnit => {
            let mut v = vec![min.min(4 * KIB), (4 * KIB).max(min), 64 * KIB];
            v.dedup();
            v
        }
        Preset::Auto | Preset::Standard => pow2_range(min, 64 * KIB),
        Preset::Full => pow2_range(min, MIB),
    }
}

fn pow2_range(lo: u64, hi: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut b = lo;
    while b <= hi {
        v.push(b);
        b *= 2;
    }
    v
}

/// Runtime, warm-up, the most rounds and the rounds before the first
/// decision, of each preset. Auto decides after two rounds: the moderated
/// variance (sequential.rs) gives even two rounds a usable test, a strong
/// penalty is settled then, and a weak one goes on measuring. Its
/// warm-up only has to fill the queue again (the window counts each I/O's
/// share of its life inside it, engine/measurement.rs), and rounds are
/// paired, so a cell's carry-over from the one before is drift that
/// cancels.
fn preset_timing(preset: Preset) -> (Duration, Duration, u32, u32) {
    let ms = Duration::from_millis;
    match preset {
        Preset::Auto => (ms(125), ms(25), 16, 2),
        Preset::Quick | Preset::EraseUnit => (ms(200), ms(50), 5, 3),
        Preset::Standard => (ms(400), ms(100), 5, 3),
        Preset::Full => (Duration::from_secs(1), ms(200), 7, 3),
    }
}

/// Rounds of every cell that fit in `max` (at most 64: the looks are paid
/// for in the width of every interval).
fn max_rounds_within(max: Duration, round: Duration) -> u32 {
    let n = max.as_secs_f64() / round.as_secs_f64().max(1e-9);
    (n.floor() as u32).clamp(1, 64)
}

/// Block size of the auto preset's offset ladder, and its largest zoom.
const LADDER_BS: u64 = 64 * KIB;
const ZOOM_BS: u64 = MIB;

/// Whether a block is larger than the ladder's: such cells form their own
/// noise class. Measured in a qemu guest (TCG, an nbd device), paired
/// differences of 256 KiB to 1 MiB writes varied by about 15 % from round
/// to round where those of 64 KiB and smaller varied by 1 to 3 %: a
/// variance pooled over both would make the large ones look precise.
pub fn large_block(block_size: u32) -> bool {
    u64::from(block_size) > LADDER_BS
}

/// The auto preset's first cells for one pattern at O_DIRECT alignment
/// `align`: the block-size curve at offset 0 (lbs, 4 KiB, 16 KiB, 64 KiB),
/// the ladder (every power-of-two offset below 64 KiB with 64 KiB blocks:
/// blocks at least as large as any unit it can bracket), and the 4 KiB and
/// 16 KiB rows at the first misaligned offset.
fn auto_cells(pattern: Pattern, align: u64) -> Vec<Cell> {
    let cell = |bs: u64, offset: u64| Cell {
        block_size: bs as u32,
        offset,
        pattern,
    };
    let mut v: Vec<Cell> = [align, 4 * KIB, 16 * KIB, LADDER_BS]
        .into_iter()
        .filter(|&bs| bs >= align && bs % align == 0)
        .map(|bs| cell(bs, 0))
        .collect();
    let ladder_bs = LADDER_BS.max(2 * align);
    v.push(cell(ladder_bs, 0));
    let mut off = align;
    while off < ladder_bs {
        v.push(cell(ladder_bs, off));
        off *= 2;
    }
    for bs in [4 * KIB, 16 * KIB] {
        if bs > align && bs % align == 0 {
            v.push(cell(bs, align));
        }
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// The zoom: at every power of two `o` from the ladder's block size up to
/// 512 KiB, blocks of 2 × o at offset o against the same blocks at offset
/// 0, so units up to 1 MiB are bracketed. A block of 2 × o at o covers
/// whole units when the unit divides o and cuts one at each end when the
/// unit is 2 × o: a partial unit is a third of the request or more, at
/// every step, where one block size for all would dilute it in the larger
/// steps (and a 1 MiB write moves 8 to 16 times the bytes of these). 1 MiB
/// at offset 0 is among the first cells: against 64 KiB it tells whether
/// the unit is larger than the ladder can see.
fn zoom_cells(pattern: Pattern, align: u64) -> Vec<Cell> {
    let mut v = Vec::new();
    let mut off = LADDER_BS.max(2 * align);
    while off < ZOOM_BS {
        let block_size = (2 * off) as u32;
        for offset in [0, off] {
            if !(offset == 0 && u64::from(block_size) == ZOOM_BS) {
                v.push(Cell {
                    block_size,
                    offset,
                    pattern,
                });
            }
        }
        off *= 2;
    }
    v
}

/// The cross product of block sizes, offsets and patterns.
fn cross(patterns: &[Pattern], block_sizes: &[u64], offsets: &[u64]) -> Vec<Cell> {
    let mut cells = Vec::new();
    for &pattern in patterns {
        for &bs in block_sizes {
            for &offset in offsets {
                cells.push(Cell {
                    block_size: bs as u32,
                    offset,
                    pattern,
                });
            }
        }
    }
    cells
}

/// The patterns asked for, or randread (plus randwrite with --write).
fn patterns(req: &GridRequest) -> Result<Vec<Pattern>, GridError> {
    let patterns = req.patterns.clone().unwrap_or_else(|| {
        if req.write {
            vec![Pattern::Randread, Pattern::Randwrite]
        } else {
            vec![Pattern::Randread]
        }
    });
    if patterns.is_empty() {
        return Err(GridError::NoPattern);
    }
    if let Some(p) = patterns.iter().find(|p| p.is_write()) {
        if !req.write {
            return Err(GridError::WriteNotAllowed(*p));
        }
    }
    if req.fdatasync && !patterns.iter().any(|p| p.is_write()) {
        return Err(GridError::FdatasyncWithoutWrite);
    }
    Ok(patterns)
}

/// Every cell must be one O_DIRECT can do.
fn check_cells(cells: &[Cell], direct: bool, align: u64, rule: DioRule) -> Result<(), GridError> {
    for c in cells {
        let bs = u64::from(c.block_size);
        if bs == 0 || bs > 64 * MIB {
            return Err(GridError::BlockSize(bs));
        }
        if direct && bs % align != 0 {
            return Err(GridError::BlockSizeNotDirect { bs, align, rule });
        }
        if direct && c.offset % align != 0 {
            return Err(GridError::OffsetNotDirect {
                off: c.offset,
                align,
                rule,
            });
        }
    }
    Ok(())
}

/// The random-I/O unit for `cells` (a power of two above every offset and
/// at least every block size) when the target holds a few slots of it.
fn unit_for(cells: &[Cell], size: u64) -> Result<u64, GridError> {
    let max_bs = cells.iter().map(|c| u64::from(c.block_size)).max();
    let max_bs = max_bs.ok_or(GridError::NoBlockSize)?;
    let max_off = cells.iter().map(|c| c.offset).max().unwrap_or(0);
    // In u128: an offset near 2^64 (`--offsets 7745454T`) must be refused
    // as too large for the target, not overflow (found by the fuzzer).
    let unit = (u128::from(max_off) + 1)
        .next_power_of_two()
        .max(u128::from(max_bs).next_power_of_two());
    // At least a few slots per cell, so random I/O has somewhere to go.
    let needed = u128::from(max_off) + u128::from(max_bs) + 3 * unit;
    if u128::from(size) < needed {
        return Err(GridError::TooSmall {
            size,
            max_off,
            max_bs,
            needed: u64::try_from(needed).unwrap_or(u64::MAX),
        });
    }
    // needed <= size, so the unit fits.
    Ok(unit as u64)
}

/// Build the plan, or say which rule a requested cell breaks.
pub fn lay_out(req: &GridRequest, c: &Constraints) -> Result<Grid, GridError> {
    let direct = !req.buffered;
    let align = if direct {
        u64::from(c.dio_offset_align.max(1))
    } else {
        u64::from(c.logical_block_size.max(1))
    };
    let patterns = patterns(req)?;
    if req.qd == 0 || req.qd > 4096 {
        return Err(GridError::QueueDepth(req.qd));
    }
    if req.jobs == 0 || req.jobs > 256 {
        return Err(GridError::Jobs(req.jobs));
    }
    let adaptive = req.preset == Preset::Auto && req.block_sizes.is_none() && req.offsets.is_none();
    let (cells, zoom) = if adaptive {
        let first: Vec<Cell> = patterns
            .iter()
            .flat_map(|&p| auto_cells(p, align))
            .collect();
        let big: Vec<Cell> = patterns
            .iter()
            .map(|&pattern| Cell {
                block_size: ZOOM_BS as u32,
                offset: 0,
                pattern,
            })
            .collect();
        let zoom: Vec<Cell> = patterns
            .iter()
            .flat_map(|&p| zoom_cells(p, align))
            .collect();
        let all: Vec<Cell> = first.iter().chain(&big).chain(&zoom).copied().collect();
        // A target too small for the zoom still gets the ladder.
        if unit_for(&all, c.size_bytes).is_ok() {
            (first.into_iter().chain(big).collect(), zoom)
        } else {
            (first, Vec::new())
        }
    } else {
        // Auto with --bs or --offsets: the standard grid's defaults for
        // what was not given.
        let preset = match req.preset {
            Preset::Auto => Preset::Standard,
            p => p,
        };
        let mut block_sizes = req
            .block_sizes
            .clone()
            .unwrap_or_else(|| default_block_sizes(preset, align));
        block_sizes.sort_unstable();
        block_sizes.dedup();
        if block_sizes.is_empty() {
            return Err(GridError::NoBlockSize);
        }
        let mut offsets = req
            .offsets
            .clone()
            .unwrap_or_else(|| default_offsets(preset, align, u64::from(c.physical_block_size)));
        offsets.sort_unstable();
        offsets.dedup();
        if !offsets.contains(&0) {
            // Every comparison is against the aligned cell.
            offsets.insert(0, 0);
        }
        (cross(&patterns, &block_sizes, &offsets), Vec::new())
    };
    let all: Vec<Cell> = cells.iter().chain(&zoom).copied().collect();
    check_cells(&all, direct, align, c.dio_rule)?;
    let unit = unit_for(&all, c.size_bytes)?;
    let focus = if adaptive {
        focus_cells(&all, align, unit)
    } else {
        Vec::new()
    };
    let (runtime, warmup, rounds, min_rounds) = preset_timing(req.preset);
    let runtime = req.runtime.unwrap_or(runtime);
    if runtime < Duration::from_millis(10) {
        return Err(GridError::Runtime);
    }
    let rounds = req.rounds.unwrap_or(rounds);
    if rounds == 0 {
        return Err(GridError::Rounds);
    }
    let min_effect = req.min_effect.unwrap_or(DEFAULT_MIN_EFFECT);
    if !(min_effect > 0.0 && min_effect < 1.0) {
        return Err(GridError::MinEffect(format!("{}", min_effect * 100.0)));
    }
    let warmup = req.warmup.unwrap_or(warmup);
    let round = (runtime + warmup) * cells.len() as u32;
    if let Some(max) = req.max_time.filter(|&m| m < round) {
        return Err(GridError::MaxTime {
            max,
            round,
            cells: cells.len(),
        });
    }
    // With a budget and no --rounds, the budget bounds the rounds: as many
    // as fit if every cell ran in every round (later rounds run fewer).
    let rounds = match (req.max_time, req.rounds) {
        (Some(max), None) => rounds.max(max_rounds_within(max, round)),
        _ => rounds,
    };
    Ok(Grid {
        preset: req.preset,
        cells,
        zoom,
        focus,
        unit,
        rounds,
        min_rounds: rounds.min(min_rounds),
        runtime,
        max_runtime: (runtime * 10).max(Duration::from_secs(2)),
        min_completions: u64::from(req.qd) * 4,
        min_effect,
        max_time: req.max_time,
        warmup,
        qd: req.qd,
        jobs: req.jobs,
        direct,
        fdatasync: req.fdatasync,
        seed: req.seed,
    })
}

/// The units a focus row (`probe::focus`: blocks of twice the unit, at
/// offset 0, at odd multiples of half the unit and at multiples of it) is
/// made for: from 8 KiB (a 4 KiB unit is
/// bracketed by the plan's own rows) to the ladder's block.
pub const FOCUS_UNITS: [u64; 4] = [8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB];
/// The unit whose focus row serves the search for a small penalty before
/// any unit is named: the ladder's block, which every unit up to it
/// pays in (`adaptive`).
pub const FOCUS_SEARCH: u64 = 64 * KIB;
/// Offsets of each kind in a focus row.
const FOCUS_REPLICATES: u64 = 4;
/// The focus row of `unit` for `pattern`.
pub fn focus_row(pattern: Pattern, unit: u64) -> Vec<Cell> {
    let block = (2 * unit).min(FOCUS_SEARCH).max(unit);
    let cell = |offset| Cell {
        block_size: block as u32,
        offset,
        pattern,
    };
    let mut v = vec![cell(0)];
    for k in 0..FOCUS_REPLICATES {
        v.push(cell(unit / 2 + k * unit));
        if k > 0 {
            v.push(cell(k * unit));
        }
    }
    v
}

/// Every focus cell a plan of `cells` may ask (those it has already left
/// out), for every unit of [`FOCUS_UNITS`] whose row is O_DIRECT-able at
/// `align` and fits below the plan's I/O spacing `spacing`.
pub fn focus_cells(cells: &[Cell], align: u64, spacing: u64) -> Vec<Cell> {
    let mut patterns: Vec<Pattern> = cells.iter().map(|c| c.pattern).collect();
    patterns.sort_unstable();
    patterns.dedup();
    let mut v: Vec<Cell> = patterns
        .iter()
        .flat_map(|&p| FOCUS_UNITS.iter().flat_map(move |&u| focus_row(p, u)))
        .filter(|c| c.offset % align == 0 && u64::from(c.block_size) % align == 0)
        .filter(|c| c.offset + u64::from(c.block_size) <= spacing)
        .filter(|c| !cells.contains(c))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> GridRequest {
        GridRequest {
            preset: Preset::Standard,
            block_sizes: None,
            offsets: None,
            patterns: None,
            write: false,
            runtime: None,
            warmup: None,
            rounds: None,
            min_effect: None,
            max_time: None,
            qd: 32,
            jobs: 1,
            buffered: false,
            fdatasync: false,
            seed: 1,
        }
    }

    fn constraints(lbs: u32, pbs: u32) -> Constraints {
        Constraints {
            logical_block_size: lbs,
            physical_block_size: pbs,
            size_bytes: 1 << 30,
            dio_offset_align: lbs,
            dio_rule: DioRule::LogicalBlockSize,
        }
    }

    #[test]
    fn standard_grid_at_512() {
        let p = lay_out(&req(), &constraints(512, 512)).unwrap();
        assert_eq!(
            p.block_sizes(),
            vec![512, 1024, 2048, 4096, 8192, 16384, 32768, 65536]
        );
        let mut want: Vec<u64> = (0..4096).step_by(512).collect();
        want.extend([4096, 4608, 65024, 1048064]);
        assert_eq!(p.offsets(), want);
        assert_eq!(p.unit, MIB);
        assert_eq!(p.patterns(), vec![Pattern::Randread]);
        assert_eq!(p.cells.len(), 8 * 12);
    }

    #[test]
    fn standard_grid_at_4kn_is_clipped() {
        let p = lay_out(&req(), &constraints(4096, 4096)).unwrap();
        assert_eq!(p.block_sizes()[0], 4096);
        assert_eq!(p.offsets(), vec![0, 4096, 8192, 61440, 1044480]);
    }

    #[test]
    fn quick_is_small_and_write_adds_randwrite() {
        let r = GridRequest {
            preset: Preset::Quick,
            write: true,
            ..req()
        };
        let p = lay_out(&r, &constraints(512, 4096)).unwrap();
        assert_eq!(p.block_sizes(), vec![512, 4096, 65536]);
        assert_eq!(p.offsets(), vec![0, 512, 2048, 3584, 4096, 4608]);
        assert_eq!(p.patterns(), vec![Pattern::Randread, Pattern::Randwrite]);
        assert!(p.planned_time() < Duration::from_secs(60));
    }

    #[test]
    fn refusals_name_the_rule() {
        let r = GridRequest {
            offsets: Some(vec![256]),
            ..req()
        };
        let e = lay_out(&r, &constraints(512, 512)).unwrap_err();
        assert!(
            matches!(
                e,
                GridError::OffsetNotDirect {
                    off: 256,
                    align: 512,
                    ..
                }
            ),
            "{e}"
        );
        let e = e.to_string();
        assert!(
            e.contains("offset 256 is not a multiple of 512") && e.contains("O_DIRECT"),
            "{e}"
        );
        let r = GridRequest {
            offsets: Some(vec![512]),
            ..req()
        };
        let e = lay_out(&r, &constraints(4096, 4096)).unwrap_err();
        assert!(
            e.to_string()
                .contains("offset 512 is not a multiple of 4096"),
            "{e}"
        );
        // Buffered I/O has no such rule.
        let r = GridRequest {
            offsets: Some(vec![256]),
            buffered: true,
            ..req()
        };
        assert!(lay_out(&r, &constraints(512, 512)).is_ok());
        let r = GridRequest {
            patterns: Some(vec![Pattern::Randwrite]),
            ..req()
        };
        assert_eq!(
            lay_out(&r, &constraints(512, 512)).unwrap_err(),
            GridError::WriteNotAllowed(Pattern::Randwrite)
        );
        let small = Constraints {
            size_bytes: MIB,
            ..constraints(512, 512)
        };
        assert!(matches!(
            lay_out(&req(), &small),
            Err(GridError::TooSmall { size: MIB, .. })
        ));
    }

    #[test]
    fn rounds_shuffle_differently_but_keep_every_cell() {
        let p = lay_out(&req(), &constraints(512, 512)).unwrap();
        let row = |c: &Cell| (c.pattern, c.block_size);
        let (a, b) = (p.shuffled(&p.cells, 0, row), p.shuffled(&p.cells, 1, row));
        // A row's cells run one after another.
        let rows: Vec<(Pattern, u32)> = a.iter().map(row).collect();
        let mut changes = rows.windows(2).filter(|w| w[0] != w[1]).count();
        changes += 1;
        let mut distinct = rows.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(changes, distinct.len(), "{rows:?}");
        assert_ne!(a, b);
        let mut a2 = a.clone();
        a2.sort();
        let mut all = p.cells.clone();
        all.sort();
        assert_eq!(a2, all);
    }

    #[test]
    fn min_effect_and_the_budget_are_in_the_plan() {
        let c = constraints(512, 512);
        let p = lay_out(&req(), &c).unwrap();
        assert_eq!((p.min_effect, p.max_time), (DEFAULT_MIN_EFFECT, None));
        let round = (p.runtime + p.warmup) * p.cells.len() as u32;
        // A budget of 40 rounds, no --rounds: the rounds are what it holds.
        let r = GridRequest {
            min_effect: Some(0.05),
            max_time: Some(round * 40),
            ..req()
        };
        let q = lay_out(&r, &c).unwrap();
        assert_eq!(
            (q.min_effect, q.max_time, q.rounds),
            (0.05, Some(round * 40), 40)
        );
        // --rounds wins over the budget's count; the budget still stops it.
        let r = GridRequest {
            rounds: Some(4),
            ..r
        };
        assert_eq!(lay_out(&r, &c).unwrap().rounds, 4);
        for bad in [0.0, 1.0, -0.1, f64::NAN] {
            let r = GridRequest {
                min_effect: Some(bad),
                ..req()
            };
            assert!(
                matches!(lay_out(&r, &c), Err(GridError::MinEffect(_))),
                "{bad}"
            );
        }
        let r = GridRequest {
            max_time: Some(round / 2),
            ..req()
        };
        let e = lay_out(&r, &c).unwrap_err().to_string();
        assert!(e.contains("is shorter than one round of this plan"), "{e}");
    }
}
