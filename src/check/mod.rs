//! `diskalign check`: partition placement against the topology, each tool's
//! verdict, portability, and the kernel's own view on live devices.

pub mod report;
pub mod rules;
pub mod stack;
pub mod target;
pub mod tools;

use crate::findings::{Code, Finding, Severity};
use crate::layout::{self, PartKind, Table, TableKind};
use crate::stack::assemble::{self, Pending};
use crate::stack::map::Source;
use crate::stack::walk::{self, Region};
use crate::stack::{Layer, LayerKind};
use crate::topology::{self, Disk, Sysfs, Topology, TopologyOverride};
use crate::units::{bridge_opt_why, human, is_bridge_opt, KIB, MIB};
use report::{PartitionReport, TableReport, TargetKind, TargetReport, TopologySource};
use rules::Placement;
use std::path::{Path, PathBuf};
use target::Resolved;
use tools::ToolView;

/// How to run a check.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    pub sysfs: Sysfs,
    pub topology: Option<TopologyOverride>,
}

/// A target that could not be checked, and why.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CheckError {
    pub path: String,
    pub message: String,
}

/// The device nodes of every disk of this machine (or of the sysfs tree).
pub fn default_targets(sysfs: &Sysfs) -> Result<Vec<PathBuf>, CheckError> {
    let names = sysfs.default_disks().map_err(|e| CheckError {
        path: sysfs.root().join("block").display().to_string(),
        message: format!("cannot list disks: {e}"),
    })?;
    Ok(names
        .into_iter()
        .map(|n| PathBuf::from("/dev").join(n))
        .collect())
}

/// Everything one `check` run found.
#[derive(Debug, Default)]
pub struct CheckRun {
    pub targets: Vec<TargetReport>,
    /// md arrays and volume groups put together from the targets.
    pub assembled: Vec<Layer>,
    pub errors: Vec<CheckError>,
}

impl CheckRun {
    /// Any warning or error in a target or an assembled layer.
    pub fn has_problems(&self) -> bool {
        self.targets.iter().any(TargetReport::has_problems)
            || self.assembled.iter().any(|l| {
                l.walk()
                    .iter()
                    .any(|x| x.findings.iter().any(Finding::is_problem))
            })
    }
}

/// Check several targets together: each on its own, then the md arrays and
/// volume groups whose members are spread over them.
pub fn check_all(paths: &[PathBuf], opts: &CheckOptions) -> CheckRun {
    let mut run = CheckRun::default();
    let mut pending = Pending::default();
    for p in paths {
        match check_one(p, opts, &mut pending) {
            Ok(r) => run.targets.push(r),
            Err(e) => run.errors.push(e),
        }
    }
    run.assembled = assemble::assemble(&mut pending);
    for l in &mut run.assembled {
        stack::judge(l);
    }
    for r in &mut run.targets {
        for l in &mut r.stack {
            stack::judge(l);
        }
        r.aligned = !r.has_problems();
        r.verdict = verdict(r);
    }
    run
}

/// Check one target on its own (no assembly across targets).
pub fn check(path: &Path, opts: &CheckOptions) -> Result<TargetReport, CheckError> {
    let mut run = check_all(&[path.to_path_buf()], opts);
    match run.errors.pop() {
        Some(e) => Err(e),
        None => Ok(run.targets.remove(0)),
    }
}

fn check_one(
    path: &Path,
    opts: &CheckOptions,
    pending: &mut Pending,
) -> Result<TargetReport, CheckError> {
    let fail = |message: String| CheckError {
        path: path.display().to_string(),
        message,
    };
    match target::resolve(path, &opts.sysfs).map_err(fail)? {
        Resolved::Image => {
            let src: Source = std::rc::Rc::new(crate::sys::dev::open(path).map_err(fail)?);
            let (topo, source) = match &opts.topology {
                Some(o) => (
                    o.apply(Topology::IMAGE_DEFAULT).map_err(fail)?,
                    TopologySource::Override,
                ),
                None => (Topology::IMAGE_DEFAULT, TopologySource::ImageDefault),
            };
            let input = Input {
                path,
                kind: TargetKind::Image,
                size: src.len(),
                topo,
                source,
                disk: None,
                only: None,
            };
            analyse(&src, input, opts, pending).map_err(fail)
        }
        Resolved::Live { disk, only, node } => {
            let src: Source = std::rc::Rc::new(crate::sys::dev::open(&node).map_err(fail)?);
            let (topo, source) = match &opts.topology {
                Some(o) => (
                    o.apply(disk.topology).map_err(fail)?,
                    TopologySource::Override,
                ),
                None => (disk.topology, TopologySource::Kernel),
            };
            let kind = if only.is_some() {
                TargetKind::Partition
            } else {
                TargetKind::Disk
            };
            let input = Input {
                path,
                kind,
                size: src.len(),
                topo,
                source,
                disk: Some(&disk),
                only,
            };
            analyse(&src, input, opts, pending).map_err(fail)
        }
    }
}

struct Input<'a> {
    path: &'a Path,
    kind: TargetKind,
    size: u64,
    topo: Topology,
    source: TopologySource,
    disk: Option<&'a Disk>,
    only: Option<u32>,
}

fn analyse(
    src: &Source,
    mut input: Input<'_>,
    opts: &CheckOptions,
    pending: &mut Pending,
) -> Result<TargetReport, String> {
    // A live device's sector size is known; an image's only when --topology gives lbs.
    let lbs_known = input.disk.is_some() || opts.topology.is_some_and(|o| o.lbs.is_some());
    let lbs = u64::from(input.topo.logical_block_size);
    let table = layout::read_table(&**src, lbs, lbs_known).map_err(|e| e.to_string())?;
    let mut findings = Vec::new();
    if input.disk.is_none() && table.sector_size != lbs {
        // An image whose table says 4Kn: judge it as the 4Kn disk it was made for.
        let plain = Topology::plain(table.sector_size as u32);
        input.topo = match &opts.topology {
            Some(o) => o.apply(plain)?,
            None => plain,
        };
        findings.push(Finding::new(
            Code::TopologyUnknown,
            format!("the partition table uses {}-byte sectors, so this image is judged as a disk with {}-byte logical blocks", table.sector_size, table.sector_size),
        ));
    }
    if input.source == TopologySource::ImageDefault {
        findings.push(Finding::new(
            Code::TopologyUnknown,
            "image file: the real device is unknown, so the default 512/512/512/0 topology is used and every partition is judged against 4 KiB and 1 MiB anyway (give --topology to ask what-if)",
        ));
    }
    let topo = input.topo;
    match input.disk {
        // The kernel's own view, sysfs against ioctls included.
        Some(d) if input.source == TopologySource::Kernel => {
            findings.extend(d.findings.iter().cloned())
        }
        // A what-if topology: judge the limits given, not the device's ioctls.
        Some(d) => findings.extend(topology::limit_hints(
            &d.name,
            &topo,
            input.size,
            !d.slaves.is_empty(),
            false,
        )),
        None => findings.extend(topology::limit_hints(
            "the image",
            &topo,
            input.size,
            false,
            false,
        )),
    }
    findings.extend(table.findings.iter().cloned());

    let view = ToolView::new(&topo, input.size);
    let ss = table.sector_size;
    let device_sectors = |bytes: u64| bytes / view.lbs;
    let data_starts: Vec<u64> = table
        .partitions
        .iter()
        .filter(|p| p.kind != PartKind::Extended && p.last_lba >= p.first_lba)
        .map(|p| device_sectors(p.first_lba.saturating_mul(ss)))
        .collect();
    let sg_align = tools::sgdisk_alignment(&view, &data_starts);
    let mismatch = table
        .findings
        .iter()
        .any(|f| f.code == Code::TableSectorSizeMismatch);

    findings.extend(structure_findings(&table, input.size));

    let mut partitions = Vec::new();
    for p in &table.partitions {
        if p.last_lba < p.first_lba
            || p.last_lba
                .checked_add(1)
                .and_then(|e| e.checked_mul(ss))
                .is_none()
        {
            continue; // reported by structure_findings
        }
        if input.only.is_some_and(|n| n != p.number) {
            continue;
        }
        let start = p.first_lba * ss;
        let size = (p.last_lba - p.first_lba + 1) * ss;
        let placement = Placement {
            kind: p.kind,
            start,
            size,
        };
        let kpart = input.disk.filter(|_| !mismatch).and_then(|d| {
            d.partitions
                .iter()
                .find(|k| k.number == p.number && k.start_bytes == start)
        });
        // The kernel's own offset only answers for the real topology.
        let kernel_ao = kpart
            .filter(|_| input.source == TopologySource::Kernel)
            .map(|k| k.alignment_offset);
        let mut pf = rules::placement_findings(&topo, &placement, kernel_ao);
        let first = device_sectors(start);
        let last = device_sectors(start + size).saturating_sub(1);
        let verdicts = rules::tool_verdicts(&view, first, last, sg_align);
        if !verdicts.all_agree() && p.kind != PartKind::Extended {
            pf.push(Finding::new(
                Code::ToolsDisagree,
                rules::explain_disagreement(&view, &verdicts, sg_align),
            ));
        }
        let device_block_size = rules::device_block_size(
            topo.logical_block_size,
            rules::node_size(p.kind, topo.logical_block_size, size),
        );
        let device_block_size_kernel = kpart
            .filter(|_| opts.sysfs.is_live())
            .and_then(|k| crate::sys::dev::node_block_size(&Path::new("/dev").join(&k.name)));
        pf.extend(rules::node_block_size_finding(
            device_block_size,
            device_block_size_kernel,
        ));
        let aligned = !pf
            .iter()
            .any(|f| rules::is_placement_code(f.code) && f.is_problem());
        partitions.push(PartitionReport {
            number: p.number,
            kind: p.kind,
            type_id: p.type_id.clone(),
            name: p.name.clone(),
            start_bytes: start,
            end_bytes: start + size - 1,
            size_bytes: size,
            start_sector: p.first_lba,
            end_sector: p.last_lba,
            sectors: p.last_lba - p.first_lba + 1,
            kernel_offset: rules::kernel_offset(&topo, start),
            kernel_alignment_offset: kernel_ao,
            start_alignment: crate::units::alignment_of(start),
            device_block_size,
            device_block_size_kernel,
            aligned,
            tools: verdicts,
            findings: pf,
        });
    }
    if let Some(n) = input.only {
        if partitions.is_empty() {
            return Err(format!(
                "partition {n} is not in the partition table on disk"
            ));
        }
    }
    if let (Some(disk), None, false) = (input.disk, input.only, mismatch) {
        findings.extend(kernel_table_findings(disk, &table));
    }

    let first_start_bytes = tools::first_starts(&view, table.kind == TableKind::Mbr);
    findings.extend(first_start_findings(&topo, &view, &first_start_bytes));
    let data: Vec<&PartitionReport> = partitions
        .iter()
        .filter(|p| p.kind != PartKind::Extended)
        .collect();
    let unportable: Vec<String> = data
        .iter()
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
        .collect();
    let portable = unportable.is_empty();
    let stack = stack_roots(src, &input, &topo, &partitions, opts, pending);
    if !portable {
        findings.push(Finding::new(
            Code::LayoutNotPortable,
            format!(
                "{}: aligned here perhaps, but not under every plausible topology (a 4K disk moved from a USB enclosure, a RAID chunk of 64 KiB to 1 MiB, a 4Kn presentation)",
                unportable.join("; ")
            ),
        ));
    }

    let mut report = TargetReport {
        path: input.path.display().to_string(),
        kind: input.kind,
        disk: input.disk.map(|d| d.name.clone()),
        size_bytes: input.size,
        topology: topo,
        topology_source: input.source,
        partition_table: TableReport {
            kind: table.kind,
            sector_size: ss,
            first_usable_lba: table.usable.map(|u| u.0),
            last_usable_lba: table.usable.map(|u| u.1),
        },
        partitions,
        first_start_bytes,
        portable,
        stack,
        aligned: false,
        verdict: String::new(),
        findings,
    };
    report.aligned = !report.has_problems();
    report.verdict = verdict(&report);
    Ok(report)
}

/// The stack tree of a target: one root per data partition (or the whole
/// device when it has no table), the layers found inside, and on a live
/// system the kernel's holders.
fn stack_roots(
    src: &Source,
    input: &Input<'_>,
    topo: &Topology,
    partitions: &[PartitionReport],
    opts: &CheckOptions,
    pending: &mut Pending,
) -> Vec<Layer> {
    // Offsets are on the whole disk, so layers name the disk, also for a partition target.
    let device = input
        .disk
        .map_or(input.path.to_path_buf(), |d| d.device.clone())
        .display()
        .to_string();
    // Each root with the sysfs directory of its kernel device (live disks only).
    let disk_dir = input
        .disk
        .map(|d| opts.sysfs.root().join("block").join(&d.name));
    let mut regions: Vec<(Layer, Option<PathBuf>)> = Vec::new();
    if partitions.is_empty() && input.only.is_none() {
        let root = Layer::new(
            LayerKind::Device,
            "whole device",
            device.clone(),
            0,
            input.size,
            *topo,
        );
        regions.push((root, disk_dir.clone()));
    }
    for p in partitions.iter().filter(|p| p.kind != PartKind::Extended) {
        let mut root = Layer::new(
            LayerKind::Partition,
            format!("partition {}", p.number),
            device.clone(),
            p.start_bytes,
            p.size_bytes,
            *topo,
        );
        root.aligned = p.aligned;
        let kernel = input
            .disk
            .and_then(|d| d.partitions.iter().find(|k| k.number == p.number));
        let dir = disk_dir.as_ref().zip(kernel).map(|(d, k)| d.join(&k.name));
        regions.push((root, dir));
    }
    let mut out = Vec::new();
    for (mut root, dir) in regions {
        let r = Region {
            src: src.clone(),
            device: device.clone(),
            offset: root.offset_bytes,
            len: root.size_bytes,
            below: *topo,
        };
        root.children.extend(walk::region(&r, pending));
        if let Some(dir) = dir {
            let up = crate::stack::kernel::holders(&opts.sysfs, &dir, *topo, pending);
            // The kernel's device is built from the metadata found at the
            // start (an opened LUKS header, an md member, a PV): it goes
            // above that layer; otherwise above the region itself.
            let built_from = match root.children.as_mut_slice() {
                [one]
                    if matches!(
                        one.kind,
                        LayerKind::Luks | LayerKind::MdMember | LayerKind::LvmPv
                    ) =>
                {
                    &mut one.children
                }
                _ => &mut root.children,
            };
            built_from.extend(up);
        }
        out.push(root);
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
                    out.push(Finding::new(
                        Code::PartitionOutsideDisk,
                        format!("partition {} ends at byte {end}, beyond the end of the device at byte {size}", p.number),
                    ));
                } else if let Some((lo, hi)) = table
                    .usable
                    .filter(|(lo, hi)| p.first_lba < *lo || p.last_lba > *hi)
                {
                    out.push(Finding::new(
                        Code::PartitionOutsideDisk,
                        format!(
                            "partition {} (LBA {}..={}) leaves the GPT usable area {lo}..={hi}",
                            p.number, p.first_lba, p.last_lba
                        ),
                    ));
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
fn first_start_findings(t: &Topology, v: &ToolView, f: &tools::FirstStarts) -> Vec<Finding> {
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
    if is_bridge_opt(v.opt, v.lbs) {
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
    if [f.parted, f.fdisk, f.sgdisk]
        .iter()
        .any(|&b| b % (4 * KIB) != 0 || rules::kernel_offset(t, b) != 0)
    {
        severity = Severity::Warning;
    }
    vec![Finding::new(Code::ToolsDisagree, msg).severity(severity)]
}

/// The one-line summary.
fn verdict(r: &TargetReport) -> String {
    let data: Vec<&PartitionReport> = r
        .partitions
        .iter()
        .filter(|p| p.kind != PartKind::Extended)
        .collect();
    let bad = data.iter().filter(|p| !p.aligned).count();
    let mut s = if data.is_empty() {
        "no partitions".to_string()
    } else if bad == 0 {
        format!("all {} partitions aligned", data.len())
    } else {
        format!("{bad} of {} partitions NOT aligned", data.len())
    };
    s.push_str(if r.portable {
        ", portable"
    } else {
        ", not portable"
    });
    let layers: Vec<&Layer> = r
        .stack
        .iter()
        .flat_map(|l| l.children.iter())
        .flat_map(|l| l.walk())
        .collect();
    if !layers.is_empty() {
        let bad = layers.iter().filter(|l| !l.aligned).count();
        if bad == 0 {
            s.push_str(&format!(", {} stack layers aligned", layers.len()));
        } else {
            s.push_str(&format!(
                ", {bad} of {} stack layers NOT aligned",
                layers.len()
            ));
        }
    }
    let (e, w) = (r.count(Severity::Error), r.count(Severity::Warning));
    if e + w > 0 {
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        s.push_str(&format!(
            " ({}, {})",
            plural(e, "error"),
            plural(w, "warning")
        ));
    }
    s
}
