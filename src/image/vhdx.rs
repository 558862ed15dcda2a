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

use super::cache::Cache;
use super::{read_error, ByUnit, Chain, Container, ContainerFormat, ImageError, Opened, Units};
use crate::bytes::{le_u16, le_u32, le_u64, read_bytes, ReadAt};
use crate::stack::SharedReader;
use crc::{Crc, Table, CRC_32_ISCSI};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

const IDENTIFIER: &str = "VHDX file identifier";
const HEADER: &str = "VHDX header";
const LOG: &str = "VHDX log";
/// The longest log scanned for entries to replay: 64 Ki sectors.
const MAX_LOG: u64 = 256 * MIB;
const REGION_TABLE: &str = "VHDX region table";
const METADATA: &str = "VHDX metadata";
const BAT: &str = "VHDX BAT";

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
/// The header section (`VHDX_HEADER_SECTION_END`): nothing else lies here.
const HEADER_SECTION: u64 = MIB;
const HEADER_AT: [u64; 2] = [64 * KIB, 128 * KIB];
/// The CRC of a header covers 4 KiB (`VHDX_HEADER_SIZE`), its fields 80
/// bytes (`VHDXHeader`).
const HEADER_BYTES: u64 = 4 * KIB;
const HEADER_FIELDS: usize = 80;
const REGION_TABLE_AT: [u64; 2] = [192 * KIB, 256 * KIB];
const REGION_TABLE_BYTES: u64 = 64 * KIB;
/// Region and metadata tables hold at most this many entries.
const MAX_TABLE_ENTRIES: u64 = 2047;
/// The metadata table, at the start of the metadata region; items lie
/// past it (`VHDX_METADATA_TABLE_MAX_SIZE`).
const METADATA_TABLE_BYTES: u64 = 64 * KIB;
const LOG_SECTOR: u64 = 4 * KIB;
const LOG_ENTRY_HEADER_BYTES: u64 = 64;
const LOG_DESCRIPTOR_BYTES: u64 = 32;
/// `VHDX_BLOCK_SIZE_MIN`, `VHDX_BLOCK_SIZE_MAX`.
const MIN_BLOCK: u64 = MIB;
const MAX_BLOCK: u64 = 256 * MIB;
/// `VHDX_MAX_IMAGE_SIZE` (qemu enforces it creating an image; the
/// specification's limit).
const MAX_VIRTUAL_SIZE: u64 = 64 << 40;
/// `VHDX_MAX_SECTORS_PER_BLOCK`: a sector bitmap block covers this many
/// sectors, which sets the chunk ratio.
const SECTORS_PER_CHUNK: u64 = 1 << 23;
/// `VHDX_BAT_FILE_OFF_MASK`: a BAT entry's file offset, in bytes.
const BAT_OFFSET_MASK: u64 = 0xFFFF_FFFF_FFF0_0000;

/// The BAT is read in pages of this many bytes, kept in a bounded cache.
const BAT_PAGE: u64 = 4096;
const BAT_CACHE_BYTES: usize = 1 << 20;

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

/// Region table entries (block/vhdx.c `bat_guid`, `metadata_guid`).
const BAT_GUID: [u8; 16] = guid("2DC27766-F623-4200-9D64-115E9BFD4A08");
const METADATA_GUID: [u8; 16] = guid("8B7CA206-4790-4B9A-B8FE-575F050F886E");

/// The metadata items qemu knows (block/vhdx.c `file_param_guid` ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Item {
    FileParameters,
    VirtualDiskSize,
    Page83,
    LogicalSectorSize,
    PhysicalSectorSize,
    ParentLocator,
}

impl Item {
    const ALL: [Item; 6] = [
        Item::FileParameters,
        Item::VirtualDiskSize,
        Item::Page83,
        Item::LogicalSectorSize,
        Item::PhysicalSectorSize,
        Item::ParentLocator,
    ];

    /// block/vhdx.c `file_param_guid`, `virtual_size_guid`, ...
    fn guid(self) -> [u8; 16] {
        match self {
            Item::FileParameters => guid("CAA16737-FA36-4D43-B3B6-33F0AA44E76B"),
            Item::VirtualDiskSize => guid("2FA54224-CD1B-4876-B211-5DBED83BF4B8"),
            Item::Page83 => guid("BECA12AB-B2E6-4523-93EF-C309E000C746"),
            Item::LogicalSectorSize => guid("8141BF1D-A96F-4709-BA47-F233A8FAAB5F"),
            Item::PhysicalSectorSize => guid("CDA348C7-445D-4471-9CC9-E9885251C556"),
            Item::ParentLocator => guid("A8D35F2D-B30B-454D-ABF7-D3D84834AB0C"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Item::FileParameters => "file parameters",
            Item::VirtualDiskSize => "virtual disk size",
            Item::Page83 => "page 83 data",
            Item::LogicalSectorSize => "logical sector size",
            Item::PhysicalSectorSize => "physical sector size",
            Item::ParentLocator => "parent locator",
        }
    }

    /// The bytes of the item this reader reads.
    fn bytes(self) -> u64 {
        match self {
            Item::FileParameters | Item::VirtualDiskSize => 8,
            Item::Page83 => 16,
            Item::LogicalSectorSize | Item::PhysicalSectorSize => 4,
            Item::ParentLocator => 0,
        }
    }
}

/// Payload block states (vhdx.h `PAYLOAD_BLOCK_*`).
const FULLY_PRESENT: u64 = 6;
const PARTIALLY_PRESENT: u64 = 7;

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

/// The header fields this reader uses (qemu's `VHDXHeader`).
struct Header {
    at: u64,
    sequence: u64,
    log_guid: [u8; 16],
    log_version: u16,
    version: u16,
    log_length: u32,
    log_offset: u64,
}

/// The current header, as `vhdx_parse_header` picks it: a copy is valid
/// when its CRC-32C (over 4 KiB, the checksum field as zeros) holds, its
/// signature is `head` and its version 1; of two valid copies the one
/// with the higher sequence number, of two with the same number the first
/// if both are the same (Disk2vhd writes them so), else neither.
fn current_header(file: &File) -> Result<Header, ImageError> {
    let copies = HEADER_AT.map(|at| {
        let bytes = file.read_copy(HEADER, at, HEADER_BYTES)?;
        parse_header(&bytes, at).map(|h| (h, bytes))
    });
    let [one, two] = copies;
    match (one, two) {
        (Ok((a, _)), Err(_)) => Ok(a),
        (Err(_), Ok((b, _))) => Ok(b),
        (Err(why1), Err(why2)) => Err(file.err(
            HEADER,
            HEADER_AT[0],
            format!(
                "no valid header: the one at byte {} {why1}; the one at byte {} {why2}",
                HEADER_AT[0], HEADER_AT[1]
            ),
        )),
        (Ok((a, a_bytes)), Ok((b, b_bytes))) => {
            if a.sequence > b.sequence {
                Ok(a)
            } else if b.sequence > a.sequence {
                Ok(b)
            } else if a_bytes[..HEADER_FIELDS] == b_bytes[..HEADER_FIELDS] {
                Ok(a)
            } else {
                Err(file.err(
                    HEADER,
                    HEADER_AT[1] + 8,
                    format!(
                        "sequence number {} is the same in both headers, which differ: \
                         neither is current",
                        a.sequence
                    ),
                ))
            }
        }
    }
}

/// A header copy, or why it is not valid.
fn parse_header(b: &[u8], at: u64) -> Result<Header, String> {
    let stored = le_u32(b, 4);
    let computed = crc32c_without(b, 4);
    if stored != computed {
        return Err(format!(
            "has checksum 0x{stored:08x}, its CRC-32C is 0x{computed:08x}"
        ));
    }
    if &b[..4] != b"head" {
        return Err("has no \"head\" signature".into());
    }
    let version = le_u16(b, 66);
    if version != 1 {
        return Err(format!("has version {version}, not 1"));
    }
    let mut log_guid = [0u8; 16];
    log_guid.copy_from_slice(&b[48..64]);
    Ok(Header {
        at,
        sequence: le_u64(b, 8),
        log_guid,
        log_version: le_u16(b, 64),
        version,
        log_length: le_u32(b, 68),
        log_offset: le_u64(b, 72),
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

/// The log's region, after the checks of `vhdx_parse_log`: an offset of
/// whole MiBs past the header section and log version 0, whatever the
/// log holds. A log GUID of zero or a length of zero means no log. A log
/// that holds a valid entry must be replayed before the file is read;
/// qemu refuses to do that on a read-only open, and so do we.
fn check_log(file: &File, header: &Header) -> Result<Region, ImageError> {
    let h = header.at;
    let offset = header.log_offset;
    if offset < HEADER_SECTION || offset % MIB != 0 {
        return Err(file.err(
            HEADER,
            h + 72,
            format!("log offset {offset} is not a whole number of MiBs past the first"),
        ));
    }
    if header.log_version != 0 {
        return Err(file.err(
            HEADER,
            h + 64,
            format!("log version {} is not 0", header.log_version),
        ));
    }
    let region = Region {
        start: offset,
        len: header.log_length.into(),
    };
    if header.log_guid == [0; 16] || region.len == 0 {
        return Ok(region);
    }
    if region.len % MIB != 0 {
        return Err(file.err(
            HEADER,
            h + 68,
            format!("log length {} is not a whole number of MiBs", region.len),
        ));
    }
    if offset
        .checked_add(region.len)
        .is_none_or(|e| e > file.src.len())
    {
        return Err(file.err(
            HEADER,
            h + 68,
            format!(
                "log of {} bytes at byte {offset} ends past the end of the file ({} bytes)",
                region.len,
                file.src.len()
            ),
        ));
    }
    // Scanning the log reads one 4 KiB sector at a time; a log this long
    // (qemu-img and Hyper-V write 1 MiB ones) would take seconds, so it
    // is refused rather than scanned.
    if region.len > MAX_LOG {
        return Err(file.err(
            HEADER,
            h + 68,
            format!(
                "log length {} is beyond the {} this reader scans (qemu-img and Hyper-V write 1 MiB logs)",
                region.len,
                crate::units::exact(MAX_LOG)
            ),
        ));
    }
    if let Some((at, sequence)) = pending_log_entry(file, header, region)? {
        return Err(file.err(
            LOG,
            at,
            format!(
                "entry {sequence} is not yet applied to the file: qemu replays the log before \
                 reading and refuses to open such a file read-only; replay it first \
                 (qemu-img check -r all)"
            ),
        ));
    }
    Ok(region)
}

/// A log entry's header fields (qemu's `VHDXLogEntryHeader`).
struct LogEntry {
    checksum: u32,
    length: u64,
    sequence: u64,
    descriptors: u64,
}

/// The first log entry qemu would replay, walking the log as
/// `vhdx_log_search` does: from its start, one 4 KiB sector at a time
/// past sectors that hold no entry header of this log, past the sectors
/// an entry header's entry spans when it fails its CRC, up to the end of
/// the log. (qemu then follows a valid entry's sequence; one valid entry
/// is enough to know the log must be replayed.) The work is bounded by
/// the log's length, which the file holds.
fn pending_log_entry(
    file: &File,
    header: &Header,
    log: Region,
) -> Result<Option<(u64, u64)>, ImageError> {
    let mut pos = 0;
    while pos < log.len {
        let at = log.start + pos;
        let head = file.read(LOG, at, LOG_ENTRY_HEADER_BYTES)?;
        let Some(entry) = log_entry(&head, header, log.len) else {
            pos += LOG_SECTOR;
            continue;
        };
        let (valid, sectors) = log_entry_is_valid(file, log, pos, &entry)?;
        if valid {
            return Ok(Some((at, entry.sequence)));
        }
        pos += sectors * LOG_SECTOR;
    }
    Ok(None)
}

/// The entry header at the start of a log sector, when it is one of this
/// log (`vhdx_log_hdr_is_valid`): signature `loge`, a length of whole
/// 4 KiB sectors within the log, a sequence number, the header's log GUID
/// and room for its descriptors.
fn log_entry(b: &[u8], header: &Header, log_len: u64) -> Option<LogEntry> {
    let entry = LogEntry {
        checksum: le_u32(b, 4),
        length: le_u32(b, 8).into(),
        sequence: le_u64(b, 16),
        descriptors: le_u32(b, 24).into(),
    };
    let valid = &b[..4] == b"loge"
        && entry.length <= log_len
        && entry.length % LOG_SECTOR == 0
        && entry.sequence != 0
        && b[32..48] == header.log_guid
        && entry.descriptors * LOG_DESCRIPTOR_BYTES <= entry.length;
    valid.then_some(entry)
}

/// Whether the entry at `pos` of the log holds (its descriptors valid and
/// its CRC-32C right, `vhdx_validate_log_entry`), and how many sectors
/// qemu reads checking it. The sectors are read one at a time, wrapping
/// at the end of the log as qemu's circular reads do. A descriptor that is
/// not valid makes qemu refuse the file (`vhdx_log_read_desc` fails the
/// search), and us too.
fn log_entry_is_valid(
    file: &File,
    log: Region,
    pos: u64,
    entry: &LogEntry,
) -> Result<(bool, u64), ImageError> {
    // `vhdx_compute_desc_sectors`: the header takes two descriptors' room.
    let descriptor_sectors = (entry.descriptors + 2).div_ceil(LOG_SECTOR / LOG_DESCRIPTOR_BYTES);
    let sectors = descriptor_sectors.max(entry.length / LOG_SECTOR);
    let mut crc = CASTAGNOLI.digest();
    for k in 0..sectors {
        let at = log.start + (pos + k * LOG_SECTOR) % log.len;
        let mut sector = file.read(LOG, at, LOG_SECTOR)?;
        if k == 0 {
            sector[4..8].fill(0);
        }
        if k < descriptor_sectors {
            check_descriptors(file, &sector, at, k, entry)?;
        }
        crc.update(&sector);
    }
    Ok((crc.finalize() == entry.checksum, sectors))
}

/// The descriptors in descriptor sector `k` of an entry, as
/// `vhdx_log_desc_is_valid` checks them: the entry's sequence number, a
/// file offset of whole 4 KiB sectors, and a `zero` (with a length of
/// whole sectors) or `desc` signature.
fn check_descriptors(
    file: &File,
    sector: &[u8],
    at: u64,
    k: u64,
    entry: &LogEntry,
) -> Result<(), ImageError> {
    let per_sector = LOG_SECTOR / LOG_DESCRIPTOR_BYTES;
    // Descriptor i sits at byte 64 + 32 i of the descriptor sectors.
    let first = (k * per_sector).saturating_sub(2);
    let last = ((k + 1) * per_sector - 2).min(entry.descriptors);
    for i in first..last {
        let off = ((i + 2) * LOG_DESCRIPTOR_BYTES - k * LOG_SECTOR) as usize;
        let d = &sector[off..off + LOG_DESCRIPTOR_BYTES as usize];
        let valid = le_u64(d, 24) == entry.sequence
            && le_u64(d, 16) % LOG_SECTOR == 0
            && match &d[..4] {
                b"zero" => le_u64(d, 8) % LOG_SECTOR == 0,
                b"desc" => true,
                _ => false,
            };
        if !valid {
            return Err(file.err(
                LOG,
                at + off as u64,
                format!(
                    "descriptor {i} of entry {} is not valid (signature, sequence number or \
                     offset): qemu refuses a log it cannot replay",
                    entry.sequence
                ),
            ));
        }
    }
    Ok(())
}

/// Where the region table places the BAT and the metadata.
struct Regions {
    bat: Region,
    metadata: Region,
}

/// The region table (`vhdx_open_region_tables`). qemu reads only the first
/// copy; the specification keeps the second for when the first is damaged,
/// and we read it then. A copy is valid when its CRC-32C (over 64 KiB)
/// holds, its signature is `regi` and it has at most 2047 entries.
fn region_table(file: &File, log: Region) -> Result<Regions, ImageError> {
    let mut why = Vec::new();
    for at in REGION_TABLE_AT {
        match file
            .read_copy(REGION_TABLE, at, REGION_TABLE_BYTES)
            .and_then(|table| check_region_table(&table).map(|count| (table, count)))
        {
            Ok((table, count)) => return region_entries(file, &table, at, count, log),
            Err(reason) => why.push(format!("the one at byte {at} {reason}")),
        }
    }
    Err(file.err(
        REGION_TABLE,
        REGION_TABLE_AT[0],
        format!("no valid copy: {}", why.join("; ")),
    ))
}

/// A region table copy's entry count, or why the copy is not valid.
fn check_region_table(t: &[u8]) -> Result<u64, String> {
    let stored = le_u32(t, 4);
    let computed = crc32c_without(t, 4);
    if stored != computed {
        return Err(format!(
            "has checksum 0x{stored:08x}, its CRC-32C is 0x{computed:08x}"
        ));
    }
    if &t[..4] != b"regi" {
        return Err("has no \"regi\" signature".into());
    }
    let count = u64::from(le_u32(t, 8));
    if count > MAX_TABLE_ENTRIES {
        return Err(format!(
            "has entry count {count}, beyond {MAX_TABLE_ENTRIES}"
        ));
    }
    Ok(count)
}

/// The BAT and metadata entries of a valid table: each once, no entry
/// overlapping another or the log, none in the header section, and no
/// other entry the file says a reader must understand.
fn region_entries(
    file: &File,
    t: &[u8],
    table_at: u64,
    count: u64,
    log: Region,
) -> Result<Regions, ImageError> {
    let mut seen = vec![log];
    let (mut bat, mut metadata) = (None, None);
    for i in 0..count {
        let e = 16 + 32 * i as usize;
        let at = table_at + e as u64;
        let err =
            |message: String| Err(file.err(REGION_TABLE, at, format!("entry {i}: {message}")));
        let region = Region {
            start: le_u64(t, e + 16),
            len: le_u32(t, e + 24).into(),
        };
        if region.start < HEADER_SECTION || region.start.checked_add(region.len).is_none() {
            return err(format!(
                "file offset {} is not past the header section",
                region.start
            ));
        }
        if let Some(other) = seen.iter().find(|r| r.overlaps(region.start, region.len)) {
            return err(format!(
                "bytes {}..{} overlap bytes {}..{} of the log or another region",
                region.start,
                region.end(),
                other.start,
                other.end()
            ));
        }
        seen.push(region);
        let guid = &t[e..e + 16];
        let slot = if guid == BAT_GUID {
            &mut bat
        } else if guid == METADATA_GUID {
            &mut metadata
        } else if le_u32(t, e + 28) & 1 != 0 {
            return err("a region this reader does not know is marked required".into());
        } else {
            continue;
        };
        if slot.replace(region).is_some() {
            return err("a second BAT or metadata region".into());
        }
    }
    match (bat, metadata) {
        (Some(bat), Some(metadata)) => Ok(Regions { bat, metadata }),
        _ => Err(file.err(
            REGION_TABLE,
            table_at + 8,
            "entry count: the table names no BAT or no metadata region",
        )),
    }
}

/// What the metadata says of the guest disk.
struct Metadata {
    block_bytes: u64,
    leave_allocated: bool,
    virtual_size: u64,
    logical: u32,
    physical: u32,
}

/// Where one metadata item lies, relative to the metadata region, and
/// the byte of its table entry.
#[derive(Clone, Copy)]
struct Placed {
    offset: u64,
    len: u64,
    entry_at: u64,
}

/// The metadata (`vhdx_parse_metadata`): the table at the start of the
/// region, then the items qemu requires. Every item must lie in the
/// region past the table, apart from the others.
fn metadata(file: &File, region: Region) -> Result<Metadata, ImageError> {
    if region.len < METADATA_TABLE_BYTES {
        return Err(file.err(
            METADATA,
            region.start,
            format!(
                "the region of {} bytes cannot hold the 64 KiB table",
                region.len
            ),
        ));
    }
    let t = file.read(METADATA, region.start, METADATA_TABLE_BYTES)?;
    if &t[..8] != b"metadata" {
        return Err(file.err(METADATA, region.start, "signature is not \"metadata\""));
    }
    let count = u64::from(le_u16(&t, 10));
    if count > MAX_TABLE_ENTRIES {
        return Err(file.err(
            METADATA,
            region.start + 10,
            format!("entry count {count} is beyond {MAX_TABLE_ENTRIES}"),
        ));
    }
    let items = metadata_items(file, &t, region, count)?;
    read_items(file, region, &items)
}

/// The known items of the table, each placed once.
fn metadata_items(
    file: &File,
    t: &[u8],
    region: Region,
    count: u64,
) -> Result<[Option<Placed>; 6], ImageError> {
    let mut items = [None; 6];
    let mut placed: Vec<Placed> = Vec::new();
    for i in 0..count {
        let e = 32 + 32 * i as usize;
        let entry_at = region.start + e as u64;
        let err =
            |message: String| Err(file.err(METADATA, entry_at, format!("entry {i}: {message}")));
        let item = Placed {
            offset: le_u32(t, e + 16).into(),
            len: le_u32(t, e + 20).into(),
            entry_at,
        };
        let known = Item::ALL.iter().position(|k| t[e..e + 16] == k.guid());
        if item.len > 0 {
            if item.offset < METADATA_TABLE_BYTES || item.offset + item.len > region.len {
                return err(format!(
                    "item at offset {} of {} bytes lies outside the {}-byte region past its table",
                    item.offset, item.len, region.len
                ));
            }
            let apart =
                |p: &&Placed| item.offset < p.offset + p.len && p.offset < item.offset + item.len;
            if let Some(other) = placed.iter().find(apart) {
                return err(format!(
                    "item at offset {} of {} bytes overlaps the item of the entry at byte {}",
                    item.offset, item.len, other.entry_at
                ));
            }
            placed.push(item);
        }
        match known {
            Some(k) if items[k].is_some() => {
                return err(format!("a second {} item", Item::ALL[k].name()));
            }
            Some(k) => items[k] = Some(item),
            None if le_u32(t, e + 24) & 4 != 0 => {
                return err("an item this reader does not know is marked required".into());
            }
            None => {}
        }
    }
    Ok(items)
}

/// Read the items qemu requires and check their values: a block size of
/// a power of two from 1 to 256 MiB, sector sizes of 512 or 4096 bytes, a
/// virtual size of at most 64 TiB. A file with a parent is refused.
fn read_items(
    file: &File,
    region: Region,
    items: &[Option<Placed>; 6],
) -> Result<Metadata, ImageError> {
    let value = |item: Item| -> Result<(Vec<u8>, u64), ImageError> {
        let Some(p) = items[item as usize] else {
            return Err(file.err(
                METADATA,
                region.start + 10,
                format!(
                    "entry count: the table has no {} item, which qemu requires",
                    item.name()
                ),
            ));
        };
        if p.len < item.bytes() {
            return Err(file.err(
                METADATA,
                p.entry_at + 20,
                format!(
                    "{} item length {} is less than {}",
                    item.name(),
                    p.len,
                    item.bytes()
                ),
            ));
        }
        let at = region.start + p.offset;
        Ok((file.read(METADATA, at, item.bytes())?, at))
    };
    let (params, params_at) = value(Item::FileParameters)?;
    let (size, size_at) = value(Item::VirtualDiskSize)?;
    value(Item::Page83)?;
    let (logical, logical_at) = value(Item::LogicalSectorSize)?;
    let (physical, physical_at) = value(Item::PhysicalSectorSize)?;
    let block_bytes = u64::from(le_u32(&params, 0));
    let flags = le_u32(&params, 4);
    // qemu: ENOTSUP with a parent locator, EINVAL without one.
    if flags & 2 != 0 {
        return Err(file.err(
            METADATA,
            params_at + 4,
            "file parameters: has parent is set (a differencing VHDX), which qemu does not \
             read and neither do we",
        ));
    }
    if !(MIN_BLOCK..=MAX_BLOCK).contains(&block_bytes) || !block_bytes.is_power_of_two() {
        return Err(file.err(
            METADATA,
            params_at,
            format!(
                "file parameters: block size {block_bytes} is not a power of two from 1 to 256 MiB"
            ),
        ));
    }
    let sector = |b: &[u8], at: u64, name: &str| {
        let v = le_u32(b, 0);
        if v == 512 || v == 4096 {
            Ok(v)
        } else {
            Err(file.err(METADATA, at, format!("{name} {v} is neither 512 nor 4096")))
        }
    };
    // qemu reads only 512-byte logical sectors (`vhdx_parse_metadata`:
    // "Currently we only support 512"); the layout differs only in the
    // chunk ratio, which we compute from the sector size as the
    // specification does, so a 4Kn VHDX reads too.
    let logical = sector(&logical, logical_at, "logical sector size")?;
    let physical = sector(&physical, physical_at, "physical sector size")?;
    let declared = le_u64(&size, 0);
    if declared > MAX_VIRTUAL_SIZE {
        return Err(file.err(
            METADATA,
            size_at,
            format!("virtual disk size {declared} is beyond 64 TiB"),
        ));
    }
    Ok(Metadata {
        block_bytes,
        leave_allocated: flags & 1 != 0,
        // qemu counts whole logical sectors (`bs->total_sectors`).
        virtual_size: declared / u64::from(logical) * u64::from(logical),
        logical,
        physical,
    })
}

/// The BAT's entry count (`vhdx_calc_bat_entries`): one per payload block
/// and a sector bitmap entry after every `chunk_ratio` of them. The BAT
/// region must hold them (`vhdx_open`) and the file too.
fn bat_entries(
    file: &File,
    regions: &Regions,
    meta: &Metadata,
    chunk_ratio: u64,
) -> Result<u64, ImageError> {
    let blocks = meta.virtual_size.div_ceil(meta.block_bytes);
    let entries = if blocks == 0 {
        0
    } else {
        blocks + (blocks - 1) / chunk_ratio
    };
    let bat = regions.bat;
    if entries * 8 > bat.len {
        return Err(file.err(
            BAT,
            bat.start,
            format!(
                "the region of {} bytes holds {} entries; the {}-byte disk in {}-byte blocks \
                 needs {entries}",
                bat.len,
                bat.len / 8,
                meta.virtual_size,
                meta.block_bytes
            ),
        ));
    }
    if bat.start + entries * 8 > file.src.len() {
        return Err(file.err(
            BAT,
            bat.start,
            format!(
                "{entries} entries end past the end of the file ({} bytes; truncated?)",
                file.src.len()
            ),
        ));
    }
    Ok(entries)
}

/// The guest disk: payload blocks found through the BAT.
struct Guest {
    src: SharedReader,
    path: PathBuf,
    len: u64,
    block_bytes: u64,
    chunk_ratio: u64,
    /// The BAT's entries, in the file.
    bat: Region,
    /// The structures no payload block may overlap.
    structures: [(&'static str, Region); 3],
    cache: Cache,
}

impl Guest {
    /// BAT entry `index`, through a cached page.
    fn entry(&self, index: u64) -> io::Result<u64> {
        let page_start = index * 8 / BAT_PAGE * BAT_PAGE;
        let page = self.cache.get_or_load(self.bat.start + page_start, || {
            let n = BAT_PAGE.min(self.bat.len - page_start);
            let mut buf = vec![0u8; n as usize];
            self.src
                .read_exact_at(&mut buf, self.bat.start + page_start)
                .map_err(|e| self.bad(index, format!("cannot be read: {e}")))?;
            Ok(buf)
        })?;
        Ok(le_u64(&page, (index * 8 - page_start) as usize))
    }

    fn bad(&self, index: u64, message: String) -> io::Error {
        read_error(
            &self.path,
            BAT,
            self.bat.start + index * 8,
            format!("entry {index}: {message}"),
        )
    }

    /// A present block lies past the header section and overlaps neither
    /// the log, the BAT nor the metadata (`vhdx_check_bat_entries`, which
    /// qemu runs over the whole BAT on open; we check what a read meets).
    fn check_block(&self, index: u64, offset: u64) -> io::Result<()> {
        if offset < HEADER_SECTION || offset.checked_add(self.block_bytes).is_none() {
            return Err(self.bad(
                index,
                format!("block at byte {offset} is not past the header section"),
            ));
        }
        match self
            .structures
            .iter()
            .find(|(_, r)| r.overlaps(offset, self.block_bytes))
        {
            Some((name, r)) => Err(self.bad(
                index,
                format!(
                    "block at byte {offset} overlaps the {name} (bytes {}..{})",
                    r.start,
                    r.end()
                ),
            )),
            None => Ok(()),
        }
    }
}

impl Units for Guest {
    /// Fill `out` from the guest at `at`, all within one block
    /// (`vhdx_block_translate`, `vhdx_co_readv`).
    fn read_piece(&self, out: &mut [u8], at: u64) -> io::Result<()> {
        let block = at / self.block_bytes;
        let index = block + block / self.chunk_ratio;
        let entry = self.entry(index)?;
        match entry & 7 {
            // Not present, undefined, zero, unmapped (and its v0.95 value):
            // zeros, there being no parent.
            0 | 1 | 2 | 3 | 5 => {
                out.fill(0);
                Ok(())
            }
            FULLY_PRESENT => {
                let offset = entry & BAT_OFFSET_MASK;
                self.check_block(index, offset)?;
                let start = offset + at % self.block_bytes;
                if start + out.len() as u64 > self.src.len() {
                    return Err(self.bad(
                        index,
                        format!(
                            "block at byte {offset} ends past the end of the file ({} bytes; \
                             truncated?)",
                            self.src.len()
                        ),
                    ));
                }
                self.src.read_exact_at(out, start)
            }
            PARTIALLY_PRESENT => Err(self.bad(
                index,
                "state 7 (partially present) belongs to a differencing VHDX, and this one has \
                 no parent"
                    .into(),
            )),
            state => Err(self.bad(index, format!("state {state} is no payload block state"))),
        }
    }

    fn guest_len(&self) -> u64 {
        self.len
    }
    fn unit_bytes(&self) -> u64 {
        self.block_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::MemFiles;

    const LOG_GUID: [u8; 16] = [7; 16];

    /// A VHDX laid out as qemu-img lays one out: log at 1 MiB, BAT at
    /// 2 MiB, metadata at 3 MiB, payload blocks from 4 MiB.
    struct Build {
        block: u32,
        logical: u32,
        physical: u32,
        size: u64,
        flags: u32,
        /// BAT entries set: (index, state, payload fill byte for state 6).
        entries: Vec<(u64, u64, u8)>,
    }

    impl Default for Build {
        fn default() -> Self {
            Build {
                block: MIB as u32,
                logical: 512,
                physical: 4096,
                size: 8 * MIB,
                flags: 0,
                entries: vec![(1, FULLY_PRESENT, 0x44), (2, 2, 0)],
            }
        }
    }

    fn seal(b: &mut [u8]) {
        let crc = crc32c_without(b, 4);
        b[4..8].copy_from_slice(&crc.to_le_bytes());
    }

    fn put(img: &mut [u8], at: u64, bytes: &[u8]) {
        img[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
    }

    fn header(sequence: u64, log_guid: [u8; 16]) -> Vec<u8> {
        let mut h = vec![0u8; HEADER_BYTES as usize];
        h[..4].copy_from_slice(b"head");
        h[8..16].copy_from_slice(&sequence.to_le_bytes());
        h[48..64].copy_from_slice(&log_guid);
        h[66..68].copy_from_slice(&1u16.to_le_bytes());
        h[68..72].copy_from_slice(&(MIB as u32).to_le_bytes());
        h[72..80].copy_from_slice(&MIB.to_le_bytes());
        seal(&mut h);
        h
    }

    fn region_table() -> Vec<u8> {
        let mut t = vec![0u8; REGION_TABLE_BYTES as usize];
        t[..4].copy_from_slice(b"regi");
        t[8..12].copy_from_slice(&2u32.to_le_bytes());
        for (i, (g, at)) in [(BAT_GUID, 2 * MIB), (METADATA_GUID, 3 * MIB)]
            .iter()
            .enumerate()
        {
            let e = 16 + 32 * i;
            t[e..e + 16].copy_from_slice(g);
            t[e + 16..e + 24].copy_from_slice(&at.to_le_bytes());
            t[e + 24..e + 28].copy_from_slice(&(MIB as u32).to_le_bytes());
            t[e + 28..e + 32].copy_from_slice(&1u32.to_le_bytes());
        }
        seal(&mut t);
        t
    }

    impl Build {
        fn metadata(&self) -> Vec<u8> {
            let mut m = vec![0u8; 128 * KIB as usize];
            m[..8].copy_from_slice(b"metadata");
            m[10..12].copy_from_slice(&5u16.to_le_bytes());
            let items = [
                (
                    Item::FileParameters,
                    [self.block.to_le_bytes(), self.flags.to_le_bytes()].concat(),
                ),
                (Item::VirtualDiskSize, self.size.to_le_bytes().to_vec()),
                (Item::Page83, vec![9; 16]),
                (Item::LogicalSectorSize, self.logical.to_le_bytes().to_vec()),
                (
                    Item::PhysicalSectorSize,
                    self.physical.to_le_bytes().to_vec(),
                ),
            ];
            let mut offset = 64 * KIB as usize;
            for (i, (item, value)) in items.iter().enumerate() {
                let e = 32 + 32 * i;
                m[e..e + 16].copy_from_slice(&item.guid());
                m[e + 16..e + 20].copy_from_slice(&(offset as u32).to_le_bytes());
                m[e + 20..e + 24].copy_from_slice(&(value.len() as u32).to_le_bytes());
                m[e + 24..e + 28].copy_from_slice(&4u32.to_le_bytes());
                m[offset..offset + value.len()].copy_from_slice(value);
                offset += value.len();
            }
            m
        }

        fn bytes(&self) -> Vec<u8> {
            let present = self.entries.iter().filter(|e| e.1 == FULLY_PRESENT).count() as u64;
            let mut img = vec![0u8; (4 * MIB + present * u64::from(self.block)) as usize];
            put(&mut img, 0, b"vhdxfile");
            put(&mut img, HEADER_AT[0], &header(1, [0; 16]));
            put(&mut img, HEADER_AT[1], &header(2, [0; 16]));
            put(&mut img, REGION_TABLE_AT[0], &region_table());
            put(&mut img, REGION_TABLE_AT[1], &region_table());
            put(&mut img, 3 * MIB, &self.metadata());
            let mut next = 4 * MIB;
            for &(index, state, fill) in &self.entries {
                let mut entry = state;
                if state == FULLY_PRESENT {
                    entry |= next;
                    img[next as usize..(next + u64::from(self.block)) as usize].fill(fill);
                    next += u64::from(self.block);
                }
                put(&mut img, 2 * MIB + 8 * index, &entry.to_le_bytes());
            }
            img
        }
    }

    fn open_mem(bytes: Vec<u8>) -> Result<Opened, ImageError> {
        let files = MemFiles::default();
        open(
            Rc::new(bytes),
            Path::new("/t.vhdx"),
            &mut Chain::new(&files),
        )
    }

    fn error(bytes: Vec<u8>) -> String {
        match open_mem(bytes) {
            Ok(_) => panic!("opened"),
            Err(e) => e.to_string(),
        }
    }

    fn read_guest(bytes: Vec<u8>, at: u64, len: usize) -> io::Result<Vec<u8>> {
        let g = open_mem(bytes).unwrap().guest.unwrap();
        let mut buf = vec![0xa5; len];
        g.read_exact_at(&mut buf, at).map(|_| buf)
    }

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
    fn present_blocks_read_and_the_rest_are_zeros() {
        let opened = open_mem(Build::default().bytes()).unwrap();
        let c = &opened.container;
        assert_eq!((c.format, c.version.as_str()), (ContainerFormat::Vhdx, "1"));
        assert_eq!(c.subformat.as_deref(), Some("dynamic"));
        assert_eq!((c.unit_bytes, c.virtual_size), (Some(MIB), 8 * MIB));
        assert_eq!(
            (c.logical_sector_bytes, c.physical_sector_bytes),
            (Some(512), Some(4096))
        );
        let g = opened.guest.unwrap();
        let mut buf = vec![0xa5u8; 8 * MIB as usize];
        g.read_exact_at(&mut buf, 0).unwrap();
        let mib = MIB as usize;
        assert!(buf[..mib].iter().all(|&b| b == 0));
        assert!(buf[mib..2 * mib].iter().all(|&b| b == 0x44));
        assert!(buf[2 * mib..].iter().all(|&b| b == 0));
    }

    #[test]
    fn the_sector_sizes_come_from_the_metadata() {
        let b = Build {
            logical: 4096,
            physical: 4096,
            size: 8 * MIB + 1000,
            flags: 1,
            ..Build::default()
        };
        let c = open_mem(b.bytes()).unwrap().container;
        assert_eq!(
            (c.logical_sector_bytes, c.physical_sector_bytes),
            (Some(4096), Some(4096))
        );
        // Whole logical sectors, as qemu counts them.
        assert_eq!(c.virtual_size, 8 * MIB);
        assert_eq!(c.subformat.as_deref(), Some("fixed"));
    }

    #[test]
    fn sector_bitmap_entries_interleave_every_chunk_ratio() {
        // 256 MiB blocks of 512-byte sectors: a chunk ratio of 16, so block
        // 16 is entry 17 and entry 16 is a sector bitmap entry, never read
        // for a guest read (here it points nowhere sensible).
        let b = Build {
            block: 256 * MIB as u32,
            size: 17 * 256 * MIB,
            entries: vec![],
            ..Build::default()
        };
        let mut img = b.bytes();
        img.resize(5 * MIB as usize, 0x55);
        put(
            &mut img,
            2 * MIB + 8 * 16,
            &(FULLY_PRESENT | (1 << 50)).to_le_bytes(),
        );
        put(
            &mut img,
            2 * MIB + 8 * 17,
            &(FULLY_PRESENT | (4 * MIB)).to_le_bytes(),
        );
        let got = read_guest(img, 16 * 256 * MIB + 12345, 4096).unwrap();
        assert!(got.iter().all(|&b| b == 0x55));
    }

    #[test]
    fn a_damaged_header_falls_back_to_the_other_and_two_name_both() {
        let mut img = Build::default().bytes();
        img[HEADER_AT[1] as usize + 200] ^= 1;
        assert!(open_mem(img.clone()).is_ok());
        img[HEADER_AT[0] as usize + 200] ^= 1;
        let e = error(img);
        assert!(
            e.contains(
                "VHDX header at byte 65536: no valid header: the one at byte 65536 has checksum"
            ) && e.contains("the one at byte 131072 has checksum"),
            "{e}"
        );
        let mut img = Build::default().bytes();
        let mut h = header(2, [0; 16]);
        h[100] = 1;
        seal(&mut h);
        put(&mut img, HEADER_AT[0], &h);
        assert!(error(img).contains("sequence number 2 is the same in both headers"));
    }

    #[test]
    fn a_damaged_region_table_falls_back_to_the_second_copy() {
        let mut img = Build::default().bytes();
        img[REGION_TABLE_AT[0] as usize + 100] ^= 1;
        assert!(open_mem(img.clone()).is_ok());
        img[REGION_TABLE_AT[1] as usize + 8] = 0xff;
        let e = error(img);
        assert!(
            e.contains("VHDX region table at byte 196608: no valid copy"),
            "{e}"
        );
    }

    /// The default image with its region table entry `i` moved to `at`.
    fn region_at(i: usize, at: u64) -> Vec<u8> {
        let mut img = Build::default().bytes();
        let mut t = region_table();
        t[16 + 32 * i + 16..16 + 32 * i + 24].copy_from_slice(&at.to_le_bytes());
        seal(&mut t);
        put(&mut img, REGION_TABLE_AT[0], &t);
        img
    }

    #[test]
    fn regions_that_overlap_or_sit_in_the_header_section_are_refused() {
        let e = error(region_at(1, 2 * MIB + 4096));
        assert!(
            e.contains("VHDX region table at byte 196656: entry 1: bytes 2101248..3149824 overlap"),
            "{e}"
        );
        let e = error(region_at(0, MIB));
        assert!(
            e.contains("entry 0: bytes 1048576..2097152 overlap bytes 1048576..2097152 of the log"),
            "{e}"
        );
        let e = error(region_at(0, 4096));
        assert!(
            e.contains("entry 0: file offset 4096 is not past the header section"),
            "{e}"
        );
        let e = error(region_at(0, u64::MAX - 10));
        assert!(e.contains("entry 0: file offset"), "{e}");
    }

    /// The default image with the metadata table entry `i`'s field at `field` set.
    fn metadata_entry(i: usize, field: usize, value: u32) -> Vec<u8> {
        let mut img = Build::default().bytes();
        let at = 3 * MIB + 32 + 32 * i as u64 + field as u64;
        put(&mut img, at, &value.to_le_bytes());
        img
    }

    #[test]
    fn metadata_items_outside_the_region_or_overlapping_are_refused() {
        let e = error(metadata_entry(1, 16, 65536 + 4));
        assert!(
            e.contains(
                "VHDX metadata at byte 3145792: entry 1: item at offset 65540 of 8 bytes overlaps"
            ),
            "{e}"
        );
        let e = error(metadata_entry(1, 16, u32::MAX));
        assert!(
            e.contains("entry 1: item at offset 4294967295 of 8 bytes lies outside"),
            "{e}"
        );
        let e = error(metadata_entry(0, 16, 100));
        assert!(e.contains("entry 0: item at offset 100"), "{e}");
        let e = error(metadata_entry(3, 20, 2));
        assert!(
            e.contains("logical sector size item length 2 is less than 4"),
            "{e}"
        );
        let mut img = Build::default().bytes();
        put(&mut img, 3 * MIB + 10, &3000u16.to_le_bytes());
        assert!(error(img).contains("VHDX metadata at byte 3145738: entry count 3000"));
        let mut img = Build::default().bytes();
        put(&mut img, 3 * MIB + 32 + 32 * 2, &[0; 32]);
        assert!(error(img).contains("the table has no page 83 data item"));
    }

    #[test]
    fn metadata_values_beyond_what_qemu_allows_are_refused() {
        let cases: [(Build, &str); 6] = [
            (
                Build {
                    block: 0,
                    ..Build::default()
                },
                "at byte 3211264: file parameters: block size 0",
            ),
            (
                Build {
                    block: 3 << 20,
                    ..Build::default()
                },
                "block size 3145728 is not a power of two",
            ),
            (
                Build {
                    block: 512 << 20,
                    ..Build::default()
                },
                "block size 536870912",
            ),
            (
                Build {
                    logical: 1024,
                    ..Build::default()
                },
                "logical sector size 1024 is neither",
            ),
            (
                Build {
                    physical: 0,
                    ..Build::default()
                },
                "physical sector size 0 is neither",
            ),
            (
                Build {
                    size: (64 << 40) + 512,
                    ..Build::default()
                },
                "at byte 3211272: virtual disk size 70368744178176 is beyond 64 TiB",
            ),
        ];
        for (b, want) in cases {
            let e = error(b.bytes());
            assert!(e.contains(want), "{e}");
        }
        let e = error(
            Build {
                flags: 2,
                ..Build::default()
            }
            .bytes(),
        );
        assert!(
            e.contains("at byte 3211268: file parameters: has parent is set (a differencing VHDX)"),
            "{e}"
        );
    }

    #[test]
    fn a_bat_too_small_for_the_disk_is_refused() {
        // 1 TiB in 1 MiB blocks needs 2^20 entries and 255 bitmap entries.
        let e = error(
            Build {
                size: 1 << 40,
                ..Build::default()
            }
            .bytes(),
        );
        assert!(
            e.contains(
                "VHDX BAT at byte 2097152: the region of 1048576 bytes holds 131072 entries"
            ),
            "{e}"
        );
    }

    #[test]
    fn bad_bat_entries_fail_the_read_that_meets_them() {
        let entry = |state: u64, offset: u64| {
            let mut img = Build::default().bytes();
            put(&mut img, 2 * MIB + 8 * 3, &(state | offset).to_le_bytes());
            read_guest(img, 3 * MIB, 512).unwrap_err().to_string()
        };
        let e = entry(FULLY_PRESENT, 0);
        assert!(
            e.contains(
                "VHDX BAT at byte 2097176: entry 3: block at byte 0 is not past the header section"
            ),
            "{e}"
        );
        let e = entry(FULLY_PRESENT, 3 * MIB);
        assert!(
            e.contains("overlaps the metadata (bytes 3145728..4194304)"),
            "{e}"
        );
        let e = entry(FULLY_PRESENT, 64 * MIB);
        assert!(
            e.contains("block at byte 67108864 ends past the end of the file"),
            "{e}"
        );
        let e = entry(FULLY_PRESENT, BAT_OFFSET_MASK);
        assert!(e.contains("is not past the header section"), "{e}");
        assert!(entry(PARTIALLY_PRESENT, 0).contains("state 7 (partially present)"));
        assert!(entry(4, 0).contains("state 4 is no payload block state"));
    }

    /// The default image with a log GUID in both headers and, at the start
    /// of the log, an entry of `descriptors` zero descriptors (valid or
    /// not) whose CRC is right or not.
    fn with_log(descriptors: u32, valid_descriptors: bool, crc_right: bool) -> Vec<u8> {
        let mut img = Build::default().bytes();
        put(&mut img, HEADER_AT[0], &header(1, LOG_GUID));
        put(&mut img, HEADER_AT[1], &header(2, LOG_GUID));
        let mut entry = vec![0u8; 4096];
        entry[..4].copy_from_slice(b"loge");
        entry[8..12].copy_from_slice(&4096u32.to_le_bytes());
        entry[16..24].copy_from_slice(&5u64.to_le_bytes());
        entry[24..28].copy_from_slice(&descriptors.to_le_bytes());
        entry[32..48].copy_from_slice(&LOG_GUID);
        for i in 0..descriptors as usize {
            let d = 64 + 32 * i;
            entry[d..d + 4].copy_from_slice(if valid_descriptors { b"zero" } else { b"nope" });
            entry[d + 24..d + 32].copy_from_slice(&5u64.to_le_bytes());
        }
        seal(&mut entry);
        if !crc_right {
            entry[4] ^= 1;
        }
        put(&mut img, MIB, &entry);
        img
    }

    #[test]
    fn a_log_to_replay_is_refused_as_qemu_refuses_it_read_only() {
        let e = error(with_log(2, true, true));
        assert!(
            e.contains("VHDX log at byte 1048576: entry 5 is not yet applied"),
            "{e}"
        );
        let e = error(with_log(2, false, true));
        assert!(
            e.contains("VHDX log at byte 1048640: descriptor 0 of entry 5 is not valid"),
            "{e}"
        );
        // An entry failing its CRC is not replayed: qemu opens the file.
        assert!(open_mem(with_log(2, true, false)).is_ok());
        // A log GUID over an empty log: nothing to replay.
        let mut img = with_log(0, true, true);
        img[MIB as usize..MIB as usize + 4].fill(0);
        assert!(open_mem(img).is_ok());
    }

    #[test]
    fn log_fields_qemu_checks_are_named() {
        let mut img = Build::default().bytes();
        let mut h = header(3, [0; 16]);
        h[72..80].copy_from_slice(&(MIB + 512).to_le_bytes());
        seal(&mut h);
        put(&mut img, HEADER_AT[0], &h);
        assert!(error(img).contains("VHDX header at byte 65608: log offset 1049088"));
        let mut img = Build::default().bytes();
        let mut h = header(3, LOG_GUID);
        h[68..72].copy_from_slice(&(u32::MAX).to_le_bytes());
        seal(&mut h);
        put(&mut img, HEADER_AT[0], &h);
        assert!(error(img).contains("at byte 65604: log length 4294967295"));
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
