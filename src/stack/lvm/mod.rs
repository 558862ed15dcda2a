//! LVM2 read from raw bytes: the PV label, the committed metadata and the
//! volume group it describes. No kernel, no lvm2 tools.

pub mod pv;
pub mod text;
pub mod vg;

use super::assemble::{Pending, PvHandle};
use super::registry::LayerFormat;
use super::walk::Region;
use super::Detail;
use super::{Layer, LayerKind, PvInfo};
use crate::bytes::ParseError;
use crate::bytes::ReadAt;
use serde::{Deserialize, Serialize};
pub use vg::{Leg, LogicalVolume, PvEntry, Segment, VolumeGroup};

/// LVM2 physical volumes. The label may sit in any of the first four
/// sectors, so the signature scan looks for it itself.
pub static FORMAT: LayerFormat = LayerFormat {
    name: "lvm2",
    description: "LVM2 physical volume",
    magics: &[],
    probe,
};

fn probe(r: &Region, src: &dyn ReadAt, pending: &mut Pending) -> Option<Layer> {
    match read(src) {
        Ok(Some(pv)) => {
            let mut l = r.layer(LayerKind::LvmPv, format!("PV {}", pv.label.uuid));
            l.data_offset_bytes = Some(pv.pe_start);
            l.detail = Some(Detail::Pv(PvInfo {
                uuid: pv.label.uuid.clone(),
                vg: pv.vg().map(|v| v.name.clone()),
                pe_start_bytes: pv.pe_start,
                device_size_bytes: pv.label.device_size,
            }));
            if let Err(e) = &pv.vg {
                l.findings.push(r.invalid(e));
            }
            pending.pvs.push(PvHandle {
                found: pv,
                region: r.clone(),
            });
            Some(l)
        }
        Ok(None) => None,
        Err(e) => r.damaged(LayerKind::LvmPv, "PV label", e),
    }
}

/// A PV found on a device, with the VG its metadata describes.
#[derive(Clone, Debug)]
pub struct PvFound {
    pub label: pv::PvLabel,
    /// Where the first extent starts, from the PV start (the label's data area).
    pub pe_start: u64,
    /// The VG (None: this PV keeps no metadata, or belongs to no VG yet),
    /// or why its metadata could not be read.
    pub vg: Result<Option<VolumeGroup>, ParseError>,
}

impl PvFound {
    /// The VG this PV's metadata describes, when it has readable metadata.
    pub fn vg(&self) -> Option<&VolumeGroup> {
        self.vg.as_ref().ok().and_then(Option::as_ref)
    }
}

/// The PV on `src`, if there is one. A damaged label is an error; damaged
/// metadata behind a good label is reported in `vg`.
pub fn read(src: &(impl ReadAt + ?Sized)) -> Result<Option<PvFound>, ParseError> {
    let Some(label) = pv::read_label(src)? else {
        return Ok(None);
    };
    let at = label.metadata_areas.first().map_or(0, |m| m.0);
    let vg = pv::read_metadata(src, &label).and_then(|text| {
        let Some(text) = text else { return Ok(None) };
        let top = text::parse(&text).map_err(|e| {
            ParseError::new(
                "LVM2 metadata text",
                at,
                format!("byte {} of the text: {}", e.offset, e.message),
            )
        })?;
        vg::volume_group(&top)
            .map(Some)
            .map_err(|e| ParseError::new("LVM2 metadata text", at, e.to_string()))
    });
    let pe_start = match (&vg, label.data_areas.first()) {
        (_, Some(&(off, _))) => off,
        (Ok(Some(vg)), None) => vg
            .pvs
            .iter()
            .find(|p| p.uuid == label.uuid)
            .map_or(0, |p| p.pe_start_bytes),
        _ => 0,
    };
    Ok(Some(PvFound {
        label,
        pe_start,
        vg,
    }))
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
