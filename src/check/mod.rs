//! `check`: pure rules over an [`Inspection`]: partition placement against
//! the topology, each tool's verdict, portability, the kernel's own view on
//! live devices, and the stack's layers. No I/O happens here; `inspect`
//! read everything first.

pub mod inherit;
pub mod report;
pub mod rules;
pub mod stack;
pub mod start;
pub mod summary;
pub mod tools;

use crate::errors::TargetError;
use crate::findings::{Code, Facts, FailOn, Finding, Severity, Status};
use crate::inspect::{self, Inspection, Target};
use crate::layout::{self, PartKind, Table, TableKind};
use crate::stack::Layer;
use crate::topology::{self, Disk, Topology};
use crate::units::{bridge_opt_why, human, is_bridge_opt, KIB, MIB};
use report::{PartitionReport, TableReport, TargetReport, TopologySource};
use rules::Placement;
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
    pub targets: Vec<TargetReport>,
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
    judge(i, fail_on)
}

/// Check one target on its own (no assembly across targets).
pub fn check(path: &Path, opts: &CheckOptions) -> Result<TargetReport, TargetError> {
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
        report::assign_subjects(None, None, l, "");
    }
    for r in &mut run.targets {
        r.assign_subjects();
        r.summary = summary::target(r);
        r.aligned = r.summary.status.is_clean();
        r.verdict = verdict(r);
    }
    run.summary = summary::run(&run.targets, &run.assembled, run.errors.len(), fail_on);
    run
}

/// The findings about a target's topology: the kernel's own view, or the
/// limits given for a what-if.
fn topology_findings(t: &Target) -> Vec<Finding> {
    let mut out = t.notes.clone();
    if t.source == TopologySource::ImageDefault {
        out.push(Finding::new(
            Code::TopologyUnknown,
            "image file: the real device is unknown, so the default 512/512/512/0 topology is used and every partition is judged against 4 KiB and 1 MiB anyway (give --topology to ask what-if)",
        ));
    }
    let topo = &t.topology;
    match &t.disk {
        // The kernel's own view, sysfs against ioctls included.
        Some(d) if t.source == TopologySource::Kernel => out.extend(d.findings.iter().cloned()),
        // A what-if topology: judge the limits given, not the device's ioctls.
        Some(d) => out.extend(topology::limit_hints(
            &d.name,
            topo,
            t.size,
            !d.slaves.is_empty(),
            false,
        )),
        None => out.extend(topology::limit_hints(
            "the image",
            topo,
            t.size,
            false,
            false,
        )),
    }
    out
}

fn target(t: Target, regions: &mut inherit::Regions) -> TargetReport {
    let mut findings = topology_findings(&t);
    let table = &t.table;
    findings.extend(table.findings.iter().cloned());
    let view = ToolView::new(&t.topology, t.size);
    let mismatch = table
        .findings
        .iter()
        .any(|f| f.code == Code::TableSectorSizeMismatch);
    findings.extend(structure_findings(table, t.size));
    let partitions = partition_reports(&t, &view, mismatch);
    if let (Some(disk), None, false) = (&t.disk, t.only, mismatch) {
        findings.extend(kernel_table_findings(disk, table));
    }
    let first_start_bytes = tools::first_starts(&view, table.kind == TableKind::Mbr);
    let empty = t.table.partitions.is_empty();
    findings.extend(first_start_findings(
        &t.topology,
        &view,
        &first_start_bytes,
        empty,
    ));
    let unportable = unportable(&partitions);
    let portable = unportable.is_empty();
    if !portable {
        findings.push(Finding::new(
            Code::LayoutNotPortable,
            format!(
                "{}: aligned here perhaps, but not under every plausible topology (a 4K disk moved from a USB enclosure, a RAID chunk of 64 KiB to 1 MiB, a 4Kn presentation)",
                unportable.join("; ")
            ),
        ));
    }
    let path = t.path.display().to_string();
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
            let cause = part
                .and_then(|p| inherit::cause_of(&l.name, &p.findings, inherit::is_partition_start));
            regions.target_root(&mut l, &path, cause);
            report::assign_subjects(Some(&path), root.partition, &mut l, "");
            l
        })
        .collect();
    TargetReport {
        path,
        kind: t.kind,
        disk: t.disk.as_ref().map(|d| d.name.clone()),
        serial: t.disk.as_ref().and_then(|d| d.serial.clone()),
        wwn: t.disk.as_ref().and_then(|d| d.wwn.clone()),
        model: t.disk.as_ref().and_then(|d| d.model.clone()),
        size_bytes: t.size,
        topology: t.topology,
        topology_source: t.source,
        partition_table: TableReport {
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
        summary: summary::TargetSummary::default(),
    }
}

/// Why each data partition is not portable.
fn unportable(partitions: &[PartitionReport]) -> Vec<String> {
    partitions
        .iter()
        .filter(|p| p.kind != PartKind::Extended)
        .filter(|p| p.start_bytes % MIB != 0 || (p.end_bytes + 1) % (4 * KIB) != 0)
        .map(|p| {
            if p.start_bytes % MIB != 0 {
                format!(
                    "partition {} starts on a {} boundary, not 1 MiB",
                    p.number,
                    human(p.start_alignment)
                )
            } else {
                format!("partition {} ends off 4 KiB", p.number)
            }
        })
        .collect()
}

/// Each valid partition judged: placement, the tools, the node block size.
fn partition_reports(t: &Target, view: &ToolView, mismatch: bool) -> Vec<PartitionReport> {
    let topo = &t.topology;
    let ss = t.table.sector_size;
    let device_sectors = |bytes: u64| bytes / view.lbs;
    let data_starts: Vec<u64> = t
        .table
        .partitions
        .iter()
        .filter(|p| p.kind != PartKind::Extended && p.last_lba >= p.first_lba)
        .map(|p| device_sectors(p.first_lba.saturating_mul(ss)))
        .collect();
    let sg_align = tools::sgdisk_alignment(view, &data_starts);
    let mut out = Vec::new();
    for p in t.partitions() {
        let start = p.first_lba * ss;
        let size = (p.last_lba - p.first_lba + 1) * ss;
        let placement = Placement {
            kind: p.kind,
            start,
            size,
        };
        let kpart = t.disk.as_ref().filter(|_| !mismatch).and_then(|d| {
            d.partitions
                .iter()
                .find(|k| k.number == p.number && k.start_bytes == start)
        });
        // The kernel's own offset only answers for the real topology.
        let kernel_ao = kpart
            .filter(|_| t.source == TopologySource::Kernel)
            .map(|k| k.alignment_offset);
        let mut pf = rules::placement_findings(topo, &placement, kernel_ao);
        let first = device_sectors(start);
        let last = device_sectors(start + size).saturating_sub(1);
        let verdicts = rules::tool_verdicts(view, first, last, sg_align);
        if !verdicts.all_agree() && p.kind != PartKind::Extended {
            pf.push(Finding::new(
                Code::ToolsDisagree,
                rules::explain_disagreement(view, &verdicts, sg_align),
            ));
        }
        let device_block_size = rules::device_block_size(
            topo.logical_block_size,
            rules::node_size(p.kind, topo.logical_block_size, size),
        );
        let device_block_size_kernel = kpart.and_then(|k| t.node_block_size(k.number));
        pf.extend(rules::node_block_size_finding(
            device_block_size,
            device_block_size_kernel,
        ));
        let status = Status::of(pf.iter().filter(|f| rules::is_placement_code(f.code)));
        out.push(PartitionReport {
            number: p.number,
            kind: p.kind,
            type_id: p.type_id.clone(),
            name: p.name.clone(),
            partuuid: p.uuid.clone(),
            start_bytes: start,
            end_bytes: start + size - 1,
            size_bytes: size,
            start_sector: p.first_lba,
            end_sector: p.last_lba,
            sectors: p.last_lba - p.first_lba + 1,
            kernel_offset: rules::kernel_offset(topo, start),
            kernel_alignment_offset: kernel_ao,
            start_alignment: crate::units::alignment_of(start),
            device_block_size,
            device_block_size_kernel,
            aligned: status.is_clean(),
            status,
            tools: verdicts,
            findings: pf,
        });
    }
    out
}

/// Entries that are malformed, overlap, or leave the disk.
fn structure_findings(table: &Table, size: u64) -> Vec<Finding> {
    let ss = table.sector_size;
    let mut out = Vec::new();
    let mut valid = Vec::new();
    for p in &table.partitions {
        let end = p.last_lba.checked_add(1).and_then(|e| e.checked_mul(ss));
        match end {
            Some(end) if p.last_lba >= p.first_lba => {
                if end > size {
                    let facts = Facts {
                        end_bytes: Some(end),
                        size_bytes: Some(size),
                        ..Facts::default()
                    };
                    out.push(Finding::new(
                        Code::PartitionOutsideDisk,
                        format!("partition {} ends at byte {end}, beyond the end of the device at byte {size}", p.number),
                    ).with_facts(facts));
                } else if let Some((lo, hi)) = table
                    .usable
                    .filter(|(lo, hi)| p.first_lba < *lo || p.last_lba > *hi)
                {
                    let facts = Facts {
                        offset_bytes: Some(p.first_lba.saturating_mul(ss)),
                        end_bytes: Some(end),
                        ..Facts::default()
                    };
                    out.push(
                        Finding::new(
                            Code::PartitionOutsideDisk,
                            format!(
                                "partition {} (LBA {}..={}) leaves the GPT usable area {lo}..={hi}",
                                p.number, p.first_lba, p.last_lba
                            ),
                        )
                        .with_facts(facts),
                    );
                }
                valid.push(p);
            }
            _ => out.push(Finding::new(
                Code::PartitionInvalid,
                format!(
                    "partition {} runs from LBA {} to LBA {}: end before start or beyond any disk",
                    p.number, p.first_lba, p.last_lba
                ),
            )),
        }
    }
    for (i, a) in valid.iter().enumerate() {
        for b in &valid[i + 1..] {
            let container = |x: &layout::Partition, y: &layout::Partition| {
                x.kind == PartKind::Extended && y.kind == PartKind::Logical
            };
            if container(a, b) || container(b, a) {
                continue;
            }
            if a.first_lba <= b.last_lba && b.first_lba <= a.last_lba {
                out.push(Finding::new(
                    Code::PartitionOverlap,
                    format!(
                        "partitions {} (LBA {}..={}) and {} (LBA {}..={}) overlap",
                        a.number, a.first_lba, a.last_lba, b.number, b.first_lba, b.last_lba
                    ),
                ));
            }
        }
    }
    out
}

/// Compare the table on disk with what the kernel registered.
fn kernel_table_findings(disk: &Disk, table: &Table) -> Vec<Finding> {
    let ss = table.sector_size;
    let ours: Vec<_> = table
        .partitions
        .iter()
        .filter(|p| p.last_lba >= p.first_lba)
        .collect();
    if disk.partitions.is_empty() {
        if ours.is_empty() {
            return vec![];
        }
        return vec![Finding::new(
            Code::KernelTableDiffers,
            format!(
                "the kernel has registered none of the {} partitions on {} (partition scanning off, or the table changed since: `partx -a {}` or `partprobe` makes it re-read)",
                ours.len(),
                disk.name,
                disk.device.display()
            ),
        )
        .severity(Severity::Info)];
    }
    let mut diffs = Vec::new();
    for p in &ours {
        let start = p.first_lba.saturating_mul(ss);
        let size = (p.last_lba - p.first_lba + 1).saturating_mul(ss);
        match disk.partitions.iter().find(|k| k.number == p.number) {
            None => diffs.push(format!("partition {} is not registered", p.number)),
            Some(k) if k.start_bytes != start => diffs.push(format!(
                "partition {} starts at byte {} for the kernel, {start} on disk",
                p.number, k.start_bytes
            )),
            Some(k) if p.kind != PartKind::Extended && k.size_bytes != size => diffs.push(format!(
                "partition {} is {} bytes for the kernel, {size} on disk",
                p.number, k.size_bytes
            )),
            _ => {}
        }
    }
    for k in &disk.partitions {
        if !ours.iter().any(|p| p.number == k.number) {
            diffs.push(format!(
                "the kernel has partition {} ({}) that the table on disk does not",
                k.number, k.name
            ));
        }
    }
    if diffs.is_empty() {
        return vec![];
    }
    vec![Finding::new(
        Code::KernelTableDiffers,
        format!(
            "{}; run `partx -u {}` or `partprobe` to make the kernel re-read the table",
            diffs.join("; "),
            disk.device.display()
        ),
    )]
}

/// Say where the tools would put the first partition when they differ.
/// On a disk that has partitions this is about an imaginary empty disk:
/// advice (info), never a warning.
fn first_start_findings(
    t: &Topology,
    v: &ToolView,
    f: &tools::FirstStarts,
    empty: bool,
) -> Vec<Finding> {
    if f.parted == f.fdisk && f.fdisk == f.sgdisk {
        return vec![];
    }
    let show = |b: u64| format!("byte {b} ({}, sector {})", human(b), b / v.lbs);
    let mut msg = format!(
        "on an empty disk with this topology the first partition would start at {} with parted -a optimal, {} with fdisk/sfdisk, {} with sgdisk",
        show(f.parted),
        show(f.fdisk),
        show(f.sgdisk)
    );
    let mut severity = Severity::Info;
    if tools::fdisk_tiny(v) {
        msg.push_str(&format!(
            ": on a disk of at most 4 × their {} grain fdisk/sfdisk drop it to the physical sector ({} bytes) and start at the first usable sector; parted and sgdisk keep their grain",
            human(tools::fdisk_usual_grain(v)),
            v.pbs
        ));
    } else if is_bridge_opt(v.opt, v.lbs) {
        msg.push_str(&format!(
            ": optimal_io_size is {}: {}, and sgdisk never reads it",
            v.opt,
            bridge_opt_why(v.opt, v.lbs, v.pbs)
        ));
    } else if v.ao != 0 {
        msg.push_str(&format!(
            ": fdisk and parted shift starts by the alignment offset {}, sgdisk ignores it",
            v.ao
        ));
    } else {
        msg.push_str(": parted aligns to the optimal I/O size when 1 MiB is not a multiple of it, fdisk to max(optimal I/O, 1 MiB), sgdisk always to 1 MiB");
    }
    // A warning when some tool's default would itself be misaligned.
    if empty
        && [f.parted, f.fdisk, f.sgdisk]
            .iter()
            .any(|&b| b % (4 * KIB) != 0 || rules::kernel_offset(t, b) != 0)
    {
        severity = Severity::Warning;
    }
    vec![Finding::new(Code::ToolsDisagree, msg).severity(severity)]
}

/// The one-line summary: the status word, then what it comes from.
fn verdict(r: &TargetReport) -> String {
    let sum = &r.summary;
    let registered = if r.partition_table.kind == TableKind::Kernel {
        " registered"
    } else {
        ""
    };
    // What is damaged first: the verdict alone (-q, a cron mail) says it.
    let mut parts = damage(r);
    parts.push(match sum.partitions {
        0 => format!("no partitions{registered}"),
        n => tally(
            n,
            "partition",
            r.partitions
                .iter()
                .filter(|p| p.kind != PartKind::Extended)
                .map(|p| p.status),
        ),
    });
    if sum.partitions > 0 {
        parts.push(
            if r.portable {
                "portable"
            } else {
                "not portable"
            }
            .into(),
        );
    }
    if sum.layers > 0 {
        let statuses = summary::layers(r).into_iter().map(|l| l.status);
        parts.push(tally(sum.layers, "stack layer", statuses));
    }
    format!(
        "{}: {} ({})",
        sum.status.word(),
        parts.join(", "),
        sum.findings.phrase()
    )
}

/// The target's damage in a few words each: "primary GPT damaged (the
/// backup was used)", once per code.
fn damage(r: &TargetReport) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let damaged = r
        .all_findings()
        .filter(|f| Status::of([*f]) == Status::Damaged);
    for f in damaged {
        let words = match f.code {
            Code::GptPrimaryInvalid => "primary GPT damaged (the backup was used)",
            Code::GptBackupInvalid => "backup GPT damaged",
            Code::PartitionOverlap => "partitions overlap",
            Code::PartitionOutsideDisk => "a partition leaves the disk",
            Code::PartitionInvalid => "an invalid partition entry",
            Code::ProtectiveMbrWithoutGpt => "a protective MBR without its GPT",
            _ => "layer metadata damaged",
        };
        if !out.iter().any(|w| w == words) {
            out.push(words.to_string());
        }
    }
    out
}

/// "1 partition aligned", "all 3 partitions aligned", "1 of 3 partitions
/// MISALIGNED, 1 untidy".
fn tally(n: usize, noun: &str, statuses: impl Iterator<Item = Status>) -> String {
    let mut by: Vec<(Status, usize)> = Vec::new();
    for s in statuses {
        match by.iter_mut().find(|(x, _)| *x == s) {
            Some((_, c)) => *c += 1,
            None => by.push((s, 1)),
        }
    }
    by.sort_by_key(|b| std::cmp::Reverse(b.0));
    let nouns = if n == 1 {
        noun.to_string()
    } else {
        format!("{noun}s")
    };
    // "inherits" is a verb: "1 inherits", "2 inherit" (a misalignment).
    let word = |s: Status, c: usize| match (s, c) {
        (Status::Inherits, 1) => "inherits a misaligned offset".to_string(),
        (Status::Inherits, _) => "inherit a misaligned offset".to_string(),
        _ => s.to_string(),
    };
    match by.as_slice() {
        [(s, _)] if n == 1 => format!("1 {nouns} {}", word(*s, 1)),
        [(s, _)] => format!("all {n} {nouns} {}", word(*s, n)),
        [(s, c), rest @ ..] => {
            let mut t = format!("{c} of {n} {nouns} {}", word(*s, *c));
            for (s, c) in rest.iter().filter(|(s, _)| *s != Status::Aligned) {
                t.push_str(&format!(", {c} {}", word(*s, *c)));
            }
            t
        }
        [] => format!("no {nouns}"),
    }
}
