//! Ceph BlueStore's block-device label, the 4 KiB at byte 0 of an OSD's
//! device (`bluestore_bdev_label_t` in ceph/ceph
//! `src/os/bluestore/bluestore_types.h`; `encode`/`decode` in
//! `bluestore_types.cc`; written by `BlueStore::_write_bdev_label` and
//! read by `BlueStore::_read_bdev_label` in `BlueStore.cc`):
//! - 60 bytes of text, "bluestore block device\n", the OSD's uuid
//!   (36 characters) and "\n", which `decode` skips;
//! - the `ENCODE_START(2, 1)` envelope: u8 version, u8 compat, u32 LE
//!   length of what follows (`DECODE_FINISH` skips to its end, so a newer
//!   writer's extra fields are passed over);
//! - the uuid's 16 bytes, u64 device size, `utime_t` birth time (u32
//!   seconds, u32 nanoseconds), the description ("main", "bluefs db",
//!   "bluefs wal") and, from version 2 on, the `meta` map
//!   (`ObjectStore::write_meta`'s keys), strings and the map each behind
//!   a u32 LE length or count;
//! - a u32 LE checksum of every byte before it: `ceph_crc32c(-1, ...)`,
//!   the Castagnoli CRC seeded with all ones and not inverted at the end
//!   (`ceph_crc32c_intel_baseline` in `src/common/crc32c_intel_baseline.c`),
//!   which is the bitwise NOT of the standard CRC-32C.
//!
//! `min_alloc_size` itself is kept in RocksDB; the label carries the
//! bitmap freelist's granularity, `bfm_bytes_per_block`, which
//! `BlueStore::_open_fm` creates from `min_alloc_size` at mkfs (so the
//! two are equal; ceph PR #17610). Checked on Debian's ceph-osd 16.2.15:
//! 4096 by default, 65536 with `--bluestore_min_alloc_size_hdd=65536`
//! (tests/bluestore.rs). Squid writes more copies further in when the
//! meta says `multi`; only the one at byte 0 is read here.

use super::format::{Found, LayerFormat, Magic};
use super::region::Region;
use super::{Detail, LayerKind};
use crate::bytes::{le_u32, le_u64, read_bytes, ParseError, ReadAt};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const LAYER: &str = "BlueStore label";
/// The label's first bytes (`bluestore_bdev_label_t::encode`).
pub const MAGIC: &[u8] = b"bluestore block device\n";
/// `BDEV_LABEL_BLOCK_SIZE`: the writer asserts the label fits in it.
pub const LABEL_BYTES: usize = 4096;
/// Magic, uuid text and newline, skipped by `decode` (`p += 60u`).
const PREAMBLE: usize = 60;
/// Where the fields start: after the preamble and the u8, u8, u32 envelope.
const FIELDS: usize = PREAMBLE + 6;
/// The newest envelope version this reader knows; `DECODE_START(2, p)`
/// refuses a label whose compat is above it, and so does this.
const STRUCT_V: u8 = 2;

/// Ceph BlueStore devices (libblkid's `ceph_bluestore` looks for the same
/// magic at byte 0).
pub static FORMAT: LayerFormat = LayerFormat {
    magics: &[Magic {
        offset: 0,
        bytes: MAGIC,
        what: "Ceph BlueStore device",
    }],
    probe,
    peeks: None,
};

/// What the label says, every meta key as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Bluestore {
    pub osd_uuid: String,
    /// The device size recorded when the label was last written.
    pub size_bytes: u64,
    /// Birth time, as `ceph-bluestore-tool show-label` prints it in UTC
    /// (`2026-12-02T19:39:14.480869+0000`).
    pub btime: String,
    /// "main", "bluefs db" or "bluefs wal".
    pub description: String,
    /// The allocation unit (`bfm_bytes_per_block`), when the label has it
    /// (the main device of an OSD made since 2017).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_alloc_size_bytes: Option<u64>,
    /// The meta map: `bfm_*`, `bluefs`, `ceph_fsid`, `kv_backend`,
    /// `whoami`, `require_osd_release` (when written), ...
    pub meta: BTreeMap<String, String>,
}

impl Bluestore {
    /// The OSD id (`whoami`).
    pub fn whoami(&self) -> Option<&str> {
        self.meta.get("whoami").map(String::as_str)
    }
}

/// A cursor over the label's fields that never reads past `end`.
struct Fields<'a> {
    b: &'a [u8],
    at: usize,
    end: usize,
}

impl Fields<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], ParseError> {
        let start = self.at;
        let stop = start.checked_add(n).filter(|&s| s <= self.end);
        let Some(stop) = stop else {
            return Err(err(
                start,
                format!(
                    "{what} needs {n} bytes, the label's fields end at byte {}",
                    self.end
                ),
            ));
        };
        self.at = stop;
        Ok(&self.b[start..stop])
    }

    fn u32(&mut self, what: &str) -> Result<u32, ParseError> {
        Ok(le_u32(self.take(4, what)?, 0))
    }

    fn u64(&mut self, what: &str) -> Result<u64, ParseError> {
        Ok(le_u64(self.take(8, what)?, 0))
    }

    /// A u32 length, then that many bytes: bounded by the label itself.
    fn string(&mut self, what: &str) -> Result<String, ParseError> {
        let n = self.u32(what)? as usize;
        Ok(String::from_utf8_lossy(self.take(n, what)?).into_owned())
    }
}

fn err(at: usize, m: String) -> ParseError {
    ParseError::new(LAYER, at as u64, m)
}

/// The label on `src`, if it starts with the magic; a label whose
/// envelope, fields or checksum do not hold is an error.
pub fn read(src: &(impl ReadAt + ?Sized)) -> Result<Option<Bluestore>, ParseError> {
    if src.len() < LABEL_BYTES as u64 {
        return Ok(None);
    }
    let b = read_bytes(src, LAYER, 0, LABEL_BYTES as u64)?;
    parse(&b)
}

/// The label in `b` (its first 4096 bytes), as [`read`] says.
pub fn parse(b: &[u8]) -> Result<Option<Bluestore>, ParseError> {
    let Some(b) = b.get(..LABEL_BYTES) else {
        return Ok(None);
    };
    if !b.starts_with(MAGIC) {
        return Ok(None);
    }
    let (v, compat) = (b[PREAMBLE], b[PREAMBLE + 1]);
    if compat > STRUCT_V || v < compat || v == 0 {
        return Err(err(
            PREAMBLE,
            format!("version {v} (compat {compat}); this reader knows up to {STRUCT_V}"),
        ));
    }
    let end = checksum_end(b).ok_or_else(|| {
        err(
            PREAMBLE + 2,
            format!(
                "fields of {} bytes do not fit in the {LABEL_BYTES}-byte label with their checksum",
                le_u32(b, PREAMBLE + 2)
            ),
        )
    })?;
    let stored = le_u32(b, end);
    let computed = checksum(&b[..end]);
    if stored != computed {
        return Err(err(
            end,
            format!("checksum {stored:#010x} does not match the computed {computed:#010x}"),
        ));
    }
    let mut f = Fields { b, at: FIELDS, end };
    let osd_uuid = uuid(f.take(16, "osd_uuid")?);
    let size_bytes = f.u64("size")?;
    let secs = f.u32("btime")?;
    let nanos = f.u32("btime")?;
    let description = f.string("description")?;
    let mut meta = BTreeMap::new();
    if v >= 2 {
        // Each entry takes at least 8 bytes, so the count is bounded by
        // the label before anything is stored.
        let count = f.u32("meta")?;
        for _ in 0..count {
            let key = f.string("a meta key")?;
            let value = f.string("a meta value")?;
            meta.insert(key, value);
        }
    }
    let min_alloc_size_bytes = meta
        .get("bfm_bytes_per_block")
        .map(|s| {
            s.parse::<u64>()
                .ok()
                .filter(|n| n.is_power_of_two())
                .ok_or_else(|| {
                    err(
                        FIELDS,
                        format!("bfm_bytes_per_block {s:?} is no power of two"),
                    )
                })
        })
        .transpose()?;
    Ok(Some(Bluestore {
        osd_uuid,
        size_bytes,
        btime: btime(secs, nanos),
        description,
        min_alloc_size_bytes,
        meta,
    }))
}

/// Where the checksum sits (the end of the envelope's fields) in the
/// label `b`, when it and the checksum fit in the label.
pub fn checksum_end(b: &[u8]) -> Option<usize> {
    let len = le_u32(b.get(..FIELDS)?, PREAMBLE + 2) as usize;
    FIELDS.checked_add(len).filter(|e| {
        e.checked_add(4)
            .is_some_and(|x| x <= LABEL_BYTES.min(b.len()))
    })
}

/// `ceph_crc32c(0xffffffff, bytes)`: CRC-32C seeded with all ones and
/// without the final inversion, i.e. the inverse of the standard value
/// (the `crc` crate's CRC_32_ISCSI). Public for the fuzz target, which
/// seals its inputs with it to reach the fields behind the checksum.
pub fn checksum(bytes: &[u8]) -> u32 {
    !crc::Crc::<u32>::new(&crc::CRC_32_ISCSI).checksum(bytes)
}

/// `utime_t` as `utime_t::localtime` prints it with the zone at UTC:
/// microseconds and a `+0000` offset.
fn btime(secs: u32, nanos: u32) -> String {
    let day = crate::units::rfc3339(u64::from(secs));
    let day = day.trim_end_matches('Z');
    format!("{day}.{:06}+0000", nanos / 1000)
}

/// The 16 bytes of a `uuid_d` in RFC order, as `uuid_d::to_string` prints it.
fn uuid(b: &[u8]) -> String {
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

fn probe(r: &Region, src: &dyn ReadAt) -> Option<Found> {
    match read(src) {
        Ok(Some(label)) => {
            let owner = label
                .whoami()
                .map_or_else(|| label.osd_uuid.clone(), |id| format!("osd.{id}"));
            let name = format!("BlueStore {} device of {owner}", label.description);
            let mut l = r.layer(LayerKind::Bluestore, name);
            l.detail = Some(Detail::Bluestore(label));
            Some(Found::from(l))
        }
        Ok(None) => None,
        Err(e) => r
            .damaged(LayerKind::Bluestore, "BlueStore label", e)
            .map(Found::from),
    }
}

#[cfg(test)]
mod tests;
