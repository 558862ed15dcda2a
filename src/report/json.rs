//! The JSON documents of `check`, `topology`, `probe` and `compare`
//! (docs/json.md).

use crate::check::CheckRun;
use crate::compare::Comparison;
use crate::probe::ProbeRun;
use crate::schema::{Document, Header};
use crate::topology::Survey;
use serde::Serialize;

use super::Stamp;

/// `body` under the header of `schema`, with the run's `stamp`: the same
/// `schema::Document` that `saved` reads back.
fn document<T: Serialize>(schema: &str, body: T, stamp: &Stamp) -> String {
    Document {
        header: Header::new(schema, &stamp.host, stamp.started_at()),
        body,
    }
    .to_json()
}

/// `check --json`: the run's targets, assembled layers, errors and summary.
pub fn check_json(run: &CheckRun, stamp: &Stamp) -> String {
    document("diskalign.check", run, stamp)
}

/// The JSON documents of docs/json.md, each with the run's `stamp`.
pub struct Json {
    pub stamp: Stamp,
}

impl super::Exporter for Json {
    fn check(&self, run: &CheckRun) -> Option<String> {
        Some(check_json(run, &self.stamp) + "\n")
    }

    fn topology(&self, survey: &Survey) -> Option<String> {
        Some(topology_json(survey, &self.stamp) + "\n")
    }

    fn probe(&self, report: &ProbeRun) -> Option<String> {
        Some(probe_json(report, &self.stamp) + "\n")
    }

    fn compare(&self, comparison: &Comparison) -> Option<String> {
        Some(compare_json(comparison, &self.stamp) + "\n")
    }

    fn plan(&self, p: super::Planned) -> Option<String> {
        Some(plan_json(p.plan, &self.stamp))
    }

    fn new_disk(&self, d: &crate::plan::NewDisk) -> Option<String> {
        Some(plan_json(d, &self.stamp))
    }

    fn watch(&self, run: &crate::watch::WatchRun) -> Option<String> {
        Some(watch_json(run, &self.stamp) + "\n")
    }
}

/// `watch --json`: what each device's I/O did, under the common header.
pub fn watch_json(run: &crate::watch::WatchRun, stamp: &Stamp) -> String {
    document("diskalign.watch", run, stamp)
}

/// `topology --json`: the disks read and the ones that could not be.
pub fn topology_json(survey: &Survey, stamp: &Stamp) -> String {
    document("diskalign.topology", survey, stamp)
}

/// `probe --json`: the report's keys beside the header.
pub fn probe_json(report: &ProbeRun, stamp: &Stamp) -> String {
    document("diskalign.probe", report, stamp)
}

/// `compare --json`: the comparison under the common header, its `kind`
/// (`probe` or `check`) saying which fields follow.
pub fn compare_json(comparison: &Comparison, stamp: &Stamp) -> String {
    document("diskalign.compare", comparison, stamp)
}

/// The `plan --json` document: a plan, or a new disk's layout (`--new`).
pub fn plan_json<T: Serialize>(plan: &T, stamp: &Stamp) -> String {
    document("diskalign.plan", plan, stamp) + "\n"
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
            summary: crate::check::summarize_run(&[], &[], 0, Default::default()),
            run: Default::default(),
        };
        let texts = [
            super::check_json(&run, &stamp()),
            super::topology_json(&Default::default(), &stamp()),
            super::compare_json(&fixtures::fixed(), &stamp()),
            super::plan_json(&serde_json::json!({}), &stamp()),
            super::watch_json(&Default::default(), &stamp()),
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
            let text = super::compare_json(&c, &stamp());
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
