//! Partition tables read from raw bytes: GPT (both copies, CRC-checked) and
//! MBR (with extended/logical partitions, protective and hybrid), probing
//! 512- and 4096-byte sectors so images work offline and a table written
//! under another sector size is recognised.

mod gpt;
mod mbr;

/// The parsers by themselves, for the fuzz targets (fuzz/src/entries.rs).
pub use gpt::{probe as probe_gpt, read_header as read_gpt_header};
/// The MBR parsers by themselves, for the fuzz targets.
pub use mbr::{partitions as mbr_partitions, read_primary as read_mbr_primary};

use crate::bytes::{self, ParseError, ReadAt};
use crate::findings::{Code, Finding};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TableKind {
    Gpt,
    Mbr,
    #[default]
    None,
    /// Not read: the partitions the kernel registered (sysfs), used when
    /// the device node cannot be opened.
    Kernel,
}

crate::spelled_as_serde!(TableKind);

#[derive(Clone, Copy, Default, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PartKind {
    Gpt,
    Primary,
    Extended,
    Logical,
    /// Registered by the kernel; the table entry itself was not read.
    #[default]
    Registered,
}

crate::spelled_as_serde!(PartKind);

/// One partition in table sectors (`last_lba` inclusive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    pub number: u32,
    pub kind: PartKind,
    pub first_lba: u64,
    pub last_lba: u64,
    /// GPT type GUID or MBR type byte (`0x83`).
    pub type_id: String,
    pub name: Option<String>,
    /// PARTUUID as libblkid spells it: a GPT entry's unique partition
    /// GUID, or for a DOS table the disk signature and the partition's
    /// number (`%08x-%02x`, libblkid/src/partitions/partitions.c
    /// `blkid_partition_gen_uuid`). None when the table was not read.
    pub uuid: Option<String>,
    /// A logical partition's EBR: the table sector that describes it. It
    /// stays where it is when the partition's start changes.
    pub ebr_lba: Option<u64>,
}

/// A partition table as found on the device.
#[derive(Clone, Debug)]
pub struct Table {
    pub kind: TableKind,
    /// The sector size the table's LBAs are in.
    pub sector_size: u64,
    pub partitions: Vec<Partition>,
    /// PTUUID as libblkid spells it: the GPT disk GUID, or the DOS disk
    /// signature at byte 440 (`%08x`, libblkid/src/partitions/dos.c).
    /// None when the table was not read or a DOS signature is zero.
    pub id: Option<String>,
    /// First and last usable LBA (GPT only).
    pub usable: Option<(u64, u64)>,
    /// Damage, hybrid MBRs, sector-size mismatches.
    pub findings: Vec<Finding>,
}

impl Table {
    /// No partition table, on a device of `lbs`-byte sectors.
    pub fn none(lbs: u64) -> Table {
        Table {
            kind: TableKind::None,
            sector_size: lbs,
            partitions: vec![],
            id: None,
            usable: None,
            findings: vec![],
        }
    }
}

/// Read the table of a device whose logical block size is `lbs`. `lbs_known`
/// is false for image files: then a table written for 4096-byte sectors is
/// simply taken as such, not reported as a mismatch.
pub fn read_table(
    src: &(impl ReadAt + ?Sized),
    lbs: u64,
    lbs_known: bool,
) -> Result<Table, ParseError> {
    let primary = mbr::read_primary(src)?;
    let other = if lbs == 4096 { 512 } else { 4096 };
    let mut broken = None;
    let mut found = None;
    for ss in [lbs, other] {
        match gpt::probe(src, ss) {
            gpt::Probe::Found(g) => {
                found = Some((ss, g));
                break;
            }
            gpt::Probe::Broken(e) if broken.is_none() => broken = Some(e),
            _ => {}
        }
    }
    if let Some((ss, g)) = found {
        let mut findings = g.findings;
        if ss != lbs && lbs_known {
            findings.push(Finding::new(
                Code::TableSectorSizeMismatch,
                format!(
                    "the GPT was written for {ss}-byte sectors but this device presents {lbs}-byte sectors (a disk partitioned behind a USB bridge or another controller?): the kernel does not see these partitions where they are; the offsets below use {ss}-byte sectors"
                ),
            ));
        }
        if let Some(entries) = &primary {
            let others: Vec<String> = entries
                .iter()
                .filter(|e| e.kind != mbr::PROTECTIVE)
                .map(|e| format!("#{} type 0x{:02x} at LBA {}", e.index, e.kind, e.start_lba))
                .collect();
            if entries.iter().any(|e| e.kind == mbr::PROTECTIVE) && !others.is_empty() {
                findings.push(Finding::new(
                    Code::HybridMbr,
                    format!("hybrid MBR: besides the protective entry it holds {}; tools that read only the MBR see those", others.join(", ")),
                ));
            }
        }
        return Ok(Table {
            kind: TableKind::Gpt,
            sector_size: ss,
            usable: Some((g.header.first_usable, g.header.last_usable)),
            id: Some(g.header.disk_guid),
            partitions: g.partitions,
            findings,
        });
    }
    let Some(entries) = primary else {
        return match broken {
            Some(e) => Err(e),
            None => Ok(Table::none(lbs)),
        };
    };
    if entries.iter().any(|e| e.kind == mbr::PROTECTIVE) {
        // A GPT is there but unreadable: nothing can be judged.
        if let Some(e) = broken {
            return Err(e);
        }
        return Ok(Table {
            kind: TableKind::Mbr,
            sector_size: lbs,
            partitions: vec![],
            id: None,
            usable: None,
            findings: vec![Finding::new(
                Code::ProtectiveMbrWithoutGpt,
                "the MBR holds a GPT protective entry but no GPT header was found at LBA 1 or the last LBA, for 512 or 4096-byte sectors",
            )],
        });
    }
    let mut findings = Vec::new();
    let ss = mbr_sector_size(src, &entries, lbs, other, lbs_known, &mut findings);
    let mut partitions = mbr::partitions(src, &entries, ss, &mut findings);
    let signature = mbr::disk_signature(src);
    mbr::set_part_uuids(&mut partitions, signature);
    Ok(Table {
        kind: TableKind::Mbr,
        sector_size: ss,
        partitions,
        id: signature.map(|s| format!("{s:08x}")),
        usable: None,
        findings,
    })
}

/// Decide which sector size a DOS table was written with. An MBR does not
/// say, so look for evidence: entries that only fit the device with the
/// other size, or EBRs found only at the other size.
fn mbr_sector_size(
    src: &(impl ReadAt + ?Sized),
    entries: &[mbr::MbrEntry],
    lbs: u64,
    other: u64,
    lbs_known: bool,
    findings: &mut Vec<Finding>,
) -> u64 {
    let fits = |ss: u64| {
        entries
            .iter()
            .all(|e| (u64::from(e.start_lba) + u64::from(e.sectors)) * ss <= src.len())
    };
    let ebr_ok = |ss: u64| {
        entries
            .iter()
            .filter(|e| mbr::is_extended(e.kind))
            .map(|e| {
                bytes::read_bytes(src, "EBR", u64::from(e.start_lba) * ss, 512)
                    .is_ok_and(|b| b[510] == 0x55 && b[511] == 0xAA)
            })
            .collect::<Vec<bool>>()
    };
    let (here, there) = (ebr_ok(lbs), ebr_ok(other));
    let other_better = (!fits(lbs) && fits(other))
        || (!here.is_empty() && here.iter().all(|ok| !ok) && there.iter().all(|ok| *ok));
    if !other_better {
        return lbs;
    }
    if lbs_known {
        findings.push(Finding::new(
            Code::TableSectorSizeMismatch,
            format!("the MBR only makes sense with {other}-byte sectors but this device presents {lbs}-byte sectors: it was partitioned behind another controller; the offsets below use {other}-byte sectors"),
        ));
    }
    other
}
