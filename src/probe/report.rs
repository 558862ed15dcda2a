//! The probe report: what `--json`, `--csv` and the human table are made of.

use super::analyse::{CellReport, ContrastReport, Inference};
use super::engine::EngineKind;
use super::env::Environment;
use super::grid::Plan;
use super::target::TargetKind;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetInfo {
    pub path: PathBuf,
    pub kind: TargetKind,
    pub size_bytes: u64,
    pub logical_block_size: u32,
    pub physical_block_size: u32,
    /// O_DIRECT offsets and lengths must be multiples of this.
    pub dio_offset_align: u32,
    /// `statx STATX_DIOALIGN` or `logical block size`.
    pub dio_rule: super::grid::DioRule,
    /// BLKBSZGET of the device node (partitions and disks only).
    pub node_block_size: Option<u32>,
}

/// The engine that measured: one of ours, or the one an external tool
/// names (fio's results: `fio-3.36`). Written as the bare name either way.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EngineName {
    Ours(EngineKind),
    Other(String),
}

impl From<EngineKind> for EngineName {
    fn from(kind: EngineKind) -> EngineName {
        EngineName::Ours(kind)
    }
}

impl EngineName {
    pub fn as_str(&self) -> &str {
        match self {
            EngineName::Ours(kind) => kind.as_str(),
            EngineName::Other(name) => name,
        }
    }
}

impl std::fmt::Display for EngineName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EngineInfo {
    pub name: EngineName,
    /// Why io_uring was not used, when it was asked for implicitly.
    pub fallback_reason: Option<String>,
    pub queue_depth: u32,
    pub jobs: u32,
    pub direct: bool,
    pub fdatasync: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProbeReport {
    pub target: TargetInfo,
    pub engine: EngineInfo,
    pub environment: Environment,
    pub plan: Plan,
    /// Rounds run (a comparison may have stopped earlier), whether the
    /// zoom ran, and whether the run was interrupted (Ctrl-C): then the
    /// report holds what was measured until then.
    pub rounds_run: u32,
    #[serde(default)]
    pub zoomed: bool,
    pub partial: bool,
    /// `--max-time` was spent before every comparison was decided.
    #[serde(default)]
    pub out_of_time: bool,
    /// How the run spent its rounds: the windows it chose, the unit it
    /// focused on, the rounds it set aside, and why.
    #[serde(default)]
    pub pacing: super::pacing::Pacing,
    /// Wall time of the measurements, in seconds.
    #[serde(default, deserialize_with = "crate::probe::report::f64_or_nan")]
    pub elapsed_s: f64,
    /// When the run started (seconds since the Unix epoch).
    #[serde(default)]
    pub started_unix: u64,
    pub cells: Vec<CellReport>,
    /// Every comparison, including block size against block size.
    pub contrasts: Vec<ContrastReport>,
    pub inference: Inference,
    /// With several targets: every target's own report (the first is the
    /// one above), and each further target's cells against the first's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetReport>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versus: Vec<ContrastReport>,
}

/// One target of a run over several.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetReport {
    pub target: TargetInfo,
    pub environment: Environment,
    pub cells: Vec<CellReport>,
    pub contrasts: Vec<ContrastReport>,
    pub inference: Inference,
}

impl ProbeReport {
    /// Some target's verdict is `inconclusive`: the noise was too large to
    /// rule out a penalty of `min_effect` (exit bit 4).
    pub fn inconclusive(&self) -> bool {
        use super::analyse::Confidence::Inconclusive;
        self.inference.confidence == Inconclusive
            || self
                .targets
                .iter()
                .any(|t| t.inference.confidence == Inconclusive)
    }

    /// Some misaligned cell was significantly slower than aligned.
    pub fn has_penalty(&self) -> bool {
        !self.inference.penalties.is_empty()
            || self
                .targets
                .iter()
                .any(|t| !t.inference.penalties.is_empty())
    }
}

// How the probe document reads back (`saved`): the types above and in
// `analyse`, `grid` and `unitfit` write it and read it, with these for
// what serde cannot take as written.

/// A figure JSON holds as null: serde_json writes a NaN or an infinite
/// value (an interval of one round) as null, so it reads back as NaN.
pub fn f64_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// No interval: what a missing `ci95` reads as, like a null one.
pub fn nan_pair() -> [f64; 2] {
    [f64::NAN; 2]
}

/// An interval whose ends may be null (see `f64_or_nan`).
pub fn pair_or_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<[f64; 2], D::Error> {
    let [lo, hi] = <[Option<f64>; 2]>::deserialize(d)?;
    Ok([lo.unwrap_or(f64::NAN), hi.unwrap_or(f64::NAN)])
}

/// A duration written in seconds (`grid::Plan`).
pub fn secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = f64::deserialize(d)?;
    Duration::try_from_secs_f64(s).map_err(serde::de::Error::custom)
}

/// An optional duration in seconds, null for none.
pub fn opt_secs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    match Option::<f64>::deserialize(d)? {
        Some(s) => Duration::try_from_secs_f64(s)
            .map(Some)
            .map_err(serde::de::Error::custom),
        None => Ok(None),
    }
}
