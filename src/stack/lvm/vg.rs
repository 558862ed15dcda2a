//! The volume group described by the metadata text: extent size, PVs with
//! their pe_start, LVs with their segments (linear and striped).

use super::text::{Section, Value};
use serde::{Deserialize, Serialize};

/// One PV as the VG metadata lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PvEntry {
    /// The metadata's own key ("pv0").
    pub key: String,
    /// UUID without dashes, comparable with the label's.
    pub uuid: String,
    /// The device path LVM last saw it on (a hint only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_hint: Option<String>,
    pub pe_start_bytes: u64,
    pub pe_count: u64,
}

/// One leg of a segment: which PV, from which extent.
#[derive(Clone, Default, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Leg {
    pub pv: String,
    pub start_extent: u64,
}

#[derive(Clone, Default, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Segment {
    pub start_extent: u64,
    pub extent_count: u64,
    /// "striped" (linear is striped with one leg), or another LVM type.
    #[serde(rename = "type")]
    pub kind: String,
    /// Bytes per stripe chunk when there is more than one leg.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stripe_size_bytes: Option<u64>,
    pub legs: Vec<Leg>,
    /// A thin pool's settings (`type = "thin-pool"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thin_pool: Option<ThinPoolSeg>,
    /// A thin LV's pool and device (`type = "thin"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thin: Option<ThinSeg>,
}

/// The keys lvm2 writes for a thin pool: lvmteam/lvm2 lib/thin/thin.c,
/// `_thin_pool_text_export` / `_thin_pool_text_import`.
#[derive(Clone, Default, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThinPoolSeg {
    /// `chunk_size` (512-byte sectors in the text; `data_block_size` in
    /// dm-thin's superblock): the unit the pool provisions.
    pub chunk_bytes: u64,
    /// `pool`: the hidden LV holding the data (`<pool>_tdata`).
    pub data_lv: String,
    /// `metadata`: the hidden LV holding dm-thin's metadata (`<pool>_tmeta`).
    pub metadata_lv: String,
    pub transaction_id: u64,
    /// `zero_new_blocks`: written only when set.
    pub zero_new_blocks: bool,
    /// `discards`: passdown, nopassdown or ignore (absent: ignore).
    pub discards: String,
}

/// A thin LV: lib/thin/thin.c `_thin_text_import`.
#[derive(Clone, Default, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ThinSeg {
    /// `thin_pool`: the pool LV's name.
    pub pool: String,
    /// `device_id`: the key of this LV in the pool's metadata trees.
    pub device_id: u64,
    pub transaction_id: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogicalVolume {
    pub name: String,
    pub segments: Vec<Segment>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VolumeGroup {
    pub name: String,
    pub id: String,
    pub seqno: u64,
    pub extent_size_bytes: u64,
    pub pvs: Vec<PvEntry>,
    pub lvs: Vec<LogicalVolume>,
}

/// What is wrong with a VG's metadata text; `at` is the section path
/// (`vg0/lv0/segment1`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VgError {
    #[error("no volume group section in the metadata")]
    NoSection,
    #[error("{at}: no integer {key}")]
    Missing { at: String, key: &'static str },
    #[error("{at}: {key} = {value} is out of range")]
    OutOfRange {
        at: String,
        key: &'static str,
        value: i64,
    },
    #[error("{at}: {key} = {value} is negative")]
    Negative {
        at: String,
        key: &'static str,
        value: i64,
    },
    #[error("{at}: {key} is 0")]
    Zero { at: String, key: &'static str },
    #[error("{at}: stripe_count {count} is not plausible")]
    StripeCount { at: String, count: u64 },
    #[error("{at}: no stripes list")]
    NoStripes { at: String },
    #[error("{at}: stripe_count is {count} but the stripes list has {items} items")]
    StripeList {
        at: String,
        count: u64,
        items: usize,
    },
    #[error("{at}: stripes must be \"pvN\", extent pairs")]
    StripePair { at: String },
    #[error("{at}: no string {key}")]
    NoName { at: String, key: &'static str },
    #[error("{at}: chunk_size {bytes} is outside 64 KiB..1 GiB or not a multiple of 64 KiB")]
    ThinChunk { at: String, bytes: u64 },
}

fn int(s: &Section, key: &'static str, at: &str) -> Result<i64, VgError> {
    s.int(key).ok_or_else(|| VgError::Missing {
        at: at.to_string(),
        key,
    })
}

/// Sectors of 512 bytes in the text, to bytes, refusing overflow.
fn sectors(s: &Section, key: &'static str, at: &str) -> Result<u64, VgError> {
    let value = int(s, key, at)?;
    u64::try_from(value)
        .ok()
        .and_then(|v| v.checked_mul(512))
        .ok_or_else(|| VgError::OutOfRange {
            at: at.to_string(),
            key,
            value,
        })
}

fn count(s: &Section, key: &'static str, at: &str) -> Result<u64, VgError> {
    let value = int(s, key, at)?;
    u64::try_from(value).map_err(|_| VgError::Negative {
        at: at.to_string(),
        key,
        value,
    })
}

/// Refuse counts no real VG has, before allocating for them.
const MAX_ITEMS: u64 = 1 << 16;

/// Build the VG from the parsed text (the first section holding
/// `physical_volumes`).
pub fn volume_group(top: &Section) -> Result<VolumeGroup, VgError> {
    let (name, vg) = top
        .sections()
        .find(|(_, s)| s.section("physical_volumes").is_some())
        .ok_or(VgError::NoSection)?;
    let extent_size_bytes = sectors(vg, "extent_size", name)?;
    if extent_size_bytes == 0 {
        return Err(VgError::Zero {
            at: name.to_string(),
            key: "extent_size",
        });
    }
    let mut pvs = Vec::new();
    for (key, pv) in vg
        .section("physical_volumes")
        .into_iter()
        .flat_map(Section::sections)
    {
        let at = format!("{name}/{key}");
        pvs.push(PvEntry {
            key: key.to_string(),
            uuid: pv.str("id").unwrap_or_default().replace('-', ""),
            device_hint: pv.str("device").map(str::to_string),
            pe_start_bytes: sectors(pv, "pe_start", &at)?,
            pe_count: count(pv, "pe_count", &at)?,
        });
    }
    let mut lvs = Vec::new();
    for (lv_name, lv) in vg
        .section("logical_volumes")
        .into_iter()
        .flat_map(Section::sections)
    {
        let mut segments = Vec::new();
        for (seg_name, seg) in lv.sections() {
            let at = format!("{name}/{lv_name}/{seg_name}");
            let kind = seg.str("type").unwrap_or("striped").to_string();
            let start_extent = count(seg, "start_extent", &at)?;
            let extent_count = count(seg, "extent_count", &at)?;
            let mut legs = Vec::new();
            let mut stripe_size_bytes = None;
            if kind == "striped" {
                let n = count(seg, "stripe_count", &at)?;
                if n == 0 || n > MAX_ITEMS {
                    return Err(VgError::StripeCount { at, count: n });
                }
                let list = seg
                    .list("stripes")
                    .ok_or_else(|| VgError::NoStripes { at: at.clone() })?;
                if list.len() as u64 != 2 * n {
                    return Err(VgError::StripeList {
                        at,
                        count: n,
                        items: list.len(),
                    });
                }
                for pair in list.chunks(2) {
                    match pair {
                        [Value::Str(pv), Value::Int(e)] if *e >= 0 => legs.push(Leg {
                            pv: pv.clone(),
                            start_extent: *e as u64,
                        }),
                        _ => return Err(VgError::StripePair { at }),
                    }
                }
                if n > 1 {
                    let ss = sectors(seg, "stripe_size", &at)?;
                    if ss == 0 {
                        return Err(VgError::Zero {
                            at,
                            key: "stripe_size",
                        });
                    }
                    stripe_size_bytes = Some(ss);
                }
            }
            let thin_pool = (kind == "thin-pool")
                .then(|| thin_pool(seg, &at))
                .transpose()?;
            let thin = (kind == "thin").then(|| thin(seg, &at)).transpose()?;
            segments.push(Segment {
                start_extent,
                extent_count,
                kind,
                stripe_size_bytes,
                legs,
                thin_pool,
                thin,
            });
        }
        segments.sort_by_key(|s| s.start_extent);
        lvs.push(LogicalVolume {
            name: lv_name.to_string(),
            segments,
        });
    }
    Ok(VolumeGroup {
        name: name.to_string(),
        id: vg.str("id").unwrap_or_default().to_string(),
        seqno: count(vg, "seqno", name).unwrap_or(0),
        extent_size_bytes,
        pvs,
        lvs,
    })
}

fn name(s: &Section, key: &'static str, at: &str) -> Result<String, VgError> {
    s.str(key)
        .map(str::to_string)
        .ok_or_else(|| VgError::NoName {
            at: at.to_string(),
            key,
        })
}

/// lvm2 refuses a chunk outside DM_THIN_MIN_DATA_BLOCK_SIZE (64 KiB) ..
/// DM_THIN_MAX_DATA_BLOCK_SIZE (1 GiB) on import (lib/thin/thin.c
/// `_thin_pool_text_import`), and lvmthin(7) asks for a multiple of 64 KiB.
fn thin_pool(seg: &Section, at: &str) -> Result<ThinPoolSeg, VgError> {
    let chunk_bytes = sectors(seg, "chunk_size", at)?;
    if !(64 << 10..=1 << 30).contains(&chunk_bytes) || chunk_bytes % (64 << 10) != 0 {
        return Err(VgError::ThinChunk {
            at: at.to_string(),
            bytes: chunk_bytes,
        });
    }
    Ok(ThinPoolSeg {
        chunk_bytes,
        data_lv: name(seg, "pool", at)?,
        metadata_lv: name(seg, "metadata", at)?,
        transaction_id: count(seg, "transaction_id", at)?,
        zero_new_blocks: seg.int("zero_new_blocks").unwrap_or(0) != 0,
        discards: seg.str("discards").unwrap_or("ignore").to_string(),
    })
}

fn thin(seg: &Section, at: &str) -> Result<ThinSeg, VgError> {
    Ok(ThinSeg {
        pool: name(seg, "thin_pool", at)?,
        device_id: count(seg, "device_id", at)?,
        transaction_id: count(seg, "transaction_id", at)?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::text::parse;
    use super::*;

    #[test]
    fn striped_lv_and_bad_counts() {
        let text = br#"vg0 { id = "A-B" seqno = 3 extent_size = 8192
physical_volumes { pv0 { id = "x-y" pe_start = 2048 pe_count = 10 } pv1 { id = "z" pe_start = 384 pe_count = 10 } }
logical_volumes { lv0 { segment1 { start_extent = 0 extent_count = 4 type = "striped" stripe_count = 2 stripe_size = 16 stripes = ["pv0", 0, "pv1", 2] } } } }"#;
        let vg = volume_group(&parse(text).unwrap()).unwrap();
        assert_eq!(vg.extent_size_bytes, 4 << 20);
        assert_eq!(vg.pvs[0].uuid, "xy");
        assert_eq!(vg.pvs[1].pe_start_bytes, 384 * 512);
        let seg = &vg.lvs[0].segments[0];
        assert_eq!(seg.stripe_size_bytes, Some(8192));
        assert_eq!(
            seg.legs[1],
            Leg {
                pv: "pv1".into(),
                start_extent: 2
            }
        );

        let bad = String::from_utf8_lossy(text).replace("stripe_count = 2", "stripe_count = 3");
        assert!(matches!(
            volume_group(&parse(bad.as_bytes()).unwrap()),
            Err(VgError::StripeList {
                count: 3,
                items: 4,
                ..
            })
        ));
        let huge =
            String::from_utf8_lossy(text).replace("stripe_count = 2", "stripe_count = 99999999999");
        assert!(volume_group(&parse(huge.as_bytes()).unwrap()).is_err());
        let overflow = String::from_utf8_lossy(text)
            .replace("extent_size = 8192", "extent_size = 9223372036854775807");
        assert!(volume_group(&parse(overflow.as_bytes()).unwrap()).is_err());
    }
}
