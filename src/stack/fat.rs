//! FAT12/16/32 boot sectors: the BIOS parameter block and, for FAT32, its
//! extension. Where a FAT's clusters start is not the partition start but
//! the end of its reserved sectors, its FATs and (FAT12/16) its fixed root
//! directory: the data area this parser derives. Layout and arithmetic:
//! Microsoft's "FAT: General Overview of On-Disk Format" (fatgen103,
//! section 3 "Boot Sector and BPB", and "FAT Type Determination").
//!
//! The FAT type follows dosfstools' fsck.fat (`src/boot.c`, `read_boot`):
//! FAT32 when the 16-bit FAT size is 0 and the 32-bit one is not (a FAT32
//! with fewer than 65525 clusters, which mkfs.fat makes on small volumes,
//! is only warned about there); otherwise FAT16 from 4085 clusters on
//! (`FAT12_THRESHOLD`), FAT12 below, and 65525 or more clusters
//! (`FAT16_THRESHOLD`) refused. What fsck.fat dies on there is refused
//! too: "Filesystem has N clusters but only space for M FAT entries" (a
//! FAT too short for the cluster count), "Root directory has zero size"
//! (FAT12/16 without root entries) and a root directory that "doesn't span
//! an integral number of sectors" (entries not a multiple of 16).

use crate::bytes::{le_u16, le_u32, ParseError};
use serde::{Deserialize, Serialize};

const LAYER: &str = "FAT boot sector";
/// Fewer clusters than this is FAT12 (fatgen103; dosfstools' `FAT12_THRESHOLD`).
const FAT12_THRESHOLD: u64 = 4085;
/// Fewer clusters than this is FAT16 (dosfstools' `FAT16_THRESHOLD`).
const FAT16_THRESHOLD: u64 = 65525;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FatType {
    Fat12,
    Fat16,
    Fat32,
}

crate::spelled_as_serde!(FatType);

/// What a FAT boot sector says, and where its data area starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fat {
    #[serde(rename = "type")]
    pub fat_type: FatType,
    pub bytes_per_sector: u32,
    pub sectors_per_cluster: u32,
    pub reserved_sectors: u32,
    pub fats: u32,
    /// FAT12/16's fixed root directory entries (0 on FAT32).
    pub root_entries: u32,
    /// TotSec16, or TotSec32 when it is 0.
    pub total_sectors: u64,
    /// FATSz16, or FATSz32 when it is 0.
    pub fat_sectors: u64,
    /// Sectors before the volume on its disk, as the boot sector says.
    pub hidden_sectors: u32,
    /// FAT32 only: the root directory's first cluster, the FSInfo sector
    /// and the backup boot sector (0 when there is none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_cluster: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsinfo_sector: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_boot_sector: Option<u32>,
    /// The volume serial, when the extended boot signature (0x29) is there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<u32>,
    /// Where the first FAT starts, in bytes from the volume start.
    pub fat_offset_bytes: u64,
    /// Where cluster 2 starts, in bytes from the volume start.
    pub data_offset_bytes: u64,
    pub cluster_count: u64,
}

impl Fat {
    pub fn cluster_bytes(&self) -> u64 {
        u64::from(self.bytes_per_sector) * u64::from(self.sectors_per_cluster)
    }
    pub fn size_bytes(&self) -> u64 {
        self.total_sectors * u64::from(self.bytes_per_sector)
    }
}

fn err(at: u64, m: impl Into<String>) -> ParseError {
    ParseError::new(LAYER, at, m)
}

/// The boot sector at the start of `bytes` (its first 512 bytes are read).
pub fn parse(bytes: &[u8]) -> Result<Fat, ParseError> {
    let b = bytes
        .get(..512)
        .ok_or_else(|| err(0, format!("needs 512 bytes, has {}", bytes.len())))?;
    if b[510..512] != [0x55, 0xaa] {
        return Err(err(510, "no 0x55 0xaa boot signature"));
    }
    if !matches!(b[0], 0xeb | 0xe9) {
        return Err(err(0, format!("no jump instruction (byte {:#04x})", b[0])));
    }
    let bps = u32::from(le_u16(b, 11));
    if !matches!(bps, 512 | 1024 | 2048 | 4096) {
        return Err(err(11, format!("{bps} bytes per sector")));
    }
    let spc = u32::from(b[13]);
    if spc == 0 || !spc.is_power_of_two() {
        return Err(err(13, format!("{spc} sectors per cluster")));
    }
    let reserved = u32::from(le_u16(b, 14));
    if reserved == 0 {
        return Err(err(14, "no reserved sectors (the boot sector is one)"));
    }
    let fats = u32::from(b[16]);
    if !(1..=2).contains(&fats) {
        return Err(err(16, format!("{fats} FATs")));
    }
    let root_entries = u32::from(le_u16(b, 17));
    let (fat16, fat32) = (u64::from(le_u16(b, 22)), u64::from(le_u32(b, 36)));
    let is32 = fat16 == 0 && fat32 != 0;
    let fat_sectors = if fat16 != 0 { fat16 } else { fat32 };
    if fat_sectors == 0 {
        return Err(err(22, "a FAT of 0 sectors"));
    }
    let (tot16, tot32) = (u64::from(le_u16(b, 19)), u64::from(le_u32(b, 32)));
    let total = if tot16 != 0 { tot16 } else { tot32 };
    if total == 0 {
        return Err(err(19, "0 sectors in total"));
    }
    let root_sectors = (u64::from(root_entries) * 32).div_ceil(u64::from(bps));
    let meta = u64::from(reserved) + u64::from(fats) * fat_sectors + root_sectors;
    if meta >= total {
        return Err(err(
            32,
            format!("{total} sectors in total, but the FATs and root end at sector {meta}"),
        ));
    }
    let clusters = (total - meta) / u64::from(spc);
    if clusters == 0 {
        return Err(err(13, "no room for a single cluster"));
    }
    if !is32 && (root_entries == 0 || root_entries % 16 != 0) {
        return Err(err(
            17,
            format!("{root_entries} root directory entries, not a multiple of 16 above 0"),
        ));
    }
    let fat_type = if is32 {
        FatType::Fat32
    } else if clusters >= FAT16_THRESHOLD {
        return Err(err(
            22,
            format!("{clusters} clusters, too many for FAT16, and no FAT32 size"),
        ));
    } else if clusters >= FAT12_THRESHOLD {
        FatType::Fat16
    } else {
        FatType::Fat12
    };
    let bits = match fat_type {
        FatType::Fat12 => 12,
        FatType::Fat16 => 16,
        FatType::Fat32 => 32,
    };
    let entries = fat_sectors * u64::from(bps) * 8 / bits;
    if clusters + 2 > entries {
        return Err(err(
            if is32 { 36 } else { 22 },
            format!("{clusters} clusters, but the FAT has room for {entries} entries"),
        ));
    }
    let mut fat = Fat {
        fat_type,
        bytes_per_sector: bps,
        sectors_per_cluster: spc,
        reserved_sectors: reserved,
        fats,
        root_entries,
        total_sectors: total,
        fat_sectors,
        hidden_sectors: le_u32(b, 28),
        root_cluster: None,
        fsinfo_sector: None,
        backup_boot_sector: None,
        serial: None,
        fat_offset_bytes: u64::from(reserved) * u64::from(bps),
        data_offset_bytes: meta * u64::from(bps),
        cluster_count: clusters,
    };
    let sig_at = if is32 { 66 } else { 38 };
    fat.serial = (b[sig_at] == 0x29).then(|| le_u32(b, sig_at + 1));
    if is32 {
        fat32_fields(b, &mut fat)?;
    }
    Ok(fat)
}

/// FAT32's extension: the root directory's cluster, FSInfo and the backup
/// boot sector, each within the volume's own bounds.
fn fat32_fields(b: &[u8], fat: &mut Fat) -> Result<(), ParseError> {
    if fat.root_entries != 0 {
        return Err(err(
            17,
            format!("{} root entries on FAT32", fat.root_entries),
        ));
    }
    let root = le_u32(b, 44);
    if root < 2 || u64::from(root) > fat.cluster_count + 1 {
        return Err(err(
            44,
            format!(
                "root directory at cluster {root}, not in 2..={}",
                fat.cluster_count + 1
            ),
        ));
    }
    let in_reserved = |v: u16| v == 0 || v == 0xffff || u32::from(v) < fat.reserved_sectors;
    let (fsinfo, backup) = (le_u16(b, 48), le_u16(b, 50));
    if !in_reserved(fsinfo) {
        return Err(err(
            48,
            format!("FSInfo at sector {fsinfo}, past the reserved sectors"),
        ));
    }
    if !in_reserved(backup) {
        return Err(err(
            50,
            format!("backup boot sector at sector {backup}, past the reserved sectors"),
        ));
    }
    let none = |v: u16| if v == 0xffff { 0 } else { u32::from(v) };
    fat.root_cluster = Some(root);
    fat.fsinfo_sector = Some(none(fsinfo));
    fat.backup_boot_sector = Some(none(backup));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::boot_fixtures::fixture;

    /// fsck.fat's "     N label" lines: the number before `label`.
    fn said(txt: &str, label: &str) -> u64 {
        let line = txt.lines().find(|l| l.contains(label)).unwrap();
        let n = line.split_whitespace().next().unwrap();
        n.parse().unwrap_or_else(|_| panic!("{line}"))
    }

    /// "Data area starts at byte N (sector S)" and the like.
    fn byte_of(txt: &str, label: &str) -> u64 {
        let line = txt.lines().find(|l| l.starts_with(label)).unwrap();
        let rest = &line[label.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    }

    const ALL: [&str; 5] = [
        "fat12",
        "fat16-s1",
        "fat32-s1",
        "fat32-s8-a-R33",
        "fat32-S4096",
    ];

    #[test]
    fn every_field_is_what_fsck_fat_says() {
        for name in ALL {
            let (b, txt) = fixture(name);
            let f = parse(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
            let bits = match f.fat_type {
                FatType::Fat12 => "12 bit entries",
                FatType::Fat16 => "16 bit entries",
                FatType::Fat32 => "32 bit entries",
            };
            assert!(txt.contains(bits), "{name}: {f:?}");
            assert_eq!(
                u64::from(f.bytes_per_sector),
                said(&txt, "bytes per logical sector")
            );
            assert_eq!(f.cluster_bytes(), said(&txt, "bytes per cluster"), "{name}");
            assert_eq!(u64::from(f.reserved_sectors), said(&txt, "reserved sector"));
            assert_eq!(u64::from(f.fats), said(&txt, "FATs,"));
            let fat_bytes = f.fat_sectors * u64::from(f.bytes_per_sector);
            assert_eq!(fat_bytes, said(&txt, "bytes per FAT"), "{name}");
            assert_eq!(
                f.fat_offset_bytes,
                byte_of(&txt, "First FAT starts at byte")
            );
            assert_eq!(
                f.data_offset_bytes,
                byte_of(&txt, "Data area starts at byte")
            );
            assert_eq!(f.cluster_count, said(&txt, "data clusters"), "{name}");
            assert_eq!(u64::from(f.hidden_sectors), said(&txt, "hidden sectors"));
            assert_eq!(f.total_sectors, said(&txt, "sectors total"));
            if f.fat_type == FatType::Fat32 {
                assert_eq!(f.root_entries, 0);
                let root = byte_of(&txt, "Root directory start at cluster");
                assert_eq!(f.root_cluster.map(u64::from), Some(root), "{name}");
                // mkfs.fat's FAT32 defaults (src/mkfs.fat.c): FSInfo in
                // sector 1, the backup boot sector in sector 6.
                assert_eq!((f.fsinfo_sector, f.backup_boot_sector), (Some(1), Some(6)));
            } else {
                assert_eq!(
                    u64::from(f.root_entries),
                    said(&txt, "root directory entries")
                );
                assert_eq!(f.root_cluster, None);
            }
            // blkid spells the serial "1234-ABCD".
            let uuid = txt.lines().nth(1).unwrap().replace('-', "");
            let serial = u32::from_str_radix(&uuid, 16).unwrap();
            assert_eq!(f.serial, Some(serial), "{name}");
        }
    }

    /// `-s 8 -a -R 33`: 4 KiB clusters whose data area is 512 bytes off 4 KiB
    /// from the volume's start (issue 50's table).
    #[test]
    fn the_data_area_is_where_the_reserved_sectors_and_fats_end() {
        let (b, _) = fixture("fat32-s8-a-R33");
        let f = parse(&b).unwrap();
        assert_eq!(f.data_offset_bytes, (33 + 2 * f.fat_sectors) * 512);
        assert_eq!(f.data_offset_bytes % 4096, 512);
    }

    fn set16(b: &mut [u8], at: usize, v: u16) {
        b[at..at + 2].copy_from_slice(&v.to_le_bytes());
    }

    fn refused(b: &[u8], at: u64) -> String {
        let e = parse(b).unwrap_err();
        assert_eq!((e.layer, e.offset), (LAYER, at), "{e}");
        e.message
    }

    #[test]
    fn bad_sizes_are_refused_with_their_byte() {
        let (good, _) = fixture("fat32-s8-a-R33");
        let mut b = good.clone();
        b[13] = 0;
        assert!(refused(&b, 13).contains("0 sectors per cluster"));
        b[13] = 6;
        refused(&b, 13);
        let mut b = good.clone();
        set16(&mut b, 11, 0);
        refused(&b, 11);
        set16(&mut b, 11, 768);
        refused(&b, 11);
        let mut b = good.clone();
        set16(&mut b, 14, 0);
        refused(&b, 14);
        let mut b = good.clone();
        b[16] = 0;
        refused(&b, 16);
        let mut b = good.clone();
        b[36..40].fill(0);
        refused(&b, 22);
        let mut b = good.clone();
        b[510] = 0;
        refused(&b, 510);
        assert!(parse(&good[..511]).is_err());
    }

    /// A cluster count that lies: the FATs reach past the volume's end, a
    /// FAT too short for the clusters the volume holds.
    #[test]
    fn a_lying_cluster_count_is_refused() {
        let (good, _) = fixture("fat32-s8-a-R33");
        let mut b = good.clone();
        b[32..36].copy_from_slice(&200u32.to_le_bytes());
        assert!(refused(&b, 32).contains("FATs and root end"));
        let mut b = good.clone();
        b[36..40].copy_from_slice(&8u32.to_le_bytes());
        assert!(refused(&b, 36).contains("room for"));
        let (good16, _) = fixture("fat16-s1");
        let mut b = good16.clone();
        set16(&mut b, 19, 0);
        b[32..36].copy_from_slice(&(1u32 << 20).to_le_bytes());
        assert!(refused(&b, 22).contains("too many for FAT16"));
        let mut b = good.clone();
        b[44..48].copy_from_slice(&1u32.to_le_bytes());
        refused(&b, 44);
        let mut b = good;
        set16(&mut b, 50, 40);
        refused(&b, 50);
        let mut b = good16.clone();
        set16(&mut b, 17, 0);
        refused(&b, 17);
        set16(&mut b, 17, 100);
        refused(&b, 17);
    }

    #[test]
    fn garbage_and_truncations_never_panic() {
        let mut rng = fastrand::Rng::with_seed(50);
        for name in ALL {
            let (good, _) = fixture(name);
            for n in 0..=good.len() {
                let _ = parse(&good[..n]);
            }
            for _ in 0..2000 {
                let mut b = good.clone();
                for _ in 0..rng.usize(1..6) {
                    let i = rng.usize(..64);
                    b[i] = rng.u8(..);
                }
                let _ = parse(&b);
            }
        }
    }
}
