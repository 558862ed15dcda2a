//! The probe report: what `--json`, `--csv` and the human table are made of.

use crate::probe::infer::{CellReport, ContrastReport, Inference};
use crate::probe::measure::EngineKind;
use crate::probe::measure::Environment;
use crate::probe::measure::Grid;
use crate::probe::measure::TargetKind;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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
    pub dio_rule: crate::probe::measure::DioRule,
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
pub struct ProbeRun {
    pub target: TargetInfo,
    pub engine: EngineInfo,
    pub environment: Environment,
    pub plan: Grid,
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
    pub pacing: crate::probe::steer::Pacing,
    /// Wall time of the measurements, in seconds.
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
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
    pub targets: Vec<ProbedTarget>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub versus: Vec<ContrastReport>,
    /// `--erase-unit`: the erase-unit search's answer (the cells above are
    /// its reads; `inference` carries its statement and confidence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erase_unit: Option<crate::probe::EraseUnit>,
}

/// One target of a run over several.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProbedTarget {
    pub target: TargetInfo,
    pub environment: Environment,
    pub cells: Vec<CellReport>,
    pub contrasts: Vec<ContrastReport>,
    pub inference: Inference,
}

impl ProbeRun {
    /// Some target's verdict leaves a penalty of `min_effect` open: the
    /// noise was too large to rule it out, or a unit was named without a
    /// penalty decided (exit bit 4).
    pub fn inconclusive(&self) -> bool {
        if let Some(e) = &self.erase_unit {
            return e.open();
        }
        self.inference.leaves_penalty_open()
            || self
                .targets
                .iter()
                .any(|t| t.inference.leaves_penalty_open())
    }

    /// The exit bits of the verdict: 1 a penalty, 4 inconclusive.
    pub fn exit_bits(&self) -> u8 {
        u8::from(self.has_penalty()) | (4 * u8::from(self.inconclusive()))
    }

    /// Some misaligned cell was significantly slower than aligned.
    pub fn has_penalty(&self) -> bool {
        if let Some(e) = &self.erase_unit {
            return e.found();
        }
        !self.inference.penalties.is_empty()
            || self
                .targets
                .iter()
                .any(|t| !t.inference.penalties.is_empty())
    }
}
