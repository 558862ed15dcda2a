//! fio's JSON output (`fio --output-format=json`) for the job file of
//! `probe --emit-fio`, mapped back to the grid by job name: a section
//! `randread-4096-at-512` (or `t2-randread-4096-at-512` for the second of
//! several targets) is the cell (randread, 4096, 512). One fio pass has no
//! replicates: each cell gets one figure and no interval.

use super::document::{Cell, Estimate, Latency, ProbeDoc, Source, TargetPart};
use crate::probe::engine::Pattern;
use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct FioDoc {
    #[serde(rename = "fio version")]
    pub version: String,
    pub timestamp: u64,
    #[serde(rename = "global options")]
    pub global: serde_json::Map<String, serde_json::Value>,
    pub jobs: Vec<Job>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Job {
    pub jobname: String,
    pub error: i64,
    #[serde(rename = "job options")]
    pub options: serde_json::Map<String, serde_json::Value>,
    pub read: Side,
    pub write: Side,
}

impl Job {
    fn filename(&self) -> Option<&str> {
        self.options.get("filename")?.as_str()
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Side {
    pub iops: f64,
    pub bw_bytes: f64,
    pub total_ios: u64,
    pub clat_ns: Clat,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Clat {
    pub max: f64,
    pub percentile: std::collections::BTreeMap<String, f64>,
}

/// `t2-randwrite-4096-at-512` → (target index 1, the cell's key).
pub fn parse_job_name(name: &str) -> Option<(usize, Pattern, u64, u64)> {
    let (target, rest) = match name.split_once('-') {
        Some((t, rest)) if t.starts_with('t') && t[1..].parse::<usize>().is_ok() => {
            (t[1..].parse::<usize>().ok()?.checked_sub(1)?, rest)
        }
        _ => (0, name),
    };
    let (head, offset) = rest.rsplit_once("-at-")?;
    let (pattern, bs) = head.rsplit_once('-')?;
    let pattern = <Pattern as clap::ValueEnum>::from_str(pattern, false).ok()?;
    Some((target, pattern, bs.parse().ok()?, offset.parse().ok()?))
}

/// What a report says of a fio run instead of an interval.
pub const NO_REPLICATES: &str =
    "one fio pass: one figure per cell and no replicates, so no confidence interval and no test";

fn percentile(c: &Clat, p: &str) -> f64 {
    c.percentile.get(p).copied().unwrap_or(0.0) / 1000.0
}

/// The cell one fio job measured; `None` for a job that is not one of
/// ours, failed, or did no I/O.
fn cell_of(job: &Job) -> Option<(usize, Cell, Option<&str>)> {
    let (target, pattern, block_size, offset) = parse_job_name(&job.jobname)?;
    let side = if pattern.is_write() {
        &job.write
    } else {
        &job.read
    };
    if job.error != 0 || side.total_ios == 0 {
        return None;
    }
    let one = |x: f64| Estimate {
        median: x,
        geo_mean: x,
        ci95: None,
    };
    let cell = Cell {
        block_size,
        offset,
        pattern,
        iops: one(side.iops),
        mib_s: one(side.bw_bytes / (1024.0 * 1024.0)),
        lat_us: Latency {
            p50: percentile(&side.clat_ns, "50.000000"),
            p99: percentile(&side.clat_ns, "99.000000"),
            p999: percentile(&side.clat_ns, "99.900000"),
            max: side.clat_ns.max / 1000.0,
        },
        rounds: vec![side.iops],
        relative: None,
    };
    Some((target, cell, job.filename()))
}

impl FioDoc {
    /// fio's JSON `value`, read from the file `name`, as a probe document.
    pub fn read(value: &serde_json::Value, name: &str) -> Result<ProbeDoc, serde_json::Error> {
        Ok(FioDoc::deserialize(value)?.into_probe(name))
    }

    /// The jobs as a probe document: one part per target, cells in the
    /// job file's order, each with one round and no interval.
    pub fn into_probe(self, name: &str) -> ProbeDoc {
        let mut parts: Vec<TargetPart> = Vec::new();
        let global = self.global.get("filename").and_then(|v| v.as_str());
        for (t, cell, filename) in self.jobs.iter().filter_map(cell_of) {
            // At most one part per job: a made-up `t999999-` cannot
            // allocate more than the file already holds.
            if t > self.jobs.len() {
                continue;
            }
            while parts.len() <= t {
                parts.push(TargetPart::default());
            }
            let p = &mut parts[t];
            if p.target.path.is_empty() {
                p.target.path = filename.or(global).unwrap_or_default().to_string();
            }
            p.cells.push(cell);
        }
        for p in &mut parts {
            p.inference.summary = NO_REPLICATES.into();
        }
        let mut doc = ProbeDoc {
            name: name.to_string(),
            source: Source::Fio,
            diskalign_version: String::new(),
            started_unix: self.timestamp,
            rounds_run: 1,
            ..ProbeDoc::default()
        };
        // fio spells its version `fio-3.36`: keep it as it is.
        doc.engine.name = match self.version.starts_with("fio") {
            true => self.version.clone(),
            false => format!("fio {}", self.version),
        };
        if let Some(first) = parts.first() {
            doc.target = first.target.clone();
            doc.cells = first.cells.clone();
            doc.inference = first.inference.clone();
        }
        if parts.len() > 1 {
            doc.targets = parts;
        }
        doc
    }
}
