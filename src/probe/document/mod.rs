//! The document: what a run produced, as `--json` writes it and
//! `report`, `compare` and `saved` read it back. The run and each target
//! of several ([`outcome`]), the saved document with its header, file
//! name and producer ([`probe_doc`]), and fio's results for an
//! `--emit-fio` job file read as a probe document's body
//! ([`fio_results`]).
//!
//! The top of the probe's folders: it holds what the others made (the
//! grid and environment of [`super::measure`], the results of
//! [`super::infer`], the pacing of [`super::steer`]), and none of them
//! imports it.

mod fio_results;
mod outcome;
mod probe_doc;

pub use fio_results::{FioDoc, NO_REPLICATES};
pub use outcome::{ProbeRun, ProbedTarget, TargetInfo};
pub use probe_doc::{axes, ProbeDoc, Producer};

pub(super) use outcome::EngineInfo;

#[cfg(test)]
pub(crate) use probe_doc::fixtures;
