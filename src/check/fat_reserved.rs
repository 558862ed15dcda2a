//! The reserved-sector count that puts a FAT32's data area on a flash
//! card's allocation unit when mkfs.fat makes it, as the SD Association's
//! formatter places it: mkfs.fat has no option for a boundary, but its
//! data area starts `reserved + 2 × FAT length` sectors into the volume,
//! and `-R` sets the first.
//!
//! The FAT length is mkfs.fat's own arithmetic (dosfstools
//! `src/mkfs.fat.c`, `setup_tables`, FAT32 branch), which this follows
//! with `-a` given: without it mkfs.fat also rounds the sector count down
//! to a whole track of the device's geometry (which a plan cannot know:
//! a size that is on a boundary for one track length is off it for
//! another) and the reserved sectors and the FAT up to whole clusters.
//! With `-a` the clusters are `((sectors − reserved) × sector + 2 × 8) /
//! (cluster + 2 × 4)` and the FAT length `⌈(clusters + 2) × 4 / sector⌉`,
//! nothing rounded, so the data area is exactly `reserved + 2 × FAT`.

/// The largest `-R` mkfs.fat takes (a 16-bit field).
const MOST_RESERVED: u64 = 65_535;
/// mkfs.fat's own FAT32 default, kept as the least.
const LEAST_RESERVED: u64 = 32;
/// Fewer clusters make a FAT16 by Microsoft's rule of the FAT type
/// (dosfstools' MIN_CLUST_32): mkfs.fat -F 32 still makes it, warning,
/// and Windows reads it as FAT16. No such count is proposed.
const MIN_CLUSTERS: u64 = 65_525;

/// The FAT length `mkfs.fat -a` gives a FAT32 of `sectors` sectors of
/// `bps` bytes, `spc` sectors per cluster, `reserved` reserved sectors
/// and two FATs.
fn fat_length(sectors: u64, bps: u64, spc: u64, reserved: u64) -> Option<u64> {
    let data = sectors.checked_sub(reserved)?;
    let clusters = (data * bps + 2 * 8) / (spc * bps + 2 * 4);
    (clusters >= MIN_CLUSTERS).then(|| ((clusters + 2) * 4).div_ceil(bps))
}

/// The `-R` for `mkfs.fat -F 32 -s spc -a` on a volume of `sectors` sectors
/// of `bps` bytes starting `start` bytes into the device, whose data area
/// then starts on a multiple of `unit` bytes of the device; None where
/// no count up to mkfs.fat's limit does, or where the FAT32 would have
/// fewer than 65,525 clusters of `spc` sectors.
pub fn fat32_reserved(sectors: u64, bps: u64, spc: u64, start: u64, unit: u64) -> Option<u64> {
    if bps == 0 || spc == 0 || unit == 0 || unit % bps != 0 || start % bps != 0 {
        return None;
    }
    let (u, s0) = (unit / bps, start / bps);
    // The FAT shrinks by at most a sector as the reserved count grows by
    // one, so the data area's start moves by 1 or -1: every residue
    // is met within a unit's worth of counts.
    (LEAST_RESERVED..=MOST_RESERVED.min(LEAST_RESERVED + 2 * u))
        .find(|&r| fat_length(sectors, bps, spc, r).is_some_and(|f| (s0 + r + 2 * f) % u == 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MIB;

    /// The data area's first sector as mkfs.fat would place it.
    fn data_at(sectors: u64, spc: u64, r: u64) -> u64 {
        r + 2 * fat_length(sectors, 512, spc, r).unwrap()
    }

    #[test]
    fn the_data_area_lands_on_the_unit_for_every_card_unit() {
        for unit in [4 * MIB, 8 * MIB, 12 * MIB, 16 * MIB] {
            for (size, spc) in [
                (300 * MIB, 1),
                (1000 * MIB, 8),
                (3 << 30, 64),
                ((15 << 30) + 4 * MIB, 64),
            ] {
                let sectors = size / 512;
                let r = fat32_reserved(sectors, 512, spc, 4 * MIB, unit)
                    .unwrap_or_else(|| panic!("{unit} {size}"));
                assert!((32..=65535).contains(&r));
                assert_eq!((4 * MIB / 512 + data_at(sectors, spc, r)) % (unit / 512), 0);
            }
        }
    }

    #[test]
    fn a_start_off_the_unit_is_made_up_for() {
        let r = fat32_reserved(2 << 21, 512, 8, MIB, 4 * MIB).unwrap();
        assert_eq!((2048 + data_at(2 << 21, 8, r)) % 8192, 0);
    }

    #[test]
    fn nonsense_has_no_answer() {
        assert_eq!(fat32_reserved(1 << 21, 512, 8, 0, 0), None);
        assert_eq!(fat32_reserved(1 << 21, 512, 8, 100, 4 * MIB), None);
        assert_eq!(fat32_reserved(10, 512, 8, 0, 4 * MIB), None);
        // 256 MiB of 4 KiB clusters is a FAT16's count: none; of 512 B, one.
        assert_eq!(fat32_reserved(1 << 19, 512, 8, MIB, 4 * MIB), None);
        assert!(fat32_reserved(1 << 19, 512, 1, MIB, 4 * MIB).is_some());
    }
}
