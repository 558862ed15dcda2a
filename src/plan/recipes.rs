//! The steps that make a layer again where nothing changes it in place:
//! a PV's extents moved to one made aligned, a LUKS container or a ZFS
//! pool made again, a zoned disk's partition, PV or btrfs re-made on its
//! zones. Words and commands with the names the user fills in (NEW_PV,
//! NEWPOOL): `remedy` says them, nothing runs them.

use crate::findings::{Code, Finding};

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
pub fn new_zfs_vdev(f: &Finding) -> Vec<String> {
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

/// A zoned disk's finding: what re-makes the partition, PV or btrfs on
/// its zones.
pub fn zoned(f: &Finding) -> Vec<String> {
    match f.code {
        Code::ZoneMisalignedStart | Code::ZoneMisalignedEnd => zone_boundaries(f),
        Code::ZoneExtentMisaligned => zoned_pv(f),
        Code::ZoneFsNotZoned => zoned_btrfs(f),
        _ => vec![
            "a host-managed disk's partition table is ignored by the kernel: use the disk whole, or its zones through a zoned filesystem".into(),
        ],
    }
}
