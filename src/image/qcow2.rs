//! qcow2, QEMU's copy-on-write format (versions 2 and 3): the guest disk
//! read through the two-level cluster map, with zero clusters, compressed
//! clusters (deflate or zstd), extended L2 entries (subclusters), a backing
//! file and an external data file.
//!
//! Every layout detail here is checked against QEMU's own reader and named
//! where it is used: the spec (`docs/interop/qcow2.txt`), `block/qcow2.h`,
//! `block/qcow2.c` (`qcow2_do_open`, `qcow2_read_extensions`,
//! `qcow2_validate_table`, `qcow2_co_preadv_compressed`),
//! `block/qcow2-cluster.c` (`qcow2_get_host_offset`,
//! `qcow2_parse_compressed_l2_entry`) and `block/qcow2-threads.c`
//! (`qcow2_decompress`, `qcow2_zstd_decompress`).
//!
//! The image is hostile until proven otherwise: the header is checked as
//! `qcow2_do_open` checks it before anything is allocated by its counts,
//! the L1 table and the L2 tables are read lazily, only where the guest is
//! read, and bounded caches hold what was read. Where QEMU accepts an image
//! we read it the way QEMU reads it, so the guest is byte for byte what
//! `qemu-img convert -O raw` makes of it.

use super::cache::Cache;
use super::{
    pieces, read_error, BackingFile, Chain, Container, ContainerFormat, Fallback, ImageError,
    Opened,
};
use crate::bytes::{be_u32, be_u64, read_bytes, ReadAt};
use crate::stack::SharedReader;
use std::cell::RefCell;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

const HEADER: &str = "qcow2 header";
const EXTENSION: &str = "qcow2 header extension";
const BACKING_NAME: &str = "qcow2 backing file name";
const L1_TABLE: &str = "qcow2 L1 table";
const L2_TABLE: &str = "qcow2 L2 table";
const COMPRESSED: &str = "qcow2 compressed cluster";

const MAGIC: &[u8; 4] = b"QFI\xfb";
/// The version 2 header, and the fields every version has (spec, "Header").
const V2_HEADER_BYTES: u64 = 72;
/// The least a version 3 header holds: up to and with `header_length`.
const V3_HEADER_BYTES: u64 = 104;
/// Byte of the optional `compression_type` field (version 3).
const COMPRESSION_TYPE_AT: u64 = 104;
/// qcow2.h `MIN_CLUSTER_BITS`, `MAX_CLUSTER_BITS`: QEMU opens nothing else.
const MIN_CLUSTER_BITS: u32 = 9;
const MAX_CLUSTER_BITS: u32 = 21;
/// qcow2.h `QCOW_MAX_L1_SIZE`: the largest L1 table QEMU reads, in bytes.
const MAX_L1_BYTES: u64 = 32 << 20;
/// The longest backing file name (spec, `backing_file_size`; qcow2_do_open).
const MAX_BACKING_NAME: u64 = 1023;
/// QEMU keeps the backing format in `char backing_format[16]`
/// (block_int-common.h): qcow2_read_extensions refuses 16 bytes or more.
const MAX_BACKING_FORMAT: u64 = 15;

/// Incompatible feature bits (qcow2.h `QCOW2_INCOMPAT_*`).
const INCOMPAT_DATA_FILE: u64 = 1 << 2;
const INCOMPAT_COMPRESSION: u64 = 1 << 3;
const INCOMPAT_EXTL2: u64 = 1 << 4;
/// Dirty (0), corrupt (1), data file, compression type, extended L2: the
/// bits QEMU knows (`QCOW2_INCOMPAT_MASK`). A dirty image has refcounts
/// to repair and a corrupt one may not be written; both read as they are.
const INCOMPAT_KNOWN: u64 = 0x1f;
/// Autoclear bit 1, "raw external data" (`QCOW2_AUTOCLEAR_DATA_FILE_RAW`).
const AUTOCLEAR_DATA_FILE_RAW: u64 = 1 << 1;

/// Header extension types (spec, "Header extensions").
const EXT_END: u32 = 0;
const EXT_BACKING_FORMAT: u32 = 0xe279_2aca;
const EXT_FEATURE_TABLE: u32 = 0x6803_f857;
const EXT_DATA_FILE: u32 = 0x4441_5441;
/// One feature name table entry: type, bit, 46 bytes of name.
const FEATURE_ENTRY_BYTES: u64 = 48;

/// L1 and L2 entry fields (qcow2.h).
const OFLAG_COPIED: u64 = 1 << 63;
const OFLAG_COMPRESSED: u64 = 1 << 62;
const OFLAG_ZERO: u64 = 1;
/// `L1E_OFFSET_MASK`, `L2E_OFFSET_MASK`: bits 9-55.
const OFFSET_MASK: u64 = 0x00ff_ffff_ffff_fe00;
/// `QCOW_EXTL2_SUBCLUSTERS_PER_CLUSTER`.
const SUBCLUSTERS: u64 = 32;
/// `QCOW2_COMPRESSED_SECTOR_SIZE`: compressed sizes count these.
const COMPRESSED_SECTOR: u64 = 512;

/// The L1 table is read in pieces of this many bytes, where the guest is
/// read: a large image's L1 table runs to megabytes, `check` needs a few
/// entries of it.
const L1_CHUNK_BYTES: u64 = 4096;
/// Most bytes of L2 tables and of inflated clusters held at once, each.
const CACHE_BYTES: u64 = 4 << 20;
/// Most entries a cache holds, whatever their size (a lookup walks them).
const CACHE_ENTRIES: u64 = 512;
/// The largest zstd window accepted: a qcow2 cluster is at most 2 MiB and
/// libzstd, given the cluster whole as QEMU gives it, writes one frame no
/// wider than its content; the bound keeps a hostile frame from making the
/// decoder buffer more than this.
const MAX_ZSTD_WINDOW: u64 = 8 << 20;

/// How compressed clusters are compressed (spec, `compression_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compression {
    /// Raw deflate, no zlib header (qcow2-threads.c `qcow2_compress`).
    Zlib,
    /// One or more zstd frames (qcow2-threads.c `qcow2_zstd_compress`).
    Zstd,
}

impl Compression {
    fn name(self) -> &'static str {
        match self {
            Compression::Zlib => "zlib",
            Compression::Zstd => "zstd",
        }
    }
}

/// The header fields the reader uses, checked as `qcow2_do_open` checks
/// them.
#[derive(Debug)]
struct Header {
    version: u32,
    backing_file_offset: u64,
    backing_file_size: u32,
    cluster_bits: u32,
    size: u64,
    crypt_method: u32,
    l1_size: u32,
    l1_table_offset: u64,
    incompatible: u64,
    autoclear: u64,
    header_length: u64,
    compression: Compression,
}

/// The cluster map's shape: cluster size and L2 entry width.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    cluster_bits: u32,
    /// Extended L2 entries: 128 bits, 32 subclusters (spec, "Extended L2
    /// Entries").
    extended: bool,
}

impl Geometry {
    fn cluster_bytes(self) -> u64 {
        1 << self.cluster_bits
    }
    fn cluster_mask(self) -> u64 {
        self.cluster_bytes() - 1
    }
    fn entry_bytes(self) -> u64 {
        if self.extended {
            16
        } else {
            8
        }
    }
    /// Entries in one L2 table (one cluster).
    fn l2_entries(self) -> u64 {
        self.cluster_bytes() / self.entry_bytes()
    }
    /// Guest bytes one L1 entry maps: a full L2 table of clusters.
    fn l1_span(self) -> u64 {
        self.l2_entries() << self.cluster_bits
    }
    /// The unit a guest read is split at: the subcluster with extended L2
    /// entries (each has its own state), else the cluster.
    fn unit_bytes(self) -> u64 {
        if self.extended {
            self.cluster_bytes() / SUBCLUSTERS
        } else {
            self.cluster_bytes()
        }
    }
    /// Where a compressed cluster's data is and how many bytes it may take
    /// (qcow2-cluster.c `qcow2_parse_compressed_l2_entry`, with qcow2.c's
    /// `csize_shift`, `csize_mask`): the low `62 - (cluster_bits - 8)` bits
    /// are the host byte, the bits above up to 61 count the 512-byte
    /// sectors after the one holding that byte.
    fn compressed(self, entry: u64) -> (u64, u64) {
        let shift = 62 - (self.cluster_bits - 8);
        let offset = entry & ((1 << shift) - 1);
        let sectors = ((entry >> shift) & ((1 << (self.cluster_bits - 8)) - 1)) + 1;
        let bytes = sectors * COMPRESSED_SECTOR - (offset % COMPRESSED_SECTOR);
        (offset, bytes)
    }
}

/// What the header extensions say (qcow2.c `qcow2_read_extensions`): each
/// string with the byte it was read at.
#[derive(Default)]
struct Extensions {
    backing_format: Option<(String, u64)>,
    data_file: Option<(String, u64)>,
    /// Where the feature name table is and its length, read only to name
    /// an unknown feature.
    feature_table: Option<(u64, u64)>,
}

/// Open a qcow2 image: its header, header extensions, external data file
/// and backing chain; the guest disk reads through the cluster map. An
/// encrypted image has its facts read (its backing chain too) and no
/// guest: its clusters are ciphertext. So has an image whose backing file
/// is encrypted: the clusters it leaves to that file cannot be read.
pub fn open(src: SharedReader, path: &Path, chain: &mut Chain) -> Result<Opened, ImageError> {
    let header = Header::read(&*src, path)?;
    let extensions = read_extensions(&*src, path, &header);
    header.check_features(&*src, path, extensions.as_ref().ok())?;
    let extensions = extensions?;
    header.check_l1(&*src, path)?;
    let data_file = data_file_name(&header, &extensions, path)?;
    let mut container = header.container(data_file.as_ref().map(|(n, _)| n.clone()));
    let fallback = match open_backing(&*src, path, chain, &header, &extensions)? {
        None => Some(Fallback::default()),
        Some((guest, files)) => {
            container.backing = files;
            guest.map(|g| Fallback { backing: Some(g) })
        }
    };
    let Some(fallback) = fallback.filter(|_| !container.encrypted) else {
        return Ok(Opened {
            container,
            guest: None,
        });
    };
    let data = data_file
        .map(|(name, at)| chain.open_named(path, &name, at))
        .transpose()?;
    let guest = Disk::new(src, path, &header, data, fallback);
    Ok(Opened {
        container,
        guest: Some(Rc::new(guest)),
    })
}

impl Header {
    /// Read and check the header (qcow2.c `qcow2_do_open`, up to the L1
    /// table).
    fn read(src: &dyn ReadAt, path: &Path) -> Result<Header, ImageError> {
        let fixed = header_bytes(src, path, V2_HEADER_BYTES, "every version's")?;
        if &fixed[..4] != MAGIC {
            return Err(bad(path, 0, "magic is not QFI\\xfb: not a qcow2 image"));
        }
        let version = be_u32(&fixed, 4);
        if !(2..=3).contains(&version) {
            return Err(bad(
                path,
                4,
                format!("version {version} is not 2 or 3 (the versions qemu reads)"),
            ));
        }
        let cluster_bits = be_u32(&fixed, 20);
        if !(MIN_CLUSTER_BITS..=MAX_CLUSTER_BITS).contains(&cluster_bits) {
            return Err(bad(
                path,
                20,
                format!(
                    "cluster_bits {cluster_bits} is outside {MIN_CLUSTER_BITS}..={MAX_CLUSTER_BITS} \
                     (512-byte to 2 MiB clusters, what qemu opens)"
                ),
            ));
        }
        let mut header = Header {
            version,
            backing_file_offset: be_u64(&fixed, 8),
            backing_file_size: be_u32(&fixed, 16),
            cluster_bits,
            size: be_u64(&fixed, 24),
            crypt_method: be_u32(&fixed, 32),
            l1_size: be_u32(&fixed, 36),
            l1_table_offset: be_u64(&fixed, 40),
            incompatible: 0,
            autoclear: 0,
            header_length: V2_HEADER_BYTES,
            compression: Compression::Zlib,
        };
        if version == 3 {
            header.read_v3(src, path)?;
        }
        header.check_fields(path)?;
        Ok(header)
    }

    /// The version 3 fields: feature bits, `header_length` and, when the
    /// header is long enough to hold it, `compression_type`.
    fn read_v3(&mut self, src: &dyn ReadAt, path: &Path) -> Result<(), ImageError> {
        let v3 = header_bytes(src, path, V3_HEADER_BYTES, "a version 3")?;
        self.incompatible = be_u64(&v3, 72);
        self.autoclear = be_u64(&v3, 88);
        let refcount_order = be_u32(&v3, 96);
        if refcount_order > 6 {
            return Err(bad(
                path,
                96,
                format!("refcount_order {refcount_order} is above 6 (64-bit refcounts)"),
            ));
        }
        let length = u64::from(be_u32(&v3, 100));
        let cluster = 1u64 << self.cluster_bits;
        if length < V3_HEADER_BYTES {
            return Err(bad(
                path,
                100,
                format!("header_length {length} is below the {V3_HEADER_BYTES} bytes of a version 3 header"),
            ));
        }
        if length > cluster {
            return Err(bad(
                path,
                100,
                format!(
                    "header_length {length} exceeds the {cluster}-byte cluster the header is in"
                ),
            ));
        }
        if length > src.len() {
            return Err(bad(
                path,
                100,
                format!(
                    "header_length {length} runs past the end of the file at byte {} (truncated?)",
                    src.len()
                ),
            ));
        }
        self.header_length = length;
        // Absent, the field reads as 0, zlib (spec, "Additional fields").
        if length > COMPRESSION_TYPE_AT {
            let byte = bytes_at(src, path, HEADER, COMPRESSION_TYPE_AT, 1)?[0];
            self.compression = self.compression_type(path, byte)?;
        } else if self.incompatible & INCOMPAT_COMPRESSION != 0 {
            return Err(bad(
                path,
                72,
                "incompatible_features bit 3 (compression type) is set but the header is too \
                 short to hold compression_type",
            ));
        }
        Ok(())
    }

    /// `compression_type` and incompatible bit 3 must agree (qcow2.c
    /// `validate_compression_type`).
    fn compression_type(&self, path: &Path, byte: u8) -> Result<Compression, ImageError> {
        let flagged = self.incompatible & INCOMPAT_COMPRESSION != 0;
        match (byte, flagged) {
            (0, false) => Ok(Compression::Zlib),
            (1, true) => Ok(Compression::Zstd),
            (0, true) => Err(bad(
                path,
                72,
                "incompatible_features bit 3 (compression type) is set but compression_type is 0 (zlib)",
            )),
            (1, false) => Err(bad(
                path,
                COMPRESSION_TYPE_AT,
                "compression_type 1 (zstd) without incompatible_features bit 3 set",
            )),
            (n, _) => Err(bad(
                path,
                COMPRESSION_TYPE_AT,
                format!("compression_type {n} is not 0 (zlib) or 1 (zstd)"),
            )),
        }
    }

    /// The fields every version has, checked before anything is read by
    /// them.
    fn check_fields(&self, path: &Path) -> Result<(), ImageError> {
        let cluster = self.geometry().cluster_bytes();
        if self.backing_file_offset > cluster {
            return Err(bad(
                path,
                8,
                format!(
                    "backing_file_offset {} is past the first cluster (the name must be in its {cluster} bytes)",
                    self.backing_file_offset
                ),
            ));
        }
        if self.crypt_method > 2 {
            return Err(bad(
                path,
                32,
                format!(
                    "crypt_method {} is not 0 (none), 1 (AES) or 2 (LUKS)",
                    self.crypt_method
                ),
            ));
        }
        Ok(())
    }

    /// Refuse the incompatible features we do not read, naming each bit
    /// (and its name, when the image's feature name table gives one), as
    /// qcow2.c `report_unsupported_feature` does; and the extended L2
    /// entries qemu refuses for clusters below 16 KiB.
    fn check_features(
        &self,
        src: &dyn ReadAt,
        path: &Path,
        extensions: Option<&Extensions>,
    ) -> Result<(), ImageError> {
        let unknown = self.incompatible & !INCOMPAT_KNOWN;
        if unknown != 0 {
            let table = extensions.and_then(|e| e.feature_table);
            let names = table.map_or_else(Vec::new, |t| feature_names(src, t));
            let bits: Vec<String> = (0..64)
                .filter(|bit| unknown & (1u64 << bit) != 0)
                .map(|bit| match names.iter().find(|(b, _)| *b == bit) {
                    Some((_, name)) => format!("bit {bit} ({name:?})"),
                    None => format!("bit {bit}"),
                })
                .collect();
            return Err(bad(
                path,
                72,
                format!(
                    "incompatible_features {} set: a feature diskalign does not read (qemu refuses it too)",
                    bits.join(", ")
                ),
            ));
        }
        if self.geometry().extended && self.cluster_bits < MIN_CLUSTER_BITS + 5 {
            return Err(bad(
                path,
                20,
                format!(
                    "cluster_bits {} with extended L2 entries (incompatible_features bit 4) makes \
                     subclusters below 512 bytes: they need cluster_bits 14 or more",
                    self.cluster_bits
                ),
            ));
        }
        if self.autoclear & AUTOCLEAR_DATA_FILE_RAW != 0
            && self.incompatible & INCOMPAT_DATA_FILE == 0
        {
            return Err(bad(
                path,
                88,
                "autoclear_features bit 1 (raw external data) without incompatible_features bit 2 \
                 (external data file)",
            ));
        }
        Ok(())
    }

    /// The L1 table's bounds (qcow2.c `qcow2_validate_table` with
    /// `QCOW_MAX_L1_SIZE`, and "L1 table is too small"): it fits qemu's
    /// limit, maps the whole virtual size and lies in the file. Nothing
    /// is read yet.
    fn check_l1(&self, src: &dyn ReadAt, path: &Path) -> Result<(), ImageError> {
        let geometry = self.geometry();
        let max = MAX_L1_BYTES / 8;
        let needed = self.size.div_ceil(geometry.l1_span());
        if needed > max {
            return Err(bad(
                path,
                24,
                format!(
                    "size {} bytes needs {needed} L1 entries with {}-byte clusters, more than \
                     the {max} of qemu's largest (32 MiB) L1 table",
                    self.size,
                    geometry.cluster_bytes()
                ),
            ));
        }
        let entries = u64::from(self.l1_size);
        if entries > max {
            return Err(bad(
                path,
                36,
                format!("l1_size {entries} entries exceeds the {max} of qemu's largest (32 MiB) L1 table"),
            ));
        }
        if entries < needed {
            return Err(bad(
                path,
                36,
                format!(
                    "l1_size {entries} entries cannot map size {} bytes, which needs {needed}",
                    self.size
                ),
            ));
        }
        let offset = self.l1_table_offset;
        if offset & geometry.cluster_mask() != 0 {
            return Err(bad(
                path,
                40,
                format!(
                    "l1_table_offset {offset} is not a multiple of the {}-byte cluster",
                    geometry.cluster_bytes()
                ),
            ));
        }
        let end = offset.checked_add(entries * 8);
        if entries > 0 && end.is_none_or(|e| e > src.len()) {
            return Err(bad(
                path,
                40,
                format!(
                    "l1_table_offset {offset} with l1_size {entries} (8 bytes each) runs past the \
                     end of the file at byte {}",
                    src.len()
                ),
            ));
        }
        Ok(())
    }

    fn geometry(&self) -> Geometry {
        Geometry {
            cluster_bits: self.cluster_bits,
            extended: self.incompatible & INCOMPAT_EXTL2 != 0,
        }
    }

    /// Where the header extensions end: at the backing file name, else at
    /// the end of the first cluster (qcow2_do_open, `ext_end`).
    fn extensions_end(&self) -> u64 {
        if self.backing_file_offset != 0 {
            self.backing_file_offset
        } else {
            self.geometry().cluster_bytes()
        }
    }

    /// The guest disk's size as qemu gives it: whole 512-byte sectors
    /// (qcow2_do_open sets `total_sectors = size / 512`).
    fn virtual_size(&self) -> u64 {
        self.size & !511
    }

    fn container(&self, data_file: Option<String>) -> Container {
        let geometry = self.geometry();
        Container {
            format: ContainerFormat::Qcow2,
            version: self.version.to_string(),
            unit_bytes: Some(geometry.cluster_bytes()),
            subunit_bytes: geometry.extended.then(|| geometry.unit_bytes()),
            virtual_size: self.virtual_size(),
            data_file,
            compression: Some(self.compression.name().to_string()),
            encrypted: self.crypt_method != 0,
            ..Container::default()
        }
    }
}

/// The first `len` bytes of the file, or the error naming the header as
/// truncated.
fn header_bytes(
    src: &dyn ReadAt,
    path: &Path,
    len: u64,
    whose: &str,
) -> Result<Vec<u8>, ImageError> {
    if src.len() < len {
        return Err(bad(
            path,
            0,
            format!(
                "{whose} header needs {len} bytes but the file ends at byte {} (truncated?)",
                src.len()
            ),
        ));
    }
    bytes_at(src, path, HEADER, 0, len)
}

/// Walk the header extensions from `header_length` to their end (qcow2.c
/// `qcow2_read_extensions`): each is a type, a length and that many bytes
/// padded to 8; type 0 ends the list; unknown types are skipped. A length
/// that runs past the end of the area is refused, as qemu refuses it.
/// QEMU reads past the end of the file as zeros, which end the list: so
/// does an extension header the file cuts.
fn read_extensions(
    src: &dyn ReadAt,
    path: &Path,
    header: &Header,
) -> Result<Extensions, ImageError> {
    let end = header.extensions_end();
    let mut found = Extensions::default();
    let mut at = header.header_length;
    while at < end && at + 8 <= src.len() {
        let head = bytes_at(src, path, EXTENSION, at, 8)?;
        let (kind, len) = (be_u32(&head, 0), u64::from(be_u32(&head, 4)));
        let data = at + 8;
        if data > end || len > end - data {
            return Err(ImageError::parse(
                path,
                EXTENSION,
                at,
                format!(
                    "extension 0x{kind:08x} length {len} runs past the end of the extension area at byte {end}"
                ),
            ));
        }
        match kind {
            EXT_END => break,
            EXT_BACKING_FORMAT => {
                if len > MAX_BACKING_FORMAT {
                    return Err(ImageError::parse(
                        path,
                        EXTENSION,
                        at,
                        format!(
                            "backing file format length {len} is over qemu's {MAX_BACKING_FORMAT} bytes"
                        ),
                    ));
                }
                let name = string_at(src, path, EXTENSION, data, len, "backing file format")?;
                found.backing_format = Some((name, data));
            }
            EXT_DATA_FILE => {
                let name = string_at(src, path, EXTENSION, data, len, "external data file name")?;
                found.data_file = Some((name, data));
            }
            EXT_FEATURE_TABLE => found.feature_table = Some((data, len)),
            _ => {}
        }
        // `len` is below `end`, at most the 2 MiB first cluster.
        at = data + len.next_multiple_of(8);
    }
    Ok(found)
}

/// The incompatible features the feature name table names, by bit: only
/// to name an unknown feature in an error, so a table that cannot be read
/// names nothing.
fn feature_names(src: &dyn ReadAt, (at, len): (u64, u64)) -> Vec<(u32, String)> {
    let Ok(table) = read_bytes(src, EXTENSION, at, len) else {
        return Vec::new();
    };
    table
        .chunks_exact(FEATURE_ENTRY_BYTES as usize)
        .filter(|e| e[0] == 0)
        .map(|e| {
            let name = &e[2..];
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            (
                u32::from(e[1]),
                String::from_utf8_lossy(&name[..end]).into_owned(),
            )
        })
        .collect()
}

/// The external data file, when incompatible bit 2 says there is one: its
/// name and the byte it was read at. qemu refuses an image that needs one
/// and names none (without a `data-file` option, which we do not have).
fn data_file_name(
    header: &Header,
    extensions: &Extensions,
    path: &Path,
) -> Result<Option<(String, u64)>, ImageError> {
    if header.incompatible & INCOMPAT_DATA_FILE == 0 {
        return Ok(None);
    }
    match &extensions.data_file {
        Some((name, at)) if !name.is_empty() => Ok(Some((name.clone(), *at))),
        _ => Err(bad(
            path,
            72,
            "incompatible_features bit 2 (external data file) is set but no header extension \
             0x44415441 names the data file",
        )),
    }
}

/// The backing file's name (qcow2_do_open, "read the backing file name"):
/// at most 1023 bytes and inside the first cluster; like qemu's C string
/// it ends at a NUL, and an empty name is no backing file.
fn backing_name(
    src: &dyn ReadAt,
    path: &Path,
    header: &Header,
) -> Result<Option<String>, ImageError> {
    let at = header.backing_file_offset;
    if at == 0 {
        return Ok(None);
    }
    let len = u64::from(header.backing_file_size);
    if len > MAX_BACKING_NAME {
        return Err(bad(
            path,
            16,
            format!("backing_file_size {len} is over qemu's {MAX_BACKING_NAME}-byte limit for a backing file name"),
        ));
    }
    let room = header.geometry().cluster_bytes() - at;
    if len > room {
        return Err(bad(
            path,
            16,
            format!(
                "backing_file_size {len} runs past the first cluster: the name at byte {at} has room for {room}"
            ),
        ));
    }
    let name = string_at(src, path, BACKING_NAME, at, len, "backing file name")?;
    Ok((!name.is_empty()).then_some(name))
}

/// Open the backing chain below this image, as the format it declares
/// (the backing format extension) or, with none declared, as its magic
/// says (qemu probes it too). Returns the backing guest (None inside when
/// the backing file is encrypted) and the chain, or None without a backing
/// file.
fn open_backing(
    src: &dyn ReadAt,
    path: &Path,
    chain: &mut Chain,
    header: &Header,
    extensions: &Extensions,
) -> Result<Option<Backing>, ImageError> {
    let Some(name) = backing_name(src, path, header)? else {
        return Ok(None);
    };
    let declared = match &extensions.backing_format {
        Some((format, at)) => Some(declared_format(path, format, *at)?),
        None => None,
    };
    let opened = chain.backing(path, &name, header.backing_file_offset, declared)?;
    Ok(Some(opened))
}

/// A backing file's guest disk (None when it is encrypted) and the chain
/// from it down.
type Backing = (Option<SharedReader>, Vec<BackingFile>);

/// qemu's name of a format, as `qemu-img create -F` writes it into the
/// backing format extension. "raw" is raw whatever magic the file has.
fn declared_format(path: &Path, name: &str, at: u64) -> Result<ContainerFormat, ImageError> {
    match name {
        "qcow2" => Ok(ContainerFormat::Qcow2),
        "raw" => Ok(ContainerFormat::Raw),
        "vmdk" => Ok(ContainerFormat::Vmdk),
        "vhdx" => Ok(ContainerFormat::Vhdx),
        "vdi" => Ok(ContainerFormat::Vdi),
        "vpc" => Ok(ContainerFormat::Vhd),
        other => Err(ImageError::parse(
            path,
            EXTENSION,
            at,
            format!(
                "backing file format {other:?} is not one diskalign reads (qcow2, raw, vmdk, vhdx, vdi, vpc)"
            ),
        )),
    }
}

/// `len` bytes at `at` as a string ending at the first NUL, as qemu's C
/// strings do.
fn string_at(
    src: &dyn ReadAt,
    path: &Path,
    layer: &'static str,
    at: u64,
    len: u64,
    what: &str,
) -> Result<String, ImageError> {
    let bytes = bytes_at(src, path, layer, at, len)?;
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8(bytes[..end].to_vec())
        .map_err(|_| ImageError::parse(path, layer, at, format!("{what} is not UTF-8")))
}

fn bytes_at(
    src: &dyn ReadAt,
    path: &Path,
    layer: &'static str,
    at: u64,
    len: u64,
) -> Result<Vec<u8>, ImageError> {
    read_bytes(src, layer, at, len).map_err(|e| ImageError::new(path, e))
}

fn bad(path: &Path, offset: u64, message: impl Into<String>) -> ImageError {
    ImageError::parse(path, HEADER, offset, message)
}

/// Where one unit of the guest reads from (qcow2.h
/// `qcow2_get_subcluster_type`, qcow2.c `qcow2_co_preadv_part`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// A zero cluster or subcluster.
    Zeros,
    /// Unallocated: the backing file, or zeros.
    Backing,
    /// Allocated: this byte of the data file (the image file itself when
    /// there is no external one).
    Host(u64),
    /// A compressed cluster: its descriptor (the entry without its flag
    /// bits) and the byte of its L2 entry.
    Compressed { descriptor: u64, entry_at: u64 },
}

/// The guest disk of a qcow2 image.
struct Disk {
    path: PathBuf,
    file: SharedReader,
    /// Where allocated clusters are: the external data file, or `file`.
    data: SharedReader,
    has_data_file: bool,
    geometry: Geometry,
    version: u32,
    compression: Compression,
    l1_offset: u64,
    l1_entries: u64,
    size: u64,
    fallback: Fallback,
    l1: Cache,
    l2: Cache,
    inflated: Cache,
    /// The L2 table read last, spared a cache lookup: reads walk the guest
    /// forward, mostly within one table.
    last_l2: RefCell<Option<(u64, Rc<[u8]>)>>,
}

impl Disk {
    fn new(
        file: SharedReader,
        path: &Path,
        header: &Header,
        data: Option<SharedReader>,
        fallback: Fallback,
    ) -> Disk {
        let geometry = header.geometry();
        let cache_bytes = |unit: u64| (unit * CACHE_ENTRIES).min(CACHE_BYTES) as usize;
        Disk {
            path: path.to_path_buf(),
            has_data_file: data.is_some(),
            data: data.unwrap_or_else(|| file.clone()),
            file,
            geometry,
            version: header.version,
            compression: header.compression,
            l1_offset: header.l1_table_offset,
            l1_entries: u64::from(header.l1_size),
            size: header.virtual_size(),
            fallback,
            l1: Cache::new(cache_bytes(L1_CHUNK_BYTES)),
            l2: Cache::new(cache_bytes(geometry.cluster_bytes())),
            inflated: Cache::new(cache_bytes(geometry.cluster_bytes())),
            last_l2: RefCell::new(None),
        }
    }

    /// Where guest byte `at` reads from; the same for the rest of its unit
    /// (qcow2-cluster.c `qcow2_get_host_offset`).
    fn place(&self, at: u64) -> io::Result<Place> {
        let l1_index = at / self.geometry.l1_span();
        if l1_index >= self.l1_entries {
            return Ok(Place::Backing);
        }
        let l1_at = self.l1_offset + l1_index * 8;
        let l2_offset = self.l1_entry(l1_index)? & OFFSET_MASK;
        if l2_offset == 0 {
            return Ok(Place::Backing);
        }
        if l2_offset & self.geometry.cluster_mask() != 0 {
            return Err(self.error(
                L1_TABLE,
                l1_at,
                format!("L1 entry {l1_index}: L2 table offset {l2_offset} is not cluster-aligned"),
            ));
        }
        let table = self.l2_table(l2_offset, l1_index, l1_at)?;
        let index = (at >> self.geometry.cluster_bits) % self.geometry.l2_entries();
        let byte = (index * self.geometry.entry_bytes()) as usize;
        let word = |i: usize| table.get(i..i + 8).map_or(0, |w| be_u64(w, 0));
        let entry = word(byte);
        let bitmap = if self.geometry.extended {
            word(byte + 8)
        } else {
            0
        };
        self.classify(at, entry, bitmap, l2_offset + byte as u64)
    }

    /// An L2 entry (and its subcluster bitmap) as the place of guest byte
    /// `at`, refusing what qemu refuses on a read: a zero flag in a
    /// version 2 image, an unaligned cluster, a compressed cluster or a
    /// mapping other than guest = host with an external data file, and a
    /// bitmap that is invalid.
    fn classify(&self, at: u64, entry: u64, bitmap: u64, entry_at: u64) -> io::Result<Place> {
        if entry & OFLAG_COMPRESSED != 0 {
            if self.has_data_file {
                return Err(self.error(
                    L2_TABLE,
                    entry_at,
                    "compressed cluster in an image with an external data file".into(),
                ));
            }
            let descriptor = entry & !(OFLAG_COPIED | OFLAG_COMPRESSED);
            return Ok(Place::Compressed {
                descriptor,
                entry_at,
            });
        }
        if !self.geometry.extended && entry & OFLAG_ZERO != 0 {
            if self.version < 3 {
                return Err(self.error(
                    L2_TABLE,
                    entry_at,
                    "zero flag in a version 2 image".into(),
                ));
            }
            return Ok(Place::Zeros);
        }
        let host = entry & OFFSET_MASK;
        // Offset 0 with an external data file is its first cluster when
        // the copied flag says it is allocated (qcow2.h
        // `qcow2_get_cluster_type`).
        let allocated = host != 0 || (self.has_data_file && entry & OFLAG_COPIED != 0);
        if self.geometry.extended {
            if let Some(place) = self.subcluster(at, allocated, bitmap, entry_at)? {
                return Ok(place);
            }
        } else if !allocated {
            return Ok(Place::Backing);
        }
        if host & self.geometry.cluster_mask() != 0 {
            return Err(self.error(
                L2_TABLE,
                entry_at,
                format!("cluster offset {host} is not cluster-aligned"),
            ));
        }
        let offset = host + (at & self.geometry.cluster_mask());
        if self.has_data_file && host != at & !self.geometry.cluster_mask() {
            return Err(self.error(
                L2_TABLE,
                entry_at,
                format!(
                    "external data file cluster offset {host} is not the guest offset {}",
                    at & !self.geometry.cluster_mask()
                ),
            ));
        }
        Ok(Place::Host(offset))
    }

    /// The place of a subcluster when its bitmap says zeros or unallocated;
    /// None when it is allocated in its cluster (spec, "Extended L2
    /// Entries": bits 0-31 allocated, 32-63 reads as zeros).
    fn subcluster(
        &self,
        at: u64,
        allocated: bool,
        bitmap: u64,
        entry_at: u64,
    ) -> io::Result<Option<Place>> {
        let alloc = bitmap & 0xffff_ffff;
        let zero = bitmap >> 32;
        if (allocated && alloc & zero != 0) || (!allocated && alloc != 0) {
            return Err(self.error(
                L2_TABLE,
                entry_at + 8,
                format!("subcluster bitmap 0x{bitmap:016x} is invalid for this entry"),
            ));
        }
        let bit = 1 << ((at / self.geometry.unit_bytes()) % SUBCLUSTERS);
        Ok(if zero & bit != 0 {
            Some(Place::Zeros)
        } else if alloc & bit == 0 {
            Some(Place::Backing)
        } else {
            None
        })
    }

    /// L1 entry `index`, from the chunk of the table that holds it.
    fn l1_entry(&self, index: u64) -> io::Result<u64> {
        let per_chunk = L1_CHUNK_BYTES / 8;
        let chunk = index / per_chunk;
        let first = chunk * per_chunk;
        let bytes = (self.l1_entries - first).min(per_chunk) * 8;
        let at = self.l1_offset + first * 8;
        let table = self.l1.get_or_load(chunk, || {
            read_bytes(&*self.file, L1_TABLE, at, bytes)
                .map_err(|e| self.error(L1_TABLE, at, e.message))
        })?;
        let i = ((index - first) * 8) as usize;
        Ok(table.get(i..i + 8).map_or(0, |w| be_u64(w, 0)))
    }

    /// The L2 table at `offset`, one cluster of the image file.
    fn l2_table(&self, offset: u64, l1_index: u64, l1_at: u64) -> io::Result<Rc<[u8]>> {
        if let Some((at, table)) = &*self.last_l2.borrow() {
            if *at == offset {
                return Ok(table.clone());
            }
        }
        let len = self.geometry.cluster_bytes();
        let table = self.l2.get_or_load(offset, || {
            if offset.checked_add(len).is_none_or(|end| end > self.file.len()) {
                return Err(self.error(
                    L1_TABLE,
                    l1_at,
                    format!(
                        "L1 entry {l1_index}: the L2 table at byte {offset} runs past the end of the file at byte {}",
                        self.file.len()
                    ),
                ));
            }
            read_bytes(&*self.file, L2_TABLE, offset, len)
                .map_err(|e| self.error(L2_TABLE, offset, e.message))
        })?;
        *self.last_l2.borrow_mut() = Some((offset, table.clone()));
        Ok(table)
    }

    /// The whole cluster a compressed descriptor names, inflated (qcow2.c
    /// `qcow2_co_preadv_compressed`): the data is read from the image file
    /// (never an external data file), up to its end as qemu's reads past
    /// the end read zeros, and must inflate to exactly one cluster.
    fn inflated(&self, descriptor: u64, entry_at: u64) -> io::Result<Rc<[u8]>> {
        self.inflated.get_or_load(descriptor, || {
            let (offset, bytes) = self.geometry.compressed(descriptor);
            let file_len = self.file.len();
            if offset >= file_len {
                return Err(self.error(
                    COMPRESSED,
                    offset,
                    format!("the compressed data of the L2 entry at byte {entry_at} starts past the end of the file at byte {file_len}"),
                ));
            }
            let input = read_bytes(&*self.file, COMPRESSED, offset, bytes.min(file_len - offset))
                .map_err(|e| self.error(COMPRESSED, offset, e.message))?;
            let mut cluster = vec![0u8; self.geometry.cluster_bytes() as usize];
            let inflated = match self.compression {
                Compression::Zlib => inflate(&input, &mut cluster),
                Compression::Zstd => unzstd(&input, &mut cluster),
            };
            inflated.map_err(|why| {
                self.error(
                    COMPRESSED,
                    offset,
                    format!(
                        "{} bytes of {} data (L2 entry at byte {entry_at}) do not inflate to the {}-byte cluster: {why}",
                        input.len(),
                        self.compression.name(),
                        cluster.len()
                    ),
                )
            })?;
            Ok(cluster)
        })
    }

    /// Fill `buf` from one run of units that read alike.
    fn fill(&self, run: &Run, buf: &mut [u8]) -> io::Result<()> {
        match run.place {
            Place::Zeros => {
                buf.fill(0);
                Ok(())
            }
            Place::Backing => self.fallback.read(buf, run.guest),
            Place::Host(offset) => read_to_end(&*self.data, buf, offset),
            Place::Compressed {
                descriptor,
                entry_at,
            } => {
                let cluster = self.inflated(descriptor, entry_at)?;
                let from = (run.guest & self.geometry.cluster_mask()) as usize;
                let src = cluster.get(from..from + buf.len()).ok_or_else(|| {
                    self.error(
                        COMPRESSED,
                        entry_at,
                        "read past the inflated cluster".into(),
                    )
                })?;
                buf.copy_from_slice(src);
                Ok(())
            }
        }
    }

    fn error(&self, layer: &'static str, offset: u64, message: String) -> io::Error {
        read_error(&self.path, layer, offset, message)
    }
}

/// Read `buf` at `offset` of `src`, zeros past its end: qemu's reads of a
/// file past its end read zeros (a data cluster preallocated in the map
/// but not in the file reads so).
fn read_to_end(src: &dyn ReadAt, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let have = src.len().saturating_sub(offset).min(buf.len() as u64) as usize;
    buf[have..].fill(0);
    if have > 0 {
        src.read_exact_at(&mut buf[..have], offset)?;
    }
    Ok(())
}

/// Units of a read that go to one place: zeros, the backing file, or a
/// contiguous range of the data file are read in one go.
struct Run {
    place: Place,
    /// Where in the caller's buffer, which guest byte, how many bytes.
    at: usize,
    guest: u64,
    len: usize,
}

impl Run {
    /// Take in the next unit when it reads from where this run goes on.
    fn extend(&mut self, place: Place, len: usize) -> bool {
        let joins = match (self.place, place) {
            (Place::Zeros, Place::Zeros) | (Place::Backing, Place::Backing) => true,
            (Place::Host(a), Place::Host(b)) => a + self.len as u64 == b,
            _ => false,
        };
        if joins {
            self.len += len;
        }
        joins
    }
}

impl ReadAt for Disk {
    fn len(&self) -> u64 {
        self.size
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.size)
        {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let mut run: Option<Run> = None;
        for (at, guest, len) in pieces(offset, buf.len(), self.geometry.unit_bytes()) {
            let place = self.place(guest)?;
            if run.as_mut().is_some_and(|r| r.extend(place, len)) {
                continue;
            }
            if let Some(done) = run.replace(Run {
                place,
                at,
                guest,
                len,
            }) {
                self.fill(&done, &mut buf[done.at..done.at + done.len])?;
            }
        }
        if let Some(done) = run {
            self.fill(&done, &mut buf[done.at..done.at + done.len])?;
        }
        Ok(())
    }
}

/// Inflate raw deflate data into exactly `out` (qcow2-threads.c
/// `qcow2_decompress`): the data is known to the sector only, so what
/// follows the stream is ignored, and a stream that ends before the
/// cluster is full is corrupt.
fn inflate(input: &[u8], out: &mut [u8]) -> Result<(), String> {
    use flate2::{Decompress, FlushDecompress, Status};
    let mut inflater = Decompress::new(false);
    loop {
        let (read, written) = (inflater.total_in(), inflater.total_out());
        let status = inflater
            .decompress(
                &input[read as usize..],
                &mut out[written as usize..],
                FlushDecompress::Finish,
            )
            .map_err(|e| e.to_string())?;
        let done = inflater.total_out() as usize;
        if done == out.len() {
            return Ok(());
        }
        let stuck = inflater.total_in() == read && inflater.total_out() == written;
        if status == Status::StreamEnd || stuck {
            return Err(format!("the deflate stream ends after {done} bytes"));
        }
    }
}

/// Decode zstd frames into exactly `out` (qcow2-threads.c
/// `qcow2_zstd_decompress`): frames follow one another until the cluster
/// is full, the last one must end there, and what follows is sector
/// padding. Skippable frames are skipped, as libzstd does; a checksum,
/// when a frame has one, must match.
fn unzstd(input: &[u8], out: &mut [u8]) -> Result<(), String> {
    use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
    use std::io::Read;
    let mut decoder = FrameDecoder::new();
    let mut rest = input;
    let mut done = 0usize;
    while done < out.len() {
        if let Some(skip) = skippable_frame(rest) {
            rest = rest
                .get(skip..)
                .ok_or("a skippable frame runs past the data")?;
            continue;
        }
        check_zstd_window(rest, (out.len() - done) as u64)?;
        decoder.reset(&mut rest).map_err(|e| e.to_string())?;
        loop {
            decoder
                .decode_blocks(&mut rest, BlockDecodingStrategy::UptoBlocks(1))
                .map_err(|e| e.to_string())?;
            done += decoder.read(&mut out[done..]).map_err(|e| e.to_string())?;
            if decoder.can_collect() > 0 {
                return Err("the frames hold more than one cluster".into());
            }
            if decoder.is_finished() {
                break;
            }
        }
        if let (Some(stored), Some(computed)) = (
            decoder.get_checksum_from_data(),
            decoder.get_calculated_checksum(),
        ) {
            if stored != computed {
                return Err(format!(
                    "frame checksum 0x{stored:08x} does not match the data's 0x{computed:08x}"
                ));
            }
        }
    }
    Ok(())
}

/// The length of the skippable frame `data` starts with (RFC 8878,
/// "Skippable Frames": magic 0x184D2A5?, a 4-byte size, that many bytes).
fn skippable_frame(data: &[u8]) -> Option<usize> {
    let magic = u32::from_le_bytes(data.get(..4)?.try_into().ok()?);
    if magic & 0xffff_fff0 != 0x184d_2a50 {
        return None;
    }
    let size = u32::from_le_bytes(data.get(4..8)?.try_into().ok()?);
    Some(8 + size as usize)
}

/// Refuse a frame that would make the decoder hold more than the cluster
/// needs: its content size, when declared, must fit what is left of the
/// cluster, and its window [`MAX_ZSTD_WINDOW`] (RFC 8878, "Frame Header").
/// A header that does not parse is left to the decoder to refuse.
fn check_zstd_window(frame: &[u8], room: u64) -> Result<(), String> {
    let Some(&descriptor) = frame.get(4) else {
        return Ok(());
    };
    let single_segment = descriptor & 0x20 != 0;
    let size_flag = descriptor >> 6;
    let dict_bytes = [0usize, 1, 2, 4][usize::from(descriptor & 3)];
    let mut at = 5;
    let mut window = None;
    if !single_segment {
        let Some(&w) = frame.get(at) else {
            return Ok(());
        };
        let base = 1u64 << (10 + u32::from(w >> 3));
        window = Some(base + base / 8 * u64::from(w & 7));
        at += 1;
    }
    at += dict_bytes;
    let size_bytes = match size_flag {
        0 if single_segment => 1,
        0 => 0,
        1 => 2,
        2 => 4,
        _ => 8,
    };
    if let Some(field) = frame.get(at..at + size_bytes).filter(|f| !f.is_empty()) {
        let mut le = [0u8; 8];
        le[..size_bytes].copy_from_slice(field);
        let content = u64::from_le_bytes(le) + if size_flag == 1 { 256 } else { 0 };
        if content > room {
            return Err(format!(
                "a frame declares {content} bytes where {room} are left of the cluster"
            ));
        }
    }
    match window {
        Some(w) if w > MAX_ZSTD_WINDOW => Err(format!(
            "a frame's window of {w} bytes is over the {MAX_ZSTD_WINDOW} accepted"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::{self, MemFiles};
    use std::time::{Duration, Instant};

    const TOP: &str = "/vm/top.qcow2";

    /// A small version 3 image, built field by field: the header in
    /// cluster 0 (112 bytes, extensions after it), the L1 table in
    /// cluster 1, one L2 table in cluster 2 (named by L1 entry 0), a data
    /// cluster of `PATTERN` bytes in cluster 3, room for more after it.
    struct Img {
        bytes: Vec<u8>,
        cluster_bits: u32,
        extended: bool,
        /// Where the next header extension goes.
        ext_at: usize,
    }

    fn pattern(i: usize) -> u8 {
        (i * 7 + i / 251) as u8
    }

    impl Img {
        fn new(cluster_bits: u32, size: u64, extended: bool) -> Img {
            let c = 1usize << cluster_bits;
            let mut img = Img {
                bytes: vec![0; 8 * c],
                cluster_bits,
                extended,
                ext_at: 112,
            };
            img.put(0, MAGIC);
            img.u32(4, 3);
            img.u32(20, cluster_bits);
            img.u64(24, size);
            let span = Geometry {
                cluster_bits,
                extended,
            }
            .l1_span();
            img.u32(36, size.div_ceil(span) as u32);
            img.u64(40, c as u64);
            img.u32(96, 4);
            img.u32(100, 112);
            if extended {
                img.u64(72, INCOMPAT_EXTL2);
            }
            img.u64(c, (2 * c as u64) | OFLAG_COPIED);
            for i in 0..c {
                img.bytes[3 * c + i] = pattern(i);
            }
            img
        }
        fn c(&self) -> usize {
            1 << self.cluster_bits
        }
        fn put(&mut self, at: usize, data: &[u8]) {
            if self.bytes.len() < at + data.len() {
                self.bytes.resize(at + data.len(), 0);
            }
            self.bytes[at..at + data.len()].copy_from_slice(data);
        }
        fn u32(&mut self, at: usize, v: u32) {
            self.put(at, &v.to_be_bytes());
        }
        fn u64(&mut self, at: usize, v: u64) {
            self.put(at, &v.to_be_bytes());
        }
        /// Set L2 entry `index` of the table in cluster 2 (and its bitmap).
        fn l2(&mut self, index: usize, entry: u64, bitmap: u64) {
            let width = if self.extended { 16 } else { 8 };
            let at = 2 * self.c() + index * width;
            self.u64(at, entry);
            if self.extended {
                self.u64(at + 8, bitmap);
            }
        }
        /// The data cluster (cluster 3), allocated.
        fn data(&self) -> u64 {
            (3 * self.c() as u64) | OFLAG_COPIED
        }
        fn extension(&mut self, kind: u32, data: &[u8]) {
            let at = self.ext_at;
            self.u32(at, kind);
            self.u32(at + 4, data.len() as u32);
            self.put(at + 8, data);
            self.ext_at = at + 8 + data.len().next_multiple_of(8);
        }
        fn backing(&mut self, name: &str, format: Option<&str>) {
            if let Some(f) = format {
                self.extension(EXT_BACKING_FORMAT, f.as_bytes());
            }
            self.u64(8, 400);
            self.u32(16, name.len() as u32);
            self.put(400, name.as_bytes());
        }
    }

    fn files(img: &Img) -> MemFiles {
        MemFiles::default().with(TOP, img.bytes.clone())
    }

    fn opened(files: &MemFiles) -> Opened {
        image::open(Path::new(TOP), files).unwrap_or_else(|e| panic!("{e}"))
    }

    fn guest(img: &Img) -> SharedReader {
        opened(&files(img)).guest.expect("a guest")
    }

    fn read(guest: &SharedReader, at: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0xa5u8; len];
        guest.read_exact_at(&mut buf, at).map(|_| buf)
    }

    /// The one line `image::open` refuses `img` with, within a second.
    fn refused_by(files: &MemFiles) -> String {
        let t = Instant::now();
        let line = match image::open(Path::new(TOP), files) {
            Ok(_) => panic!("opened"),
            Err(e) => e.to_string(),
        };
        assert!(t.elapsed() < Duration::from_secs(1), "{line}");
        assert!(!line.contains('\n'), "{line}");
        line
    }

    fn refused(img: &Img) -> String {
        refused_by(&files(img))
    }

    fn header_error(img: &Img, at: u64, message: &str) {
        assert_eq!(
            refused(img),
            format!("{TOP}: qcow2 header at byte {at}: {message}")
        );
    }

    #[test]
    fn data_zero_and_unallocated_clusters_read_as_qemu_reads_them() {
        let mut img = Img::new(9, 64 << 10, false);
        img.l2(0, img.data(), 0);
        img.l2(1, (5 * 512) | OFLAG_ZERO, 0); // zero, preallocated
        img.l2(2, OFLAG_ZERO, 0); // zero
        img.l2(4, img.data(), 0); // the same host cluster again
        let g = guest(&img);
        assert_eq!(g.len(), 64 << 10);
        let all = read(&g, 0, 64 << 10).unwrap();
        let want: Vec<u8> = (0..512).map(pattern).collect();
        assert_eq!(all[..512], want[..]);
        assert!(all[512..2048].iter().all(|&b| b == 0));
        assert_eq!(all[2048..2560], want[..]);
        assert!(all[2560..].iter().all(|&b| b == 0));
        // Unaligned, across clusters.
        assert_eq!(read(&g, 500, 30).unwrap()[..12], want[500..]);
        assert!(read(&g, (64 << 10) - 10, 11).is_err());
        let c = opened(&files(&img)).container;
        assert_eq!(c.version, "3");
        assert_eq!(c.unit_bytes, Some(512));
        assert_eq!(c.virtual_size, 64 << 10);
        assert_eq!(c.compression.as_deref(), Some("zlib"));
    }

    #[test]
    fn unallocated_clusters_read_the_backing_file_and_zeros_past_its_end() {
        let mut img = Img::new(9, 64 << 10, false);
        img.backing("base.raw", Some("raw"));
        img.l2(0, img.data(), 0);
        img.l2(1, OFLAG_ZERO, 0);
        let files = files(&img).with("/vm/base.raw", vec![0x11; 40 << 10]);
        let o = opened(&files);
        assert_eq!(o.container.backing.len(), 1);
        assert_eq!(o.container.backing[0].path, "/vm/base.raw");
        assert_eq!(o.container.backing[0].format, ContainerFormat::Raw);
        let all = read(&o.guest.unwrap(), 0, 64 << 10).unwrap();
        assert_eq!(all[0], pattern(0));
        assert!(all[512..1024].iter().all(|&b| b == 0)); // zero cluster
        assert!(all[1024..40 << 10].iter().all(|&b| b == 0x11)); // backing
        assert!(all[40 << 10..].iter().all(|&b| b == 0)); // past its end
    }

    #[test]
    fn a_declared_raw_backing_file_is_read_raw_and_an_undeclared_by_its_magic() {
        let mut base = Img::new(9, 64 << 10, false);
        base.l2(0, base.data(), 0);
        let mut img = Img::new(9, 64 << 10, false);
        img.backing("base", Some("raw"));
        let files = files(&img).with("/vm/base", base.bytes.clone());
        let g = opened(&files).guest.unwrap();
        assert_eq!(read(&g, 0, 4).unwrap(), b"QFI\xfb");

        let mut img = Img::new(9, 64 << 10, false);
        img.backing("base", None);
        let files = self::files(&img).with("/vm/base", base.bytes.clone());
        let o = opened(&files);
        assert_eq!(o.container.backing[0].format, ContainerFormat::Qcow2);
        assert_eq!(read(&o.guest.unwrap(), 0, 1).unwrap(), [pattern(0)]);
    }

    fn deflated(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
    }

    /// An image whose cluster 1 of the guest is `compressed`, stored at an
    /// unaligned host byte in cluster 4.
    fn with_compressed(compressed: &[u8], zstd: bool) -> (Img, u64) {
        let mut img = Img::new(9, 64 << 10, false);
        if zstd {
            img.u64(72, INCOMPAT_COMPRESSION);
            img.put(104, &[1]);
        }
        let at = 4 * 512 + 100;
        img.put(at, compressed);
        let sectors = (at + compressed.len() - 1) / 512 - at / 512;
        let entry = OFLAG_COMPRESSED | (sectors as u64) << 61 | at as u64;
        img.l2(1, entry, 0);
        (img, at as u64)
    }

    #[test]
    fn compressed_clusters_inflate_with_zlib_and_zstd() {
        let cluster: Vec<u8> = (0..512).map(|i| (i % 13) as u8).collect();
        for (data, zstd_type) in [(deflated(&cluster), false), (zstd(&cluster), true)] {
            let (img, _) = with_compressed(&data, zstd_type);
            let g = guest(&img);
            assert_eq!(read(&g, 512, 512).unwrap(), cluster);
            assert_eq!(read(&g, 700, 10).unwrap(), cluster[188..198]);
            let name = if zstd_type { "zstd" } else { "zlib" };
            let c = opened(&files(&img)).container;
            assert_eq!(c.compression.as_deref(), Some(name));
        }
    }

    #[test]
    fn a_corrupt_compressed_cluster_is_a_read_error_naming_it() {
        let cluster = vec![7u8; 512];
        let mut short = deflated(&cluster[..300]);
        short.truncate(short.len());
        let (img, at) = with_compressed(&short, false);
        let e = read(&guest(&img), 512, 512).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{TOP}: qcow2 compressed cluster at byte {at}: ")),
            "{e}"
        );
        assert!(e.contains("L2 entry at byte 1032"), "{e}");
        assert!(e.contains("deflate stream ends after 300 bytes"), "{e}");

        let (img, _) = with_compressed(&[0xff; 40], true);
        let e = read(&guest(&img), 512, 1).unwrap_err().to_string();
        assert!(e.contains("zstd data (L2 entry at byte 1032)"), "{e}");
    }

    #[test]
    fn zstd_frames_fill_the_cluster_exactly() {
        let half: Vec<u8> = (0..256).map(|i| i as u8).collect();
        let mut two = zstd(&half);
        let skip = [0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3];
        two.extend_from_slice(&skip);
        two.extend(zstd(&half));
        two.extend_from_slice(&[0xee; 9]); // sector padding
        let mut out = vec![0u8; 512];
        unzstd(&two, &mut out).unwrap();
        assert_eq!(out[..256], half[..]);
        assert_eq!(out[256..], half[..]);
        // Short of the cluster, and more than it.
        assert!(unzstd(&zstd(&half), &mut out).is_err());
        let e = unzstd(&zstd(&[1u8; 600]), &mut out).unwrap_err();
        assert_eq!(e, "the frames hold more than one cluster");
        // A single-segment frame declaring 256 + 344 bytes.
        let e = unzstd(&[0x28, 0xb5, 0x2f, 0xfd, 0x60, 88, 1, 0, 0, 0], &mut out).unwrap_err();
        assert_eq!(
            e,
            "a frame declares 600 bytes where 512 are left of the cluster"
        );
    }

    #[test]
    fn a_zstd_window_over_the_bound_is_refused_before_decoding() {
        // Magic, descriptor (no single segment), window 2^30.
        let frame = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 20 << 3, 0, 0, 0];
        let e = unzstd(&frame, &mut [0u8; 512]).unwrap_err();
        assert!(e.contains("window of 1073741824 bytes"), "{e}");
    }

    #[test]
    fn a_deflate_stream_longer_than_the_cluster_stops_at_it() {
        let mut out = vec![0u8; 512];
        let long: Vec<u8> = (0..4000).map(|i| (i % 5) as u8).collect();
        inflate(&deflated(&long), &mut out).unwrap();
        assert_eq!(out[..], long[..512]);
        assert!(inflate(&[0xff; 10], &mut out).is_err());
    }

    #[test]
    fn extended_l2_subclusters_are_data_zeros_or_the_backing_file() {
        let mut img = Img::new(14, 1 << 20, true);
        img.backing("base.raw", Some("raw"));
        // Subcluster 0 allocated, 1 zero, the rest unallocated.
        img.l2(0, img.data(), 0b1 | 0b10 << 32);
        // An unallocated cluster with zero subclusters 3 and 4.
        img.l2(1, 0, 0b11000 << 32);
        let files = files(&img).with("/vm/base.raw", vec![0x11; 1 << 20]);
        let o = opened(&files);
        assert_eq!(o.container.subunit_bytes, Some(512));
        assert_eq!(o.container.unit_bytes, Some(16384));
        let all = read(&o.guest.unwrap(), 0, 32768).unwrap();
        let want: Vec<u8> = (0..512).map(pattern).collect();
        assert_eq!(all[..512], want[..]);
        assert!(all[512..1024].iter().all(|&b| b == 0));
        assert!(all[1024..16384].iter().all(|&b| b == 0x11));
        assert!(all[16384..16384 + 1536].iter().all(|&b| b == 0x11));
        assert!(all[16384 + 1536..16384 + 2560].iter().all(|&b| b == 0));
        assert!(all[16384 + 2560..].iter().all(|&b| b == 0x11));
    }

    #[test]
    fn an_invalid_subcluster_bitmap_is_a_read_error() {
        let mut img = Img::new(14, 1 << 20, true);
        img.l2(0, img.data(), 0b1 | 0b1 << 32); // allocated and zero
        let e = read(&guest(&img), 0, 1).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{TOP}: qcow2 L2 table at byte 32776: subcluster bitmap 0x0000000100000001 is invalid for this entry")
        );
    }

    #[test]
    fn an_l2_table_past_the_end_of_the_file_is_a_read_error() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(512 + 8, 1 << 30); // L1 entry 1
        let g = guest(&img);
        assert!(read(&g, 0, 512).is_ok());
        let e = read(&g, 32 << 10, 512).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{TOP}: qcow2 L1 table at byte 520: L1 entry 1: the L2 table at byte 1073741824 runs past the end of the file at byte 4096"
            )
        );
        // The offset mask drops bits 0-8: unaligned needs larger clusters.
        let mut img = Img::new(12, 4 << 20, false);
        img.u64(4096 + 8, 4096 + 512);
        let e = read(&guest(&img), 2 << 20, 1).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{TOP}: qcow2 L1 table at byte 4104: L1 entry 1: L2 table offset 4608 is not cluster-aligned")
        );
    }

    #[test]
    fn a_zero_flag_in_a_version_2_image_is_a_read_error() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(4, 2);
        img.l2(3, OFLAG_ZERO, 0);
        let g = guest(&img);
        assert_eq!(opened(&files(&img)).container.version, "2");
        let e = read(&g, 3 * 512, 1).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{TOP}: qcow2 L2 table at byte 1048: zero flag in a version 2 image")
        );
    }

    #[test]
    fn an_external_data_file_holds_the_clusters_at_guest_offsets() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(72, INCOMPAT_DATA_FILE);
        img.extension(EXT_DATA_FILE, b"top.data");
        img.l2(0, OFLAG_COPIED, 0); // host cluster 0 of the data file
        img.l2(2, 1024 | OFLAG_COPIED, 0);
        img.l2(3, 512 | OFLAG_COPIED, 0); // not the guest offset
        let data: Vec<u8> = (0..4096).map(|i| (i / 512) as u8 + 1).collect();
        let files = files(&img).with("/vm/top.data", data);
        let o = opened(&files);
        assert_eq!(o.container.data_file.as_deref(), Some("top.data"));
        let g = o.guest.unwrap();
        assert_eq!(read(&g, 0, 1).unwrap(), [1]);
        assert_eq!(read(&g, 512, 1).unwrap(), [0]); // unallocated
        assert_eq!(read(&g, 1024, 1).unwrap(), [3]);
        let e = read(&g, 1536, 1).unwrap_err().to_string();
        assert!(e.contains("qcow2 L2 table at byte 1048: external data file cluster offset 512 is not the guest offset 1536"), "{e}");

        let mut img = Img::new(9, 64 << 10, false);
        img.u64(72, INCOMPAT_DATA_FILE);
        header_error(&img, 72, "incompatible_features bit 2 (external data file) is set but no header extension 0x44415441 names the data file");
        img.extension(EXT_DATA_FILE, b"gone.data");
        let line = refused(&img);
        assert!(
            line.contains("cannot open \"gone.data\" (named at byte 120 of /vm/top.qcow2)"),
            "{line}"
        );
    }

    #[test]
    fn an_encrypted_image_gives_its_facts_and_no_guest() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(32, 2);
        let o = opened(&files(&img));
        assert!(o.guest.is_none());
        assert!(o.container.encrypted);
        assert_eq!(o.container.virtual_size, 64 << 10);
        img.u32(32, 3);
        header_error(
            &img,
            32,
            "crypt_method 3 is not 0 (none), 1 (AES) or 2 (LUKS)",
        );
        // Over an encrypted backing file, the unallocated clusters cannot
        // be read: no guest either.
        img.u32(32, 2);
        let mut top = Img::new(9, 64 << 10, false);
        top.backing("base.qcow2", Some("qcow2"));
        let files = files(&top).with("/vm/base.qcow2", img.bytes.clone());
        let o = opened(&files);
        assert!(o.guest.is_none());
        assert!(!o.container.encrypted);
        assert_eq!(o.container.backing[0].name, "base.qcow2");
    }

    #[test]
    fn an_l1_table_of_2_to_the_31_entries_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(36, 1 << 31);
        header_error(
            &img,
            36,
            "l1_size 2147483648 entries exceeds the 4194304 of qemu's largest (32 MiB) L1 table",
        );
    }

    #[test]
    fn an_l1_table_too_small_misplaced_or_past_the_end_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(36, 1);
        header_error(
            &img,
            36,
            "l1_size 1 entries cannot map size 65536 bytes, which needs 2",
        );
        img.u32(36, 2);
        img.u64(40, 4096);
        header_error(&img, 40, "l1_table_offset 4096 with l1_size 2 (8 bytes each) runs past the end of the file at byte 4096");
        img.u64(40, u64::MAX - 511);
        header_error(&img, 40, "l1_table_offset 18446744073709551104 with l1_size 2 (8 bytes each) runs past the end of the file at byte 4096");
        img.u64(40, 520);
        header_error(
            &img,
            40,
            "l1_table_offset 520 is not a multiple of the 512-byte cluster",
        );
    }

    #[test]
    fn a_virtual_size_beyond_qemu_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(24, 1 << 40);
        header_error(&img, 24, "size 1099511627776 bytes needs 33554432 L1 entries with 512-byte clusters, more than the 4194304 of qemu's largest (32 MiB) L1 table");
        img.u64(24, u64::MAX);
        assert!(refused(&img).contains("qcow2 header at byte 24: size 18446744073709551615"));
    }

    #[test]
    fn a_truncated_header_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.bytes.truncate(50);
        header_error(
            &img,
            0,
            "every version's header needs 72 bytes but the file ends at byte 50 (truncated?)",
        );
        let mut img = Img::new(9, 64 << 10, false);
        img.bytes.truncate(90);
        header_error(
            &img,
            0,
            "a version 3 header needs 104 bytes but the file ends at byte 90 (truncated?)",
        );
    }

    #[test]
    fn a_header_length_that_lies_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(100, 96);
        header_error(
            &img,
            100,
            "header_length 96 is below the 104 bytes of a version 3 header",
        );
        img.u32(100, 1024);
        header_error(
            &img,
            100,
            "header_length 1024 exceeds the 512-byte cluster the header is in",
        );
        let mut img = Img::new(16, 64 << 10, false);
        img.bytes.truncate(1000);
        img.u32(100, 4096);
        header_error(
            &img,
            100,
            "header_length 4096 runs past the end of the file at byte 1000 (truncated?)",
        );
    }

    #[test]
    fn an_extension_length_that_lies_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(112, 0x1234_5678);
        img.u32(116, 500);
        assert_eq!(
            refused(&img),
            format!("{TOP}: qcow2 header extension at byte 112: extension 0x12345678 length 500 runs past the end of the extension area at byte 512")
        );
        let mut img = Img::new(9, 64 << 10, false);
        img.extension(EXT_BACKING_FORMAT, &[b'q'; 16]);
        img.backing("base", None);
        assert_eq!(
            refused(&img),
            format!("{TOP}: qcow2 header extension at byte 112: backing file format length 16 is over qemu's 15 bytes")
        );
    }

    #[test]
    fn a_backing_name_too_long_or_past_the_cluster_is_refused() {
        let mut img = Img::new(12, 64 << 10, false);
        img.backing("b", None);
        img.u32(16, 1024);
        header_error(
            &img,
            16,
            "backing_file_size 1024 is over qemu's 1023-byte limit for a backing file name",
        );
        let mut img = Img::new(9, 64 << 10, false);
        img.backing("b", None);
        img.u32(16, 200);
        header_error(&img, 16, "backing_file_size 200 runs past the first cluster: the name at byte 400 has room for 112");
        img.u64(8, 513);
        header_error(
            &img,
            8,
            "backing_file_offset 513 is past the first cluster (the name must be in its 512 bytes)",
        );
    }

    #[test]
    fn a_missing_backing_file_is_named() {
        let mut img = Img::new(9, 64 << 10, false);
        img.backing("base.raw", Some("raw"));
        assert_eq!(
            refused(&img),
            format!("{TOP}: cannot open \"base.raw\" (named at byte 400 of {TOP}): ENOENT")
        );
    }

    #[test]
    fn a_backing_chain_that_loops_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.backing("top.qcow2", Some("qcow2"));
        assert_eq!(
            refused(&img),
            format!("{TOP}: backing chain loops: {TOP} names {TOP} again")
        );
        // Two files naming each other.
        let mut a = Img::new(9, 64 << 10, false);
        a.backing("b.qcow2", None);
        let mut b = Img::new(9, 64 << 10, false);
        b.backing("top.qcow2", None);
        let files = files(&a).with("/vm/b.qcow2", b.bytes);
        assert_eq!(
            refused_by(&files),
            "/vm/b.qcow2: backing chain loops: /vm/b.qcow2 names /vm/top.qcow2 again"
        );
    }

    #[test]
    fn an_unknown_backing_format_is_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.backing("base", Some("qed"));
        assert_eq!(
            refused(&img),
            format!("{TOP}: qcow2 header extension at byte 120: backing file format \"qed\" is not one diskalign reads (qcow2, raw, vmdk, vhdx, vdi, vpc)")
        );
    }

    #[test]
    fn unknown_incompatible_features_are_named() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(72, 1 << 5 | 1 << 40 | 1);
        let mut entry = vec![0u8, 5];
        entry.extend_from_slice(b"shiny new thing");
        entry.resize(48, 0);
        img.extension(EXT_FEATURE_TABLE, &entry);
        header_error(&img, 72, "incompatible_features bit 5 (\"shiny new thing\"), bit 40 set: a feature diskalign does not read (qemu refuses it too)");
    }

    #[test]
    fn header_fields_out_of_range_are_refused() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(4, 4);
        header_error(&img, 4, "version 4 is not 2 or 3 (the versions qemu reads)");
        let mut img = Img::new(9, 64 << 10, false);
        img.u32(20, 22);
        header_error(
            &img,
            20,
            "cluster_bits 22 is outside 9..=21 (512-byte to 2 MiB clusters, what qemu opens)",
        );
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(72, INCOMPAT_EXTL2);
        assert!(refused(&img)
            .contains("qcow2 header at byte 20: cluster_bits 9 with extended L2 entries"));
        let mut img = Img::new(9, 64 << 10, false);
        img.put(104, &[1]);
        header_error(
            &img,
            104,
            "compression_type 1 (zstd) without incompatible_features bit 3 set",
        );
        img.put(104, &[2]);
        header_error(&img, 104, "compression_type 2 is not 0 (zlib) or 1 (zstd)");
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(72, INCOMPAT_COMPRESSION);
        header_error(&img, 72, "incompatible_features bit 3 (compression type) is set but compression_type is 0 (zlib)");
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(88, AUTOCLEAR_DATA_FILE_RAW);
        header_error(&img, 88, "autoclear_features bit 1 (raw external data) without incompatible_features bit 2 (external data file)");
    }

    #[test]
    fn the_virtual_size_is_whole_sectors_as_qemu_gives_it() {
        let mut img = Img::new(9, 64 << 10, false);
        img.u64(24, (64 << 10) - 100);
        assert_eq!(guest(&img).len(), (64 << 10) - 512);
    }

    #[test]
    fn compressed_descriptors_follow_the_cluster_size() {
        let g = Geometry {
            cluster_bits: 16,
            extended: false,
        };
        // x = 62 - 8 = 54: offset in bits 0-53, sectors in 54-61.
        let entry = 3u64 << 54 | 1000;
        assert_eq!(g.compressed(entry), (1000, 4 * 512 - 1000 % 512));
        let g = Geometry {
            cluster_bits: 21,
            extended: false,
        };
        assert_eq!(g.compressed(0x3fff_ffff_ffff_ffff).1, 8192 * 512 - 511);
    }
}
