//! ZFS member images for tests that need a ZFS layer without the
//! zfs-fuse daemon (tests/zfs.rs drives the real tool): the real labels
//! kept in tests/fixtures/zfs, sealed into the label copies asked for, and
//! one synthetic label of OpenZFS's pool version 5000 (no OpenZFS tool is
//! at hand), which says it is synthetic in its hostname.

use diskalign::stack::{nvlist, Encoder, NvList, NvValue};
use diskalign::stack::{phys_offset, seal, PHYS_SIZE};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// A fixture's whole `vdev_phys_t`: the zeros its trimmed form left out
/// put back before the 40-byte checksum trailer.
pub fn fixture_phys(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/zfs")
        .join(name);
    let trimmed = std::fs::read(path).unwrap();
    let (body, eck) = trimmed.split_at(trimmed.len() - 40);
    let mut phys = body.to_vec();
    phys.resize(PHYS_SIZE - 40, 0);
    phys.extend_from_slice(eck);
    phys
}

/// A sparse image of `len` bytes with `phys` sealed into label `copies`.
pub fn image_with(dir: &Path, name: &str, len: u64, phys: &[u8], copies: &[usize]) -> PathBuf {
    let path = dir.join(name);
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(len).unwrap();
    for &l in copies {
        let at = phys_offset(len, l).unwrap();
        let mut p = phys.to_vec();
        seal(&mut p, at);
        f.write_all_at(&p, at).unwrap();
    }
    path
}

/// A synthetic label as OpenZFS 2.x writes one: pool version 5000 with
/// `features_for_read`, a raidz of whole disks at ashift 12.
pub fn synthetic_v5000() -> Vec<u8> {
    let leaf = |id: u64| {
        nvlist([
            ("type", NvValue::Str("disk".into())),
            ("id", NvValue::Unsigned(id)),
            ("guid", NvValue::Unsigned(1000 + id)),
            (
                "path",
                NvValue::Str(format!("/dev/disk/by-id/synthetic-{id}-part1")),
            ),
            ("whole_disk", NvValue::Unsigned(1)),
            ("create_txg", NvValue::Unsigned(4)),
        ])
    };
    let config: NvList = nvlist([
        ("version", NvValue::Unsigned(5000)),
        ("name", NvValue::Str("synthetic".into())),
        ("state", NvValue::Unsigned(0)),
        ("txg", NvValue::Unsigned(42)),
        ("pool_guid", NvValue::Unsigned(9_000_000_000_000_000_001)),
        ("errata", NvValue::Unsigned(0)),
        ("hostname", NvValue::Str("synthetic-label".into())),
        ("top_guid", NvValue::Unsigned(999)),
        ("guid", NvValue::Unsigned(1000)),
        ("vdev_children", NvValue::Unsigned(1)),
        (
            "vdev_tree",
            NvValue::List(nvlist([
                ("type", NvValue::Str("raidz".into())),
                ("id", NvValue::Unsigned(0)),
                ("guid", NvValue::Unsigned(999)),
                ("nparity", NvValue::Unsigned(1)),
                ("ashift", NvValue::Unsigned(12)),
                ("asize", NvValue::Unsigned(3 * (60 << 20))),
                ("is_log", NvValue::Unsigned(0)),
                ("children", NvValue::Lists((0..3).map(leaf).collect())),
            ])),
        ),
        (
            "features_for_read",
            NvValue::List(nvlist([
                ("com.delphix:hole_birth", NvValue::Flag),
                ("com.delphix:embedded_data", NvValue::Flag),
            ])),
        ),
    ]);
    let mut phys = Encoder::stream(&config);
    phys.resize(PHYS_SIZE, 0);
    phys
}
