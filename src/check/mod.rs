//! `check`: pure rules over an [`Inspection`]: partition placement against
//! the topology, each tool's verdict, portability, the kernel's own view on
//! live devices, and the stack's layers. No I/O happens here; `inspect`
//! read everything first.

mod bluestore;
mod container;
mod cost;
mod declared;
mod device;
mod disagree;
mod document;
mod f2fs;
mod fat_reserved;
#[cfg(test)]
pub(crate) mod fixture;
mod host;
mod inherit;
mod outcome;
mod partitions;
mod placement;
mod portable;
mod stack;
mod start;
mod structure;
mod subjects;
mod summary;
mod thin;
mod tools;
mod verdict;
mod volume;
mod zones;

#[cfg(test)]
pub(crate) use declared::tests::{namespace, says};
/// What a device declares, as advice for the filesystems made on it.
pub use declared::{format_advice, write_unit};
/// The check document read back.
pub use document::CheckDoc;
/// The `mkfs.fat -R` that puts a FAT32's data area on a flash card's unit.
pub use fat_reserved::fat32_reserved;
/// What check says of a target and its partitions.
pub use outcome::{CheckedPartition, CheckedTarget, TopologySource};
/// The codes about where a partition starts, which a move clears.
pub use placement::is_placement_code;
/// One layer's rules, at its offset on the disk.
pub use stack::judge_layer;
/// Whether an optimal I/O size is one a partition should start on.
pub use start::sane_optimal;
/// The run's and each target's summary, counted once per cause.
pub use summary::{made_from, partition_problems, problems, summarize_run, target_findings, worst};
/// Where parted, fdisk and sgdisk would start a partition, and why.
pub use tools::{first_starts, sgdisk_alignment, sgdisk_cautions, FirstStarts, ToolView};

use crate::errors::TargetError;
use crate::findings::{Code, FailOn};
use crate::inspect::{self, Inspection, Target};
use crate::layout::{PartKind, TableKind};
use crate::stack::Layer;
use outcome::CheckedTable;
use std::path::{Path, PathBuf};

pub use crate::inspect::default_targets;
/// How to run a check: what `inspect` reads with.
pub use crate::inspect::InspectOptions as CheckOptions;
/// What reading the targets cost (the document's `run`).
pub use cost::{RunCost, TargetCost};

/// Everything one `check` run found: the body of the check document
/// (docs/json.md), in its key order.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct CheckRun {
    pub targets: Vec<CheckedTarget>,
    /// md arrays and volume groups put together from the targets.
    pub assembled: Vec<Layer>,
    pub errors: Vec<TargetError>,
    /// Counts, the status and the exit status.
    pub summary: summary::RunSummary,
    /// What reading cost: device reads, bytes and sysfs attributes, in
    /// all and per target.
    pub run: cost::RunCost,
}

/// Read several targets together (md arrays and volume groups spread over
/// them are assembled), then judge. No targets: every disk of the machine
/// (or of the sysfs tree).
pub fn check_all(paths: &[PathBuf], opts: &CheckOptions) -> CheckRun {
    check_with(paths, opts, FailOn::default())
}

/// [`check_all`] with the findings that make the exit status 1.
pub fn check_with(paths: &[PathBuf], opts: &CheckOptions, fail_on: FailOn) -> CheckRun {
    judge(read(paths, opts), fail_on)
}

/// The targets read, before any rule (no targets: every disk of the
/// machine or of the sysfs tree).
pub fn read(paths: &[PathBuf], opts: &CheckOptions) -> Inspection {
    let start = crate::sys::Cost::now();
    let (paths, listing_error) = if paths.is_empty() {
        match default_targets(&opts.sysfs) {
            Ok(t) => (t, None),
            Err(e) => (vec![], Some(e)),
        }
    } else {
        (paths.to_vec(), None)
    };
    let mut i = inspect::inspect(&paths, opts);
    i.errors.extend(listing_error);
    i.total = crate::sys::Cost::now().since(start);
    i
}

/// Check one target on its own (no assembly across targets).
pub fn check(path: &Path, opts: &CheckOptions) -> Result<CheckedTarget, TargetError> {
    let mut run = check_all(&[path.to_path_buf()], opts);
    match run.errors.pop() {
        Some(e) => Err(e),
        None => Ok(run.targets.remove(0)),
    }
}

/// Judge everything inspected.
pub fn judge(i: Inspection, fail_on: FailOn) -> CheckRun {
    let mut regions = inherit::Regions::new();
    let mut run = CheckRun {
        targets: i
            .targets
            .into_iter()
            .map(|t| target(t, &mut regions))
            .collect(),
        assembled: i.assembled,
        errors: i.errors,
        summary: summary::RunSummary::default(),
        run: cost::RunCost::of(i.total, i.costs),
    };
    for l in &mut run.assembled {
        stack::judge_layer(l);
        regions.assembled(l);
        outcome::assign_subjects(None, None, l, "");
    }
    for r in &mut run.targets {
        r.assign_subjects();
    }
    subjects::unify(&mut run.targets, &run.assembled);
    for r in &mut run.targets {
        let made_from_it = subjects::made_from(r, &run.assembled);
        r.summary = summary::target(r, &made_from_it);
        r.aligned = r.summary.status.is_clean();
        r.verdict = verdict::verdict(r, &made_from_it);
    }
    run.summary = summary::summarize_run(&run.targets, &run.assembled, run.errors.len(), fail_on);
    run
}

fn target(t: Target, regions: &mut inherit::Regions) -> CheckedTarget {
    let mut findings = device::topology_findings(&t);
    let table = &t.table;
    findings.extend(table.findings.iter().cloned());
    let view = ToolView::new(&t.topology, t.size);
    let mismatch = table
        .findings
        .iter()
        .any(|f| f.code == Code::TableSectorSizeMismatch);
    findings.extend(structure::structure_findings(table, t.size));
    findings.extend(host::findings(&t));
    let mut partitions = partitions::partition_reports(&t, &view, mismatch);
    if let Some(c) = &t.container {
        for p in partitions
            .iter_mut()
            .filter(|p| p.kind != PartKind::Extended)
        {
            p.findings
                .extend(container::start_finding(c, p.start_bytes));
        }
    }
    // A host-managed disk's table is one the kernel ignores: said so,
    // in place of the registered partitions' difference from it.
    let ignored = t.disk.as_ref().and_then(|d| zones::table_ignored(d, table));
    let table_ignored = ignored.is_some();
    findings.extend(ignored);
    if let (Some(disk), None, false, false) = (&t.disk, t.only, mismatch, table_ignored) {
        findings.extend(device::kernel_table_findings(disk, table));
    }
    let first_start_bytes = tools::first_starts(&view, table.kind == TableKind::Mbr);
    let empty = t.table.partitions.is_empty();
    // Where the tools would start a first partition is said only of a
    // device people partition: not of an LV, a dm-crypt mapping or a
    // partition.
    let partitionable = t.partitionable();
    if partitionable && first_start_bytes.any_fits(t.size, view.lbs) {
        findings.extend(disagree::first_start_findings(
            &t.topology,
            &view,
            &first_start_bytes,
            empty,
        ));
    }
    let not_portable = portable::finding(&partitions);
    let portable = not_portable.is_none();
    findings.extend(not_portable);
    let path = t.path.display().to_string();
    let says = t.disk.as_ref().and_then(|d| d.declared.clone());
    let layer_device = t.layer_device();
    let stack = t
        .stack
        .into_iter()
        .map(|root| {
            let mut l = root.layer;
            let part = partitions.iter().find(|p| Some(p.number) == root.partition);
            if let Some(p) = part {
                l.status = p.status;
            }
            stack::judge_layer(&mut l);
            declared::layer_findings(says.as_ref(), &layer_device, &mut l);
            declared::measured_findings(t.measured.as_ref(), &mut l);
            bluestore::evidence(says.as_ref(), t.measured.as_ref(), &layer_device, &mut l);
            if let Some(d) = &t.disk {
                zones::layer_findings(&d.zoned, &layer_device, &mut l);
            }
            let kernel_known = t.source != crate::inspect::TopologySource::ImageDefault;
            declared::ashift_above(
                says.as_ref(),
                t.measured.as_ref(),
                &layer_device,
                kernel_known,
                &mut l,
            );
            if let Some(c) = &t.container {
                let part_on_4k = part.is_none_or(|p| p.start_bytes % 4096 == 0);
                container::layer_findings(c, &layer_device, part_on_4k, &mut l);
            }
            let cause = part
                .and_then(|p| inherit::cause_of(&l.name, &p.findings, inherit::is_partition_start));
            regions.target_root(&mut l, &path, cause);
            outcome::assign_subjects(Some(&path), root.partition, &mut l, "");
            l
        })
        .collect();
    CheckedTarget {
        path,
        kind: t.kind,
        disk: t.disk.as_ref().map(|d| d.name.clone()),
        serial: t.disk.as_ref().and_then(|d| d.serial.clone()),
        wwn: t.disk.as_ref().and_then(|d| d.wwn.clone()),
        model: t.disk.as_ref().and_then(|d| d.model.clone()),
        paths: t.disk.as_ref().map(|d| d.paths.clone()).unwrap_or_default(),
        size_bytes: t.size,
        container: t.container,
        topology: t.topology,
        topology_source: t.source,
        partition_table: CheckedTable {
            kind: table.kind,
            sector_size: table.sector_size,
            first_usable_lba: table.usable.map(|u| u.0),
            last_usable_lba: table.usable.map(|u| u.1),
            ptuuid: table.id.clone(),
        },
        partitions,
        first_start_bytes,
        partitionable,
        portable,
        stack,
        aligned: false,
        verdict: String::new(),
        findings,
        summary: outcome::TargetSummary::default(),
        next: None,
        next_says: None,
        host: t.host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Severity;
    use crate::inspect::TargetKind;
    use crate::iolimits::Topology;
    use crate::layout::Table;
    use crate::topology::DmIds;

    const MIB: u64 = 1 << 20;

    /// A 4 MiB device of 512/512 with no table, of `kind`, a dm device
    /// named `dm` (name, uuid) when given: on a disk of at most 4 x 1 MiB
    /// fdisk drops its grain and would start a first partition at sector
    /// 34, off 4 KiB, where parted and sgdisk start at 1 MiB.
    fn tiny(kind: TargetKind, dm: Option<(&str, &str)>) -> CheckedTarget {
        let mut t = fixture::image(4 * MIB, Topology::IMAGE_DEFAULT, vec![]);
        t.table = Table::none(512);
        t.kind = kind;
        if kind != TargetKind::Image {
            let mut d = fixture::disk(4 * MIB, vec![]);
            d.dm = dm.map(|(name, uuid)| DmIds {
                name: Some(name.into()),
                uuid: Some(uuid.into()),
            });
            t.disk = Some(d);
        }
        target(t, &mut inherit::Regions::new())
    }

    fn disagree(r: &CheckedTarget) -> Option<Severity> {
        r.findings
            .iter()
            .find(|f| f.code == Code::ToolsDisagree)
            .map(|f| f.severity)
    }

    const TMETA: (&str, &str) = (
        "vg-pool_tmeta",
        "LVM-lWlBztvd5yK7ZUbkIBc5hqgrt20s6z64eM6QHaDKrLiPBchb5Wal0RFcQw02W8Hq-tmeta",
    );

    #[test]
    fn first_partition_advice_only_where_people_partition() {
        // A whole disk and an image: the tools disagree, and fdisk's
        // start is off 4 KiB: a warning.
        for kind in [TargetKind::Disk, TargetKind::Image] {
            let r = tiny(kind, None);
            assert!(r.partitionable, "{kind}");
            assert_eq!(disagree(&r), Some(Severity::Warning), "{kind}");
        }
        // A multipath map is a disk, partitioned through kpartx.
        let r = tiny(TargetKind::Disk, Some(("mpatha", "mpath-3600508b4")));
        assert!(r.partitionable);
        assert_eq!(disagree(&r), Some(Severity::Warning));
        // An LV (a thin pool's metadata, an LV people use), a dm-crypt
        // mapping, a kpartx partition map, a table made by hand, a
        // partition: nothing said, and the starts stay in the JSON.
        for (kind, dm) in [
            (TargetKind::Disk, Some(TMETA)),
            (TargetKind::Disk, Some(("vg-root", &TMETA.1[..68]))),
            (
                TargetKind::Disk,
                Some(("luks-0f3c", "CRYPT-LUKS2-0f3c-luks-0f3c")),
            ),
            (TargetKind::Disk, Some(("mpatha1", "part1-mpath-3600508b4"))),
            (TargetKind::Disk, Some(("off1", ""))),
            (TargetKind::Partition, None),
        ] {
            let r = tiny(kind, dm);
            assert!(!r.partitionable, "{kind} {dm:?}");
            assert_eq!(disagree(&r), None, "{kind} {dm:?}");
            assert_eq!(r.first_start_bytes.fdisk, 34 * 512, "{kind} {dm:?}");
        }
    }
}
