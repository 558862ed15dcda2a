//! A zoned disk's rules (issue 40): the partition table of a host-managed
//! disk, which the kernel ignores, and where a partition of a host-aware
//! disk starts and ends against its zones.
//!
//! What the kernel does with partitions on zoned disks, from its source
//! (torvalds/linux):
//! - Older kernels registered a partition on a zoned disk only when it
//!   started and ended on zone boundaries (block/partition-generic.c
//!   `part_zone_aligned`, called from `rescan_partitions`; 4.10 to 5.4 by
//!   memory, the release numbers not checked here).
//! - A patch removing it made `rescan_partitions` ignore the table of
//!   every zoned disk ("ignoring partition table on zoned block device").
//! - Then host-aware disks got their partitions back: block/partitions/core.c
//!   `blk_add_partitions` ignores the table only where the model is
//!   host-managed, and `add_partition` refuses a partition on a
//!   host-managed disk (-ENXIO) and on a host-aware one turns the zone
//!   model off ("disabling host aware zoned block device support due to
//!   partitions": `blk_queue_set_zoned`, later `disk_set_zoned`, with
//!   BLK_ZONED_NONE, which clears chunk_sectors and nr_zones), so sysfs
//!   says `none` from then on. That is the source; what the guest kernel
//!   of tests/vm (Debian's 6.1.0-56) does with scsi_debug's zoned disks,
//!   host-managed and host-aware alike, is stricter: scenario 22 measures
//!   sysfs `capability` 4 (GENHD_FL_NO_PART) and `ext_range` 1 on them,
//!   BLKRRPART failing with EINVAL and partx's BLKPG add failing, so no
//!   partition is ever registered and a host-aware disk stays zoned with
//!   its table on disk (which code sets the flag was not found).
//! - Christoph Hellwig's "block: remove support for the host aware zone
//!   model" (posted December 2023; the release it landed in is not
//!   checked here) treats every host-aware drive as a
//!   regular disk; `bdev_is_zoned` is then true only for host-managed
//!   ones, whose table `blk_add_partitions` ignores and whose partitions
//!   `add_partition` refuses, as before.
//!
//! So a host-managed disk's table is never used, and is said so rather
//! than judged; a host-aware disk is still zoned in sysfs only while the
//! kernel has registered none of its partitions, and its partitions are
//! judged against its zones, which the drive keeps whatever the kernel
//! does with them.

use crate::findings::{Code, Facts, Finding};
use crate::iolimits::{ZoneModel, Zones};
use crate::layout::Table;
use crate::stack::FsKind;
use crate::stack::{Layer, LayerKind};
use crate::topology::Disk;

/// `zone-table-ignored` for a host-managed disk whose table on disk holds
/// partitions: it takes the place of `kernel-table-differs`.
pub fn table_ignored(disk: &Disk, table: &Table) -> Option<Finding> {
    let has_partitions = table.partitions.iter().any(|p| p.last_lba >= p.first_lba);
    (disk.zoned.model == ZoneModel::HostManaged && has_partitions).then(|| {
        Finding::of(
            Code::ZoneTableIgnored,
            Facts {
                device: Some(disk.device.display().to_string()),
                zone_size_bytes: Some(disk.zoned.zone_size_bytes),
                ..Facts::default()
            },
        )
    })
}

/// A partition from `start` to `end` (one past its last byte) on a
/// host-aware disk of `disk_size` bytes, against its zones: its start on a
/// zone boundary, and its end too unless it is the end of the disk (the
/// last zone may be smaller). None on other disks.
pub fn partition_findings(zones: &Zones, start: u64, end: u64, disk_size: u64) -> Vec<Finding> {
    let zone = zones.zone_size_bytes;
    if zones.model != ZoneModel::HostAware || zone == 0 {
        return vec![];
    }
    let mut out = Vec::new();
    if start % zone != 0 {
        out.push(Finding::of(
            Code::ZoneMisalignedStart,
            Facts {
                offset_bytes: Some(start),
                zone_size_bytes: Some(zone),
                misalignment_bytes: Some(start % zone),
                ..Facts::default()
            },
        ));
    }
    if end % zone != 0 && end < disk_size {
        out.push(Finding::of(
            Code::ZoneMisalignedEnd,
            Facts {
                end_exclusive_bytes: Some(end),
                zone_size_bytes: Some(zone),
                misalignment_bytes: Some(end % zone),
                ..Facts::default()
            },
        ));
    }
    out
}

/// The zone findings of each layer in `root`'s tree whose offsets are on
/// the zoned disk `device` itself (no partition is ever registered on
/// one, so its layers sit on the whole disk):
/// - an LVM PV whose data start or extent size is off the zones:
///   device-mapper refuses a target that starts or ends off a zone of a
///   zoned device (drivers/md/dm-table.c `device_area_is_invalid`, for
///   every model `bdev_is_zoned` counts: host-aware too while sysfs
///   says so). A live dm table on such a disk is aligned by
///   construction, so only what the PV's metadata would load is judged;
/// - a btrfs or f2fs without zoned mode on a host-managed disk, which the
///   kernel does not mount: it looks for btrfs's superblock only in the
///   zone-0 log there (fs/btrfs/zoned.c `btrfs_sb_log_location_bdev`),
///   and `btrfs_check_zoned_mode` refuses the device without the ZONED
///   flag; fs/f2fs/super.c `f2fs_scan_devices` refuses it to an f2fs
///   without `blkzoned` (later kernels refuse every zoned device so; a
///   host-aware disk is used as a regular one by the kernels that count
///   only host-managed ones).
pub fn layer_findings(zones: &Zones, device: &str, root: &mut Layer) {
    let zone = zones.zone_size_bytes;
    if zones.model == ZoneModel::None || zone == 0 {
        return;
    }
    root.walk_mut(&mut |l| {
        if l.device != device {
            return;
        }
        let found = match l.kind {
            LayerKind::LvmPv => pv_findings(l, zone),
            LayerKind::Filesystem => fs_finding(l, zones).into_iter().collect(),
            _ => vec![],
        };
        if !found.is_empty() {
            l.findings.extend(found);
            l.status = l.status.max(crate::findings::Status::of(&l.findings));
            l.aligned = l.status.is_clean();
        }
    });
}

/// `zone-extent-misaligned` for a PV's data start and its VG's extent size.
fn pv_findings(l: &Layer, zone: u64) -> Vec<Finding> {
    let vg = l.pv().and_then(|p| p.vg.clone());
    let fix = format!(
        "pvcreate --dataalignment {k}k {d} && vgcreate -s {k}k {} {d}",
        vg.as_deref().unwrap_or("VG"),
        k = zone / 1024,
        d = l.device,
    );
    let facts = |offset: Option<u64>, size: Option<u64>, miss: u64| {
        Finding::of(
            Code::ZoneExtentMisaligned,
            Facts {
                offset_bytes: offset,
                size_bytes: size,
                zone_size_bytes: Some(zone),
                misalignment_bytes: Some(miss),
                device: Some(l.device.clone()),
                fix: Some(fix.clone()),
                ..Facts::default()
            },
        )
    };
    let mut out = Vec::new();
    if let Some(start) = l.data_start().filter(|s| s % zone != 0) {
        out.push(facts(Some(start), None, start % zone));
    }
    let extent = l.pv().and_then(|p| p.extent_size_bytes);
    if let Some(e) = extent.filter(|e| e % zone != 0) {
        out.push(facts(None, Some(e), e % zone));
    }
    out
}

/// `zone-fs-not-zoned` for a btrfs without zoned mode on a host-managed disk.
fn fs_finding(l: &Layer, zones: &Zones) -> Option<Finding> {
    let fs = l.filesystem()?;
    let fix = match fs.kind {
        FsKind::Btrfs => "mkfs.btrfs -O zoned",
        FsKind::F2fs => "mkfs.f2fs -m",
        FsKind::Ext4 | FsKind::Xfs | FsKind::Vfat | FsKind::Exfat | FsKind::Ntfs => return None,
    };
    let refused = !fs.zoned && zones.model == ZoneModel::HostManaged;
    refused.then(|| {
        Finding::of(
            Code::ZoneFsNotZoned,
            Facts {
                zone_size_bytes: Some(zones.zone_size_bytes),
                device: Some(l.device.clone()),
                region: Some(fs.kind.as_str().to_string()),
                fix: Some(format!("{fix} {}", l.device)),
                ..Facts::default()
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixture::{disk, part, table};
    use crate::layout::{PartKind, TableKind};
    use crate::units::MIB;

    fn zones(model: ZoneModel) -> Zones {
        Zones {
            model,
            zone_size_bytes: 4 * MIB,
            zones: 64,
            ..Zones::default()
        }
    }

    #[test]
    fn a_host_aware_partition_off_its_zones_is_named_with_its_facts() {
        let z = zones(ZoneModel::HostAware);
        let f = partition_findings(&z, MIB, 9 * MIB, 256 * MIB);
        let codes: Vec<Code> = f.iter().map(|f| f.code).collect();
        assert_eq!(codes, [Code::ZoneMisalignedStart, Code::ZoneMisalignedEnd]);
        assert_eq!(f[0].facts.offset_bytes, Some(MIB));
        assert_eq!(f[0].facts.zone_size_bytes, Some(4 * MIB));
        assert_eq!(f[0].facts.misalignment_bytes, Some(MIB));
        assert!(
            f[0].message
                .contains("1048576 bytes into zone 0 of 4194304 bytes"),
            "{}",
            f[0].message
        );
        assert_eq!(f[1].facts.misalignment_bytes, Some(MIB));
        assert!(f[1].message.contains("zone 2"), "{}", f[1].message);
        // On zone boundaries, or ending where the disk ends: nothing.
        assert!(partition_findings(&z, 4 * MIB, 8 * MIB, 256 * MIB).is_empty());
        assert!(partition_findings(&z, 8 * MIB, 255 * MIB, 255 * MIB).is_empty());
    }

    #[test]
    fn only_host_aware_partitions_are_judged_against_zones() {
        for model in [ZoneModel::None, ZoneModel::HostManaged] {
            assert!(partition_findings(&zones(model), MIB, 9 * MIB, 256 * MIB).is_empty());
        }
    }

    #[test]
    fn a_host_managed_table_is_said_to_be_ignored() {
        let mut d = disk(256 * MIB, vec![]);
        let t = table(TableKind::Mbr, vec![part(1, PartKind::Primary, 2048, 8191)]);
        assert_eq!(table_ignored(&d, &t), None);
        d.zoned = zones(ZoneModel::HostManaged);
        let f = table_ignored(&d, &t).unwrap();
        assert_eq!(f.code, Code::ZoneTableIgnored);
        assert_eq!(f.facts.device.as_deref(), Some("/dev/sda"));
        assert!(
            f.message.starts_with(
                "/dev/sda is a host-managed zoned disk (4194304-byte zones): the kernel ignores"
            ),
            "{}",
            f.message
        );
        assert_eq!(table_ignored(&d, &table(TableKind::Mbr, vec![])), None);
        d.zoned = zones(ZoneModel::HostAware);
        assert_eq!(table_ignored(&d, &t), None);
    }

    fn pv(pe_start: u64, extent: u64) -> Layer {
        let mut l = Layer::new(
            LayerKind::LvmPv,
            "PV x",
            "/dev/sdb",
            0,
            256 * MIB,
            crate::iolimits::Topology::IMAGE_DEFAULT,
        );
        l.data_offset_bytes = Some(pe_start);
        l.detail = Some(crate::stack::Detail::Pv(crate::stack::PvInfo {
            pe_start_bytes: pe_start,
            extent_size_bytes: Some(extent),
            ..Default::default()
        }));
        l
    }

    fn btrfs(zoned: bool) -> Layer {
        let mut l = pv(0, 0);
        l.kind = LayerKind::Filesystem;
        l.detail = Some(crate::stack::Detail::Filesystem(crate::stack::Filesystem {
            kind: FsKind::Btrfs,
            block_size: 4096,
            sector_size: 4096,
            stripe_unit_blocks: 0,
            stripe_width_blocks: 0,
            size_bytes: 256 * MIB,
            free_bytes: None,
            zoned,
            volume: None,
            f2fs: None,
        }));
        l
    }

    fn codes_of(mut l: Layer, model: ZoneModel, device: &str) -> Vec<Code> {
        layer_findings(&zones(model), device, &mut l);
        l.findings.iter().map(|f| f.code).collect()
    }

    /// lvm2's defaults (data at 1 MiB) and a 1 MiB extent are off 4 MiB
    /// zones; both on the zones map; a disk that is not zoned, or a layer
    /// on another device, gets nothing.
    #[test]
    fn a_pv_off_its_zones_is_one_whose_lvs_cannot_be_activated() {
        let hm = ZoneModel::HostManaged;
        let mut l = pv(MIB, 4 * MIB);
        layer_findings(&zones(hm), "/dev/sdb", &mut l);
        assert_eq!(l.findings.len(), 1, "{:?}", l.findings);
        let f = &l.findings[0];
        assert_eq!(f.code, Code::ZoneExtentMisaligned);
        assert_eq!(f.facts.offset_bytes, Some(MIB));
        assert_eq!(f.facts.misalignment_bytes, Some(MIB));
        assert_eq!(
            f.facts.fix.as_deref(),
            Some("pvcreate --dataalignment 4096k /dev/sdb && vgcreate -s 4096k VG /dev/sdb")
        );
        assert!(
            f.message.contains("not aligned to h/w zone size"),
            "{}",
            f.message
        );
        assert!(!l.aligned);
        let extent = pv(4 * MIB, MIB);
        let mut l2 = extent.clone();
        layer_findings(&zones(ZoneModel::HostAware), "/dev/sdb", &mut l2);
        assert_eq!(l2.findings[0].facts.size_bytes, Some(MIB));
        assert!(codes_of(pv(4 * MIB, 8 * MIB), hm, "/dev/sdb").is_empty());
        assert!(codes_of(pv(MIB, MIB), ZoneModel::None, "/dev/sdb").is_empty());
        assert!(codes_of(pv(MIB, MIB), hm, "/dev/sdc").is_empty());
    }

    /// A btrfs without zoned mode is refused on a host-managed disk only.
    #[test]
    fn a_btrfs_without_zoned_mode_on_a_host_managed_disk_is_refused() {
        let hm = ZoneModel::HostManaged;
        assert_eq!(
            codes_of(btrfs(false), hm, "/dev/sdb"),
            [Code::ZoneFsNotZoned]
        );
        assert!(codes_of(btrfs(true), hm, "/dev/sdb").is_empty());
        assert!(codes_of(btrfs(false), ZoneModel::HostAware, "/dev/sdb").is_empty());
        let f2fs = |zoned| {
            let mut l = btrfs(zoned);
            if let Some(crate::stack::Detail::Filesystem(f)) = &mut l.detail {
                f.kind = FsKind::F2fs;
            }
            l
        };
        let mut l = f2fs(false);
        layer_findings(&zones(hm), "/dev/sdb", &mut l);
        let f = &l.findings[0];
        assert_eq!(f.facts.region.as_deref(), Some("f2fs"));
        assert_eq!(f.facts.fix.as_deref(), Some("mkfs.f2fs -m /dev/sdb"));
        assert!(
            f.message.contains("Zoned block device feature not enabled"),
            "{}",
            f.message
        );
        assert!(codes_of(f2fs(true), hm, "/dev/sdb").is_empty());
    }
}
