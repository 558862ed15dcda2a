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
use super::Layer;
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

/// The layer at the start of `r`, if any format of the registry recognises
/// it, with what the walk finds inside it.
pub fn region(r: &Region, pending: &mut Pending) -> Option<Layer> {
    let w = r.window();
    let src: &dyn ReadAt = &*w;
    let found = FORMATS.iter().find_map(|f| (f.probe)(r, src))?;
    let mut layer = found.layer;
    if let Some(inner) = found.inside {
        layer.children.extend(region(&inner, pending));
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
