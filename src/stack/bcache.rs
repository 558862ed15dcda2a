//! bcache superblocks (the kernel's `include/uapi/linux/bcache.h`, struct
//! `cache_sb`, at sector 8): a backing device hands its data to
//! `/dev/bcacheN` from `data_offset` on, so that offset decides the
//! alignment of everything inside; a cache device keeps buckets of cached
//! blocks. Both write in `block_size` units.

use super::format::{Found, LayerFormat, Magic};
use super::region::Region;
use super::Detail;
use super::LayerKind;
use crate::bytes::{le_u16, le_u64, read_bytes, ParseError, ReadAt};
use serde::{Deserialize, Serialize};

const LAYER: &str = "bcache superblock";
/// Byte 4096: sector 8, where make-bcache and the kernel put it.
const AT: u64 = 4096;
const MAGIC: [u8; 16] = [
    0xc6, 0x85, 0x73, 0xf6, 0x4e, 0x1a, 0x45, 0xca, 0x82, 0x65, 0xf5, 0x7f, 0x48, 0xba, 0x6d, 0x81,
];
/// `BDEV_DATA_START_DEFAULT`: a backing device's data start before
/// version 4 (`BCACHE_SB_VERSION_BDEV_WITH_OFFSET`) recorded one.
const DEFAULT_DATA_SECTORS: u64 = 16;
/// The superblock's fixed part ends where the journal bucket list `d[]`
/// starts; the checksum covers bytes 8 .. 208 + 8 × keys.
const FIXED: usize = 208;
/// `SB_JOURNAL_BUCKETS`.
const MAX_KEYS: usize = 256;

/// bcache backing and cache devices.
pub static FORMAT: LayerFormat = LayerFormat {
    magics: &[Magic {
        offset: AT + 24,
        bytes: &MAGIC,
        what: "bcache superblock",
    }],
    probe,
    peeks: None,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BcacheRole {
    /// Holds the data; `/dev/bcacheN` shows it from `data_offset` on.
    Backing,
    /// Holds cached copies in buckets.
    Cache,
}

crate::spelled_as_serde!(BcacheRole);

/// What the superblock says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bcache {
    pub role: BcacheRole,
    /// The superblock's version (1 and 4: backing; 0, 3 and 5: cache...).
    pub version: u64,
    pub uuid: String,
    /// Where `/dev/bcacheN`'s data starts on a backing device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_offset_bytes: Option<u64>,
    /// The unit bcache reads and writes in.
    pub block_size_bytes: u64,
    /// A cache device's bucket (its unit of allocation and of erase).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_size_bytes: Option<u64>,
}

/// The bcache superblock on `src`, if any; a magic with a bad checksum or
/// impossible fields is an error.
pub fn read(src: &(impl ReadAt + ?Sized)) -> Result<Option<Bcache>, ParseError> {
    if src.len() < AT + 4096 {
        return Ok(None);
    }
    let b = read_bytes(src, LAYER, AT, 4096)?;
    if b[24..40] != MAGIC {
        return Ok(None);
    }
    let err = |at: usize, m: String| ParseError::new(LAYER, AT + at as u64, m);
    let keys = usize::from(le_u16(&b, 206));
    if keys > MAX_KEYS {
        return Err(err(
            206,
            format!("{keys} journal buckets, more than {MAX_KEYS}"),
        ));
    }
    let stored = le_u64(&b, 0);
    let computed = expected_checksum(&b).unwrap_or_default();
    if stored != computed {
        return Err(err(
            0,
            format!("checksum {stored:#018x} does not match the computed {computed:#018x}"),
        ));
    }
    let version = le_u64(&b, 16);
    let role = match version {
        1 | 4 | 6 => BcacheRole::Backing,
        0 | 3 | 5 => BcacheRole::Cache,
        v => return Err(err(16, format!("unknown version {v}"))),
    };
    let block_sectors = u64::from(le_u16(&b, 192));
    if block_sectors == 0 || !block_sectors.is_power_of_two() {
        return Err(err(192, format!("block size of {block_sectors} sectors")));
    }
    let data_offset_bytes = (role == BcacheRole::Backing)
        .then(|| {
            let sectors = if version >= 4 {
                le_u64(&b, 184)
            } else {
                DEFAULT_DATA_SECTORS
            };
            sectors
                .checked_mul(512)
                .filter(|&x| x >= AT + 4096 && x <= src.len())
                .ok_or_else(|| {
                    err(
                        184,
                        format!("data_offset {sectors} sectors is not within the device"),
                    )
                })
        })
        .transpose()?;
    Ok(Some(Bcache {
        role,
        version,
        uuid: uuid(&b[40..56]),
        data_offset_bytes,
        block_size_bytes: block_sectors * 512,
        bucket_size_bytes: (role == BcacheRole::Cache).then(|| u64::from(le_u16(&b, 194)) * 512),
    }))
}

/// bcache's `bch_crc64`: CRC-64/ECMA-182, not reflected, initial value and
/// final xor all ones (the `crc` crate's CRC_64_WE).
fn checksum(bytes: &[u8]) -> u64 {
    crc::Crc::<u64>::new(&crc::CRC_64_WE).checksum(bytes)
}

/// The checksum the superblock `sb` (the 4096 bytes at byte 4096) should
/// carry in its first 8 bytes; None when its key count is out of range.
/// The fuzz target uses it to reach the checks behind the checksum.
pub fn expected_checksum(sb: &[u8]) -> Option<u64> {
    let keys = usize::from(le_u16(sb.get(..FIXED)?, 206));
    (keys <= MAX_KEYS).then(|| checksum(sb.get(8..FIXED + 8 * keys).unwrap_or_default()))
}

/// Where the superblock starts.
pub const SUPERBLOCK_AT: u64 = AT;

fn uuid(b: &[u8]) -> String {
    let h: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        h[..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..].concat()
    )
}

fn probe(r: &Region, src: &dyn ReadAt) -> Option<Found> {
    match read(src) {
        Ok(Some(sb)) => {
            let name = format!("bcache {} device {}", sb.role, sb.uuid);
            let mut l = r.layer(LayerKind::Bcache, name);
            l.data_offset_bytes = sb.data_offset_bytes;
            // A backing device's data is readable in place: walk into it.
            let inside = sb.data_offset_bytes.map(|off| Region {
                offset: r.offset + off,
                len: r.len.saturating_sub(off),
                ..r.clone()
            });
            l.detail = Some(Detail::Bcache(sb));
            Some(Found {
                inside,
                ..Found::from(l)
            })
        }
        Ok(None) => None,
        Err(e) => r
            .damaged(LayerKind::Bcache, "bcache superblock", e)
            .map(Found::from),
    }
}
