//! What lives in a partition, and how much of the partition it needs.
//!
//! A filesystem's size comes from its superblock (ext4 blocks count × block
//! size, XFS dblocks × block size, btrfs total_bytes). Everything else (a PV,
//! LUKS, an md member, swap, or nothing recognised) is taken to need the
//! whole partition: a PV's recorded device size and a LUKS2 segment of
//! "dynamic" size both reach its end.

use crate::stack::fs::{Filesystem, FsKind};
use crate::stack::{Layer, LayerKind};

/// What lives in one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Content {
    /// "ext4 filesystem", "LVM PV of vg0", "LUKS2", "nothing recognised".
    pub what: String,
    /// Bytes needed from the partition's start; None: all of it.
    pub needed_bytes: Option<u64>,
    /// The filesystem's superblock fields, when it is one.
    pub fs: Option<Filesystem>,
    /// What must be taken offline before the partition is moved.
    pub offline: Option<String>,
    /// The volume group of a PV, whose metadata the backup saves.
    pub vg: Option<String>,
    /// Live devices the kernel built on it (dm, md): it is in use.
    pub holders: Vec<String>,
    /// Bytes from the partition's start to the data its layer hands up
    /// (a PV's pe_start, LUKS payload, md data offset), when known.
    pub data_offset_bytes: Option<u64>,
}

/// The content of a partition's root layer (its first child).
pub fn of(root: Option<&Layer>) -> Content {
    let holders = root.map(holders).unwrap_or_default();
    let first = root.and_then(|r| r.children.iter().find(|l| l.kind != LayerKind::Holder));
    let Some(l) = first else {
        return Content {
            what: "nothing recognised".into(),
            needed_bytes: None,
            fs: None,
            offline: None,
            vg: None,
            holders,
            data_offset_bytes: None,
        };
    };
    let (what, needed, fs, offline) = match (l.kind, l.filesystem(), l.pv(), l.luks()) {
        (LayerKind::Filesystem, Some(f), _, _) => (
            format!("{} filesystem", f.kind),
            Some(f.size_bytes),
            Some(f.clone()),
            Some(format!("unmount the {} filesystem", f.kind)),
        ),
        (LayerKind::LvmPv, _, Some(pv), _) => {
            let vg = pv.vg.as_deref().unwrap_or("no VG");
            (
                format!("LVM PV of {vg}"),
                None,
                None,
                Some(format!("deactivate its volume group (vgchange -an {vg})")),
            )
        }
        (LayerKind::Luks, _, _, Some(x)) => (
            format!("LUKS{}", x.version),
            None,
            None,
            Some("close it (cryptsetup close NAME)".into()),
        ),
        (LayerKind::MdMember, ..) => (
            "md RAID member".into(),
            None,
            None,
            Some("stop its array (mdadm --stop)".into()),
        ),
        (LayerKind::Swap, ..) => ("swap".into(), None, None, Some("swapoff".into())),
        (kind, ..) => (kind.to_string(), None, None, None),
    };
    Content {
        what,
        needed_bytes: needed,
        fs,
        offline,
        vg: l.pv().and_then(|pv| pv.vg.clone()),
        holders,
        data_offset_bytes: l.data_offset_bytes.map(|d| {
            let into = root.map_or(0, |r| l.offset_bytes.saturating_sub(r.offset_bytes));
            into.saturating_add(d)
        }),
    }
}

impl Content {
    /// The least an ext4 filesystem here could be shrunk to (resize2fs),
    /// estimated from its superblock: the blocks in use, a tenth more and
    /// 4 MiB, in whole blocks, never above its size. The script asks
    /// `resize2fs -P` before it shrinks anything.
    pub fn shrink_floor_bytes(&self) -> Option<u64> {
        let f = self.fs.as_ref().filter(|f| f.kind == FsKind::Ext4)?;
        let used = f.size_bytes.saturating_sub(f.free_bytes?);
        let bs = u64::from(f.block_size.max(1));
        let floor = used
            .saturating_add(used / 10)
            .saturating_add(4 << 20)
            .div_ceil(bs)
            .saturating_mul(bs);
        Some(floor.min(f.size_bytes))
    }
}

/// The kernel devices built on this region, by kernel name.
fn holders(root: &Layer) -> Vec<String> {
    root.walk()
        .into_iter()
        .filter_map(|l| l.holder().map(|h| h.kernel_name.clone()))
        .collect()
}
