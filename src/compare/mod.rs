//! `diskalign compare A.json B.json`: two saved runs side by side.
//!
//! - Two probe runs (or a probe run and fio's results for its job file, or
//!   two fio runs): for each cell both measured, the IOPS ratio B/A with
//!   its 95 % interval from the rounds, tested and corrected over the
//!   cells compared; the environment differences first, since they often
//!   explain everything; cells present in only one run are named.
//! - Two check runs: the findings that appeared, disappeared or changed,
//!   per target, partition and layer.
//! - Two watch runs: each device and direction's shares side by side, and
//!   the findings that appeared, disappeared or changed.
//!
//! The result is data (this module); `report` renders it as text, JSON,
//! CSV and HTML. The JSON document is `diskalign.compare` (docs/json.md).
//!
//! It takes each kind's own document (`check::CheckDoc`,
//! `probe::ProbeDoc`) and never `saved`: `saved` reads files,
//! tells their kinds apart and reads saved comparisons back, so it
//! imports this module (`saved::compare` dispatches), not the reverse.

mod check;
mod environment;
mod overall;
mod probe;
mod sentence;
mod watch;

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;

/// Two check runs, finding by finding.
pub use check::{compare_checks, Change, FindingChange, TargetChange};
/// What differs between the two runs' machines.
pub use environment::EnvField;
/// Two probe runs: the overall ratio.
pub use overall::compare_probes;
/// Two probe runs, cell by cell.
pub use probe::{CellKey, CellRatio, Decision, OnlyIn, ScopeRatio};
/// Two watch runs, device by device.
pub use watch::{compare_watches, DeviceChange, SubmitterChange};

use serde::{Deserialize, Serialize};

pub use check::CheckComparison;
pub use probe::ProbeComparison;
pub use watch::WatchComparison;

/// The result of comparing two saved runs.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
// One comparison per command: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum Comparison {
    Probe(ProbeComparison),
    Check(CheckComparison),
    Watch(WatchComparison),
}

/// Which run, as the comparison names it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct RunInfo {
    /// The file it was read from.
    pub file: String,
    /// `check`, `probe` or `fio`.
    pub source: String,
    /// When it ran (seconds since the Unix epoch; 0 when unknown).
    pub started_unix: u64,
    /// The host it ran on (empty when the document does not say).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host: String,
}

/// Why two documents cannot be compared.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CompareError {
    #[error("cannot compare a {a} run with a {b} run: both must be probe runs (or fio results), both check runs or both watch runs")]
    Kinds { a: &'static str, b: &'static str },
}

/// How B compares with A, in numbers a fleet can act on: what got better,
/// what got worse, what stayed, and the exit status that follows. What is
/// counted is each kind's unit: targets for check runs (their status),
/// cells for probe runs (B/A decided faster or slower), findings for
/// watch runs (appeared, disappeared, their severity).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct Outcome {
    pub improved: usize,
    pub regressed: usize,
    pub unchanged: usize,
    /// 0 the same; bit 1 something differs; bit 4 B is worse than A
    /// (something regressed); 2 (cannot compare) is the command's alone.
    pub exit_status: u8,
}

/// The exit bit of a comparison where B is worse than A.
pub const WORSE: u8 = 4;

impl Outcome {
    /// Whether B is worse than A (the exit bit `WORSE`).
    pub fn worse(&self) -> bool {
        self.exit_status & WORSE != 0
    }

    /// The counts, and the exit status from them and whether anything
    /// differs at all (a finding reworded differs, and is unchanged).
    pub fn new(improved: usize, regressed: usize, unchanged: usize, differs: bool) -> Outcome {
        Outcome {
            improved,
            regressed,
            unchanged,
            exit_status: u8::from(differs || improved + regressed > 0)
                | if regressed > 0 { WORSE } else { 0 },
        }
    }
}

impl Comparison {
    /// Something differs: a cell significantly slower or faster, or a
    /// finding that appeared, disappeared or changed (exit status 1).
    pub fn differs(&self) -> bool {
        self.outcome().exit_status & 1 != 0
    }

    /// What got better and worse, and the exit status.
    pub fn outcome(&self) -> Outcome {
        match self {
            Comparison::Probe(p) => p.outcome,
            Comparison::Check(c) => c.outcome,
            Comparison::Watch(w) => w.outcome,
        }
    }

    /// What the outcome counts: a probe run's cells, a check run's
    /// targets, a watch run's findings.
    pub fn counted(&self) -> &'static str {
        match self {
            Comparison::Probe(_) => "cells",
            Comparison::Check(_) => "targets",
            Comparison::Watch(_) => "findings",
        }
    }
}
