//! What sits at the start of a region (a partition, a whole image, an md
//! array, an LV): the first format of the registry that recognises it. The
//! walk goes on into what a layer holds in place (a bcache backing
//! device's data), and queues PVs and md members for assembly across
//! targets.

use super::format::Member;
use super::lvm::PvFound;
use super::md::MdMember;
use super::region::Region;
use super::registry::FORMATS;
use super::{signature, Detail, Layer, LayerKind};
use crate::bytes::ReadAt;

/// A PV found in a region, waiting for its VG.
pub struct PvHandle {
    pub found: PvFound,
    pub region: Region,
}

/// An md member found in a region, waiting for its array.
pub struct MdHandle {
    pub member: MdMember,
    pub region: Region,
}

/// Everything found that needs its siblings (`assemble` takes it).
#[derive(Default)]
pub struct Pending {
    pub pvs: Vec<PvHandle>,
    pub mds: Vec<MdHandle>,
}

/// The bytes every walk of a region of `len` bytes reads first, as
/// (offset, length) in the region: those of the first format in the
/// registry, md, whose superblocks sit at the start and near the end
/// (the start's read brings the other formats' headers with it). Known
/// before any probe runs, so a disk's regions can be read together.
pub fn first_reads(len: u64) -> Vec<(u64, u64)> {
    super::md::places(len)
        .into_iter()
        .filter(|&(at, _)| at < len)
        .map(|(at, _)| (at, 4096.min(len - at)))
        .collect()
}

/// The layer at the start of `r`, if any format of the registry recognises
/// it, with what the walk finds inside it; else an `unread` layer naming
/// the signature found there, if any (an NTFS, a FAT): never "nothing".
pub fn walk_region(r: &Region, pending: &mut Pending) -> Option<Layer> {
    let w = r.window();
    let src: &dyn ReadAt = &*w;
    let Some(found) = FORMATS.iter().find_map(|f| (f.probe)(r, src)) else {
        return unread(r, src);
    };
    let mut layer = found.layer;
    if let Some(inner) = found.inside {
        layer.children.extend(walk_region(&inner, pending));
    }
    match found.member {
        Some(Member::Md(member)) => pending.mds.push(MdHandle {
            member,
            region: r.clone(),
        }),
        Some(Member::Pv(found)) => pending.pvs.push(PvHandle {
            found,
            region: r.clone(),
        }),
        None => {}
    }
    Some(layer)
}

/// An `unread` layer over all of `r`, named by what the signature scan
/// finds at its start.
fn unread(r: &Region, src: &dyn ReadAt) -> Option<Layer> {
    let found = signature::unread(src)?;
    let mut l = r.layer(LayerKind::Unread, found.short().to_string());
    l.detail = Some(Detail::Signature(found));
    Some(l)
}

#[cfg(test)]
mod first_reads_tests {
    use super::*;

    #[test]
    fn md_is_probed_first_so_its_places_are_read_first() {
        assert!(std::ptr::eq(FORMATS[0], &super::super::md::FORMAT));
        let len = 16 << 20;
        let reads = first_reads(len);
        assert_eq!(reads[0], (0, 4096));
        assert!(reads.iter().all(|&(at, n)| at + n <= len));
        assert!(reads.iter().any(|&(at, _)| at == len - 8192));
        assert!(reads.iter().any(|&(at, _)| at == len - 65536));
        assert_eq!(first_reads(1024), [(0, 1024)]);
    }
}
