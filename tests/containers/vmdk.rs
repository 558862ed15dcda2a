//! VMDK images made by qemu-img, read as qemu reads them: every subformat
//! qemu writes, an overlay on a VMDK parent, a streamOptimized file with
//! its grain directory in a footer as VMware writes it, and broken files
//! made from real ones by patching a field or editing the descriptor.

use super::{assert_same_guest, common, open_error, patterned_disk, qemu_io};
use diskalign::image::ContainerFormat;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

/// A patterned raw disk of `size` bytes converted to VMDK with `options`.
fn vmdk_of(dir: &Path, size: u64, name: &str, options: &[&str]) -> PathBuf {
    let raw = patterned_disk(dir, &format!("{name}.raw"), size);
    let mut opts = vec!["-o"];
    let joined;
    if options.is_empty() {
        opts.clear();
    } else {
        joined = options.join(",");
        opts.push(&joined);
    }
    common::qemu_img_convert(&raw, &dir.join(format!("{name}.vmdk")), "vmdk", &opts)
}

fn read_at(path: &Path, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    std::fs::File::open(path)
        .unwrap()
        .read_exact_at(&mut buf, offset)
        .unwrap();
    buf
}

fn patch(path: &Path, offset: u64, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, offset).unwrap();
}

fn le_u64_at(path: &Path, offset: u64) -> u64 {
    u64::from_le_bytes(read_at(path, offset, 8).try_into().unwrap())
}

fn le_u32_at(path: &Path, offset: u64) -> u32 {
    u32::from_le_bytes(read_at(path, offset, 4).try_into().unwrap())
}

/// Replace `from` by `to` in a text file (a descriptor file).
fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{}: no {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

/// `open_error`, which must come within a second and name each of `names`.
fn quick_error(image: &Path, names: &[&str]) -> String {
    let start = Instant::now();
    let e = open_error(image);
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{}: took {:?}",
        image.display(),
        start.elapsed()
    );
    for n in names {
        assert!(e.contains(n), "{:?} does not name {n:?}", e);
    }
    e
}

#[test]
fn monolithic_sparse_reads_as_qemu_reads_it() {
    common::require_tool("qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let img = vmdk_of(dir.path(), 64 * MIB, "mono", &[]);
    let c = assert_same_guest(&img, "vmdk", ContainerFormat::Vmdk).container;
    assert_eq!(c.version, "1");
    assert_eq!(c.subformat.as_deref(), Some("monolithicSparse"));
    assert_eq!(c.unit_bytes, Some(65536));
    assert_eq!(c.compression, None);
    assert!(c.backing.is_empty());
    assert!(c.allocated_bytes.is_some_and(|a| a > 0));
}

#[test]
fn stream_optimized_inflates_its_grains() {
    common::require_tool("qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let img = vmdk_of(
        dir.path(),
        64 * MIB,
        "stream",
        &["subformat=streamOptimized"],
    );
    let c = assert_same_guest(&img, "vmdk", ContainerFormat::Vmdk).container;
    assert_eq!(c.version, "3");
    assert_eq!(c.subformat.as_deref(), Some("streamOptimized"));
    assert_eq!(c.compression.as_deref(), Some("deflate"));
    assert_eq!(c.unit_bytes, Some(65536));
}

/// qemu writes the grain directory's place in the header; VMware and
/// VirtualBox write gdOffset = GD_AT_END and the header again in a footer
/// before the end-of-stream marker. Made from qemu's file, read by qemu too.
#[test]
fn stream_optimized_with_a_footer_reads_its_grain_directory_from_it() {
    common::require_tool("qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let img = vmdk_of(
        dir.path(),
        16 * MIB,
        "footer",
        &["subformat=streamOptimized"],
    );
    let header = read_at(&img, 0, 512);
    let len = std::fs::metadata(&img).unwrap().len();
    assert_eq!(len % 512, 0);
    let mut tail = vec![0u8; 1536];
    tail[12..16].copy_from_slice(&3u32.to_le_bytes()); // footer marker
    tail[512..1024].copy_from_slice(&header);
    patch(&img, len, &tail);
    patch(&img, 56, &u64::MAX.to_le_bytes());
    let c = assert_same_guest(&img, "vmdk", ContainerFormat::Vmdk).container;
    assert_eq!(c.subformat.as_deref(), Some("streamOptimized"));

    // A footer without its marker is refused, naming where it looked.
    patch(&img, len + 12, &0u32.to_le_bytes());
    quick_error(
        &img,
        &["VMDK header", &format!("at byte {len}"), "footer marker"],
    );
}

#[test]
fn monolithic_flat_reads_its_flat_extent() {
    common::require_tool("qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let img = vmdk_of(dir.path(), 64 * MIB, "flat", &["subformat=monolithicFlat"]);
    let c = assert_same_guest(&img, "vmdk", ContainerFormat::Vmdk).container;
    assert_eq!(c.version, "");
    assert_eq!(c.subformat.as_deref(), Some("monolithicFlat"));
    assert_eq!(c.unit_bytes, None);
    // The descriptor and its flat extent (a freshly written file's
    // st_blocks may still settle by a block or two, hence the slack).
    use std::os::unix::fs::MetadataExt;
    let blocks = |p: &Path| std::fs::metadata(p).unwrap().blocks() * 512;
    let sum = blocks(&img) + blocks(&dir.path().join("flat-flat.vmdk"));
    let got = c.allocated_bytes.unwrap();
    assert!(
        got > blocks(&img) && got.abs_diff(sum) <= 64 << 10,
        "{got} vs {sum}"
    );
}

/// Over 2 GiB, so qemu splits the disk into two extents (its split size
/// is a constant 2 GiB); the raw is sparse, so this costs little.
#[test]
fn two_gb_max_extent_sparse_and_flat_join_their_extents() {
    common::require_tool("qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let raw = patterned_disk(dir.path(), "split.raw", (2 << 30) + 3 * MIB);
    for (sub, names) in [
        (
            "twoGbMaxExtentSparse",
            ["split-s001.vmdk", "split-s002.vmdk"],
        ),
        ("twoGbMaxExtentFlat", ["split-f001.vmdk", "split-f002.vmdk"]),
    ] {
        let img = common::qemu_img_convert(
            &raw,
            &dir.path().join(format!("{sub}.vmdk")),
            "vmdk",
            &["-o", &format!("subformat={sub}")],
        );
        let text = std::fs::read_to_string(&img).unwrap();
        let stem = format!("{sub}-");
        for n in names {
            assert!(text.contains(&n.replace("split-", &stem)), "{text}");
        }
        let c = assert_same_guest(&img, "vmdk", ContainerFormat::Vmdk).container;
        assert_eq!(c.subformat.as_deref(), Some(sub));
        assert_eq!(c.unit_bytes.is_some(), sub.ends_with("Sparse"));
        assert!(c.allocated_bytes.is_some());
    }
}

#[test]
fn compat6_and_zeroed_grain_images() {
    common::require_tool("qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let img = vmdk_of(dir.path(), 32 * MIB, "compat6", &["compat6"]);
    let c = assert_same_guest(&img, "vmdk", ContainerFormat::Vmdk).container;
    assert_eq!(c.version, "1");
    let img = vmdk_of(dir.path(), 32 * MIB, "zeroed", &["zeroed_grain=on"]);
    let c = assert_same_guest(&img, "vmdk", ContainerFormat::Vmdk).container;
    assert_eq!(c.version, "2");
}

/// An overlay: its written grains from itself, the rest from its parent,
/// and grains zeroed in the overlay (zeroed-grain GTEs) as zeros, not the
/// parent's bytes.
#[test]
fn an_overlay_reads_unallocated_grains_from_its_parent() {
    common::require_tool("qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let base = vmdk_of(dir.path(), 32 * MIB, "base", &[]);
    let top = dir.path().join("top.vmdk");
    common::sh(
        "qemu-img",
        &[
            "create",
            "-f",
            "vmdk",
            "-o",
            "zeroed_grain=on",
            "-b",
            "base.vmdk",
            "-F",
            "vmdk",
            top.to_str().unwrap(),
        ],
    );
    qemu_io(&top, "vmdk", "write -P 0x5a 1M 70k");
    qemu_io(&top, "vmdk", "write -z 5M 128k");
    let c = assert_same_guest(&top, "vmdk", ContainerFormat::Vmdk).container;
    assert_eq!(c.backing.len(), 1);
    assert_eq!(c.backing[0].name, "base.vmdk");
    assert_eq!(c.backing[0].path, base.display().to_string());
    assert_eq!(c.backing[0].format, ContainerFormat::Vmdk);
    let guest = super::open(&top).guest.unwrap();
    let mut buf = vec![1u8; 4096];
    guest.read_exact_at(&mut buf, 5 * MIB).unwrap();
    assert!(buf.iter().all(|&b| b == 0), "zeroed grain reads zeros");
}

#[test]
fn a_descriptor_naming_a_missing_extent_says_which_and_where() {
    common::require_tool("qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let img = vmdk_of(dir.path(), 16 * MIB, "gone", &["subformat=monolithicFlat"]);
    edit(&img, "\"gone-flat.vmdk\"", "\"missing-flat.vmdk\"");
    let text = std::fs::read_to_string(&img).unwrap();
    let at = text.find("missing-flat").unwrap();
    quick_error(
        &img,
        &[
            "missing-flat.vmdk",
            &format!("named at byte {at}"),
            "gone.vmdk",
        ],
    );
}

#[test]
fn patched_headers_are_refused_naming_the_field() {
    common::require_tool("qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let good = vmdk_of(dir.path(), 16 * MIB, "good", &[]);
    let cases: [(&str, u64, Vec<u8>, &[&str]); 6] = [
        // 2^46 sectors in 64 KiB grains, or 2^40 in 1-sector grains: grain
        // directories of 2^30 and 2^31 entries.
        (
            "capacity",
            12,
            (1u64 << 46).to_le_bytes().to_vec(),
            &["at byte 12", "capacity", "grain directory"],
        ),
        (
            "grain",
            20,
            1u64.to_le_bytes().to_vec(),
            &["at byte 12", "grain directory"],
        ),
        (
            "gtes",
            44,
            0u32.to_le_bytes().to_vec(),
            &["at byte 44", "numGTEsPerGT"],
        ),
        (
            "grain0",
            20,
            0u64.to_le_bytes().to_vec(),
            &["at byte 20", "grainSize"],
        ),
        (
            "gd",
            56,
            (1u64 << 40).to_le_bytes().to_vec(),
            &["at byte 56", "gdOffset"],
        ),
        (
            "version",
            4,
            7u32.to_le_bytes().to_vec(),
            &["at byte 4", "version"],
        ),
    ];
    for (name, at, bytes, names) in cases {
        let img = dir.path().join(format!("{name}.vmdk"));
        std::fs::copy(&good, &img).unwrap();
        if name == "grain" {
            patch(&img, 12, &(1u64 << 40).to_le_bytes());
        }
        patch(&img, at, &bytes);
        let e = quick_error(&img, names);
        assert!(e.contains("VMDK header"), "{e}");
    }
    // A header cut short.
    let img = dir.path().join("short.vmdk");
    std::fs::write(&img, read_at(&good, 0, 60)).unwrap();
    quick_error(&img, &["VMDK header", "at byte 0", "truncated"]);
}

/// A compressed grain whose marker claims more than two grains fails the
/// read that meets it, naming the marker's byte.
#[test]
fn a_compressed_grain_with_a_lying_marker_fails_its_read() {
    common::require_tool("qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let img = vmdk_of(
        dir.path(),
        16 * MIB,
        "lying",
        &["subformat=streamOptimized"],
    );
    // The first allocated grain: GD entry 0, then the first nonzero GTE.
    let gd = le_u64_at(&img, 56) * 512;
    let gt = u64::from(le_u32_at(&img, gd)) * 512;
    let (index, sector) = (0..512u64)
        .map(|i| (i, le_u32_at(&img, gt + 4 * i)))
        .find(|&(_, s)| s > 1)
        .unwrap();
    let marker = u64::from(sector) * 512;
    patch(&img, marker + 8, &0x7fff_ffffu32.to_le_bytes());
    let guest = super::open(&img).guest.unwrap();
    let mut buf = vec![0u8; 512];
    let start = Instant::now();
    let e = guest
        .read_exact_at(&mut buf, index * 65536)
        .unwrap_err()
        .to_string();
    assert!(start.elapsed() < Duration::from_secs(1));
    for n in [
        "VMDK compressed grain",
        &format!("at byte {marker}"),
        "marker's size",
    ] {
        assert!(e.contains(n), "{e:?} does not name {n:?}");
    }
}

/// Parents that come back to a file already on the chain: an overlay
/// naming itself, and two overlays naming each other.
#[test]
fn a_parent_chain_that_loops_is_refused() {
    common::require_tool("qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let create = |name: &str, parent: Option<&str>| {
        let p = d.join(name);
        let mut args = vec!["create", "-f", "vmdk"];
        if let Some(b) = parent {
            args.extend(["-b", b, "-F", "vmdk"]);
        }
        args.extend([p.to_str().unwrap(), "16M"]);
        common::sh("qemu-img", &args);
        p
    };
    let hint_at = |p: &Path, name: &[u8]| {
        let text = read_at(p, 512, 1024);
        512 + text.windows(name.len()).position(|w| w == name).unwrap() as u64
    };
    create("y.vmdk", None);
    let x = create("x.vmdk", Some("y.vmdk"));
    // y over z, then its hint patched to name x: qemu-img cannot make a
    // loop itself.
    create("z.vmdk", None);
    std::fs::remove_file(d.join("y.vmdk")).unwrap();
    let y = create("y.vmdk", Some("z.vmdk"));
    patch(&y, hint_at(&y, b"z.vmdk"), b"x.vmdk");
    quick_error(&x, &["loops", "y.vmdk", "x.vmdk"]);
    quick_error(&y, &["loops"]);

    // x naming itself: the hint in its embedded descriptor patched.
    patch(&x, hint_at(&x, b"y.vmdk"), b"x.vmdk");
    quick_error(&x, &["loops", "x.vmdk"]);
}
