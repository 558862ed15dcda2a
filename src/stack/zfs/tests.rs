use super::nvlist::{nvlist, Encoder, NvValue};
use super::*;

/// A real label's `vdev_phys_t` kept trimmed (tests/fixtures/zfs/README.md):
/// the nvlist up to its last non-zero word, then the 40-byte `zio_eck_t`;
/// the zeros between are put back here.
fn real_phys(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/zfs/{name}", env!("CARGO_MANIFEST_DIR"));
    let trimmed = std::fs::read(&path).unwrap();
    let (body, eck) = trimmed.split_at(trimmed.len() - ECK_SIZE);
    let mut phys = body.to_vec();
    phys.resize(PHYS_SIZE - ECK_SIZE, 0);
    phys.extend_from_slice(eck);
    phys
}

/// A device of `len` bytes with `phys` sealed into the labels `copies`.
fn device(len: u64, phys: &[u8], copies: &[usize]) -> Vec<u8> {
    let mut d = vec![0u8; len as usize];
    for &l in copies {
        let at = phys_offset(len, l).unwrap();
        let mut p = phys.to_vec();
        seal(&mut p, at);
        d[at as usize..at as usize + PHYS_SIZE].copy_from_slice(&p);
    }
    d
}

/// A synthetic label's `vdev_phys_t` holding `config`.
fn synthetic_phys(config: &NvList) -> Vec<u8> {
    let mut p = Encoder::stream(config);
    p.resize(PHYS_SIZE, 0);
    p
}

const MIB: u64 = 1 << 20;

/// zfs-fuse's label, as it wrote it (pool version 23), checksum and all,
/// against what `zdb -l` printed for the same image.
#[test]
fn a_real_zfs_fuse_label_reads_as_zdb_shows_it() {
    let phys = real_phys("file-ashift9-v23.label0");
    // The checksum zfs-fuse wrote verifies for L0's offset (16 KiB).
    verify(&phys, PHYS_AT, "t").unwrap();
    assert!(verify(&phys, PHYS_AT + LABEL_SIZE, "t").is_err());
    let mut d = vec![0u8; 4 * MIB as usize];
    d[PHYS_AT as usize..PHYS_AT as usize + PHYS_SIZE].copy_from_slice(&phys);
    let z = read(&d[..]).unwrap();
    assert_eq!(z.pool_name.as_deref(), Some("p9"));
    assert_eq!(z.pool_guid, Some(12420181193238354369));
    assert_eq!(z.version, 23);
    assert_eq!((z.state, z.state_name.as_str()), (1, "exported"));
    assert_eq!(z.txg, Some(11));
    assert_eq!(z.hostid, Some(8323328));
    assert_eq!(z.hostname.as_deref(), Some("vm"));
    assert_eq!(z.guid, Some(3513783222299428904));
    assert_eq!(z.top_guid, Some(3513783222299428904));
    assert_eq!(z.vdev_children, Some(1));
    assert_eq!(z.features_for_read, None);
    let t = z.vdev_tree.as_ref().unwrap();
    assert_eq!(t.vdev_type, "file");
    assert_eq!(t.id, Some(0));
    assert_eq!(t.path.as_deref(), Some("/tmp/zfsw/a9.img"));
    assert_eq!(t.ashift, Some(9));
    assert_eq!(t.asize_bytes, Some(263716864));
    assert_eq!(t.is_log, Some(false));
    assert_eq!(t.whole_disk, None);
    assert!(t.children.is_empty());
    assert_eq!(z.leaf(), Some(t));
    assert_eq!(z.ashift(), Some(9));
    // Only L0 is there: the other three are damaged, and said to be.
    assert_eq!(z.label, 0);
    let sound: Vec<bool> = z.labels.iter().map(|c| c.sound).collect();
    assert_eq!(sound, [true, false, false, false]);
    assert_eq!(z.damage.len(), 3);
    assert_eq!(z.labels[3].offset_bytes, 4 * MIB - LABEL_SIZE + PHYS_AT);
}

#[test]
fn a_real_mirror_label_gives_the_tree_and_this_leaf() {
    let phys = real_phys("mirror-ashift12-v23.label0");
    verify(&phys, PHYS_AT, "t").unwrap();
    let d = device(4 * MIB, &phys, &[0, 1, 2, 3]);
    let z = read(&d[..]).unwrap();
    assert!(z.damage.is_empty(), "{:?}", z.damage);
    assert!(z.labels.iter().all(|c| c.sound && c.txg == Some(12)));
    assert_eq!(z.pool_name.as_deref(), Some("pm"));
    let t = z.vdev_tree.as_ref().unwrap();
    assert_eq!((t.vdev_type.as_str(), t.ashift), ("mirror", Some(12)));
    assert_eq!(t.asize_bytes, Some(129499136));
    assert_eq!(t.children.len(), 2);
    let leaf = z.leaf().unwrap();
    assert_eq!(leaf.guid, Some(12164584922776828830));
    assert_eq!(leaf.path.as_deref(), Some("/dev/loop0"));
    assert_eq!(leaf.whole_disk, Some(false));
    assert_eq!(t.children[1].path.as_deref(), Some("/dev/loop1"));
    assert_eq!(t.children[1].id, Some(1));
}

#[test]
fn a_real_raidz_label_gives_its_parity_and_ashift_13() {
    let phys = real_phys("raidz1-ashift13-v23.label0");
    verify(&phys, PHYS_AT, "t").unwrap();
    let d = device(4 * MIB, &phys, &[0, 1, 2, 3]);
    let z = read(&d[..]).unwrap();
    let t = z.vdev_tree.as_ref().unwrap();
    assert_eq!(
        (t.vdev_type.as_str(), t.nparity, t.ashift),
        ("raidz", Some(1), Some(13))
    );
    assert_eq!(t.asize_bytes, Some(388497408));
    let paths: Vec<&str> = t
        .children
        .iter()
        .filter_map(|c| c.path.as_deref())
        .collect();
    assert_eq!(
        paths,
        ["/tmp/zfsw/r1.img", "/tmp/zfsw/r2.img", "/tmp/zfsw/r3.img"]
    );
    assert_eq!(z.leaf().unwrap().guid, Some(15699458228686383936));
}

/// `vdev_label_offset`: L2 and L3 sit before the end aligned down to
/// 256 KiB, so a size off that grid leaves its tail unused.
#[test]
fn end_labels_sit_before_the_aligned_end() {
    let len = 128 * MIB + 100 * 1024;
    assert_eq!(phys_offset(len, 0), Some(16384));
    assert_eq!(phys_offset(len, 1), Some(LABEL_SIZE + 16384));
    assert_eq!(
        phys_offset(len, 2),
        Some(128 * MIB - 2 * LABEL_SIZE + 16384)
    );
    assert_eq!(phys_offset(len, 3), Some(128 * MIB - LABEL_SIZE + 16384));
    assert_eq!(phys_offset(3 * LABEL_SIZE, 2), None);
    assert_eq!(phys_offset(0, 3), None);
}

#[test]
fn one_damaged_copy_is_reported_and_the_rest_read() {
    let phys = real_phys("file-ashift9-v23.label0");
    let mut d = device(4 * MIB, &phys, &[0, 1, 2, 3]);
    let l2 = phys_offset(4 * MIB, 2).unwrap() as usize;
    d[l2 + 100] ^= 0x40;
    let z = read(&d[..]).unwrap();
    assert_eq!(z.pool_name.as_deref(), Some("p9"));
    let sound: Vec<bool> = z.labels.iter().map(|c| c.sound).collect();
    assert_eq!(sound, [true, true, false, true]);
    assert_eq!(z.damage.len(), 1);
    let e = &z.damage[0];
    assert_eq!(e.layer, "ZFS label 2");
    assert_eq!(e.offset, (l2 + PHYS_SIZE - ECK_SIZE) as u64);
    assert!(e.message.contains("checksum"), "{e}");
    assert!(z.labels[2]
        .error
        .as_deref()
        .unwrap()
        .contains("ZFS label 2 at byte"));
}

#[test]
fn all_four_damaged_is_not_zfs() {
    let phys = real_phys("file-ashift9-v23.label0");
    let mut d = device(4 * MIB, &phys, &[0, 1, 2, 3]);
    for l in 0..LABELS {
        let at = phys_offset(4 * MIB, l).unwrap() as usize;
        d[at + 40] ^= 1;
    }
    assert_eq!(read(&d[..]), None);
    // Blank and tiny devices are not ZFS either.
    assert_eq!(read(&vec![0u8; 4 * MIB as usize][..]), None);
    assert_eq!(read(&[0u8; 100][..]), None);
}

/// An image cut short: inside L0 nothing is left; past L1 the start
/// labels read and the end ones (now at the cut) are damaged.
#[test]
fn a_truncated_label_is_damage_not_a_panic() {
    let phys = real_phys("file-ashift9-v23.label0");
    let d = device(4 * MIB, &phys, &[0, 1, 2, 3]);
    let z = read(&d[..(PHYS_AT as usize + 50_000)]);
    assert_eq!(z, None);
    let z = read(&d[..(2 * MIB as usize + 1000)]).unwrap();
    let sound: Vec<bool> = z.labels.iter().map(|c| c.sound).collect();
    assert_eq!(sound, [true, true, false, false]);
    // L0 only, cut inside L1: L1 is short, L2 and L3 cannot exist.
    let z = read(&d[..(LABEL_SIZE as usize + 30_000)]).unwrap();
    assert_eq!(z.damage.len(), 3);
    assert!(z.damage[0].message.contains("truncated"), "{:?}", z.damage);
    assert!(z.damage[1].message.contains("too small"), "{:?}", z.damage);
    for n in (0..d.len()).step_by(65_521) {
        let _ = read(&d[..n]);
    }
}

/// A synthetic label shaped as OpenZFS 2.x writes one (pool version 5000,
/// `features_for_read`, `errata`, the leaf's `whole_disk` and
/// `rotational`, a raidz top-level vdev): no tool at hand writes one
/// (zfs-fuse stops at version 23), so this says what the fields would be.
fn openzfs_config(children: u32) -> NvList {
    let leaf = |id: u64, guid: u64| {
        nvlist([
            ("type", NvValue::Str("disk".into())),
            ("id", NvValue::Unsigned(id)),
            ("guid", NvValue::Unsigned(guid)),
            (
                "path",
                NvValue::Str(format!("/dev/sd{}1", ["a", "b", "c"][id as usize])),
            ),
            ("devid", NvValue::Str("ata-DISK-part1".into())),
            ("whole_disk", NvValue::Unsigned(1)),
            ("rotational", NvValue::Unsigned(1)),
            ("create_txg", NvValue::Unsigned(4)),
        ])
    };
    let kids: Vec<NvList> = (0..children.min(3))
        .map(|i| leaf(u64::from(i), 100 + u64::from(i)))
        .collect();
    nvlist([
        ("version", NvValue::Unsigned(5000)),
        ("name", NvValue::Str("tank".into())),
        ("state", NvValue::Unsigned(0)),
        ("txg", NvValue::Unsigned(1234)),
        ("pool_guid", NvValue::Unsigned(u64::MAX - 1)),
        ("errata", NvValue::Unsigned(0)),
        ("hostname", NvValue::Str("host".into())),
        ("top_guid", NvValue::Unsigned(77)),
        ("guid", NvValue::Unsigned(101)),
        ("vdev_children", NvValue::Unsigned(1)),
        (
            "vdev_tree",
            NvValue::List(nvlist([
                ("type", NvValue::Str("raidz".into())),
                ("id", NvValue::Unsigned(0)),
                ("guid", NvValue::Unsigned(77)),
                ("nparity", NvValue::Unsigned(1)),
                ("metaslab_array", NvValue::Unsigned(256)),
                ("metaslab_shift", NvValue::Unsigned(34)),
                ("ashift", NvValue::Unsigned(12)),
                ("asize", NvValue::Unsigned(12_000_000_000_000)),
                ("is_log", NvValue::Unsigned(0)),
                ("min_alloc", NvValue::Unsigned(4096)),
                ("create_txg", NvValue::Unsigned(4)),
                ("children", NvValue::Lists(kids)),
            ])),
        ),
        ("has_per_vdev_zaps", NvValue::Flag),
        (
            "features_for_read",
            NvValue::List(nvlist([
                ("com.delphix:hole_birth", NvValue::Flag),
                ("com.delphix:embedded_data", NvValue::Flag),
            ])),
        ),
    ])
}

#[test]
fn a_synthetic_openzfs_label_with_feature_flags_reads() {
    let phys = synthetic_phys(&openzfs_config(3));
    let d = device(4 * MIB, &phys, &[0, 1, 2, 3]);
    let z = read(&d[..]).unwrap();
    assert!(z.damage.is_empty());
    assert_eq!(z.version, VERSION_FEATURES);
    assert_eq!(z.state_name, "active");
    assert_eq!(z.pool_guid, Some(u64::MAX - 1));
    assert_eq!(
        z.features_for_read.as_deref(),
        Some(
            &[
                "com.delphix:hole_birth".to_string(),
                "com.delphix:embedded_data".to_string()
            ][..]
        )
    );
    let t = z.vdev_tree.as_ref().unwrap();
    assert_eq!(
        (t.vdev_type.as_str(), t.nparity, t.ashift),
        ("raidz", Some(1), Some(12))
    );
    let leaf = z.leaf().unwrap();
    assert_eq!(
        (leaf.path.as_deref(), leaf.whole_disk),
        (Some("/dev/sdb1"), Some(true))
    );
}

/// A label written on a big-endian machine: its checksum words are
/// big-endian and summed as such.
#[test]
fn a_big_endian_label_verifies() {
    let mut phys = synthetic_phys(&openzfs_config(1));
    phys[1] = 0;
    seal_as(&mut phys, PHYS_AT, true);
    verify(&phys, PHYS_AT, "t").unwrap();
    let mut d = vec![0u8; 4 * MIB as usize];
    d[PHYS_AT as usize..PHYS_AT as usize + PHYS_SIZE].copy_from_slice(&phys);
    assert_eq!(read(&d[..]).unwrap().pool_name.as_deref(), Some("tank"));
}

/// A label claiming 2^32 - 1 children (the most the count word holds) is
/// damaged at that word, before anything is allocated for them; a pool
/// claiming 2^32 top-level vdevs is only a number.
#[test]
fn a_label_claiming_2_to_the_32_children_is_refused() {
    let mut stream = Encoder::stream(&openzfs_config(1));
    // The pair named exactly "children" (its length word first), not
    // "vdev_children".
    let needle = b"\0\0\0\x08children";
    let at = stream
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap();
    // After the name: the type word, then the element count.
    let count = at + needle.len() + 4;
    assert_eq!(&stream[count..count + 4], &1u32.to_be_bytes());
    stream[count..count + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    stream.resize(PHYS_SIZE, 0);
    let d = device(4 * MIB, &stream, &[0, 1, 2, 3]);
    assert_eq!(read(&d[..]), None);
    let e = read_copy(&d[..], 0).unwrap_err();
    assert_eq!(e.offset, PHYS_AT + (count - 4) as u64, "{e}");
    assert!(e.message.contains("4294967295 elements"), "{e}");

    let mut c = openzfs_config(1);
    for (n, v) in &mut c.pairs {
        if n == "vdev_children" {
            *v = NvValue::Unsigned(1 << 32);
        }
    }
    let d = device(4 * MIB, &synthetic_phys(&c), &[0, 1, 2, 3]);
    assert_eq!(read(&d[..]).unwrap().vdev_children, Some(1 << 32));
}

/// The sound copy with the highest txg is the configuration (L0/L1 and
/// L2/L3 are written in turns: one pair can be a txg behind).
#[test]
fn the_newest_sound_copy_wins() {
    let mut old = openzfs_config(1);
    let mut new = openzfs_config(1);
    for (c, txg) in [(&mut old, 10), (&mut new, 11)] {
        for (n, v) in &mut c.pairs {
            if n == "txg" {
                *v = NvValue::Unsigned(txg);
            }
        }
    }
    let mut d = device(4 * MIB, &synthetic_phys(&old), &[0, 1]);
    let newer = device(4 * MIB, &synthetic_phys(&new), &[2, 3]);
    let tail = 2 * MIB as usize;
    d[tail..].copy_from_slice(&newer[tail..]);
    let z = read(&d[..]).unwrap();
    assert_eq!((z.label, z.txg), (2, Some(11)));
    assert!(z.damage.is_empty());
}

/// Random damage to a sealed label, sealed again so the nvlist decoder
/// meets it: never a panic.
#[test]
fn mutated_sealed_labels_never_panic() {
    let mut rng = fastrand::Rng::with_seed(40);
    let good = real_phys("mirror-ashift12-v23.label0");
    let mut d = vec![0u8; MIB as usize];
    for _ in 0..60 {
        let mut p = good.clone();
        for _ in 0..rng.usize(1..8) {
            let i = rng.usize(..1300);
            p[i] = rng.u8(..);
        }
        seal(&mut p, PHYS_AT);
        d[PHYS_AT as usize..PHYS_AT as usize + PHYS_SIZE].copy_from_slice(&p);
        let _ = read(&d[..]);
    }
}
