//! VDI (VirtualBox): the guest disk inside a dynamic or fixed ("static")
//! VDI 1.1 image, read as qemu 7.2 reads it (block/vdi.c). Every rule
//! below was checked against that file; the function named in a comment
//! is where qemu applies it.
//!
//! A VDI starts with a 512-byte little-endian header (a line of text, the
//! signature at byte 64, the version, then the fields of `VdiHeader`). The
//! block map (one u32 per block, at `offset_bmap`) gives each guest block's
//! index among the blocks stored from `offset_data`; an index of
//! 0xFFFFFFFF (never allocated) or 0xFFFFFFFE (discarded) reads as zeros.

use super::cache::Cache;
use super::{read_error, ByUnit, Chain, Container, ContainerFormat, ImageError, Opened, Units};
use crate::bytes::SharedReader;
use crate::bytes::{le_u32, le_u64, read_bytes};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The signature at byte 64 (`VDI_SIGNATURE`), which tells a VDI apart.
pub const SIGNATURE: u32 = 0xbeda_107f;

const HEADER: &str = "VDI header";
const BLOCK_MAP: &str = "VDI block map";

const HEADER_BYTES: u64 = 512;
const SECTOR: u64 = 512;
/// `VDI_VERSION_1_1`: the only version qemu reads.
const VERSION_1_1: u32 = 0x0001_0001;
/// Image types (`VDI_TYPE_DYNAMIC`, `VDI_TYPE_STATIC`).
const DYNAMIC: u32 = 1;
const STATIC: u32 = 2;
/// The only block size qemu reads (`DEFAULT_CLUSTER_SIZE`, 1 MiB).
const BLOCK_BYTES: u64 = 1 << 20;
/// qemu's bound on the block count (`VDI_BLOCKS_IN_IMAGE_MAX`: the block
/// map, rounded up to a sector, stays within INT_MAX bytes) and on the
/// disk size (`VDI_DISK_SIZE_MAX`).
const MAX_BLOCKS: u64 = (i32::MAX as u64 + 1 - SECTOR) / 4;
const MAX_DISK_BYTES: u64 = MAX_BLOCKS * BLOCK_BYTES;
/// Entries at or above this one are not allocated (`VDI_IS_ALLOCATED`):
/// 0xFFFFFFFE discarded (zero-filled), 0xFFFFFFFF never allocated.
const DISCARDED: u32 = 0xffff_fffe;

/// The block map is read in pages of this many bytes, kept in a bounded
/// cache (a 1 TiB disk's map is 4 MiB).
const MAP_PAGE: u64 = 4096;
const MAP_CACHE_BYTES: usize = 1 << 20;

/// The header fields this reader uses (offsets per `VdiHeader`).
struct Header {
    version: u32,
    image_type: u32,
    offset_bmap: u64,
    offset_data: u64,
    disk_size: u64,
    blocks_in_image: u64,
}

/// Open a VDI image.
pub fn open(src: SharedReader, path: &Path, _chain: &mut Chain) -> Result<Opened, ImageError> {
    let h = read_bytes(&*src, HEADER, 0, HEADER_BYTES).map_err(|e| ImageError::new(path, e))?;
    let header = check_header(&h, path)?;
    let map_bytes = header.blocks_in_image * 4;
    if header
        .offset_bmap
        .checked_add(map_bytes)
        .is_none_or(|end| end > src.len())
    {
        return Err(ImageError::parse(
            path,
            BLOCK_MAP,
            header.offset_bmap,
            format!(
                "{} entries end past the end of the file ({} bytes; truncated, or a block \
                 count that lies?)",
                header.blocks_in_image,
                src.len()
            ),
        ));
    }
    let container = Container {
        format: ContainerFormat::Vdi,
        version: format!("{}.{}", header.version >> 16, header.version & 0xffff),
        subformat: Some(
            if header.image_type == STATIC {
                "fixed"
            } else {
                "dynamic"
            }
            .into(),
        ),
        unit_bytes: Some(BLOCK_BYTES),
        virtual_size: header.disk_size,
        ..Container::default()
    };
    let guest = Guest {
        src,
        path: path.to_path_buf(),
        len: header.disk_size,
        map_offset: header.offset_bmap,
        map_bytes,
        data_offset: header.offset_data,
        cache: Cache::new(MAP_CACHE_BYTES),
    };
    Ok(Opened {
        container,
        guest: Some(Rc::new(ByUnit(guest))),
    })
}

/// The header checks of `vdi_open`, in its order, and two of ours: the
/// image type must be dynamic or static, and `block_extra` zero.
fn check_header(h: &[u8], path: &Path) -> Result<Header, ImageError> {
    let err = |at: u64, message: String| Err(ImageError::parse(path, HEADER, at, message));
    let signature = le_u32(h, 64);
    let version = le_u32(h, 68);
    let image_type = le_u32(h, 76);
    let offset_bmap = le_u32(h, 340);
    let offset_data = le_u32(h, 344);
    let sector_size = le_u32(h, 360);
    let disk_size = le_u64(h, 368);
    let block_size = le_u32(h, 376);
    let block_extra = le_u32(h, 380);
    let blocks_in_image = u64::from(le_u32(h, 384));
    if disk_size > MAX_DISK_BYTES {
        return err(
            368,
            format!("disk size {disk_size} is beyond qemu's largest VDI ({MAX_DISK_BYTES} bytes)"),
        );
    }
    // VBoxManage convertfromraw can write an odd size; qemu rounds it up.
    let disk_size = disk_size.next_multiple_of(SECTOR);
    if signature != SIGNATURE {
        return err(
            64,
            format!("signature 0x{signature:08x} is not 0x{SIGNATURE:08x}"),
        );
    }
    if version != VERSION_1_1 {
        return err(
            68,
            format!("version {}.{} is not 1.1", version >> 16, version & 0xffff),
        );
    }
    if offset_bmap % SECTOR as u32 != 0 {
        return err(
            340,
            format!("block map offset {offset_bmap} is not a multiple of 512"),
        );
    }
    if offset_data % SECTOR as u32 != 0 {
        return err(
            344,
            format!("data offset {offset_data} is not a multiple of 512"),
        );
    }
    if u64::from(sector_size) != SECTOR {
        return err(360, format!("sector size {sector_size} is not 512"));
    }
    if u64::from(block_size) != BLOCK_BYTES {
        return err(
            376,
            format!("block size {block_size} is not 1048576, the only one qemu reads"),
        );
    }
    if disk_size > blocks_in_image * BLOCK_BYTES {
        return err(
            384,
            format!(
                "blocks in image {blocks_in_image} cannot hold the disk size {disk_size} \
                 (1 MiB blocks)"
            ),
        );
    }
    if h[424..440].iter().any(|&b| b != 0) {
        return err(
            424,
            "link UUID is set: a differencing image, which qemu does not read".into(),
        );
    }
    if h[440..456].iter().any(|&b| b != 0) {
        return err(
            440,
            "parent UUID is set: a differencing image, which qemu does not read".into(),
        );
    }
    if blocks_in_image > MAX_BLOCKS {
        return err(
            384,
            format!("blocks in image {blocks_in_image} is beyond qemu's {MAX_BLOCKS}"),
        );
    }
    if image_type != DYNAMIC && image_type != STATIC {
        return err(
            76,
            format!("image type {image_type} is neither 1 (dynamic) nor 2 (static)"),
        );
    }
    // qemu ignores block_extra and reads block n at offset_data + n × 1 MiB;
    // VirtualBox puts each block's extra bytes before it. No VDI has any.
    if block_extra != 0 {
        return err(
            380,
            format!("block extra {block_extra} is not 0: qemu and VirtualBox would disagree on where blocks lie"),
        );
    }
    Ok(Header {
        version,
        image_type,
        offset_bmap: offset_bmap.into(),
        offset_data: offset_data.into(),
        disk_size,
        blocks_in_image,
    })
}

/// The guest disk: 1 MiB blocks found through the block map.
struct Guest {
    src: SharedReader,
    path: PathBuf,
    len: u64,
    map_offset: u64,
    map_bytes: u64,
    data_offset: u64,
    cache: Cache,
}

impl Guest {
    /// The block map entry of block `index` (`vdi_co_preadv`), None when
    /// the block reads as zeros.
    fn entry(&self, index: u64) -> io::Result<Option<u32>> {
        let page_start = index * 4 / MAP_PAGE * MAP_PAGE;
        let page = self.cache.get_or_load(self.map_offset + page_start, || {
            let n = MAP_PAGE.min(self.map_bytes - page_start);
            let mut buf = vec![0u8; n as usize];
            self.src
                .read_exact_at(&mut buf, self.map_offset + page_start)
                .map_err(|e| self.bad(index, format!("cannot be read: {e}")))?;
            Ok(buf)
        })?;
        let entry = le_u32(&page, (index * 4 - page_start) as usize);
        Ok((entry < DISCARDED).then_some(entry))
    }

    fn bad(&self, index: u64, message: String) -> io::Error {
        read_error(
            &self.path,
            BLOCK_MAP,
            self.map_offset + index * 4,
            format!("entry {index}: {message}"),
        )
    }
}

impl Units for Guest {
    /// Fill `out` from the guest at `at`, all within one block.
    fn read_piece(&self, out: &mut [u8], at: u64) -> io::Result<()> {
        let index = at / BLOCK_BYTES;
        let Some(stored) = self.entry(index)? else {
            out.fill(0);
            return Ok(());
        };
        let start = self.data_offset + u64::from(stored) * BLOCK_BYTES + at % BLOCK_BYTES;
        if start + out.len() as u64 > self.src.len() {
            return Err(self.bad(
                index,
                format!(
                    "block {stored} at byte {} ends past the end of the file ({} bytes; \
                     truncated?)",
                    self.data_offset + u64::from(stored) * BLOCK_BYTES,
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
        BLOCK_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::MemFiles;

    /// A dynamic VDI as qemu-img lays one out (header, block map at 512,
    /// data at 1024) of `blocks` blocks: block 1 stored first (0x33),
    /// block 2 discarded, the others never allocated.
    fn vdi(blocks: u32) -> Vec<u8> {
        let mut h = vec![0u8; 512];
        h[..35].copy_from_slice(b"<<< QEMU VM Virtual Disk Image >>>\n");
        h[64..68].copy_from_slice(&SIGNATURE.to_le_bytes());
        h[68..72].copy_from_slice(&VERSION_1_1.to_le_bytes());
        h[72..76].copy_from_slice(&384u32.to_le_bytes());
        h[76..80].copy_from_slice(&DYNAMIC.to_le_bytes());
        h[340..344].copy_from_slice(&512u32.to_le_bytes());
        h[344..348].copy_from_slice(&1024u32.to_le_bytes());
        h[360..364].copy_from_slice(&512u32.to_le_bytes());
        h[368..376].copy_from_slice(&(u64::from(blocks) << 20).to_le_bytes());
        h[376..380].copy_from_slice(&(1u32 << 20).to_le_bytes());
        h[384..388].copy_from_slice(&blocks.to_le_bytes());
        h[388..392].copy_from_slice(&1u32.to_le_bytes());
        let mut map = vec![0xffu8; 512];
        map[4..8].copy_from_slice(&0u32.to_le_bytes());
        map[8..12].copy_from_slice(&DISCARDED.to_le_bytes());
        let mut img = h;
        img.extend_from_slice(&map);
        img.extend_from_slice(&vec![0x33u8; 1 << 20]);
        img
    }

    /// Read `bytes` as a VDI, whatever its magic says.
    fn open_mem(bytes: Vec<u8>) -> Result<Opened, ImageError> {
        let files = MemFiles::default();
        open(Rc::new(bytes), Path::new("/t.vdi"), &mut Chain::new(&files))
    }

    fn error(bytes: Vec<u8>) -> String {
        match open_mem(bytes) {
            Ok(_) => panic!("opened"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn blocks_read_through_the_map_and_the_rest_as_zeros() {
        let opened = open_mem(vdi(4)).unwrap();
        let c = &opened.container;
        assert_eq!(
            (c.format, c.version.as_str()),
            (ContainerFormat::Vdi, "1.1")
        );
        assert_eq!(c.subformat.as_deref(), Some("dynamic"));
        assert_eq!((c.unit_bytes, c.virtual_size), (Some(1 << 20), 4 << 20));
        let g = opened.guest.unwrap();
        let mut buf = vec![0xa5u8; 4 << 20];
        g.read_exact_at(&mut buf, 0).unwrap();
        assert!(buf[..1 << 20].iter().all(|&b| b == 0));
        assert!(buf[1 << 20..2 << 20].iter().all(|&b| b == 0x33));
        assert!(buf[2 << 20..].iter().all(|&b| b == 0));
    }

    fn patched(at: usize, value: &[u8]) -> Vec<u8> {
        let mut img = vdi(4);
        img[at..at + value.len()].copy_from_slice(value);
        img
    }

    #[test]
    fn header_fields_that_lie_are_named() {
        let cases: [(usize, Vec<u8>, &str); 12] = [
            (64, vec![0], "byte 64: signature"),
            (
                68,
                0x0001_0000u32.to_le_bytes().to_vec(),
                "byte 68: version 1.0",
            ),
            (
                340,
                100u32.to_le_bytes().to_vec(),
                "byte 340: block map offset 100",
            ),
            (
                344,
                1000u32.to_le_bytes().to_vec(),
                "byte 344: data offset 1000",
            ),
            (
                360,
                4096u32.to_le_bytes().to_vec(),
                "byte 360: sector size 4096",
            ),
            (376, 0u32.to_le_bytes().to_vec(), "byte 376: block size 0"),
            (
                376,
                (3u32 << 20).to_le_bytes().to_vec(),
                "byte 376: block size 3145728",
            ),
            (368, u64::MAX.to_le_bytes().to_vec(), "byte 368: disk size"),
            (
                384,
                2u32.to_le_bytes().to_vec(),
                "byte 384: blocks in image 2 cannot hold",
            ),
            (440, vec![1], "byte 440: parent UUID"),
            (76, 3u32.to_le_bytes().to_vec(), "byte 76: image type 3"),
            (
                380,
                512u32.to_le_bytes().to_vec(),
                "byte 380: block extra 512",
            ),
        ];
        for (at, value, want) in cases {
            let e = error(patched(at, &value));
            assert!(e.contains(&format!("VDI header at {want}")), "{e}");
        }
    }

    #[test]
    fn a_block_count_that_lies_is_refused_before_any_allocation() {
        let mut img = patched(384, &(u32::MAX).to_le_bytes());
        let e = error(img.clone());
        assert!(
            e.contains("byte 384: blocks in image 4294967295 is beyond"),
            "{e}"
        );
        img[384..388].copy_from_slice(&(1u32 << 28).to_le_bytes());
        let e = error(img);
        assert!(
            e.contains("VDI block map at byte 512: 268435456 entries end past the end"),
            "{e}"
        );
    }

    #[test]
    fn a_block_past_the_end_fails_the_read_that_meets_it() {
        let img = patched(512 + 12, &7u32.to_le_bytes());
        let g = open_mem(img).unwrap().guest.unwrap();
        let e = g
            .read_exact_at(&mut [0u8; 512], 3 << 20)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("VDI block map at byte 524: entry 3: block 7"),
            "{e}"
        );
    }

    #[test]
    fn an_odd_disk_size_rounds_up_to_a_sector_as_qemu_does() {
        let img = patched(368, &((3u64 << 20) + 1).to_le_bytes());
        assert_eq!(
            open_mem(img).unwrap().container.virtual_size,
            (3 << 20) + 512
        );
    }
}
