use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/bluestore/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap()
}

/// ceph-osd 16.2.15's label, as show-label printed it (README.md there).
#[test]
fn a_real_label_reads_as_show_label_prints_it() {
    let b = fixture("osd0-alloc4096.label");
    let l = parse(&b).unwrap().unwrap();
    assert_eq!(l.osd_uuid, "6b1f7a6e-0000-4000-8000-000000000001");
    assert_eq!(l.size_bytes, 2147483648);
    assert_eq!(l.btime, "2026-12-02T19:39:14.480869+0000");
    assert_eq!(l.description, "main");
    assert_eq!(l.min_alloc_size_bytes, Some(4096));
    assert_eq!(l.whoami(), Some("0"));
    let m = |k: &str| l.meta.get(k).map(String::as_str);
    assert_eq!(m("bfm_blocks"), Some("524288"));
    assert_eq!(m("bluefs"), Some("1"));
    assert_eq!(m("kv_backend"), Some("rocksdb"));
    assert_eq!(m("ceph_fsid"), Some("11111111-2222-3333-4444-555555555555"));
    assert_eq!(m("require_osd_release"), None);
    assert_eq!(l.meta.len(), 13);
    let b = fixture("osd1-alloc65536.label");
    let l = parse(&b).unwrap().unwrap();
    assert_eq!(l.min_alloc_size_bytes, Some(65536));
    assert_eq!(l.whoami(), Some("1"));
}

/// The stored checksum is ceph_crc32c(-1, ...): the standard CRC-32C of
/// the same bytes inverted (0x18f6ddf6 for osd.0's, computed by hand).
#[test]
fn the_checksum_is_seeded_crc32c_without_final_inversion() {
    let b = fixture("osd0-alloc4096.label");
    let end = checksum_end(&b).unwrap();
    assert_eq!(end, 66 + 491);
    assert_eq!(le_u32(&b, end), 0x18f6_ddf6);
    assert_eq!(checksum(&b[..end]), 0x18f6_ddf6);
}

/// A flipped byte is a damaged label naming the checksum's byte; a
/// length past the label, an unknown compat and a meta count larger than
/// the label name theirs; none panics or allocates by the count.
#[test]
fn damage_is_an_error_with_its_byte() {
    let good = fixture("osd0-alloc4096.label");
    let mut b = good.clone();
    b[0xb7] ^= 1;
    let e = parse(&b).unwrap_err();
    assert_eq!((e.layer, e.offset), (LAYER, 557), "{e}");
    assert!(e.message.contains("checksum"), "{e}");
    let mut b = good.clone();
    b[62..66].copy_from_slice(&5000u32.to_le_bytes());
    assert_eq!(parse(&b).unwrap_err().offset, 62);
    let mut b = good.clone();
    b[61] = 3;
    assert_eq!(parse(&b).unwrap_err().offset, 60);
    let mut b = good.clone();
    // The meta count (after uuid, size, btime and "main") set huge, resealed.
    let at = 66 + 16 + 8 + 8 + 4 + 4;
    b[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let end = checksum_end(&b).unwrap();
    let sum = checksum(&b[..end]);
    b[end..end + 4].copy_from_slice(&sum.to_le_bytes());
    let e = parse(&b).unwrap_err();
    assert!(e.message.contains("meta"), "{e}");
}

#[test]
fn no_magic_or_too_short_is_not_bluestore() {
    let b = fixture("osd0-alloc4096.label");
    assert_eq!(parse(&b[..4095]).unwrap(), None);
    let mut x = b.clone();
    x[0] = b'B';
    assert_eq!(parse(&x).unwrap(), None);
    assert_eq!(read(&b[..100]).unwrap(), None);
}
