//! The stack tree of a target: one root per data partition (or the whole
//! device when it has no table), the layers found inside, and on a live
//! system the kernel's holders, hung above the layer they are built from.

use super::{ReadFor, Root, Target};
use crate::bytes::SharedReader;
use crate::layout::PartKind;
use crate::stack::Region;
use crate::stack::{self, Pending};
use crate::stack::{Layer, LayerKind};
use crate::topology::Sysfs;
use std::path::PathBuf;

/// The roots of `t`'s stack, walked and with their holders.
/// Without a source (the node could not be opened) only the kernel's
/// holders are hung above each root. An empty root's zero tail is read
/// only for `plan`, the one command that uses it.
pub fn stack(
    src: Option<&SharedReader>,
    t: &Target,
    sysfs: &Sysfs,
    command: ReadFor,
    pending: &mut Pending,
) -> Vec<Root> {
    let device = t.layer_device();
    let mut out = Vec::new();
    for (partition, mut root, dir) in regions(t, &device, sysfs) {
        if let Some(src) = src {
            let r = Region {
                src: src.clone(),
                device: device.clone(),
                offset: root.offset_bytes,
                len: root.size_bytes,
                below: t.topology,
            };
            root.children.extend(stack::walk_region(&r, pending));
        }
        if let Some(dir) = dir {
            let up = stack::holders(sysfs, &dir, t.topology, pending);
            // The kernel's device is built from the metadata found at the
            // start when that layer says so (an opened LUKS header, an md
            // member, a PV, a bcache backing device); otherwise from the
            // region itself.
            let built_from = match root.children.as_mut_slice() {
                [one] if one.kind.meaning().builds_kernel_device => &mut one.children,
                _ => &mut root.children,
            };
            built_from.extend(up);
        }
        let zero_tail_bytes = match (src, root.children.is_empty(), command) {
            (Some(src), true, ReadFor::Plan) => {
                zero_tail(&**src, root.offset_bytes, root.size_bytes)
            }
            _ => 0,
        };
        out.push(Root {
            partition,
            layer: root,
            zero_tail_bytes,
        });
    }
    out
}

/// The most bytes read at the end of a region where nothing was
/// recognised: more than an end is ever brought down to reach 4 KiB or a
/// physical block (64 KiB at most).
pub const TAIL_READ: u64 = 64 << 10;

/// The bytes at the start of such a region that must all be zero for it
/// to count as empty: where every format the stack does not read keeps
/// its header too (FAT and NTFS boot sectors, ZFS labels 0 and 1 at 0
/// and 256 KiB, Oracle ASM, Ceph BlueStore, swap, md 1.1 and 1.2).
pub const HEAD_READ: u64 = 1 << 20;

/// The zero bytes at the end of the region `[offset, offset + len)`,
/// from its last [`TAIL_READ`], when its first [`HEAD_READ`] are all
/// zero too (an empty partition, as a partitioning tool leaves it on a
/// clean disk); 0 otherwise or when it cannot be read. Read only where
/// nothing was recognised.
fn zero_tail(src: &dyn crate::bytes::ReadAt, offset: u64, len: u64) -> u64 {
    let read = |at: u64, n: u64| crate::bytes::read_bytes(src, "empty partition", at, n).ok();
    let head_zero = read(offset, len.min(HEAD_READ)).is_some_and(|b| b.iter().all(|&x| x == 0));
    let n = len.min(TAIL_READ);
    match (head_zero, offset.checked_add(len - n)) {
        (true, Some(at)) => read(at, n).map_or(0, |b| {
            b.iter().rev().take_while(|&&x| x == 0).count() as u64
        }),
        _ => 0,
    }
}

/// Each root with its partition number and the sysfs directory of its
/// kernel device (live disks only).
fn regions(t: &Target, device: &str, sysfs: &Sysfs) -> Vec<(Option<u32>, Layer, Option<PathBuf>)> {
    let disk_dir = t
        .disk
        .as_ref()
        .map(|d| sysfs.root().join("block").join(&d.name));
    let ss = t.table.sector_size;
    let data: Vec<_> = t
        .partitions()
        .filter(|p| p.kind != PartKind::Extended)
        .collect();
    if t.only.is_none() && t.partitions().next().is_none() {
        let root = Layer::new(
            LayerKind::Device,
            "whole device",
            device,
            0,
            t.size,
            t.topology,
        );
        return vec![(None, root, disk_dir)];
    }
    data.into_iter()
        .map(|p| {
            let root = Layer::new(
                LayerKind::Partition,
                format!("partition {}", p.number),
                device,
                p.first_lba * ss,
                (p.last_lba - p.first_lba + 1) * ss,
                t.topology,
            );
            let kernel = t
                .disk
                .as_ref()
                .and_then(|d| d.partitions.iter().find(|k| k.number == p.number));
            let dir = disk_dir.as_ref().zip(kernel).map(|(d, k)| d.join(&k.name));
            (Some(p.number), root, dir)
        })
        .collect()
}
