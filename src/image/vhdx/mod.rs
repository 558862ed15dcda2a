//! VHDX (Hyper-V): the guest disk inside a dynamic or fixed VHDX, read as
//! qemu 7.2 reads it (block/vhdx.c, vhdx.h, vhdx-log.c) with the MS-VHDX
//! structures as qemu implements them. Every rule below was checked
//! against those files; the function named in a comment is where qemu
//! applies it.
//!
//! The first MiB holds the file identifier (`vhdxfile`), two 4 KiB headers
//! (at 64 and 128 KiB; the valid one with the higher sequence number is
//! current) and two copies of the 64 KiB region table (192 and 256 KiB),
//! which place the BAT and the metadata region. The metadata gives the
//! block size, the virtual size and the guest's logical and physical
//! sector sizes. The BAT holds one little-endian u64 per payload block (a
//! state in bits 0-2, the file offset in bits 20-63), with a sector bitmap
//! entry after every `chunk_ratio` of them. Headers, region tables and log
//! entries carry a CRC-32C.
//!
//! Not read, each refused in one line: a differencing VHDX (qemu cannot
//! read one either) and a file whose log holds entries not yet applied
//! (qemu replays them before reading and refuses to do so read-only).
//!
//! Where we part from qemu, each time on the specification's side: a
//! 4096-byte logical sector is read (qemu refuses all but 512), a damaged
//! first region table falls back to the second (qemu reads the first
//! only), metadata items must lie in their region apart from each other
//! (qemu reads them wherever they point), and the payload block checks
//! qemu runs over the whole BAT on open are run on the entries a read
//! meets, so that opening reads only the BAT pages it needs.
//!
//! One job a file: `regions.rs` picks the current header and reads the
//! region table, `log.rs` checks the log and refuses one to replay,
//! `metadata.rs` reads the metadata items, `bat.rs` sizes the BAT and
//! reads the guest's payload blocks through it. This file holds what they
//! share (the file's reads, regions, CRC-32C, GUIDs) and opens an image
//! with them.

mod bat;
mod log;
mod metadata;
mod regions;

use super::cache::Cache;
use super::{ByUnit, Chain, Container, ContainerFormat, ImageError, Opened};
use crate::bytes::SharedReader;
use crate::bytes::{read_bytes, ReadAt};
use bat::{bat_entries, Guest, BAT_CACHE_BYTES, SECTORS_PER_CHUNK};
use crc::{Crc, Table, CRC_32_ISCSI};
use log::check_log;
use metadata::metadata;
use regions::{current_header, region_table};
use std::path::Path;
use std::rc::Rc;

const IDENTIFIER: &str = "VHDX file identifier";
const HEADER: &str = "VHDX header";
const LOG: &str = "VHDX log";
const REGION_TABLE: &str = "VHDX region table";
const METADATA: &str = "VHDX metadata";
const BAT: &str = "VHDX BAT";

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
/// The header section (`VHDX_HEADER_SECTION_END`): nothing else lies here.
const HEADER_SECTION: u64 = MIB;
/// Region and metadata tables hold at most this many entries.
const MAX_TABLE_ENTRIES: u64 = 2047;

/// CRC-32C (Castagnoli), qemu's `crc32c`; sliced by 16, as a log entry's
/// CRC may cover MiBs.
const CASTAGNOLI: Crc<u32, Table<16>> = Crc::<u32, Table<16>>::new(&CRC_32_ISCSI);

/// A GUID as VHDX stores it, from its text form (qemu's `MSGUID`: the
/// first three fields little-endian, the last eight bytes as written).
const fn guid(text: &str) -> [u8; 16] {
    let s = text.as_bytes();
    let mut written = [0u8; 16];
    let (mut i, mut n) = (0, 0);
    while i < s.len() {
        if s[i] != b'-' {
            written[n / 2] = written[n / 2] << 4 | hex(s[i]);
            n += 1;
        }
        i += 1;
    }
    assert!(n == 32, "a GUID has 32 hex digits");
    let w = written;
    [
        w[3], w[2], w[1], w[0], w[5], w[4], w[7], w[6], w[8], w[9], w[10], w[11], w[12], w[13],
        w[14], w[15],
    ]
}

const fn hex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => panic!("not a hex digit"),
    }
}

/// Bytes `start..start + len` of the file, one of the structures that
/// must not overlap.
#[derive(Clone, Copy, Debug)]
struct Region {
    start: u64,
    len: u64,
}

impl Region {
    fn end(&self) -> u64 {
        self.start.saturating_add(self.len)
    }

    /// qemu's `vhdx_region_check`: whether `start..start + len` overlaps
    /// this region.
    fn overlaps(&self, start: u64, len: u64) -> bool {
        !(start >= self.end() || start.saturating_add(len) <= self.start)
    }
}

/// Reads of the container file, errors naming it.
struct File<'a> {
    src: &'a dyn ReadAt,
    path: &'a Path,
}

impl File<'_> {
    fn read(&self, layer: &'static str, at: u64, len: u64) -> Result<Vec<u8>, ImageError> {
        read_bytes(self.src, layer, at, len).map_err(|e| ImageError::new(self.path, e))
    }

    /// A read of one of two copies, failing with why in a few words.
    fn read_copy(&self, layer: &'static str, at: u64, len: u64) -> Result<Vec<u8>, String> {
        read_bytes(self.src, layer, at, len).map_err(|e| format!("cannot be read: {}", e.message))
    }

    fn err(&self, layer: &'static str, at: u64, message: impl Into<String>) -> ImageError {
        ImageError::parse(self.path, layer, at, message)
    }
}

/// Open a VHDX image.
pub fn open(src: SharedReader, path: &Path, _chain: &mut Chain) -> Result<Opened, ImageError> {
    let file = File { src: &*src, path };
    if file.read(IDENTIFIER, 0, 8)? != b"vhdxfile" {
        return Err(file.err(IDENTIFIER, 0, "signature is not \"vhdxfile\""));
    }
    let header = current_header(&file)?;
    let log = check_log(&file, &header)?;
    let regions = region_table(&file, log)?;
    let meta = metadata(&file, regions.metadata)?;
    let chunk_ratio = SECTORS_PER_CHUNK * u64::from(meta.logical) / meta.block_bytes;
    let bat_entries = bat_entries(&file, &regions, &meta, chunk_ratio)?;
    let container = Container {
        format: ContainerFormat::Vhdx,
        version: header.version.to_string(),
        subformat: Some(
            if meta.leave_allocated {
                "fixed"
            } else {
                "dynamic"
            }
            .into(),
        ),
        unit_bytes: Some(meta.block_bytes),
        virtual_size: meta.virtual_size,
        logical_sector_bytes: Some(meta.logical),
        physical_sector_bytes: Some(meta.physical),
        ..Container::default()
    };
    let guest = Guest {
        src,
        path: path.to_path_buf(),
        len: meta.virtual_size,
        block_bytes: meta.block_bytes,
        chunk_ratio,
        bat: Region {
            start: regions.bat.start,
            len: bat_entries * 8,
        },
        structures: [
            ("log", log),
            ("BAT", regions.bat),
            ("metadata", regions.metadata),
        ],
        cache: Cache::new(BAT_CACHE_BYTES),
    };
    Ok(Opened {
        container,
        guest: Some(Rc::new(ByUnit(guest))),
    })
}

/// The CRC-32C of `bytes` with the 4-byte checksum field at `field` taken
/// as zeros (qemu's `vhdx_checksum_calc`).
fn crc32c_without(bytes: &[u8], field: usize) -> u32 {
    let mut d = CASTAGNOLI.digest();
    d.update(&bytes[..field]);
    d.update(&[0; 4]);
    d.update(&bytes[field + 4..]);
    d.finalize()
}

#[cfg(test)]
mod test_support;

#[cfg(test)]
mod tests {
    use super::metadata::Item;
    use super::regions::BAT_GUID;
    use super::test_support::{error, Build};
    use super::MIB;

    #[test]
    fn guids_are_stored_as_qemu_writes_them() {
        // The bytes of the BAT region entry and the file parameters item
        // in an image qemu-img made.
        let bytes = |hex: &str| -> Vec<u8> {
            (0..32)
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect()
        };
        assert_eq!(BAT_GUID.to_vec(), bytes("6677c22d23f600429d64115e9bfd4a08"));
        assert_eq!(
            Item::FileParameters.guid().to_vec(),
            bytes("3767a1ca36fa434db3b633f0aa44e76b")
        );
    }

    #[test]
    fn truncated_files_fail_with_the_structure_they_lack() {
        let img = Build::default().bytes();
        for (len, want) in [
            (4, "VHDX file identifier at byte 0"),
            (66_000, "no valid header"),
            (100_000, "VHDX region table at byte 196608: no valid copy"),
            (
                3 * MIB as usize + 100,
                "VHDX metadata at byte 3145728: needs 65536 bytes",
            ),
        ] {
            let e = error(img[..len].to_vec());
            assert!(e.contains(want), "{len}: {e}");
        }
    }
}
