//! What `check` produces for each target; serialised as the JSON schema
//! documented in docs/json.md.

use super::tools::{FirstStarts, ToolVerdicts};
use crate::findings::{Counts, Finding, Status, Subject};
use crate::iolimits::Topology;
use crate::layout::{PartKind, TableKind};
use serde::{Deserialize, Serialize};

pub use crate::inspect::{TargetKind, TopologySource};

#[derive(Clone, Default, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckedTable {
    #[serde(rename = "type")]
    pub kind: TableKind,
    pub sector_size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_usable_lba: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_usable_lba: Option<u64>,
    /// The table's identity, PTUUID as blkid spells it: the GPT disk GUID,
    /// or the DOS disk signature (`%08x`); null when there is none.
    pub ptuuid: Option<String>,
}

#[derive(Clone, Default, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckedPartition {
    pub number: u32,
    pub kind: PartKind,
    pub type_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// PARTUUID as blkid spells it: the GPT entry's unique GUID, or the
    /// DOS signature and number (`%08x-%02x`); null when there is none.
    pub partuuid: Option<String>,
    pub start_bytes: u64,
    /// Inclusive last byte.
    pub end_bytes: u64,
    pub size_bytes: u64,
    /// In units of the table's sector size.
    pub start_sector: u64,
    pub end_sector: u64,
    pub sectors: u64,
    /// The kernel's rule (g + ao - start mod g) mod g; 0 = aligned.
    pub kernel_offset: u64,
    /// The kernel's own per-partition alignment_offset (live devices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_alignment_offset: Option<i64>,
    /// The largest power of two up to 1 MiB dividing the start.
    pub start_alignment: u64,
    /// The block size the kernel gives the partition's device node.
    pub device_block_size: u32,
    /// The same, read back with BLKBSZGET (live devices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_block_size_kernel: Option<u32>,
    /// Overall verdict: no warning or error about this partition's placement.
    pub aligned: bool,
    /// The tier of the worst placement finding: `aligned`, `untidy` (an
    /// end or size off 4 KiB, a start off the stripe width) or `misaligned`
    /// (the start off its grain).
    pub status: crate::findings::Status,
    pub tools: ToolVerdicts,
    pub findings: Vec<Finding>,
}

#[derive(Clone, Default, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckedTarget {
    pub path: String,
    pub kind: TargetKind,
    /// The whole disk a partition or disk target belongs to (live devices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    /// The whole disk's serial number, world-wide identifier and model, as
    /// sysfs gives them (live devices; null for images).
    pub serial: Option<String>,
    pub wwn: Option<String>,
    pub model: Option<String>,
    /// A multipath map's paths (kernel names, its `slaves/`): one disk
    /// reached over each, named here and never a target of its own.
    /// Absent for any other target.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    pub size_bytes: u64,
    /// The image container the guest disk was read through: format,
    /// version, allocation unit, virtual size, backing chain (null for a
    /// live device and a raw image).
    pub container: Option<crate::image::Container>,
    pub topology: Topology,
    pub topology_source: TopologySource,
    pub partition_table: CheckedTable,
    pub partitions: Vec<CheckedPartition>,
    pub first_start_bytes: FirstStarts,
    /// Whether people partition this device: false for a partition and
    /// for a device-mapper device other than a multipath map (an LV, a
    /// dm-crypt mapping), where `first_start_bytes` is advice nobody
    /// takes. True when a saved run read back lacks it (written before).
    #[serde(default = "partitionable_by_default")]
    pub partitionable: bool,
    /// Every start on 1 MiB and every end on 4 KiB: stays aligned whatever
    /// plausible topology the disk is moved to.
    pub portable: bool,
    /// What lives inside each partition (or the whole device), layer by layer.
    pub stack: Vec<crate::stack::Layer>,
    /// No warning or error anywhere in this target.
    pub aligned: bool,
    /// One line for humans.
    pub verdict: String,
    pub findings: Vec<Finding>,
    /// Counts and the status, for scripts.
    pub summary: TargetSummary,
    /// The command that plans the fix of what was found (`diskalign plan
    /// DISK` with the options the check ran with), when planning its disk
    /// has work: `plan::next` (set by the command line, which reads a
    /// partition target's disk whole for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// What that plan says, in a few words: the partitions it moves or
    /// resizes, the findings its commands by hand clear (with the tool),
    /// and those it can only say in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_says: Option<String>,
    /// Where an image file lies on the host disk under it: the host
    /// filesystem, its device down to the disk, the grain, the extents
    /// and each guest start's host byte (absent for a device, and for an
    /// image read without the live system).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::inspect::Host>,
}

/// A saved check run written before `partitionable` was: every target
/// was advised as a disk people partition.
fn partitionable_by_default() -> bool {
    true
}

impl CheckedTarget {
    /// The kind as people read it: an image names its container format
    /// (`image (qcow2)`).
    pub fn kind_name(&self) -> String {
        match &self.container {
            Some(c) => format!("{} ({})", self.kind, c.format),
            None => self.kind.to_string(),
        }
    }

    /// The findings of each place of the target: its own, each
    /// partition's, each layer's (`findings::Distinct` counts by place).
    pub fn places(&self) -> impl Iterator<Item = &[Finding]> {
        std::iter::once(self.findings.as_slice())
            .chain(self.partitions.iter().map(|p| p.findings.as_slice()))
            .chain(
                self.stack
                    .iter()
                    .flat_map(|l| l.walk())
                    .map(|l| l.findings.as_slice()),
            )
    }

    /// The node of the multipath map this target is a path of (its
    /// `multipath-path` finding's), where its fixes are made.
    pub fn multipath_map_node(&self) -> Option<&str> {
        self.findings
            .iter()
            .find(|f| f.code == crate::findings::Code::MultipathPath)
            .and_then(|f| f.facts.map_node.as_deref())
    }

    /// Every finding of the target and its partitions.
    pub fn all_findings(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .chain(self.partitions.iter().flat_map(|p| p.findings.iter()))
            .chain(
                self.stack
                    .iter()
                    .flat_map(|l| l.walk())
                    .flat_map(|l| l.findings.iter()),
            )
    }
}

/// Say in each finding what it is about: the target, the partition, and
/// the layers from the root down. `target` is None for what was assembled
/// across targets.
pub fn assign_subjects(
    target: Option<&str>,
    partition: Option<u32>,
    layer: &mut crate::stack::Layer,
    path: &str,
) {
    let path = if path.is_empty() {
        layer.name.clone()
    } else {
        format!("{path} / {}", layer.name)
    };
    for f in &mut layer.findings {
        f.subject = Subject {
            target: target.map(str::to_string),
            partition,
            layer: Some(path.clone()),
        };
    }
    for c in &mut layer.children {
        assign_subjects(target, partition, c, &path);
    }
}

impl CheckedTarget {
    /// Fill in the subject of the target's and its partitions' findings
    /// (the stack's are filled in as each root is judged).
    pub fn assign_subjects(&mut self) {
        let target = Some(self.path.clone());
        for f in &mut self.findings {
            f.subject = Subject {
                target: target.clone(),
                ..Subject::default()
            };
        }
        for p in &mut self.partitions {
            for f in &mut p.findings {
                f.subject = Subject {
                    target: target.clone(),
                    partition: Some(p.number),
                    layer: None,
                };
            }
        }
    }
}

/// One target in numbers (`targets[].summary` in the JSON).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TargetSummary {
    pub status: Status,
    #[serde(flatten)]
    pub findings: Counts,
    /// Data partitions (extended containers left out), and how many of
    /// them have no warning or error.
    pub partitions: usize,
    pub partitions_aligned: usize,
    /// Layers above the partitions (filesystems, PVs, LVs, holders...).
    pub layers: usize,
    pub layers_aligned: usize,
    /// Something could not be followed (a PV or md member not among the targets).
    pub incomplete: bool,
}
