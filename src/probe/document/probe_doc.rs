//! A saved `probe` document (docs/json.md, `probe --json`) as `report`
//! and `compare` read it: the run in the types that wrote it
//! (`report::ProbeRun` and `analyse`'s), its header and the file it came
//! from. fio's results for the job file of `probe --emit-fio` are read
//! into the same types (`fio_results.rs`).

use super::outcome::{ProbeRun, ProbedTarget};
use crate::probe::infer::{CellReport, Estimate};
use crate::probe::measure::Pattern;
use crate::schema::{Document, Header};
use serde::{Deserialize, Serialize};

/// Where the numbers come from: a diskalign probe (rounds are replicates)
/// or one fio pass (one figure per cell, no interval). A fio run records
/// only its engine's name, each job's file and each cell's figures: the
/// rest of its `ProbeRun` (plan, environment, the target's kind and
/// sizes, the verdict's confidence) stands for "not recorded", and what
/// reads a run leaves it out when the source is fio.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Producer {
    #[default]
    Diskalign,
    Fio,
}

crate::spelled_as_serde!(Producer);

/// A probe document read back.
#[derive(Clone, Debug)]
pub struct ProbeDoc {
    /// The file it was read from (not in the document).
    pub name: String,
    pub source: Producer,
    /// Empty for fio's results.
    pub header: Header,
    pub run: ProbeRun,
}

impl std::ops::Deref for ProbeDoc {
    type Target = ProbeRun;
    fn deref(&self) -> &ProbeRun {
        &self.run
    }
}

impl std::ops::DerefMut for ProbeDoc {
    fn deref_mut(&mut self) -> &mut ProbeRun {
        &mut self.run
    }
}

impl ProbeDoc {
    /// The unit each target of this run bracketed, with the device it was
    /// measured on, for `check --probe`; and a line for each target that
    /// bracketed none (not used).
    pub fn bracketed_units(&self) -> (Vec<crate::inspect::Measured>, Vec<String>) {
        use crate::probe::infer::Confidence;
        let one = [(&self.target, &self.environment, &self.inference)];
        let each: Vec<_> = match self.targets.is_empty() {
            true => one.to_vec(),
            false => self
                .targets
                .iter()
                .map(|t| (&t.target, &t.environment, &t.inference))
                .collect(),
        };
        let (mut units, mut unused) = (Vec::new(), Vec::new());
        if let Some(e) = &self.erase_unit {
            match (e.confidence, e.unit_bytes) {
                (Confidence::Bracketed, Some(unit)) => units.push(crate::inspect::Measured {
                    path: self.target.path.clone(),
                    disk: self.environment.disk.clone(),
                    unit_bytes: unit,
                    file: self.name.clone(),
                    erase: true,
                }),
                _ => unused.push(format!(
                    "the erase-unit search of {} bracketed no unit ({}): not used",
                    self.target.path.display(),
                    e.confidence.as_str()
                )),
            }
            return (units, unused);
        }
        for (t, env, inf) in each {
            match (inf.confidence, inf.effective_unit_bytes) {
                (Confidence::Bracketed, Some(unit)) => units.push(crate::inspect::Measured {
                    path: t.path.clone(),
                    disk: env.disk.clone(),
                    unit_bytes: unit,
                    file: self.name.clone(),
                    erase: false,
                }),
                _ => unused.push(format!(
                    "the probe of {} bracketed no unit ({}): not used",
                    t.path.display(),
                    inf.confidence.as_str()
                )),
            }
        }
        (units, unused)
    }

    /// The probe document `value`, read from the file `name`.
    pub fn read(value: &serde_json::Value, name: &str) -> Result<ProbeDoc, serde_json::Error> {
        let doc = Document::<ProbeRun>::deserialize(value)?;
        Ok(ProbeDoc {
            name: name.to_string(),
            source: Producer::Diskalign,
            header: doc.header,
            run: doc.body,
        })
    }

    /// Every target's part: the one of a single-target run, or each of
    /// `targets` in the order given.
    pub fn parts(&self) -> Vec<ProbedTarget> {
        if !self.targets.is_empty() {
            return self.targets.clone();
        }
        let r = &self.run;
        vec![ProbedTarget {
            target: r.target.clone(),
            environment: r.environment.clone(),
            cells: r.cells.clone(),
            contrasts: r.contrasts.clone(),
            inference: r.inference.clone(),
        }]
    }

    /// Whether its rounds are replicates (a diskalign run with at least
    /// two rounds); one fio pass is not.
    pub fn has_replicates(&self) -> bool {
        self.source == Producer::Diskalign
            && self
                .cells
                .iter()
                .chain(self.targets.iter().flat_map(|t| &t.cells))
                .any(|c| c.rounds.len() > 1)
    }

    /// Whether the run is one fio pass.
    pub fn fio(&self) -> bool {
        self.source == Producer::Fio
    }
}

impl CellReport {
    /// The cell's place in the grid.
    pub fn key(&self) -> (Pattern, u64, u64) {
        (
            self.cell.pattern,
            self.cell.block_size.into(),
            self.cell.offset,
        )
    }
}

impl Estimate {
    /// Its 95 % interval; None when there is none (one round or one fio
    /// pass: the document holds null, read as NaN).
    pub fn interval(&self) -> Option<[f64; 2]> {
        self.ci95.iter().all(|x| x.is_finite()).then_some(self.ci95)
    }
}

/// The patterns, block sizes and offsets a set of cells spans, sorted.
pub fn axes(cells: &[CellReport]) -> (Vec<Pattern>, Vec<u64>, Vec<u64>) {
    let mut patterns: Vec<Pattern> = cells.iter().map(|c| c.cell.pattern).collect();
    let mut sizes: Vec<u64> = cells.iter().map(|c| c.cell.block_size.into()).collect();
    let mut offsets: Vec<u64> = cells.iter().map(|c| c.cell.offset).collect();
    for v in [&mut sizes, &mut offsets] {
        v.sort_unstable();
        v.dedup();
    }
    patterns.sort_unstable();
    patterns.dedup();
    (patterns, sizes, offsets)
}

/// Runs for the tests of what reads probe documents, built in the types
/// themselves.
#[cfg(test)]
pub mod fixtures {
    use super::*;
    use crate::probe::infer::Decision;
    use crate::probe::infer::{Latency, Relative};

    /// One cell of `iops` with interval `ci` (None: one figure) and
    /// `rounds` rounds of it.
    pub fn cell(
        pattern: Pattern,
        (block_size, offset): (u64, u64),
        iops: f64,
        ci: Option<[f64; 2]>,
        rounds: usize,
    ) -> CellReport {
        let est = |x: f64, ci: Option<[f64; 2]>| Estimate {
            median: x,
            geo_mean: x,
            ci95: ci.unwrap_or([f64::NAN; 2]),
        };
        let mib_s = iops * block_size as f64 / 1048576.0;
        CellReport {
            cell: crate::probe::measure::Cell {
                block_size: block_size as u32,
                offset,
                pattern,
            },
            iops: est(iops, ci),
            mib_s: est(
                mib_s,
                ci.map(|c| c.map(|x| x * block_size as f64 / 1048576.0)),
            ),
            lat_us: Latency {
                p50: 0.0,
                p99: 0.0,
                p999: 0.0,
                max: 0.0,
            },
            rounds: vec![iops; rounds],
            round_numbers: Vec::new(),
            retries: 0,
            broken_rounds: 0,
            relative: None,
        }
    }

    /// A contrast of `ratio` ± 0.04 after 5 rounds.
    pub fn rel(ratio: f64, decision: Decision) -> Relative {
        Relative {
            ratio,
            ci95: [ratio - 0.04, ratio + 0.04],
            p_value: 0.001,
            p_adjusted: 0.01,
            significant: matches!(decision, Decision::Slower | Decision::Faster),
            decision,
            rounds: 5,
            outliers: 0,
        }
    }

    /// A run of 5 rounds on /dev/sdx holding `cells`, read from the
    /// smallest document the types take.
    pub fn doc(cells: Vec<CellReport>) -> ProbeDoc {
        let v = serde_json::json!({
            "schema": "diskalign.probe", "schema_version": 1,
            "target": { "path": "/dev/sdx", "kind": "disk", "size_bytes": 0,
                        "logical_block_size": 512, "physical_block_size": 512,
                        "dio_offset_align": 512, "dio_rule": "logical block size" },
            "engine": { "name": "io_uring", "queue_depth": 32, "jobs": 1, "direct": true,
                        "fdatasync": false },
            "environment": { "diskalign_version": "", "kernel": "", "arch": "", "cpus": 0 },
            "plan": { "preset": "quick", "cells": [], "unit": 1048576, "rounds": 5, "qd": 32,
                      "jobs": 1, "direct": true, "fdatasync": false, "seed": 0 },
            "rounds_run": 5, "partial": false, "cells": [], "contrasts": [],
            "inference": { "confidence": "untested", "statement": "",
                           "summary": "misalignment costs up to 48%", "penalties": [] },
        });
        let mut d = ProbeDoc::read(&v, "a.json").expect("reads");
        d.cells = cells;
        d
    }
}
