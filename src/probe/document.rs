//! A saved `probe` document (docs/json.md, `probe --json`) as `report`
//! and `compare` read it, or fio's results mapped onto the same cells
//! (`fio_results.rs`).
//!
//! Still a view of its own (issue 30): every field defaults, and it
//! repeats the shape of `report::ProbeReport` and `analyse`'s types,
//! which write the document and read it back too. It sits with the probe
//! so that `compare` and `report` take it from here, not from `saved`.

use crate::probe::engine::Pattern;
use crate::probe::sequential::{ContrastKind, Decision};
use serde::{Deserialize, Serialize};

/// Where the numbers come from: a diskalign probe (rounds are replicates)
/// or one fio pass (one figure per cell, no interval).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    #[default]
    Diskalign,
    Fio,
}

crate::spelled_as_serde!(Source);

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ProbeDoc {
    /// The file it was read from (not in the document).
    #[serde(skip)]
    pub name: String,
    #[serde(skip)]
    pub source: Source,
    pub diskalign_version: String,
    /// Where and when the run was made (empty in older documents and in
    /// fio's).
    pub host: String,
    pub started_at: String,
    pub target: TargetInfo,
    pub engine: Engine,
    pub environment: Environment,
    pub plan: Plan,
    pub rounds_run: u32,
    pub partial: bool,
    pub elapsed_s: f64,
    pub started_unix: u64,
    pub cells: Vec<Cell>,
    pub contrasts: Vec<Contrast>,
    pub inference: Inference,
    pub targets: Vec<TargetPart>,
    pub versus: Vec<Contrast>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct TargetInfo {
    pub path: String,
    pub kind: String,
    pub size_bytes: u64,
    pub logical_block_size: u64,
    pub physical_block_size: u64,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Engine {
    pub name: String,
    pub queue_depth: u32,
    pub jobs: u32,
    pub direct: bool,
    pub fdatasync: bool,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Environment {
    pub diskalign_version: String,
    pub kernel: String,
    pub arch: String,
    pub cpu_model: Option<String>,
    pub cpus: u64,
    pub cpu_governor: Option<String>,
    pub disk: Option<String>,
    pub model: Option<String>,
    pub firmware: Option<String>,
    pub transport: Option<String>,
    pub rotational: Option<bool>,
    pub scheduler: Option<String>,
    pub topology: Option<crate::check::document::Limits>,
    pub node_block_size: Option<u64>,
    pub filesystem: Option<Filesystem>,
    /// The USB bridge (`vendor_id:product_id product`), when recorded.
    pub usb_bridge: Option<String>,
    /// A loop device's direct I/O, backing file and its filesystem type.
    pub loop_direct_io: Option<bool>,
    pub loop_backing_file: Option<String>,
    pub loop_backing_fs: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Filesystem {
    pub fs_type: String,
    pub mount_point: String,
    pub source: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Plan {
    pub preset: String,
    pub rounds: u32,
    pub runtime: f64,
    pub min_effect: f64,
    pub qd: u32,
    pub jobs: u32,
    pub direct: bool,
    pub seed: u64,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Estimate {
    pub median: f64,
    pub geo_mean: f64,
    /// Absent (null) for one fio pass.
    pub ci95: Option<[f64; 2]>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Latency {
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq)]
pub struct Relative {
    pub ratio: f64,
    pub ci95: [f64; 2],
    #[serde(default)]
    pub p_adjusted: f64,
    #[serde(default)]
    pub significant: bool,
    pub decision: Decision,
    #[serde(default)]
    pub rounds: usize,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Cell {
    pub block_size: u64,
    pub offset: u64,
    pub pattern: Pattern,
    #[serde(default)]
    pub iops: Estimate,
    #[serde(default)]
    pub mib_s: Estimate,
    #[serde(default)]
    pub lat_us: Latency,
    /// IOPS of each round (one figure for fio).
    #[serde(default)]
    pub rounds: Vec<f64>,
    #[serde(default)]
    pub relative: Option<Relative>,
}

impl Cell {
    /// The cell's place in the grid.
    pub fn key(&self) -> (Pattern, u64, u64) {
        (self.pattern, self.block_size, self.offset)
    }
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Contrast {
    pub kind: ContrastKind,
    #[serde(default)]
    pub target: usize,
    #[serde(default)]
    pub reference_target: usize,
    pub pattern: Pattern,
    pub block_size: u64,
    pub offset: u64,
    #[serde(default)]
    pub reference_block_size: u64,
    #[serde(default)]
    pub reference_offset: u64,
    #[serde(flatten)]
    pub relative: Relative,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Inference {
    pub effective_unit_bytes: Option<u64>,
    pub confidence: String,
    pub statement: String,
    pub summary: String,
    pub penalties: Vec<Penalty>,
    pub noise: Vec<Noise>,
    pub advice: Option<String>,
    pub undecided: usize,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Penalty {
    pub pattern: Pattern,
    pub block_size: u64,
    pub kind: ContrastKind,
    #[serde(default)]
    pub worst_offset: u64,
    #[serde(default)]
    pub offsets: Vec<u64>,
    #[serde(default)]
    pub slower_pct: f64,
    #[serde(default)]
    pub ci95_pct: [f64; 2],
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Noise {
    pub pattern: Pattern,
    #[serde(default)]
    pub paired_sd_pct: f64,
    #[serde(default)]
    pub detectable_pct: f64,
}

/// One target's own part of a run over several.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct TargetPart {
    pub target: TargetInfo,
    pub environment: Environment,
    pub cells: Vec<Cell>,
    pub contrasts: Vec<Contrast>,
    pub inference: Inference,
}

impl ProbeDoc {
    /// The probe document `value`, read from the file `name`.
    pub fn read(value: &serde_json::Value, name: &str) -> Result<ProbeDoc, serde_json::Error> {
        let mut doc = ProbeDoc::deserialize(value)?;
        doc.name = name.to_string();
        Ok(doc)
    }

    /// Every target's part: the one of a single-target run, or each of
    /// `targets` in the order given.
    pub fn parts(&self) -> Vec<TargetPart> {
        if !self.targets.is_empty() {
            return self.targets.clone();
        }
        vec![TargetPart {
            target: self.target.clone(),
            environment: self.environment.clone(),
            cells: self.cells.clone(),
            contrasts: self.contrasts.clone(),
            inference: self.inference.clone(),
        }]
    }

    /// Whether its rounds are replicates (a diskalign run with at least
    /// two rounds); one fio pass is not.
    pub fn has_replicates(&self) -> bool {
        self.source == Source::Diskalign
            && self
                .cells
                .iter()
                .chain(self.targets.iter().flat_map(|t| &t.cells))
                .any(|c| c.rounds.len() > 1)
    }
}

/// The patterns, block sizes and offsets a set of cells spans, sorted.
pub fn axes(cells: &[Cell]) -> (Vec<Pattern>, Vec<u64>, Vec<u64>) {
    let mut patterns: Vec<Pattern> = cells.iter().map(|c| c.pattern).collect();
    let mut sizes: Vec<u64> = cells.iter().map(|c| c.block_size).collect();
    let mut offsets: Vec<u64> = cells.iter().map(|c| c.offset).collect();
    for v in [&mut sizes, &mut offsets] {
        v.sort_unstable();
        v.dedup();
    }
    patterns.sort_unstable();
    patterns.dedup();
    (patterns, sizes, offsets)
}
