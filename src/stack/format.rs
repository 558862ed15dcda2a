//! What a layer format is: its descriptor (the magic
//! numbers the signature scan looks for, the probe) and what its probe
//! hands back. Each format's file holds its descriptor; `registry` lists
//! them all; `walk` runs the probes and does what they ask for.

use super::lvm::PvFound;
use super::md::MdMember;
use super::region::Region;
use super::Layer;
use crate::bytes::ReadAt;

/// A magic number at a fixed byte offset from the region's start.
#[derive(Clone, Copy, Debug)]
pub struct Magic {
    pub offset: u64,
    pub bytes: &'static [u8],
    /// How the signature scan names it ("LUKS encryption header").
    pub what: &'static str,
}

/// What a probe makes of the start of a region: `None` when the format is
/// not there, what it found (possibly a layer marked damaged) when it is.
/// A probe reads and returns; it walks nothing and queues nothing itself.
pub type Probe = fn(&Region, &dyn ReadAt) -> Option<Found>;

/// One format.
pub struct LayerFormat {
    /// Fixed-offset magics; formats found elsewhere (md 0.90/1.0 near the
    /// end) add their own in the signature scan.
    pub magics: &'static [Magic],
    pub probe: Probe,
    /// Where the probe looks first beyond the region's first block, as
    /// (offset, length) given the region's length: a few bytes each (md's
    /// superblocks near the end, ZFS's other labels). Known before any
    /// probe runs, so every region of a disk is read ahead together.
    pub peeks: Option<Peeks>,
}

/// A format's [`LayerFormat::peeks`].
pub type Peeks = fn(u64) -> Vec<(u64, u64)>;

/// What a probe found at the start of a region.
pub struct Found {
    pub layer: Layer,
    /// A region of the layer's own data that the walk goes on into (a
    /// bcache backing device's data, readable in place).
    pub inside: Option<Region>,
    /// A member of a device assembled across targets, which the walk
    /// queues for `assemble`.
    pub member: Option<Member>,
}

impl From<Layer> for Found {
    fn from(layer: Layer) -> Self {
        Found {
            layer,
            inside: None,
            member: None,
        }
    }
}

/// A member of a device built from several: an md array's or a VG's.
pub enum Member {
    Md(MdMember),
    Pv(PvFound),
}
