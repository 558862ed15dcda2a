//! The LVM2 physical-volume label, its pv_header, the metadata-area header
//! and the committed metadata text (a ring buffer), all CRC-checked.
//! Layout: LVM2's lib/label/label.h (`label_header`) and
//! lib/format_text/layout.h (`pv_header`, `mda_header`, `raw_locn`).

use super::text;
use super::vg::{self, VolumeGroup};
use crate::bytes::ParseError;
use crate::bytes::{le_u32, le_u64, read_bytes, ReadAt};

const LAYER: &str = "LVM2 label";
const MDA_LAYER: &str = "LVM2 metadata area";
const MDA_MAGIC: &[u8; 16] = b" LVM2 x[5A%r0N*>";
/// The size of the mda_header; the ring buffer wraps to just after it.
const MDA_HEADER_SIZE: u64 = 512;
/// LVM's CRC-32 starts from this value and has no final xor.
const INITIAL_CRC: u32 = 0xf597_a6cf;
/// raw_locn flag: this copy is to be ignored.
const RAW_LOCN_IGNORED: u32 = 1;

/// LVM2's calc_crc (lib/misc/crc.c) in the `crc` crate's terms: the
/// reflected CRC-32 polynomial started from [`INITIAL_CRC`] with no final
/// xor. A reflected algorithm's `init` is given bit-reversed.
const LVM_CRC: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::Algorithm {
    width: 32,
    poly: 0x04c1_1db7,
    init: INITIAL_CRC.reverse_bits(),
    refin: true,
    refout: true,
    xorout: 0,
    check: 0x4991_cf02,
    residue: 0,
});

/// LVM's checksum: the reflected CRC-32 with another start and no final xor.
pub fn lvm_crc(data: &[u8]) -> u32 {
    lvm_crc_continue(INITIAL_CRC, data)
}

fn lvm_crc_continue(state: u32, data: &[u8]) -> u32 {
    let mut d = LVM_CRC.digest_with_initial(state.reverse_bits());
    d.update(data);
    d.finalize()
}

/// What the label sector and pv_header say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PvLabel {
    /// Byte offset of the label sector in the PV.
    pub label_offset: u64,
    /// The PV UUID without dashes (32 characters).
    pub uuid: String,
    pub device_size: u64,
    /// (offset, size) in bytes from the PV start; size 0 = to the end.
    pub data_areas: Vec<(u64, u64)>,
    pub metadata_areas: Vec<(u64, u64)>,
}

/// Find and check the label in the first four sectors; `Ok(None)` when
/// there is none.
pub fn read_label(src: &(impl ReadAt + ?Sized)) -> Result<Option<PvLabel>, ParseError> {
    for sector in 0..4u64 {
        let at = sector * 512;
        if at + 512 > src.len() {
            break;
        }
        let b = read_bytes(src, LAYER, at, 512)?;
        if &b[0..8] != b"LABELONE" || &b[24..32] != b"LVM2 001" {
            continue;
        }
        let stored = le_u32(&b, 16);
        let computed = lvm_crc(&b[20..512]);
        if stored != computed {
            return Err(ParseError::new(
                LAYER,
                at + 16,
                format!(
                    "label checksum {stored:#010x} does not match the computed {computed:#010x}"
                ),
            ));
        }
        let hdr = le_u32(&b, 20) as usize;
        // pv_header: uuid[32], device_size u64, then the area lists.
        if hdr < 32 || hdr + 40 > 512 {
            return Err(ParseError::new(
                LAYER,
                at + 20,
                format!("pv_header offset {hdr} is outside the label sector"),
            ));
        }
        let uuid = String::from_utf8_lossy(&b[hdr..hdr + 32]).into_owned();
        let device_size = le_u64(&b, hdr + 32);
        let mut pos = hdr + 40;
        let mut lists = [Vec::new(), Vec::new()];
        for list in &mut lists {
            loop {
                if pos + 16 > 512 {
                    return Err(ParseError::new(
                        LAYER,
                        at + pos as u64,
                        "area list runs past the label sector without its terminating entry",
                    ));
                }
                let (off, size) = (le_u64(&b, pos), le_u64(&b, pos + 8));
                pos += 16;
                if off == 0 {
                    break;
                }
                list.push((off, size));
            }
        }
        let [data_areas, metadata_areas] = lists;
        return Ok(Some(PvLabel {
            label_offset: at,
            uuid,
            device_size,
            data_areas,
            metadata_areas,
        }));
    }
    Ok(None)
}

/// The committed metadata text of the first metadata area; `Ok(None)` when
/// the PV keeps none (no area, `--metadataignore`, or a PV in no VG yet).
pub fn read_metadata(
    src: &(impl ReadAt + ?Sized),
    label: &PvLabel,
) -> Result<Option<Vec<u8>>, ParseError> {
    let Some(&(mda, _)) = label.metadata_areas.first() else {
        return Ok(None);
    };
    let h = read_bytes(src, MDA_LAYER, mda, MDA_HEADER_SIZE)?;
    if &h[4..20] != MDA_MAGIC {
        return Err(ParseError::new(MDA_LAYER, mda + 4, "no mda_header magic"));
    }
    let stored = le_u32(&h, 0);
    let computed = lvm_crc(&h[4..512]);
    if stored != computed {
        return Err(ParseError::new(
            MDA_LAYER,
            mda,
            format!(
                "mda_header checksum {stored:#010x} does not match the computed {computed:#010x}"
            ),
        ));
    }
    let start = le_u64(&h, 24);
    let size = le_u64(&h, 32);
    if start != mda || size <= MDA_HEADER_SIZE {
        return Err(ParseError::new(
            MDA_LAYER,
            mda + 24,
            format!("mda_header says the area starts at {start} with {size} bytes; the label says {mda}"),
        ));
    }
    let (offset, len, crc, flags) = (
        le_u64(&h, 40),
        le_u64(&h, 48),
        le_u32(&h, 56),
        le_u32(&h, 60),
    );
    if offset == 0 || len == 0 || flags & RAW_LOCN_IGNORED != 0 {
        return Ok(None);
    }
    if offset < MDA_HEADER_SIZE || offset >= size || len > size - MDA_HEADER_SIZE {
        return Err(ParseError::new(
            MDA_LAYER,
            mda + 40,
            format!("metadata at {offset}+{len} does not fit the {size}-byte area"),
        ));
    }
    // The ring buffer: up to the end of the area, then on from just after the header.
    let first = len.min(size - offset);
    let mut text = read_bytes(src, MDA_LAYER, mda + offset, first)?;
    if first < len {
        text.extend(read_bytes(
            src,
            MDA_LAYER,
            mda + MDA_HEADER_SIZE,
            len - first,
        )?);
    }
    let computed = lvm_crc(&text);
    if computed != crc {
        return Err(ParseError::new(
            MDA_LAYER,
            mda + offset,
            format!(
                "metadata text checksum {crc:#010x} does not match the computed {computed:#010x}"
            ),
        ));
    }
    Ok(Some(text))
}

/// A PV found on a device, with the VG its metadata describes.
#[derive(Clone, Debug)]
pub struct PvFound {
    pub label: PvLabel,
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
    let Some(label) = read_label(src)? else {
        return Ok(None);
    };
    let at = label.metadata_areas.first().map_or(0, |m| m.0);
    let vg = read_metadata(src, &label).and_then(|text| {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_lvm_known_value() {
        // calc_crc(INITIAL_CRC, "") is the initial value itself.
        assert_eq!(lvm_crc(b""), INITIAL_CRC);
        // Splitting the input does not change the result.
        let data = b"vg0 { seqno = 1 }";
        let split = lvm_crc_continue(lvm_crc(&data[..5]), &data[5..]);
        assert_eq!(split, lvm_crc(data));
    }

    /// calc_crc bit by bit, as lib/misc/crc.c's table is built.
    fn bitwise(data: &[u8]) -> u32 {
        let mut crc = INITIAL_CRC;
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = (crc >> 1) ^ if crc & 1 == 1 { 0xedb8_8320 } else { 0 };
            }
        }
        crc
    }

    #[test]
    fn the_crc_crate_computes_lvms_crc() {
        let mut rng = fastrand::Rng::with_seed(5);
        for len in [0, 1, 9, 20, 492, 4096] {
            let data: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            assert_eq!(lvm_crc(&data), bitwise(&data), "{len} bytes");
        }
        assert_eq!(lvm_crc(b"123456789"), LVM_CRC.algorithm.check);
    }
}
