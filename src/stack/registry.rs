//! Every format the stack walk recognises, one descriptor each (like
//! libblkid's `idinfo` table in util-linux
//! `libblkid/src/superblocks/superblocks.c`): its name, what it is, the
//! magic numbers the signature scan looks for, and the probe that turns the
//! bytes at the start of a region into a layer. A new format is one file
//! with its descriptor (a [`LayerFormat`]) plus one line in [`FORMATS`];
//! its rules live in `check::stack`, keyed by its layer kind.

use super::format::LayerFormat;
use super::{bcache, bluestore, fs, luks, lvm, md, swap, volume, zfs};

/// In probe order: the first that recognises a region wins. md comes
/// first, since a 1.0/0.90 member also shows what is inside at byte 0.
/// FAT comes last: NTFS and exFAT boot sectors look like one to a BPB
/// check, and an ext4 or LUKS made over an old FAT may keep its sector 0.
pub static FORMATS: &[&LayerFormat] = &[
    &md::FORMAT,
    &luks::FORMAT,
    &lvm::FORMAT,
    &bcache::FORMAT,
    &fs::FORMAT,
    &zfs::FORMAT,
    &bluestore::FORMAT,
    &swap::FORMAT,
    &volume::NTFS,
    &volume::EXFAT,
    &volume::FAT,
];
