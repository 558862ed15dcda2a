//! The probe report: what `--json`, `--csv` and the human table are made of.

use super::analyse::{CellReport, ContrastReport, Inference};
use super::engine::EngineKind;
use super::env::Environment;
use super::grid::Plan;
use super::target::TargetKind;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Clone, Debug, Serialize)]
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

#[derive(Clone, Debug, Serialize)]
pub struct EngineInfo {
    pub name: EngineKind,
    /// Why io_uring was not used, when it was asked for implicitly.
    pub fallback_reason: Option<String>,
    pub queue_depth: u32,
    pub jobs: u32,
    pub direct: bool,
    pub fdatasync: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct ProbeReport {
    pub target: TargetInfo,
    pub engine: EngineInfo,
    pub environment: Environment,
    pub plan: Plan,
    /// Rounds run (a comparison may have stopped earlier), whether the
    /// zoom ran, and whether the run was interrupted (Ctrl-C): then the
    /// report holds what was measured until then.
    pub rounds_run: u32,
    pub zoomed: bool,
    pub partial: bool,
    /// `--max-time` was spent before every comparison was decided.
    pub out_of_time: bool,
    /// Wall time of the measurements, in seconds.
    pub elapsed_s: f64,
    /// When the run started (seconds since the Unix epoch).
    pub started_unix: u64,
    pub cells: Vec<CellReport>,
    /// Every comparison, including block size against block size.
    pub contrasts: Vec<ContrastReport>,
    pub inference: Inference,
    /// With several targets: every target's own report (the first is the
    /// one above), and each further target's cells against the first's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetReport>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub versus: Vec<ContrastReport>,
}

/// One target of a run over several.
#[derive(Clone, Debug, Serialize)]
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
