//! Where a command reaches a layer of a target: the node of the kernel
//! device that holds it (an active LV, an md array, an open LUKS
//! mapping), else the partition's or the disk's node on a live disk, the
//! image file at the layer's byte, or a container's raw copy there. A
//! layer seen only assembled from the targets (an LV of a VG that is not
//! active, an array not assembled) has no node: why, and what makes one.

use super::boot;
use crate::findings::Finding;
use crate::inspect::Target;
use crate::names::shell_word;
use crate::stack::{Layer, LayerKind};

/// Where a command reaches the layer a finding is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reach {
    /// A device node (a partition, an md array, an active LV, a disk),
    /// the layer `offset` bytes into it.
    Node { node: String, offset: u64 },
    /// A raw image file (or a container's raw copy, `copy`), the layer at
    /// byte `offset` of it.
    File {
        path: String,
        offset: u64,
        copy: bool,
    },
    /// No command can name it: why, and how to make it reachable.
    Not(String),
}

impl Reach {
    /// The name e2fsprogs opens for the layer: the node, or a file with
    /// its byte offset in e2fsprogs' io options (`IMG?offset=N`: ext2fs_open2
    /// in lib/ext2fs/openfs.c passes what follows `?` to the I/O manager,
    /// and lib/ext2fs/unix_io.c reads `offset=`). Quoted for the shell.
    pub fn e2fs(&self) -> Option<String> {
        match self {
            Reach::Node { node, offset: 0 } => Some(shell_word(node)),
            Reach::Node { node, offset } => Some(shell_word(&format!("{node}?offset={offset}"))),
            Reach::File { path, offset, .. } => {
                Some(shell_word(&format!("{path}?offset={offset}")))
            }
            Reach::Not(_) => None,
        }
    }

    /// Why a command is not printed, when it is not.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Reach::Not(why) => Some(why),
            _ => None,
        }
    }
}

/// How a command reaches the last layer of `chain` (the layers from a
/// root of `t` down to it), on `disk`.
pub fn reach(t: &Target, chain: &[&Layer], disk: &boot::Disk, f: &Finding) -> Reach {
    let (Some(root), Some(layer)) = (chain.first(), chain.last()) else {
        return of_partition(t, f.subject.partition, disk);
    };
    if let Some(holder) = chain.iter().rev().find(|l| l.kind == LayerKind::Holder) {
        return in_holder(holder, layer);
    }
    if layer.device != root.device {
        return Reach::Not(format!("{} is in no device a command can name", layer.name));
    }
    match disk {
        boot::Disk::Live(_) if root.kind == LayerKind::Partition => {
            let number = f.subject.partition.unwrap_or_default();
            Reach::Node {
                node: partition_node(t, number),
                offset: layer.offset_bytes.saturating_sub(root.offset_bytes),
            }
        }
        boot::Disk::Live(d) => Reach::Node {
            node: d.clone(),
            offset: layer.offset_bytes,
        },
        boot::Disk::Image(path) => Reach::File {
            path: path.clone(),
            offset: layer.offset_bytes,
            copy: false,
        },
        boot::Disk::Container { raw, .. } => Reach::File {
            path: raw.clone(),
            offset: layer.offset_bytes,
            copy: true,
        },
    }
}

/// A layer inside a kernel device: its node, the layer at its offset in
/// the device (the layers above a holder count in its bytes).
fn in_holder(holder: &Layer, layer: &Layer) -> Reach {
    let Some(info) = holder.holder() else {
        return Reach::Not(String::new());
    };
    let node = match &info.dm_name {
        Some(name) => format!("/dev/mapper/{name}"),
        None => format!("/dev/{}", info.kernel_name),
    };
    if std::ptr::eq(holder, layer) {
        return Reach::Node { node, offset: 0 };
    }
    if layer.device != holder.device {
        return Reach::Not(format!("{} is inside a layer of {node}", layer.name));
    }
    Reach::Node {
        node,
        offset: layer.offset_bytes,
    }
}

/// A partition's own finding (or, for None, the disk's): its node, or
/// the image at its start.
pub fn of_partition(t: &Target, number: Option<u32>, disk: &boot::Disk) -> Reach {
    let start = number.and_then(|n| {
        let ss = t.table.sector_size;
        t.table
            .partitions
            .iter()
            .find(|p| p.number == n)
            .map(|p| p.first_lba.saturating_mul(ss))
    });
    match (disk, number) {
        (boot::Disk::Live(_), Some(n)) => Reach::Node {
            node: partition_node(t, n),
            offset: 0,
        },
        (boot::Disk::Live(d), None) => Reach::Node {
            node: d.clone(),
            offset: 0,
        },
        (boot::Disk::Image(path), _) => Reach::File {
            path: path.clone(),
            offset: start.unwrap_or(0),
            copy: false,
        },
        (boot::Disk::Container { raw, .. }, _) => Reach::File {
            path: raw.clone(),
            offset: start.unwrap_or(0),
            copy: true,
        },
    }
}

/// The node of partition `number` of a live disk, as the kernel named
/// it (`sda1`, `nvme0n1p1`), else the disk's name and the number.
fn partition_node(t: &Target, number: u32) -> String {
    let Some(d) = &t.disk else {
        return format!("{}{number}", t.path.display());
    };
    d.partitions
        .iter()
        .find(|k| k.number == number)
        .map_or_else(
            || format!("{}{number}", d.device.display()),
            |k| format!("/dev/{}", k.name),
        )
}

/// A layer seen only in what was assembled across the targets (the
/// `chain` from the array or VG down): no device a command can name, and
/// what makes one.
pub fn unreachable(chain: &[&Layer]) -> Reach {
    let lv = chain.iter().find(|l| l.kind == LayerKind::LvmLv);
    let array = chain.iter().find(|l| l.kind == LayerKind::MdArray);
    let why = match (lv, array, chain.first()) {
        (Some(lv), _, Some(vg)) => {
            let name = vg.device.strip_prefix("lvm:").unwrap_or(&vg.device);
            format!(
                "it is inside {}, which is not active here, so no device names it: activate it (vgchange -ay {name}; for image files, attach each with losetup -f --show IMAGE first) and run diskalign plan again for the command",
                lv.name
            )
        }
        (None, Some(a), _) => format!(
            "it is inside {}, which is not assembled here, so no device names it: assemble it (mdadm --assemble --scan; for image files, attach each with losetup -f --show IMAGE first) and run diskalign plan again for the command",
            a.name
        ),
        _ => "it is inside what was assembled across the targets, which no device names".into(),
    };
    Reach::Not(why)
}
