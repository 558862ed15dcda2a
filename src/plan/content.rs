//! What lives in a partition, and how much of the partition it needs.
//!
//! A filesystem's size comes from its superblock (ext4 blocks count × block
//! size, XFS dblocks × block size, btrfs total_bytes), a PV's from the
//! device size its header records (pvresize changes it). In an empty
//! partition (nothing recognised, its first MiB zero: as a partitioning
//! tool leaves it on a clean disk) the zero bytes at its end are not
//! needed. Everything else (LUKS, an md member,
//! swap) is taken to need the whole partition: a LUKS2 segment of
//! "dynamic" size reaches its end.

use super::hidden::BootVolume;
use crate::inspect::Root;
use crate::stack::{BackupState, FatType, Filesystem, FsKind};
use crate::stack::{Layer, LayerKind};

/// What lives in one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Content {
    /// "ext4 filesystem", "LVM PV of vg0", "LUKS2", "NTFS, not judged"
    /// (named by its signature, not read), "nothing recognised".
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
    /// The layer found (None: nothing recognised).
    pub kind: Option<LayerKind>,
    /// Nothing was recognised, and this many bytes at its end are zero
    /// (0 unless its first MiB is zero too): the plan may leave them
    /// out, and the script checks they still are.
    pub zero_tail_bytes: Option<u64>,
    /// A FAT, exFAT or NTFS volume read: its boot sectors record where
    /// it starts, which the script rewrites when it moves.
    pub boot: Option<BootVolume>,
}

/// The content of a partition's root (its root layer's first child).
pub fn of(root: Option<&Root>) -> Content {
    let layer = root.map(|r| &r.layer);
    let holders = layer.map(holders).unwrap_or_default();
    let first = layer.and_then(|r| r.children.iter().find(|l| l.kind != LayerKind::Holder));
    let Some(l) = first else {
        let zero = root.map_or(0, |r| r.zero_tail_bytes);
        let what = if zero > 0 {
            "empty (zeros)"
        } else {
            "nothing recognised"
        };
        return Content {
            kind: None,
            what: what.into(),
            needed_bytes: root.map(|r| r.layer.size_bytes.saturating_sub(zero)),
            fs: None,
            offline: None,
            vg: None,
            holders,
            data_offset_bytes: None,
            zero_tail_bytes: Some(zero),
            boot: None,
        };
    };
    let volume = l.filesystem().is_some_and(|f| f.volume.is_some());
    let into = layer.map_or(0, |r| l.offset_bytes.saturating_sub(r.offset_bytes));
    let (what, needed, fs, offline) = match (l.kind, l.filesystem(), l.pv(), l.luks()) {
        (LayerKind::Filesystem, Some(f), _, _) if f.volume.is_some() => (
            format!("{} filesystem", l.name),
            volume_needs(f),
            Some(f.clone()),
            Some(format!("unmount the {} filesystem", l.name)),
        ),
        (LayerKind::Filesystem, Some(f), _, _) => (
            format!("{} filesystem", f.kind),
            Some(f.size_bytes),
            Some(f.clone()),
            Some(format!("unmount the {} filesystem", f.kind)),
        ),
        (LayerKind::LvmPv, _, Some(pv), _) => {
            let recorded = pv.device_size_bytes;
            (
                format!("LVM PV of {}", pv.vg.as_deref().unwrap_or("no VG")),
                (recorded > 0).then(|| into.saturating_add(recorded)),
                None,
                // A PV in no VG has nothing active on it.
                pv.vg
                    .as_deref()
                    .map(|vg| format!("deactivate its volume group (vgchange -an {vg})")),
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
        (LayerKind::ZfsMember, ..) => {
            let pool = l.zfs().and_then(|z| z.pool_name.clone());
            (
                format!("ZFS member of pool {}", pool.as_deref().unwrap_or("(none)")),
                None,
                None,
                Some(format!(
                    "export its pool (zpool export {})",
                    pool.as_deref().unwrap_or("POOL")
                )),
            )
        }
        // An OSD uses the bytes its label records (ceph-bluestore-tool
        // bluefs-bdev-expand takes in more after a partition grows).
        (LayerKind::Bluestore, ..) => {
            let b = l.bluestore();
            let id = b.and_then(|b| b.whoami()).unwrap_or("ID");
            (
                format!("Ceph BlueStore device of osd.{id}"),
                b.map(|b| into.saturating_add(b.size_bytes)),
                None,
                Some(format!("stop the OSD (systemctl stop ceph-osd@{id})")),
            )
        }
        // Named by its signature, not read: it needs the whole partition.
        (LayerKind::Unread, ..) => {
            let s = l.signature().cloned().unwrap_or_default();
            (
                format!("{}, not judged", s.short()),
                None,
                None,
                s.what
                    .ends_with(" filesystem")
                    .then(|| format!("unmount the {}", s.what)),
            )
        }
        (kind, ..) => (kind.to_string(), None, None, None),
    };
    Content {
        kind: Some(l.kind),
        what,
        needed_bytes: needed,
        fs,
        offline,
        vg: l.pv().and_then(|pv| pv.vg.clone()),
        holders,
        // A FAT's data area or an exFAT's heap off the grid is placed by
        // its mkfs options (check's `fix`), not by a partition start off
        // 4 KiB under an aligned data area.
        data_offset_bytes: l
            .data_offset_bytes
            .filter(|_| !volume)
            .map(|d| into.saturating_add(d)),
        zero_tail_bytes: None,
        boot: BootVolume::of(l, into),
    }
}

/// The bytes a volume needs from its start: its span (an NTFS's with
/// the backup boot sector after it); all of its partition for an NTFS
/// whose backup is not there: ntfsresize and ntfs-3g keep it in the
/// partition's last sector, which the plan then never cuts.
fn volume_needs(f: &Filesystem) -> Option<u64> {
    let v = f.volume.as_deref()?;
    let elsewhere = f.kind == FsKind::Ntfs && v.backup.state != BackupState::Same;
    (!elsewhere).then_some(f.size_bytes)
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
    /// The volume's bytes per sector (512 when none was read).
    fn sector_bytes(&self) -> u64 {
        self.boot.as_ref().map_or(512, |b| b.sector)
    }

    /// The FAT's type, when it is a FAT read.
    fn fat_type(&self) -> Option<FatType> {
        self.boot.as_ref().and_then(|b| b.volume.fat_type)
    }

    /// Its partition may end later: not for an md member (a 0.90 or 1.0
    /// superblock is found from the device's end) nor a ZFS member (two of
    /// its labels are found from the end), nor for data the plan does not
    /// read (an NTFS keeps its backup boot sector in its last sector),
    /// unless the partition is empty.
    pub fn may_grow(&self) -> bool {
        match self.kind {
            Some(LayerKind::MdMember | LayerKind::ZfsMember | LayerKind::Unread) => false,
            // Its backup boot sector is in the sector after the volume,
            // which mkntfs makes the partition's last.
            _ if self.fs.as_ref().is_some_and(|f| f.kind == FsKind::Ntfs) => false,
            None => self.zero_tail_bytes.is_some_and(|z| z > 0),
            _ => true,
        }
    }

    /// What to run by hand so that this content needs no more than
    /// `to_bytes` of the partition at `node` (its end can then come down
    /// to `to_bytes`), then plan again; or why it cannot. The script
    /// shrinks an ext4 itself; these are the rest.
    pub fn shrink_by_hand(&self, node: &str, to_bytes: u64) -> Vec<String> {
        let again = "then run diskalign plan again";
        let fs = self.fs.as_ref().map(|f| f.kind);
        match (self.kind, fs) {
            (Some(LayerKind::LvmPv), _) => vec![
                format!("pvresize --setphysicalvolumesize {to_bytes}b {node}   # the PV gives up its last bytes; it refuses while an extent lies there (pvs -o+pv_pe_alloc_count)"),
                again.into(),
            ],
            (_, Some(FsKind::Ext4)) => vec![format!(
                "the ext4 filesystem needs all of it (resize2fs -P {node}): free space in it, {again}"
            )],
            (_, Some(FsKind::Btrfs)) => vec![
                format!("btrfs filesystem resize {to_bytes} MOUNTPOINT   # while {node} is mounted there"),
                again.into(),
            ],
            // ntfsresize --size N leaves the volume a whole number of
            // clusters short of N and writes the backup boot sector into
            // the last sector of those N bytes (seen with ntfs-3g
            // 2022.10.3: --size 40001536 made 78120 sectors, the backup
            // in sector 78127), so the partition's new end keeps it.
            (_, Some(FsKind::Ntfs)) => vec![
                format!("ntfsresize --size {to_bytes} {node}   # unmounted; it writes the backup boot sector into the last sector of those bytes (ntfsresize --info says how small it can go)"),
                format!("p={node}; n=$(od -An -tu1 -j 40 -N 8 \"$p\" | awk '{{ for (i = NF; i >= 1; i--) n = n * 256 + $i; print n }}'); dd if=\"$p\" of=\"$p\" bs={bps} count=1 seek=\"$n\" conv=notrunc,fsync status=none   # the boot sector copied also into the sector after the volume (its sector count, at byte 40), where mkntfs keeps its backup and check reads it", bps = self.sector_bytes()),
                again.into(),
            ],
            (_, Some(FsKind::Vfat)) if self.fat_type() == Some(FatType::Fat12) => vec![format!(
                "a FAT12 is resized by no tool here: copy its files off, make it again within the first {to_bytes} bytes of {node} (mkfs.fat -F 12 -n LABEL -i SERIAL {node} {}), copy them back, {again}",
                to_bytes / 1024
            )],
            // fatresize (libparted) also rewrites the partition's entry to
            // that size or a little less; 1.1.0 aborts on an assertion for
            // a step of a few KiB (seen: 2,560 bytes).
            (_, Some(FsKind::Vfat)) => vec![
                format!("fatresize -s {to_bytes} {node}   # unmounted; it also makes the partition's entry that size or a little less (plan again puts its end back on 4 KiB); if it stops on an assertion, ask for 1 MiB less"),
                again.into(),
            ],
            (_, Some(FsKind::Exfat)) => vec![format!(
                "exFAT is resized by no tool here (exfatprogs has none): copy its files off, make the partition end {to_bytes} bytes in (sfdisk -N), make the volume again on it (mkfs.exfat -L LABEL {node}), copy the files back, {again}"
            )],
            (_, Some(FsKind::Xfs)) => vec![format!(
                "XFS cannot shrink: the end stays unless the filesystem is made again smaller (back up, mkfs.xfs -d size={to_bytes} {node}, restore)"
            )],
            (Some(LayerKind::Swap), _) => vec![format!(
                "swapoff {node} && mkswap -U UUID {node} {}   # UUID: the one blkid shows now, so fstab still finds it",
                to_bytes / 1024
            )],
            (Some(LayerKind::Luks), _) => vec![format!(
                "shrink what is inside the LUKS container first, then make the container end {to_bytes} bytes into {node} (cryptsetup resize lasts only while it is open), {again}"
            )],
            (Some(LayerKind::MdMember), _) => vec![format!(
                "mdadm --grow --size lets the array use less of each member: make it end {to_bytes} bytes into {node}, {again}"
            )],
            (Some(LayerKind::Unread), _) => vec![format!(
                "{} is in it, which the plan does not read, so it cannot tell how much of {node} that needs: make it end within its first {to_bytes} bytes with its own tools, {again}",
                self.what.trim_end_matches(", not judged")
            )],
            (None, _) => vec![format!(
                "nothing the plan recognises is in it, but its first MiB or its last bytes are not zero: it cannot tell that {node} does not need its end; if it does not, make the partition end {to_bytes} bytes in with sfdisk -N"
            )],
            _ => vec![format!(
                "make what lives in {node} end within its first {to_bytes} bytes, {again}"
            )],
        }
    }
}

/// The kernel devices built on this region, by kernel name.
fn holders(root: &Layer) -> Vec<String> {
    root.walk()
        .into_iter()
        .filter_map(|l| l.holder().map(|h| h.kernel_name.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iolimits::Topology;
    use crate::stack::Detail;

    /// A ZFS member keeps two labels at its end: its partition never
    /// grows, and the pool is exported before anything moves.
    #[test]
    fn a_zfs_member_does_not_grow_and_is_exported_first() {
        let t = Topology::default();
        let mut part = Layer::new(LayerKind::Partition, "p1", "d", 1 << 20, 64 << 20, t);
        let mut z = Layer::new(LayerKind::ZfsMember, "ZFS", "d", 1 << 20, 64 << 20, t);
        z.detail = Some(Detail::Zfs(Box::new(crate::stack::Zfs {
            pool_name: Some("tank".into()),
            ..Default::default()
        })));
        part.children.push(z);
        let root = Root {
            partition: Some(1),
            layer: part,
            zero_tail_bytes: 0,
        };
        let c = of(Some(&root));
        assert_eq!(c.kind, Some(LayerKind::ZfsMember));
        assert!(!c.may_grow());
        assert_eq!(c.what, "ZFS member of pool tank");
        assert_eq!(
            c.offline.as_deref(),
            Some("export its pool (zpool export tank)")
        );
    }

    /// What a signature names but nothing reads needs the whole
    /// partition, never grows, and is said by name.
    #[test]
    fn an_unread_layer_is_named_and_kept_whole() {
        let t = Topology::default();
        let mut part = Layer::new(LayerKind::Partition, "p1", "d", 1 << 20, 64 << 20, t);
        let mut u = Layer::new(LayerKind::Unread, "NTFS", "d", 1 << 20, 64 << 20, t);
        u.detail = Some(Detail::Signature(crate::stack::Unread {
            what: "NTFS filesystem".into(),
            magic_offset_bytes: 3,
        }));
        part.children.push(u);
        let root = Root {
            partition: Some(1),
            layer: part,
            zero_tail_bytes: 0,
        };
        let c = of(Some(&root));
        assert_eq!(c.what, "NTFS, not judged");
        assert_eq!(c.needed_bytes, None);
        assert!(!c.may_grow());
        assert_eq!(c.offline.as_deref(), Some("unmount the NTFS filesystem"));
        assert!(c.shrink_by_hand("/dev/sdb1", 1 << 20)[0].starts_with("NTFS is in it"));
    }

    /// The volume in a partition of 2 MiB at sector 63 of `disk`.
    fn volume_content(disk: &[u8]) -> Content {
        let t = Topology::default();
        let mut part = Layer::new(LayerKind::Partition, "p1", "d", 63 * 512, 2 << 20, t);
        part.children
            .push(crate::plan::hidden::tests::layer(disk, 63 * 512, 2 << 20));
        of(Some(&Root {
            partition: Some(1),
            layer: part,
            zero_tail_bytes: 0,
        }))
    }

    /// An NTFS needs its span (with the backup after the volume) when the
    /// backup is there, else all of its partition (its last sector may
    /// hold it); a volume that must end sooner gets its tool.
    #[test]
    fn volumes_keep_their_backup_and_shrink_with_their_tools() {
        use crate::plan::hidden::tests::{disk_with, fixture, put};
        let mut boot = fixture("ntfs-c4096");
        put(&mut boot, 0x28, &4095u64.to_le_bytes());
        put(&mut boot, 56, &8u64.to_le_bytes());
        let ntfs = volume_content(&disk_with(&boot, 4095, &|_| {}));
        assert_eq!(ntfs.what, "NTFS filesystem");
        assert_eq!(ntfs.needed_bytes, Some(4096 * 512));
        assert!(!ntfs.may_grow());
        let cmds = ntfs.shrink_by_hand("/dev/sdb1", 1 << 20);
        assert!(
            cmds[0].starts_with("ntfsresize --size 1048576 /dev/sdb1   #"),
            "{cmds:?}"
        );
        assert!(
            cmds[1].starts_with("p=/dev/sdb1; n=$(od -An -tu1 -j 40 -N 8 \"$p\""),
            "{cmds:?}"
        );
        assert_eq!(cmds[2], "then run diskalign plan again");
        let mut lone = vec![0u8; 4 << 20];
        put(&mut lone, 63 * 512, &boot);
        assert_eq!(volume_content(&lone).needed_bytes, None, "no backup read");
        let fat = volume_content(&disk_with(&fixture("fat32-s1"), 6, &|_| {}));
        assert!(fat.may_grow());
        assert!(fat.shrink_by_hand("/dev/sdb1", 1 << 20)[0]
            .starts_with("fatresize -s 1048576 /dev/sdb1   #"));
        let fat12 = volume_content(&disk_with(&fixture("fat12"), 0, &|_| {}));
        assert!(fat12.shrink_by_hand("/dev/sdb1", 1 << 20)[0]
            .starts_with("a FAT12 is resized by no tool here"));
        let exfat = volume_content(&disk_with(&fixture("exfat-c4K"), 12, &|_| {}));
        assert!(exfat.shrink_by_hand("/dev/sdb1", 1 << 20)[0]
            .starts_with("exFAT is resized by no tool here"));
    }
}
