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

pub mod after;
pub mod boot;
pub mod container;
pub mod content;
pub mod disk;
pub mod identity;
pub mod layout;
pub mod new_disk;
pub mod next;

use crate::check::placement::is_placement_code;
use crate::errors::TargetError;
use crate::findings::{Code, Finding};
use crate::inspect::Inspection;
use crate::layout::{PartKind, TableKind};
use crate::stack::fs::FsKind;
use crate::units::MIB;
use serde::Serialize;

/// How the plan estimates and moves.
#[derive(Clone, Copy, Debug)]
pub struct PlanOptions {
    /// Bytes per second a move is assumed to copy (for the estimate).
    pub throughput: u64,
    /// Bytes one copy step moves (the script's resume granularity).
    pub chunk: u64,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            throughput: 100 * MIB,
            chunk: 4 * MIB,
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
    pub commands: Vec<String>,
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
    /// What `check` will still report (warnings and errors) after the plan.
    pub leaves: Vec<Finding>,
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
        self.refused.is_empty()
            && (!self.is_noop() || self.manual.iter().any(|m| !m.commands.is_empty()))
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
    pub errors: Vec<TargetError>,
}

impl PlanRun {
    /// True when some disk has something to do: steps, or commands to
    /// run by hand first (exit status 1).
    pub fn has_changes(&self) -> bool {
        self.targets.iter().any(DiskPlan::has_work)
    }

    pub fn refused(&self) -> bool {
        self.targets.iter().any(|t| !t.refused.is_empty())
    }
}

/// Plan every target of an inspection.
pub fn plan(i: Inspection, opts: &PlanOptions) -> PlanRun {
    let mut targets: Vec<DiskPlan> = i.targets.iter().map(|t| disk::plan(t, opts)).collect();
    let (leaves, assembled) = after::leaves(&i, &targets);
    for (t, mut l) in targets.iter_mut().zip(leaves) {
        if t.repairs_gpt() {
            // The repair step rebuilds the primary from the backup.
            l.retain(|f| f.code != Code::GptPrimaryInvalid);
        }
        // A partition the planner already explained (placed off 4 KiB for
        // its compensated content) needs no second note per finding.
        let explained: Vec<Option<u32>> = t.manual.iter().map(|m| m.partition).collect();
        let rest: Vec<Finding> = l
            .iter()
            .filter(|f| !(is_placement_code(f.code) && explained.contains(&f.subject.partition)))
            .cloned()
            .collect();
        // What no command fixes (a hint the disk reports) is in `leaves`
        // only: "by hand" is for what there is to do.
        t.manual.extend(
            after::manual(&rest)
                .into_iter()
                .filter(|m| !m.commands.is_empty()),
        );
        t.leaves = l;
    }
    PlanRun {
        throughput_bytes_per_second: opts.throughput,
        targets,
        assembled_leaves: assembled,
        errors: i.errors,
    }
}
