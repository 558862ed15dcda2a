//! qcow2 images made by qemu-img, read as qemu reads them: every guest
//! byte is what `qemu-img convert -O raw` makes of the image. Broken
//! images are real ones with a field patched, each refused in one line
//! that names the field and its byte, within a second.

use super::common;
use super::{assert_same_guest, open_error, patterned_disk, qemu_io};
use diskalign::image::ContainerFormat;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SIZE: u64 = 40 << 20;

fn raw(dir: &Path) -> PathBuf {
    patterned_disk(dir, "disk.raw", SIZE)
}

/// `raw` converted to qcow2 with these options; checked byte for byte.
fn same_as_qemu(options: &[&str]) -> diskalign::image::Container {
    let dir = tempfile::tempdir().unwrap();
    let img = common::qemu_img_convert(
        &raw(dir.path()),
        &dir.path().join("disk.qcow2"),
        "qcow2",
        options,
    );
    assert_same_guest(&img, "qcow2", ContainerFormat::Qcow2).container
}

#[test]
fn version_3_default() {
    let c = same_as_qemu(&[]);
    assert_eq!(c.version, "3");
    assert_eq!(c.unit_bytes, Some(65536));
    assert_eq!(c.subunit_bytes, None);
    assert_eq!(c.compression.as_deref(), Some("zlib"));
    assert!(!c.encrypted);
    assert!(c.backing.is_empty());
    assert!(c.allocated_bytes.is_some());
}

#[test]
fn version_2() {
    let c = same_as_qemu(&["-o", "compat=0.10"]);
    assert_eq!(c.version, "2");
}

#[test]
fn small_and_large_clusters() {
    assert_eq!(
        same_as_qemu(&["-o", "cluster_size=512"]).unit_bytes,
        Some(512)
    );
    assert_eq!(
        same_as_qemu(&["-o", "cluster_size=2M"]).unit_bytes,
        Some(2 << 20)
    );
}

#[test]
fn compressed_zlib_and_zstd() {
    assert_eq!(same_as_qemu(&["-c"]).compression.as_deref(), Some("zlib"));
    let c = same_as_qemu(&["-c", "-o", "compression_type=zstd"]);
    assert_eq!(c.compression.as_deref(), Some("zstd"));
    same_as_qemu(&["-c", "-o", "compression_type=zstd,cluster_size=512"]);
    same_as_qemu(&["-c", "-o", "cluster_size=2M"]);
}

#[test]
fn extended_l2_entries() {
    let c = same_as_qemu(&["-o", "extended_l2=on"]);
    assert_eq!(c.subunit_bytes, Some(2048));
    let c = same_as_qemu(&["-o", "extended_l2=on,cluster_size=2M"]);
    assert_eq!(c.subunit_bytes, Some(65536));
    same_as_qemu(&["-c", "-o", "extended_l2=on"]);
}

/// qemu-img create -f qcow2 -b BASE -F FORMAT [-o OPTIONS] TOP.
fn overlay(base: &str, format: &str, top: &Path, options: &[&str]) {
    let mut args = vec!["create", "-q", "-f", "qcow2", "-b", base, "-F", format];
    args.extend_from_slice(options);
    args.push(top.to_str().unwrap());
    common::sh("qemu-img", &args);
}

/// Writes over clusters, across them and at unaligned offsets, and zero
/// writes over data of the base and over nothing.
fn scribble(top: &Path) {
    for cmd in [
        "write -P 0x5a 1M 70k",
        "write -P 0x33 3000 5000",
        "write -P 0x77 8388000 200000",
        "write -z 5M 65536",
        "write -z 5300000 1000",
        "write -z 20M 1M",
        "write -P 0x11 39M 4096",
    ] {
        qemu_io(top, "qcow2", cmd);
    }
}

#[test]
fn overlay_on_a_raw_base_relative_and_absolute() {
    let dir = tempfile::tempdir().unwrap();
    let base = raw(dir.path());
    let top = dir.path().join("top.qcow2");
    overlay("disk.raw", "raw", &top, &[]);
    scribble(&top);
    let c = assert_same_guest(&top, "qcow2", ContainerFormat::Qcow2).container;
    assert_eq!(c.backing.len(), 1);
    assert_eq!(c.backing[0].name, "disk.raw");
    assert_eq!(c.backing[0].format, ContainerFormat::Raw);
    assert_eq!(Path::new(&c.backing[0].path), base);

    let abs = dir.path().join("abs.qcow2");
    overlay(
        base.to_str().unwrap(),
        "raw",
        &abs,
        &["-o", "extended_l2=on"],
    );
    scribble(&abs);
    let c = assert_same_guest(&abs, "qcow2", ContainerFormat::Qcow2).container;
    assert_eq!(c.backing[0].name, base.to_str().unwrap());
}

#[test]
fn overlay_on_a_qcow2_base() {
    let dir = tempfile::tempdir().unwrap();
    let base = common::qemu_img_convert(
        &raw(dir.path()),
        &dir.path().join("base.qcow2"),
        "qcow2",
        &["-c"],
    );
    qemu_io(&base, "qcow2", "write -P 0x99 30M 100k");
    let mid = dir.path().join("mid.qcow2");
    overlay("base.qcow2", "qcow2", &mid, &["-o", "cluster_size=4096"]);
    scribble(&mid);
    let top = dir.path().join("top.qcow2");
    overlay("mid.qcow2", "qcow2", &top, &["-o", "extended_l2=on"]);
    qemu_io(&top, "qcow2", "write -P 0xee 1100000 3333");
    qemu_io(&top, "qcow2", "write -z 30M 7000");
    let c = assert_same_guest(&top, "qcow2", ContainerFormat::Qcow2).container;
    let names: Vec<_> = c.backing.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["mid.qcow2", "base.qcow2"]);
    assert!(c.backing.iter().all(|b| b.format == ContainerFormat::Qcow2));
}

#[test]
fn a_smaller_backing_file_reads_as_zeros_past_its_end() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.raw"), vec![0x42u8; 3 << 20]).unwrap();
    let top = dir.path().join("top.qcow2");
    overlay("small.raw", "raw", &top, &[]);
    common::sh(
        "qemu-img",
        &["resize", "-q", top.to_str().unwrap(), &SIZE.to_string()],
    );
    qemu_io(&top, "qcow2", "write -P 0x5a 3M 70k");
    assert_same_guest(&top, "qcow2", ContainerFormat::Qcow2);
}

#[test]
fn a_declared_raw_backing_file_is_raw_whatever_its_magic() {
    let dir = tempfile::tempdir().unwrap();
    let base = common::qemu_img_convert(
        &raw(dir.path()),
        &dir.path().join("base.qcow2"),
        "qcow2",
        &[],
    );
    let top = dir.path().join("top.qcow2");
    overlay("base.qcow2", "raw", &top, &[]);
    assert_eq!(
        super::qemu_virtual_size(&top),
        std::fs::metadata(&base).unwrap().len()
    );
    qemu_io(&top, "qcow2", "write -P 0x5a 65536 512");
    let c = assert_same_guest(&top, "qcow2", ContainerFormat::Qcow2).container;
    assert_eq!(c.backing[0].format, ContainerFormat::Raw);
}

/// qemu-img create -f qcow2 -o OPTIONS IMG, then the raw disk converted
/// into it (`convert -n`: the image and its data file stay as created),
/// both run in `dir`: qemu 7.2 opens a relative data file name from its
/// working directory.
fn with_data_file(dir: &Path, src: &Path, img: &Path, options: &str) {
    let run = |args: &[&str]| {
        let out = std::process::Command::new("qemu-img")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let (img, src) = (img.to_str().unwrap(), src.to_str().unwrap());
    run(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        "-o",
        options,
        img,
        &SIZE.to_string(),
    ]);
    run(&["convert", "-n", "-f", "raw", "-O", "qcow2", src, img]);
}

#[test]
fn external_data_file() {
    for raw_bit in ["off", "on"] {
        let dir = tempfile::tempdir().unwrap();
        let src = raw(dir.path());
        let img = dir.path().join("disk.qcow2");
        let data = dir.path().join("disk.data");
        let options = format!("data_file={},data_file_raw={raw_bit}", data.display());
        with_data_file(dir.path(), &src, &img, &options);
        qemu_io(&img, "qcow2", "write -z 5M 65536");
        qemu_io(&img, "qcow2", "write -P 0x5a 7M 1000");
        let c = assert_same_guest(&img, "qcow2", ContainerFormat::Qcow2).container;
        assert_eq!(c.data_file.as_deref(), data.to_str(), "raw {raw_bit}");
    }
}

/// A relative data file name is opened from the image's directory, as
/// relative backing names are (qemu 7.2 opens it from its working
/// directory instead, so the image only works run from there).
#[test]
fn a_relative_data_file_name_is_read_next_to_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let src = raw(dir.path());
    let img = dir.path().join("disk.qcow2");
    with_data_file(dir.path(), &src, &img, "data_file=disk.data");
    assert!(dir.path().join("disk.data").is_file());
    let opened = super::open(&img);
    assert_eq!(opened.container.data_file.as_deref(), Some("disk.data"));
    let guest = opened.guest.unwrap();
    let want = std::fs::read(&src).unwrap();
    let mut got = vec![0u8; want.len()];
    guest.read_exact_at(&mut got, 0).unwrap();
    assert!(
        got == want,
        "the guest differs from the disk converted into it"
    );
}

#[test]
fn an_encrypted_image_has_facts_and_no_guest() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("secret.qcow2");
    common::qemu_img_luks(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        "--object",
        "secret,id=s0,data=abc",
        "-o",
        "encrypt.format=luks,encrypt.key-secret=s0,encrypt.iter-time=10",
        img.to_str().unwrap(),
        "16M",
    ]);
    let opened = super::open(&img);
    assert!(opened.guest.is_none());
    assert!(opened.container.encrypted);
    assert_eq!(opened.container.format, ContainerFormat::Qcow2);
    assert_eq!(opened.container.virtual_size, 16 << 20);
}

// ---------------------------------------------------------------------------
// Broken images: real ones with a field patched.
// ---------------------------------------------------------------------------

/// A small real image (512-byte clusters) in `dir`.
fn small_image(dir: &Path) -> PathBuf {
    let img = dir.join("small.qcow2");
    common::sh(
        "qemu-img",
        &[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-o",
            "cluster_size=512",
            img.to_str().unwrap(),
            "1M",
        ],
    );
    img
}

fn patch(img: &Path, at: u64, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new().write(true).open(img).unwrap();
    f.write_all_at(bytes, at).unwrap();
}

/// The line `open_error` gives, asserted to come within a second and to
/// hold every one of `parts`.
fn refused(img: &Path, parts: &[&str]) -> String {
    let t = Instant::now();
    let line = open_error(img);
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "{line}: took {:?}",
        t.elapsed()
    );
    assert!(!line.contains('\n'), "{line}");
    for p in parts {
        assert!(line.contains(p), "{line:?} lacks {p:?}");
    }
    line
}

#[test]
fn an_l1_table_of_2_to_the_31_entries_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_image(dir.path());
    patch(&img, 36, &(1u32 << 31).to_be_bytes());
    refused(
        &img,
        &["qcow2 header at byte 36", "l1_size 2147483648", "32 MiB"],
    );
}

#[test]
fn an_l1_table_past_the_end_of_the_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_image(dir.path());
    patch(&img, 40, &(1u64 << 40).to_be_bytes());
    refused(
        &img,
        &[
            "qcow2 header at byte 40",
            "l1_table_offset 1099511627776",
            "past the end",
        ],
    );
    patch(&img, 40, &1000u64.to_be_bytes());
    refused(
        &img,
        &[
            "qcow2 header at byte 40",
            "l1_table_offset 1000",
            "not a multiple",
        ],
    );
}

#[test]
fn a_truncated_header_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_image(dir.path());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&img)
        .unwrap()
        .set_len(90)
        .unwrap();
    refused(
        &img,
        &["qcow2 header at byte 0", "104 bytes", "ends at byte 90"],
    );
}

#[test]
fn a_header_length_that_lies_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_image(dir.path());
    patch(&img, 100, &4096u32.to_be_bytes());
    refused(&img, &["qcow2 header at byte 100", "header_length 4096"]);
}

#[test]
fn a_virtual_size_beyond_qemu_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let img = small_image(dir.path());
    patch(&img, 24, &(1u64 << 40).to_be_bytes());
    refused(&img, &["qcow2 header at byte 24", "size 1099511627776"]);
}

#[test]
fn a_missing_backing_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    raw(dir.path());
    let top = dir.path().join("top.qcow2");
    overlay("disk.raw", "raw", &top, &[]);
    std::fs::remove_file(dir.path().join("disk.raw")).unwrap();
    let line = refused(&top, &["cannot open \"disk.raw\"", "named at byte"]);
    assert!(line.contains(top.to_str().unwrap()), "{line}");
}

#[test]
fn a_backing_chain_that_loops_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = small_image(dir.path());
    let rebase = |img: &Path, to: &str| {
        common::sh(
            "qemu-img",
            &[
                "rebase",
                "-u",
                "-f",
                "qcow2",
                "-b",
                to,
                "-F",
                "qcow2",
                img.to_str().unwrap(),
            ],
        )
    };
    let b = dir.path().join("b.qcow2");
    overlay("small.qcow2", "qcow2", &b, &[]);
    rebase(&a, "b.qcow2");
    refused(&b, &["backing chain loops", "b.qcow2"]);

    rebase(&a, "small.qcow2");
    refused(&a, &["backing chain loops", "small.qcow2"]);
}
