//! The kernel's I/O limits of a block device: the vocabulary every floor
//! speaks, from sysfs and the ioctls up to the rules and the reports.

use serde::{Deserialize, Serialize};

/// The kernel's I/O limits of one block device, in bytes.
/// Read back, a key an older document lacks is 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Topology {
    pub logical_block_size: u32,
    pub physical_block_size: u32,
    pub minimum_io_size: u32,
    pub optimal_io_size: u32,
    /// As the kernel prints it: `-1` on a disk and `4294967295` on a
    /// partition mean "misaligned"; never clamped.
    pub alignment_offset: i64,
    pub discard_granularity: u64,
    pub discard_alignment: u64,
    /// A flash card's allocation unit: an SD card's AU or an eMMC's erase
    /// group, the mmc core's `preferred_erase_size` (or `--topology
    /// erase=`); 0 when none is known. Not a power of two on every card
    /// (the SD table has 12 and 24 MiB).
    #[serde(skip_serializing_if = "is_zero")]
    pub erase_unit_bytes: u64,
    /// The unit is removable flash's (an SD card, or given by hand): an
    /// offset off it is a warning there, an info on an eMMC.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub removable_flash: bool,
    /// An SD card's boundary unit from the SD specification's table by
    /// capacity (`topology::flash`): where the SD Association's formatter
    /// starts a FAT's data area or an exFAT's heap; 0 for any other disk.
    #[serde(skip_serializing_if = "is_zero")]
    pub sd_boundary_unit_bytes: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl Topology {
    /// What an image file is judged with when nothing else is known.
    pub const IMAGE_DEFAULT: Topology = Topology {
        logical_block_size: 512,
        physical_block_size: 512,
        minimum_io_size: 512,
        optimal_io_size: 0,
        alignment_offset: 0,
        discard_granularity: 0,
        discard_alignment: 0,
        erase_unit_bytes: 0,
        removable_flash: false,
        sd_boundary_unit_bytes: 0,
    };

    /// A plain device with `lbs`-byte logical and physical blocks.
    pub fn plain(lbs: u32) -> Topology {
        Topology {
            logical_block_size: lbs,
            physical_block_size: lbs,
            minimum_io_size: lbs,
            ..Topology::IMAGE_DEFAULT
        }
    }

    /// The kernel's alignment granularity: max(pbs, min).
    pub fn grain(&self) -> u64 {
        u64::from(self.physical_block_size.max(self.minimum_io_size)).max(1)
    }

    /// The kernel's "misaligned" marker (-1 on disks, 4294967295 on partitions).
    pub fn reports_misaligned(&self) -> bool {
        is_misaligned_marker(self.alignment_offset)
    }

    /// Whether a kernel could report these limits: the invariants
    /// `blk_validate_limits` (block/blk-settings.c) enforces on every queue.
    /// sysfs trees and `--topology` are input, so both are checked here
    /// before any arithmetic divides by them.
    pub fn validate(&self) -> Result<(), LimitError> {
        let lbs = self.logical_block_size;
        if !lbs.is_power_of_two() || !(512..=65536).contains(&lbs) {
            return Err(LimitError::LogicalBlock { lbs });
        }
        let pbs = self.physical_block_size;
        if !pbs.is_power_of_two() || pbs < lbs {
            return Err(LimitError::PhysicalBlock { pbs, lbs });
        }
        let (min, opt) = (self.minimum_io_size, self.optimal_io_size);
        if min % lbs != 0 || opt % lbs != 0 {
            return Err(LimitError::IoSizes { min, opt, lbs });
        }
        let eu = self.erase_unit_bytes;
        if eu % u64::from(lbs) != 0 {
            return Err(LimitError::EraseUnit { eu, lbs });
        }
        let ao = self.alignment_offset;
        if !self.reports_misaligned() && (ao < 0 || ao as u64 % u64::from(lbs) != 0) {
            return Err(LimitError::AlignmentOffset { ao, lbs });
        }
        Ok(())
    }

    /// The alignment offset usable in arithmetic: the marker counts as 0
    /// (what libblkid, and so parted and fdisk, do with it).
    pub fn usable_alignment_offset(&self) -> u64 {
        if self.reports_misaligned() || self.alignment_offset < 0 {
            0
        } else {
            self.alignment_offset as u64
        }
    }
}

/// True for the kernel's "misaligned" alignment_offset values.
pub fn is_misaligned_marker(v: i64) -> bool {
    v == -1 || v == i64::from(u32::MAX)
}

/// Limits no kernel would report (`blk_validate_limits`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error("logical block size {lbs} must be a power of two from 512 to 65536")]
    LogicalBlock { lbs: u32 },
    #[error("physical block size {pbs} must be a power of two no smaller than the logical block size {lbs}")]
    PhysicalBlock { pbs: u32, lbs: u32 },
    #[error("minimum and optimal I/O sizes ({min} and {opt}) must be multiples of the logical block size {lbs}")]
    IoSizes { min: u32, opt: u32, lbs: u32 },
    #[error("alignment offset {ao} must be -1 or a multiple of the logical block size {lbs}")]
    AlignmentOffset { ao: i64, lbs: u32 },
    #[error("erase unit {eu} must be a multiple of the logical block size {lbs}")]
    EraseUnit { eu: u64, lbs: u32 },
}

/// How a disk's zones must be written, as sysfs `queue/zoned` says
/// (block/blk-sysfs.c `queue_zoned_show`): `none` for a regular disk,
/// `host-aware` (the drive accepts random writes, sequential within a zone
/// is better) and `host-managed` (sequential writes only in its
/// sequential-write-required zones: SMR drives of ZBC/ZAC device type
/// 14h, NVMe ZNS namespaces, null_blk with `zoned=1`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZoneModel {
    #[default]
    None,
    HostAware,
    HostManaged,
}

crate::spelled_as_serde!(ZoneModel);

impl ZoneModel {
    /// The model sysfs names (`queue/zoned`); None for any other text.
    pub fn from_sysfs(s: &str) -> Option<ZoneModel> {
        match s {
            "none" => Some(ZoneModel::None),
            "host-aware" => Some(ZoneModel::HostAware),
            "host-managed" => Some(ZoneModel::HostManaged),
            _ => None,
        }
    }
}

/// A disk's zones: the model, the zone size (`queue/chunk_sectors`), the
/// number of zones (`queue/nr_zones`) and how many of them are
/// conventional (random writes allowed), counted with BLKREPORTZONE.
/// A regular disk has model `none` and zeros. Read back, a key an older
/// document lacks takes its default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Zones {
    pub model: ZoneModel,
    pub zone_size_bytes: u64,
    pub zones: u64,
    /// None when not read (no device node opened, or the report failed:
    /// `conventional_zones_error` says why).
    pub conventional_zones: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conventional_zones_error: Option<String>,
}

impl Zones {
    /// True when the kernel reports zones at all.
    pub fn is_zoned(&self) -> bool {
        self.model != ZoneModel::None
    }

    /// True when some zones take only sequential writes: every
    /// host-managed disk (its sequential zones are "sequential write
    /// required"); a host-aware disk's are "sequential write preferred".
    pub fn has_sequential_write_required(&self) -> bool {
        self.model == ZoneModel::HostManaged
    }
}
