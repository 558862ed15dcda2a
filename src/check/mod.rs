//! `check`: pure rules over an [`Inspection`]: partition placement against
//! the topology, each tool's verdict, portability, the kernel's own view on
//! live devices, and the stack's layers. No I/O happens here; `inspect`
//! read everything first.

mod container;
pub mod declared;
mod device;
mod disagree;
pub mod document;
#[cfg(test)]
pub(crate) mod fixture;
pub mod inherit;
pub mod outcome;
mod partitions;
pub mod placement;
mod portable;
pub mod stack;
pub mod start;
mod structure;
mod subjects;
pub mod summary;
pub mod tools;
mod verdict;
mod zones;

use crate::errors::TargetError;
use crate::findings::{Code, FailOn};
use crate::inspect::{self, Inspection, Target};
use crate::layout::{PartKind, TableKind};
use crate::stack::Layer;
use outcome::{CheckedTable, CheckedTarget};
use std::path::{Path, PathBuf};
use tools::ToolView;

pub use crate::inspect::default_targets;
/// How to run a check: what `inspect` reads with.
pub use crate::inspect::InspectOptions as CheckOptions;

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
    };
    for l in &mut run.assembled {
        stack::judge(l);
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
    run.summary = summary::run(&run.targets, &run.assembled, run.errors.len(), fail_on);
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
    if first_start_bytes.any_fits(t.size, view.lbs) {
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
            stack::judge(&mut l);
            declared::layer_findings(says.as_ref(), &layer_device, &mut l);
            declared::measured_findings(t.measured.as_ref(), &mut l);
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
        portable,
        stack,
        aligned: false,
        verdict: String::new(),
        findings,
        summary: outcome::TargetSummary::default(),
        next: None,
    }
}
