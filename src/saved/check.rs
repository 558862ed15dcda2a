//! A saved `check` document (docs/json.md, `check --json`).

use crate::findings::{Severity, Status};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct CheckDoc {
    /// The file it was read from (not in the document).
    #[serde(skip)]
    pub name: String,
    pub diskalign_version: String,
    /// Where and when the run was made (empty in older documents).
    pub host: String,
    pub started_at: String,
    pub targets: Vec<Target>,
    pub assembled: Vec<Layer>,
    pub errors: Vec<DocError>,
    pub summary: Option<RunSummary>,
}

/// An `errors` entry: the same type that wrote it.
pub use crate::errors::TargetError as DocError;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct RunSummary {
    pub status: Option<Status>,
    pub targets: u64,
    pub checked: u64,
    pub errors: u64,
    pub warnings: u64,
    pub info: u64,
    pub exit_status: u64,
}

/// The kernel's I/O limits as the documents spell them.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(default)]
pub struct Limits {
    pub logical_block_size: u64,
    pub physical_block_size: u64,
    pub minimum_io_size: u64,
    pub optimal_io_size: u64,
    pub alignment_offset: i64,
    pub discard_granularity: u64,
    pub discard_alignment: u64,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Target {
    pub path: String,
    pub kind: String,
    pub disk: Option<String>,
    pub serial: Option<String>,
    pub wwn: Option<String>,
    pub model: Option<String>,
    pub size_bytes: u64,
    pub topology: Limits,
    pub topology_source: String,
    pub partition_table: Table,
    pub partitions: Vec<Partition>,
    pub first_start_bytes: FirstStarts,
    pub stack: Vec<Layer>,
    pub aligned: bool,
    pub verdict: String,
    pub findings: Vec<Finding>,
    pub summary: Option<TargetSummary>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Table {
    #[serde(rename = "type")]
    pub kind: String,
    pub sector_size: u64,
    pub ptuuid: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(default)]
pub struct FirstStarts {
    pub parted: u64,
    pub fdisk: u64,
    pub sgdisk: u64,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct TargetSummary {
    pub status: Option<Status>,
    pub errors: u64,
    pub warnings: u64,
    pub info: u64,
    pub partitions: u64,
    pub partitions_aligned: u64,
    pub layers: u64,
    pub layers_aligned: u64,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Partition {
    pub number: u32,
    pub kind: String,
    pub type_id: String,
    pub name: Option<String>,
    pub partuuid: Option<String>,
    pub start_bytes: u64,
    /// The inclusive last byte.
    pub end_bytes: u64,
    pub size_bytes: u64,
    pub kernel_offset: u64,
    pub start_alignment: u64,
    pub aligned: bool,
    pub status: Option<Status>,
    pub tools: Tools,
    pub findings: Vec<Finding>,
}

/// The tools' verdicts (docs/tools.md).
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Tools {
    pub parted_optimal: bool,
    pub parted_minimal: bool,
    pub fdisk: bool,
    pub sgdisk: bool,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Layer {
    pub kind: String,
    pub name: String,
    pub device: String,
    pub offset_bytes: u64,
    pub size_bytes: u64,
    pub data_offset_bytes: Option<u64>,
    pub below: Limits,
    pub exposes: Option<Limits>,
    pub aligned: bool,
    pub status: Option<Status>,
    /// For `inherits`: the layer whose start is the cause (`partition 1`).
    pub inherits_from: Option<String>,
    pub findings: Vec<Finding>,
    pub children: Vec<Layer>,
}

impl Layer {
    /// Where the data this layer hands up starts on its device.
    pub fn data_start(&self) -> u64 {
        self.offset_bytes
            .saturating_add(self.data_offset_bytes.unwrap_or(0))
    }
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Subject {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Finding {
    pub code: String,
    pub severity: Severity,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub subject: Subject,
    #[serde(default)]
    pub facts: serde_json::Map<String, serde_json::Value>,
    /// The code of another finding on the same subject that names the
    /// same cause (`start-not-4k` beside `start-misaligned`): the cause
    /// is counted and listed once, under that code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_cause_as: Option<String>,
}

/// The part of a layer's path (`partition 1 / PV x / LV vg/lv`) that
/// is not its partition's root, for prose that names the partition
/// already: `PV x / LV vg/lv`; None for the partition's root itself.
pub fn layer_within(partition: Option<u32>, layer: &str) -> Option<&str> {
    let Some(p) = partition else {
        return Some(layer);
    };
    let root = format!("partition {p}");
    match layer.strip_prefix(&root) {
        Some("") => None,
        Some(rest) => Some(rest.strip_prefix(" / ").unwrap_or(layer)),
        None => Some(layer),
    }
}

impl Finding {
    /// A fact that is a byte count or offset.
    pub fn fact(&self, key: &str) -> Option<u64> {
        self.facts.get(key)?.as_u64()
    }
}

/// The longest target path or layer path (names joined by ` / `) a saved
/// check document may hold: the kernel's PATH_MAX, far above any real
/// one. `all_findings` writes both into every finding, so a document of
/// one 100 KB path and 5000 findings (255 KB) would take half a gigabyte.
pub const PATH_MAX: usize = 4096;

impl CheckDoc {
    /// What in the document is longer than `PATH_MAX` bytes, if anything.
    pub fn overlong(&self) -> Option<String> {
        let too_long = |what: &str, len: usize| {
            (len > PATH_MAX).then(|| format!("{what} of {len} bytes is longer than {PATH_MAX}"))
        };
        let targets = self.targets.iter().map(|t| t.path.len());
        let errors = self.errors.iter().map(|e| e.path.len());
        if let Some(len) = targets.chain(errors).max() {
            if let Some(w) = too_long("a target path", len) {
                return Some(w);
            }
        }
        for f in self.findings_as_written() {
            let s = &f.subject;
            for (what, v) in [
                ("finding's target", &s.target),
                ("finding's layer", &s.layer),
            ] {
                if let Some(w) = v.as_ref().and_then(|v| too_long(what, v.len())) {
                    return Some(w);
                }
            }
        }
        let roots = self.targets.iter().flat_map(|t| &t.stack);
        let longest = roots
            .chain(&self.assembled)
            .map(|r| r.longest_path(None))
            .max();
        too_long("a layer path", longest.unwrap_or(0))
    }

    /// Every finding as the document holds it, subject or none.
    fn findings_as_written(&self) -> impl Iterator<Item = &Finding> {
        let mut layers: Vec<&Finding> = Vec::new();
        let roots = self.targets.iter().flat_map(|t| &t.stack);
        for root in roots.chain(&self.assembled) {
            root.walk(&mut Vec::new(), &mut |_, l| layers.extend(&l.findings));
        }
        let targets = self.targets.iter().flat_map(|t| {
            let parts = t.partitions.iter().flat_map(|p| &p.findings);
            t.findings.iter().chain(parts)
        });
        targets.chain(layers)
    }

    /// Every finding of the run with the subject it belongs to: the
    /// targets' own, their partitions', every layer's, and the assembled
    /// layers'. Older documents have no `subject`; it is filled in here
    /// from where the finding sits.
    pub fn all_findings(&self) -> Vec<Finding> {
        let mut out = Vec::new();
        for t in &self.targets {
            let at = |f: &Finding, partition: Option<u32>, layer: Option<&str>| {
                let mut f = f.clone();
                f.subject.target.get_or_insert_with(|| t.path.clone());
                if f.subject.partition.is_none() {
                    f.subject.partition = partition;
                }
                if f.subject.layer.is_none() {
                    f.subject.layer = layer.map(str::to_string);
                }
                f
            };
            out.extend(t.findings.iter().map(|f| at(f, None, None)));
            for p in &t.partitions {
                out.extend(p.findings.iter().map(|f| at(f, Some(p.number), None)));
            }
            for root in &t.stack {
                root.walk(&mut Vec::new(), &mut |path, l| {
                    let partition = partition_of(&t.stack, root);
                    let layer = path.join(" / ");
                    out.extend(l.findings.iter().map(|f| at(f, partition, Some(&layer))));
                });
            }
        }
        for root in &self.assembled {
            root.walk(&mut Vec::new(), &mut |path, l| {
                let layer = path.join(" / ");
                for f in &l.findings {
                    let mut f = f.clone();
                    if f.subject.layer.is_none() {
                        f.subject.layer = Some(layer.clone());
                    }
                    out.push(f);
                }
            });
        }
        out
    }
}

/// The partition number of a `partition` root (`partition 3`).
fn partition_of(_stack: &[Layer], root: &Layer) -> Option<u32> {
    if root.kind != "partition" {
        return None;
    }
    root.name.strip_prefix("partition ")?.parse().ok()
}

impl Layer {
    /// The length in bytes of the longest path (names joined by ` / `)
    /// from this layer up, the path below it `parent` bytes long.
    fn longest_path(&self, parent: Option<usize>) -> usize {
        let here = parent.map_or(0, |p| p + " / ".len()) + self.name.len();
        let above = self.children.iter().map(|c| c.longest_path(Some(here)));
        above.max().unwrap_or(here)
    }

    /// Visits this layer and everything above it, each with the names
    /// from the root down. The depth is bounded by the document itself.
    pub fn walk<'a>(&'a self, path: &mut Vec<&'a str>, f: &mut dyn FnMut(&[&'a str], &'a Layer)) {
        path.push(&self.name);
        f(path, self);
        for c in &self.children {
            c.walk(path, f);
        }
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(name: &str, children: Vec<Layer>) -> Layer {
        Layer {
            name: name.into(),
            children,
            ..Layer::default()
        }
    }

    #[test]
    fn paths_longer_than_path_max_are_found() {
        let mut doc = CheckDoc::default();
        doc.targets.push(Target {
            path: "/dev/sda".into(),
            stack: vec![layer("partition 1", vec![layer("ext4", vec![])])],
            ..Target::default()
        });
        assert_eq!(doc.overlong(), None);
        assert_eq!(
            doc.targets[0].stack[0].longest_path(None),
            "partition 1 / ext4".len()
        );
        let deep = layer("b", vec![layer(&"x".repeat(PATH_MAX), vec![])]);
        doc.assembled.push(deep);
        assert_eq!(
            doc.overlong().as_deref(),
            Some("a layer path of 4100 bytes is longer than 4096")
        );
        doc.assembled.clear();
        doc.targets[0].partitions.push(Partition {
            findings: vec![Finding {
                code: "c".into(),
                severity: Severity::Info,
                message: String::new(),
                subject: Subject {
                    target: Some("y".repeat(PATH_MAX + 1)),
                    ..Subject::default()
                },
                facts: Default::default(),
                same_cause_as: None,
            }],
            ..Partition::default()
        });
        assert!(doc
            .overlong()
            .unwrap()
            .starts_with("finding's target of 4097 bytes"));
    }

    #[test]
    fn a_layer_path_within_its_partition_drops_the_root() {
        assert_eq!(layer_within(Some(1), "partition 1 / ext4"), Some("ext4"));
        assert_eq!(layer_within(Some(1), "partition 1"), None);
        assert_eq!(
            layer_within(Some(1), "partition 10 / PV x"),
            Some("partition 10 / PV x")
        );
        assert_eq!(
            layer_within(None, "VG vg / LV vg/lv"),
            Some("VG vg / LV vg/lv")
        );
    }
}
