//! Measuring: what the probe times and how. The target and whether it
//! may be written ([`target`], [`safety`], [`filled`]: do its reads reach
//! the device), the grid of cells ([`grid`]), the I/O engines
//! ([`engine`]) and the rounds that run the cells on them ([`run`]), the
//! environment a result was measured in ([`env`]), and the fio job file
//! of the same grid ([`fio`]).
//!
//! The lowest of the probe's folders: it imports nothing of the others
//! (but the serde helpers beside them); inference, steering and the
//! document read its cells, samples and grid.

mod engine;
mod env;
mod filled;
mod fio;
mod grid;
mod run;
mod safety;
mod target;

pub use engine::{by_name, EngineKind, Pattern, ENGINES};
pub use env::Environment;
pub use grid::{
    budget, lay_out, Cell, Constraints, DioRule, Grid, GridRequest, Preset, DEFAULT_MIN_EFFECT,
};

pub(super) use env::record;
pub(super) use fio::{job_file, File as JobFile};
pub(super) use grid::{focus_row, large_block, GridError, FOCUS_SEARCH, FOCUS_UNITS};
pub(super) use run::{CellSamples, Key, Runner};
pub(super) use safety::zoned_refusal;
pub(super) use target::{open, scratch_constraints, Access, ProbeTarget, TargetKind};

#[cfg(test)]
pub(super) use engine::new_histogram;
#[cfg(test)]
pub(super) use grid::focus_cells;
#[cfg(test)]
pub(super) use run::{RoundSample, Window};
