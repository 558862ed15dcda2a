//! LVM2 read from raw bytes: the PV label, the committed metadata and the
//! volume group it describes. No kernel, no lvm2 tools.

mod pv;
mod text;
mod thin;
mod vg;

use super::format::{Found, LayerFormat, Member};
use super::region::Region;
use super::Detail;
use super::{LayerKind, PvInfo};
use crate::bytes::ReadAt;
pub use pv::{lvm_crc, read, read_label, read_metadata, PvFound};
use serde::{Deserialize, Serialize};
pub use text::parse as parse_lvm_text;
pub use thin::{
    block_checksum as thin_block_checksum, device_map as thin_device_map,
    superblock as thin_superblock, thin_map, DeviceMap as ThinDeviceMap, ThinSuperblock,
    NODE_XOR as THIN_NODE_XOR, SUPERBLOCK_XOR as THIN_SUPERBLOCK_XOR,
};
pub use vg::{volume_group, Leg, LogicalVolume, Segment, ThinPoolSeg, ThinSeg, VolumeGroup};

/// LVM2 physical volumes. The label may sit in any of the first four
/// sectors, so the signature scan looks for it itself.
pub static FORMAT: LayerFormat = LayerFormat {
    magics: &[],
    probe,
    peeks: None,
};

fn probe(r: &Region, src: &dyn ReadAt) -> Option<Found> {
    match read(src) {
        Ok(Some(pv)) => {
            let mut l = r.layer(LayerKind::LvmPv, format!("PV {}", pv.label.uuid));
            l.data_offset_bytes = Some(pv.pe_start);
            l.detail = Some(Detail::Pv(PvInfo {
                uuid: pv.label.uuid.clone(),
                vg: pv.vg().map(|v| v.name.clone()),
                pe_start_bytes: pv.pe_start,
                extent_size_bytes: pv.vg().map(|v| v.extent_size_bytes),
                device_size_bytes: pv.label.device_size,
            }));
            if let Err(e) = &pv.vg {
                l.findings.push(r.invalid(e));
            }
            Some(Found {
                member: Some(Member::Pv(pv)),
                ..Found::from(l)
            })
        }
        Ok(None) => None,
        Err(e) => r.damaged(LayerKind::LvmPv, "PV label", e).map(Found::from),
    }
}

/// A volume group as assembled from its PVs.
#[derive(Clone, Default, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct VgInfo {
    pub id: String,
    pub seqno: u64,
    pub extent_size_bytes: u64,
    /// Every PV the metadata lists, with where it was found.
    pub pvs: Vec<VgPv>,
}

#[derive(Clone, Default, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct VgPv {
    pub key: String,
    pub uuid: String,
    /// The target or device holding it; None when it is not among the targets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found_on: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_hint: Option<String>,
}

/// One LV segment's geometry.
#[derive(Clone, Default, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct LvInfo {
    pub segments: Vec<Segment>,
    /// A thin pool's or thin LV's chunk: the unit the pool provisions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_chunk_bytes: Option<u64>,
}

/// Where one leg of an LV segment lies.
#[derive(Clone, Default, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct LegInfo {
    pub segment: usize,
    /// 0-based stripe number within the segment.
    pub stripe: usize,
    pub pv: String,
    pub start_extent: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stripe_size_bytes: Option<u64>,
}
