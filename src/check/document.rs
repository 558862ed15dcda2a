//! The `check` document (docs/json.md, `check --json`) as read back:
//! the run in the types that wrote it, its header and the file it came
//! from, with what `report` and `compare` ask of a saved run.

use super::CheckRun;
use crate::schema::{Document, Header};

use crate::findings::Finding;
use crate::stack::Layer;

/// A check document read back: the run, as the types that wrote it hold
/// it (it dereferences to the `CheckRun`), its header, and the file it was
/// read from.
#[derive(Clone, Debug, Default)]
pub struct CheckDoc {
    /// The file it was read from (not in the document).
    pub name: String,
    pub header: Header,
    pub run: CheckRun,
}

impl CheckDoc {
    /// The check document `value`, read from the file `name`; refused when
    /// a path in it is longer than `PATH_MAX`.
    pub fn read(value: &serde_json::Value, name: &str) -> Result<CheckDoc, serde_json::Error> {
        use serde::Deserialize;
        let doc = CheckDoc::new(Document::deserialize(value)?, name);
        match doc.overlong() {
            Some(what) => Err(serde::de::Error::custom(what)),
            None => Ok(doc),
        }
    }

    /// The document `name` held.
    pub fn new(doc: Document<CheckRun>, name: &str) -> CheckDoc {
        CheckDoc {
            name: name.to_string(),
            header: doc.header,
            run: doc.body,
        }
    }
}

impl std::ops::Deref for CheckDoc {
    type Target = CheckRun;
    fn deref(&self) -> &CheckRun {
        &self.run
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
            .map(|r| longest_path(r, None))
            .max();
        too_long("a layer path", longest.unwrap_or(0))
    }

    /// Every finding as the document holds it, subject or none.
    fn findings_as_written(&self) -> impl Iterator<Item = &Finding> {
        let mut layers: Vec<&Finding> = Vec::new();
        let roots = self.targets.iter().flat_map(|t| &t.stack);
        for root in roots.chain(&self.assembled) {
            walk(root, &mut Vec::new(), &mut |_, l| {
                layers.extend(&l.findings)
            });
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
                walk(root, &mut Vec::new(), &mut |path, l| {
                    let partition = partition_of(&t.stack, root);
                    let layer = path.join(" / ");
                    out.extend(l.findings.iter().map(|f| at(f, partition, Some(&layer))));
                });
            }
        }
        for root in &self.assembled {
            walk(root, &mut Vec::new(), &mut |path, l| {
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
    if root.kind != crate::stack::LayerKind::Partition {
        return None;
    }
    root.name.strip_prefix("partition ")?.parse().ok()
}

/// The length in bytes of the longest path (names joined by ` / `) from
/// `layer` up, the path below it `parent` bytes long.
fn longest_path(layer: &Layer, parent: Option<usize>) -> usize {
    let here = parent.map_or(0, |p| p + " / ".len()) + layer.name.len();
    let above = layer.children.iter().map(|c| longest_path(c, Some(here)));
    above.max().unwrap_or(here)
}

/// Visits `layer` and everything above it, each with the names from the
/// root down. The depth is bounded by the document itself.
pub fn walk<'a>(
    layer: &'a Layer,
    path: &mut Vec<&'a str>,
    f: &mut dyn FnMut(&[&'a str], &'a Layer),
) {
    path.push(&layer.name);
    f(path, layer);
    for c in &layer.children {
        walk(c, path, f);
    }
    path.pop();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{CheckedPartition, CheckedTarget};
    use crate::findings::Subject;

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
        doc.run.targets.push(CheckedTarget {
            path: "/dev/sda".into(),
            stack: vec![layer("partition 1", vec![layer("ext4", vec![])])],
            ..CheckedTarget::default()
        });
        assert_eq!(doc.overlong(), None);
        assert_eq!(
            longest_path(&doc.run.targets[0].stack[0], None),
            "partition 1 / ext4".len()
        );
        let deep = layer("b", vec![layer(&"x".repeat(PATH_MAX), vec![])]);
        doc.run.assembled.push(deep);
        assert_eq!(
            doc.overlong().as_deref(),
            Some("a layer path of 4100 bytes is longer than 4096")
        );
        doc.run.assembled.clear();
        doc.run.targets[0].partitions.push(CheckedPartition {
            findings: vec![Finding {
                subject: Subject {
                    target: Some("y".repeat(PATH_MAX + 1)),
                    ..Subject::default()
                },
                ..Finding::new(crate::findings::Code::TopologyUnknown, "")
            }],
            ..CheckedPartition::default()
        });
        assert!(doc
            .overlong()
            .unwrap()
            .starts_with("finding's target of 4097 bytes"));
    }
}
