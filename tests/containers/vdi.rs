//! VDI images made by qemu-img, read as qemu reads them: dynamic and
//! static, then real images with header fields patched to lie.

use super::patch::{self, quick_error};
use super::{assert_same_guest, common, open, patterned_disk};
use diskalign::image::ContainerFormat;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

fn vdi(dir: &Path, name: &str, options: &[&str]) -> PathBuf {
    common::require_tool("qemu-img");
    let raw = patterned_disk(dir, &format!("{name}.raw"), 64 * MIB);
    common::qemu_img_convert(&raw, &dir.join(name), "vdi", options)
}

#[test]
fn a_dynamic_vdi_reads_as_qemu_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let image = vdi(dir.path(), "d.vdi", &["-o", "static=off"]);
    let opened = assert_same_guest(&image, "vdi", ContainerFormat::Vdi);
    let c = &opened.container;
    assert_eq!(
        (c.version.as_str(), c.subformat.as_deref()),
        ("1.1", Some("dynamic"))
    );
    assert_eq!((c.unit_bytes, c.virtual_size), (Some(MIB), 64 * MIB));
}

#[test]
fn a_static_vdi_reads_as_qemu_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let image = vdi(dir.path(), "s.vdi", &["-o", "static=on"]);
    let opened = assert_same_guest(&image, "vdi", ContainerFormat::Vdi);
    assert_eq!(opened.container.subformat.as_deref(), Some("fixed"));
}

#[test]
fn patched_header_fields_are_named_with_their_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let image = vdi(dir.path(), "d.vdi", &[]);
    let cases: [(&str, u64, Vec<u8>, &str); 9] = [
        (
            "v.vdi",
            68,
            0x0001_0000u32.to_le_bytes().to_vec(),
            "VDI header at byte 68: version 1.0 is not 1.1",
        ),
        (
            "bs0.vdi",
            376,
            0u32.to_le_bytes().to_vec(),
            "VDI header at byte 376: block size 0",
        ),
        (
            "bs.vdi",
            376,
            (2u32 << 20).to_le_bytes().to_vec(),
            "VDI header at byte 376: block size 2097152",
        ),
        (
            "ss.vdi",
            360,
            4096u32.to_le_bytes().to_vec(),
            "VDI header at byte 360: sector size 4096",
        ),
        (
            "size.vdi",
            368,
            (1u64 << 62).to_le_bytes().to_vec(),
            "VDI header at byte 368: disk size",
        ),
        (
            "few.vdi",
            384,
            63u32.to_le_bytes().to_vec(),
            "VDI header at byte 384: blocks in image 63 cannot hold",
        ),
        (
            "many.vdi",
            384,
            (1u32 << 31).to_le_bytes().to_vec(),
            "VDI header at byte 384: blocks in image 2147483648 is beyond",
        ),
        (
            "lies.vdi",
            384,
            (1u32 << 28).to_le_bytes().to_vec(),
            "VDI block map at byte 512: 268435456 entries end past the end",
        ),
        (
            "parent.vdi",
            440,
            vec![7],
            "VDI header at byte 440: parent UUID is set",
        ),
    ];
    for (name, at, bytes, want) in cases {
        let e = quick_error(&patch::copy_with(&image, name, &[(at, &bytes)]));
        assert!(e.contains(want), "{name}: {e}");
    }
}

#[test]
fn a_block_the_file_does_not_hold_fails_the_read_that_meets_it() {
    let dir = tempfile::tempdir().unwrap();
    let image = vdi(dir.path(), "d.vdi", &[]);
    // Block 0 holds the GPT; point it past the end of the file.
    let bad = patch::copy_with(&image, "far.vdi", &[(512, &1000u32.to_le_bytes())]);
    let guest = open(&bad).guest.unwrap();
    let e = guest
        .read_exact_at(&mut [0u8; 512], 0)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("VDI block map at byte 512: entry 0: block 1000"),
        "{e}"
    );
}
