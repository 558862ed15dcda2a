//! Every format the stack walk recognises, one descriptor each (like
//! libblkid's `idinfo` table in util-linux
//! `libblkid/src/superblocks/superblocks.c`): its name, what it is, the
//! magic numbers the signature scan looks for, and the probe that turns the
//! bytes at the start of a region into a layer. A new format is one file
//! with its descriptor plus one line in [`FORMATS`]; its rules live in
//! `check::stack`, keyed by its layer kind.

use super::assemble::Pending;
use super::walk::Region;
use super::{bcache, fs, luks, lvm, md, zfs, Layer};
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
/// not there, a layer (possibly marked damaged) when it is.
pub type Probe = fn(&Region, &dyn ReadAt, &mut Pending) -> Option<Layer>;

/// One format.
pub struct LayerFormat {
    pub name: &'static str,
    pub description: &'static str,
    /// Fixed-offset magics; formats found elsewhere (md 0.90/1.0 near the
    /// end) add their own in the signature scan.
    pub magics: &'static [Magic],
    pub probe: Probe,
}

/// In probe order: the first that recognises a region wins. md comes
/// first, since a 1.0/0.90 member also shows what is inside at byte 0.
pub static FORMATS: &[&LayerFormat] = &[
    &md::FORMAT,
    &luks::FORMAT,
    &lvm::FORMAT,
    &bcache::FORMAT,
    &fs::FORMAT,
    &zfs::FORMAT,
    &super::walk::SWAP,
];
