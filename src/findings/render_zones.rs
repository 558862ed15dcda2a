//! The sentences of the codes about zones (`zone-*`), from their facts
//! (kept apart from `render`, which is at its size limit).

use super::facts::Facts;
use super::words::{counted, n, text, who};

/// The kernel splits a write at each zone boundary it crosses
/// (block/blk-merge.c `get_max_io_size`, chunk_sectors). On a host-managed
/// device a write into a sequential-write-required zone must start at its
/// write pointer (with zone write plugging the kernel fails it before the
/// device does: block/blk-zoned.c `blk_zone_wplug_prepare_bio`), and the
/// part past a boundary starts at the zone's first sector: the zone must
/// be empty. Conventional zones take it anywhere.
pub fn zone_crossing_writes(f: &Facts) -> String {
    use crate::iolimits::ZoneModel;
    let then = match f.zone_model {
        Some(ZoneModel::HostManaged) => "on this host-managed device the part that starts a sequential-write-required zone must land on that zone's write pointer, so it fails unless the zone is empty (conventional zones take it)",
        _ => "this host-aware device accepts them, each as two writes or more",
    };
    format!(
        "{} to {} cross a boundary of its {}-byte zones: the kernel splits each into one write per zone; {then}{}",
        counted(f, "writes"),
        text(&f.device),
        n(f.zone_size_bytes),
        who(f)
    )
}

/// The kernel's policy, from block/partitions/core.c: `blk_add_partitions`
/// skips the table of a host-managed disk ("ignoring partition table on
/// host managed zoned block device") and `add_partition` refuses one
/// (-ENXIO), so BLKPG and partx cannot add them either.
pub fn zone_table_ignored(f: &Facts) -> String {
    format!(
        "{} is a host-managed zoned disk ({}-byte zones): the kernel ignores the partition table on it and refuses to add partitions, so these partitions have no device nodes and are not judged against the zones (use the whole disk with a zoned filesystem, or dm-linear on zone boundaries)",
        text(&f.device),
        n(f.zone_size_bytes)
    )
}

pub fn zone_misaligned_start(f: &Facts) -> String {
    let (start, zone) = (n(f.offset_bytes), n(f.zone_size_bytes));
    format!(
        "starts at byte {start}, {} bytes into zone {} of {zone} bytes: that zone is shared with what lies before it, so neither side writes it sequentially from its start",
        n(f.misalignment_bytes),
        start / zone.max(1)
    )
}

/// device-mapper refuses a target whose start or length on a zoned
/// device is off its zones (drivers/md/dm-table.c
/// `device_area_is_invalid`: "not aligned to h/w zone size").
pub fn zone_extent_misaligned(f: &Facts) -> String {
    let zone = n(f.zone_size_bytes);
    let what = match f.size_bytes {
        Some(extent) => format!("extent size of {extent} bytes"),
        None => format!("data start at byte {}", n(f.offset_bytes)),
    };
    format!(
        "the PV's {what} is off the disk's {zone}-byte zones ({} bytes past a zone boundary): device-mapper refuses to map an LV segment that starts or ends off a zone of a zoned disk, so activating its LVs fails with \"not aligned to h/w zone size\"; `{}` makes a PV whose LVs map",
        n(f.misalignment_bytes),
        text(&f.fix)
    )
}

/// On a zoned disk the kernel reads btrfs's superblock only from its log
/// in zones 0 and 1 (fs/btrfs/disk-io.c `btrfs_read_dev_one_super` asks
/// fs/btrfs/zoned.c `btrfs_sb_log_location_bdev`: the start of a
/// conventional zone 0, else behind the write pointer), never at 64 KiB;
/// and `btrfs_check_zoned_mode` refuses a host-managed device to a
/// filesystem without the ZONED flag ("zoned: mode not enabled but zoned
/// device found"). fs/f2fs/super.c `f2fs_scan_devices` refuses one to an
/// f2fs without `blkzoned` ("Zoned block device feature not enabled";
/// later kernels every zoned device).
pub fn zone_fs_not_zoned(f: &Facts) -> String {
    let why = if f.region.as_deref() == Some("f2fs") {
        "the kernel refuses to mount it (\"Zoned block device feature not enabled\"), and the drive refuses its in-place writes"
    } else {
        "the kernel does not mount it (it looks for the superblock in the log at the start of zone 0, not at 64 KiB, so the mount fails with EINVAL; found, it would be refused without zoned mode), and the drive refuses its in-place writes"
    };
    let fs = text(&f.region);
    let article = if fs.starts_with('f') { "an" } else { "a" };
    format!(
        "{article} {fs} made without zoned mode on a host-managed disk of {}-byte zones: {why}; `{}` on the whole disk makes one that mounts, after the data is copied off",
        n(f.zone_size_bytes),
        text(&f.fix)
    )
}

pub fn zone_misaligned_end(f: &Facts) -> String {
    let (end, zone) = (n(f.end_exclusive_bytes), n(f.zone_size_bytes));
    format!(
        "ends at byte {end} (last byte + 1), {} bytes into zone {} of {zone} bytes: that zone is shared with what follows",
        n(f.misalignment_bytes),
        end / zone.max(1)
    )
}
