//! The NVMe Identify Namespace data structure (CNS 00h, 4096 bytes), the
//! fields that say how the namespace wants to be written. Offsets are the
//! NVM Command Set's, as libnvme's `struct nvme_id_ns` and the kernel's
//! (include/linux/nvme.h) lay them out; every multi-byte field is little
//! endian.

use crate::bytes::{le_u16, ParseError};
use serde::{Deserialize, Serialize};

const LAYER: &str = "NVMe Identify Namespace";

/// NSFEAT (byte 24) bit 1, NSABP: NAWUN, NAWUPF and NACWU apply to this
/// namespace (the kernel's NVME_NS_FEAT_ATOMICS).
pub const NSFEAT_ATOMICS: u8 = 1 << 1;
/// NSFEAT bit 4, OPTPERF: NPWG, NPWA, NPDG, NPDA and NOWS are defined
/// (the kernel's NVME_NS_FEAT_IO_OPT).
pub const NSFEAT_IO_OPT: u8 = 1 << 4;

/// Bytes read: through the last of the 64 LBA format descriptors (128..384).
const NEEDED: usize = 384;
const LBAF_AT: usize = 128;
/// At most 64 LBA formats (NLBAF is 0's based, 0..=63).
const MAX_FORMATS: usize = 64;

/// An LBA format's Relative Performance (bits 1:0 of its descriptor).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RelativePerformance {
    #[default]
    Best,
    Better,
    Good,
    Degraded,
}

crate::spelled_as_serde!(RelativePerformance);

impl RelativePerformance {
    fn from_bits(b: u8) -> Self {
        match b & 3 {
            0 => Self::Best,
            1 => Self::Better,
            2 => Self::Good,
            _ => Self::Degraded,
        }
    }
}

/// One LBA format descriptor (LBAF0..LBAF63).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LbaFormat {
    pub index: u8,
    /// 2^LBADS; None when LBADS is below 9 (the format is not supported,
    /// as the specification says of values below 512 bytes) or 64 and up.
    pub data_bytes: Option<u64>,
    /// MS: metadata bytes per logical block.
    pub metadata_bytes: u16,
    pub relative_performance: RelativePerformance,
    /// The format FLBAS selects.
    pub in_use: bool,
}

/// The fields of Identify Namespace diskalign reads. The granularity
/// fields keep the specification's 0's based counts of logical blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Namespace {
    pub nsfeat: u8,
    /// Number of LBA formats, 0's based.
    pub nlbaf: u8,
    pub flbas: u8,
    pub nawun: u16,
    pub nawupf: u16,
    pub nabo: u16,
    pub npwg: u16,
    pub npwa: u16,
    pub npdg: u16,
    pub npda: u16,
    pub nows: u16,
    pub lba_formats: Vec<LbaFormat>,
}

impl Namespace {
    /// NPWG, NPWA, NPDG, NPDA and NOWS are defined (NSFEAT bit 4).
    pub fn io_opt_fields(&self) -> bool {
        self.nsfeat & NSFEAT_IO_OPT != 0
    }

    /// NAWUN, NAWUPF and NACWU are defined (NSFEAT bit 1).
    pub fn atomics(&self) -> bool {
        self.nsfeat & NSFEAT_ATOMICS != 0
    }

    /// The format in use.
    pub fn in_use(&self) -> Option<&LbaFormat> {
        self.lba_formats.iter().find(|f| f.in_use)
    }

    /// The logical block size: the data size of the format in use.
    pub fn logical_block_bytes(&self) -> Option<u64> {
        self.in_use()?.data_bytes
    }

    /// The other supported formats whose Relative Performance is at least
    /// as good as the one in use (for advice on `nvme format --lbaf`,
    /// which erases the namespace).
    pub fn formats_at_least_as_fast(&self) -> Vec<&LbaFormat> {
        let Some(used) = self.in_use() else {
            return Vec::new();
        };
        self.lba_formats
            .iter()
            .filter(|f| !f.in_use && f.data_bytes.is_some())
            .filter(|f| f.relative_performance <= used.relative_performance)
            .collect()
    }

    /// A 0's based count of logical blocks in bytes.
    pub fn blocks_bytes(&self, zeros_based: u16) -> Option<u64> {
        self.logical_block_bytes()?
            .checked_mul(u64::from(zeros_based) + 1)
    }
}

/// The index FLBAS selects: bits 3:0, and bits 6:5 as its high bits
/// (NVMe 2.0, for more than 16 formats; the kernel's `nvme_lbaf_index`).
pub fn format_index(flbas: u8) -> u8 {
    (flbas & 0x0f) | ((flbas & 0x60) >> 1)
}

/// Parse the Identify Namespace data (at least its first 384 bytes).
pub fn parse_nvme(b: &[u8]) -> Result<Namespace, ParseError> {
    if b.len() < NEEDED {
        return Err(ParseError::new(
            LAYER,
            b.len() as u64,
            format!("needs {NEEDED} bytes, got {}", b.len()),
        ));
    }
    let nlbaf = b[25];
    let count = usize::from(nlbaf) + 1;
    if count > MAX_FORMATS {
        return Err(ParseError::new(
            LAYER,
            25,
            format!("NLBAF {nlbaf} counts more than {MAX_FORMATS} LBA formats"),
        ));
    }
    let flbas = b[26];
    let used = format_index(flbas);
    if usize::from(used) >= count {
        return Err(ParseError::new(
            LAYER,
            26,
            format!("FLBAS selects LBA format {used}, but NLBAF lists {count}"),
        ));
    }
    let lba_formats: Vec<LbaFormat> = (0..count).map(|i| lba_format(b, i, used)).collect();
    let at = LBAF_AT + 4 * usize::from(used) + 2;
    if lba_formats[usize::from(used)].data_bytes.is_none() {
        return Err(ParseError::new(
            LAYER,
            at as u64,
            format!(
                "the LBA format in use ({used}) has LBADS {}: no logical block size (an inactive namespace?)",
                b[at]
            ),
        ));
    }
    Ok(Namespace {
        nsfeat: b[24],
        nlbaf,
        flbas,
        nawun: le_u16(b, 34),
        nawupf: le_u16(b, 36),
        nabo: le_u16(b, 42),
        npwg: le_u16(b, 64),
        npwa: le_u16(b, 66),
        npdg: le_u16(b, 68),
        npda: le_u16(b, 70),
        nows: le_u16(b, 72),
        lba_formats,
    })
}

/// Descriptor `i`: MS (bytes 0-1), LBADS (byte 2), RP (byte 3, bits 1:0).
fn lba_format(b: &[u8], i: usize, used: u8) -> LbaFormat {
    let at = LBAF_AT + 4 * i;
    let lbads = b[at + 2];
    LbaFormat {
        index: i as u8,
        data_bytes: (9..64).contains(&lbads).then(|| 1u64 << lbads),
        metadata_bytes: le_u16(b, at),
        relative_performance: RelativePerformance::from_bits(b[at + 3]),
        in_use: i == usize::from(used),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Identify Namespace bytes laid out by hand (synthetic).
    fn synthetic(formats: &[(u16, u8, u8)], flbas: u8) -> Vec<u8> {
        let mut b = vec![0u8; 4096];
        b[25] = formats.len() as u8 - 1;
        b[26] = flbas;
        for (i, &(ms, lbads, rp)) in formats.iter().enumerate() {
            let at = 128 + 4 * i;
            b[at..at + 2].copy_from_slice(&ms.to_le_bytes());
            b[at + 2] = lbads;
            b[at + 3] = rp;
        }
        b
    }

    #[test]
    fn formats_and_the_one_in_use() {
        let mut b = synthetic(&[(0, 9, 2), (8, 9, 3), (0, 12, 0)], 2);
        b[24] = NSFEAT_IO_OPT | NSFEAT_ATOMICS;
        b[64..66].copy_from_slice(&3u16.to_le_bytes());
        b[66..68].copy_from_slice(&1u16.to_le_bytes());
        b[72..74].copy_from_slice(&15u16.to_le_bytes());
        b[36..38].copy_from_slice(&7u16.to_le_bytes());
        let ns = parse_nvme(&b).unwrap();
        assert_eq!(ns.nlbaf, 2);
        assert_eq!(ns.lba_formats.len(), 3);
        assert_eq!(ns.lba_formats[1].metadata_bytes, 8);
        assert_eq!(
            ns.lba_formats[1].relative_performance,
            RelativePerformance::Degraded
        );
        assert_eq!(ns.in_use().unwrap().index, 2);
        assert_eq!(ns.logical_block_bytes(), Some(4096));
        assert_eq!((ns.npwg, ns.npwa, ns.nows, ns.nawupf), (3, 1, 15, 7));
        assert_eq!(ns.blocks_bytes(ns.npwg), Some(16384));
        assert!(ns.io_opt_fields() && ns.atomics());
        // In use: 4096 at best; the 512 formats are slower.
        assert!(ns.formats_at_least_as_fast().is_empty());
        let b = synthetic(&[(0, 9, 2), (0, 12, 1), (0, 12, 3)], 0);
        let ns = parse_nvme(&b).unwrap();
        let faster: Vec<u8> = ns
            .formats_at_least_as_fast()
            .iter()
            .map(|f| f.index)
            .collect();
        assert_eq!(faster, [1]);
    }

    #[test]
    fn flbas_high_bits_select_formats_past_16() {
        assert_eq!(format_index(0x05), 5);
        assert_eq!(
            format_index(0x10 | 0x05),
            5,
            "bit 4 is the metadata setting"
        );
        assert_eq!(format_index(0x20 | 0x01), 17);
        assert_eq!(format_index(0x60 | 0x0f), 63);
    }

    #[test]
    fn refusals_name_the_byte() {
        assert_eq!(parse_nvme(&[0u8; 100]).unwrap_err().offset, 100);
        let zeros = parse_nvme(&[0u8; 4096]).unwrap_err();
        assert_eq!(zeros.offset, 130, "{zeros}");
        let mut b = synthetic(&[(0, 9, 0)], 1);
        assert_eq!(parse_nvme(&b).unwrap_err().offset, 26);
        b[25] = 64;
        assert_eq!(parse_nvme(&b).unwrap_err().offset, 25);
        let b = synthetic(&[(0, 70, 0)], 0);
        assert!(parse_nvme(&b).is_err(), "2^70 is no block size");
    }
}
