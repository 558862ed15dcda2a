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
//! It takes each kind's own document (`check::document::CheckDoc`,
//! `probe::document::ProbeDoc`) and never `saved`: `saved` reads files,
//! tells their kinds apart and reads saved comparisons back, so it
//! imports this module (`saved::compare` dispatches), not the reverse.

pub mod check;
pub mod environment;
pub mod overall;
pub mod probe;
pub(crate) mod sentence;
pub mod watch;

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;

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

impl Comparison {
    /// Something differs: a cell significantly slower or faster, or a
    /// finding that appeared, disappeared or changed (exit status 1).
    pub fn differs(&self) -> bool {
        match self {
            Comparison::Probe(p) => p.differs(),
            Comparison::Check(c) => c.differs(),
            Comparison::Watch(w) => w.differs(),
        }
    }
}
