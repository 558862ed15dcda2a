//! `plan`: from the findings to a fix that keeps the data. Pure: it reads
//! an inspection and proposes, it never writes (the script it can be
//! rendered to is for the user to read and run).
//!
//! Per disk: every partition's new start (on 1 MiB, or on a larger stripe
//! width below) and end (on 4 KiB where that is free), the data moves in
//! an order that never writes over data not yet moved, the steps (backups
//! first), what must be done by hand (layers inside), what cannot be done
//! without loss, and what `check` will still report afterwards (the
//! inspection shifted to the new layout and judged again).

mod after;
mod boot;
mod container;
mod content;
mod disk;
mod hidden;
mod identity;
mod layout;
mod new_disk;
mod next;
mod place;
mod recipes;
mod remedy;

/// One disk's plan.
pub use disk::plan_disk;
/// Volumes made by the real mkfs tools, read, for other modules' tests.
#[cfg(test)]
pub(crate) use hidden::tests as volume_fixtures;
/// The start a FAT, exFAT or NTFS boot sector records, as a move rewrites
/// it.
pub use hidden::{HiddenSectors, Voice};
/// Whether a GPT's damage is one `sgdisk -e` repairs.
pub use identity::gpt_repairable;
/// A new disk's layout (`plan --new`).
pub use new_disk::{parse_sizes, plan_new_disk, removable_mkfs, NewDisk};
/// `check`'s sequence (read, judge, the `next:` steps) and its parts.
pub use next::{check_run, next_commands, next_options, Checked, Next};

use crate::check::is_placement_code;
use crate::errors::TargetError;
use crate::findings::{Code, Finding};
use crate::inspect::Inspection;
use crate::layout::{PartKind, TableKind};
use crate::stack::FsKind;
use crate::units::MIB;
use serde::Serialize;

/// How the plan estimates and moves.
#[derive(Clone, Debug)]
pub struct PlanOptions {
    /// Bytes per second a move is assumed to copy (for the estimate).
    pub throughput: u64,
    /// Bytes one copy step moves (the script's resume granularity).
    pub chunk: u64,
    /// The options the plan was made with that a plan or check it names
    /// takes too (` --topology SPEC --probe RUN.json`: `next::next_options`),
    /// so those commands judge as this one did.
    pub again: String,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            throughput: 100 * MIB,
            chunk: 4 * MIB,
            again: String::new(),
        }
    }
}

/// A partition's place in table sectors and in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Extent {
    pub start_sector: u64,
    pub sectors: u64,
    pub start_bytes: u64,
    pub size_bytes: u64,
}

impl Extent {
    pub fn new(start: u64, sectors: u64, ss: u64) -> Self {
        Extent {
            start_sector: start,
            sectors,
            start_bytes: start.saturating_mul(ss),
            size_bytes: sectors.saturating_mul(ss),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Keep,
    Move,
    Resize,
    MoveResize,
}

crate::spelled_as_serde!(Action);

/// One partition before and after.
#[derive(Clone, Debug, Serialize)]
pub struct PartPlan {
    pub number: u32,
    pub kind: PartKind,
    /// What lives in it ("ext4 filesystem", "LVM PV of vg0", ...).
    pub content: String,
    /// Bytes its content needs from the start, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_bytes: Option<u64>,
    pub before: Extent,
    pub after: Extent,
    pub action: Action,
}

/// Bytes of the disk from `start_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Span {
    pub start_bytes: u64,
    pub bytes: u64,
}

/// One entry of the table as `sfdisk --dump` lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub number: u32,
    pub start: u64,
    pub size: u64,
}

/// A filesystem shrunk in place, where its partition is before any table
/// change.
#[derive(Clone, Debug, Serialize)]
pub struct Shrink {
    pub partition: u32,
    pub filesystem: FsKind,
    pub partition_start_bytes: u64,
    pub partition_size_bytes: u64,
    pub block_size: u64,
    pub from_bytes: u64,
    pub to_bytes: u64,
}

/// One step of the plan, in the order it runs.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum Step {
    /// Save the table (and the VG metadata) before anything changes.
    Backup {
        table: TableKind,
        volume_groups: Vec<String>,
    },
    /// Shrink the ext4 filesystem in a partition (e2fsck -f, resize2fs)
    /// so the partition can become smaller; runs before any table change.
    Shrink(Shrink),
    /// Copy a partition's data to its new start (before the table changes).
    Move {
        partition: u32,
        from_bytes: u64,
        to_bytes: u64,
        copy_bytes: u64,
        chunk_bytes: u64,
        /// The FAT, exFAT or NTFS volume in it records its start in its
        /// boot sectors: checked before the copy, the new start written
        /// after it (before the entry changes).
        #[serde(skip_serializing_if = "Option::is_none")]
        hidden_sectors: Option<HiddenSectors>,
    },
    /// Rebuild the primary GPT (header and entries) from the intact
    /// backup at the disk's last LBA, before any other change.
    RepairGpt {
        /// The backup header's LBA (the last one of the disk).
        backup_lba: u64,
        /// Bytes from the disk's start to its first usable LBA (protective
        /// MBR, primary header and entries): the script saves them as they
        /// were before it writes.
        primary_bytes: u64,
    },
    /// Rewrite one table entry (`sfdisk -N`).
    Table {
        partition: u32,
        before: Extent,
        after: Extent,
        /// The whole table before and after this step, as `sfdisk --dump`
        /// lists it: the script checks the disk against them.
        table_before: Vec<Entry>,
        table_after: Vec<Entry>,
        /// The bytes the new end leaves out of a partition in which
        /// nothing was recognised: zero when planned, and the script
        /// checks they still are before it changes anything.
        #[serde(skip_serializing_if = "Option::is_none")]
        zero_tail: Option<Span>,
    },
}

/// Something the plan cannot do for the user: a command to run by hand,
/// or a reason.
#[derive(Clone, Debug, Serialize)]
pub struct Manual {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<u32>,
    pub why: String,
    /// Commands that run as printed, on the disk (or raw copy) planned.
    pub commands: Vec<String>,
    /// The finding this entry is about, as check names it (None for a
    /// note of the plan's own: a boot note, the raw copy's steps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub about: Option<About>,
    /// Its commands clear that finding: check no longer reports it once
    /// they have run (false for steps said in words).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub clears: bool,
}

/// The finding a by-hand entry is about, as check names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct About {
    pub code: Code,
    pub subject: crate::findings::Subject,
}

/// The findings of `leaves` that no entry of `manual` clears: what check
/// still reports once the script and the commands by hand have run.
pub fn remains(leaves: &[Finding], manual: &[Manual]) -> Vec<Finding> {
    leaves
        .iter()
        .filter(|f| {
            !manual
                .iter()
                .filter(|m| m.clears)
                .filter_map(|m| m.about.as_ref())
                .any(|x| x.code == f.code && x.subject == f.subject)
        })
        .cloned()
        .collect()
}

/// Which disk the plan was made for, as the script checks it before
/// every step: a disk that differs in any of these is another disk (two
/// RAID1 members with identical tables that swapped names).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Identity {
    /// The absolute path the script works on (an image's path as typed
    /// made absolute, so the script runs from any directory).
    pub script_path: String,
    pub size_bytes: u64,
    /// The table's PTUUID as libblkid spells it (GPT disk GUID, DOS disk
    /// signature); absent for a DOS signature of zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ptuuid: Option<String>,
    /// The disk's serial and world-wide name from sysfs (live disks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wwn: Option<String>,
}

/// The plan for one disk or image.
#[derive(Clone, Debug, Serialize)]
pub struct DiskPlan {
    pub path: String,
    /// What the script checks before every step.
    pub identity: Identity,
    /// An image file (the script works on the file; no mounts to check).
    pub image: bool,
    pub table: TableKind,
    pub sector_size: u64,
    pub start_grain_bytes: u64,
    /// Why starts go on that grain.
    pub start_grain_why: String,
    pub end_grain_bytes: u64,
    pub partitions: Vec<PartPlan>,
    pub steps: Vec<Step>,
    /// Layers to fix by hand, and fixes the script cannot make.
    pub manual: Vec<Manual>,
    /// Why the plan cannot be done without loss; when not empty, no script.
    pub refused: Vec<String>,
    /// Why no script is written although the plan keeps the data: an
    /// image container, fixed through a raw copy (the steps are in
    /// `manual`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script_refused: Option<String>,
    /// What to take offline first (unmount, deactivate, close).
    pub offline: Vec<String>,
    /// What `check` will still report (warnings and errors) after the
    /// plan's script (the layout change).
    pub leaves: Vec<Finding>,
    /// What it will still report once the commands by hand have run too:
    /// the leaves no entry of `manual` clears.
    pub remains: Vec<Finding>,
    /// The arrays and volume groups assembled from this disk (with the
    /// others planned) that check will still warn about: said under
    /// `assembled_leaves`, and part of this disk's status in check.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub part_of: Vec<String>,
    /// For a container: the commands its raw copy gets right after the
    /// script (a moved boot sector's start), until the route is made.
    #[serde(skip)]
    pub after_script: Vec<String>,
    pub bytes_to_move: u64,
    pub estimated_seconds: f64,
}

impl DiskPlan {
    /// Nothing to do: every partition stays as it is.
    pub fn is_noop(&self) -> bool {
        self.steps.iter().all(|s| matches!(s, Step::Backup { .. }))
    }

    /// Something for the user to do: steps for the script, or a command
    /// to run by hand first. `plan` exits 1 then, as `check` does on the
    /// findings it would fix. What no command fixes (a topology hint the
    /// disk reports) is in `leaves` only, and is no work.
    pub fn has_work(&self) -> bool {
        self.refused.is_empty() && (!self.is_noop() || !self.manual.is_empty())
    }

    /// The steps as the script numbers and runs them, from 1: each its
    /// own, but a partition's copy together with the rewrite of its entry
    /// that follows it (one function of the script). The human plan, its
    /// page and the script's messages all number them so.
    pub fn script_steps(&self) -> Vec<Vec<&Step>> {
        let mut out: Vec<Vec<&Step>> = Vec::new();
        let mut copy: Option<&Step> = None;
        for s in &self.steps {
            match s {
                Step::Move { .. } => copy = Some(s),
                Step::Table { .. } => out.push(copy.take().into_iter().chain([s]).collect()),
                _ => out.push(vec![s]),
            }
        }
        out.extend(copy.map(|c| vec![c]));
        out
    }

    /// The plan rebuilds the primary GPT from its backup.
    pub fn repairs_gpt(&self) -> bool {
        self.steps
            .iter()
            .any(|s| matches!(s, Step::RepairGpt { .. }))
    }
}

/// Everything one `plan` run proposes.
#[derive(Clone, Debug, Serialize)]
pub struct PlanRun {
    pub throughput_bytes_per_second: u64,
    pub targets: Vec<DiskPlan>,
    /// What check will still report on arrays and volume groups assembled
    /// across the targets.
    pub assembled_leaves: Vec<Finding>,
    /// What to do by hand about them (said once, not under each disk).
    pub assembled_manual: Vec<Manual>,
    /// What check still reports on them once that is done.
    pub assembled_remains: Vec<Finding>,
    pub errors: Vec<TargetError>,
}

impl PlanRun {
    /// True when some disk has something to do: steps, or commands to
    /// run by hand first (exit status 1).
    pub fn has_changes(&self) -> bool {
        self.targets.iter().any(DiskPlan::has_work) || !self.assembled_manual.is_empty()
    }

    pub fn refused(&self) -> bool {
        self.targets.iter().any(|t| !t.refused.is_empty())
    }
}

/// The `plan` command's run: `paths` read, their plan, and the disks as
/// they are now, judged (what the page maps before the plan).
pub fn plan_targets(
    paths: &[std::path::PathBuf],
    opts: &crate::inspect::InspectOptions,
    plan_opts: &PlanOptions,
) -> (PlanRun, crate::check::CheckRun) {
    let inspection = crate::inspect::inspect(paths, opts);
    let now = crate::check::judge(inspection.clone(), crate::findings::FailOn::default());
    (plan(inspection, plan_opts), now)
}

/// The `plan --new` command's run: `disk` read and a new layout of
/// `sizes` (as `--sizes` gives them) laid out on it. Err: the line that
/// says why not (None: nothing was read and nothing to say).
pub fn plan_new_target(
    disk: &std::path::Path,
    sizes: &str,
    label: TableKind,
    opts: &crate::inspect::InspectOptions,
) -> Result<NewDisk, Option<String>> {
    let sizes = parse_sizes(sizes).map_err(|e| Some(format!("--sizes: {e}")))?;
    let i = crate::inspect::inspect(&[disk.to_path_buf()], opts);
    if let Some(e) = i.errors.first() {
        return Err(Some(e.to_string()));
    }
    let t = i.targets.first().ok_or(None)?;
    Ok(plan_new_disk(t, &sizes, label))
}

/// Plan every target of an inspection.
pub fn plan(i: Inspection, opts: &PlanOptions) -> PlanRun {
    let mut targets: Vec<DiskPlan> = i.targets.iter().map(|t| disk::plan_disk(t, opts)).collect();
    let after::Leaves {
        per_target,
        assembled,
        part_of,
    } = after::leaves(&i, &targets);
    for ((t, p), l) in i.targets.iter().zip(targets.iter_mut()).zip(per_target) {
        by_hand(t, p, l, &opts.again);
    }
    for (p, names) in targets.iter_mut().zip(part_of) {
        p.part_of = names;
    }
    // What is assembled across the targets is fixed once, by hand, where a
    // device names it (the first target's disk for the words' sake).
    let disk = i
        .targets
        .first()
        .zip(targets.first())
        .map(|(t, p)| disk::boot_disk(t, p));
    let assembled_manual: Vec<Manual> = match &disk {
        Some(d) => after::manual(&assembled, d),
        None => Vec::new(),
    };
    let assembled_leaves: Vec<Finding> = assembled.into_iter().map(|l| l.finding).collect();
    PlanRun {
        throughput_bytes_per_second: opts.throughput,
        assembled_remains: remains(&assembled_leaves, &assembled_manual),
        assembled_leaves,
        assembled_manual,
        targets,
        errors: i.errors,
    }
}

/// One disk's leaves, its notes by hand for them, and what remains; a
/// container then gets its raw-copy steps first when there is work.
fn by_hand(t: &crate::inspect::Target, p: &mut DiskPlan, mut l: Vec<after::Leaf>, again: &str) {
    if p.repairs_gpt() {
        // The repair step rebuilds the primary from the backup.
        l.retain(|x| x.finding.code != Code::GptPrimaryInvalid);
    }
    // A partition the planner already explained (placed off 4 KiB for its
    // compensated content) needs no second note per finding.
    let explained: Vec<Option<u32>> = p.manual.iter().map(|m| m.partition).collect();
    let rest: Vec<after::Leaf> = l
        .iter()
        .filter(|x| {
            let f = &x.finding;
            !(is_placement_code(f.code) && explained.contains(&f.subject.partition))
        })
        .cloned()
        .collect();
    let disk = disk::boot_disk(t, p);
    // What no command fixes (a hint the disk reports) is said where its
    // finding is listed, under what check will still report.
    let mut notes = after::manual(&rest, &disk);
    if !p.is_noop() {
        // They name the layers where the script puts them.
        for m in notes.iter_mut().filter(|m| !m.commands.is_empty()) {
            m.why
                .push_str(" (after the script: the command names where it moves the data)");
        }
    }
    p.manual.extend(notes);
    p.leaves = l.into_iter().map(|x| x.finding).collect();
    p.remains = remains(&p.leaves, &p.manual);
    disk::raw_copy_first(t, p, again);
}
