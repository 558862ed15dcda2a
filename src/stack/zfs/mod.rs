//! ZFS vdev labels: what a pool member says about its pool, its vdev tree
//! and the `ashift` its top-level vdev allocates in.
//!
//! A leaf vdev (a disk, partition or file) carries four 256 KiB labels
//! (`vdev_label_t`, OpenZFS `include/sys/vdev_impl.h`): L0 and L1 at bytes
//! 0 and 256 KiB, L2 and L3 at 512 KiB and 256 KiB before the end, the
//! size first aligned down to 256 KiB (`vdev_label_offset` in
//! `module/zfs/vdev_label.c`; `vdev_open` in `module/zfs/vdev.c` and
//! `zpool_read_label` in `lib/libzutil/zutil_import.c` align it). Each
//! label holds 8 KiB of padding, 8 KiB of boot environment, the 112 KiB
//! `vdev_phys_t` at +16 KiB and the 128 KiB uberblock ring. `vdev_phys_t`
//! is the configuration as an XDR nvlist ([`nvlist`]) ending in a
//! `zio_eck_t` (`include/sys/zio.h`: the magic `ZEC_MAGIC`, then a 256-bit
//! checksum): SHA-256 (`ZIO_CHECKSUM_LABEL` in the table of
//! `module/zfs/zio_checksum.c`; `abd_checksum_sha256` in
//! `module/zfs/sha2_zfs.c` keeps the digest as four big-endian words) over
//! the whole 112 KiB with the checksum field holding the verifier, the
//! byte offset of this `vdev_phys_t` on the vdev
//! (`zio_checksum_label_verifier` and `zio_checksum_error_impl`). The
//! magic read byte-swapped means the label was written big-endian: its
//! words (magic, verifier, checksum) are in that order.
//!
//! A damaged copy is reported (a finding on the layer), the others still
//! read; no sound copy at all means no ZFS here. Of the sound copies the
//! one with the highest `txg` is the configuration, as OpenZFS's
//! `vdev_label_read_config` picks it.

mod nvlist;

pub use nvlist::{decode as decode_nvlist, nvlist, Encoder, NvList, NvValue};

use super::format::{Found, LayerFormat, Magic};
use super::region::Region;
use super::{Detail, LayerKind};
use crate::bytes::{be_u64, le_u64, read_bytes, ParseError, ReadAt};
use serde::{Deserialize, Serialize};
use sha2::Digest;

/// `sizeof (vdev_label_t)`.
pub const LABEL_SIZE: u64 = 256 << 10;
/// `VDEV_LABELS`.
pub const LABELS: usize = 4;
/// `VDEV_SKIP_SIZE`: where `vdev_phys_t` starts in a label.
pub const PHYS_AT: u64 = 16 << 10;
/// `VDEV_PHYS_SIZE`.
pub const PHYS_SIZE: usize = 112 << 10;
/// `sizeof (zio_eck_t)`: the magic and four checksum words.
const ECK_SIZE: usize = 40;
/// `ZEC_MAGIC`.
const ZEC_MAGIC: u64 = 0x0210_da7a_b10c_7a11;
/// `SPA_VERSION_FEATURES`: pools with feature flags say 5000.
#[cfg(test)]
pub const VERSION_FEATURES: u64 = 5000;
/// Deepest vdev tree taken into the typed form (root, top-level vdev,
/// a spare or replacing vdev, a leaf: four at most in practice).
const MAX_TREE_DEPTH: usize = 8;

/// Each label's name in errors.
const LAYERS: [&str; LABELS] = ["ZFS label 0", "ZFS label 1", "ZFS label 2", "ZFS label 3"];

/// The nvlist header of a label written on a little-endian machine, with
/// the list's version (0) and flags (`NV_UNIQUE_NAME`), as every label's
/// configuration starts (libblkid's `zfs.c` checks the first two bytes).
const NVLIST_LE: [u8; 12] = [1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const NVLIST_BE: [u8; 12] = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

/// ZFS pool members, named as libblkid names them
/// (util-linux `libblkid/src/superblocks/zfs.c`).
pub static FORMAT: LayerFormat = LayerFormat {
    magics: &[
        Magic {
            offset: PHYS_AT,
            bytes: &NVLIST_LE,
            what: "ZFS vdev label",
        },
        Magic {
            offset: LABEL_SIZE + PHYS_AT,
            bytes: &NVLIST_LE,
            what: "ZFS vdev label (second copy)",
        },
        Magic {
            offset: PHYS_AT,
            bytes: &NVLIST_BE,
            what: "ZFS vdev label (big-endian)",
        },
    ],
    probe,
    peeks: Some(peeks),
};

/// One vdev of the tree a label carries: the top-level vdev this member
/// belongs to, with its children down to the leaves.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Vdev {
    /// `disk`, `file`, `mirror`, `raidz`, `draid`, `spare`, `replacing`...
    #[serde(rename = "type")]
    pub vdev_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guid: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// log2 of the allocation unit (a top-level vdev's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ashift: Option<u64>,
    /// The allocatable size (a top-level vdev's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asize_bytes: Option<u64>,
    /// ZFS was given the whole disk (and partitioned it itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whole_disk: Option<bool>,
    /// A raidz's parity count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nparity: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_log: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Vdev>,
}

impl Vdev {
    /// This vdev and every one below it, depth first.
    pub fn walk(&self) -> Vec<&Vdev> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.walk());
        }
        out
    }
}

/// What became of one of the four label copies.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LabelCopy {
    /// 0 to 3.
    pub index: u8,
    /// Where its `vdev_phys_t` starts, from the member's start.
    pub offset_bytes: u64,
    /// Its checksum verified and its nvlist decoded.
    pub sound: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub txg: Option<u64>,
    /// Why it is not sound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a ZFS member's labels say.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Zfs {
    /// Absent on a spare or cache device's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_guid: Option<u64>,
    /// The pool version: 1 to 28, or 5000 with feature flags.
    pub version: u64,
    /// `pool_state_t`: 0 active, 1 exported, 2 destroyed, 3 spare, 4 cache.
    pub state: u64,
    /// The state's name (`active`, `exported`...).
    pub state_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub txg: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostid: Option<u64>,
    /// This member's own vdev guid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guid: Option<u64>,
    /// The guid of the top-level vdev it belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_guid: Option<u64>,
    /// How many top-level vdevs the pool has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vdev_children: Option<u64>,
    /// The features a reader must know to open the pool (pool version 5000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub features_for_read: Option<Vec<String>>,
    /// The top-level vdev this member is part of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vdev_tree: Option<Vdev>,
    /// Which copy the fields above come from (the sound one with the
    /// highest txg).
    pub label: u8,
    /// All four copies.
    pub labels: Vec<LabelCopy>,
    /// The damaged copies' errors, for the layer's findings.
    #[serde(skip)]
    pub damage: Vec<ParseError>,
}

impl Zfs {
    /// This member's own vdev in the tree (by its guid), if there.
    pub fn leaf(&self) -> Option<&Vdev> {
        let tree = self.vdev_tree.as_ref()?;
        let guid = self.guid?;
        tree.walk().into_iter().find(|v| v.guid == Some(guid))
    }

    /// The ashift the member allocates in: its top-level vdev's.
    pub fn ashift(&self) -> Option<u64> {
        self.vdev_tree.as_ref()?.ashift
    }
}

/// `pool_state_t`'s names (`include/sys/fs/zfs.h`).
fn state_name(s: u64) -> String {
    match s {
        0 => "active".into(),
        1 => "exported".into(),
        2 => "destroyed".into(),
        3 => "spare".into(),
        4 => "l2cache".into(),
        5 => "uninitialized".into(),
        6 => "unavail".into(),
        7 => "potentially_active".into(),
        n => format!("unknown ({n})"),
    }
}

/// Where label `l`'s `vdev_phys_t` starts on a vdev of `len` bytes; None
/// for an end label when the vdev is too small to hold four labels.
pub fn phys_offset(len: u64, l: usize) -> Option<u64> {
    let psize = len - len % LABEL_SIZE;
    let start = if l < LABELS / 2 {
        l as u64 * LABEL_SIZE
    } else {
        psize
            .checked_sub(LABELS as u64 * LABEL_SIZE)?
            .checked_add(l as u64 * LABEL_SIZE)?
    };
    Some(start + PHYS_AT)
}

fn put_u64(b: &mut [u8], at: usize, x: u64, big_endian: bool) {
    let bytes = if big_endian {
        x.to_be_bytes()
    } else {
        x.to_le_bytes()
    };
    b[at..at + 8].copy_from_slice(&bytes);
}

/// The checksum `phys` (a whole `vdev_phys_t`) should carry when it lies
/// at byte `offset` of its vdev: SHA-256 with the verifier in place, as
/// four big-endian words.
fn label_checksum(phys: &[u8], offset: u64, big_endian: bool) -> [u64; 4] {
    let mut b = phys.to_vec();
    let at = b.len().saturating_sub(ECK_SIZE - 8);
    for (i, w) in [offset, 0, 0, 0].into_iter().enumerate() {
        if let Some(slot) = b.get_mut(at + 8 * i..at + 8 * i + 8) {
            slot.copy_from_slice(&if big_endian {
                w.to_be_bytes()
            } else {
                w.to_le_bytes()
            });
        }
    }
    let d = sha2::Sha256::digest(&b);
    let word = |i: usize| be_u64(&d, 8 * i);
    [word(0), word(1), word(2), word(3)]
}

/// Set the embedded checksum of `phys` (a whole `vdev_phys_t`, written
/// little-endian) for byte `offset` of its vdev: tests build labels with
/// it, and the fuzz target seals mutated ones so their nvlists are read.
pub fn seal(phys: &mut [u8], offset: u64) {
    seal_as(phys, offset, false);
}

/// [`seal`] in either byte order (a big-endian writer's label).
pub fn seal_as(phys: &mut [u8], offset: u64, big_endian: bool) {
    if phys.len() < ECK_SIZE {
        return;
    }
    let eck = phys.len() - ECK_SIZE;
    put_u64(phys, eck, ZEC_MAGIC, big_endian);
    let sum = label_checksum(phys, offset, big_endian);
    for (i, w) in sum.into_iter().enumerate() {
        put_u64(phys, eck + 8 + 8 * i, w, big_endian);
    }
}

/// Check the embedded checksum of `phys` read at byte `offset`.
fn verify(phys: &[u8], offset: u64, layer: &'static str) -> Result<(), ParseError> {
    let eck = phys.len() - ECK_SIZE;
    let err = |m: String| ParseError::new(layer, offset + eck as u64, m);
    let big_endian = if le_u64(phys, eck) == ZEC_MAGIC {
        false
    } else if be_u64(phys, eck) == ZEC_MAGIC {
        true
    } else {
        return Err(err(format!(
            "no label checksum magic ({:#018x} where {ZEC_MAGIC:#018x} belongs)",
            le_u64(phys, eck)
        )));
    };
    let word = |i: usize| {
        let at = eck + 8 + 8 * i;
        if big_endian {
            be_u64(phys, at)
        } else {
            le_u64(phys, at)
        }
    };
    let stored = [word(0), word(1), word(2), word(3)];
    let computed = label_checksum(phys, offset, big_endian);
    if stored != computed {
        return Err(err(format!(
            "label checksum {:016x}… does not match the computed {:016x}…",
            stored[0], computed[0]
        )));
    }
    Ok(())
}

/// Read and check one copy: its configuration, or why not.
fn read_copy(src: &(impl ReadAt + ?Sized), l: usize) -> Result<NvList, ParseError> {
    let layer = LAYERS[l];
    let len = src.len();
    let at = phys_offset(len, l).ok_or_else(|| {
        ParseError::new(
            layer,
            0,
            format!("a device of {len} bytes is too small to hold four 256 KiB labels"),
        )
    })?;
    let phys = read_bytes(src, layer, at, PHYS_SIZE as u64)?;
    verify(&phys, at, layer)?;
    nvlist::decode(&phys[..PHYS_SIZE - ECK_SIZE], layer, at)
}

/// Whether the copy at `l` starts as a label would: the nvlist header or
/// the checksum magic in place (two small reads, so a region holding no
/// ZFS costs no 448 KiB of reading).
fn looks_like_label(src: &(impl ReadAt + ?Sized), l: usize) -> bool {
    let Some(at) = phys_offset(src.len(), l) else {
        return false;
    };
    let fits = |at: u64, n: u64| at.checked_add(n).is_some_and(|e| e <= src.len());
    let mut head = [0u8; 4];
    if fits(at, 4) && src.read_exact_at(&mut head, at).is_ok() && head[0] == 1 && head[1] <= 1 {
        return true;
    }
    let tail = tail_magic(at);
    let mut magic = [0u8; 8];
    fits(tail, 8)
        && src.read_exact_at(&mut magic, tail).is_ok()
        && (u64::from_le_bytes(magic) == ZEC_MAGIC || u64::from_be_bytes(magic) == ZEC_MAGIC)
}

/// What [`looks_like_label`] reads of each label: its nvlist's header
/// and its checksum's magic.
fn peeks(len: u64) -> Vec<(u64, u64)> {
    (0..LABELS)
        .filter_map(|l| phys_offset(len, l))
        .flat_map(|at| [(at, 4), (tail_magic(at), 8)])
        .collect()
}

/// Where the checksum's magic is in the `vdev_phys_t` starting at `at`.
fn tail_magic(at: u64) -> u64 {
    at + (PHYS_SIZE - ECK_SIZE) as u64
}

/// The ZFS labels on `src` (a whole disk, partition or image: a leaf
/// vdev), or None when no copy of the four is sound.
pub fn read(src: &(impl ReadAt + ?Sized)) -> Option<Zfs> {
    if !(0..LABELS).any(|l| looks_like_label(src, l)) {
        return None;
    }
    let mut labels = Vec::with_capacity(LABELS);
    let mut damage = Vec::new();
    let mut best: Option<(usize, NvList, u64)> = None;
    for l in 0..LABELS {
        let offset_bytes = phys_offset(src.len(), l).unwrap_or(0);
        let mut copy = LabelCopy {
            index: l as u8,
            offset_bytes,
            ..LabelCopy::default()
        };
        match read_copy(src, l) {
            Ok(config) => {
                let txg = config.u64("txg");
                copy.sound = true;
                copy.txg = txg;
                let t = txg.unwrap_or(0);
                if best.as_ref().is_none_or(|(_, _, b)| t > *b) {
                    best = Some((l, config, t));
                }
            }
            Err(e) => {
                copy.error = Some(e.to_string());
                damage.push(e);
            }
        }
        labels.push(copy);
    }
    let (l, config, _) = best?;
    let mut z = typed(&config);
    z.label = l as u8;
    z.labels = labels;
    z.damage = damage;
    Some(z)
}

/// The fields of a label's configuration (`include/sys/fs/zfs.h`'s
/// `ZPOOL_CONFIG_*` names).
fn typed(c: &NvList) -> Zfs {
    let state = c.u64("state").unwrap_or(0);
    Zfs {
        pool_name: c.str("name").map(str::to_string),
        pool_guid: c.u64("pool_guid"),
        version: c.u64("version").unwrap_or(0),
        state,
        state_name: state_name(state),
        txg: c.u64("txg"),
        hostname: c.str("hostname").map(str::to_string),
        hostid: c.u64("hostid"),
        guid: c.u64("guid"),
        top_guid: c.u64("top_guid"),
        vdev_children: c.u64("vdev_children"),
        features_for_read: c
            .list("features_for_read")
            .map(|f| f.pairs.iter().map(|(n, _)| n.clone()).collect()),
        vdev_tree: c.list("vdev_tree").map(|t| vdev(t, 0)),
        ..Zfs::default()
    }
}

fn vdev(v: &NvList, depth: usize) -> Vdev {
    let flag = |name| match v.get(name) {
        Some(NvValue::Bool(b)) => Some(*b),
        _ => v.u64(name).map(|x| x != 0),
    };
    Vdev {
        vdev_type: v.str("type").unwrap_or_default().to_string(),
        id: v.u64("id"),
        guid: v.u64("guid"),
        path: v.str("path").map(str::to_string),
        ashift: v.u64("ashift"),
        asize_bytes: v.u64("asize"),
        whole_disk: flag("whole_disk"),
        nparity: v.u64("nparity"),
        is_log: flag("is_log"),
        children: if depth < MAX_TREE_DEPTH {
            v.lists("children")
                .unwrap_or_default()
                .iter()
                .map(|c| vdev(c, depth + 1))
                .collect()
        } else {
            Vec::new()
        },
    }
}

/// Where a leaf's allocatable space starts: after labels L0 and L1 and
/// the 3.5 MiB boot area, 4 MiB in (`VDEV_LABEL_START_SIZE` in OpenZFS
/// `include/sys/vdev_impl.h`). ZFS allocates on its 2^ashift grid from
/// there.
pub const DATA_START: u64 = 4 << 20;

fn probe(r: &Region, src: &dyn ReadAt) -> Option<Found> {
    let z = read(src)?;
    let name = match &z.pool_name {
        Some(p) => format!("ZFS pool {p} member"),
        None => format!("ZFS {} device", z.state_name),
    };
    let mut l = r.layer(LayerKind::ZfsMember, name);
    for e in &z.damage {
        l.findings.push(r.invalid(e));
    }
    l.data_offset_bytes = Some(DATA_START);
    l.detail = Some(Detail::Zfs(Box::new(z)));
    Some(l.into())
}

#[cfg(test)]
mod tests;
