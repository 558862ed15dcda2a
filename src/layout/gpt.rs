//! GPT: header at LBA 1 (and its backup at the last LBA), CRC-checked entries.

use super::{PartKind, Partition};
use crate::bytes::ParseError;
use crate::bytes::{le_u32, le_u64, read_bytes, ReadAt};
use crate::findings::{Code, Facts, Finding};

/// The facts of a finding about the structure at byte `offset`.
fn at(offset: u64) -> Facts {
    Facts {
        offset_bytes: Some(offset),
        ..Facts::default()
    }
}

const SIGNATURE: &[u8; 8] = b"EFI PART";
/// The header's and the entry array's CRC32 (UEFI 2.10 §4.2 names the
/// ISO 3309 CRC-32 that zlib computes: CRC-32/ISO-HDLC).
/// Slice-by-16 tables: every table read sums 16 KiB or more of entries
/// (twice, with the backup), the most CPU a check of a disk spends.
const GPT_CRC: crc::Crc<u32, crc::Table<16>> =
    crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISO_HDLC);
/// Upper bound on the entry array we agree to read (the spec's minimum is 16 KiB).
const MAX_ARRAY_BYTES: u64 = 4 << 20;

/// The fields of a GPT header that matter here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub my_lba: u64,
    pub alternate_lba: u64,
    pub first_usable: u64,
    pub last_usable: u64,
    /// The disk GUID (UEFI 2.10 table 5.5, bytes 56..72), as PTUUID.
    pub disk_guid: String,
    pub entries_lba: u64,
    pub entry_count: u32,
    pub entry_size: u32,
    pub entries_crc: u32,
}

/// A table read for one sector size.
#[derive(Clone, Debug)]
pub struct Gpt {
    pub header: Header,
    pub partitions: Vec<Partition>,
    /// Damage found on the way (primary or backup invalid).
    pub findings: Vec<Finding>,
}

/// What probing one sector size found.
#[derive(Debug)]
pub enum Probe {
    /// No "EFI PART" at LBA 1 nor at the last LBA.
    Absent,
    Found(Gpt),
    /// A signature exists but neither header copy is usable.
    Broken(ParseError),
}

/// True when "EFI PART" sits at LBA `lba`.
fn signature_at(src: &(impl ReadAt + ?Sized), lba: u64, ss: u64) -> bool {
    read_bytes(src, "GPT header", lba * ss, 8).is_ok_and(|b| b == SIGNATURE)
}

/// Read and validate the header at `lba`. Every error names the header's
/// own offset (byte 512 for the primary on 512-byte sectors), as the
/// message names the field: "GPT header at byte 512: header CRC32
/// mismatch", never the byte of the field inside it.
pub fn read_header(src: &(impl ReadAt + ?Sized), lba: u64, ss: u64) -> Result<Header, ParseError> {
    let layer = "GPT header";
    let offset = lba
        .checked_mul(ss)
        .ok_or_else(|| ParseError::new(layer, u64::MAX, "LBA overflows"))?;
    let b = read_bytes(src, layer, offset, ss)?;
    if &b[0..8] != SIGNATURE {
        return Err(ParseError::new(layer, offset, "no \"EFI PART\" signature"));
    }
    let size = le_u32(&b, 12) as usize;
    if size < 92 || size > b.len() {
        return Err(ParseError::new(
            layer,
            offset,
            format!("header size {size} is not within 92..={ss}"),
        ));
    }
    let stored = le_u32(&b, 16);
    let mut copy = b[..size].to_vec();
    copy[16..20].fill(0);
    let computed = GPT_CRC.checksum(&copy);
    if stored != computed {
        return Err(ParseError::new(
            layer,
            offset,
            format!("header CRC32 mismatch (stored {stored:#010x}, computed {computed:#010x})"),
        ));
    }
    let h = Header {
        my_lba: le_u64(&b, 24),
        alternate_lba: le_u64(&b, 32),
        first_usable: le_u64(&b, 40),
        last_usable: le_u64(&b, 48),
        disk_guid: guid(&b[56..72]).to_ascii_lowercase(),
        entries_lba: le_u64(&b, 72),
        entry_count: le_u32(&b, 80),
        entry_size: le_u32(&b, 84),
        entries_crc: le_u32(&b, 88),
    };
    if h.my_lba != lba {
        return Err(ParseError::new(
            layer,
            offset,
            format!(
                "header says it lives at LBA {}, found at LBA {lba}",
                h.my_lba
            ),
        ));
    }
    if h.entry_size < 128 || h.entry_size % 8 != 0 {
        return Err(ParseError::new(
            layer,
            offset,
            format!("entry size {} is invalid", h.entry_size),
        ));
    }
    let bytes = u64::from(h.entry_count) * u64::from(h.entry_size);
    if bytes > MAX_ARRAY_BYTES {
        return Err(ParseError::new(
            layer,
            offset,
            format!(
                "{} entries of {} bytes is implausibly large",
                h.entry_count, h.entry_size
            ),
        ));
    }
    if h.first_usable > h.last_usable {
        return Err(ParseError::new(
            layer,
            offset,
            format!(
                "first usable LBA {} is after last usable LBA {}",
                h.first_usable, h.last_usable
            ),
        ));
    }
    Ok(h)
}

/// Read and CRC-check the entry array a header points to.
fn read_entries(
    src: &(impl ReadAt + ?Sized),
    h: &Header,
    ss: u64,
) -> Result<Vec<Partition>, ParseError> {
    let layer = "GPT entries";
    let offset = h
        .entries_lba
        .checked_mul(ss)
        .ok_or_else(|| ParseError::new(layer, u64::MAX, "LBA overflows"))?;
    let len = u64::from(h.entry_count) * u64::from(h.entry_size);
    let b = read_bytes(src, layer, offset, len)?;
    let computed = GPT_CRC.checksum(&b);
    if computed != h.entries_crc {
        return Err(ParseError::new(
            layer,
            offset,
            format!(
                "entry array CRC32 mismatch (header says {:#010x}, computed {computed:#010x})",
                h.entries_crc
            ),
        ));
    }
    let mut parts = Vec::new();
    for (i, e) in b.chunks_exact(h.entry_size as usize).enumerate() {
        if e[0..16].iter().all(|&x| x == 0) {
            continue;
        }
        let name: Vec<u16> = e[56..128]
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .take_while(|&c| c != 0)
            .collect();
        parts.push(Partition {
            number: i as u32 + 1,
            kind: PartKind::Gpt,
            first_lba: le_u64(e, 32),
            last_lba: le_u64(e, 40),
            type_id: guid(&e[0..16]),
            ebr_lba: None,
            name: Some(String::from_utf16_lossy(&name)).filter(|n| !n.is_empty()),
            uuid: Some(guid(&e[16..32]).to_ascii_lowercase()),
        });
    }
    Ok(parts)
}

/// Mixed-endian GUID text as every tool prints it.
fn guid(b: &[u8]) -> String {
    format!(
        "{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{}",
        le_u32(b, 0),
        u16::from_le_bytes([b[4], b[5]]),
        u16::from_le_bytes([b[6], b[7]]),
        b[8],
        b[9],
        b[10..16]
            .iter()
            .map(|x| format!("{x:02X}"))
            .collect::<String>()
    )
}

/// A header and its entries, both valid.
fn read_copy(
    src: &(impl ReadAt + ?Sized),
    lba: u64,
    ss: u64,
) -> Result<(Header, Vec<Partition>), ParseError> {
    let h = read_header(src, lba, ss)?;
    let parts = read_entries(src, &h, ss)?;
    Ok((h, parts))
}

/// Look for a GPT written with `ss`-byte sectors: primary first, then backup.
pub fn probe(src: &(impl ReadAt + ?Sized), ss: u64) -> Probe {
    let sectors = src.len() / ss;
    if sectors < 3 {
        return Probe::Absent;
    }
    let last = sectors - 1;
    let primary_sig = signature_at(src, 1, ss);
    let backup_sig = signature_at(src, last, ss);
    if !primary_sig && !backup_sig {
        return Probe::Absent;
    }
    match read_copy(src, 1, ss) {
        Ok((header, partitions)) => {
            let mut findings = Vec::new();
            let alt = header.alternate_lba;
            match read_copy(src, alt, ss) {
                Ok((bh, bparts)) if bparts == partitions && bh.my_lba == alt => {}
                Ok(_) => findings.push(Finding::new(
                    Code::GptBackupInvalid,
                    format!("the backup GPT at LBA {alt} (byte {}) lists other partitions than the primary", alt.saturating_mul(ss)),
                ).with_facts(at(alt.saturating_mul(ss)))),
                Err(e) => findings.push(Finding::new(
                    Code::GptBackupInvalid,
                    format!("backup GPT unusable: {e}; `sgdisk -e` or `sgdisk -b`/`-l` can rewrite it"),
                )),
            }
            if alt != last {
                findings.push(Finding::new(
                    Code::GptBackupInvalid,
                    format!("the backup GPT header is at LBA {alt}, not at the last LBA {last} (disk grown or image truncated?)"),
                )
                // Both copies read: a disk grown under its table is
                // hygiene (`sgdisk -e`), not damage.
                .severity(crate::findings::Severity::Warning)
                .with_facts(at(alt.saturating_mul(ss))));
            }
            Probe::Found(Gpt { header, partitions, findings })
        }
        Err(primary_err) => match read_copy(src, last, ss) {
            Ok((header, partitions)) => Probe::Found(Gpt {
                header,
                partitions,
                findings: vec![Finding::new(
                    Code::GptPrimaryInvalid,
                    format!("primary GPT unusable ({primary_err}); using the backup at LBA {last} (byte {})", last * ss),
                ).with_facts(at(last.saturating_mul(ss)))],
            }),
            Err(backup_err) if primary_sig => Probe::Broken(ParseError::new(
                primary_err.layer,
                primary_err.offset,
                format!("{}; the backup is unusable too ({backup_err})", primary_err.message),
            )),
            Err(backup_err) => Probe::Broken(backup_err),
        },
    }
}
