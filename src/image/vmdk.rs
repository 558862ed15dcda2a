//! VMDK: the guest disk inside VMware's virtual disk files, read as qemu's
//! `block/vmdk.c` reads them (each rule cites the function it follows),
//! with VMware's "Virtual Disk Format 1.1" where qemu leaves a case out.
//!
//! A VMDK is one of
//! - a hosted sparse extent file (`KDMV`; VMFS's older `COWD`) holding the
//!   whole disk, its descriptor embedded: monolithicSparse,
//!   streamOptimized (grains compressed with zlib, the grain directory
//!   maybe in a footer at the end);
//! - a text descriptor (`# Disk DescriptorFile`) naming extent files one
//!   after the other: FLAT (raw bytes at an offset), SPARSE (a hosted
//!   sparse extent file), ZERO (no file): monolithicFlat,
//!   twoGbMaxExtentSparse, twoGbMaxExtentFlat, vmfs.
//!
//! A sparse extent maps its grains through a grain directory (GD) of grain
//! table (GT) sectors and grain tables of grain sectors: entry 0 is
//! unallocated (the parent's bytes, `parentFileNameHint`, or zeros), entry
//! 1 a zeroed grain where the header's zeroed-grain flag is set.
//!
//! Only what a read touches is read: the GD in 4 KiB pages, the grain
//! tables and the grains of the bytes asked for, the tables and the
//! decompressed grains kept in bounded caches.

use super::cache::Cache;
use super::{
    read_error, ByUnit, Chain, Container, ContainerFormat, Fallback, ImageError, Opened, Units,
};
use crate::bytes::{le_u16, le_u32, le_u64, ReadAt};
use crate::stack::in_bounds;
use crate::stack::{Mapped, SharedReader};
use flate2::{Decompress, FlushDecompress, Status};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

const SECTOR: u64 = 512;

const LAYER_HEADER: &str = "VMDK header";
const LAYER_DESCRIPTOR: &str = "VMDK descriptor";
const LAYER_GD: &str = "VMDK grain directory";
const LAYER_GT: &str = "VMDK grain table";
const LAYER_COMPRESSED: &str = "VMDK compressed grain";

/// qemu's `VMDK4Header` after the magic, 75 bytes (packed).
const KDMV_HEADER_LEN: usize = 79;
const KDMV_VERSION: usize = 4;
const KDMV_FLAGS: usize = 8;
const KDMV_CAPACITY: usize = 12;
const KDMV_GRAIN_SIZE: usize = 20;
const KDMV_DESCRIPTOR_OFFSET: usize = 28;
const KDMV_DESCRIPTOR_SIZE: usize = 36;
const KDMV_GTES_PER_GT: usize = 44;
const KDMV_GD_OFFSET: usize = 56;
const KDMV_OVERHEAD: usize = 64;
const KDMV_COMPRESS_ALGORITHM: usize = 77;

/// qemu's `VMDK3Header` after the magic (VMFS sparse, `COWD`).
const COWD_HEADER_LEN: usize = 44;
const COWD_VERSION: usize = 4;
const COWD_CAPACITY: usize = 12;
const COWD_GRAIN_SIZE: usize = 16;
const COWD_GD_OFFSET: usize = 20;
const COWD_GD_ENTRIES: usize = 24;
/// A COWD grain table always has 4096 entries (`vmdk_open_vmfs_sparse`).
const COWD_GTES_PER_GT: u64 = 4096;

/// Header flags (qemu's `VMDK4_FLAG_*`).
const FLAG_ZERO_GRAIN: u32 = 1 << 2;
const FLAG_MARKERS: u32 = 1 << 17;
/// `compressAlgorithm` 1: deflate in a zlib stream. qemu tells compressed
/// grains by this field alone, not by flag bit 16 (`vmdk_open_vmdk4`).
const COMPRESSION_DEFLATE: u16 = 1;
/// The header's gdOffset when the grain directory is found through the
/// footer (`VMDK4_GD_AT_END`).
const GD_AT_END: u64 = u64::MAX;
/// A grain table entry of 1 in an extent with the zeroed-grain flag: the
/// grain reads as zeros, not from the parent (`VMDK_GTE_ZEROED`).
const GTE_ZEROED: u32 = 1;

/// The stream markers' types (qemu's `MARKER_*`).
const MARKER_END_OF_STREAM: u32 = 0;
const MARKER_FOOTER: u32 = 3;

/// qemu refuses more than 512 entries a grain table (`vmdk_open_vmdk4`,
/// "L2 table size too big").
const MAX_GTES_PER_GT: u64 = 512;
/// qemu refuses grains over 1 GiB (`vmdk_add_extent`, "Invalid
/// granularity"). It does not ask for a power of two, nor do we.
const MAX_GRAIN_SECTORS: u64 = 0x20_0000;
/// qemu refuses grain directories over 32 Mi entries (`vmdk_add_extent`,
/// "L1 size too big"): 8 TiB with the smallest grains and tables.
const MAX_GD_ENTRIES: u64 = 32 << 20;
/// A compressed grain is decompressed whole, so its size is bounded where
/// qemu's 1 GiB is not: 16 MiB is 256 times the 64 KiB grain every
/// streamOptimized writer (VMware, VirtualBox, qemu) uses, and inflates
/// in milliseconds.
const MAX_COMPRESSED_GRAIN: u64 = 16 << 20;
/// qemu reads a descriptor file's first 1 MiB - 1 (`vmdk_read_desc`);
/// real descriptors take a few hundred bytes (qemu writes 20 sectors at
/// most for an embedded one). A longer descriptor file is refused, not
/// cut, so no extent line is silently dropped.
const MAX_DESCRIPTOR: u64 = (1 << 20) - 1;
/// An 8 TiB disk (VMware Workstation's largest) in 2 GiB extents.
const MAX_EXTENTS: usize = 4096;
/// qemu's disk lengths are int64 bytes.
const MAX_DISK_BYTES: u64 = i64::MAX as u64;

/// The GD is read in pages of this many bytes.
const GD_PAGE: u64 = 4096;
const TABLE_CACHE_BYTES: usize = 512 << 10;
const GRAIN_CACHE_BYTES: usize = 2 << 20;

/// Open a VMDK: a sparse extent file (`KDMV`, `COWD`) or a text
/// descriptor, its extents and its parent.
pub fn open(src: SharedReader, path: &Path, chain: &mut Chain) -> Result<Opened, ImageError> {
    let caches = Caches::new();
    if is_sparse(&*src) {
        return match read_sparse(&src, path)? {
            SparseFile::Descriptor { at, len } => {
                let text = read_descriptor_bytes(&*src, path, at, len)?;
                open_described(path, &text, at, chain, &caches)
            }
            SparseFile::Extent(layout) => open_monolithic(src, path, layout, chain, caches),
        };
    }
    let text = read_descriptor_file(&*src, path)?;
    open_described(path, &text, 0, chain, &caches)
}

/// The file starts with a sparse extent's magic (`vmdk_open`).
fn is_sparse(src: &dyn ReadAt) -> bool {
    let mut magic = [0u8; 4];
    src.len() >= 4
        && src.read_exact_at(&mut magic, 0).is_ok()
        && (&magic == b"KDMV" || &magic == b"COWD")
}

// ---------------------------------------------------------------------------
// Sparse extent files
// ---------------------------------------------------------------------------

/// What a sparse extent file holds: its grains, or (a `KDMV` header with
/// capacity 0 and a descriptor offset, `vmdk_open_vmdk4`) only a
/// descriptor naming other extents.
enum SparseFile {
    Extent(Layout),
    Descriptor { at: u64, len: u64 },
}

/// Where a sparse extent keeps its grains, as its header gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Layout {
    /// `KDMV` versions 1-3; `COWD` gives its own.
    version: u32,
    /// The extent's size in bytes (capacity × 512).
    len: u64,
    grain_bytes: u64,
    gtes_per_gt: u64,
    /// The grain directory's byte offset and entries.
    gd_at: u64,
    gd_entries: u64,
    zero_grain: bool,
    compressed: bool,
    markers: bool,
    /// The embedded descriptor's bytes (byte offset, length), if any.
    descriptor: Option<(u64, u64)>,
}

/// Read and check a sparse extent file's header (`vmdk_open_sparse`).
fn read_sparse(src: &SharedReader, path: &Path) -> Result<SparseFile, ImageError> {
    let head = read_padded(&**src, 0, KDMV_HEADER_LEN as u64);
    if head.starts_with(b"COWD") {
        return read_cowd(src, path).map(SparseFile::Extent);
    }
    let err = |at: usize, msg: String| ImageError::parse(path, LAYER_HEADER, at as u64, msg);
    if src.len() < KDMV_HEADER_LEN as u64 {
        return Err(err(
            0,
            format!(
                "the header needs {KDMV_HEADER_LEN} bytes but the file has {} (truncated?)",
                src.len()
            ),
        ));
    }
    let capacity = le_u64(&head, KDMV_CAPACITY);
    let descriptor_sector = le_u64(&head, KDMV_DESCRIPTOR_OFFSET);
    if capacity == 0 && descriptor_sector != 0 {
        let at = sector_bytes(descriptor_sector)
            .filter(|&at| at < src.len())
            .ok_or_else(|| {
                err(
                    KDMV_DESCRIPTOR_OFFSET,
                    format!(
                        "descriptorOffset {descriptor_sector} (sectors) is past the end of the file ({} bytes)",
                        src.len()
                    ),
                )
            })?;
        let len = (src.len() - at).min(MAX_DESCRIPTOR);
        return Ok(SparseFile::Descriptor { at, len });
    }
    let (head, base) = if le_u64(&head, KDMV_GD_OFFSET) == GD_AT_END {
        read_footer(&**src, path)?
    } else {
        (head, 0)
    };
    check_kdmv(&head, base, src.len(), path).map(SparseFile::Extent)
}

/// A streamOptimized file's footer: the header again, with the real
/// gdOffset, in the sector before the end-of-stream marker, the footer
/// marker before it (`vmdk_open_vmdk4`: read 1536 bytes at the file's
/// length in sectors × 512 - 1536, past the end reading as zeros as
/// qemu's block layer reads them). Returns the header and its offset.
fn read_footer(src: &dyn ReadAt, path: &Path) -> Result<(Vec<u8>, u64), ImageError> {
    let end = src.len().div_ceil(SECTOR) * SECTOR;
    let Some(at) = end.checked_sub(3 * SECTOR) else {
        return Err(ImageError::parse(
            path,
            LAYER_HEADER,
            KDMV_GD_OFFSET as u64,
            format!(
                "gdOffset says the grain directory is in a footer, but the file has {} bytes, too few for one",
                src.len()
            ),
        ));
    };
    let footer = read_padded(src, at, 3 * SECTOR);
    let marker = |o: usize| {
        (
            le_u64(&footer, o),
            le_u32(&footer, o + 8),
            le_u32(&footer, o + 12),
        )
    };
    let problem = if marker(0).1 != 0 || marker(0).2 != MARKER_FOOTER {
        Some((at, "the footer marker (size 0, type 3) is missing"))
    } else if !footer[512..].starts_with(b"KDMV") {
        Some((at + SECTOR, "the footer has no KDMV magic"))
    } else if marker(1024) != (0, 0, MARKER_END_OF_STREAM) {
        Some((
            at + 2 * SECTOR,
            "the end-of-stream marker is missing after the footer",
        ))
    } else {
        None
    };
    if let Some((offset, msg)) = problem {
        return Err(ImageError::parse(
            path,
            LAYER_HEADER,
            offset,
            format!("gdOffset says the grain directory is in a footer: {msg}"),
        ));
    }
    Ok((footer[512..512 + KDMV_HEADER_LEN].to_vec(), at + SECTOR))
}

/// Check a `KDMV` header (at byte `base` of the file) as
/// `vmdk_open_vmdk4` and `vmdk_add_extent` do, and where they read past
/// the end, refuse it: the grain directory must lie in the file.
fn check_kdmv(head: &[u8], base: u64, file_len: u64, path: &Path) -> Result<Layout, ImageError> {
    let err = |at: usize, msg: String| ImageError::parse(path, LAYER_HEADER, base + at as u64, msg);
    let version = le_u32(head, KDMV_VERSION);
    if version > 3 {
        return Err(err(
            KDMV_VERSION,
            format!("version {version} is not 1, 2 or 3"),
        ));
    }
    let flags = le_u32(head, KDMV_FLAGS);
    let capacity = le_u64(head, KDMV_CAPACITY);
    let grain = le_u64(head, KDMV_GRAIN_SIZE);
    let gtes = u64::from(le_u32(head, KDMV_GTES_PER_GT));
    let gd_sector = le_u64(head, KDMV_GD_OFFSET);
    let overhead = le_u64(head, KDMV_OVERHEAD);
    let compressed = le_u16(head, KDMV_COMPRESS_ALGORITHM) == COMPRESSION_DEFLATE;
    if gtes == 0 || gtes > MAX_GTES_PER_GT {
        return Err(err(
            KDMV_GTES_PER_GT,
            format!("numGTEsPerGT {gtes} is not within 1..={MAX_GTES_PER_GT}"),
        ));
    }
    let grain_bytes = check_grain(grain, compressed, &|m| err(KDMV_GRAIN_SIZE, m))?;
    let len = sector_bytes(capacity)
        .filter(|&l| l <= MAX_DISK_BYTES)
        .ok_or_else(|| {
            err(
                KDMV_CAPACITY,
                format!("capacity {capacity} sectors is too large"),
            )
        })?;
    let gd_entries = capacity.div_ceil(grain * gtes);
    if gd_entries > MAX_GD_ENTRIES {
        return Err(err(
            KDMV_CAPACITY,
            format!(
                "capacity {capacity} sectors in grains of {grain} sectors and grain tables of {gtes} \
                 entries needs a grain directory of {gd_entries} entries (at most {MAX_GD_ENTRIES})"
            ),
        ));
    }
    if overhead > file_len.div_ceil(SECTOR) {
        return Err(err(
            KDMV_OVERHEAD,
            format!("overHead {overhead} sectors is past the end of the file ({file_len} bytes; truncated?)"),
        ));
    }
    let gd_at = check_gd(gd_sector, gd_entries, file_len, &|m| err(KDMV_GD_OFFSET, m))?;
    let descriptor = embedded_descriptor(head, file_len);
    Ok(Layout {
        version,
        len,
        grain_bytes,
        gtes_per_gt: gtes,
        gd_at,
        gd_entries,
        zero_grain: flags & FLAG_ZERO_GRAIN != 0,
        compressed,
        markers: flags & FLAG_MARKERS != 0,
        descriptor,
    })
}

/// A `COWD` header (VMFS sparse, `vmdk_open_vmfs_sparse`): the GD's size
/// is given, not derived, and grain tables have 4096 entries.
fn read_cowd(src: &SharedReader, path: &Path) -> Result<Layout, ImageError> {
    let err = |at: usize, msg: String| ImageError::parse(path, LAYER_HEADER, at as u64, msg);
    if src.len() < COWD_HEADER_LEN as u64 {
        return Err(err(
            0,
            format!(
                "the COWD header needs {COWD_HEADER_LEN} bytes but the file has {} (truncated?)",
                src.len()
            ),
        ));
    }
    let head = read_padded(&**src, 0, COWD_HEADER_LEN as u64);
    let capacity = u64::from(le_u32(&head, COWD_CAPACITY));
    let grain = u64::from(le_u32(&head, COWD_GRAIN_SIZE));
    let gd_sector = u64::from(le_u32(&head, COWD_GD_OFFSET));
    let gd_entries = u64::from(le_u32(&head, COWD_GD_ENTRIES));
    let grain_bytes = check_grain(grain, false, &|m| err(COWD_GRAIN_SIZE, m))?;
    if gd_entries > MAX_GD_ENTRIES {
        return Err(err(
            COWD_GD_ENTRIES,
            format!("l1dir_size {gd_entries} is more than {MAX_GD_ENTRIES} entries"),
        ));
    }
    let gd_at = check_gd(gd_sector, gd_entries, src.len(), &|m| {
        err(COWD_GD_OFFSET, m)
    })?;
    Ok(Layout {
        version: le_u32(&head, COWD_VERSION),
        len: capacity * SECTOR,
        grain_bytes,
        gtes_per_gt: COWD_GTES_PER_GT,
        gd_at,
        gd_entries,
        zero_grain: false,
        compressed: false,
        markers: false,
        descriptor: None,
    })
}

/// A grain size in sectors as qemu takes it (`vmdk_add_extent`: 1 sector
/// to 1 GiB), and no more than [`MAX_COMPRESSED_GRAIN`] when compressed.
fn check_grain(
    sectors: u64,
    compressed: bool,
    err: &dyn Fn(String) -> ImageError,
) -> Result<u64, ImageError> {
    if sectors == 0 || sectors > MAX_GRAIN_SECTORS {
        return Err(err(format!(
            "grainSize {sectors} sectors is not within 1..={MAX_GRAIN_SECTORS}"
        )));
    }
    let bytes = sectors * SECTOR;
    if compressed && bytes > MAX_COMPRESSED_GRAIN {
        return Err(err(format!(
            "grainSize {sectors} sectors: compressed grains over {MAX_COMPRESSED_GRAIN} bytes are refused"
        )));
    }
    Ok(bytes)
}

/// The GD's byte offset, checked to hold its entries inside the file.
fn check_gd(
    sector: u64,
    entries: u64,
    file_len: u64,
    err: &dyn Fn(String) -> ImageError,
) -> Result<u64, ImageError> {
    let at = sector_bytes(sector);
    let end = at.and_then(|a| a.checked_add(entries * 4));
    match (at, end) {
        (Some(at), Some(end)) if end <= file_len => Ok(at),
        _ => Err(err(format!(
            "gdOffset {sector} (sectors): a grain directory of {entries} entries there ends past \
             the end of the file ({file_len} bytes)"
        ))),
    }
}

/// The embedded descriptor's place (`descriptorOffset`,
/// `descriptorSize`), cut to the file and to [`MAX_DESCRIPTOR`]; None
/// when there is none. qemu reads only the parent's name and the CIDs
/// from it (`vmdk_parent_open`, `vmdk_read_cid`: at byte 512, whatever
/// descriptorOffset says), so a bad place is no error, only no facts.
fn embedded_descriptor(head: &[u8], file_len: u64) -> Option<(u64, u64)> {
    let at =
        sector_bytes(le_u64(head, KDMV_DESCRIPTOR_OFFSET)).filter(|&a| a > 0 && a < file_len)?;
    let len = sector_bytes(le_u64(head, KDMV_DESCRIPTOR_SIZE))
        .unwrap_or(u64::MAX)
        .min(file_len - at)
        .min(MAX_DESCRIPTOR);
    Some((at, len))
}

fn sector_bytes(sectors: u64) -> Option<u64> {
    sectors.checked_mul(SECTOR)
}

/// Read `len` bytes at `offset` (a length this module bounds), zeros
/// past the end of the file, as qemu's block layer reads them.
fn read_padded(src: &dyn ReadAt, offset: u64, len: u64) -> Vec<u8> {
    let mut buf = vec![0u8; len as usize];
    let have = src.len().saturating_sub(offset).min(len) as usize;
    if have > 0 && src.read_exact_at(&mut buf[..have], offset).is_err() {
        buf.fill(0);
    }
    buf
}

// ---------------------------------------------------------------------------
// Descriptors
// ---------------------------------------------------------------------------

/// A descriptor file's bytes: all of it, refused past [`MAX_DESCRIPTOR`].
fn read_descriptor_file(src: &dyn ReadAt, path: &Path) -> Result<Vec<u8>, ImageError> {
    if src.len() > MAX_DESCRIPTOR {
        return Err(ImageError::parse(
            path,
            LAYER_DESCRIPTOR,
            0,
            format!(
                "the file is {} bytes, longer than any descriptor ({MAX_DESCRIPTOR} at most) and not a sparse extent",
                src.len()
            ),
        ));
    }
    read_descriptor_bytes(src, path, 0, src.len())
}

fn read_descriptor_bytes(
    src: &dyn ReadAt,
    path: &Path,
    at: u64,
    len: u64,
) -> Result<Vec<u8>, ImageError> {
    crate::bytes::read_bytes(src, LAYER_DESCRIPTOR, at, len).map_err(|e| ImageError::new(path, e))
}

/// What a descriptor says: the disk's kind, its parent, its extents.
#[derive(Debug, Default, PartialEq, Eq)]
struct Descriptor {
    /// `createType` and the byte its value starts at.
    create_type: Option<(String, u64)>,
    /// `parentFileNameHint` and the byte its value starts at.
    parent: Option<(String, u64)>,
    extents: Vec<ExtentLine>,
}

/// One extent line: `ACCESS SECTORS TYPE ["NAME" [OFFSET]]`.
#[derive(Debug, PartialEq, Eq)]
struct ExtentLine {
    access: Access,
    sectors: u64,
    kind: ExtentKind,
    /// The file's name and the byte the name starts at.
    file: Option<(String, u64)>,
    /// A FLAT extent's first sector in its file.
    start: u64,
    /// The byte the line starts at.
    at: u64,
}

/// An extent line's access word. qemu reads RW lines only and skips the
/// others, shifting every later extent (`vmdk_parse_extents`; qemu 7.2
/// gives a descriptor of RW 1024, RDONLY 512, ZERO 100, RW 512 sectors a
/// size of 1536). VMware's format counts them all: an RDONLY extent reads
/// as any other, a NOACCESS one holds its place but cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Rw,
    Rdonly,
    Noaccess,
}

/// An extent line's type word. ZERO (VMware's, skipped by qemu) reads as
/// zeros; SESPARSE is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ExtentKind {
    Flat,
    Sparse,
    Zero,
    Vmfs,
    VmfsSparse,
    SeSparse,
}

/// Parse descriptor text whose first byte is at byte `base` of its file.
/// Comments (`#`) and blank lines are skipped, `key = "value"` lines give
/// the disk's facts, lines starting with an access word are extents
/// (read only when `extents`: an embedded descriptor's extent is the file
/// itself). The text ends at its first NUL (the padding of an embedded
/// descriptor).
fn parse_descriptor(
    text: &[u8],
    base: u64,
    extents: bool,
    path: &Path,
) -> Result<Descriptor, ImageError> {
    let text = &text[..text.iter().position(|&b| b == 0).unwrap_or(text.len())];
    let mut desc = Descriptor::default();
    let mut line_at = 0usize;
    for raw in text.split(|&b| b == b'\n') {
        let at = base + line_at as u64;
        line_at += raw.len() + 1;
        let lead = raw.iter().take_while(|b| b.is_ascii_whitespace()).count();
        let line = raw[lead..].trim_ascii_end();
        let at = at + lead as u64;
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        if let Some(access) = access_word(line) {
            if extents {
                if desc.extents.len() >= MAX_EXTENTS {
                    return Err(ImageError::parse(
                        path,
                        LAYER_DESCRIPTOR,
                        at,
                        format!("more than {MAX_EXTENTS} extent lines"),
                    ));
                }
                let extent = parse_extent(line, at, access)
                    .map_err(|(o, m)| ImageError::parse(path, LAYER_DESCRIPTOR, o, m))?;
                desc.extents.push(extent);
            }
        } else if let Some((key, value, value_at)) = key_value(line) {
            let slot = match key {
                b"createType" => &mut desc.create_type,
                b"parentFileNameHint" => &mut desc.parent,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some((lossy(value), at + value_at as u64));
            }
        }
    }
    Ok(desc)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The access word an extent line starts with.
fn access_word(line: &[u8]) -> Option<Access> {
    let word = line.split(|b| b.is_ascii_whitespace()).next()?;
    match word {
        b"RW" => Some(Access::Rw),
        b"RDONLY" => Some(Access::Rdonly),
        b"NOACCESS" => Some(Access::Noaccess),
        _ => None,
    }
}

/// `key = value` or `key = "value"`: the key, the value (unquoted) and
/// the value's position in the line.
fn key_value(line: &[u8]) -> Option<(&[u8], &[u8], usize)> {
    let eq = line.iter().position(|&b| b == b'=')?;
    let key = line[..eq].trim_ascii();
    let rest = &line[eq + 1..];
    let skip = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let start = eq + 1 + skip;
    let value = &line[start..];
    if let Some(quoted) = value.strip_prefix(b"\"") {
        let end = quoted
            .iter()
            .position(|&b| b == b'"')
            .unwrap_or(quoted.len());
        return Some((key, &quoted[..end], start + 1));
    }
    Some((key, value, start))
}

/// A line's words and quoted names, each with its position.
struct Words<'a> {
    line: &'a [u8],
    pos: usize,
}

impl<'a> Words<'a> {
    fn skip_space(&mut self) {
        while self
            .line
            .get(self.pos)
            .is_some_and(|b| b.is_ascii_whitespace())
        {
            self.pos += 1;
        }
    }

    /// The next unquoted word, if any.
    fn word(&mut self) -> Option<(&'a [u8], usize)> {
        self.skip_space();
        let start = self.pos;
        while self
            .line
            .get(self.pos)
            .is_some_and(|&b| !b.is_ascii_whitespace() && b != b'"')
        {
            self.pos += 1;
        }
        (self.pos > start).then(|| (&self.line[start..self.pos], start))
    }

    /// The next `"quoted"` name: None when the next thing is not quoted,
    /// an error when the quote does not close.
    fn quoted(&mut self) -> Result<Option<(&'a [u8], usize)>, usize> {
        self.skip_space();
        if self.line.get(self.pos) != Some(&b'"') {
            return Ok(None);
        }
        let start = self.pos + 1;
        let len = self.line[start..]
            .iter()
            .position(|&b| b == b'"')
            .ok_or(self.pos)?;
        self.pos = start + len + 1;
        Ok(Some((&self.line[start..start + len], start)))
    }
}

/// Parse one extent line (qemu's `vmdk_parse_extents`, with VMware's
/// RDONLY, NOACCESS and ZERO extents, which qemu skips; errors as
/// (byte offset, message)).
fn parse_extent(line: &[u8], at: u64, access: Access) -> Result<ExtentLine, (u64, String)> {
    let mut words = Words { line, pos: 0 };
    let pos = |p: usize| at + p as u64;
    words.word();
    let (sectors, sectors_at) = words
        .word()
        .ok_or_else(|| (at, "extent line has no size in sectors".to_string()))?;
    let sectors = decimal(sectors).ok_or_else(|| {
        (
            pos(sectors_at),
            format!(
                "extent size {:?} is not a number of sectors",
                lossy(sectors)
            ),
        )
    })?;
    let (kind_word, kind_at) = words
        .word()
        .ok_or_else(|| (at, "extent line has no extent type".to_string()))?;
    let kind = extent_kind(kind_word).ok_or_else(|| {
        (
            pos(kind_at),
            format!(
                "extent type {:?} is not FLAT, SPARSE, ZERO, VMFS, VMFSSPARSE or SESPARSE",
                lossy(kind_word)
            ),
        )
    })?;
    let file = words
        .quoted()
        .map_err(|p| (pos(p), "extent file name has no closing quote".to_string()))?
        .map(|(name, p)| (lossy(name), pos(p)));
    let start = match words.word() {
        Some((w, p)) if file.is_none() && kind != ExtentKind::Zero => {
            return Err((
                pos(p),
                format!("extent file name {:?} is not in double quotes", lossy(w)),
            ))
        }
        Some((w, p)) => Some(decimal(w).ok_or_else(|| {
            (
                pos(p),
                format!("extent offset {:?} is not a number of sectors", lossy(w)),
            )
        })?),
        None => None,
    };
    words.skip_space();
    if words.pos < line.len() {
        let rest = &line[words.pos..];
        return Err((
            pos(words.pos),
            format!("unexpected {:?} after the extent", lossy(rest)),
        ));
    }
    let kind_name = lossy(kind_word);
    let start = match (kind, &file, start) {
        (ExtentKind::Zero, None, None) => 0,
        (ExtentKind::Zero, _, _) => {
            return Err((at, "a ZERO extent names no file and no offset".to_string()))
        }
        (_, None, _) => return Err((at, format!("a {kind_name} extent needs a quoted file name"))),
        (ExtentKind::Flat, Some(_), Some(s)) => s,
        (ExtentKind::Flat, Some(_), None) => {
            return Err((
                at,
                "a FLAT extent needs its offset in sectors after the name".to_string(),
            ))
        }
        (_, Some(_), None) => 0,
        (_, Some(_), Some(_)) => {
            return Err((
                at,
                format!("a {kind_name} extent takes no offset after the name"),
            ))
        }
    };
    if file.as_ref().is_some_and(|(n, _)| n.is_empty()) {
        return Err((at, "extent file name is empty".to_string()));
    }
    Ok(ExtentLine {
        access,
        sectors,
        kind,
        file,
        start,
        at,
    })
}

fn decimal(w: &[u8]) -> Option<u64> {
    if w.is_empty() || !w.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(w).ok()?.parse().ok()
}

fn extent_kind(w: &[u8]) -> Option<ExtentKind> {
    Some(match w {
        b"FLAT" => ExtentKind::Flat,
        b"SPARSE" => ExtentKind::Sparse,
        b"ZERO" => ExtentKind::Zero,
        b"VMFS" => ExtentKind::Vmfs,
        b"VMFSSPARSE" => ExtentKind::VmfsSparse,
        b"SESPARSE" => ExtentKind::SeSparse,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------
// Opening the disk
// ---------------------------------------------------------------------------

/// The caches one image's extents share.
#[derive(Clone)]
struct Caches {
    tables: Rc<Cache>,
    grains: Rc<Cache>,
}

impl Caches {
    fn new() -> Self {
        Caches {
            tables: Rc::new(Cache::new(TABLE_CACHE_BYTES)),
            grains: Rc::new(Cache::new(GRAIN_CACHE_BYTES)),
        }
    }
}

/// A monolithic sparse file: one extent, the file itself; its embedded
/// descriptor gives the createType and the parent.
fn open_monolithic(
    src: SharedReader,
    path: &Path,
    layout: Layout,
    chain: &mut Chain,
    caches: Caches,
) -> Result<Opened, ImageError> {
    let desc = match layout.descriptor {
        Some((at, len)) => {
            let text = read_descriptor_bytes(&*src, path, at, len)?;
            parse_descriptor(&text, at, false, path)?
        }
        None => Descriptor::default(),
    };
    let (fallback, backing) = open_parent(&desc, path, chain)?;
    // qemu names a single sparse file by its compression alone
    // (`vmdk_open_vmdk4`); the embedded createType says the same.
    let subformat = desc.create_type.map(|(t, _)| t).unwrap_or_else(|| {
        if layout.compressed {
            "streamOptimized"
        } else {
            "monolithicSparse"
        }
        .to_string()
    });
    let container = Container {
        format: ContainerFormat::Vmdk,
        version: layout.version.to_string(),
        subformat: Some(subformat),
        unit_bytes: Some(layout.grain_bytes),
        virtual_size: layout.len,
        compression: layout.compressed.then(|| "deflate".to_string()),
        backing,
        ..Container::default()
    };
    let guest = fallback.map(|fallback| {
        Rc::new(ByUnit(SparseExtent {
            file: src,
            path: path.to_path_buf(),
            layout,
            id: 0,
            guest_start: 0,
            fallback,
            caches,
        })) as SharedReader
    });
    Ok(Opened { container, guest })
}

/// The parent named by `parentFileNameHint`, always read as a VMDK
/// (`vmdk_parent_open` sets the backing format to vmdk): how unallocated
/// grains read, and the chain below. The fallback is None when the parent's
/// guest cannot be read (so neither can ours). An empty name is no parent,
/// as qemu opens no backing file by an empty name.
fn open_parent(
    desc: &Descriptor,
    path: &Path,
    chain: &mut Chain,
) -> Result<(Option<Fallback>, Vec<super::BackingFile>), ImageError> {
    let Some((name, at)) = desc.parent.as_ref().filter(|(n, _)| !n.is_empty()) else {
        return Ok((Some(Fallback::default()), Vec::new()));
    };
    let (guest, backing) = chain.backing(path, name, *at, Some(ContainerFormat::Vmdk))?;
    Ok((guest.map(|g| Fallback { backing: Some(g) }), backing))
}

/// One extent of a described disk, before the parent is known.
enum Piece {
    Flat(Flat),
    Sparse {
        file: SharedReader,
        path: PathBuf,
        layout: Layout,
    },
    Zero(u64),
    NoAccess {
        len: u64,
        at: u64,
    },
}

impl Piece {
    fn len(&self) -> u64 {
        match self {
            Piece::Flat(f) => f.len,
            Piece::Sparse { layout, .. } => layout.len,
            Piece::Zero(len) | Piece::NoAccess { len, .. } => *len,
        }
    }
}

/// A disk described by descriptor text at byte `base` of `path` (a
/// descriptor file, or one embedded in a sparse file): its extents one
/// after the other, then its parent (`vmdk_open_desc_file`,
/// `vmdk_parse_extents`, `vmdk_parent_open`).
fn open_described(
    path: &Path,
    text: &[u8],
    base: u64,
    chain: &mut Chain,
    caches: &Caches,
) -> Result<Opened, ImageError> {
    let desc = parse_descriptor(text, base, true, path)?;
    let Some((create_type, _)) = desc.create_type.clone() else {
        return Err(ImageError::parse(
            path,
            LAYER_DESCRIPTOR,
            base,
            "no createType: not a VMDK descriptor",
        ));
    };
    let mut pieces = Vec::new();
    let mut files = vec![path.to_path_buf()];
    let mut total = 0u64;
    for line in &desc.extents {
        let Some(piece) = open_extent(line, path, chain, &mut files)? else {
            continue;
        };
        total = total
            .checked_add(piece.len())
            .filter(|&t| t <= MAX_DISK_BYTES)
            .ok_or_else(|| {
                ImageError::parse(
                    path,
                    LAYER_DESCRIPTOR,
                    line.at,
                    "the extents up to this line add up to more than 2^63 bytes",
                )
            })?;
        pieces.push(piece);
    }
    let (fallback, backing) = open_parent(&desc, path, chain)?;
    let sparse: Vec<&Layout> = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Sparse { layout, .. } => Some(layout),
            _ => None,
        })
        .collect();
    let container = Container {
        format: ContainerFormat::Vmdk,
        version: sparse
            .first()
            .map(|l| l.version.to_string())
            .unwrap_or_default(),
        subformat: Some(create_type),
        unit_bytes: sparse.first().map(|l| l.grain_bytes),
        virtual_size: total,
        allocated_bytes: allocated(&files, chain),
        compression: sparse
            .iter()
            .any(|l| l.compressed)
            .then(|| "deflate".to_string()),
        backing,
        ..Container::default()
    };
    let guest = fallback.map(|fallback| assemble(pieces, total, path, &fallback, caches));
    Ok(Opened { container, guest })
}

/// Open the file of one extent line; None for a line of 0 sectors (qemu
/// skips them, `vmdk_parse_extents`). `files` gathers the paths opened.
fn open_extent(
    line: &ExtentLine,
    path: &Path,
    chain: &Chain,
    files: &mut Vec<PathBuf>,
) -> Result<Option<Piece>, ImageError> {
    let len = sector_bytes(line.sectors)
        .filter(|&l| l <= MAX_DISK_BYTES)
        .ok_or_else(|| {
            ImageError::parse(
                path,
                LAYER_DESCRIPTOR,
                line.at,
                format!("extent size {} sectors is too large", line.sectors),
            )
        })?;
    if len == 0 {
        return Ok(None);
    }
    if line.access == Access::Noaccess {
        return Ok(Some(Piece::NoAccess { len, at: line.at }));
    }
    match line.kind {
        ExtentKind::Zero => return Ok(Some(Piece::Zero(len))),
        ExtentKind::SeSparse => {
            return Err(ImageError::parse(
                path,
                LAYER_DESCRIPTOR,
                line.at,
                "SESPARSE extents (ESXi's seSparse snapshots) are not read",
            ))
        }
        _ => {}
    }
    let Some((name, name_at)) = &line.file else {
        return Err(ImageError::parse(
            path,
            LAYER_DESCRIPTOR,
            line.at,
            "the extent names no file",
        ));
    };
    let file = chain.open_named(path, name, *name_at)?;
    let file_path = Chain::resolve(path, name);
    files.push(file_path.clone());
    match line.kind {
        ExtentKind::Flat | ExtentKind::Vmfs => {
            let start = sector_bytes(line.start)
                .filter(|s| s.checked_add(len).is_some())
                .ok_or_else(|| {
                    ImageError::parse(
                        path,
                        LAYER_DESCRIPTOR,
                        line.at,
                        format!("extent offset {} sectors is too large", line.start),
                    )
                })?;
            Ok(Some(Piece::Flat(Flat { file, start, len })))
        }
        _ => open_sparse_extent(file, file_path, line, path).map(Some),
    }
}

/// A SPARSE or VMFSSPARSE extent: its length is its header's capacity,
/// not the descriptor's (`vmdk_open_vmdk4` via `vmdk_add_extent`). An
/// extent that is itself a descriptor is refused: qemu would recurse.
fn open_sparse_extent(
    file: SharedReader,
    file_path: PathBuf,
    line: &ExtentLine,
    path: &Path,
) -> Result<Piece, ImageError> {
    if !is_sparse(&*file) {
        return Err(ImageError::parse(
            &file_path,
            LAYER_HEADER,
            0,
            format!(
                "no KDMV or COWD magic, yet the extent at byte {} of {} is sparse",
                line.at,
                path.display()
            ),
        ));
    }
    match read_sparse(&file, &file_path)? {
        SparseFile::Extent(layout) => Ok(Piece::Sparse {
            file,
            path: file_path,
            layout,
        }),
        SparseFile::Descriptor { .. } => Err(ImageError::parse(
            &file_path,
            LAYER_HEADER,
            KDMV_CAPACITY as u64,
            "capacity 0 with a descriptorOffset: a descriptor inside an extent is refused",
        )),
    }
}

/// What the descriptor and its distinct extent files take on their
/// filesystem (qemu's `vmdk_co_get_allocated_file_size` counts each
/// extent file, the descriptor's own once).
fn allocated(files: &[PathBuf], chain: &Chain) -> Option<u64> {
    let mut seen = Vec::new();
    let mut total = None;
    for f in files {
        let canonical = chain.files.canonical(f);
        if seen.contains(&canonical) {
            continue;
        }
        seen.push(canonical);
        if let Some(n) = chain.files.allocated_bytes(f) {
            total = Some(total.unwrap_or(0u64).saturating_add(n));
        }
    }
    total
}

/// The guest disk of a described VMDK: one extent as it is, several
/// mapped one after the other.
fn assemble(
    pieces: Vec<Piece>,
    len: u64,
    path: &Path,
    fallback: &Fallback,
    caches: &Caches,
) -> SharedReader {
    let mut sources: Vec<SharedReader> = Vec::with_capacity(pieces.len());
    let mut starts = Vec::with_capacity(pieces.len());
    let mut at = 0u64;
    for (id, piece) in pieces.into_iter().enumerate() {
        let piece_len = piece.len();
        let src: SharedReader = match piece {
            Piece::Flat(f) => Rc::new(f),
            Piece::Zero(len) => Rc::new(Zeros { len }),
            Piece::NoAccess { len, at } => Rc::new(NoAccess {
                path: path.to_path_buf(),
                len,
                at,
            }),
            Piece::Sparse { file, path, layout } => Rc::new(ByUnit(SparseExtent {
                file,
                path,
                layout,
                id: id as u64,
                guest_start: at,
                fallback: fallback.clone(),
                caches: caches.clone(),
            })),
        };
        if piece_len > 0 {
            sources.push(src);
            starts.push(at);
        }
        at += piece_len;
    }
    if sources.len() == 1 && starts[0] == 0 && sources[0].len() == len {
        return sources.remove(0);
    }
    let ends: Vec<u64> = starts
        .iter()
        .zip(&sources)
        .map(|(s, src)| s + src.len())
        .collect();
    Rc::new(Mapped {
        sources,
        len,
        locate: Box::new(move |x| {
            let i = ends.partition_point(|&end| end <= x);
            let start = *starts.get(i)?;
            Some((i, x - start, ends[i] - x))
        }),
    })
}

// ---------------------------------------------------------------------------
// Reading extents
// ---------------------------------------------------------------------------

/// Bytes of a FLAT or VMFS extent: `len` bytes of `file` from `start`,
/// zeros past the file's end (qemu's block layer reads them so).
struct Flat {
    file: SharedReader,
    start: u64,
    len: u64,
}

impl ReadAt for Flat {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        in_bounds(self.len, offset, buf.len())?;
        let at = self.start + offset;
        let have = self.file.len().saturating_sub(at).min(buf.len() as u64) as usize;
        buf[have..].fill(0);
        if have > 0 {
            self.file.read_exact_at(&mut buf[..have], at)?;
        }
        Ok(())
    }
}

/// A ZERO extent.
struct Zeros {
    len: u64,
}

impl ReadAt for Zeros {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        in_bounds(self.len, offset, buf.len())?;
        buf.fill(0);
        Ok(())
    }
}

/// A NOACCESS extent: it holds part of the disk, but VMware forbids
/// reading it, so every read fails naming the line.
struct NoAccess {
    path: PathBuf,
    len: u64,
    at: u64,
}

impl ReadAt for NoAccess {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        in_bounds(self.len, offset, buf.len())?;
        Err(read_error(
            &self.path,
            LAYER_DESCRIPTOR,
            self.at,
            "the extent of this line is NOACCESS: its bytes may not be read".to_string(),
        ))
    }
}

/// A hosted sparse extent read through its grain directory and tables
/// (`get_cluster_offset`, `vmdk_read_extent`, `vmdk_co_preadv`).
struct SparseExtent {
    file: SharedReader,
    path: PathBuf,
    layout: Layout,
    /// Tells this extent's entries apart in the shared caches.
    id: u64,
    /// Where the extent starts in the guest: unallocated grains read the
    /// parent's bytes at the same guest offset.
    guest_start: u64,
    fallback: Fallback,
    caches: Caches,
}

/// Where a grain's bytes are.
enum Grain {
    /// Not in this extent: the parent's bytes, or zeros.
    Unallocated,
    /// Zeroed (a GTE of 1 with the zeroed-grain flag).
    Zeroed,
    /// At this byte of the file; `entry_at` is its grain table entry's.
    At { offset: u64, entry_at: u64 },
}

/// The kinds of cache entries, so that a GD page and a grain table at the
/// same byte never share a key.
#[derive(Clone, Copy)]
enum Kind {
    GdPage = 0,
    Table = 1,
    Grain = 2,
}

impl SparseExtent {
    /// A cache key: the extent, the kind and a byte offset (GT and grain
    /// offsets are u32 sectors, below 2^41; GD pages number fewer).
    fn key(&self, kind: Kind, at: u64) -> u64 {
        (self.id << 44) | ((kind as u64) << 42) | (at & ((1 << 42) - 1))
    }

    /// The grain table sector of GD entry `index`, 0 when unallocated.
    fn gd_entry(&self, index: u64) -> io::Result<u64> {
        let l = &self.layout;
        if index >= l.gd_entries {
            return Err(read_error(
                &self.path,
                LAYER_GD,
                l.gd_at,
                format!(
                    "the grain directory has {} entries, none for grain table {index}",
                    l.gd_entries
                ),
            ));
        }
        let byte = index * 4;
        let page = byte / GD_PAGE;
        let page_at = l.gd_at + page * GD_PAGE;
        let page_len = (l.gd_entries * 4 - page * GD_PAGE).min(GD_PAGE);
        let data = self
            .caches
            .tables
            .get_or_load(self.key(Kind::GdPage, page), || {
                self.read_file(LAYER_GD, page_at, page_len, "grain directory page")
            })?;
        let i = (byte % GD_PAGE) as usize;
        data.get(i..i + 4)
            .map(|b| u64::from(le_u32(b, 0)))
            .ok_or_else(|| self.short(LAYER_GD, page_at))
    }

    /// Where grain `index` of the extent is.
    fn grain(&self, index: u64) -> io::Result<Grain> {
        let l = &self.layout;
        let gd_index = index / l.gtes_per_gt;
        let gt_sector = self.gd_entry(gd_index)?;
        if gt_sector == 0 {
            return Ok(Grain::Unallocated);
        }
        let gd_entry_at = l.gd_at + gd_index * 4;
        let gt_at = gt_sector * SECTOR;
        let gt_len = l.gtes_per_gt * 4;
        if gt_at
            .checked_add(gt_len)
            .is_none_or(|end| end > self.file.len())
        {
            return Err(read_error(
                &self.path,
                LAYER_GD,
                gd_entry_at,
                format!(
                    "grain directory entry {gd_index}: grain table at sector {gt_sector} is past the end of the file ({} bytes)",
                    self.file.len()
                ),
            ));
        }
        let table = self
            .caches
            .tables
            .get_or_load(self.key(Kind::Table, gt_at), || {
                self.read_file(LAYER_GT, gt_at, gt_len, "grain table")
            })?;
        let i = ((index % l.gtes_per_gt) * 4) as usize;
        let gte = table
            .get(i..i + 4)
            .map(|b| le_u32(b, 0))
            .ok_or_else(|| self.short(LAYER_GT, gt_at))?;
        Ok(match gte {
            0 => Grain::Unallocated,
            GTE_ZEROED if l.zero_grain => Grain::Zeroed,
            sector => Grain::At {
                offset: u64::from(sector) * SECTOR,
                entry_at: gt_at + i as u64,
            },
        })
    }

    fn read_file(&self, layer: &'static str, at: u64, len: u64, what: &str) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut buf, at)
            .map_err(|e| read_error(&self.path, layer, at, format!("reading the {what}: {e}")))?;
        Ok(buf)
    }

    fn short(&self, layer: &'static str, at: u64) -> io::Error {
        read_error(
            &self.path,
            layer,
            at,
            "cached table is shorter than its entries".to_string(),
        )
    }

    /// Bytes `in_grain..` of an uncompressed grain at `offset`.
    fn read_plain(
        &self,
        buf: &mut [u8],
        offset: u64,
        in_grain: u64,
        entry_at: u64,
    ) -> io::Result<()> {
        let at = offset + in_grain;
        if at
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.file.len())
        {
            return Err(read_error(
                &self.path,
                LAYER_GT,
                entry_at,
                format!(
                    "grain table entry: grain at sector {} is past the end of the file ({} bytes)",
                    offset / SECTOR,
                    self.file.len()
                ),
            ));
        }
        self.file.read_exact_at(buf, at)
    }

    /// Bytes `in_grain..` of a compressed grain at `offset`.
    fn read_compressed(&self, buf: &mut [u8], offset: u64, in_grain: u64) -> io::Result<()> {
        let grain = self
            .caches
            .grains
            .get_or_load(self.key(Kind::Grain, offset), || self.inflate(offset))?;
        let start = in_grain as usize;
        let part = grain.get(start..start + buf.len()).ok_or_else(|| {
            read_error(
                &self.path,
                LAYER_COMPRESSED,
                offset,
                format!(
                    "the grain inflates to {} bytes, short of byte {} the read needs",
                    grain.len(),
                    start + buf.len()
                ),
            )
        })?;
        buf.copy_from_slice(part);
        Ok(())
    }

    /// Inflate the compressed grain at `offset`: a marker (lba u64, size
    /// u32) then zlib data where the extent has markers, else zlib data
    /// straight away, no more than a grain of it (`vmdk_read_extent`:
    /// size not 0 and at most two grains, the output at most one grain,
    /// the stream whole).
    fn inflate(&self, offset: u64) -> io::Result<Vec<u8>> {
        let l = &self.layout;
        let err = |msg: String| read_error(&self.path, LAYER_COMPRESSED, offset, msg);
        let file_len = self.file.len();
        let (data_at, size) = if l.markers {
            if offset.checked_add(12).is_none_or(|e| e > file_len) {
                return Err(err(format!(
                    "the grain marker is past the end of the file ({file_len} bytes)"
                )));
            }
            let mut marker = [0u8; 12];
            self.file.read_exact_at(&mut marker, offset)?;
            (offset + 12, u64::from(le_u32(&marker, 8)))
        } else {
            if offset >= file_len {
                return Err(err(format!(
                    "the grain is past the end of the file ({file_len} bytes)"
                )));
            }
            (offset, l.grain_bytes.min(file_len - offset))
        };
        if size == 0 || size > 2 * l.grain_bytes {
            return Err(err(format!(
                "the grain marker's size {size} is not within 1..={} (two grains)",
                2 * l.grain_bytes
            )));
        }
        if data_at + size > file_len {
            return Err(err(format!(
                "the grain marker's size {size} runs past the end of the file ({file_len} bytes)"
            )));
        }
        let mut data = vec![0u8; size as usize];
        self.file.read_exact_at(&mut data, data_at)?;
        inflate_grain(&data, l.grain_bytes as usize).map_err(err)
    }
}

/// Inflate a zlib stream into at most `grain` bytes; the stream must end.
fn inflate_grain(data: &[u8], grain: usize) -> Result<Vec<u8>, String> {
    let mut out = vec![0u8; grain + 1];
    let mut z = Decompress::new(true);
    loop {
        let (read, written) = (z.total_in() as usize, z.total_out() as usize);
        let status = z
            .decompress(&data[read..], &mut out[written..], FlushDecompress::Finish)
            .map_err(|e| format!("the zlib data is corrupt: {e}"))?;
        let done = z.total_out() as usize;
        if done > grain {
            return Err(format!(
                "the zlib data inflates past the grain ({grain} bytes)"
            ));
        }
        match status {
            Status::StreamEnd => {
                out.truncate(done);
                return Ok(out);
            }
            _ if z.total_in() as usize == read && done == written => {
                return Err(format!(
                    "the zlib data ends after {} bytes without the end of its stream",
                    data.len()
                ))
            }
            _ => {}
        }
    }
}

impl Units for SparseExtent {
    fn guest_len(&self) -> u64 {
        self.layout.len
    }
    fn unit_bytes(&self) -> u64 {
        self.layout.grain_bytes
    }
    fn read_piece(&self, part: &mut [u8], off: u64) -> io::Result<()> {
        let grain_bytes = self.layout.grain_bytes;
        let in_grain = off % grain_bytes;
        match self.grain(off / grain_bytes)? {
            Grain::Unallocated => self.fallback.read(part, self.guest_start + off),
            Grain::Zeroed => {
                part.fill(0);
                Ok(())
            }
            Grain::At { offset, .. } if self.layout.compressed => {
                self.read_compressed(part, offset, in_grain)
            }
            Grain::At { offset, entry_at } => self.read_plain(part, offset, in_grain, entry_at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::{ImageErrorKind, MemFiles};
    use std::io::Write;
    use std::time::{Duration, Instant};

    const GRAIN: u64 = 8; // sectors: 4 KiB grains
    const GTES: u32 = 4;

    /// A small monolithicSparse file: 64 sectors in 8 grains of 4 KiB, two
    /// grain tables of 4 entries. Sector 0 header, 1 descriptor, 2 GD,
    /// 3 and 4 the grain tables, grains from sector 8 on. `grains` gives
    /// (grain index, its GTE); a GTE of 8 + 8k holds bytes of value k + 1.
    struct Sparse {
        bytes: Vec<u8>,
    }

    impl Sparse {
        fn new(flags: u32, grains: &[(usize, u32)], descriptor: &str) -> Self {
            let mut bytes = vec![0u8; 8 * 512];
            bytes[..4].copy_from_slice(b"KDMV");
            let mut s = Sparse { bytes };
            s.put32(KDMV_VERSION, 1);
            s.put32(KDMV_FLAGS, flags);
            s.put64(KDMV_CAPACITY, 64);
            s.put64(KDMV_GRAIN_SIZE, GRAIN);
            s.put64(KDMV_DESCRIPTOR_OFFSET, 1);
            s.put64(KDMV_DESCRIPTOR_SIZE, 1);
            s.put32(KDMV_GTES_PER_GT, GTES);
            s.put64(KDMV_GD_OFFSET, 2);
            s.put64(KDMV_OVERHEAD, 8);
            s.bytes[512..512 + descriptor.len()].copy_from_slice(descriptor.as_bytes());
            s.put32(1024, 3);
            s.put32(1028, 4);
            for &(index, gte) in grains {
                s.put32((3 + index / 4) * 512 + index % 4 * 4, gte);
                if (8..1000).contains(&gte) {
                    let at = gte as usize * 512;
                    let end = at + 4096;
                    if s.bytes.len() < end {
                        s.bytes.resize(end, 0);
                    }
                    s.bytes[at..end].fill((gte / 8) as u8);
                }
            }
            s
        }
        fn put32(&mut self, at: usize, v: u32) {
            self.bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        fn put64(&mut self, at: usize, v: u64) {
            self.bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
    }

    fn open_mem(files: MemFiles, top: &str) -> Result<Opened, ImageError> {
        crate::image::open(Path::new(top), &files)
    }

    fn open_one(bytes: Vec<u8>) -> Result<Opened, ImageError> {
        open_mem(
            MemFiles::default().with("/vm/disk.vmdk", bytes),
            "/vm/disk.vmdk",
        )
    }

    fn guest_bytes(o: &Opened) -> Vec<u8> {
        let g = o.guest.clone().unwrap();
        let mut buf = vec![0xa5u8; g.len() as usize];
        g.read_exact_at(&mut buf, 0).unwrap();
        buf
    }

    /// The error's line names all of `names`, and came quickly.
    fn refused(r: Result<Opened, ImageError>, names: &[&str]) -> String {
        let e = match r {
            Ok(_) => panic!("opened, expected {names:?}"),
            Err(e) => e.to_string(),
        };
        for n in names {
            assert!(e.contains(n), "{e:?} does not name {n:?}");
        }
        e
    }

    fn timed<T>(f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let t = f();
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "took {:?}",
            start.elapsed()
        );
        t
    }

    #[test]
    fn grains_read_allocated_unallocated_and_zeroed() {
        // Grain 1 at sector 8 (1s), grain 5 at 16 (2s), grain 6 zeroed.
        let img = Sparse::new(FLAG_ZERO_GRAIN, &[(1, 8), (5, 16), (6, 1)], "");
        let o = open_one(img.bytes).unwrap();
        let c = &o.container;
        assert_eq!((c.format, c.version.as_str()), (ContainerFormat::Vmdk, "1"));
        assert_eq!(c.subformat.as_deref(), Some("monolithicSparse"));
        assert_eq!((c.unit_bytes, c.virtual_size), (Some(4096), 64 * 512));
        let g = guest_bytes(&o);
        for (grain, want) in [(0, 0u8), (1, 1), (2, 0), (5, 2), (6, 0), (7, 0)] {
            assert!(
                g[grain * 4096..(grain + 1) * 4096]
                    .iter()
                    .all(|&b| b == want),
                "{grain}"
            );
        }
        // Without the zeroed-grain flag a GTE of 1 is sector 1: the
        // descriptor's bytes (here zeros but for the header's check).
        let img = Sparse::new(0, &[(6, 1), (0, 8)], "x");
        let g = guest_bytes(&open_one(img.bytes).unwrap());
        assert_eq!(g[6 * 4096], b'x');
    }

    #[test]
    fn reads_cross_grains_and_tables_at_odd_offsets() {
        let img = Sparse::new(0, &[(3, 8), (4, 16)], "");
        let g = open_one(img.bytes).unwrap().guest.unwrap();
        let mut buf = vec![0u8; 5000];
        g.read_exact_at(&mut buf, 3 * 4096 + 100).unwrap();
        assert!(buf[..3996].iter().all(|&b| b == 1));
        assert!(buf[3996..].iter().all(|&b| b == 2));
        assert!(g.read_exact_at(&mut buf, 64 * 512 - 10).is_err());
    }

    /// A flat base VMDK in memory: descriptor and extent of 32 KiB of 9s.
    fn with_base(files: MemFiles) -> MemFiles {
        files
            .with(
                "/vm/base.vmdk",
                b"# Disk DescriptorFile\ncreateType=\"monolithicFlat\"\nRW 64 FLAT \"base-flat.vmdk\" 0\n"
                    .to_vec(),
            )
            .with("/vm/base-flat.vmdk", vec![9u8; 64 * 512])
    }

    #[test]
    fn an_overlay_reads_unallocated_grains_from_its_parent_not_zeroed_ones() {
        let desc = "# Disk DescriptorFile\ncreateType=\"monolithicSparse\"\nparentFileNameHint=\"base.vmdk\"\n";
        let img = Sparse::new(FLAG_ZERO_GRAIN, &[(1, 8), (6, 1)], desc);
        let files = with_base(MemFiles::default().with("/vm/top.vmdk", img.bytes));
        let o = open_mem(files, "/vm/top.vmdk").unwrap();
        assert_eq!(o.container.backing.len(), 1);
        assert_eq!(o.container.backing[0].path, "/vm/base.vmdk");
        let g = guest_bytes(&o);
        for (grain, want) in [(0, 9u8), (1, 1), (5, 9), (6, 0), (7, 9)] {
            assert!(
                g[grain * 4096..(grain + 1) * 4096]
                    .iter()
                    .all(|&b| b == want),
                "{grain}"
            );
        }
    }

    #[test]
    fn a_parent_naming_itself_or_missing_is_refused() {
        let desc = "createType=\"monolithicSparse\"\nparentFileNameHint=\"top.vmdk\"\n";
        let img = Sparse::new(0, &[], desc);
        let r = open_mem(
            MemFiles::default().with("/vm/top.vmdk", img.bytes),
            "/vm/top.vmdk",
        );
        assert!(matches!(
            r.as_ref().map_err(|e| &e.kind),
            Err(ImageErrorKind::Loop { .. })
        ));
        let desc = "createType=\"monolithicSparse\"\nparentFileNameHint=\"gone.vmdk\"\n";
        let img = Sparse::new(0, &[], desc);
        let r = open_mem(
            MemFiles::default().with("/vm/top.vmdk", img.bytes),
            "/vm/top.vmdk",
        );
        let at = 512 + desc.find("gone").unwrap();
        refused(r, &["gone.vmdk", &format!("named at byte {at}")]);
        let desc = "createType=\"monolithicSparse\"\nparentFileNameHint=\"\"\n";
        let img = Sparse::new(0, &[], desc);
        let o = open_mem(
            MemFiles::default().with("/vm/top.vmdk", img.bytes),
            "/vm/top.vmdk",
        );
        assert!(o.unwrap().container.backing.is_empty());
    }

    #[test]
    fn hostile_headers_are_refused_naming_the_field_and_byte() {
        let cases: [(&str, usize, u64, bool, &[&str]); 9] = [
            (
                "version 4",
                KDMV_VERSION,
                4,
                false,
                &["at byte 4", "version 4"],
            ),
            (
                "no GTEs",
                KDMV_GTES_PER_GT,
                0,
                false,
                &["at byte 44", "numGTEsPerGT 0"],
            ),
            (
                "513 GTEs",
                KDMV_GTES_PER_GT,
                513,
                false,
                &["at byte 44", "numGTEsPerGT 513"],
            ),
            (
                "grain 0",
                KDMV_GRAIN_SIZE,
                0,
                true,
                &["at byte 20", "grainSize 0"],
            ),
            (
                "grain 1 GiB + 1",
                KDMV_GRAIN_SIZE,
                MAX_GRAIN_SECTORS + 1,
                true,
                &["at byte 20", "grainSize"],
            ),
            (
                "capacity",
                KDMV_CAPACITY,
                1 << 50,
                true,
                &["at byte 12", "grain directory of"],
            ),
            (
                "capacity overflow",
                KDMV_CAPACITY,
                u64::MAX / 256,
                true,
                &["at byte 12", "capacity"],
            ),
            (
                "gd past end",
                KDMV_GD_OFFSET,
                1 << 30,
                true,
                &["at byte 56", "gdOffset"],
            ),
            (
                "overhead",
                KDMV_OVERHEAD,
                1 << 20,
                true,
                &["at byte 64", "overHead"],
            ),
        ];
        for (what, at, value, wide, names) in cases {
            let mut img = Sparse::new(0, &[], "");
            if wide {
                img.put64(at, value);
            } else {
                img.put32(at, value as u32);
            }
            let e = timed(|| refused(open_one(img.bytes), names));
            assert!(e.contains("/vm/disk.vmdk: VMDK header"), "{what}: {e}");
        }
        let img = Sparse::new(0, &[], "");
        refused(
            open_one(img.bytes[..50].to_vec()),
            &["VMDK header at byte 0", "truncated"],
        );
    }

    #[test]
    fn a_grain_table_or_grain_past_the_end_fails_the_read_naming_its_entry() {
        let mut img = Sparse::new(0, &[(0, 8), (1, 4000)], "");
        img.bytes.truncate(16 * 512);
        img.put32(1028, 50_000); // GD entry 1: the second grain table
        let g = open_one(img.bytes).unwrap().guest.unwrap();
        let mut buf = [0u8; 512];
        g.read_exact_at(&mut buf, 0).unwrap();
        let e = g.read_exact_at(&mut buf, 4096).unwrap_err().to_string();
        assert!(
            e.contains("VMDK grain table at byte 1540") && e.contains("past the end"),
            "{e}"
        );
        let e = g.read_exact_at(&mut buf, 4 * 4096).unwrap_err().to_string();
        assert!(
            e.contains("VMDK grain directory at byte 1028") && e.contains("entry 1"),
            "{e}"
        );
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    }

    /// A streamOptimized file: grain 2 compressed at sector 8 behind a
    /// marker (`size` as given, or the stream's own length).
    fn stream(payload: &[u8], size: Option<u32>) -> Vec<u8> {
        let mut img = Sparse::new(FLAG_MARKERS | (1 << 16), &[(2, 8)], "");
        img.put32(KDMV_VERSION, 3);
        img.bytes[KDMV_COMPRESS_ALGORITHM..KDMV_COMPRESS_ALGORITHM + 2]
            .copy_from_slice(&COMPRESSION_DEFLATE.to_le_bytes());
        let z = zlib(payload);
        img.bytes.truncate(8 * 512);
        img.bytes.extend_from_slice(&16u64.to_le_bytes());
        img.bytes
            .extend_from_slice(&size.unwrap_or(z.len() as u32).to_le_bytes());
        img.bytes.extend_from_slice(&z);
        img.bytes.resize(img.bytes.len().div_ceil(512) * 512, 0);
        img.bytes
    }

    #[test]
    fn compressed_grains_inflate_and_lying_markers_fail_their_read() {
        let payload: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        let o = open_one(stream(&payload, None)).unwrap();
        assert_eq!(o.container.compression.as_deref(), Some("deflate"));
        assert_eq!(o.container.subformat.as_deref(), Some("streamOptimized"));
        let g = guest_bytes(&o);
        assert_eq!(&g[2 * 4096..3 * 4096], &payload[..]);

        let read = |bytes: Vec<u8>| {
            let g = open_one(bytes).unwrap().guest.unwrap();
            let mut buf = [0u8; 512];
            timed(|| g.read_exact_at(&mut buf, 2 * 4096).unwrap_err().to_string())
        };
        let e = read(stream(&payload, Some(3 * 4096)));
        assert!(
            e.contains("VMDK compressed grain at byte 4096") && e.contains("marker's size 12288"),
            "{e}"
        );
        let e = read(stream(&payload, Some(4000)));
        assert!(e.contains("past the end of the file"), "{e}");
        let e = read(stream(&[7u8; 5000], None));
        assert!(e.contains("inflates past the grain"), "{e}");
        let mut bad = stream(&payload, None);
        bad[8 * 512 + 14] ^= 0xff;
        let e = read(bad);
        assert!(e.contains("VMDK compressed grain"), "{e}");
        // A short grain reads where it has bytes and fails past them.
        let g = open_one(stream(&payload[..1000], None))
            .unwrap()
            .guest
            .unwrap();
        let mut buf = [0u8; 1000];
        g.read_exact_at(&mut buf, 2 * 4096).unwrap();
        assert!(g.read_exact_at(&mut buf, 2 * 4096 + 512).is_err());
    }

    #[test]
    fn a_footer_gives_the_grain_directory_when_the_header_says_at_end() {
        let payload = vec![3u8; 4096];
        let mut bytes = stream(&payload, None);
        let header = bytes[..512].to_vec();
        let mut footer = vec![0u8; 1536];
        footer[12..16].copy_from_slice(&MARKER_FOOTER.to_le_bytes());
        footer[512..1024].copy_from_slice(&header);
        bytes.extend_from_slice(&footer);
        bytes[KDMV_GD_OFFSET..KDMV_GD_OFFSET + 8].copy_from_slice(&GD_AT_END.to_le_bytes());
        let o = open_one(bytes.clone()).unwrap();
        assert_eq!(&guest_bytes(&o)[2 * 4096..3 * 4096], &payload[..]);
        // The footer's gdOffset at end again: past the end.
        let at = bytes.len() - 1024 + KDMV_GD_OFFSET;
        let mut again = bytes.clone();
        again[at..at + 8].copy_from_slice(&GD_AT_END.to_le_bytes());
        refused(open_one(again), &[&format!("at byte {at}"), "gdOffset"]);
        // No end-of-stream marker.
        let mut bad = bytes;
        let eos = bad.len() - 512 + 12;
        bad[eos] = 9;
        refused(open_one(bad), &["end-of-stream marker"]);
        // Too short for a footer.
        let mut tiny = Sparse::new(0, &[], "").bytes;
        tiny.truncate(1024);
        tiny[KDMV_GD_OFFSET..KDMV_GD_OFFSET + 8].copy_from_slice(&GD_AT_END.to_le_bytes());
        tiny[KDMV_OVERHEAD] = 0;
        refused(open_one(tiny), &["at byte 56", "too few"]);
    }

    fn parse(text: &str) -> Result<Descriptor, ImageError> {
        parse_descriptor(text.as_bytes(), 0, true, Path::new("/d.vmdk"))
    }

    #[test]
    fn the_descriptor_parser_reads_keys_comments_quotes_and_extents() {
        let text = "# Disk DescriptorFile\r\nversion=1\r\n  # indented comment\r\n\
                    createType = \"twoGbMaxExtentFlat\"\r\n\
                    parentFileNameHint=\"/vm/my base.vmdk\"\r\n\
                    RW 4192256 FLAT \"disk name-f001.vmdk\" 0\r\n\
                    RDONLY 2048 SPARSE \"s.vmdk\"\r\n\tNOACCESS 16 VMFS \"v.vmdk\"\r\n\
                    RW 100 ZERO\r\nddb.adapterType = \"ide\"\r\n";
        let d = parse(text).unwrap();
        let at = |s: &str| text.find(s).unwrap() as u64;
        assert_eq!(
            d.create_type,
            Some(("twoGbMaxExtentFlat".into(), at("twoGb")))
        );
        assert_eq!(d.parent, Some(("/vm/my base.vmdk".into(), at("/vm/my"))));
        assert_eq!(d.extents.len(), 4);
        assert_eq!(
            d.extents[0],
            ExtentLine {
                access: Access::Rw,
                sectors: 4192256,
                kind: ExtentKind::Flat,
                file: Some(("disk name-f001.vmdk".into(), at("disk name"))),
                start: 0,
                at: at("RW 4192256"),
            }
        );
        assert_eq!(d.extents[1].access, Access::Rdonly);
        assert_eq!(
            (d.extents[2].access, d.extents[2].kind),
            (Access::Noaccess, ExtentKind::Vmfs)
        );
        assert_eq!(d.extents[2].at, at("NOACCESS"));
        assert_eq!(
            (d.extents[3].kind, d.extents[3].file.clone()),
            (ExtentKind::Zero, None)
        );
        // Text after a NUL is padding.
        assert!(parse("createType=\"x\"\n\0RW 1 FLAT")
            .unwrap()
            .extents
            .is_empty());
    }

    #[test]
    fn bad_extent_lines_are_refused_at_their_byte() {
        let cases = [
            ("RW 12x FLAT \"f\" 0", 3, "extent size \"12x\""),
            ("RW", 0, "no size"),
            ("RW 8", 0, "no extent type"),
            ("RW 8 VMFSRDM \"f\"", 5, "extent type \"VMFSRDM\""),
            ("RW 8 FLAT \"f", 10, "no closing quote"),
            ("RW 8 FLAT \"f\"", 0, "needs its offset"),
            ("RW 8 FLAT f 0", 10, "not in double quotes"),
            ("RW 8 FLAT \"f\" 0 junk", 16, "unexpected \"junk\""),
            ("RW 8 SPARSE \"f\" 3", 0, "takes no offset"),
            ("RW 8 SPARSE", 0, "needs a quoted file name"),
            ("RW 8 ZERO \"f\"", 0, "names no file"),
            ("RW 8 FLAT \"\" 0", 0, "empty"),
            ("RW 8 FLAT \"f\" -1", 14, "extent offset \"-1\""),
        ];
        for (line, col, msg) in cases {
            let text = format!("createType=\"x\"\n{line}\n");
            let e = refused(parse(&text).map(|_| unreachable_opened()), &[msg]);
            assert!(
                e.contains(&format!("VMDK descriptor at byte {}", 15 + col)),
                "{line}: {e}"
            );
        }
    }

    /// `refused` takes an open's result; a parse's is mapped to it.
    fn unreachable_opened() -> Opened {
        Opened {
            container: Container::default(),
            guest: None,
        }
    }

    fn descriptor(lines: &str) -> Vec<u8> {
        format!("# Disk DescriptorFile\nversion=1\ncreateType=\"custom\"\n{lines}").into_bytes()
    }

    #[test]
    fn extents_join_flat_zero_sparse_and_rdonly_in_order() {
        let sparse = Sparse::new(0, &[(0, 8)], "").bytes;
        let flat: Vec<u8> = (0..8192u32).map(|i| (i / 512) as u8).collect();
        let desc = descriptor(
            "RW 4 FLAT \"f.bin\" 2\nRW 0 FLAT \"none.bin\" 0\nRW 3 ZERO\n\
             RW 999 SPARSE \"s.vmdk\"\nRDONLY 2 FLAT \"f.bin\" 14\n",
        );
        let desc_len = desc.len() as u64;
        let files = MemFiles::default()
            .with("/vm/d.vmdk", desc)
            .with("/vm/f.bin", flat)
            .with("/vm/s.vmdk", sparse);
        let o = open_mem(files, "/vm/d.vmdk").unwrap();
        let c = &o.container;
        // The sparse extent's size is its header's capacity (64), not 999.
        assert_eq!(c.virtual_size, (4 + 3 + 64 + 2) * 512);
        assert_eq!((c.version.as_str(), c.unit_bytes), ("1", Some(4096)));
        assert_eq!(c.subformat.as_deref(), Some("custom"));
        let g = guest_bytes(&o);
        let sector = |s: usize| g[s * 512];
        assert_eq!([sector(0), sector(3), sector(4), sector(6)], [2, 5, 0, 0]);
        assert_eq!([sector(7), sector(14), sector(15)], [1, 1, 0]);
        assert_eq!([sector(71), sector(72)], [14, 15]);
        // The descriptor, f.bin and s.vmdk, f.bin counted once.
        assert_eq!(c.allocated_bytes, Some(desc_len + 8192 + 8192));
    }

    #[test]
    fn a_flat_extent_past_its_file_reads_zeros_and_noaccess_fails() {
        let desc = descriptor("RW 4 FLAT \"f.bin\" 1\nNOACCESS 2 FLAT \"nofile\" 0\n");
        let at = desc.windows(8).position(|w| w == b"NOACCESS").unwrap();
        let files = MemFiles::default()
            .with("/vm/d.vmdk", desc)
            .with("/vm/f.bin", vec![7u8; 1024]);
        let g = open_mem(files, "/vm/d.vmdk").unwrap().guest.unwrap();
        let mut buf = vec![1u8; 2048];
        g.read_exact_at(&mut buf, 0).unwrap();
        assert!(buf[..512].iter().all(|&b| b == 7) && buf[512..].iter().all(|&b| b == 0));
        let e = g
            .read_exact_at(&mut buf[..10], 2048)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("NOACCESS") && e.contains(&format!("at byte {at}")),
            "{e}"
        );
    }

    #[test]
    fn hostile_descriptors_are_refused() {
        let open = |text: Vec<u8>| {
            timed(|| open_mem(MemFiles::default().with("/vm/d.vmdk", text), "/vm/d.vmdk"))
        };
        let text = descriptor("RW 8 FLAT \"gone.bin\" 0\n");
        let at = text.windows(4).position(|w| w == b"gone").unwrap();
        refused(
            open(text),
            &["gone.bin", &format!("named at byte {at}"), "/vm/d.vmdk"],
        );
        let many = "RW 1 ZERO\n".repeat(MAX_EXTENTS + 1);
        refused(
            open(descriptor(&many)),
            &["VMDK descriptor", "more than 4096 extent lines"],
        );
        let mut long = descriptor("");
        long.resize(MAX_DESCRIPTOR as usize + 1, b'#');
        refused(
            open(long),
            &["VMDK descriptor at byte 0", "longer than any descriptor"],
        );
        let huge = format!("RW {} ZERO\nRW {} ZERO\n", i64::MAX as u64 / 512, 2);
        refused(open(descriptor(&huge)), &["add up to more than 2^63"]);
        refused(
            open(descriptor(&format!("RW {} ZERO\n", u64::MAX))),
            &["is too large"],
        );
        // No magic and no createType (a parent is opened as a VMDK
        // whatever its magic says).
        let files = MemFiles::default();
        let text: SharedReader = Rc::new(b"version=1\nRW 8 ZERO\n".to_vec());
        let r = super::open(text, Path::new("/vm/p"), &mut Chain::new(&files));
        refused(r, &["VMDK descriptor at byte 0", "no createType"]);
        refused(open(descriptor("RW 8 SESPARSE \"x\"\n")), &["SESPARSE"]);
        // A sparse extent that is no sparse file, or holds a descriptor.
        let files = MemFiles::default().with("/vm/d.vmdk", descriptor("RW 8 SPARSE \"d.vmdk\"\n"));
        refused(open_mem(files, "/vm/d.vmdk"), &["no KDMV or COWD magic"]);
        let mut inner = Sparse::new(0, &[], "").bytes;
        inner[KDMV_CAPACITY..KDMV_CAPACITY + 8].fill(0);
        let files = MemFiles::default()
            .with("/vm/d.vmdk", descriptor("RW 8 SPARSE \"s.vmdk\"\n"))
            .with("/vm/s.vmdk", inner);
        refused(
            open_mem(files, "/vm/d.vmdk"),
            &[
                "/vm/s.vmdk: VMDK header at byte 12",
                "descriptor inside an extent",
            ],
        );
    }

    #[test]
    fn a_sparse_file_holding_only_a_descriptor_opens_its_extents() {
        let mut img = Sparse::new(0, &[], "createType=\"vmfs\"\nRW 4 VMFS \"flat.bin\"\n");
        img.put64(KDMV_CAPACITY, 0);
        let files = MemFiles::default()
            .with("/vm/d.vmdk", img.bytes)
            .with("/vm/flat.bin", vec![4u8; 2048]);
        let o = open_mem(files, "/vm/d.vmdk").unwrap();
        assert_eq!(o.container.subformat.as_deref(), Some("vmfs"));
        assert_eq!(guest_bytes(&o), vec![4u8; 2048]);
    }

    #[test]
    fn a_cowd_extent_maps_grains_through_4096_entry_tables() {
        // 16 sectors in grains of 2; GD of 1 entry at sector 1, the grain
        // table at sector 2 (16 KiB), grain 3 at sector 40.
        let mut b = vec![0u8; 41 * 512];
        b[..4].copy_from_slice(b"COWD");
        for (at, v) in [
            (COWD_VERSION, 1u32),
            (COWD_CAPACITY, 16),
            (COWD_GRAIN_SIZE, 2),
        ] {
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        for (at, v) in [
            (COWD_GD_OFFSET, 1u32),
            (COWD_GD_ENTRIES, 1),
            (512, 2),
            (1024 + 12, 39),
        ] {
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        b[39 * 512..41 * 512].fill(6);
        let files = MemFiles::default()
            .with("/vm/d.vmdk", descriptor("RW 16 VMFSSPARSE \"c.vmdk\"\n"))
            .with("/vm/c.vmdk", b.clone());
        let g = guest_bytes(&open_mem(files, "/vm/d.vmdk").unwrap());
        assert!(g[3 * 1024..4 * 1024].iter().all(|&x| x == 6));
        assert!(g[..3 * 1024].iter().chain(&g[4 * 1024..]).all(|&x| x == 0));
        // A GD of too many entries for the file.
        b[COWD_GD_ENTRIES..COWD_GD_ENTRIES + 4].copy_from_slice(&100_000u32.to_le_bytes());
        let files = MemFiles::default()
            .with("/vm/d.vmdk", descriptor("RW 16 VMFSSPARSE \"c.vmdk\"\n"))
            .with("/vm/c.vmdk", b);
        refused(
            open_mem(files, "/vm/d.vmdk"),
            &["VMDK header at byte 20", "gdOffset"],
        );
    }
}
