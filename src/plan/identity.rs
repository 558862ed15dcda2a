//! Which disk a plan is for, as its script checks it before every step:
//! the absolute path, the size, the table's PTUUID and, for a live disk,
//! the serial and WWN the kernel shows in sysfs.

use super::Identity;
use crate::findings::Code;
use crate::inspect::{Target, TargetKind};
use crate::layout::TableKind;
use std::path::PathBuf;

/// The identity of a target as read.
pub fn of(t: &Target) -> Identity {
    let disk = t.disk.as_ref();
    Identity {
        script_path: script_path(t).display().to_string(),
        size_bytes: t.size,
        ptuuid: t.table.id.clone(),
        serial: disk.and_then(|d| d.serial.clone()),
        wwn: disk.and_then(|d| d.wwn.clone()),
    }
}

/// An image's path made absolute (the script may run from another
/// directory); a live disk's path as given when absolute (a
/// /dev/disk/by-id link stays one), else its node.
fn script_path(t: &Target) -> PathBuf {
    if t.kind == TargetKind::Image {
        return std::path::absolute(&t.path).unwrap_or_else(|_| t.path.clone());
    }
    match &t.disk {
        Some(d) if !t.path.is_absolute() => d.device.clone(),
        _ => t.path.clone(),
    }
}

/// The backup of a GPT whose primary is damaged can be written back over
/// it by `sgdisk -e`: sgdisk, finding the primary header or entries
/// invalid and the backup sound, rebuilds the main header from the backup
/// and loads the backup's entries as the main ones
/// (`GPTData::ForceLoadGPTData` in gptfdisk's gpt.cc: `RebuildMainHeader`,
/// `LoadSecondTableAsMain`), and `-e` saves both copies (`SaveGPTData`:
/// the backup first, then the main entries, header and protective MBR)
/// with the backup where it is: at the disk's end, the only place
/// diskalign reads a backup from. sgdisk addresses an image in
/// 512-byte sectors and a disk in its logical ones, so only a table in
/// those is repaired.
pub fn gpt_repairable(t: &Target) -> bool {
    let ss = t.table.sector_size;
    let sgdisk_ss = match t.kind {
        TargetKind::Image => 512,
        _ => u64::from(t.topology.logical_block_size),
    };
    t.table.kind == TableKind::Gpt
        && ss == sgdisk_ss
        && t.table
            .findings
            .iter()
            .any(|f| f.code == Code::GptPrimaryInvalid)
}
