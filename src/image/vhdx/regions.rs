//! The header section's structures: the current one of the two headers
//! (`vhdx_parse_header`) and the region table that places the BAT and the
//! metadata (`vhdx_open_region_tables`), each copy checked by its CRC-32C.

use super::{
    crc32c_without, guid, File, Region, HEADER, HEADER_SECTION, KIB, MAX_TABLE_ENTRIES,
    REGION_TABLE,
};
use crate::bytes::{le_u16, le_u32, le_u64};
use crate::image::ImageError;

pub(super) const HEADER_AT: [u64; 2] = [64 * KIB, 128 * KIB];
/// The CRC of a header covers 4 KiB (`VHDX_HEADER_SIZE`), its fields 80
/// bytes (`VHDXHeader`).
pub(super) const HEADER_BYTES: u64 = 4 * KIB;
const HEADER_FIELDS: usize = 80;
pub(super) const REGION_TABLE_AT: [u64; 2] = [192 * KIB, 256 * KIB];
pub(super) const REGION_TABLE_BYTES: u64 = 64 * KIB;

/// Region table entries (block/vhdx.c `bat_guid`, `metadata_guid`).
pub(super) const BAT_GUID: [u8; 16] = guid("2DC27766-F623-4200-9D64-115E9BFD4A08");
pub(super) const METADATA_GUID: [u8; 16] = guid("8B7CA206-4790-4B9A-B8FE-575F050F886E");

/// The header fields this reader uses (qemu's `VHDXHeader`).
pub(super) struct Header {
    pub(super) at: u64,
    pub(super) sequence: u64,
    pub(super) log_guid: [u8; 16],
    pub(super) log_version: u16,
    pub(super) version: u16,
    pub(super) log_length: u32,
    pub(super) log_offset: u64,
}

/// The current header, as `vhdx_parse_header` picks it: a copy is valid
/// when its CRC-32C (over 4 KiB, the checksum field as zeros) holds, its
/// signature is `head` and its version 1; of two valid copies the one
/// with the higher sequence number, of two with the same number the first
/// if both are the same (Disk2vhd writes them so), else neither.
pub(super) fn current_header(file: &File) -> Result<Header, ImageError> {
    let copies = HEADER_AT.map(|at| {
        let bytes = file.read_copy(HEADER, at, HEADER_BYTES)?;
        parse_header(&bytes, at).map(|h| (h, bytes))
    });
    let [one, two] = copies;
    match (one, two) {
        (Ok((a, _)), Err(_)) => Ok(a),
        (Err(_), Ok((b, _))) => Ok(b),
        (Err(why1), Err(why2)) => Err(file.err(
            HEADER,
            HEADER_AT[0],
            format!(
                "no valid header: the one at byte {} {why1}; the one at byte {} {why2}",
                HEADER_AT[0], HEADER_AT[1]
            ),
        )),
        (Ok((a, a_bytes)), Ok((b, b_bytes))) => {
            if a.sequence > b.sequence {
                Ok(a)
            } else if b.sequence > a.sequence {
                Ok(b)
            } else if a_bytes[..HEADER_FIELDS] == b_bytes[..HEADER_FIELDS] {
                Ok(a)
            } else {
                Err(file.err(
                    HEADER,
                    HEADER_AT[1] + 8,
                    format!(
                        "sequence number {} is the same in both headers, which differ: \
                         neither is current",
                        a.sequence
                    ),
                ))
            }
        }
    }
}

/// A header copy, or why it is not valid.
fn parse_header(b: &[u8], at: u64) -> Result<Header, String> {
    let stored = le_u32(b, 4);
    let computed = crc32c_without(b, 4);
    if stored != computed {
        return Err(format!(
            "has checksum 0x{stored:08x}, its CRC-32C is 0x{computed:08x}"
        ));
    }
    if &b[..4] != b"head" {
        return Err("has no \"head\" signature".into());
    }
    let version = le_u16(b, 66);
    if version != 1 {
        return Err(format!("has version {version}, not 1"));
    }
    let mut log_guid = [0u8; 16];
    log_guid.copy_from_slice(&b[48..64]);
    Ok(Header {
        at,
        sequence: le_u64(b, 8),
        log_guid,
        log_version: le_u16(b, 64),
        version,
        log_length: le_u32(b, 68),
        log_offset: le_u64(b, 72),
    })
}

/// Where the region table places the BAT and the metadata.
pub(super) struct Regions {
    pub(super) bat: Region,
    pub(super) metadata: Region,
}

/// The region table (`vhdx_open_region_tables`). qemu reads only the first
/// copy; the specification keeps the second for when the first is damaged,
/// and we read it then. A copy is valid when its CRC-32C (over 64 KiB)
/// holds, its signature is `regi` and it has at most 2047 entries.
pub(super) fn region_table(file: &File, log: Region) -> Result<Regions, ImageError> {
    let mut why = Vec::new();
    for at in REGION_TABLE_AT {
        match file
            .read_copy(REGION_TABLE, at, REGION_TABLE_BYTES)
            .and_then(|table| check_region_table(&table).map(|count| (table, count)))
        {
            Ok((table, count)) => return region_entries(file, &table, at, count, log),
            Err(reason) => why.push(format!("the one at byte {at} {reason}")),
        }
    }
    Err(file.err(
        REGION_TABLE,
        REGION_TABLE_AT[0],
        format!("no valid copy: {}", why.join("; ")),
    ))
}

/// A region table copy's entry count, or why the copy is not valid.
fn check_region_table(t: &[u8]) -> Result<u64, String> {
    let stored = le_u32(t, 4);
    let computed = crc32c_without(t, 4);
    if stored != computed {
        return Err(format!(
            "has checksum 0x{stored:08x}, its CRC-32C is 0x{computed:08x}"
        ));
    }
    if &t[..4] != b"regi" {
        return Err("has no \"regi\" signature".into());
    }
    let count = u64::from(le_u32(t, 8));
    if count > MAX_TABLE_ENTRIES {
        return Err(format!(
            "has entry count {count}, beyond {MAX_TABLE_ENTRIES}"
        ));
    }
    Ok(count)
}

/// The BAT and metadata entries of a valid table: each once, no entry
/// overlapping another or the log, none in the header section, and no
/// other entry the file says a reader must understand.
fn region_entries(
    file: &File,
    t: &[u8],
    table_at: u64,
    count: u64,
    log: Region,
) -> Result<Regions, ImageError> {
    let mut seen = vec![log];
    let (mut bat, mut metadata) = (None, None);
    for i in 0..count {
        let e = 16 + 32 * i as usize;
        let at = table_at + e as u64;
        let err =
            |message: String| Err(file.err(REGION_TABLE, at, format!("entry {i}: {message}")));
        let region = Region {
            start: le_u64(t, e + 16),
            len: le_u32(t, e + 24).into(),
        };
        if region.start < HEADER_SECTION || region.start.checked_add(region.len).is_none() {
            return err(format!(
                "file offset {} is not past the header section",
                region.start
            ));
        }
        if let Some(other) = seen.iter().find(|r| r.overlaps(region.start, region.len)) {
            return err(format!(
                "bytes {}..{} overlap bytes {}..{} of the log or another region",
                region.start,
                region.end(),
                other.start,
                other.end()
            ));
        }
        seen.push(region);
        let guid = &t[e..e + 16];
        let slot = if guid == BAT_GUID {
            &mut bat
        } else if guid == METADATA_GUID {
            &mut metadata
        } else if le_u32(t, e + 28) & 1 != 0 {
            return err("a region this reader does not know is marked required".into());
        } else {
            continue;
        };
        if slot.replace(region).is_some() {
            return err("a second BAT or metadata region".into());
        }
    }
    match (bat, metadata) {
        (Some(bat), Some(metadata)) => Ok(Regions { bat, metadata }),
        _ => Err(file.err(
            REGION_TABLE,
            table_at + 8,
            "entry count: the table names no BAT or no metadata region",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::vhdx::test_support::{
        error, header, open_mem, put, region_table, seal, Build,
    };
    use crate::image::vhdx::MIB;

    #[test]
    fn a_damaged_header_falls_back_to_the_other_and_two_name_both() {
        let mut img = Build::default().bytes();
        img[HEADER_AT[1] as usize + 200] ^= 1;
        assert!(open_mem(img.clone()).is_ok());
        img[HEADER_AT[0] as usize + 200] ^= 1;
        let e = error(img);
        assert!(
            e.contains(
                "VHDX header at byte 65536: no valid header: the one at byte 65536 has checksum"
            ) && e.contains("the one at byte 131072 has checksum"),
            "{e}"
        );
        let mut img = Build::default().bytes();
        let mut h = header(2, [0; 16]);
        h[100] = 1;
        seal(&mut h);
        put(&mut img, HEADER_AT[0], &h);
        assert!(error(img).contains("sequence number 2 is the same in both headers"));
    }

    #[test]
    fn a_damaged_region_table_falls_back_to_the_second_copy() {
        let mut img = Build::default().bytes();
        img[REGION_TABLE_AT[0] as usize + 100] ^= 1;
        assert!(open_mem(img.clone()).is_ok());
        img[REGION_TABLE_AT[1] as usize + 8] = 0xff;
        let e = error(img);
        assert!(
            e.contains("VHDX region table at byte 196608: no valid copy"),
            "{e}"
        );
    }

    /// The default image with its region table entry `i` moved to `at`.
    fn region_at(i: usize, at: u64) -> Vec<u8> {
        let mut img = Build::default().bytes();
        let mut t = region_table();
        t[16 + 32 * i + 16..16 + 32 * i + 24].copy_from_slice(&at.to_le_bytes());
        seal(&mut t);
        put(&mut img, REGION_TABLE_AT[0], &t);
        img
    }

    #[test]
    fn regions_that_overlap_or_sit_in_the_header_section_are_refused() {
        let e = error(region_at(1, 2 * MIB + 4096));
        assert!(
            e.contains("VHDX region table at byte 196656: entry 1: bytes 2101248..3149824 overlap"),
            "{e}"
        );
        let e = error(region_at(0, MIB));
        assert!(
            e.contains("entry 0: bytes 1048576..2097152 overlap bytes 1048576..2097152 of the log"),
            "{e}"
        );
        let e = error(region_at(0, 4096));
        assert!(
            e.contains("entry 0: file offset 4096 is not past the header section"),
            "{e}"
        );
        let e = error(region_at(0, u64::MAX - 10));
        assert!(e.contains("entry 0: file offset"), "{e}");
    }
}
