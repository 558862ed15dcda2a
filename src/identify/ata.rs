//! ATA IDENTIFY DEVICE data (256 little-endian words): the logical and
//! physical sector sizes and the alignment of logical sector 0, read as
//! ACS-3 defines them and as libata reads them (include/linux/ata.h
//! `ata_id_log2_per_physical_sector`, `ata_id_logical_sector_size`,
//! `ata_id_logical_sector_offset`), and the model and firmware strings.

use crate::bytes::{le_u16, ParseError};
use serde::{Deserialize, Serialize};

const LAYER: &str = "ATA IDENTIFY DEVICE data";
const BYTES: usize = 512;
/// The size of a sector before ATA had other sizes.
const DEFAULT_SECTOR: u64 = 512;

/// What the drive says about its sectors.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Identify {
    /// Word 106 as read: bits 15:14 = 01b when valid; bit 13 several
    /// logical sectors per physical one, 2^(bits 3:0) of them; bit 12 a
    /// logical sector longer than 256 words (its size in words 117-118).
    pub word106: u16,
    pub logical_sector_bytes: u64,
    pub physical_sector_bytes: u64,
    /// The bytes from LBA 0 to the first physical sector boundary (word
    /// 209), as the kernel's alignment_offset counts it.
    pub alignment_offset_bytes: u64,
    pub model: Option<String>,
    pub firmware: Option<String>,
}

/// Word `w` of the data.
fn word(b: &[u8], w: usize) -> u16 {
    le_u16(b, 2 * w)
}

fn valid(w: u16) -> bool {
    w & 0xc000 == 0x4000
}

/// Parse IDENTIFY DEVICE data (512 bytes).
pub fn parse_ata(b: &[u8]) -> Result<Identify, ParseError> {
    if b.len() < BYTES {
        return Err(ParseError::new(
            LAYER,
            b.len() as u64,
            format!("needs {BYTES} bytes, got {}", b.len()),
        ));
    }
    let b = &b[..BYTES];
    if b.iter().all(|&x| x == 0) {
        return Err(ParseError::new(
            LAYER,
            0,
            "all zeros: nothing answered the command",
        ));
    }
    check_integrity(b)?;
    let w106 = word(b, 106);
    let logical = logical_sector_bytes(b, w106)?;
    // Bit 13 with bits 15:14 = 01b: 2^(bits 3:0) logical sectors per physical.
    let log2 = if w106 & 0xe000 == 0x6000 {
        u32::from(w106 & 0xf)
    } else {
        0
    };
    let per_physical = 1u64 << log2;
    Ok(Identify {
        word106: w106,
        logical_sector_bytes: logical,
        physical_sector_bytes: logical * per_physical,
        alignment_offset_bytes: alignment(b, per_physical)? * logical,
        model: text(b, 27, 47),
        firmware: text(b, 23, 27),
    })
}

/// Word 255: when its low byte is the signature A5h, the high byte makes
/// the sum of all 512 bytes 0 (mod 256).
fn check_integrity(b: &[u8]) -> Result<(), ParseError> {
    if b[510] != 0xa5 {
        return Ok(());
    }
    let sum = b.iter().fold(0u8, |s, &x| s.wrapping_add(x));
    if sum != 0 {
        return Err(ParseError::new(
            LAYER,
            511,
            format!("checksum byte {:#04x} does not sum the data to 0", b[511]),
        ));
    }
    Ok(())
}

/// Words 117-118 (low word first), in words, when word 106 is valid and
/// bit 12 is set; 512 bytes otherwise.
fn logical_sector_bytes(b: &[u8], w106: u16) -> Result<u64, ParseError> {
    if w106 & 0xd000 != 0x5000 {
        return Ok(DEFAULT_SECTOR);
    }
    let words = u64::from(word(b, 117)) | (u64::from(word(b, 118)) << 16);
    if words < 256 {
        return Err(ParseError::new(
            LAYER,
            234,
            format!(
                "word 106 says the logical sector is longer than 256 words, words 117-118 say {words}"
            ),
        ));
    }
    Ok(words * 2)
}

/// Word 209: bits 13:0 are where in the first physical sector logical
/// sector 0 lies (in logical sectors); the first aligned LBA is the rest
/// of that physical sector.
fn alignment(b: &[u8], per_physical: u64) -> Result<u64, ParseError> {
    let w209 = word(b, 209);
    if per_physical < 2 || !valid(w209) {
        return Ok(0);
    }
    let first = u64::from(w209 & 0x3fff);
    if first >= per_physical {
        return Err(ParseError::new(
            LAYER,
            418,
            format!(
                "word 209 puts logical sector 0 at {first} of a physical sector of {per_physical}"
            ),
        ));
    }
    Ok(if first == 0 { 0 } else { per_physical - first })
}

/// An ATA string of words `from..to`: two characters per word, the first
/// in the high byte; trailing blanks dropped; None when empty or not
/// printable ASCII.
fn text(b: &[u8], from: usize, to: usize) -> Option<String> {
    let bytes: Vec<u8> = (from..to).flat_map(|w| [b[2 * w + 1], b[2 * w]]).collect();
    let s = std::str::from_utf8(&bytes).ok()?;
    let s = s.trim_matches(|c: char| c == ' ' || c == '\0');
    (!s.is_empty() && s.chars().all(|c| c.is_ascii_graphic() || c == ' ')).then(|| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// IDENTIFY data laid out by hand (synthetic), words given.
    fn synthetic(words: &[(usize, u16)]) -> Vec<u8> {
        let mut b = vec![0u8; 512];
        for &(w, v) in words {
            b[2 * w..2 * w + 2].copy_from_slice(&v.to_le_bytes());
        }
        // "MODEL X" in words 27.., byte-swapped per word.
        for (i, pair) in b"MODEL X ".chunks(2).enumerate() {
            b[2 * (27 + i)] = pair[1];
            b[2 * (27 + i) + 1] = pair[0];
        }
        b
    }

    #[test]
    fn a_512e_drive() {
        let id = parse_ata(&synthetic(&[(106, 0x6003), (209, 0x4000)])).unwrap();
        assert_eq!(
            (id.logical_sector_bytes, id.physical_sector_bytes),
            (512, 4096)
        );
        assert_eq!(id.alignment_offset_bytes, 0);
        assert_eq!(id.model.as_deref(), Some("MODEL X"));
        assert_eq!(id.firmware, None);
    }

    #[test]
    fn a_512n_drive_and_an_invalid_word_106() {
        let id = parse_ata(&synthetic(&[(106, 0x4000)])).unwrap();
        assert_eq!(
            (id.logical_sector_bytes, id.physical_sector_bytes),
            (512, 512)
        );
        // Bit 15 set: the word is not valid, whatever its other bits say.
        let id = parse_ata(&synthetic(&[(106, 0xe003)])).unwrap();
        assert_eq!(id.physical_sector_bytes, 512);
    }

    #[test]
    fn logical_sector_offset() {
        // Logical sector 0 at position 1 of 8: the first aligned LBA is 7.
        let id = parse_ata(&synthetic(&[(106, 0x6003), (209, 0x4001)])).unwrap();
        assert_eq!(id.alignment_offset_bytes, 3584);
        let e = parse_ata(&synthetic(&[(106, 0x6003), (209, 0x4009)])).unwrap_err();
        assert_eq!(e.offset, 418);
    }

    #[test]
    fn a_4kn_drive() {
        let id = parse_ata(&synthetic(&[(106, 0x5000), (117, 2048), (118, 0)])).unwrap();
        assert_eq!(
            (id.logical_sector_bytes, id.physical_sector_bytes),
            (4096, 4096)
        );
        let e = parse_ata(&synthetic(&[(106, 0x5000), (117, 16)])).unwrap_err();
        assert_eq!(e.offset, 234);
    }

    #[test]
    fn refusals() {
        assert_eq!(parse_ata(&[1u8; 100]).unwrap_err().offset, 100);
        assert_eq!(parse_ata(&[0u8; 512]).unwrap_err().offset, 0);
        let mut b = synthetic(&[(106, 0x4000)]);
        b[510] = 0xa5;
        b[511] = 0x00;
        assert_eq!(parse_ata(&b).unwrap_err().offset, 511);
        let sum = b.iter().fold(0u8, |s, &x| s.wrapping_add(x));
        b[511] = 0u8.wrapping_sub(sum);
        assert!(parse_ata(&b).is_ok());
    }
}
