//! A disk described by descriptor text: each extent line opened (FLAT,
//! SPARSE, ZERO, ...), their lengths added up, and the extents mapped one
//! after the other into one guest disk (`vmdk_open_desc_file`,
//! `vmdk_parse_extents`).

use super::descriptor::{parse_descriptor, Access, ExtentKind, ExtentLine};
use super::flat::{Flat, NoAccess, Zeros};
use super::grains::{Caches, SparseExtent};
use super::header::{Layout, KDMV_CAPACITY};
use super::{
    is_sparse, open_parent, read_sparse, sector_bytes, SparseFile, LAYER_DESCRIPTOR, LAYER_HEADER,
    MAX_DISK_BYTES,
};
use crate::bytes::{Mapped, SharedReader};
use crate::image::{ByUnit, Chain, Container, ContainerFormat, Fallback, ImageError, Opened};
use std::path::{Path, PathBuf};
use std::rc::Rc;

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
pub(super) fn open_described(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::vmdk::descriptor::{MAX_DESCRIPTOR, MAX_EXTENTS};
    use crate::image::vmdk::test_support::{
        descriptor, guest_bytes, open_mem, refused, timed, Sparse,
    };
    use crate::image::MemFiles;

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
        let r = crate::image::vmdk::open(text, Path::new("/vm/p"), &mut Chain::new(&files));
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
}
