//! VHD images made by qemu-img (`vpc`), read as qemu reads them: dynamic,
//! fixed, and with `force_size` (the size in the footer rather than the CHS
//! geometry), then real images with fields patched to lie.

use super::patch::{self, quick_error};
use super::{assert_same_guest, common, open, patterned_disk};
use diskalign::image::ContainerFormat;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

fn vpc(dir: &Path, name: &str, options: &[&str]) -> PathBuf {
    common::require_tool("qemu-img");
    let raw = patterned_disk(dir, &format!("{name}.raw"), 64 * MIB);
    common::qemu_img_convert(&raw, &dir.join(name), "vpc", options)
}

#[test]
fn a_dynamic_vhd_reads_as_qemu_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let image = vpc(dir.path(), "d.vhd", &["-o", "subformat=dynamic"]);
    let opened = assert_same_guest(&image, "vpc", ContainerFormat::Vhd);
    let c = &opened.container;
    // qemu-img rounds 64 MiB up to a CHS geometry (964 × 8 × 17 sectors).
    assert_eq!(c.virtual_size, 67_125_248);
    assert_eq!(c.version, "1.0");
    assert_eq!(c.subformat.as_deref(), Some("dynamic"));
    assert_eq!(c.unit_bytes, Some(2 * MIB));
}

#[test]
fn force_size_keeps_the_size_in_the_footer() {
    let dir = tempfile::tempdir().unwrap();
    let image = vpc(dir.path(), "s.vhd", &["-o", "force_size=on"]);
    let opened = assert_same_guest(&image, "vpc", ContainerFormat::Vhd);
    assert_eq!(opened.container.virtual_size, 64 * MIB);
}

/// qemu's probe looks for `conectix` at byte 0 only, so `qemu-img info`
/// without `-f vpc` reads a fixed VHD as raw, footer included. We tell it
/// by its footer and read it as `-f vpc` does: compared with that.
fn assert_same_guest_as_vpc(image: &Path, want_size: u64) {
    let file_len = std::fs::metadata(image).unwrap().len();
    assert_eq!(
        super::qemu_virtual_size(image),
        file_len,
        "qemu probes it as raw"
    );
    let out = common::sh(
        "qemu-img",
        &[
            "info",
            "-f",
            "vpc",
            "--output=json",
            "-U",
            image.to_str().unwrap(),
        ],
    );
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["virtual-size"].as_u64(), Some(want_size));
    let raw = image.with_extension("qemu-raw");
    common::sh(
        "qemu-img",
        &[
            "convert",
            "-f",
            "vpc",
            "-O",
            "raw",
            image.to_str().unwrap(),
            raw.to_str().unwrap(),
        ],
    );
    let want = std::fs::read(&raw).unwrap();
    let opened = open(image);
    assert_eq!(opened.container.format, ContainerFormat::Vhd);
    assert_eq!(opened.container.subformat.as_deref(), Some("fixed"));
    assert_eq!(opened.container.unit_bytes, None);
    assert_eq!(opened.container.virtual_size, want_size);
    let guest = opened.guest.unwrap();
    assert_eq!(guest.len(), want_size);
    let mut got = vec![0u8; want_size as usize];
    guest.read_exact_at(&mut got, 0).unwrap();
    assert!(
        got == want,
        "{}: guest differs from qemu's",
        image.display()
    );
}

#[test]
fn a_fixed_vhd_reads_as_qemu_reads_it_with_f_vpc() {
    let dir = tempfile::tempdir().unwrap();
    let image = vpc(dir.path(), "f.vhd", &["-o", "subformat=fixed"]);
    assert_same_guest_as_vpc(&image, 67_125_248);
    let image = vpc(
        dir.path(),
        "fs.vhd",
        &["-o", "subformat=fixed,force_size=on"],
    );
    assert_same_guest_as_vpc(&image, 64 * MIB);
}

/// The VHD checksum: the one's complement of the byte sum, the field at
/// `field` counted as zeros.
fn reseal(bytes: &mut [u8], field: usize) {
    bytes[field..field + 4].fill(0);
    let sum = bytes
        .iter()
        .fold(0u32, |s, &b| s.wrapping_add(u32::from(b)));
    bytes[field..field + 4].copy_from_slice(&(!sum).to_be_bytes());
}

/// A structure whose checksum a patch must set again: `len` bytes at
/// `start`, the checksum at `field` within.
#[derive(Clone, Copy)]
struct Sealed {
    start: u64,
    len: usize,
    field: usize,
}

const FOOTER: Option<Sealed> = Some(Sealed {
    start: 0,
    len: 512,
    field: 64,
});
const DYNAMIC: Option<Sealed> = Some(Sealed {
    start: 512,
    len: 1024,
    field: 36,
});

/// A copy of `image` named `name` with `bytes` written at `at`, and the
/// checksum of `sealed` set right again.
fn patched(image: &Path, name: &str, at: u64, bytes: &[u8], sealed: Option<Sealed>) -> PathBuf {
    let copy = patch::copy_with(image, name, &[(at, bytes)]);
    if let Some(s) = sealed {
        let mut b = patch::read(&copy, s.start, s.len);
        reseal(&mut b, s.field);
        patch::write(&copy, s.start, &b);
    }
    copy
}

/// A patch: the copy's name, where, what, the checksum to set again, and
/// what the error must say.
type Case = (&'static str, u64, Vec<u8>, Option<Sealed>, &'static str);

#[test]
fn patched_fields_are_named_with_their_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let image = vpc(dir.path(), "d.vhd", &[]);
    let cases: Vec<Case> = vec![
        (
            "sum.vhd",
            100,
            vec![1],
            None,
            "VHD footer at byte 64: checksum of the footer copy at the start",
        ),
        (
            "diff.vhd",
            60,
            4u32.to_be_bytes().to_vec(),
            FOOTER,
            "VHD footer at byte 60: disk type 4 (differencing) is not read",
        ),
        (
            "bs0.vhd",
            512 + 32,
            0u32.to_be_bytes().to_vec(),
            DYNAMIC,
            "VHD dynamic header at byte 544: block size 0",
        ),
        (
            "bs3.vhd",
            512 + 32,
            3u32.to_be_bytes().to_vec(),
            DYNAMIC,
            "VHD dynamic header at byte 544: block size 3 is not a power of two",
        ),
        (
            "n.vhd",
            512 + 28,
            (1u32 << 31).to_be_bytes().to_vec(),
            DYNAMIC,
            "VHD dynamic header at byte 540: max table entries 2147483648",
        ),
        (
            "few.vhd",
            512 + 28,
            1u32.to_be_bytes().to_vec(),
            DYNAMIC,
            "VHD dynamic header at byte 540: max table entries 1 of",
        ),
        (
            "far.vhd",
            512 + 16,
            (1u64 << 50).to_be_bytes().to_vec(),
            DYNAMIC,
            "VHD dynamic header at byte 528: table offset 1125899906842624",
        ),
        (
            "dsum.vhd",
            512 + 100,
            vec![1],
            None,
            "VHD dynamic header at byte 548: checksum",
        ),
        (
            "magic.vhd",
            512,
            b"cxspars!".to_vec(),
            DYNAMIC,
            "VHD dynamic header at byte 512: cookie",
        ),
    ];
    for (name, at, bytes, reseal_at, want) in cases {
        let e = quick_error(&patched(&image, name, at, &bytes, reseal_at));
        assert!(e.contains(want), "{name}: {e}");
    }
    // The size in a Hyper-V footer beyond qemu's 2040 GiB.
    let hyperv = patched(&image, "hv.vhd", 28, b"win ", FOOTER);
    let big = patched(&hyperv, "big.vhd", 48, &(4u64 << 40).to_be_bytes(), FOOTER);
    let e = quick_error(&big);
    assert!(
        e.contains("VHD footer at byte 48: current size gives 8589934592 sectors"),
        "{e}"
    );
}

#[test]
fn a_truncated_dynamic_vhd_fails_where_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let image = vpc(dir.path(), "d.vhd", &[]);
    // Cut the last data block and the footer at the end: the BAT still
    // names the block, whose read then fails naming its entry.
    let len = std::fs::metadata(&image).unwrap().len();
    let cut = image.with_file_name("cut.vhd");
    std::fs::copy(&image, &cut).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&cut).unwrap();
    f.set_len(len - 512 - MIB).unwrap();
    let guest = open(&cut).guest.unwrap();
    let end = guest.len();
    let e = guest
        .read_exact_at(&mut [0u8; 4096], end - 4096 - 16896)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("VHD BAT at byte") && e.contains("ends past the end of the file"),
        "{e}"
    );
}
