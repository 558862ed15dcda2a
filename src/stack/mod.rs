//! What lives inside a device: LVM, md RAID, LUKS, filesystems. Each format
//! has its own small parser over raw bytes; `walk` finds what is at the
//! start of a region, `assemble` puts md arrays and volume groups together
//! across targets, `kernel` follows the live holders in sysfs. The result is
//! a tree of [`Layer`]s that `check` judges layer by layer.

mod assemble;
mod bcache;
mod bluestore;
#[cfg(test)]
mod boot_fixtures;
mod boot_volume;
mod exfat;
mod fat;
mod format;
mod fs;
mod kernel;
mod labels;
mod limits;
mod luks;
mod lvm;

mod md;
mod ntfs;
mod region;
mod registry;
mod signature;
mod swap;
mod volume;
mod walk;
mod zfs;

/// The arrays and volume groups assembled from the members found.
pub use assemble::assemble;
/// bcache: its layer, and its reader by itself (fuzzed).
pub use bcache::{
    expected_checksum as bcache_checksum, read as read_bcache, Bcache, BcacheRole,
    SUPERBLOCK_AT as BCACHE_SUPERBLOCK_AT,
};
/// Ceph BlueStore: its label, and the reader by itself (fuzzed).
pub use bluestore::{
    checksum as bluestore_checksum, checksum_end as bluestore_checksum_end,
    parse as parse_bluestore, read as read_bluestore, Bluestore,
    LABEL_BYTES as BLUESTORE_LABEL_BYTES,
};
/// FAT, exFAT and NTFS volumes as filesystem layers: what their boot
/// sectors say in the terms the three share.
pub use boot_volume::{Backup, BackupState, Volume};
/// exFAT: a boot region's fields and checksum, read by itself (fuzzed).
pub use exfat::{boot_checksum as exfat_boot_checksum, parse as parse_exfat, Exfat};
/// FAT12/16/32: a boot sector's BPB and its data area, read by itself (fuzzed).
pub use fat::{parse as parse_fat, Fat, FatType};
/// Filesystems: their layer, and the reader by itself (fuzzed).
pub use fs::{read as read_filesystem, F2fsAreas, Filesystem, FsKind};
/// The kernel's devices stacked on a disk (holders).
pub use kernel::holders;
/// LUKS: its layer, and its reader by itself (fuzzed).
pub use luks::{read as read_luks, Luks};
/// LVM: a PV's label and metadata, the VG text, an LV's segments.
pub use lvm::{
    lvm_crc, parse_lvm_text, read as read_lvm, read_label, read_metadata, volume_group, Leg,
    Segment,
};
/// dm-thin pool metadata (a pool's `_tmeta`), read by itself (fuzzed).
pub use lvm::{
    thin_block_checksum, thin_device_map, thin_map, thin_superblock, ThinDeviceMap, ThinSuperblock,
    THIN_NODE_XOR, THIN_SUPERBLOCK_XOR,
};
/// md: a member's superblock, and its reader by itself (fuzzed).
pub use md::{read as read_md, MdMember};
/// NTFS: a boot sector's fields, read by itself (fuzzed).
pub use ntfs::{decode_sectors_per_cluster as ntfs_sectors_per_cluster, parse as parse_ntfs, Ntfs};
/// A region of a device that a layer may start in.
pub use region::Region;
/// The signature scan: what is there when no reader knows it.
pub use signature::{article, scan_signatures, Unread};
/// The walk from a region to its layers, and what it leaves to assemble.
pub use walk::{first_reads, walk_region, FirstReads, Pending};
/// ZFS: a member's labels, their nvlists, and the reader by itself.
pub use zfs::{
    decode_nvlist, nvlist, phys_offset, read as read_zfs, seal, Encoder, NvList, NvValue, Vdev,
    Zfs, PHYS_SIZE,
};

use crate::findings::{Finding, Status};
use crate::iolimits::Topology;
pub use lvm::{LegInfo, LvInfo, ThinPoolSeg, ThinSeg, VgInfo, VgPv};
pub use md::{ArrayInfo, ArrayMember};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LayerKind {
    /// A partition of a target (its findings are in `partitions[]`).
    Partition,
    /// A whole target without a partition table.
    #[default]
    Device,
    LvmPv,
    MdMember,
    /// A bcache backing or cache device.
    Bcache,
    Luks,
    Filesystem,
    Swap,
    /// A device assembled from members: an md array.
    MdArray,
    LvmVg,
    LvmLv,
    /// One piece of an LV segment on one PV.
    LvmLeg,
    /// A device the live kernel stacked on top (sysfs `holders/`).
    Holder,
    /// A leaf vdev of a ZFS pool (its labels read).
    ZfsMember,
    /// What a signature names where no format the walk reads was found
    /// (NTFS, FAT, exFAT, ISO 9660, ...): named, its start judged, what
    /// is inside it not.
    Unread,
    /// A Ceph BlueStore OSD's device (its label at byte 0 read).
    Bluestore,
}

crate::spelled_as_serde!(LayerKind);

/// What a layer kind means to the readers and the rules: one row per kind
/// in `LayerKind::meaning`, an exhaustive match, so a new kind does not
/// compile until it says both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindMeaning {
    /// The kernel builds a device of its own from this layer's metadata
    /// (an opened LUKS header, an md member, a PV's LVs, a bcache backing
    /// device): its live holders hang above this layer, not above the
    /// region it sits in.
    pub builds_kernel_device: bool,
    /// The layer is a device with an address space of its own (an LV, an
    /// md array, a live holder): the layers above count in its bytes, and
    /// are off where it is (check::inherit).
    pub own_space: bool,
}

impl LayerKind {
    pub const fn meaning(self) -> KindMeaning {
        let (builds_kernel_device, own_space) = match self {
            LayerKind::Luks | LayerKind::MdMember | LayerKind::LvmPv | LayerKind::Bcache => {
                (true, false)
            }
            LayerKind::LvmLv | LayerKind::MdArray | LayerKind::Holder => (false, true),
            LayerKind::Partition
            | LayerKind::Device
            | LayerKind::Filesystem
            | LayerKind::Swap
            | LayerKind::LvmVg
            | LayerKind::LvmLeg
            | LayerKind::ZfsMember
            | LayerKind::Unread
            | LayerKind::Bluestore => (false, false),
        };
        KindMeaning {
            builds_kernel_device,
            own_space,
        }
    }
}

/// What the PV label and metadata say, seen from one PV.
#[derive(Clone, Default, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct PvInfo {
    pub uuid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vg: Option<String>,
    pub pe_start_bytes: u64,
    /// The VG's extent size, when the PV's metadata names its VG.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extent_size_bytes: Option<u64>,
    /// The device size the PV header records (pvcreate takes the device's,
    /// pvresize sets another): the bytes the PV uses from its start.
    /// 0 in documents written before it was read.
    pub device_size_bytes: u64,
}

/// A live holder as the kernel shows it.
#[derive(Clone, Default, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct HolderInfo {
    /// dm-N or mdN.
    pub kernel_name: String,
    /// /dev/mapper name or md level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dm_name: Option<String>,
    /// dm uuid prefix: CRYPT, LVM, mpath...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dm_uuid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub md_level: Option<String>,
    /// A live dm device's target type (`linear`, `striped`, `thin`,
    /// `thin-pool`, `crypt`, ...): its table's first target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dm_target: Option<String>,
}

/// What a layer's own metadata says: one variant per kind of metadata,
/// serialized under its name (`"pv": {...}`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Detail {
    Pv(PvInfo),
    Md(md::MdMember),
    Luks(luks::Luks),
    Filesystem(fs::Filesystem),
    Array(ArrayInfo),
    Vg(VgInfo),
    Lv(LvInfo),
    Leg(LegInfo),
    Holder(HolderInfo),
    Bcache(bcache::Bcache),
    /// Boxed: a label's fields outweigh every other variant.
    Zfs(Box<zfs::Zfs>),
    /// What an `unread` layer's signature says.
    Signature(signature::Unread),
    /// A BlueStore device's label.
    Bluestore(bluestore::Bluestore),
}

/// `Layer::pv()` and the like: the detail when it is of that variant.
macro_rules! detail_accessors {
    ($($name:ident: $variant:ident => $t:ty),* $(,)?) => {
        impl Layer {$(
            pub fn $name(&self) -> Option<&$t> {
                match &self.detail {
                    Some(Detail::$variant(x)) => Some(x),
                    _ => None,
                }
            }
        )*}
    };
}

detail_accessors! {
    pv: Pv => PvInfo,
    md: Md => md::MdMember,
    luks: Luks => luks::Luks,
    filesystem: Filesystem => fs::Filesystem,
    array: Array => ArrayInfo,
    vg: Vg => VgInfo,
    lv: Lv => LvInfo,
    leg: Leg => LegInfo,
    holder: Holder => HolderInfo,
    bcache: Bcache => bcache::Bcache,
    signature: Signature => signature::Unread,
    bluestore: Bluestore => bluestore::Bluestore,
}

impl Layer {
    pub fn zfs(&self) -> Option<&zfs::Zfs> {
        match &self.detail {
            Some(Detail::Zfs(x)) => Some(x),
            _ => None,
        }
    }
}

/// One layer of the stack, in its own address space and on the device.
#[derive(Clone, Default, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Layer {
    pub kind: LayerKind,
    pub name: String,
    /// The target, partition or assembled device whose bytes these are.
    pub device: String,
    /// Start of the layer in the address space of `device`, in bytes.
    pub offset_bytes: u64,
    pub size_bytes: u64,
    /// Where the data handed to the layer above starts, from the layer's
    /// own start (pe_start, md data_offset, LUKS payload).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_offset_bytes: Option<u64>,
    /// The limits of what this layer sits on (stacked as the kernel does).
    pub below: Topology,
    /// The limits this layer gives the layer above, for md arrays, LVs,
    /// LUKS and live holders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exposes: Option<Topology>,
    /// What the layer's own metadata says (`pv`, `md`, `luks`,
    /// `filesystem`, `array`, `vg`, `lv`, `leg`, `holder`, `bcache`, `zfs`,
    /// `bluestore` in the JSON), or an `unread` layer's `signature`.
    #[serde(flatten)]
    pub detail: Option<Detail>,
    /// No warning or error about this layer.
    pub aligned: bool,
    /// The tier of its worst finding (`aligned`, `incomplete`, `untidy`,
    /// `damaged`, `misaligned`).
    pub status: Status,
    /// Where a misaligned offset this layer sits at comes from, when the
    /// layer's own start is on its grid: the subject of the cause (a
    /// partition, or a layer with its own start finding), as `subject.layer`
    /// spells it, prefixed by the target outside that target's tree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inherits_from: Option<String>,
    pub findings: Vec<Finding>,
    pub children: Vec<Layer>,
}

impl Layer {
    pub fn new(
        kind: LayerKind,
        name: impl Into<String>,
        device: impl Into<String>,
        offset: u64,
        size: u64,
        below: Topology,
    ) -> Self {
        Layer {
            kind,
            name: name.into(),
            device: device.into(),
            offset_bytes: offset,
            size_bytes: size,
            data_offset_bytes: None,
            below,
            exposes: None,
            detail: None,
            aligned: true,
            status: Status::Aligned,
            inherits_from: None,
            findings: Vec::new(),
            children: Vec::new(),
        }
    }

    /// Byte offset of the data area on `device`.
    pub fn data_start(&self) -> Option<u64> {
        self.data_offset_bytes
            .map(|d| self.offset_bytes.saturating_add(d))
    }

    /// This layer and everything above it, depth first.
    pub fn walk(&self) -> Vec<&Layer> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.walk());
        }
        out
    }

    pub fn walk_mut(&mut self, f: &mut dyn FnMut(&mut Layer)) {
        f(self);
        for c in &mut self.children {
            c.walk_mut(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every parser on every prefix of buffers holding only its magic and
    /// garbage: errors or nothing, never a panic or a huge allocation.
    #[test]
    fn parsers_survive_magic_followed_by_garbage() {
        let mut rng = fastrand::Rng::with_seed(7);
        for fill in [0x00u8, 0xff, 0x7f] {
            let mut b = vec![fill; 70 * 1024];
            b[4096..4100].copy_from_slice(&md::MAGIC.to_le_bytes());
            b[4100] = 1;
            b[0..6].copy_from_slice(b"LUKS\xba\xbe");
            b[7] = 2;
            b[512..520].copy_from_slice(b"LABELONE");
            b[536..544].copy_from_slice(b"LVM2 001");
            b[1024 + 0x38..1024 + 0x3a].copy_from_slice(&[0x53, 0xef]);
            b[65536 + 64..65536 + 72].copy_from_slice(b"_BHRfS_M");
            for _ in 0..200 {
                let i = rng.usize(..b.len());
                b[i] = rng.u8(..);
            }
            for n in (0..b.len()).step_by(509).chain([b.len()]) {
                let s: &[u8] = &b[..n];
                let _ = md::read(s);
                let _ = luks::read(s);
                let _ = lvm::read(s);
                let _ = fs::read(s);
                let mut x = s.to_vec();
                x[..n.min(4)].copy_from_slice(&b"XFSB"[..n.min(4)]);
                let _ = fs::read(&x[..]);
            }
        }
    }
}
