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
//!
//! One job a file: `descriptor.rs` parses descriptor text and its extent
//! lines; `header.rs` checks a `KDMV` header into the `Layout` of a hosted
//! sparse extent, `cowd.rs` a VMFS `COWD` one; `grains.rs` reads a sparse
//! extent's grains through its grain directory and tables; `stream.rs`
//! holds streamOptimized's footer, markers and compressed grains;
//! `flat.rs` the FLAT, ZERO and NOACCESS extents; `described.rs` joins a
//! descriptor's extents into one disk. This file ties them together: it
//! tells a sparse file from a descriptor, opens a monolithic sparse file
//! and the parent.

mod cowd;
mod described;
mod descriptor;
mod flat;
mod grains;
mod header;
mod stream;

use super::{ByUnit, Chain, Container, ContainerFormat, Fallback, ImageError, Opened};
use crate::bytes::SharedReader;
use crate::bytes::{le_u64, ReadAt};
use cowd::read_cowd;
use described::open_described;
use descriptor::{
    parse_descriptor, read_descriptor_bytes, read_descriptor_file, Descriptor, MAX_DESCRIPTOR,
};
use grains::{Caches, SparseExtent};
use header::{
    check_kdmv, Layout, GD_AT_END, KDMV_CAPACITY, KDMV_DESCRIPTOR_OFFSET, KDMV_GD_OFFSET,
    KDMV_HEADER_LEN,
};
use std::path::Path;
use std::rc::Rc;
use stream::read_footer;

const SECTOR: u64 = 512;

const LAYER_HEADER: &str = "VMDK header";
const LAYER_DESCRIPTOR: &str = "VMDK descriptor";

/// qemu's disk lengths are int64 bytes.
const MAX_DISK_BYTES: u64 = i64::MAX as u64;

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

/// What a sparse extent file holds: its grains, or (a `KDMV` header with
/// capacity 0 and a descriptor offset, `vmdk_open_vmdk4`) only a
/// descriptor naming other extents.
enum SparseFile {
    Extent(Layout),
    Descriptor { at: u64, len: u64 },
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

#[cfg(test)]
mod test_support;

#[cfg(test)]
mod tests {
    use super::test_support::{guest_bytes, open_mem, refused, Sparse};
    use super::*;
    use crate::image::{ImageErrorKind, MemFiles};
    use header::FLAG_ZERO_GRAIN;

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
}
