//! The JSON documents of `check`, `topology`, `probe` and `compare`
//! (docs/json.md).

use crate::check::report::TargetReport;
use crate::check::CheckRun;
use crate::compare::Comparison;
use crate::errors::TargetError;
use crate::stack::Layer;
use crate::topology::Disk;
use serde::Serialize;

use super::Stamp;

/// Bumped only for incompatible changes (never so far); additions keep it.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
pub struct CheckDocument<'a> {
    pub schema: &'static str,
    pub schema_version: u32,
    pub diskalign_version: &'static str,
    /// The host the run was made on (uname's nodename).
    pub host: &'a str,
    /// When the run started, RFC 3339 in UTC.
    pub started_at: String,
    pub targets: &'a [TargetReport],
    /// md arrays and LVM volume groups assembled across the targets.
    pub assembled: &'a [Layer],
    pub errors: &'a [TargetError],
    /// Counts, the status and the exit status of the run.
    pub summary: &'a crate::check::summary::RunSummary,
}

#[derive(Serialize)]
pub struct TopologyDocument<'a> {
    pub schema: &'static str,
    pub schema_version: u32,
    pub diskalign_version: &'static str,
    /// The host the run was made on (uname's nodename).
    pub host: &'a str,
    /// When the run started, RFC 3339 in UTC.
    pub started_at: String,
    pub disks: &'a [Disk],
    pub errors: &'a [TargetError],
}

pub fn check(run: &CheckRun, stamp: &Stamp) -> String {
    let doc = CheckDocument {
        schema: "diskalign.check",
        schema_version: SCHEMA_VERSION,
        diskalign_version: env!("CARGO_PKG_VERSION"),
        host: &stamp.host,
        started_at: stamp.started_at(),
        targets: &run.targets,
        assembled: &run.assembled,
        errors: &run.errors,
        summary: &run.summary,
    };
    serde_json::to_string_pretty(&doc).expect("report serialises")
}

/// The JSON documents of docs/json.md, each with the run's `stamp`.
pub struct Json {
    pub stamp: Stamp,
}

impl super::Exporter for Json {
    fn check(&self, run: &CheckRun) -> Option<String> {
        Some(check(run, &self.stamp) + "\n")
    }

    fn topology(&self, survey: &crate::topology::Survey) -> Option<String> {
        Some(topology(&survey.disks, &survey.errors, &self.stamp) + "\n")
    }

    fn probe(&self, report: &crate::probe::report::ProbeReport) -> Option<String> {
        Some(probe(report, &self.stamp) + "\n")
    }

    fn compare(&self, comparison: &Comparison) -> Option<String> {
        Some(compare(comparison, &self.stamp) + "\n")
    }

    fn plan(&self, p: super::Planned) -> Option<String> {
        Some(plan(p.plan, &self.stamp))
    }

    fn new_disk(&self, d: &crate::plan::new_disk::NewDisk) -> Option<String> {
        Some(plan(d, &self.stamp))
    }
}

pub fn topology(disks: &[Disk], errors: &[TargetError], stamp: &Stamp) -> String {
    let doc = TopologyDocument {
        schema: "diskalign.topology",
        schema_version: SCHEMA_VERSION,
        diskalign_version: env!("CARGO_PKG_VERSION"),
        host: &stamp.host,
        started_at: stamp.started_at(),
        disks,
        errors,
    };
    serde_json::to_string_pretty(&doc).expect("topology serialises")
}

#[derive(Serialize)]
pub struct ProbeDocument<'a> {
    pub schema: &'static str,
    pub schema_version: u32,
    pub diskalign_version: &'static str,
    /// The host the run was made on (uname's nodename).
    pub host: &'a str,
    /// When the run started, RFC 3339 in UTC.
    pub started_at: String,
    #[serde(flatten)]
    pub report: &'a crate::probe::report::ProbeReport,
}

pub fn probe(report: &crate::probe::report::ProbeReport, stamp: &Stamp) -> String {
    let doc = ProbeDocument {
        schema: "diskalign.probe",
        schema_version: SCHEMA_VERSION,
        diskalign_version: env!("CARGO_PKG_VERSION"),
        host: &stamp.host,
        started_at: stamp.started_at(),
        report,
    };
    serde_json::to_string_pretty(&doc).expect("probe report serialises")
}

/// `compare --json`: the comparison under the common header, its `kind`
/// (`probe` or `check`) saying which fields follow.
#[derive(Serialize)]
pub struct CompareDocument<'a> {
    pub schema: &'static str,
    pub schema_version: u32,
    pub diskalign_version: &'static str,
    /// The host the run was made on (uname's nodename).
    pub host: &'a str,
    /// When the run started, RFC 3339 in UTC.
    pub started_at: String,
    #[serde(flatten)]
    pub comparison: &'a Comparison,
}

pub fn compare(comparison: &Comparison, stamp: &Stamp) -> String {
    let doc = CompareDocument {
        schema: "diskalign.compare",
        schema_version: SCHEMA_VERSION,
        diskalign_version: env!("CARGO_PKG_VERSION"),
        host: &stamp.host,
        started_at: stamp.started_at(),
        comparison,
    };
    serde_json::to_string_pretty(&doc).expect("comparison serialises")
}

/// The `plan --json` document: a plan, or a new disk's layout (`--new`).
#[derive(Serialize)]
pub struct PlanDocument<'a, T: Serialize> {
    pub schema: &'static str,
    pub schema_version: u32,
    pub diskalign_version: &'static str,
    /// The host the run was made on (uname's nodename).
    pub host: &'a str,
    /// When the run started, RFC 3339 in UTC.
    pub started_at: String,
    #[serde(flatten)]
    pub plan: &'a T,
}

pub fn plan<T: Serialize>(plan: &T, stamp: &Stamp) -> String {
    let doc = PlanDocument {
        schema: "diskalign.plan",
        schema_version: SCHEMA_VERSION,
        diskalign_version: env!("CARGO_PKG_VERSION"),
        host: &stamp.host,
        started_at: stamp.started_at(),
        plan,
    };
    serde_json::to_string_pretty(&doc).expect("plan serialises") + "\n"
}

#[cfg(test)]
mod tests {
    use crate::compare::{fixtures, Comparison};
    use crate::report::Stamp;
    use crate::saved::Saved;
    use std::time::{Duration, UNIX_EPOCH};

    fn stamp() -> Stamp {
        Stamp {
            host: "db-07".into(),
            started: UNIX_EPOCH + Duration::from_millis(1_795_381_475_900),
        }
    }

    /// Every document says where and when, in the same two keys.
    #[test]
    fn every_document_names_the_host_and_the_start() {
        let run = crate::check::CheckRun {
            targets: vec![],
            assembled: vec![],
            errors: vec![],
            summary: crate::check::summary::run(&[], &[], 0, Default::default()),
        };
        let texts = [
            super::check(&run, &stamp()),
            super::topology(&[], &[], &stamp()),
            super::compare(&fixtures::fixed(), &stamp()),
            super::plan(&serde_json::json!({}), &stamp()),
        ];
        for text in texts {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["host"], "db-07", "{text}");
            assert_eq!(v["started_at"], "2026-11-22T21:04:35Z", "{text}");
        }
    }

    /// A saved comparison reads back as one (`report` draws it again).
    #[test]
    fn compare_documents_read_back() {
        for c in [fixtures::slower(), fixtures::fixed()] {
            let text = super::compare(&c, &stamp());
            let back = match Saved::parse(&text, "c.json").expect("reads") {
                Saved::Compare(back) => back,
                other => panic!("read back as {}", other.kind()),
            };
            match (&c, back.as_ref()) {
                (Comparison::Probe(x), Comparison::Probe(y)) => {
                    assert_eq!(x.cells.len(), y.cells.len());
                    assert_eq!(x.environment, y.environment);
                    assert_eq!((&x.summary, &x.notes), (&y.summary, &y.notes));
                    assert_eq!(x.only_a, y.only_a);
                }
                (Comparison::Check(x), Comparison::Check(y)) => {
                    assert_eq!((&x.changes, &x.targets), (&y.changes, &y.targets));
                    assert_eq!((&x.a, &x.b), (&y.a, &y.b));
                }
                _ => panic!("kind changed: {text}"),
            }
            assert!(text.contains("\"schema\": \"diskalign.compare\""));
        }
    }
}
