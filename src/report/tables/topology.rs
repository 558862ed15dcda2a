//! `topology`'s columns: one row per disk, as lsblk -t.

use super::{opt_text, problem_codes};
use crate::report::columns::Column;
use crate::topology::Disk;
use crate::topology::Limit;
use crate::units::human;

type D = Column<Disk>;

/// One row per disk: `topology`'s table, as lsblk -t, and its CSV.
pub const DISKS: &[Column<Disk>] = &[
    D::both("name", "name", |d| d.name.clone())
        .help("the kernel's name of the disk (sda, nvme0n1)"),
    D::csv_only("device", |d| d.device.display().to_string())
        .help("its device node"),
    D::both("size_bytes", "size", |d| d.size_bytes.to_string())
        .shown_as(|d, _| human(d.size_bytes))
        .size()
        .help("the size (bytes in CSV and with -b)"),
    D::both("transport", "tran", |d| d.transport.as_str().into())
        .help("how it is attached: sata, nvme, usb-uas, usb-storage, virtio, loop...")
        .drop(2),
    D::both("logical_block_size", "log-sec", |d| {
        d.topology.logical_block_size.to_string()
    })
    .help("the logical block size: the smallest unit the disk addresses"),
    D::both("physical_block_size", "phy-sec", |d| {
        d.topology.physical_block_size.to_string()
    })
    .help("the physical block size: below it, a write is read-modify-write"),
    D::both("minimum_io_size", "min-io", |d| {
        d.topology.minimum_io_size.to_string()
    })
    .help("the minimum I/O size the disk prefers (a RAID chunk, or the physical block)"),
    D::both("optimal_io_size", "opt-io", |d| {
        d.topology.optimal_io_size.to_string()
    })
    .help("the optimal I/O size (a RAID stripe width; 0: none given)"),
    D::both("alignment_offset", "alignment", |d| {
        d.topology.alignment_offset.to_string()
    })
    .help("the alignment offset: the bytes from the start of the disk to its first aligned block (-1: misaligned)"),
    D::both("discard_granularity", "disc-gran", |d| {
        d.topology.discard_granularity.to_string()
    })
    .help("the discard granularity (0: no discard)")
    .drop(1),
    D::csv_only("discard_alignment", |d| {
        d.topology.discard_alignment.to_string()
    })
    .help("the discard alignment"),
    D::both("rotational", "rota", |d| opt_text(&d.rotational))
        .flag()
        .help("true for a spinning disk, as the kernel says (1 with -r and -P, as lsblk's ROTA); empty when unknown")
        .drop(3),
    D::csv_only("removable", |d| opt_text(&d.removable))
        .flag()
        .help("true for removable media"),
    D::csv_only("vendor", |d| opt_text(&d.vendor)).help("the vendor the disk reports"),
    D::csv_only("model", |d| opt_text(&d.model))
        .help("the model the disk reports"),
    D::csv_only("serial", |d| opt_text(&d.serial)).help("the serial number"),
    D::both("problems", "problems", |d| problem_codes(&d.findings))
        .help("the codes of its suspicious hints (`topology DISK` explains them), space-separated"),
    D::csv_only("wwn", |d| opt_text(&d.wwn))
        .help("the world-wide identifier (sysfs wwid)"),
    D::csv_only("device_log_sec", |d| said(d, Limit::LogicalBlockSize))
        .help("the logical block the device itself says (its identify data; empty: it said nothing)"),
    D::csv_only("device_phy_sec", |d| said(d, Limit::PhysicalBlockSize))
        .help("the physical block the device says (NVMe NPWG, ATA IDENTIFY, SCSI LBPPBE)"),
    D::csv_only("device_min_io", |d| said(d, Limit::MinimumIoSize))
        .help("the minimum I/O the device says (NVMe NPWG, SCSI OTLG)"),
    D::csv_only("device_opt_io", |d| said(d, Limit::OptimalIoSize))
        .help("the optimal I/O the device says (NVMe NOWS, SCSI OTL)"),
    D::csv_only("device_disagrees", |d| {
        d.declared
            .as_ref()
            .map(|s| {
                let l: Vec<&str> = s.disagreements().iter().map(|l| l.as_str()).collect();
                l.join(" ")
            })
            .unwrap_or_default()
    })
    .help("the kernel's limits that do not follow from what the device says (topology DISK explains them)"),
    D::csv_only("zone_model", |d| d.zoned.model.as_str().into())
        .help("the zone model, sysfs queue/zoned: none, host-aware or host-managed"),
    D::csv_only("zone_size_bytes", |d| d.zoned.zone_size_bytes.to_string())
        .help("the zone size in bytes, sysfs queue/chunk_sectors (0: not zoned)"),
    D::csv_only("zones", |d| d.zoned.zones.to_string())
        .help("the number of zones, sysfs queue/nr_zones (0: not zoned)"),
    D::csv_only("conventional_zones", |d| opt_text(&d.zoned.conventional_zones))
        .help("the zones that take random writes, counted with BLKREPORTZONE (empty: not read)"),
    D::csv_only("flash_kind", |d| {
        d.flash.as_ref().map(|f| f.kind.as_str().to_string()).unwrap_or_default()
    })
    .help("an mmc card's kind: sd, sdhc, sdxc, sduc, mmc (eMMC too), other; empty for any other disk"),
    D::csv_only("erase_unit_bytes", |d| {
        d.flash.as_ref().map(|f| f.preferred_erase_bytes.to_string()).unwrap_or_default()
    })
    .help("an mmc card's allocation unit, sysfs device/preferred_erase_size (empty for any other disk)"),
    D::csv_only("erase_group_bytes", |d| {
        d.flash.as_ref().map(|f| f.erase_bytes.to_string()).unwrap_or_default()
    })
    .help("an mmc card's erase group, sysfs device/erase_size (empty for any other disk)"),
];

/// A limit as the disk itself gives it (`topology::Declared::value`).
fn said(d: &Disk, limit: Limit) -> String {
    opt_text(&d.declared.as_ref().and_then(|s| s.value(limit)))
}
