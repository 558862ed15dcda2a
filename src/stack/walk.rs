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

/// What every walk of a region of `len` bytes reads first, as (offset,
/// length) spans in the region, known before any probe runs so a disk's
/// regions can be read together: the region's first bytes, where every
/// format's header is (`blocks`: read as whole cache blocks), and the few
/// bytes each format's probe looks at beyond them (`pages`: md's
/// superblocks near the end, ZFS's other labels).
pub struct FirstReads {
    pub blocks: Vec<(u64, u64)>,
    pub pages: Vec<(u64, u64)>,
}

pub fn first_reads(len: u64) -> FirstReads {
    let pages = FORMATS
        .iter()
        .filter_map(|f| f.peeks)
        .flat_map(|peeks| peeks(len))
        .filter(|&(at, n)| at.checked_add(n).is_some_and(|end| end <= len))
        .collect();
    FirstReads {
        blocks: vec![(0, 4096.min(len))],
        pages,
    }
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
    fn the_start_and_every_formats_peeks_are_read_first() {
        let len = 16 << 20;
        let reads = first_reads(len);
        assert_eq!(reads.blocks, [(0, 4096)]);
        let p = &reads.pages;
        assert!(p.iter().all(|&(at, n)| at + n <= len));
        // md 1.0 and 0.90 near the end; ZFS's labels 1 to 3.
        for at in [len - 8192, len - 65536, (256 + 16) << 10, len - (240 << 10)] {
            assert!(p.iter().any(|&(a, _)| a == at), "{at}");
        }
        assert_eq!(first_reads(1024).blocks, [(0, 1024)]);
        assert!(first_reads(1024)
            .pages
            .iter()
            .all(|&(at, n)| at + n <= 1024));
    }
}
