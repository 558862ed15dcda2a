//! MBR: four primary entries at 0x1BE, extended partitions as EBR chains.

use super::{PartKind, Partition};
use crate::bytes::ParseError;
use crate::bytes::{le_u32, read_bytes, ReadAt};
use crate::findings::{Code, Finding};
use std::collections::HashSet;

/// One non-empty primary entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MbrEntry {
    pub index: u32,
    pub kind: u8,
    pub start_lba: u32,
    pub sectors: u32,
}

pub const PROTECTIVE: u8 = 0xEE;

pub fn is_extended(kind: u8) -> bool {
    matches!(kind, 0x05 | 0x0F | 0x85)
}

/// Most logical partitions followed before the chain is called a loop.
const MAX_LOGICAL: u32 = 256;

fn entries(sector: &[u8]) -> Vec<MbrEntry> {
    (0..4)
        .filter_map(|i| {
            let e = 0x1BE + 16 * i;
            let kind = sector[e + 4];
            let start_lba = le_u32(sector, e + 8);
            let sectors = le_u32(sector, e + 12);
            (kind != 0 && sectors != 0).then_some(MbrEntry {
                index: i as u32 + 1,
                kind,
                start_lba,
                sectors,
            })
        })
        .collect()
}

fn has_signature(sector: &[u8]) -> bool {
    sector.len() >= 512 && sector[510] == 0x55 && sector[511] == 0xAA
}

/// The DOS disk signature (the 4 bytes at 440, little-endian) as libblkid
/// spells the PTUUID (`%08x`, libblkid/src/partitions/dos.c); None when
/// it is zero, as libblkid leaves it unset then.
pub fn disk_signature(src: &(impl ReadAt + ?Sized)) -> Option<u32> {
    let b = read_bytes(src, "MBR", 440, 4).ok()?;
    Some(le_u32(&b, 0)).filter(|&s| s != 0)
}

/// Give each partition the PARTUUID libblkid derives from the disk
/// signature and the partition number (`%08x-%02x`,
/// libblkid/src/partitions/partitions.c `blkid_partition_gen_uuid`).
pub fn set_part_uuids(parts: &mut [Partition], signature: Option<u32>) {
    for p in parts {
        p.uuid = signature.map(|s| format!("{s:08x}-{:02x}", p.number));
    }
}

/// The primary entries of the MBR, or None when sector 0 has no 55 AA.
pub fn read_primary(src: &(impl ReadAt + ?Sized)) -> Result<Option<Vec<MbrEntry>>, ParseError> {
    if src.len() < 512 {
        return Err(ParseError::new(
            "MBR",
            0,
            format!(
                "the device is only {} bytes, smaller than one sector",
                src.len()
            ),
        ));
    }
    let sector = read_bytes(src, "MBR", 0, 512)?;
    Ok(has_signature(&sector).then(|| entries(&sector)))
}

/// Build the partition list of a DOS table read with `ss`-byte sectors.
/// Broken EBR chains end the list with a finding, never a panic.
pub fn partitions(
    src: &(impl ReadAt + ?Sized),
    primary: &[MbrEntry],
    ss: u64,
    findings: &mut Vec<Finding>,
) -> Vec<Partition> {
    let mut out = Vec::new();
    for e in primary {
        let kind = if is_extended(e.kind) {
            PartKind::Extended
        } else {
            PartKind::Primary
        };
        out.push(Partition {
            number: e.index,
            kind,
            first_lba: u64::from(e.start_lba),
            last_lba: u64::from(e.start_lba) + u64::from(e.sectors) - 1,
            type_id: format!("0x{:02x}", e.kind),
            ebr_lba: None,
            name: None,
            uuid: None,
        });
    }
    if let Some(ext) = primary.iter().find(|e| is_extended(e.kind)) {
        logicals(src, ext, ss, &mut out, findings);
    }
    out
}

fn logicals(
    src: &(impl ReadAt + ?Sized),
    ext: &MbrEntry,
    ss: u64,
    out: &mut Vec<Partition>,
    findings: &mut Vec<Finding>,
) {
    let ext_start = u64::from(ext.start_lba);
    let ext_end = ext_start + u64::from(ext.sectors);
    let mut ebr_lba = ext_start;
    let mut seen = HashSet::new();
    let mut number = 5;
    while number < 5 + MAX_LOGICAL {
        if !seen.insert(ebr_lba) {
            findings.push(Finding::new(
                Code::PartitionInvalid,
                format!("EBR chain loops back to LBA {ebr_lba} (byte {}); later logical partitions ignored", ebr_lba * ss),
            ));
            return;
        }
        let offset = ebr_lba * ss;
        let sector = match read_bytes(src, "EBR", offset, 512) {
            Ok(s) => s,
            Err(e) => {
                findings.push(Finding::new(Code::PartitionOutsideDisk, e.to_string()));
                return;
            }
        };
        if !has_signature(&sector) {
            findings.push(Finding::new(
                Code::PartitionInvalid,
                format!("EBR at byte {offset} (LBA {ebr_lba}) has no 55 AA signature; the logical partition chain ends there"),
            ));
            return;
        }
        let es = entries(&sector);
        let data = es.iter().find(|e| !is_extended(e.kind));
        if let Some(d) = data {
            let first = ebr_lba + u64::from(d.start_lba);
            out.push(Partition {
                number,
                kind: PartKind::Logical,
                first_lba: first,
                last_lba: first + u64::from(d.sectors) - 1,
                type_id: format!("0x{:02x}", d.kind),
                ebr_lba: Some(ebr_lba),
                name: None,
                uuid: None,
            });
            number += 1;
        }
        match es.iter().find(|e| is_extended(e.kind)) {
            Some(next) => {
                ebr_lba = ext_start + u64::from(next.start_lba);
                if ebr_lba >= ext_end {
                    findings.push(Finding::new(
                        Code::PartitionOutsideDisk,
                        format!("EBR at byte {offset} links to LBA {ebr_lba}, outside the extended partition"),
                    ));
                    return;
                }
            }
            None => return,
        }
    }
    findings.push(Finding::new(
        Code::PartitionInvalid,
        format!("more than {MAX_LOGICAL} logical partitions; the rest ignored"),
    ));
}
