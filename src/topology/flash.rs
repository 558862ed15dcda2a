//! An SD card's or an eMMC's own words, as the kernel's mmc core shows
//! them under `/sys/block/mmcblkN/device/` (Documentation/mmc/
//! mmc-dev-attrs.rst; drivers/mmc/core/sd.c and mmc.c): its type, the CID
//! fields (name, manufacturer and OEM ids, date), and the two erase sizes.
//! `preferred_erase_size` is the unit flash is best written in: an SD
//! card's allocation unit from its SD Status (AU_SIZE), an eMMC's
//! high-capacity erase group, else the core's rule by capacity
//! (`mmc_init_erase` in drivers/mmc/core/core.c); `erase_size` the erase
//! group the card erases at least. The SD table of allocation units holds
//! 12 and 24 MiB: the unit need not be a power of two.

use crate::sys::{read_num, read_str};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// What kind of card: from sysfs `type` and the CSD's structure version
/// (its first two bits: 0 a standard-capacity SD, 1 SDHC or SDXC as its
/// capacity says, 2 SDUC; SD Physical Layer specification, 5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CardKind {
    Sd,
    Sdhc,
    Sdxc,
    Sduc,
    /// An MMC or eMMC.
    Mmc,
    /// `type` said something else (SDIO, SDcombo).
    Other,
}

crate::spelled_as_serde!(CardKind);

/// An SD card or eMMC as the kernel reads it (`flash` in the JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlashCard {
    pub kind: CardKind,
    /// The CID's product name (`name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `manfid` and `oemid` as the kernel prints them (0x...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manufacturer_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oem_id: Option<String>,
    /// Manufacturing date, `MM/YYYY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// The unit to write in (`preferred_erase_size`), bytes; 0 unread.
    pub preferred_erase_bytes: u64,
    /// The least it erases (`erase_size`), bytes; 0 unread.
    pub erase_bytes: u64,
    /// An SD card's row of the SD Association's table for its capacity:
    /// the cluster and boundary unit its file system should have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sd_table: Option<SdTableRow>,
}

/// The SD Association's recommended cluster and boundary unit for a
/// card's capacity (the table exfatprogs' mkfs.exfat(8) prints under
/// `--boundary-align`, from the SD Physical Layer specification's file
/// system part): a FAT's data area or an exFAT's heap starts on the
/// boundary unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SdTableRow {
    pub cluster_bytes: u64,
    pub boundary_unit_bytes: u64,
}

/// The table's rows: (largest capacity, cluster, boundary unit).
const SD_TABLE: [(u64, u64, u64); 9] = [
    (8 << 20, 8 << 10, 8 << 10),
    (64 << 20, 16 << 10, 16 << 10),
    (256 << 20, 16 << 10, 32 << 10),
    (1 << 30, 16 << 10, 64 << 10),
    (2 << 30, 32 << 10, 64 << 10),
    (32 << 30, 32 << 10, 4 << 20),
    (128 << 30, 128 << 10, 16 << 20),
    (512 << 30, 256 << 10, 32 << 20),
    (2 << 40, 512 << 10, 64 << 20),
];

/// The row for a card of `size_bytes`; None above 2 TiB.
pub fn sd_table_row(size_bytes: u64) -> Option<SdTableRow> {
    SD_TABLE.iter().find(|&&(max, _, _)| size_bytes <= max).map(
        |&(_, cluster_bytes, boundary_unit_bytes)| SdTableRow {
            cluster_bytes,
            boundary_unit_bytes,
        },
    )
}

/// 32 GiB: the largest SDHC (SD Physical Layer specification, 5.3.3).
const SDHC_MAX: u64 = 32 << 30;

/// The card behind a disk, when `dev` (its `device/` directory) is an
/// mmc card's: it has a `preferred_erase_size` or a CID.
pub fn read_card(dev: &Path, size_bytes: u64) -> Option<FlashCard> {
    let preferred = read_num::<u64>(&dev.join("preferred_erase_size"));
    let cid = read_str(&dev.join("cid"));
    if preferred.is_none() && cid.is_none() {
        return None;
    }
    let kind = match read_str(&dev.join("type")).as_deref() {
        Some("MMC") => CardKind::Mmc,
        Some("SD") => sd_kind(read_str(&dev.join("csd")).as_deref(), size_bytes),
        _ => CardKind::Other,
    };
    let sd = matches!(
        kind,
        CardKind::Sd | CardKind::Sdhc | CardKind::Sdxc | CardKind::Sduc
    );
    Some(FlashCard {
        sd_table: sd.then(|| sd_table_row(size_bytes)).flatten(),
        kind,
        name: read_str(&dev.join("name")),
        manufacturer_id: read_str(&dev.join("manfid")),
        oem_id: read_str(&dev.join("oemid")),
        date: read_str(&dev.join("date")),
        preferred_erase_bytes: preferred.unwrap_or(0),
        erase_bytes: read_num(&dev.join("erase_size")).unwrap_or(0),
    })
}

/// The SD kind from the CSD's structure version (the top two bits of its
/// first hex digit) and the capacity.
fn sd_kind(csd: Option<&str>, size_bytes: u64) -> CardKind {
    let version = csd
        .and_then(|c| c.chars().next())
        .and_then(|c| c.to_digit(16))
        .map(|d| d >> 2);
    match version {
        Some(0) => CardKind::Sd,
        Some(2) => CardKind::Sduc,
        _ if size_bytes > SDHC_MAX => CardKind::Sdxc,
        Some(1) => CardKind::Sdhc,
        _ => CardKind::Sd,
    }
}

impl FlashCard {
    /// One line for the reports: what it is, who made it, its units.
    pub fn line(&self) -> String {
        let mut who = Vec::new();
        if let Some(m) = &self.manufacturer_id {
            who.push(format!("manufacturer {m}"));
        }
        if let Some(o) = &self.oem_id {
            who.push(format!("OEM {o}"));
        }
        if let Some(d) = &self.date {
            who.push(format!("made {d}"));
        }
        let unit = |b: u64| match b {
            0 => "not given".to_string(),
            b => crate::units::exact(b),
        };
        format!(
            "{}{}{}: allocation unit {} (preferred_erase_size), erase group {} (erase_size)",
            self.described(),
            self.name
                .as_deref()
                .map(|n| format!(" {n}"))
                .unwrap_or_default(),
            if who.is_empty() {
                String::new()
            } else {
                format!(" ({})", who.join(", "))
            },
            unit(self.preferred_erase_bytes),
            unit(self.erase_bytes)
        )
    }

    /// How people name it: "SDHC card", "eMMC".
    pub fn described(&self) -> &'static str {
        match self.kind {
            CardKind::Sd => "SD card",
            CardKind::Sdhc => "SDHC card",
            CardKind::Sdxc => "SDXC card",
            CardKind::Sduc => "SDUC card",
            CardKind::Mmc => "MMC/eMMC",
            CardKind::Other => "mmc card",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_csd_version_and_capacity_name_the_card() {
        assert_eq!(sd_kind(Some("002e00325b5a83a9"), 1 << 30), CardKind::Sd);
        assert_eq!(sd_kind(Some("400e00325b59"), 16 << 30), CardKind::Sdhc);
        assert_eq!(sd_kind(Some("400e00325b59"), 64 << 30), CardKind::Sdxc);
        assert_eq!(sd_kind(Some("800e0032"), 4 << 40), CardKind::Sduc);
        assert_eq!(sd_kind(None, 8 << 30), CardKind::Sd);
    }

    #[test]
    fn a_card_is_read_from_its_device_directory() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(read_card(d, 0), None);
        for (f, v) in [
            ("type", "SD"),
            ("csd", "400e00325b5900007717ff800a800000"),
            ("name", "SD16G"),
            ("manfid", "0x000003"),
            ("oemid", "0x5344"),
            ("date", "01/2024"),
            ("preferred_erase_size", "4194304"),
            ("erase_size", "512"),
        ] {
            std::fs::write(d.join(f), format!("{v}\n")).unwrap();
        }
        let c = read_card(d, 16 << 30).unwrap();
        assert_eq!(c.kind, CardKind::Sdhc);
        assert_eq!(c.name.as_deref(), Some("SD16G"));
        assert_eq!((c.preferred_erase_bytes, c.erase_bytes), (4 << 20, 512));
        assert_eq!(c.described(), "SDHC card");
        assert_eq!(
            c.sd_table,
            Some(SdTableRow {
                cluster_bytes: 32 << 10,
                boundary_unit_bytes: 4 << 20
            })
        );
    }

    #[test]
    fn the_sd_table_has_a_row_for_every_capacity_to_2_tib() {
        let bu = |size: u64| sd_table_row(size).map(|r| r.boundary_unit_bytes);
        assert_eq!(bu(8 << 20), Some(8 << 10));
        assert_eq!(bu(16 << 30), Some(4 << 20));
        assert_eq!(bu(64 << 30), Some(16 << 20));
        assert_eq!(bu(256 << 30), Some(32 << 20));
        assert_eq!(bu(2 << 40), Some(64 << 20));
        assert_eq!(bu((2 << 40) + 1), None);
    }
}
