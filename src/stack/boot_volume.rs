//! What a FAT, exFAT or NTFS volume's boot sector says, in the terms the
//! three share (`volume` reads it): the `volume` object of a filesystem
//! layer in the JSON.

use super::fat::FatType;
use serde::{Deserialize, Serialize};

/// What a FAT, exFAT or NTFS volume's boot sector says (`volume` inside a
/// filesystem layer's `filesystem` in the JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Volume {
    /// fat12, fat16 or fat32 for a FAT; absent on exFAT and NTFS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fat_type: Option<FatType>,
    pub cluster_bytes: u64,
    pub cluster_count: u64,
    /// Where the first FAT starts, in bytes from the volume's start
    /// (FAT and exFAT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fat_offset_bytes: Option<u64>,
    /// Where cluster 2 starts, in bytes from the volume's start: a FAT's
    /// data area, an exFAT's cluster heap; 0 on NTFS.
    pub data_offset_bytes: u64,
    /// The same byte on the device the layer is counted on (`device`):
    /// for a partition, the disk.
    pub data_start_bytes: u64,
    /// NTFS: where $MFT starts, in bytes from the volume's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mft_offset_bytes: Option<u64>,
    /// Where the boot sector says the volume starts on its disk, in its
    /// sectors: hidden sectors (FAT, NTFS) or PartitionOffset (exFAT).
    pub hidden_sectors: u64,
    /// Where it starts, in the same sectors (absent when its start is
    /// not a whole sector of that size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_sectors: Option<u64>,
    /// The bytes the volume needs from its start: its sectors, and on
    /// NTFS the backup boot sector after them.
    pub span_bytes: u64,
    /// The bytes of what it sits in (the partition, the device).
    pub region_bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// As blkid spells it: `XXXX-XXXX` (FAT, exFAT), 16 hex digits (NTFS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    pub backup: Backup,
}

impl Volume {
    /// Its name as people say it: FAT12, FAT16, FAT32, exFAT or NTFS
    /// (an NTFS has its $MFT, an exFAT a FAT and no FAT type).
    pub fn name(&self) -> &'static str {
        match (self.fat_type, self.mft_offset_bytes) {
            (Some(FatType::Fat12), _) => "FAT12",
            (Some(FatType::Fat16), _) => "FAT16",
            (Some(FatType::Fat32), _) => "FAT32",
            (None, Some(_)) => "NTFS",
            (None, None) => "exFAT",
        }
    }
}

/// The backup boot sector (exFAT: boot region) against the main one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backup {
    pub state: BackupState,
    /// Where it is, in bytes from the volume's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset_bytes: Option<u64>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackupState {
    /// It says what the main one says.
    Same,
    /// It is there and says something else.
    Differs,
    /// Where it should be, there are zeros, or the volume's end.
    Missing,
    /// The format keeps none (FAT12, FAT16; a FAT32 whose BPB names none).
    #[default]
    None,
}

crate::spelled_as_serde!(BackupState);
