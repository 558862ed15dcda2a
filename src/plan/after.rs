//! What `check` will still say once the plan has run: the inspection with
//! every partition (and every layer inside it, on the same disk) shifted
//! to its new place, judged again by the same rules.

use super::place::{self, Reach};
use super::remedy;
use super::{boot, hidden, About, Action, DiskPlan, Manual, Step};
use crate::check;
use crate::findings::{Code, FailOn, Finding, Severity};
use crate::inspect::Inspection;
use crate::stack::Layer;

/// One finding the layout change leaves, with the layer it is about
/// and where a command reaches that layer.
#[derive(Clone, Debug)]
pub struct Leaf {
    pub finding: Finding,
    /// None for a partition's or the target's own finding.
    pub layer: Option<Layer>,
    pub reach: Reach,
}

/// What `check` says once the layout has changed: the inspection shifted
/// to the plan, judged again. The findings of warning and above per
/// target (those whose subject is that target: each finding is listed
/// once, where check says it is), and those of the arrays and volume
/// groups assembled across the targets.
pub fn leaves(i: &Inspection, plans: &[DiskPlan]) -> Leaves {
    let after = shifted(i, plans);
    let run = check::judge(after.clone(), FailOn::Warning);
    let disks: Vec<boot::Disk> = after
        .targets
        .iter()
        .zip(plans)
        .map(|(t, p)| super::disk::boot_disk(t, p))
        .collect();
    let places = Places {
        targets: &after.targets,
        run: &run,
        disks: &disks,
    };
    // The script makes the kernel read the new table: what compares with
    // the kernel's current view says nothing about the result then.
    let rereads = |p: &DiskPlan| !p.is_noop();
    let per_target = run
        .targets
        .iter()
        .zip(plans)
        .map(|(t, p)| {
            let serious = |f: &&Finding| f.severity >= Severity::Warning && f.counts();
            let own = |f: &&Finding| f.subject.target.as_deref() == Some(t.path.as_str());
            let stale = |f: &&Finding| rereads(p) && kernel_view(f.code);
            let found = t
                .all_findings()
                .filter(|f| serious(f) && own(f) && !stale(f));
            found.map(|f| places.leaf(f)).collect()
        })
        .collect();
    let assembled = crate::findings::distinct(
        run.assembled
            .iter()
            .flat_map(|l| l.walk())
            .map(|l| l.findings.as_slice()),
    );
    let assembled: Vec<Leaf> = assembled
        .into_iter()
        .filter(|f| f.severity >= Severity::Warning)
        .map(|f| places.leaf(f))
        .collect();
    // The arrays and groups made from each target that check will still
    // warn about: the target's status in check says it too.
    let part_of = run
        .targets
        .iter()
        .map(|t| {
            check::made_from(t, &run.assembled)
                .into_iter()
                .filter(|a| !check::worst(a).is_clean())
                .map(|a| a.name.clone())
                .collect()
        })
        .collect();
    Leaves {
        per_target,
        assembled,
        part_of,
    }
}

/// What check will still report after the layout change.
pub struct Leaves {
    /// Each target's own (its partitions', its layers', its disk's).
    pub per_target: Vec<Vec<Leaf>>,
    /// The arrays' and volume groups' assembled across the targets.
    pub assembled: Vec<Leaf>,
    /// The names of the arrays and groups made from each target that
    /// keep a finding.
    pub part_of: Vec<Vec<String>>,
}

/// The findings that compare what the kernel has registered now (the old
/// table) with the disk.
fn kernel_view(c: Code) -> bool {
    matches!(
        c,
        Code::KernelTableDiffers
            | Code::KernelReportsMisaligned
            | Code::KernelOffsetDiffers
            | Code::NodeBlockSizeDiffers
    )
}

/// The inspection with every moved partition (and every layer inside it,
/// on the same disk) at its new place.
fn shifted(i: &Inspection, plans: &[DiskPlan]) -> Inspection {
    let mut after = i.clone();
    for (t, p) in after.targets.iter_mut().zip(plans) {
        let device = t.layer_device();
        for x in p.partitions.iter().filter(|x| x.action != Action::Keep) {
            if let Some(q) = t.table.partitions.iter_mut().find(|q| q.number == x.number) {
                q.first_lba = x.after.start_sector;
                q.last_lba = x
                    .after
                    .start_sector
                    .saturating_add(x.after.sectors.max(1) - 1);
            }
            let (from, len) = (x.before.start_bytes, x.before.size_bytes);
            let by = x.after.start_bytes as i128 - from as i128;
            let written = p.steps.iter().find_map(|s| match s {
                Step::Move {
                    partition,
                    hidden_sectors,
                    ..
                } if *partition == x.number => hidden_sectors.as_ref(),
                _ => None,
            });
            let mut shift = |l: &mut Layer| {
                if l.device == device && l.offset_bytes >= from && l.offset_bytes - from < len {
                    l.offset_bytes = (l.offset_bytes as i128 + by).max(0) as u64;
                    hidden::shifted(l, by, written);
                }
            };
            for r in &mut t.stack {
                r.layer.walk_mut(&mut shift);
            }
            for l in &mut after.assembled {
                l.walk_mut(&mut shift);
            }
        }
        for r in &mut t.stack {
            if let Some(x) = p.partitions.iter().find(|x| Some(x.number) == r.partition) {
                r.layer.size_bytes = x.after.size_bytes;
            }
        }
    }
    after
}

/// Where the findings of the judged, shifted inspection are.
struct Places<'a> {
    targets: &'a [crate::inspect::Target],
    run: &'a check::CheckRun,
    disks: &'a [boot::Disk],
}

impl Places<'_> {
    /// `f` with its layer and the best way a command reaches it: a device
    /// node (a live holder, partition or disk) before a file, a file
    /// before none.
    fn leaf(&self, f: &Finding) -> Leaf {
        let mut best: Option<(Option<&Layer>, Reach)> = None;
        for (n, chain) in self.occurrences(f) {
            let layer = chain.last().copied();
            let reach = match n {
                Some(n) => place::reach(&self.targets[n], &chain, &self.disks[n], f),
                None => place::unreachable(&chain),
            };
            if best.as_ref().is_none_or(|(_, b)| rank(&reach) < rank(b)) {
                best = Some((layer, reach));
            }
        }
        let (layer, reach) = best.unwrap_or_else(|| self.own(f));
        Leaf {
            finding: f.clone(),
            layer: layer.cloned(),
            reach,
        }
    }

    /// A partition's or a target's own finding: its partition or disk.
    fn own(&self, f: &Finding) -> (Option<&Layer>, Reach) {
        let n = self
            .run
            .targets
            .iter()
            .position(|t| f.subject.target.as_deref() == Some(t.path.as_str()));
        let reach = n.map_or_else(
            || Reach::Not(String::new()),
            |n| place::of_partition(&self.targets[n], f.subject.partition, &self.disks[n]),
        );
        (None, reach)
    }

    /// Every place `f` is shown: the target (None: assembled) and the
    /// layers from its root down to the one holding it.
    fn occurrences(&self, f: &Finding) -> Vec<(Option<usize>, Vec<&Layer>)> {
        let mut out = Vec::new();
        for (n, t) in self.run.targets.iter().enumerate() {
            for r in &t.stack {
                find(r, &mut vec![], f, Some(n), &mut out);
            }
        }
        for a in &self.run.assembled {
            find(a, &mut vec![], f, None, &mut out);
        }
        out
    }
}

/// Collect the chains from `l` down to each layer holding `f`.
fn find<'a>(
    l: &'a Layer,
    chain: &mut Vec<&'a Layer>,
    f: &Finding,
    n: Option<usize>,
    out: &mut Vec<(Option<usize>, Vec<&'a Layer>)>,
) {
    chain.push(l);
    if l.findings
        .iter()
        .any(|g| g.code == f.code && g.subject == f.subject)
    {
        out.push((n, chain.clone()));
    }
    for c in &l.children {
        find(c, chain, f, n, out);
    }
    chain.pop();
}

/// Node first, then a file, then none.
fn rank(r: &Reach) -> u8 {
    match r {
        Reach::Node { .. } => 0,
        Reach::File { .. } => 1,
        Reach::Not(_) => 2,
    }
}

/// What to do by hand about the findings a partition change cannot fix:
/// for each, its remedy (`remedy::remedy`): the commands that clear it,
/// or why none does.
/// Only those with something to do: what nothing on the disk changes (a
/// hint the device reports) is said under what check will still report.
pub fn manual(leaves: &[Leaf], disk: &boot::Disk) -> Vec<Manual> {
    leaves
        .iter()
        .filter_map(|l| {
            let f = &l.finding;
            let r = remedy::remedy(f, l.layer.as_ref(), &l.reach, disk);
            r.work.then(|| Manual {
                partition: f.subject.partition,
                why: format!(
                    "{} ({}): {}",
                    f.code,
                    f.subject.layer.as_deref().unwrap_or("the partition"),
                    r.why
                ),
                commands: r.commands,
                about: Some(About {
                    code: f.code,
                    subject: f.subject.clone(),
                }),
                clears: r.clears,
            })
        })
        .collect()
}
