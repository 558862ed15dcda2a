//! NTFS boot sectors: bytes per sector, the cluster size, the sectors
//! before the volume, its length and where $MFT and $MFTMirr start. The
//! checks follow ntfs-3g's `libntfs-3g/bootsect.c`
//! (`ntfs_boot_sector_is_ntfs`, `ntfs_boot_sector_parse`): the BPB's FAT
//! fields must be zero, sectors per cluster is a power of two up to 128 or,
//! above 128, a negative shift (0xF4 is 2^12 sectors: 2 MiB clusters with
//! 512-byte sectors, mkntfs' largest), and clusters per MFT record is a
//! count of clusters when positive and a power of two in bytes, 2^-n, when
//! negative (0xF6: 1024 bytes).

use crate::bytes::{le_u16, le_u32, le_u64, ParseError};
use serde::{Deserialize, Serialize};

const LAYER: &str = "NTFS boot sector";
const OEM: &[u8; 8] = b"NTFS    ";
/// The largest cluster Windows and mkntfs make.
const MAX_CLUSTER: u64 = 2 << 20;
/// An MFT record's size bounds (ntfs-3g reads 256 B to 64 KiB ones).
const MFT_RECORD: std::ops::RangeInclusive<u64> = 256..=(64 << 10);

/// What an NTFS boot sector says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ntfs {
    pub bytes_per_sector: u32,
    /// Decoded from the stored byte (`sectors_per_cluster_raw`).
    pub sectors_per_cluster: u32,
    pub sectors_per_cluster_raw: u8,
    pub hidden_sectors: u32,
    /// The volume's sectors, not counting the backup boot sector that
    /// mkntfs puts in the partition's last sector after them.
    pub total_sectors: u64,
    pub mft_lcn: u64,
    pub mftmirr_lcn: u64,
    /// The stored signed byte, and the record size it means.
    pub clusters_per_mft_record: i8,
    pub mft_record_bytes: u64,
    pub serial: u64,
}

impl Ntfs {
    pub fn cluster_bytes(&self) -> u64 {
        u64::from(self.bytes_per_sector) * u64::from(self.sectors_per_cluster)
    }
    pub fn size_bytes(&self) -> u64 {
        self.total_sectors
            .saturating_mul(u64::from(self.bytes_per_sector))
    }
    pub fn clusters(&self) -> u64 {
        self.total_sectors / u64::from(self.sectors_per_cluster)
    }
}

fn err(at: u64, m: impl Into<String>) -> ParseError {
    ParseError::new(LAYER, at, m)
}

/// The sectors per cluster a stored byte means: 1 to 128 as they are,
/// above 128 a negative power of two (`1 << (256 - v)`).
pub fn decode_sectors_per_cluster(v: u8) -> Option<u32> {
    match v {
        0 => None,
        1..=128 => v.is_power_of_two().then_some(u32::from(v)),
        _ => 1u32.checked_shl(256 - u32::from(v)),
    }
}

/// The boot sector at the start of `bytes` (its first 512 bytes are read).
pub fn parse(bytes: &[u8]) -> Result<Ntfs, ParseError> {
    let b = bytes
        .get(..512)
        .ok_or_else(|| err(0, format!("needs 512 bytes, has {}", bytes.len())))?;
    if &b[3..11] != OEM {
        return Err(err(3, "no \"NTFS    \" OEM id"));
    }
    if b[510..512] != [0x55, 0xaa] {
        return Err(err(510, "no 0x55 0xaa boot signature"));
    }
    let bps = u32::from(le_u16(b, 11));
    if !(256..=4096).contains(&bps) || !bps.is_power_of_two() {
        return Err(err(11, format!("{bps} bytes per sector")));
    }
    let raw = b[13];
    let spc = decode_sectors_per_cluster(raw)
        .filter(|&s| u64::from(s) * u64::from(bps) <= MAX_CLUSTER)
        .ok_or_else(|| err(13, format!("sectors per cluster byte {raw:#04x}")))?;
    // Reserved sectors, FATs, root entries, 16-bit sectors, FAT size and
    // 32-bit sectors: ntfs-3g refuses a boot sector with any of them set.
    for (at, len) in [(14, 2), (16, 1), (17, 2), (19, 2), (22, 2), (32, 4)] {
        if b[at..at + len].iter().any(|&x| x != 0) {
            return Err(err(at as u64, "a FAT field of the BPB is not zero"));
        }
    }
    let total = le_u64(b, 40);
    let clusters = total / u64::from(spc);
    if clusters == 0 {
        return Err(err(40, format!("{total} sectors, not one cluster")));
    }
    let (mft, mirr) = (le_u64(b, 48), le_u64(b, 56));
    for (at, lcn) in [(48, mft), (56, mirr)] {
        if lcn == 0 || lcn >= clusters {
            return Err(err(
                at,
                format!("cluster {lcn}, outside the volume's {clusters} clusters"),
            ));
        }
    }
    let cpm = b[64] as i8;
    let cluster = u64::from(spc) * u64::from(bps);
    let record = mft_record_bytes(cpm, cluster)
        .filter(|r| MFT_RECORD.contains(r))
        .ok_or_else(|| err(64, format!("clusters per MFT record {cpm}")))?;
    Ok(Ntfs {
        bytes_per_sector: bps,
        sectors_per_cluster: spc,
        sectors_per_cluster_raw: raw,
        hidden_sectors: le_u32(b, 28),
        total_sectors: total,
        mft_lcn: mft,
        mftmirr_lcn: mirr,
        clusters_per_mft_record: cpm,
        mft_record_bytes: record,
        serial: le_u64(b, 72),
    })
}

/// A record of `v` clusters when positive (a power of two), of 2^-v bytes
/// when negative.
fn mft_record_bytes(v: i8, cluster: u64) -> Option<u64> {
    match v {
        1.. => (v as u8)
            .is_power_of_two()
            .then(|| u64::from(v as u8) * cluster),
        0 => None,
        _ => 1u64.checked_shl(u32::from(v.unsigned_abs())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::boot_fixtures::fixture;

    /// ntfsinfo's "\tLabel: N" lines.
    fn said(txt: &str, label: &str) -> u64 {
        let line = txt
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap();
        let v = line.rsplit(' ').next().unwrap();
        v.parse().unwrap_or_else(|_| panic!("{line}"))
    }

    /// An option's value on the fixture's "made with: mkntfs ..." line.
    fn option(txt: &str, flag: &str) -> Option<u64> {
        let made: Vec<&str> = txt.lines().next().unwrap().split(' ').collect();
        let i = made.iter().position(|&w| w == flag)?;
        made.get(i + 1)?.parse().ok()
    }

    const ALL: [&str; 4] = ["ntfs-c512", "ntfs-c4096", "ntfs-c65536", "ntfs-c2M"];

    #[test]
    fn every_field_is_what_ntfsinfo_says() {
        for name in ALL {
            let (b, txt) = fixture(name);
            let n = parse(&b).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(u64::from(n.bytes_per_sector), said(&txt, "Sector Size:"));
            assert_eq!(n.cluster_bytes(), said(&txt, "Cluster Size:"), "{name}");
            assert_eq!(Some(n.cluster_bytes()), option(&txt, "-c"));
            assert_eq!(n.clusters(), said(&txt, "Volume Size in Clusters:"));
            assert_eq!(n.mft_record_bytes, said(&txt, "MFT Record Size:"));
            assert_eq!(n.mft_lcn, said(&txt, "LCN of Data Attribute for FILE_MFT:"));
            let mirr = said(&txt, "LCN of Data Attribute for File_MFTMirr:");
            assert_eq!(n.mftmirr_lcn, mirr);
            let p = option(&txt, "-p").unwrap_or(0);
            assert_eq!(u64::from(n.hidden_sectors), p, "{name}");
            let s = option(&txt, "-s").unwrap_or(512);
            assert_eq!(u64::from(n.bytes_per_sector), s);
            // blkid spells the serial as 16 hex digits.
            let uuid = txt.lines().nth(1).unwrap();
            assert_eq!(format!("{:016X}", n.serial), uuid, "{name}");
        }
    }

    /// 2 MiB clusters of 512-byte sectors: 4096 sectors, stored as 0xF4.
    #[test]
    fn large_clusters_are_a_negative_shift() {
        let (b, _) = fixture("ntfs-c2M");
        let n = parse(&b).unwrap();
        assert_eq!(
            (n.sectors_per_cluster_raw, n.sectors_per_cluster),
            (0xf4, 4096)
        );
        let decoded: Vec<_> = (0xf4..=0xf9).map(decode_sectors_per_cluster).collect();
        let want = [4096, 2048, 1024, 512, 256, 128].map(Some);
        assert_eq!(decoded, want);
        assert_eq!(decode_sectors_per_cluster(0), None);
        assert_eq!(decode_sectors_per_cluster(3), None);
        assert_eq!(decode_sectors_per_cluster(0x81), None);
    }

    fn refused(b: &[u8], at: u64) -> String {
        let e = parse(b).unwrap_err();
        assert_eq!((e.layer, e.offset), (LAYER, at), "{e}");
        e.message
    }

    #[test]
    fn bad_sizes_and_clusters_beyond_the_end_are_refused() {
        let (good, _) = fixture("ntfs-c4096");
        let n = parse(&good).unwrap();
        let mut b = good.clone();
        b[13] = 0;
        refused(&b, 13);
        b[13] = 0xf0; // 64 Ki sectors: 32 MiB clusters
        refused(&b, 13);
        let mut b = good.clone();
        b[11..13].copy_from_slice(&0u16.to_le_bytes());
        refused(&b, 11);
        b[11..13].copy_from_slice(&1536u16.to_le_bytes());
        refused(&b, 11);
        let mut b = good.clone();
        b[48..56].copy_from_slice(&n.clusters().to_le_bytes());
        assert!(refused(&b, 48).contains("outside the volume"));
        let mut b = good.clone();
        b[56..64].copy_from_slice(&u64::MAX.to_le_bytes());
        refused(&b, 56);
        let mut b = good.clone();
        b[40..48].fill(0);
        refused(&b, 40);
        let mut b = good.clone();
        b[64] = 0;
        refused(&b, 64);
        b[64] = 3;
        refused(&b, 64);
        b[64] = 0xe0; // 2^32 bytes
        refused(&b, 64);
        let mut b = good.clone();
        b[16] = 2; // a FAT count: a FAT volume's BPB
        refused(&b, 16);
        let mut b = good.clone();
        b[511] = 0;
        refused(&b, 510);
        assert!(parse(&good[..300]).is_err());
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
                    let i = rng.usize(11..80);
                    b[i] = rng.u8(..);
                }
                let _ = parse(&b);
            }
        }
    }
}
