//! fio's JSON output (`fio --output-format=json`) for the job file of
//! `probe --emit-fio`, mapped back to the grid by job name: a section
//! `randread-4096-at-512` (or `t2-randread-4096-at-512` for the second of
//! several targets) is the cell (randread, 4096, 512). One fio pass has no
//! replicates: each cell gets one figure and no interval.

use super::outcome::ProbeRun;
use super::probe_doc::{ProbeDoc, Producer};
use crate::probe::measure::Pattern;
use crate::schema::Header;
use serde::Deserialize;
use serde_json::{json, Value};

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

/// The cell one fio job measured, as the probe document writes a cell;
/// `None` for a job that is not one of ours, failed, or did no I/O.
fn cell_of(job: &Job) -> Option<(usize, Value, Option<&str>)> {
    let (target, pattern, block_size, offset) = parse_job_name(&job.jobname)?;
    let block_size = u32::try_from(block_size).ok()?;
    let side = if pattern.is_write() {
        &job.write
    } else {
        &job.read
    };
    if job.error != 0 || side.total_ios == 0 {
        return None;
    }
    // One figure: its median and mean, and no `ci95` (no interval).
    let one = |x: f64| json!({ "median": x, "geo_mean": x });
    let cell = json!({
        "block_size": block_size,
        "offset": offset,
        "pattern": pattern,
        "iops": one(side.iops),
        "mib_s": one(side.bw_bytes / (1024.0 * 1024.0)),
        "lat_us": {
            "p50": percentile(&side.clat_ns, "50.000000"),
            "p99": percentile(&side.clat_ns, "99.000000"),
            "p999": percentile(&side.clat_ns, "99.900000"),
            "max": side.clat_ns.max / 1000.0,
        },
        "rounds": [side.iops],
    });
    Some((target, cell, job.filename()))
}

/// One target's part as the probe document writes it. fio records none of
/// the target's kind and sizes, its environment or a verdict: these keys
/// hold what stands for "not recorded" (see `document::Producer`).
fn part(path: &str, cells: Vec<Value>) -> Value {
    json!({
        "target": { "path": path, "kind": "file", "size_bytes": 0,
                    "logical_block_size": 0, "physical_block_size": 0,
                    "dio_offset_align": 0, "dio_rule": "logical block size" },
        "environment": { "diskalign_version": "", "kernel": "", "arch": "", "cpus": 0 },
        "cells": cells,
        "contrasts": [],
        "inference": { "confidence": "untested", "statement": "", "summary": NO_REPLICATES,
                       "penalties": [] },
    })
}

impl FioDoc {
    /// fio's JSON `value`, read from the file `name`, as a probe document.
    pub fn read(value: &Value, name: &str) -> Result<ProbeDoc, serde_json::Error> {
        let report = ProbeRun::deserialize(FioDoc::deserialize(value)?.as_probe())?;
        Ok(ProbeDoc {
            name: name.to_string(),
            source: Producer::Fio,
            header: Header::default(),
            run: report,
        })
    }

    /// The jobs as a probe document's body, read by its own types: one
    /// part per target, cells in the job file's order, each with one
    /// round and no interval; no plan (its keys stand for "not recorded").
    fn as_probe(&self) -> Value {
        let mut parts: Vec<(String, Vec<Value>)> = Vec::new();
        let global = self.global.get("filename").and_then(|v| v.as_str());
        for (t, cell, filename) in self.jobs.iter().filter_map(cell_of) {
            // At most one part per job: a made-up `t999999-` cannot
            // allocate more than the file already holds.
            if t > self.jobs.len() {
                continue;
            }
            while parts.len() <= t {
                parts.push((String::new(), Vec::new()));
            }
            let p = &mut parts[t];
            if p.0.is_empty() {
                p.0 = filename.or(global).unwrap_or_default().to_string();
            }
            p.1.push(cell);
        }
        let parts: Vec<Value> = parts.into_iter().map(|(p, c)| part(&p, c)).collect();
        let mut doc = parts
            .first()
            .cloned()
            .unwrap_or_else(|| part("", Vec::new()));
        // fio spells its version `fio-3.36`: keep it as it is.
        let engine = match self.version.starts_with("fio") {
            true => self.version.clone(),
            false => format!("fio {}", self.version),
        };
        doc["engine"] = json!({ "name": engine, "queue_depth": 0, "jobs": 0,
                                "direct": false, "fdatasync": false });
        doc["plan"] = json!({ "preset": "auto", "cells": [], "unit": 0, "rounds": 0,
                              "qd": 0, "jobs": 0, "direct": false, "fdatasync": false,
                              "seed": 0 });
        doc["rounds_run"] = 1.into();
        doc["partial"] = false.into();
        doc["started_unix"] = self.timestamp.into();
        if parts.len() > 1 {
            doc["targets"] = parts.into();
        }
        doc
    }
}
