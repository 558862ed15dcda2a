//! Small in-memory inspections for the rules' unit tests: a target made of
//! a table and a topology, with no device and no image behind it.

use super::outcome::TopologySource;
use crate::inspect::{Target, TargetKind};
use crate::iolimits::Topology;
use crate::layout::{PartKind, Partition, Table, TableKind};
use crate::topology::{Disk, KernelPartition, Transport};
use std::path::PathBuf;

/// 512-byte logical blocks over `pbs`-byte physical ones (512e at 4096),
/// the minimum I/O the physical block.
pub fn logical_512_over(pbs: u32) -> Topology {
    Topology {
        physical_block_size: pbs,
        minimum_io_size: pbs,
        ..Topology::IMAGE_DEFAULT
    }
}

/// A partition from LBA `first` to `last` (inclusive).
pub fn part(number: u32, kind: PartKind, first: u64, last: u64) -> Partition {
    Partition {
        number,
        kind,
        first_lba: first,
        last_lba: last,
        type_id: "0x83".into(),
        name: None,
        uuid: None,
        ebr_lba: None,
    }
}

/// A table of 512-byte sectors.
pub fn table(kind: TableKind, partitions: Vec<Partition>) -> Table {
    Table {
        kind,
        sector_size: 512,
        partitions,
        id: None,
        usable: None,
        findings: vec![],
    }
}

/// An image of `size` bytes with `partitions` in a DOS table, judged
/// against `topology` as if given with `--topology`.
pub fn image(size: u64, topology: Topology, partitions: Vec<Partition>) -> Target {
    Target {
        path: PathBuf::from("disk.img"),
        kind: TargetKind::Image,
        disk: None,
        only: None,
        size,
        container: None,
        topology,
        source: TopologySource::Override,
        table: table(TableKind::Mbr, partitions),
        node_block_sizes: vec![],
        notes: vec![],
        stack: vec![],
        measured: None,
        measured_erase: None,
        host: None,
    }
}

/// A live disk `sda` of `size` bytes with the partitions the kernel
/// registered.
pub fn disk(size: u64, registered: Vec<KernelPartition>) -> Disk {
    Disk {
        name: "sda".into(),
        device: PathBuf::from("/dev/sda"),
        size_bytes: size,
        topology: Topology::IMAGE_DEFAULT,
        zoned: Default::default(),
        ioctl: None,
        ioctl_error: None,
        rotational: None,
        removable: None,
        model: None,
        vendor: None,
        serial: None,
        wwn: None,
        firmware: None,
        transport: Transport::Sata,
        usb: None,
        flash: None,
        backing_file: None,
        dm: None,
        slaves: vec![],
        holders: vec![],
        partitions: registered,
        paths: vec![],
        path_of: None,
        findings: vec![],
        declared: None,
        declared_note: None,
    }
}

/// Partition `number` as the kernel registered it, in bytes.
pub fn registered(number: u32, start_bytes: u64, size_bytes: u64) -> KernelPartition {
    KernelPartition {
        name: format!("sda{number}"),
        number,
        start_bytes,
        size_bytes,
        alignment_offset: 0,
    }
}
