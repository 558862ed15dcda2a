//! ZFS member images for tests that need a ZFS layer without the
//! zfs-fuse daemon (tests/zfs.rs drives the real tool): the real labels
//! kept in tests/fixtures/zfs, sealed into the label copies asked for, and
//! one synthetic label of OpenZFS's pool version 5000 (no OpenZFS tool is
//! at hand), which says it is synthetic in its hostname.

use diskalign::stack::zfs::nvlist::{list, Encoder, NvList, Value};
use diskalign::stack::zfs::{phys_offset, seal, PHYS_SIZE};
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
        list([
            ("type", Value::Str("disk".into())),
            ("id", Value::Unsigned(id)),
            ("guid", Value::Unsigned(1000 + id)),
            (
                "path",
                Value::Str(format!("/dev/disk/by-id/synthetic-{id}-part1")),
            ),
            ("whole_disk", Value::Unsigned(1)),
            ("create_txg", Value::Unsigned(4)),
        ])
    };
    let config: NvList = list([
        ("version", Value::Unsigned(5000)),
        ("name", Value::Str("synthetic".into())),
        ("state", Value::Unsigned(0)),
        ("txg", Value::Unsigned(42)),
        ("pool_guid", Value::Unsigned(9_000_000_000_000_000_001)),
        ("errata", Value::Unsigned(0)),
        ("hostname", Value::Str("synthetic-label".into())),
        ("top_guid", Value::Unsigned(999)),
        ("guid", Value::Unsigned(1000)),
        ("vdev_children", Value::Unsigned(1)),
        (
            "vdev_tree",
            Value::List(list([
                ("type", Value::Str("raidz".into())),
                ("id", Value::Unsigned(0)),
                ("guid", Value::Unsigned(999)),
                ("nparity", Value::Unsigned(1)),
                ("ashift", Value::Unsigned(12)),
                ("asize", Value::Unsigned(3 * (60 << 20))),
                ("is_log", Value::Unsigned(0)),
                ("children", Value::Lists((0..3).map(leaf).collect())),
            ])),
        ),
        (
            "features_for_read",
            Value::List(list([
                ("com.delphix:hole_birth", Value::Flag),
                ("com.delphix:embedded_data", Value::Flag),
            ])),
        ),
    ]);
    let mut phys = Encoder::stream(&config);
    phys.resize(PHYS_SIZE, 0);
    phys
}
