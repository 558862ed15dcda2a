//! SCSI: the Block Limits VPD page (B0h), the Device Identification VPD
//! page (83h) and READ CAPACITY(16) parameter data, as SBC-3/SPC-4 define
//! them and drivers/scsi/sd.c (`sd_read_block_limits`,
//! `read_capacity_16`) reads them. Every field is big endian.

use crate::bytes::{be_u16, be_u32, be_u64, ParseError};
use serde::{Deserialize, Serialize};

/// What a SCSI device (or a SAT layer, or a USB bridge speaking for the
/// drive behind it) says; each part null when its page or command gave
/// nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScsiSays {
    /// OPTIMAL TRANSFER LENGTH GRANULARITY, logical blocks (VPD B0h).
    pub otlg: Option<u16>,
    /// MAXIMUM TRANSFER LENGTH, logical blocks (VPD B0h; 0: none given).
    pub mtl: Option<u32>,
    /// OPTIMAL TRANSFER LENGTH, logical blocks (VPD B0h; 0: none given).
    pub otl: Option<u32>,
    /// The NAA designator of the logical unit (VPD 83h), `0x` and hex.
    pub wwn: Option<String>,
    /// LOGICAL BLOCK LENGTH IN BYTES (READ CAPACITY(16)).
    pub logical_block_bytes: Option<u32>,
    /// LOGICAL BLOCKS PER PHYSICAL BLOCK EXPONENT (READ CAPACITY(16)).
    pub lbppbe: Option<u8>,
    /// LOWEST ALIGNED LOGICAL BLOCK ADDRESS (READ CAPACITY(16)).
    pub lalba: Option<u16>,
}

impl ScsiSays {
    /// The physical block: 2^LBPPBE logical blocks.
    pub fn physical_block_bytes(&self) -> Option<u64> {
        let lbs = u64::from(self.logical_block_bytes?);
        lbs.checked_shl(u32::from(self.lbppbe?))
    }

    /// The alignment offset as the kernel computes it from LALBA.
    pub fn alignment_offset_bytes(&self) -> Option<u64> {
        Some(u64::from(self.lalba?) * u64::from(self.logical_block_bytes?))
    }
}

/// The Block Limits fields sd.c reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockLimits {
    pub otlg: u16,
    pub mtl: u32,
    pub otl: u32,
}

/// The VPD page header: the page code at byte 1 and the page's bytes,
/// bounded by its PAGE LENGTH (bytes 2-3) and by what was read.
fn vpd<'a>(b: &'a [u8], layer: &'static str, code: u8) -> Result<&'a [u8], ParseError> {
    if b.len() < 4 {
        return Err(ParseError::new(
            layer,
            b.len() as u64,
            format!("needs a 4-byte header, got {} bytes", b.len()),
        ));
    }
    if b[1] != code {
        return Err(ParseError::new(
            layer,
            1,
            format!("page code {:#04x}, not {code:#04x}", b[1]),
        ));
    }
    let end = (4 + usize::from(be_u16(b, 2))).min(b.len());
    Ok(&b[..end])
}

/// The Block Limits VPD page (B0h): OTLG (bytes 6-7), MTL (8-11), OTL (12-15).
pub fn block_limits(b: &[u8]) -> Result<BlockLimits, ParseError> {
    const LAYER: &str = "SCSI Block Limits VPD page";
    let page = vpd(b, LAYER, 0xb0)?;
    if page.len() < 16 {
        return Err(ParseError::new(
            LAYER,
            page.len() as u64,
            format!(
                "page ends at byte {}, before the transfer lengths (16)",
                page.len()
            ),
        ));
    }
    Ok(BlockLimits {
        otlg: be_u16(page, 6),
        mtl: be_u32(page, 8),
        otl: be_u32(page, 12),
    })
}

/// NAA designator type (SPC-4, table "DESIGNATOR TYPE field").
const DESIGNATOR_NAA: u8 = 3;

/// The logical unit's NAA designator from the Device Identification VPD
/// page (83h), as `0x` and lower-case hex (lsblk's WWN spelling); None
/// when it lists none. Of several, the highest NAA type wins (6, IEEE
/// Registered Extended, over 5, 3 and 2). Each descriptor: byte 1 bits 5:4
/// the association (0: the logical unit), bits 3:0 the type, byte 3 the
/// length, then the designator.
pub fn naa_wwn(b: &[u8]) -> Result<Option<String>, ParseError> {
    const LAYER: &str = "SCSI Device Identification VPD page";
    let page = vpd(b, LAYER, 0x83)?;
    let mut at = 4;
    let mut best: Option<&[u8]> = None;
    while at + 4 <= page.len() {
        let len = usize::from(page[at + 3]);
        let Some(designator) = page.get(at + 4..at + 4 + len) else {
            return Err(ParseError::new(
                LAYER,
                at as u64,
                format!("designator of {len} bytes runs past the page's end"),
            ));
        };
        let association = (page[at + 1] >> 4) & 3;
        let kind = page[at + 1] & 0xf;
        if association == 0 && kind == DESIGNATOR_NAA && matches!(len, 8 | 16) {
            let naa = designator[0] >> 4;
            if best.is_none_or(|b| b[0] >> 4 < naa) {
                best = Some(designator);
            }
        }
        at += 4 + len;
    }
    Ok(best.map(|d| {
        let hex: String = d.iter().map(|x| format!("{x:02x}")).collect();
        format!("0x{hex}")
    }))
}

/// The READ CAPACITY(16) fields sd.c reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity {
    /// RETURNED LOGICAL BLOCK ADDRESS: the last LBA.
    pub last_lba: u64,
    pub logical_block_bytes: u32,
    pub lbppbe: u8,
    pub lalba: u16,
}

/// READ CAPACITY(16) parameter data: the last LBA (bytes 0-7), LOGICAL
/// BLOCK LENGTH IN BYTES (8-11), LBPPBE (byte 13, bits 3:0), LALBA
/// (bytes 14-15, bits 13:0).
pub fn read_capacity16(b: &[u8]) -> Result<Capacity, ParseError> {
    const LAYER: &str = "SCSI READ CAPACITY(16) data";
    if b.len() < 16 {
        return Err(ParseError::new(
            LAYER,
            b.len() as u64,
            format!("needs 16 bytes, got {}", b.len()),
        ));
    }
    let logical_block_bytes = be_u32(b, 8);
    if logical_block_bytes == 0 {
        return Err(ParseError::new(LAYER, 8, "logical block length 0"));
    }
    Ok(Capacity {
        last_lba: be_u64(b, 0),
        logical_block_bytes,
        lbppbe: b[13] & 0xf,
        lalba: be_u16(b, 14) & 0x3fff,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_limits_fields() {
        // Synthetic: page B0h, length 3Ch, OTLG 8, MTL 0xFFFF, OTL 0xFFFF.
        let mut b = vec![0u8; 64];
        b[1] = 0xb0;
        b[3] = 0x3c;
        b[6..8].copy_from_slice(&8u16.to_be_bytes());
        b[8..12].copy_from_slice(&0xffffu32.to_be_bytes());
        b[12..16].copy_from_slice(&0xffffu32.to_be_bytes());
        let l = block_limits(&b).unwrap();
        assert_eq!((l.otlg, l.mtl, l.otl), (8, 0xffff, 0xffff));
        b[3] = 8;
        assert_eq!(block_limits(&b).unwrap_err().offset, 12, "page too short");
        b[1] = 0x83;
        assert_eq!(block_limits(&b).unwrap_err().offset, 1);
        assert!(block_limits(&[0, 0xb0]).is_err());
    }

    #[test]
    fn naa_designators() {
        // Synthetic page: a T10 vendor ID (type 1), an NAA 5 of the
        // target port (association 1), an NAA 5 and an NAA 6 of the unit.
        let mut b = vec![0, 0x83, 0, 0];
        b.extend([2, 0x01, 0, 4, b'A', b'T', b'A', b' ']);
        b.extend([1, 0x13, 0, 8, 0x51, 1, 2, 3, 4, 5, 6, 7]);
        b.extend([1, 0x03, 0, 8, 0x50, 0, 0xc5, 0, 0xa1, 0xb2, 0xc3, 0xd4]);
        let len = (b.len() - 4) as u16;
        b[2..4].copy_from_slice(&len.to_be_bytes());
        assert_eq!(naa_wwn(&b).unwrap().as_deref(), Some("0x5000c500a1b2c3d4"));
        let mut six = b.clone();
        six.extend([1, 0x03, 0, 16, 0x60]);
        six.extend([0x11; 15]);
        let len = (six.len() - 4) as u16;
        six[2..4].copy_from_slice(&len.to_be_bytes());
        assert!(naa_wwn(&six).unwrap().unwrap().starts_with("0x6011"));
        // A descriptor whose length runs past the page.
        let mut bad = b.clone();
        bad[7] = 200;
        assert_eq!(naa_wwn(&bad).unwrap_err().offset, 4);
        assert_eq!(naa_wwn(&[0, 0x83, 0, 0]).unwrap(), None);
    }

    #[test]
    fn read_capacity_fields() {
        // Synthetic: 512-byte blocks, 8 per physical block, LALBA 7.
        let mut b = [0u8; 32];
        b[0..8].copy_from_slice(&0x1d1c_0beafu64.to_be_bytes());
        b[8..12].copy_from_slice(&512u32.to_be_bytes());
        b[13] = 0x03;
        b[14..16].copy_from_slice(&(0xc000u16 | 7).to_be_bytes());
        let c = read_capacity16(&b).unwrap();
        assert_eq!((c.logical_block_bytes, c.lbppbe, c.lalba), (512, 3, 7));
        let s = ScsiSays {
            logical_block_bytes: Some(512),
            lbppbe: Some(3),
            lalba: Some(7),
            ..Default::default()
        };
        assert_eq!(s.physical_block_bytes(), Some(4096));
        assert_eq!(s.alignment_offset_bytes(), Some(3584));
        assert_eq!(read_capacity16(&b[..12]).unwrap_err().offset, 12);
        assert_eq!(read_capacity16(&[0u8; 32]).unwrap_err().offset, 8);
    }
}
