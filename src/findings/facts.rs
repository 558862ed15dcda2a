//! The typed facts a finding is about, and its subject. Sentences are
//! rendered from these (see `render`); JSON consumers, the CSV and the
//! Prometheus exporter read the numbers here instead of parsing English.
//! Every field is optional: a finding sets the ones its rule looked at.

use serde::{Deserialize, Serialize};

/// Where a finding sits, so a flat list (a CSV row, a metric) still says
/// what it is about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Subject {
    /// The target as given on the command line; absent for md arrays and
    /// volume groups assembled across targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The partition number, for a partition and every layer inside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<u32>,
    /// The layers' names from the root down, joined by " / ".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<String>,
}

impl Subject {
    /// True when nothing is set yet.
    pub fn is_empty(&self) -> bool {
        self.target.is_none() && self.partition.is_none() && self.layer.is_none()
    }

    /// What the finding is about, outermost first: the target, `partition
    /// N`, and the layer path below the partition's root (which the
    /// partition already names). Every output names a subject from these
    /// parts joined by `SUBJECT_SEPARATOR` (HTML shortens each part).
    pub fn parts(&self) -> Vec<String> {
        let mut parts: Vec<String> = self.target.iter().cloned().collect();
        parts.extend(self.partition.map(|p| format!("partition {p}")));
        let layer = self
            .layer
            .as_deref()
            .and_then(|l| layer_within(self.partition, l));
        parts.extend(layer.map(str::to_string));
        parts
    }

    /// `sda, partition 1, PV x / LV vg/lv`.
    pub fn phrase(&self) -> String {
        self.parts().join(SUBJECT_SEPARATOR)
    }
}

/// Between the parts of a subject: not ` / `, which joins the layers of a
/// path.
pub const SUBJECT_SEPARATOR: &str = ", ";

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

/// One leg of a striped LV segment, as a stripe rule saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LegFact {
    pub stripe: usize,
    pub device: String,
    pub offset_bytes: u64,
    /// `offset_bytes` modulo the unit.
    pub misalignment_bytes: u64,
}

/// A task behind a `watch` finding: its name as `watch` shows it (a
/// process's `comm`, a kernel thread's job), its cgroup and how many of
/// the finding's I/Os it submitted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SubmitterFact {
    pub name: String,
    pub cgroup: Option<String>,
    pub affected_ios: u64,
}

/// The numbers and names a rule judged. Offsets are in bytes of the device
/// below (the whole disk for partitions and the layers inside them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Facts {
    /// The byte judged: a partition's start, a layer's data start, a leg.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset_bytes: Option<u64>,
    /// The end judged, one past the last byte: a partition's `end_bytes`
    /// plus one. Named apart from `end_bytes`, which is the last byte
    /// wherever it is written; documents from before issue 36 wrote this
    /// as `end_bytes`, and read back as this.
    #[serde(skip_serializing_if = "Option::is_none", alias = "end_bytes")]
    pub end_exclusive_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// The unit the offset, end or size should be a multiple of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grain_bytes: Option<u64>,
    /// How far the offset is from that unit's grid; for the kernel's rule,
    /// the rule's result (g + ao - start mod g) mod g.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub misalignment_bytes: Option<u64>,
    /// A zoned disk's zone size (sysfs `queue/chunk_sectors` in bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_size_bytes: Option<u64>,
    /// A zoned device's zone model (sysfs `queue/zoned`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_model: Option<crate::iolimits::ZoneModel>,
    /// The alignment offset the grid starts from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alignment_offset_bytes: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logical_block_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub physical_block_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum_io_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optimal_io_bytes: Option<u64>,
    /// A block or sector size the layer uses (node, filesystem, LUKS, bcache).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_size_bytes: Option<u64>,
    /// The kernel's own value for what was computed (alignment_offset, BLKBSZGET).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel_value: Option<i64>,
    /// The device below, by path or kernel name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// What was judged, in words ("the md data area (data_offset 1 MiB)").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// md chunk, or LV stripe size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stripe_width_bytes: Option<u64>,
    /// The filesystem's stripe hints, in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint_unit_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint_width_bytes: Option<u64>,
    /// Units one chunk-sized write touches (an average over the pattern
    /// the offsets repeat in), against the ideal count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_touched: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_ideal: Option<u64>,
    /// units_touched / units_ideal for the worst leg.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amplification: Option<f64>,
    /// 1-based LV segment number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub legs: Vec<LegFact>,
    /// The NVMe namespace's declared preferred write granularity (NPWG)
    /// and alignment (NPWA), in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub npwg_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub npwa_bytes: Option<u64>,
    /// Which identify data declared the value (`nvme`, `ata`, `scsi`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declared_by: Option<String>,
    /// The saved probe run whose bracketed unit decided (`--probe`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_by: Option<String>,
    /// The ZFS pool a member belongs to, as its label names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// An NVMe LBA format's index (`nvme format --lbaf`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lba_format: Option<u8>,
    /// A command that changes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// The direction of the I/O a `watch` finding counted (`read`, `write`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    /// I/Os `watch` counted on the device in that direction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ios: Option<u64>,
    /// Of those, the I/Os the finding is about (straddling, smaller than
    /// the physical block, split).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affected_ios: Option<u64>,
    /// affected_ios / ios; for `image-unit-straddle`, the share of the
    /// 4 KiB blocks that straddle two container units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// The codes of what `check` says about the device's placement: the
    /// cause of what `watch` saw.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<super::Code>,
    /// The tasks that submitted most of a `watch` finding's I/Os (the
    /// fewest, most first, that did at least half of them; at most three).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub submitters: Vec<SubmitterFact>,
    /// Where a FAT, exFAT or NTFS boot sector says its volume starts
    /// (hidden sectors, PartitionOffset), and where it does, in sectors of
    /// `block_size_bytes` (`fs-hidden-sectors`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded_sectors: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_sectors: Option<u64>,
    /// The bytes of what a volume is in: its partition or device
    /// (`fs-beyond-partition`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region_bytes: Option<u64>,
    /// A backup boot sector's state: `missing` or `differs`
    /// (`fs-backup-boot-sector`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_state: Option<String>,
    /// Where the grain came from (`host-misaligned`: `4k`,
    /// `physical-block`, `minimum-io`, `host-grain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grain_from: Option<String>,
    /// A guest start's byte in its guest disk (`host-misaligned`, whose
    /// `offset_bytes` is the byte on the host disk).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest_offset_bytes: Option<u64>,
    /// The guest starts judged on the host, and those off its grain
    /// (`host-misaligned`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_judged: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_misaligned: Option<u64>,
    /// The partition is a DOS extended container (its own placement is
    /// informational).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub extended_container: bool,
    /// What gave `grain_bytes` (`bluestore-alloc-below-grain`):
    /// `physical-block`, `minimum-io`, `declared-physical-block`,
    /// `nvme-npwg` or `measured`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grain_source: Option<String>,
    /// The multipath map a path device belongs to (`multipath-path`):
    /// its device-mapper name (`mpatha`), its node (`/dev/mapper/mpatha`)
    /// and its kernel name (`dm-0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map_node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map_kernel_name: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_subject_is_named_once_from_its_parts() {
        let s = Subject {
            target: Some("/dev/loop1".into()),
            partition: Some(1),
            layer: Some("partition 1 / PV abc / LV vg/lv".into()),
        };
        assert_eq!(s.phrase(), "/dev/loop1, partition 1, PV abc / LV vg/lv");
        let root = Subject {
            layer: Some("partition 1".into()),
            ..s
        };
        assert_eq!(root.parts(), ["/dev/loop1", "partition 1"]);
    }

    /// One past the end is written as `end_exclusive_bytes`; a document
    /// from before it was named apart (`end_bytes`) reads as the same.
    #[test]
    fn the_end_one_past_the_last_byte_is_named_apart_from_end_bytes() {
        let f = Facts {
            end_exclusive_bytes: Some(20512256),
            ..Facts::default()
        };
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(json, r#"{"end_exclusive_bytes":20512256}"#);
        let old: Facts = serde_json::from_str(r#"{"end_bytes":20512256}"#).unwrap();
        assert_eq!(old, f);
    }
}
