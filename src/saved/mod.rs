//! Saved runs read back: the JSON documents of `check`, `topology`,
//! `probe`, `compare` and `watch` (docs/json.md), and the JSON fio writes for the
//! job file of `probe --emit-fio`. `report` draws them and `compare`
//! compares them (`compare` here dispatches on their kinds).
//!
//! Loading and dispatch only: `Saved::parse` tells a document's kind by
//! `schema` and hands it to that kind's reader, which lives with the
//! command and reads it into the types that wrote it
//! (`check::document`, `probe::ProbeDoc`, `probe::FioDoc`,
//! `topology::TopologyDocument`, `compare::Comparison`). Keys added to
//! schema 1 since a document was written take their defaults and unknown
//! keys are ignored, so a document from an older or newer diskalign of
//! the same schema version reads, as docs/json.md promises.

pub use crate::check::CheckDoc;
pub use crate::probe::ProbeDoc;
use crate::probe::{FioDoc, Producer};
pub use crate::topology::TopologyDocument as TopologyDoc;
pub use crate::watch::WatchDocument as WatchDoc;

use crate::compare::{self, CompareError, Comparison};
use serde::Deserialize;

pub use crate::schema::SCHEMA_VERSION;

/// Compares A (the reference) with B: two probe runs (or fio's results),
/// or two check runs. `compare` takes each kind's own document; which
/// kind a file is, is known here.
pub fn compare(a: &Saved, b: &Saved) -> Result<Comparison, CompareError> {
    match (a, b) {
        (Saved::Probe(x), Saved::Probe(y)) => Ok(Comparison::Probe(compare::compare_probes(x, y))),
        (Saved::Check(x), Saved::Check(y)) => Ok(Comparison::Check(compare::compare_checks(x, y))),
        (Saved::Watch { name: n, doc: x }, Saved::Watch { name: m, doc: y }) => {
            Ok(Comparison::Watch(compare::compare_watches(n, x, m, y)))
        }
        _ => Err(CompareError::Kinds {
            a: a.kind(),
            b: b.kind(),
        }),
    }
}

/// One saved run.
#[derive(Clone, Debug)]
pub enum Saved {
    Check(Box<CheckDoc>),
    Topology(Box<TopologyDoc>),
    /// A probe run, or fio's results mapped back to the cells of the job
    /// file (`ProbeDoc::source` says which).
    Probe(Box<ProbeDoc>),
    /// A saved comparison (boxed: the largest variant by far).
    Compare(Box<Comparison>),
    /// A watch run and the file it was read from.
    Watch {
        name: String,
        doc: Box<WatchDoc>,
    },
}

/// What `report` and `compare` read, for the line that refuses a file
/// that is none of it.
pub const EXPECTED: &str = "expected a saved run (the output of diskalign check, topology, probe, compare or watch with --json, or of fio --output-format=json)";

/// Why a document could not be read: one line, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum SavedError {
    #[error("{name}: not JSON ({error}); {EXPECTED}")]
    NotJson {
        name: String,
        error: serde_json::Error,
    },
    #[error("{name}: neither a diskalign document ({schema}) nor fio's JSON output")]
    Unknown { name: String, schema: String },
    #[error("{name}: {schema} schema version {version} is newer than this diskalign reads ({SCHEMA_VERSION})")]
    Version {
        name: String,
        schema: String,
        version: u64,
    },
    #[error("{name}: {schema}: schema_version is not a whole number")]
    BadVersion { name: String, schema: String },
    #[error("{name}: {schema}: {error}")]
    Shape {
        name: String,
        schema: String,
        error: serde_json::Error,
    },
}

/// The fields that say what a document is, each read on its own, so a
/// malformed one is named rather than hiding the others.
struct Header {
    schema: Option<String>,
    /// Absent, or the value as it stands (it must be a whole number).
    schema_version: Option<serde_json::Value>,
    fio_version: bool,
}

impl Header {
    fn of(v: &serde_json::Value) -> Header {
        Header {
            schema: v.get("schema").and_then(|s| s.as_str()).map(str::to_string),
            schema_version: v.get("schema_version").cloned(),
            fio_version: v.get("fio version").is_some(),
        }
    }
}

impl Saved {
    /// Reads one document; `name` (its file name) goes into the errors.
    pub fn parse(text: &str, name: &str) -> Result<Saved, SavedError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|error| SavedError::NotJson {
                name: name.to_string(),
                error,
            })?;
        let header = Header::of(&value);
        if header.fio_version {
            let shape = |error| SavedError::Shape {
                name: name.to_string(),
                schema: "fio".into(),
                error,
            };
            let fio = FioDoc::read(&value, name).map_err(shape)?;
            return Ok(Saved::Probe(Box::new(fio)));
        }
        let schema = header.schema.clone().unwrap_or_default();
        match header.schema_version.as_ref().map(|v| v.as_u64()) {
            Some(None) => {
                return Err(SavedError::BadVersion {
                    name: name.into(),
                    schema,
                })
            }
            Some(Some(version)) if version > u64::from(SCHEMA_VERSION) => {
                return Err(SavedError::Version {
                    name: name.into(),
                    schema,
                    version,
                })
            }
            _ => {}
        }
        let shape = |error| SavedError::Shape {
            name: name.to_string(),
            schema: schema.clone(),
            error,
        };
        match schema.as_str() {
            "diskalign.check" => Ok(Saved::Check(Box::new(
                CheckDoc::read(&value, name).map_err(shape)?,
            ))),
            "diskalign.topology" => Ok(Saved::Topology(Box::new(
                TopologyDoc::deserialize(&value).map_err(shape)?,
            ))),
            "diskalign.probe" => Ok(Saved::Probe(Box::new(
                ProbeDoc::read(&value, name).map_err(shape)?,
            ))),
            "diskalign.compare" => Ok(Saved::Compare(Box::new(
                Comparison::deserialize(&value).map_err(shape)?,
            ))),
            "diskalign.watch" => Ok(Saved::Watch {
                name: name.to_string(),
                doc: Box::new(WatchDoc::deserialize(&value).map_err(shape)?),
            }),
            _ => Err(SavedError::Unknown {
                name: name.into(),
                schema: match header.schema {
                    Some(s) => format!("schema {s:?}"),
                    None => "no schema".into(),
                },
            }),
        }
    }

    /// What kind of run this is, in one word (`check`, `probe`, `fio` ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Saved::Check(_) => "check",
            Saved::Topology(_) => "topology",
            Saved::Probe(p) if p.source == Producer::Fio => "fio",
            Saved::Probe(_) => "probe",
            Saved::Compare(_) => "compare",
            Saved::Watch { .. } => "watch",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An older schema-1 document (no header beyond the schema, no
    /// summary, subjects or statuses) reads with defaults, and its
    /// findings get their subjects from where they sit.
    #[test]
    fn an_older_document_reads_with_defaults() {
        let text = r#"{"schema":"diskalign.check","schema_version":1,"targets":[
            {"path":"a.img","kind":"image","partitions":[{"number":1,"kind":"primary",
             "findings":[{"code":"start-not-4k","severity":"error","message":"m"}]}]}]}"#;
        let Ok(Saved::Check(doc)) = Saved::parse(text, "old.json") else {
            panic!("does not read");
        };
        assert_eq!(doc.header.host, "");
        assert_eq!(doc.summary.targets, 0);
        let f = &doc.all_findings()[0];
        assert_eq!(f.code, crate::findings::Code::StartNot4k);
        assert_eq!(
            (f.subject.target.as_deref(), f.subject.partition),
            (Some("a.img"), Some(1))
        );
    }

    /// A finding code this diskalign does not know (a newer one's) is
    /// refused by name, not dropped.
    #[test]
    fn an_unknown_finding_code_is_refused_by_name() {
        let text = r#"{"schema":"diskalign.check","schema_version":1,"targets":[
            {"path":"a","findings":[{"code":"from-the-future","severity":"info"}]}]}"#;
        let e = Saved::parse(text, "new.json").unwrap_err().to_string();
        assert!(e.starts_with("new.json: diskalign.check: "), "{e}");
        assert!(
            e.contains("unknown finding code \"from-the-future\""),
            "{e}"
        );
    }

    #[test]
    fn a_probe_and_a_check_run_do_not_compare() {
        use crate::compare::fixtures::{check_doc, grid};
        let read = |v: &serde_json::Value, n: &str| Saved::parse(&v.to_string(), n).unwrap();
        let e = compare(
            &read(&grid("6.1.0", 1.0), "a"),
            &read(&check_doc(vec![]), "b"),
        );
        assert_eq!(
            e.unwrap_err(),
            CompareError::Kinds {
                a: "probe",
                b: "check"
            }
        );
    }
}
