//! exFAT boot regions: the main boot sector's fields (Microsoft's "exFAT
//! file system specification", section 3.1 "Main and Backup Boot Sector
//! Structure") and the boot region's checksum (section 3.4). An exFAT's
//! clusters start at its ClusterHeapOffset, which mkfs.exfat's `-b`
//! places; the partition start decides nothing by itself.
//!
//! The checksum is the one exfatprogs computes and checks
//! (`lib/libexfat.c`, `boot_calc_checksum`; `fsck/fsck.c`,
//! `boot_region_checksum`, which compares every 32-bit word of sector 11):
//! a rotate-right-and-add over sectors 0 to 10 of the region, skipping the
//! boot sector's VolumeFlags (bytes 106, 107) and PercentInUse (byte 112),
//! which change while mounted; sector 11 repeats it in every 32-bit word.

use crate::bytes::{le_u32, le_u64, ParseError};
use serde::{Deserialize, Serialize};

const LAYER: &str = "exFAT boot sector";
const NAME: &[u8; 8] = b"EXFAT   ";
/// Sectors 0 to 10 are summed; sector 11 holds the sum.
const SUMMED_SECTORS: usize = 11;

/// What an exFAT main boot sector says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exfat {
    /// PartitionOffset: the volume's start on its disk in sectors, as the
    /// boot sector says (0: "ignore this field").
    pub volume_offset: u64,
    /// VolumeLength, in sectors.
    pub volume_length: u64,
    /// FatOffset and FatLength, in sectors.
    pub fat_offset: u32,
    pub fat_length: u32,
    /// ClusterHeapOffset, in sectors from the volume start.
    pub cluster_heap_offset: u32,
    pub cluster_count: u32,
    pub root_cluster: u32,
    pub serial: u32,
    pub bytes_per_sector_shift: u8,
    pub sectors_per_cluster_shift: u8,
    pub fats: u8,
    /// The boot region's checksum (sector 11's value, which matched).
    pub checksum: u32,
}

impl Exfat {
    pub fn sector_bytes(&self) -> u64 {
        1 << self.bytes_per_sector_shift
    }
    pub fn cluster_bytes(&self) -> u64 {
        1 << (self.bytes_per_sector_shift + self.sectors_per_cluster_shift)
    }
    /// Where the cluster heap starts, in bytes from the volume start.
    pub fn heap_offset_bytes(&self) -> u64 {
        u64::from(self.cluster_heap_offset) * self.sector_bytes()
    }
    pub fn fat_offset_bytes(&self) -> u64 {
        u64::from(self.fat_offset) * self.sector_bytes()
    }
    pub fn size_bytes(&self) -> u64 {
        self.volume_length.saturating_mul(self.sector_bytes())
    }
}

fn err(at: usize, m: impl Into<String>) -> ParseError {
    ParseError::new(LAYER, at as u64, m)
}

/// The checksum of a boot region: `region` holds at least its first 11
/// sectors of `sector` bytes.
pub fn boot_checksum(region: &[u8], sector: usize) -> Option<u32> {
    let summed = region.get(..SUMMED_SECTORS.checked_mul(sector)?)?;
    let mut sum = 0u32;
    for (i, &x) in summed.iter().enumerate() {
        if matches!(i, 106 | 107 | 112) {
            continue;
        }
        sum = sum.rotate_right(1).wrapping_add(u32::from(x));
    }
    Some(sum)
}

/// The main boot region at the start of `bytes`: its 12 sectors (up to
/// 48 KiB) are needed for the checksum.
pub fn parse(bytes: &[u8]) -> Result<Exfat, ParseError> {
    let b = bytes
        .get(..512)
        .ok_or_else(|| err(0, format!("needs 512 bytes, has {}", bytes.len())))?;
    if &b[3..11] != NAME {
        return Err(err(3, "no \"EXFAT   \" file system name"));
    }
    if b[510..512] != [0x55, 0xaa] {
        return Err(err(510, "no 0x55 0xaa boot signature"));
    }
    if let Some(i) = b[11..64].iter().position(|&x| x != 0) {
        return Err(err(11 + i, "MustBeZero is not zero (a FAT BPB?)"));
    }
    let x = fields(b)?;
    check_layout(&x)?;
    let sector = x.sector_bytes() as usize;
    let need = (SUMMED_SECTORS + 1) * sector;
    let region = bytes.get(..need).ok_or_else(|| {
        err(
            bytes.len(),
            format!("the boot region needs {need} bytes, has {}", bytes.len()),
        )
    })?;
    let sum = boot_checksum(region, sector).unwrap_or_default();
    let at = SUMMED_SECTORS * sector;
    for w in (at..need).step_by(4) {
        let stored = le_u32(region, w);
        if stored != sum {
            return Err(err(
                w,
                format!("boot checksum {stored:#010x}, but the region sums to {sum:#010x}"),
            ));
        }
    }
    Ok(Exfat { checksum: sum, ..x })
}

fn fields(b: &[u8]) -> Result<Exfat, ParseError> {
    let bpss = b[108];
    if !(9..=12).contains(&bpss) {
        return Err(err(108, format!("BytesPerSectorShift {bpss}, not 9 to 12")));
    }
    let spcs = b[109];
    if spcs > 25 - bpss {
        return Err(err(
            109,
            format!("SectorsPerClusterShift {spcs}: clusters above 32 MiB"),
        ));
    }
    let fats = b[110];
    if !(1..=2).contains(&fats) {
        return Err(err(110, format!("NumberOfFats {fats}")));
    }
    Ok(Exfat {
        volume_offset: le_u64(b, 64),
        volume_length: le_u64(b, 72),
        fat_offset: le_u32(b, 80),
        fat_length: le_u32(b, 84),
        cluster_heap_offset: le_u32(b, 88),
        cluster_count: le_u32(b, 92),
        root_cluster: le_u32(b, 96),
        serial: le_u32(b, 100),
        bytes_per_sector_shift: bpss,
        sectors_per_cluster_shift: spcs,
        fats,
        checksum: 0,
    })
}

/// The spec's ranges: the FATs after the boot regions, the heap after the
/// FATs, the clusters within the volume, the FAT long enough for them.
fn check_layout(x: &Exfat) -> Result<(), ParseError> {
    let min_len = (1u64 << 20) >> x.bytes_per_sector_shift;
    if x.volume_length < min_len {
        return Err(err(
            72,
            format!("VolumeLength {} sectors, under 1 MiB", x.volume_length),
        ));
    }
    if x.fat_offset < 24 {
        return Err(err(
            80,
            format!("FatOffset {}, inside the boot regions", x.fat_offset),
        ));
    }
    let fats_end = u64::from(x.fat_offset) + u64::from(x.fat_length) * u64::from(x.fats);
    if u64::from(x.cluster_heap_offset) < fats_end {
        return Err(err(
            88,
            format!(
                "ClusterHeapOffset {}, before the FATs end at sector {fats_end}",
                x.cluster_heap_offset
            ),
        ));
    }
    let spc = 1u64 << x.sectors_per_cluster_shift;
    let heap_end = u64::from(x.cluster_heap_offset) + u64::from(x.cluster_count) * spc;
    if heap_end > x.volume_length {
        return Err(err(
            92,
            format!(
                "ClusterCount {}: the heap ends at sector {heap_end}, past the volume's {}",
                x.cluster_count, x.volume_length
            ),
        ));
    }
    if x.cluster_count == 0 || x.cluster_count > 0xffff_fff5 {
        return Err(err(92, format!("ClusterCount {}", x.cluster_count)));
    }
    let fat_bytes = u64::from(x.fat_length) << x.bytes_per_sector_shift;
    if fat_bytes < (u64::from(x.cluster_count) + 2) * 4 {
        return Err(err(
            84,
            format!(
                "FatLength {} sectors, too short for {} clusters",
                x.fat_length, x.cluster_count
            ),
        ));
    }
    if x.root_cluster < 2 || u64::from(x.root_cluster) > u64::from(x.cluster_count) + 1 {
        return Err(err(
            96,
            format!("FirstClusterOfRootDirectory {}", x.root_cluster),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::boot_fixtures::fixture;

    /// dump.exfat's "Label:\t\tN" lines.
    fn said(txt: &str, label: &str) -> u64 {
        let line = txt.lines().find(|l| l.starts_with(label)).unwrap();
        let v = line.rsplit(['\t', ' ']).next().unwrap();
        match v.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).unwrap(),
            None => v.parse().unwrap_or_else(|_| panic!("{line}")),
        }
    }

    const ALL: [&str; 2] = ["exfat-c4K", "exfat-c128K-b"];

    #[test]
    fn every_field_is_what_dump_exfat_says() {
        for name in ALL {
            let (b, txt) = fixture(name);
            let x = parse(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(x.volume_length, said(&txt, "Volume Length"));
            assert_eq!(u64::from(x.fat_offset), said(&txt, "FAT Offset"));
            assert_eq!(u64::from(x.fat_length), said(&txt, "FAT Length"));
            let heap = said(&txt, "Cluster Heap Offset");
            assert_eq!(u64::from(x.cluster_heap_offset), heap, "{name}");
            assert_eq!(u64::from(x.cluster_count), said(&txt, "Cluster Count"));
            assert_eq!(u64::from(x.root_cluster), said(&txt, "Root Cluster"));
            assert_eq!(u64::from(x.serial), said(&txt, "Volume Serial"));
            let bits = said(&txt, "Sector Size Bits");
            assert_eq!(u64::from(x.bytes_per_sector_shift), bits);
            let spc = said(&txt, "Sector per Cluster bits");
            assert_eq!(u64::from(x.sectors_per_cluster_shift), spc);
            assert_eq!(x.heap_offset_bytes(), heap << bits);
            let made = txt.lines().next().unwrap();
            let want = if made.contains("-c 4K") {
                4096
            } else {
                128 << 10
            };
            assert_eq!(x.cluster_bytes(), want, "{made}");
            // mkfs.exfat's defaults: one FAT, no partition offset on a file.
            assert_eq!((x.fats, x.volume_offset), (1, 0));
        }
    }

    /// `-b 16M` is the boundary the FAT and the heap are aligned to.
    #[test]
    fn the_boundary_option_places_fat_and_heap() {
        let (b, _) = fixture("exfat-c128K-b");
        let x = parse(&b).unwrap();
        assert_eq!(x.fat_offset_bytes(), 16 << 20);
        assert_eq!(x.heap_offset_bytes(), 32 << 20);
    }

    fn refused(b: &[u8], at: usize) -> String {
        let e = parse(b).unwrap_err();
        assert_eq!((e.layer, e.offset), (LAYER, at as u64), "{e}");
        e.message
    }

    /// A changed field with the checksum sector fixed up, so the field's
    /// own check is what refuses it.
    fn resealed(good: &[u8], at: usize, v: &[u8]) -> Vec<u8> {
        let mut b = good.to_vec();
        b[at..at + v.len()].copy_from_slice(v);
        let sum = boot_checksum(&b, 512).unwrap();
        for w in (11 * 512..12 * 512).step_by(4) {
            b[w..w + 4].copy_from_slice(&sum.to_le_bytes());
        }
        b
    }

    #[test]
    fn the_checksum_is_checked_but_not_over_flags_and_use() {
        let (good, _) = fixture("exfat-c4K");
        let mut b = good.clone();
        b[106] ^= 2; // VolumeFlags: VolumeDirty
        b[112] = 37; // PercentInUse
        assert!(parse(&b).is_ok());
        let mut b = good.clone();
        b[600] ^= 1; // an extended boot sector
        assert!(refused(&b, 11 * 512).contains("checksum"));
        assert!(parse(&good[..12 * 512 - 1]).is_err());
    }

    #[test]
    fn a_heap_beyond_the_end_or_a_zero_cluster_is_refused() {
        let (good, _) = fixture("exfat-c4K");
        let x = parse(&good).unwrap();
        let more = (x.cluster_count + 1).to_le_bytes();
        assert!(refused(&resealed(&good, 92, &more), 92).contains("past the volume"));
        let far = (x.volume_length as u32).to_le_bytes();
        refused(&resealed(&good, 88, &far), 92);
        refused(&resealed(&good, 92, &0u32.to_le_bytes()), 92);
        refused(&resealed(&good, 109, &[17]), 109);
        refused(&resealed(&good, 108, &[8]), 108);
        refused(&resealed(&good, 110, &[0]), 110);
        refused(&resealed(&good, 84, &1u32.to_le_bytes()), 84);
        refused(&resealed(&good, 80, &8u32.to_le_bytes()), 80);
        refused(&resealed(&good, 96, &1u32.to_le_bytes()), 96);
        refused(&resealed(&good, 40, &[1]), 40);
    }

    #[test]
    fn garbage_and_truncations_never_panic() {
        let mut rng = fastrand::Rng::with_seed(50);
        for name in ALL {
            let (good, _) = fixture(name);
            for n in (0..=good.len()).step_by(7) {
                let _ = parse(&good[..n]);
            }
            for _ in 0..2000 {
                let mut b = good.clone();
                for _ in 0..rng.usize(1..6) {
                    let i = rng.usize(60..120);
                    b[i] = rng.u8(..);
                }
                let _ = parse(&resealed(&b, 0, &[b[0]]));
            }
        }
    }
}
