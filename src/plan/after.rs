//! What `check` will still say once the plan has run: the inspection with
//! every partition (and every layer inside it, on the same disk) shifted
//! to its new place, judged again by the same rules.

use super::{Action, DiskPlan, Manual};
use crate::check;
use crate::findings::{Code, FailOn, Finding, Severity};
use crate::inspect::Inspection;
use crate::stack::Layer;

/// The findings of warning and above per target after the plan, and those
/// on assembled arrays and volume groups.
pub fn leaves(i: &Inspection, plans: &[DiskPlan]) -> (Vec<Vec<Finding>>, Vec<Finding>) {
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
            let mut shift = |l: &mut Layer| {
                if l.device == device && l.offset_bytes >= from && l.offset_bytes - from < len {
                    l.offset_bytes = (l.offset_bytes as i128 + by).max(0) as u64;
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
    let run = check::judge(after, FailOn::Warning);
    // What the kernel registered now is the old table; the script makes
    // it re-read the new one, so findings that compare against the
    // kernel's current view say nothing about the result.
    let kernel_view = |c: Code| {
        matches!(
            c,
            Code::KernelTableDiffers
                | Code::KernelReportsMisaligned
                | Code::KernelOffsetDiffers
                | Code::NodeBlockSizeDiffers
        )
    };
    let serious = |f: &&Finding| f.severity >= Severity::Warning && !kernel_view(f.code);
    let per_target = run
        .targets
        .iter()
        .map(|t| t.all_findings().filter(serious).cloned().collect())
        .collect();
    let assembled = run
        .assembled
        .iter()
        .flat_map(|l| l.walk())
        .flat_map(|l| l.findings.iter())
        .filter(serious)
        .cloned()
        .collect();
    (per_target, assembled)
}

/// What to do by hand about the findings a partition change cannot fix.
pub fn manual(leaves: &[Finding]) -> Vec<Manual> {
    leaves.iter().map(by_hand).collect()
}

/// Moving a PV's extents to a new PV made aligned.
pub fn pvmove_to_a_new_pv() -> Vec<String> {
    vec![
        "pvcreate --dataalignment 1m NEW_PV  # on an aligned partition or disk".into(),
        "vgextend VG NEW_PV && pvmove OLD_PV NEW_PV && vgreduce VG OLD_PV && pvremove OLD_PV"
            .into(),
    ]
}

/// A ZFS vdev's ashift is fixed when its top-level vdev is made, and
/// nothing in place changes it: a leaf attached to a mirror or replacing
/// a disk joins the top-level vdev's ashift, and a top-level vdev can be
/// removed only while every vdev of the pool has the same ashift
/// (`spa_vdev_remove_top_check` in OpenZFS `module/zfs/vdev_removal.c`
/// refuses when `spa_min_ashift != spa_max_ashift`, and refuses raidz).
/// So the data moves by send and receive to a new pool made with the
/// right ashift. Nothing here runs: these are commands to run by hand.
fn new_zfs_vdev(f: &Finding) -> Vec<String> {
    let opt = f.facts.fix.clone().unwrap_or_else(|| "-o ashift=12".into());
    let pool = f.facts.pool.as_deref().unwrap_or("POOL");
    vec![
        format!("zpool create {opt} NEWPOOL NEW_DEVICE  # a new pool, on devices with room for the data"),
        format!("zfs snapshot -r {pool}@move && zfs send -R {pool}@move | zfs receive -F NEWPOOL  # every dataset, with its properties"),
        format!("zpool destroy {pool} && zpool export NEWPOOL && zpool import NEWPOOL {pool}  # once the copy is checked: the new pool under the old name"),
        "attaching, replacing or adding a vdev keeps the fault: a top-level vdev keeps the ashift it was made with, and zpool remove refuses while the pool's vdevs differ in ashift".into(),
    ]
}

/// A partition of a host-aware disk re-made on its zones. Nothing moves
/// it in place: a kernel that treats the disk as zoned registers none of
/// its partitions (check::zones), so the plan's script cannot.
fn zone_boundaries(f: &Finding) -> Vec<String> {
    let zone = f.facts.zone_size_bytes.unwrap_or(0).max(1);
    let at = f
        .facts
        .offset_bytes
        .or(f.facts.end_exclusive_bytes)
        .unwrap_or(0);
    let next = at.div_ceil(zone).saturating_mul(zone);
    vec![format!(
        "copy the partition's data off, re-create it with its start and end on multiples of {zone} bytes ({} sectors of 512; the zone boundary at or after byte {at} is byte {next}), and copy the data back",
        zone / 512
    )]
}

/// A PV whose LVs device-mapper will not map on a zoned disk, made again
/// on its zones.
fn zoned_pv(f: &Finding) -> Vec<String> {
    vec![
        "copy the LVs' data off first: their segments cannot be activated on this disk, but each linear segment is a byte range of it (pe_start + first extent x extent size: lvs --segments -o +seg_pe_ranges) that dd reads".into(),
        f.facts.fix.clone().unwrap_or_default(),
        "lvcreate the LVs again and copy the data back".into(),
    ]
}

/// A btrfs made again in zoned mode. A read-only loop device over the
/// disk is not zoned, so the kernel mounts the old one there (scenario
/// 25) for its data to be copied off.
fn zoned_btrfs(f: &Finding) -> Vec<String> {
    let device = f.facts.device.as_deref().unwrap_or("DEVICE");
    vec![
        format!("losetup -r -f --show {device}  # a read-only loop device over the disk is not zoned: mount -o ro the loop device it prints and copy the data off"),
        f.facts.fix.clone().unwrap_or_default(),
        "mount the new btrfs and copy the data back".into(),
    ]
}

/// A LUKS container made again with its payload aligned.
pub fn recreate_luks() -> Vec<String> {
    vec!["back up the data, then re-create the container with an aligned payload: cryptsetup luksFormat --offset SECTORS (LUKS2) or --align-payload SECTORS (LUKS1), and restore".into()]
}

fn by_hand(f: &Finding) -> Manual {
    let layer = f.subject.layer.as_deref().unwrap_or_default();
    let commands = match f.code {
        Code::FsStripeHintsMissing | Code::FsStripeHintsMismatch => {
            let fix = f.facts.fix.clone().unwrap_or_default();
            let xfs = fix.starts_with("mkfs.xfs");
            let mut c = vec![fix];
            if xfs {
                c.push("or mount it with -o sunit=,swidth= in 512-byte units (XFS keeps them in the superblock after one mount)".into());
            }
            c
        }
        Code::LayerStartMisaligned | Code::LayerStartNot4k | Code::LayerStartNotOptimal
            if layer.contains("LVM PV") || layer.contains("PV ") =>
        {
            pvmove_to_a_new_pv()
        }
        Code::LayerStartMisaligned | Code::LayerStartNot4k | Code::LayerStartNotOptimal
            if layer.contains("LUKS") =>
        {
            recreate_luks()
        }
        Code::ZfsAshiftBelowPhysical => new_zfs_vdev(f),
        Code::ZoneMisalignedStart | Code::ZoneMisalignedEnd => zone_boundaries(f),
        Code::ZoneExtentMisaligned => zoned_pv(f),
        Code::ZoneFsNotZoned => zoned_btrfs(f),
        Code::EndNot4k | Code::SizeNot4k | Code::EndNotPhysical => vec![
            "its content fills the partition: shrink the content first (resize2fs, pvresize), then plan again".into(),
        ],
        _ => vec![],
    };
    Manual {
        partition: f.subject.partition,
        why: f.message.clone(),
        commands,
    }
}
