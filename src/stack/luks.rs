//! LUKS1 and LUKS2 headers: where the encrypted payload starts and, for
//! LUKS2, its encryption sector size. Layout: cryptsetup's lib/luks1/luks.h
//! (`luks_phdr`), lib/luks2/luks2.h (`luks2_hdr_disk`) and
//! docs/on-disk-format-luks2.pdf (the JSON `segments` and `sector_size`).

use super::format::{Found, LayerFormat, Magic};
use super::Detail;
use super::{limits, LayerKind};
use crate::bytes::ParseError;
use crate::bytes::{be_u16, be_u32, be_u64, read_bytes, ReadAt};
use serde::{Deserialize, Serialize};

const LAYER: &str = "LUKS header";
const MAGIC: &[u8; 6] = b"LUKS\xba\xbe";

#[derive(Clone, Default, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Luks {
    pub version: u16,
    pub uuid: String,
    /// Where the encrypted data starts, from the LUKS device start.
    pub payload_offset_bytes: u64,
    /// The encryption sector size (LUKS1: always 512).
    pub sector_size: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cipher: Option<String>,
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// LUKS1 and LUKS2 headers.
pub static FORMAT: LayerFormat = LayerFormat {
    magics: &[Magic {
        offset: 0,
        bytes: b"LUKS\xba\xbe",
        what: "LUKS encryption header",
    }],
    probe: |r, src| match read(src) {
        Ok(Some(h)) => {
            let mut l = r.layer(LayerKind::Luks, format!("LUKS{} {}", h.version, h.uuid));
            l.data_offset_bytes = Some(h.payload_offset_bytes);
            let payload = r.offset + h.payload_offset_bytes;
            l.exposes = Some(limits::crypt(&r.below, payload, h.sector_size));
            l.detail = Some(Detail::Luks(h));
            Some(Found::from(l))
        }
        Ok(None) => None,
        Err(e) => r
            .damaged(LayerKind::Luks, "LUKS header", e)
            .map(Found::from),
    },
    peeks: None,
};

/// The LUKS header on `src`, if there is one.
pub fn read(src: &(impl ReadAt + ?Sized)) -> Result<Option<Luks>, ParseError> {
    if src.len() < 592 {
        return Ok(None);
    }
    let b = read_bytes(src, LAYER, 0, 592)?;
    if &b[0..6] != MAGIC {
        return Ok(None);
    }
    let version = be_u16(&b, 6);
    let uuid = cstr(&b[168..208]);
    match version {
        1 => {
            let sectors = be_u32(&b, 104);
            let payload = u64::from(sectors) * 512;
            if payload > src.len() {
                return Err(ParseError::new(
                    LAYER,
                    104,
                    format!("LUKS1 payload offset {sectors} sectors is beyond the device end"),
                ));
            }
            Ok(Some(Luks {
                version,
                uuid,
                payload_offset_bytes: payload,
                sector_size: 512,
                cipher: Some(format!("{}-{}", cstr(&b[8..40]), cstr(&b[40..72]))),
            }))
        }
        2 => luks2(src, &b, uuid).map(Some),
        v => Err(ParseError::new(
            LAYER,
            6,
            format!("unknown LUKS version {v}"),
        )),
    }
}

fn luks2(src: &(impl ReadAt + ?Sized), b: &[u8], uuid: String) -> Result<Luks, ParseError> {
    let hdr_size = be_u64(b, 8);
    // The binary header is 4 KiB; the JSON area fills the rest (at most 4 MiB).
    if !(4096 + 1..=4 << 20).contains(&hdr_size) {
        return Err(ParseError::new(
            LAYER,
            8,
            format!("LUKS2 hdr_size {hdr_size} is not plausible"),
        ));
    }
    let json = read_bytes(src, "LUKS2 JSON area", 4096, hdr_size - 4096)?;
    let end = json.iter().position(|&c| c == 0).unwrap_or(json.len());
    let doc: serde_json::Value = serde_json::from_slice(&json[..end])
        .map_err(|e| ParseError::new("LUKS2 JSON area", 4096, format!("not valid JSON: {e}")))?;
    let seg = doc
        .get("segments")
        .and_then(|s| s.as_object())
        .and_then(|s| {
            // The data segment with the lowest key ("0" normally).
            s.iter()
                .filter_map(|(k, v)| Some((k.parse::<u64>().ok()?, v)))
                .min_by_key(|(k, _)| *k)
        })
        .map(|(_, v)| v)
        .ok_or_else(|| ParseError::new("LUKS2 JSON area", 4096, "no data segment"))?;
    let offset = seg
        .get("offset")
        .and_then(|o| o.as_str())
        .and_then(|o| o.parse::<u64>().ok())
        .ok_or_else(|| {
            ParseError::new(
                "LUKS2 JSON area",
                4096,
                "segment offset is not a byte count string",
            )
        })?;
    let sector_size = seg
        .get("sector_size")
        .and_then(|s| s.as_u64())
        .and_then(|s| u32::try_from(s).ok())
        .filter(|s| s.is_power_of_two() && (512..=4096).contains(s))
        .ok_or_else(|| {
            ParseError::new(
                "LUKS2 JSON area",
                4096,
                "segment sector_size is not 512..4096",
            )
        })?;
    if offset > src.len() {
        return Err(ParseError::new(
            "LUKS2 JSON area",
            4096,
            format!("segment offset {offset} is beyond the device end"),
        ));
    }
    Ok(Luks {
        version: 2,
        uuid,
        payload_offset_bytes: offset,
        sector_size,
        cipher: seg
            .get("encryption")
            .and_then(|e| e.as_str())
            .map(str::to_string),
    })
}
