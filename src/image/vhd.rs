//! VHD (Connectix / Microsoft Virtual PC; qemu's `vpc`): the guest disk
//! inside a fixed or dynamic VHD, read as qemu 7.2 reads it
//! (block/vpc.c). Every rule below was checked against that file; the
//! function named in a comment is where qemu applies it.
//!
//! A VHD ends with a 512-byte big-endian footer. A fixed disk is the guest
//! disk followed by that footer. A dynamic disk keeps a copy of the footer
//! at byte 0, then a dynamic header (`cxsparse`) naming the block
//! allocation table (BAT): one big-endian u32 per block, the block's
//! sector number in the file (0xFFFFFFFF: not allocated, reads as zeros),
//! where a sector bitmap precedes the block's data.
//!
//! qemu's probe (`vpc_probe`) looks for `conectix` at byte 0 only, so
//! `qemu-img info` without `-f vpc` takes a fixed VHD for a raw disk whose
//! last 512 bytes are the footer. We tell it by its footer (detect.rs) and
//! read it as `-f vpc` does: the guest disk without the footer.

use super::cache::Cache;
use super::{read_error, ByUnit, Chain, Container, ContainerFormat, ImageError, Opened, Units};
use crate::bytes::{be_u16, be_u32, be_u64, read_bytes, ReadAt};
use crate::bytes::{SharedReader, Window};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

const FOOTER: &str = "VHD footer";
const DYNAMIC: &str = "VHD dynamic header";
const BAT: &str = "VHD BAT";

const COOKIE: &[u8; 8] = b"conectix";
const SPARSE_COOKIE: &[u8; 8] = b"cxsparse";
const FOOTER_BYTES: u64 = 512;
const DYNAMIC_HEADER_BYTES: u64 = 1024;
const SECTOR: u64 = 512;

/// Disk types (footer byte 60).
const FIXED: u32 = 2;
const DYNAMIC_DISK: u32 = 3;
const DIFFERENCING: u32 = 4;

/// qemu's largest VHD: `VHD_MAX_SECTORS` (2040 GiB).
const MAX_SECTORS: u64 = 0xff00_0000;
/// The largest CHS geometry, `VHD_MAX_GEOMETRY`: an image with it has its
/// size in the footer's current size (qemu's `force_size`).
const MAX_GEOMETRY: u64 = 65535 * 16 * 255;
/// qemu's bound on the BAT's entry count (`max_table_entries > INT_MAX / 4`
/// is refused in `vpc_open`).
const MAX_TABLE_ENTRIES: u64 = (i32::MAX / 4) as u64;
/// A BAT entry of a block not allocated.
const UNALLOCATED: u32 = 0xffff_ffff;

/// The BAT is read in pages of this many bytes, kept in a bounded cache.
const BAT_PAGE: u64 = 4096;
const BAT_CACHE_BYTES: usize = 1 << 20;

/// The footer's fields this reader uses (offsets per `VHDFooter` in
/// block/vpc.c).
struct Footer {
    /// Where the footer read is: 0 (a dynamic disk's copy) or the last
    /// 512 bytes of the file (a fixed disk).
    at: u64,
    version: u32,
    data_offset: u64,
    creator_app: [u8; 4],
    current_size: u64,
    cylinders: u16,
    heads: u8,
    sectors_per_track: u8,
    disk_type: u32,
}

impl Footer {
    fn parse(b: &[u8], at: u64) -> Footer {
        Footer {
            at,
            version: be_u32(b, 12),
            data_offset: be_u64(b, 16),
            creator_app: [b[28], b[29], b[30], b[31]],
            current_size: be_u64(b, 48),
            cylinders: be_u16(b, 56),
            heads: b[58],
            sectors_per_track: b[59],
            disk_type: be_u32(b, 60),
        }
    }

    /// Which copy this is, in words for an error message.
    fn copy(&self) -> &'static str {
        if self.at == 0 {
            "the footer copy at the start"
        } else {
            "the footer at the end"
        }
    }
}

/// Open a VHD image: fixed or dynamic. A differencing VHD is refused, as
/// qemu cannot read it either (see [`check_disk_type`]).
pub fn open(src: SharedReader, path: &Path, _chain: &mut Chain) -> Result<Opened, ImageError> {
    let footer = read_footer(&*src, path)?;
    check_disk_type(&footer, path)?;
    let virtual_size = virtual_size(&footer, path)?;
    let mut container = Container {
        format: ContainerFormat::Vhd,
        version: format!("{}.{}", footer.version >> 16, footer.version & 0xffff),
        virtual_size,
        ..Container::default()
    };
    let guest: SharedReader = if footer.disk_type == FIXED {
        container.subformat = Some("fixed".into());
        fixed_guest(src, path, &footer, virtual_size)?
    } else {
        container.subformat = Some("dynamic".into());
        let dynamic = Dynamic::open(src, path, &footer, virtual_size)?;
        container.unit_bytes = Some(dynamic.block_bytes);
        Rc::new(ByUnit(dynamic))
    };
    Ok(Opened {
        container,
        guest: Some(guest),
    })
}

/// The footer qemu reads (`vpc_open`): the copy at byte 0 when it starts
/// with `conectix`, else the last 512 bytes of the file. Its checksum (the
/// one's complement of the byte sum, the checksum field taken as zero)
/// must hold: qemu refuses the image otherwise ("Incorrect header
/// checksum"). qemu never falls back from a bad copy at the start to the
/// footer at the end, nor do we.
fn read_footer(src: &dyn ReadAt, path: &Path) -> Result<Footer, ImageError> {
    let len = src.len();
    if len < FOOTER_BYTES {
        return Err(ImageError::parse(
            path,
            FOOTER,
            0,
            format!("the file is {len} bytes, too short for a 512-byte footer"),
        ));
    }
    let read = |at| read_bytes(src, FOOTER, at, FOOTER_BYTES).map_err(|e| ImageError::new(path, e));
    let mut at = 0;
    let mut bytes = read(0)?;
    if &bytes[..8] != COOKIE {
        at = len - FOOTER_BYTES;
        bytes = read(at)?;
        if &bytes[..8] != COOKIE {
            return Err(ImageError::parse(
                path,
                FOOTER,
                at,
                "cookie: no \"conectix\" at byte 0 nor in the last 512 bytes",
            ));
        }
    }
    let footer = Footer::parse(&bytes, at);
    let stored = be_u32(&bytes, 64);
    let computed = checksum(&bytes, 64);
    if stored != computed {
        return Err(ImageError::parse(
            path,
            FOOTER,
            at + 64,
            format!(
                "checksum of {} is 0x{stored:08x}, its bytes sum to 0x{computed:08x}",
                footer.copy()
            ),
        ));
    }
    Ok(footer)
}

/// The VHD checksum (`vpc_checksum`): the one's complement of the sum of
/// all bytes, the 4-byte checksum field at `field` counted as zeros.
fn checksum(bytes: &[u8], field: usize) -> u32 {
    let sum = bytes
        .iter()
        .enumerate()
        .filter(|(i, _)| !(field..field + 4).contains(i))
        .fold(0u32, |s, (_, &b)| s.wrapping_add(u32::from(b)));
    !sum
}

/// qemu reads a footer copy at the start as a dynamic disk and a footer
/// at the end as a fixed one, refusing any other type there
/// (`vpc_open`: "invalid VPC image"). A differencing disk (type 4) has
/// its copy at the start and qemu opens it as a plain dynamic disk: it
/// never reads the parent locators nor the sector bitmaps, so the blocks
/// the child leaves to its parent read as zeros. No reader agrees on such
/// a guest, so it is refused in one line rather than read wrong.
fn check_disk_type(footer: &Footer, path: &Path) -> Result<(), ImageError> {
    let at = footer.at + 60;
    let refuse = |message: String| Err(ImageError::parse(path, FOOTER, at, message));
    match (footer.at == 0, footer.disk_type) {
        (true, DYNAMIC_DISK) | (false, FIXED) => Ok(()),
        (true, DIFFERENCING) => refuse(
            "disk type 4 (differencing) is not read: qemu's vpc driver ignores the parent \
             and would read the blocks left to it as zeros"
                .into(),
        ),
        (true, FIXED) => refuse(
            "disk type 2 (fixed) in a footer copy at the start, where only a dynamic disk \
             has one"
                .into(),
        ),
        (false, DYNAMIC_DISK | DIFFERENCING) => refuse(format!(
            "disk type {} in the footer at the end, but the copy at the start that qemu \
             reads a dynamic disk from is missing",
            footer.disk_type
        )),
        (_, t) => refuse(format!(
            "disk type {t} is none of 2 (fixed), 3 (dynamic), 4 (differencing)"
        )),
    }
}

/// The guest disk's size as qemu computes it (`vpc_open`): Virtual PC
/// sizes a disk by its CHS geometry (cylinders × heads × sectors per
/// track, in 512-byte sectors), Hyper-V and the others by the footer's
/// current size. qemu takes the current size when the creator application
/// is `win ` (Hyper-V), `qem2` (qemu with `force_size`), `d2v ` (Disk2vhd),
/// `CTXS` (XenConverter) or `tap\0` (XenServer), or when the geometry is
/// the largest one (65535 × 16 × 255, which cannot hold the size);
/// otherwise the geometry (`vpc `, `qemu` and any unknown creator). The
/// current size is truncated to whole sectors. Beyond 2040 GiB
/// (`VHD_MAX_SECTORS`) qemu refuses the image (EFBIG).
fn virtual_size(footer: &Footer, path: &Path) -> Result<u64, ImageError> {
    const BY_CURRENT_SIZE: [&[u8; 4]; 5] = [b"win ", b"qem2", b"d2v ", b"CTXS", b"tap\0"];
    let geometry =
        u64::from(footer.cylinders) * u64::from(footer.heads) * u64::from(footer.sectors_per_track);
    let by_size = BY_CURRENT_SIZE.contains(&&footer.creator_app) || geometry == MAX_GEOMETRY;
    let (sectors, field, at) = if by_size {
        (footer.current_size / SECTOR, "current size", footer.at + 48)
    } else {
        (geometry, "CHS geometry", footer.at + 56)
    };
    if sectors > MAX_SECTORS {
        return Err(ImageError::parse(
            path,
            FOOTER,
            at,
            format!(
                "{field} gives {sectors} sectors, beyond qemu's largest VHD ({MAX_SECTORS} \
                 sectors, 2040 GiB)"
            ),
        ));
    }
    Ok(sectors * SECTOR)
}

/// A fixed disk: the guest is the file's first `virtual_size` bytes, which
/// must end before the footer (qemu reads `bs->file` directly, past the
/// end as zeros; a file too short for its size is truncated).
fn fixed_guest(
    src: SharedReader,
    path: &Path,
    footer: &Footer,
    virtual_size: u64,
) -> Result<SharedReader, ImageError> {
    if virtual_size > footer.at {
        return Err(ImageError::parse(
            path,
            FOOTER,
            footer.at + 48,
            format!(
                "size {virtual_size} does not fit before the footer at byte {} (truncated?)",
                footer.at
            ),
        ));
    }
    Ok(Rc::new(Window {
        src,
        start: 0,
        len: virtual_size,
    }))
}

/// A dynamic disk's guest: blocks found through the BAT, read from the
/// file past each block's sector bitmap.
struct Dynamic {
    src: SharedReader,
    path: PathBuf,
    len: u64,
    block_bytes: u64,
    /// qemu's `bitmap_size`: the sector bitmap before each block's data.
    bitmap_bytes: u64,
    bat_offset: u64,
    bat_entries: u64,
    cache: Cache,
}

impl Dynamic {
    /// Read and check the dynamic header as `vpc_open` does.
    fn open(
        src: SharedReader,
        path: &Path,
        footer: &Footer,
        virtual_size: u64,
    ) -> Result<Dynamic, ImageError> {
        let at = footer.data_offset;
        let err = |offset: u64, message: String| ImageError::parse(path, DYNAMIC, offset, message);
        let h = read_bytes(&*src, DYNAMIC, at, DYNAMIC_HEADER_BYTES).map_err(|e| {
            err(
                at,
                format!(
                    "the footer's data offset {at} names no 1024-byte header: {}",
                    e.message
                ),
            )
        })?;
        if &h[..8] != SPARSE_COOKIE {
            return Err(err(at, "cookie is not \"cxsparse\"".into()));
        }
        // qemu does not check this checksum; the VHD specification defines
        // it, qemu-img writes it, and a header failing it is damaged.
        let (stored, computed) = (be_u32(&h, 36), checksum(&h, 36));
        if stored != computed {
            return Err(err(
                at + 36,
                format!("checksum is 0x{stored:08x}, the header's bytes sum to 0x{computed:08x}"),
            ));
        }
        let bat_offset = be_u64(&h, 16);
        let bat_entries = u64::from(be_u32(&h, 28));
        let block_bytes = u64::from(be_u32(&h, 32));
        // `vpc_open`: a power of two of at least a sector ("Invalid block size").
        if !block_bytes.is_power_of_two() || block_bytes < SECTOR {
            return Err(err(
                at + 32,
                format!("block size {block_bytes} is not a power of two of at least 512"),
            ));
        }
        // `vpc_open`: "Too many blocks", "Page table too small", "Max Table
        // Entries too large".
        if virtual_size / block_bytes > u64::from(u32::MAX) {
            return Err(err(
                at + 32,
                format!("block size {block_bytes} makes more than 2^32 blocks"),
            ));
        }
        if bat_entries > MAX_TABLE_ENTRIES {
            return Err(err(
                at + 28,
                format!("max table entries {bat_entries} is beyond qemu's {MAX_TABLE_ENTRIES}"),
            ));
        }
        if bat_entries * block_bytes < virtual_size {
            return Err(err(
                at + 28,
                format!(
                    "max table entries {bat_entries} of {block_bytes}-byte blocks cannot \
                     hold the {virtual_size}-byte disk"
                ),
            ));
        }
        // `vpc_open` refuses a file that ends before the BAT rounded up to
        // a sector ("free_data_block_offset points after the end of file").
        let bat_end = bat_offset
            .checked_add(bat_entries * 4)
            .and_then(|e| e.checked_next_multiple_of(SECTOR));
        if bat_end.is_none_or(|e| e > src.len()) {
            return Err(err(
                at + 16,
                format!(
                    "table offset {bat_offset} with {bat_entries} entries ends past the end of \
                     the file ({} bytes; truncated?)",
                    src.len()
                ),
            ));
        }
        Ok(Dynamic {
            src,
            path: path.to_path_buf(),
            len: virtual_size,
            block_bytes,
            // `vpc_open`: one bit per sector, padded to whole sectors
            // (zero for blocks below 4 KiB, as qemu computes it).
            bitmap_bytes: (block_bytes / (8 * SECTOR)).next_multiple_of(SECTOR),
            bat_offset,
            bat_entries,
            cache: Cache::new(BAT_CACHE_BYTES),
        })
    }

    /// The BAT entry of block `index`: None when the block is not
    /// allocated (qemu's `get_image_offset`: past the table or 0xFFFFFFFF).
    fn entry(&self, index: u64) -> io::Result<Option<u32>> {
        if index >= self.bat_entries {
            return Ok(None);
        }
        let table_bytes = self.bat_entries * 4;
        let page_start = index * 4 / BAT_PAGE * BAT_PAGE;
        let page = self.cache.get_or_load(self.bat_offset + page_start, || {
            let n = BAT_PAGE.min(table_bytes - page_start);
            let mut buf = vec![0u8; n as usize];
            self.src
                .read_exact_at(&mut buf, self.bat_offset + page_start)
                .map_err(|e| self.bad(index, format!("cannot be read: {e}")))?;
            Ok(buf)
        })?;
        let entry = be_u32(&page, (index * 4 - page_start) as usize);
        Ok((entry != UNALLOCATED).then_some(entry))
    }

    /// An error about block `index`'s BAT entry, for a guest read.
    fn bad(&self, index: u64, message: String) -> io::Error {
        read_error(
            &self.path,
            BAT,
            self.bat_offset + index * 4,
            format!("entry {index}: {message}"),
        )
    }
}

impl Units for Dynamic {
    /// Fill `out` from the guest at `at`, all within one block.
    fn read_piece(&self, out: &mut [u8], at: u64) -> io::Result<()> {
        let index = at / self.block_bytes;
        let Some(sector) = self.entry(index)? else {
            out.fill(0);
            return Ok(());
        };
        let start = u64::from(sector) * SECTOR + self.bitmap_bytes + at % self.block_bytes;
        let end = start + out.len() as u64;
        if end > self.src.len() {
            return Err(self.bad(
                index,
                format!(
                    "block at sector {sector} ends past the end of the file ({} bytes; \
                     truncated?)",
                    self.src.len()
                ),
            ));
        }
        self.src.read_exact_at(out, start)
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
    use crate::image::{self, MemFiles};

    /// A footer as qemu-img writes one (`vpc_co_create`), checksum set.
    fn footer(disk_type: u32, creator: &[u8; 4], size: u64, chs: (u16, u8, u8)) -> Vec<u8> {
        let mut f = vec![0u8; 512];
        f[..8].copy_from_slice(COOKIE);
        f[8..12].copy_from_slice(&2u32.to_be_bytes());
        f[12..16].copy_from_slice(&0x0001_0000u32.to_be_bytes());
        let data_offset = if disk_type == FIXED { u64::MAX } else { 512 };
        f[16..24].copy_from_slice(&data_offset.to_be_bytes());
        f[28..32].copy_from_slice(creator);
        f[40..48].copy_from_slice(&size.to_be_bytes());
        f[48..56].copy_from_slice(&size.to_be_bytes());
        f[56..58].copy_from_slice(&chs.0.to_be_bytes());
        f[58] = chs.1;
        f[59] = chs.2;
        f[60..64].copy_from_slice(&disk_type.to_be_bytes());
        seal(&mut f, 64);
        f
    }

    fn seal(bytes: &mut [u8], field: usize) {
        let sum = checksum(bytes, field);
        bytes[field..field + 4].copy_from_slice(&sum.to_be_bytes());
    }

    /// A dynamic VHD of `blocks` 4 KiB blocks (qemu's layout: footer copy,
    /// dynamic header at 512, BAT at 1536), with block 1 allocated and
    /// filled with 0x11.
    fn dynamic(blocks: u32) -> Vec<u8> {
        let block = 4096u32;
        let size = u64::from(blocks) * u64::from(block);
        let foot = footer(DYNAMIC_DISK, b"qem2", size, (65535, 16, 255));
        let mut img = foot.clone();
        let mut h = vec![0u8; 1024];
        h[..8].copy_from_slice(SPARSE_COOKIE);
        h[8..16].copy_from_slice(&u64::MAX.to_be_bytes());
        h[16..24].copy_from_slice(&1536u64.to_be_bytes());
        h[24..28].copy_from_slice(&0x0001_0000u32.to_be_bytes());
        h[28..32].copy_from_slice(&blocks.to_be_bytes());
        h[32..36].copy_from_slice(&block.to_be_bytes());
        seal(&mut h, 36);
        img.extend_from_slice(&h);
        let bat_bytes = (blocks as usize * 4).next_multiple_of(512);
        let mut bat = vec![0xffu8; bat_bytes];
        let data_sector = (1536 + bat_bytes) as u32 / 512;
        bat[4..8].copy_from_slice(&data_sector.to_be_bytes());
        img.extend_from_slice(&bat);
        img.extend_from_slice(&[0xff; 512]); // the block's sector bitmap
        img.extend_from_slice(&vec![0x11; block as usize]);
        img.extend_from_slice(&foot);
        img
    }

    fn open_mem(bytes: Vec<u8>) -> Result<Opened, ImageError> {
        let files = MemFiles::default().with("/t.vhd", bytes);
        image::open(Path::new("/t.vhd"), &files)
    }

    fn error(bytes: Vec<u8>) -> String {
        match open_mem(bytes) {
            Ok(_) => panic!("opened"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn size_follows_the_creator_as_qemu_decides() {
        // qemu-img create -f vpc 64M: geometry 964 × 8 × 17 sectors.
        let f = Footer::parse(&footer(FIXED, b"qemu", 64 << 20, (964, 8, 17)), 1);
        assert_eq!(virtual_size(&f, Path::new("x")).unwrap(), 67_125_248);
        // Hyper-V, force_size and Disk2vhd: the current size, in sectors.
        for app in [b"win ", b"qem2", b"d2v ", b"CTXS", b"tap\0"] {
            let f = Footer::parse(&footer(FIXED, app, (64 << 20) + 100, (1040, 16, 63)), 1);
            assert_eq!(virtual_size(&f, Path::new("x")).unwrap(), 64 << 20);
        }
        // The largest geometry means the size is in the footer, whoever made it.
        let f = Footer::parse(&footer(FIXED, b"vpc ", 1 << 40, (65535, 16, 255)), 1);
        assert_eq!(virtual_size(&f, Path::new("x")).unwrap(), 1 << 40);
        // Beyond 2040 GiB qemu refuses.
        let f = Footer::parse(&footer(FIXED, b"win ", 2041 << 30, (0, 0, 0)), 1);
        let e = virtual_size(&f, Path::new("x")).unwrap_err().to_string();
        assert!(e.contains("VHD footer at byte 49: current size"), "{e}");
    }

    #[test]
    fn a_dynamic_disk_reads_its_blocks_and_zeros_between() {
        let opened = open_mem(dynamic(4)).unwrap();
        let c = &opened.container;
        assert_eq!(c.version, "1.0");
        assert_eq!(c.subformat.as_deref(), Some("dynamic"));
        assert_eq!((c.unit_bytes, c.virtual_size), (Some(4096), 16384));
        let g = opened.guest.unwrap();
        let mut buf = vec![0xa5u8; 16384];
        g.read_exact_at(&mut buf, 0).unwrap();
        assert!(buf[..4096].iter().all(|&b| b == 0));
        assert!(buf[4096..8192].iter().all(|&b| b == 0x11));
        assert!(buf[8192..].iter().all(|&b| b == 0));
        assert!(g.read_exact_at(&mut [0u8; 2], 16383).is_err());
    }

    #[test]
    fn a_fixed_disk_is_the_file_before_its_footer() {
        let mut img = vec![0x22u8; 8192];
        img.extend_from_slice(&footer(FIXED, b"qem2", 8192, (65535, 16, 255)));
        let opened = open_mem(img).unwrap();
        assert_eq!(opened.container.subformat.as_deref(), Some("fixed"));
        assert_eq!(opened.container.unit_bytes, None);
        assert_eq!(opened.guest.unwrap().len(), 8192);
        // A size the file cannot hold is refused.
        let mut img = vec![0x22u8; 8192];
        img.extend_from_slice(&footer(FIXED, b"qem2", 9216, (65535, 16, 255)));
        let e = error(img);
        assert!(e.contains("VHD footer at byte 8240: size 9216"), "{e}");
    }

    #[test]
    fn a_bad_footer_checksum_names_the_copy() {
        let mut img = dynamic(4);
        img[100] ^= 1;
        let e = error(img);
        assert!(
            e.contains("VHD footer at byte 64: checksum of the footer copy at the start"),
            "{e}"
        );
        let mut img = vec![0u8; 4096];
        let mut f = footer(FIXED, b"qem2", 4096, (65535, 16, 255));
        f[70] ^= 1;
        img.extend_from_slice(&f);
        let e = error(img);
        assert!(
            e.contains("at byte 4160: checksum of the footer at the end"),
            "{e}"
        );
    }

    #[test]
    fn differencing_and_misplaced_types_are_refused_in_one_line() {
        let mut img = dynamic(4);
        img[60..64].copy_from_slice(&DIFFERENCING.to_be_bytes());
        seal(&mut img[..512], 64);
        let e = error(img);
        assert!(e.contains("at byte 60: disk type 4 (differencing)"), "{e}");
        let mut img = dynamic(4);
        img[60..64].copy_from_slice(&7u32.to_be_bytes());
        seal(&mut img[..512], 64);
        assert!(error(img).contains("disk type 7 is none of"));
    }

    /// Patch a dynamic header field and reseal it.
    fn patched(at: usize, value: &[u8]) -> Vec<u8> {
        let mut img = dynamic(4);
        img[512 + at..512 + at + value.len()].copy_from_slice(value);
        seal(&mut img[512..1536], 36);
        img
    }

    #[test]
    fn dynamic_header_fields_that_lie_are_named() {
        let cases: [(usize, Vec<u8>, &str); 6] = [
            (32, 0u32.to_be_bytes().to_vec(), "byte 544: block size 0"),
            (
                32,
                3000u32.to_be_bytes().to_vec(),
                "byte 544: block size 3000",
            ),
            (
                28,
                3u32.to_be_bytes().to_vec(),
                "byte 540: max table entries 3 of",
            ),
            (
                28,
                (1u32 << 31).to_be_bytes().to_vec(),
                "byte 540: max table entries 2147483648",
            ),
            (
                28,
                0x1000_0000u32.to_be_bytes().to_vec(),
                "byte 528: table offset 1536 with",
            ),
            (
                16,
                u64::MAX.to_be_bytes().to_vec(),
                "byte 528: table offset",
            ),
        ];
        for (at, value, want) in cases {
            let e = error(patched(at, &value));
            assert!(e.contains(&format!("VHD dynamic header at {want}")), "{e}");
        }
        let mut img = dynamic(4);
        img[600] ^= 1;
        assert!(error(img).contains("VHD dynamic header at byte 548: checksum"));
        let mut img = dynamic(4);
        img[512] = b'X';
        seal(&mut img[512..1536], 36);
        assert!(error(img).contains("at byte 512: cookie"));
    }

    #[test]
    fn a_block_past_the_end_fails_the_read_that_meets_it() {
        let mut img = dynamic(4);
        img[1536 + 8..1536 + 12].copy_from_slice(&0x00ff_0000u32.to_be_bytes());
        let g = open_mem(img).unwrap().guest.unwrap();
        let e = g
            .read_exact_at(&mut [0u8; 512], 8192)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("VHD BAT at byte 1544: entry 2: block at sector"),
            "{e}"
        );
        g.read_exact_at(&mut [0u8; 512], 4096).unwrap();
    }

    #[test]
    fn truncated_files_are_refused() {
        for len in [0, 100, 600, 1600] {
            let mut img = dynamic(4);
            img.truncate(len);
            let files = MemFiles::default().with("/t.vhd", img.clone());
            let mut chain = Chain::new(&files);
            let r = open(Rc::new(img), Path::new("/t.vhd"), &mut chain);
            assert!(r.is_err(), "{len}");
        }
    }
}
