//! VHDX images made by qemu-img, read as qemu reads them: dynamic with
//! qemu's default block size (8 MiB below 1 GiB) and with 1 and 32 MiB
//! blocks, a larger log, fixed, a guest past the first sector bitmap
//! entry of the BAT; then real images patched to lie, and a log that
//! must be replayed, which qemu refuses read-only as we do.

use super::patch::{self, quick_error};
use super::{assert_same_guest, common, open, patterned_disk, qemu_virtual_size};
use crc::{Crc, CRC_32_ISCSI};
use diskalign::image::{open_vhdx, Chain, ContainerFormat, Files, HostFiles, Opened};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// Where qemu-img puts things: headers, region tables, the log (1 MiB),
/// the BAT (2 MiB), the metadata (3 MiB, items from 64 KiB on).
const HEADER_AT: [u64; 2] = [64 << 10, 128 << 10];
const REGION_TABLE_AT: [u64; 2] = [192 << 10, 256 << 10];
const LOG_AT: u64 = MIB;
const BAT_AT: u64 = 2 * MIB;
const METADATA_AT: u64 = 3 * MIB;
/// The metadata items qemu-img writes, in this order from 64 KiB on:
/// file parameters (8 bytes), virtual disk size (8), page 83 (16), logical
/// and physical sector sizes (4 each).
const FILE_PARAMETERS_AT: u64 = METADATA_AT + 65536;
const VIRTUAL_SIZE_AT: u64 = FILE_PARAMETERS_AT + 8;

fn vhdx(dir: &Path, name: &str, size: u64, options: &[&str]) -> PathBuf {
    common::require_tool("qemu-img");
    let raw = patterned_disk(dir, &format!("{name}.raw"), size);
    common::qemu_img_convert(&raw, &dir.join(name), "vhdx", options)
}

fn facts(o: &Opened) -> (Option<u64>, Option<u32>, Option<u32>, Option<&str>) {
    let c = &o.container;
    (
        c.unit_bytes,
        c.logical_sector_bytes,
        c.physical_sector_bytes,
        c.subformat.as_deref(),
    )
}

#[test]
fn a_dynamic_vhdx_reads_as_qemu_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let image = vhdx(dir.path(), "d.vhdx", 64 * MIB, &[]);
    let opened = assert_same_guest(&image, "vhdx", ContainerFormat::Vhdx);
    assert_eq!(opened.container.version, "1");
    // qemu-img's default block size below 1 GiB (vhdx_co_create).
    assert_eq!(
        facts(&opened),
        (Some(8 * MIB), Some(512), Some(512), Some("dynamic"))
    );
}

#[test]
fn block_sizes_and_log_sizes_read_alike() {
    let dir = tempfile::tempdir().unwrap();
    for (name, options, block) in [
        ("b1.vhdx", "block_size=1M", MIB),
        ("b32.vhdx", "block_size=32M", 32 * MIB),
        ("log.vhdx", "log_size=4M,block_size=2M", 2 * MIB),
        ("nz.vhdx", "block_state_zero=off", 8 * MIB),
    ] {
        let image = vhdx(dir.path(), name, 64 * MIB, &["-o", options]);
        let opened = assert_same_guest(&image, "vhdx", ContainerFormat::Vhdx);
        assert_eq!(opened.container.unit_bytes, Some(block), "{name}");
    }
}

#[test]
fn a_fixed_vhdx_reads_as_qemu_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let image = vhdx(dir.path(), "f.vhdx", 64 * MIB, &["-o", "subformat=fixed"]);
    let opened = assert_same_guest(&image, "vhdx", ContainerFormat::Vhdx);
    assert_eq!(facts(&opened).3, Some("fixed"));
}

/// A guest past 4 GiB in 1 MiB blocks: block 4096 is BAT entry 4097, past
/// the first sector bitmap entry. Compared with qemu's raw conversion at
/// the start and over the last 80 MiB (the whole guest would be 4 GiB of
/// memory).
#[test]
fn blocks_past_the_first_sector_bitmap_entry_read_as_qemu_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let size = 4 * GIB + 64 * MIB;
    let image = vhdx(dir.path(), "big.vhdx", size, &["-o", "block_size=1M"]);
    assert_eq!(qemu_virtual_size(&image), size);
    let raw = image.with_extension("qemu-raw");
    common::sh(
        "qemu-img",
        &[
            "convert",
            "-f",
            "vhdx",
            "-O",
            "raw",
            image.to_str().unwrap(),
            raw.to_str().unwrap(),
        ],
    );
    let want = std::fs::File::open(&raw).unwrap();
    let guest = open(&image).guest.unwrap();
    assert_eq!(guest.len(), size);
    for (at, len) in [(0, 16 * MIB), (size - 80 * MIB, 80 * MIB)] {
        let mut got = vec![0u8; len as usize];
        guest.read_exact_at(&mut got, at).unwrap();
        let mut expect = vec![0u8; len as usize];
        want.read_exact_at(&mut expect, at).unwrap();
        assert!(got == expect, "guest bytes {at}..{} differ", at + len);
        assert!(got.iter().any(|&b| b != 0), "the window holds data");
    }
}

const CASTAGNOLI: Crc<u32> = Crc::<u32>::new(&CRC_32_ISCSI);

/// Set the CRC-32C of the `len`-byte structure at `at` of `path` (the
/// checksum at byte 4, taken as zeros).
fn reseal(path: &Path, at: u64, len: usize) {
    let mut b = patch::read(path, at, len);
    b[4..8].fill(0);
    let crc = CASTAGNOLI.checksum(&b);
    patch::write(path, at + 4, &crc.to_le_bytes());
}

/// A copy of `image` with `bytes` at `at`, both headers resealed when the
/// patch is in one.
fn patched(image: &Path, name: &str, at: u64, bytes: &[u8]) -> PathBuf {
    let copy = patch::copy_with(image, name, &[(at, bytes)]);
    for h in HEADER_AT {
        if (h..h + 4096).contains(&at) {
            reseal(&copy, h, 4096);
        }
    }
    copy
}

#[test]
fn a_damaged_header_or_region_table_falls_back_to_the_other_copy() {
    let dir = tempfile::tempdir().unwrap();
    let image = vhdx(dir.path(), "d.vhdx", 64 * MIB, &[]);
    for (name, at) in [
        ("h1.vhdx", HEADER_AT[0] + 300),
        ("h2.vhdx", HEADER_AT[1] + 300),
    ] {
        let copy = patch::copy_with(&image, name, &[(at, &[0x5a])]);
        assert_same_guest(&copy, "vhdx", ContainerFormat::Vhdx);
    }
    // qemu reads the first region table only and refuses the file; the
    // specification keeps the second for this, and we read it: the guest
    // is the undamaged image's.
    let rt1 = patch::copy_with(&image, "rt1.vhdx", &[(REGION_TABLE_AT[0] + 300, &[0x5a])]);
    let (code, _) = common::sh_status("qemu-img", &["info", rt1.to_str().unwrap()]);
    assert_ne!(code, 0, "qemu refuses a damaged first region table");
    let want = assert_same_guest(&image, "vhdx", ContainerFormat::Vhdx)
        .guest
        .unwrap();
    let got = open(&rt1).guest.unwrap();
    let mut a = vec![0u8; want.len() as usize];
    let mut b = vec![1u8; got.len() as usize];
    want.read_exact_at(&mut a, 0).unwrap();
    got.read_exact_at(&mut b, 0).unwrap();
    assert!(a == b, "the guest through the second region table differs");
    let both = patch::copy_with(
        &image,
        "hh.vhdx",
        &[(HEADER_AT[0] + 300, &[0x5a]), (HEADER_AT[1] + 300, &[0x5a])],
    );
    let e = quick_error(&both);
    assert!(
        e.contains(
            "VHDX header at byte 65536: no valid header: the one at byte 65536 has checksum"
        ),
        "{e}"
    );
    let both = patch::copy_with(
        &image,
        "rr.vhdx",
        &[
            (REGION_TABLE_AT[0] + 8, &[9]),
            (REGION_TABLE_AT[1] + 8, &[9]),
        ],
    );
    let e = quick_error(&both);
    assert!(
        e.contains("VHDX region table at byte 196608: no valid copy"),
        "{e}"
    );
}

#[test]
fn patched_fields_are_named_with_their_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let image = vhdx(dir.path(), "d.vhdx", 64 * MIB, &[]);
    let cases: [(&str, u64, Vec<u8>, &str); 7] = [
        (
            "bs0.vhdx",
            FILE_PARAMETERS_AT,
            0u32.to_le_bytes().to_vec(),
            "VHDX metadata at byte 3211264: file parameters: block size 0",
        ),
        (
            "bs3.vhdx",
            FILE_PARAMETERS_AT,
            (3u32 << 20).to_le_bytes().to_vec(),
            "block size 3145728 is not a power of two",
        ),
        (
            "bs512.vhdx",
            FILE_PARAMETERS_AT,
            (512u32 << 20).to_le_bytes().to_vec(),
            "block size 536870912",
        ),
        (
            "parent.vhdx",
            FILE_PARAMETERS_AT + 4,
            2u32.to_le_bytes().to_vec(),
            "VHDX metadata at byte 3211268: file parameters: has parent is set",
        ),
        (
            "huge.vhdx",
            VIRTUAL_SIZE_AT,
            (1u64 << 60).to_le_bytes().to_vec(),
            "VHDX metadata at byte 3211272: virtual disk size 1152921504606846976 is beyond 64 TiB",
        ),
        (
            "bat.vhdx",
            VIRTUAL_SIZE_AT,
            (64u64 << 40).to_le_bytes().to_vec(),
            "VHDX BAT at byte 2097152: the region of 1048576 bytes holds 131072 entries",
        ),
        (
            "item.vhdx",
            METADATA_AT + 32 + 16,
            u32::MAX.to_le_bytes().to_vec(),
            "VHDX metadata at byte 3145760: entry 0: item at offset 4294967295",
        ),
    ];
    for (name, at, bytes, want) in cases {
        let e = quick_error(&patched(&image, name, at, &bytes));
        assert!(e.contains(want), "{name}: {e}");
    }
    // Without its magic the file is not told as a VHDX: read it as one.
    let id = patched(&image, "id.vhdx", 0, b"vhdxfilX");
    let src = HostFiles.open(&id).unwrap();
    let e = open_vhdx(src, &id, &mut Chain::new(&HostFiles))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("VHDX file identifier at byte 0: signature"),
        "{e}"
    );
    let e = quick_error(&patched(
        &image,
        "log.vhdx",
        HEADER_AT[1] + 72,
        &(MIB + 1).to_le_bytes(),
    ));
    assert!(
        e.contains("VHDX header at byte 131144: log offset 1048577"),
        "{e}"
    );
}

#[test]
fn truncated_images_and_bat_entries_past_the_end_fail() {
    let dir = tempfile::tempdir().unwrap();
    let image = vhdx(dir.path(), "d.vhdx", 64 * MIB, &[]);
    let cut = patch::copy_with(&image, "cut.vhdx", &[]);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&cut)
        .unwrap()
        .set_len(METADATA_AT + 4096)
        .unwrap();
    let e = quick_error(&cut);
    assert!(
        e.contains("VHDX metadata at byte 3145728: needs 65536 bytes"),
        "{e}"
    );
    // BAT entry 0 (the block holding the GPT) sent past the end of the file.
    let far = patched(
        &image,
        "far.vhdx",
        BAT_AT,
        &(6u64 | (1 << 40)).to_le_bytes(),
    );
    let guest = open(&far).guest.unwrap();
    let e = guest
        .read_exact_at(&mut [0u8; 512], 512)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "VHDX BAT at byte 2097152: entry 0: block at byte 1099511627776 ends past the end"
        ),
        "{e}"
    );
}

/// A log entry of this log (`guid`, sequence 5, one 4 KiB sector, no
/// descriptors) with its CRC-32C set: one qemu would replay.
fn log_entry(guid: &[u8; 16]) -> Vec<u8> {
    let mut e = vec![0u8; 4096];
    e[..4].copy_from_slice(b"loge");
    e[8..12].copy_from_slice(&4096u32.to_le_bytes());
    e[16..24].copy_from_slice(&5u64.to_le_bytes());
    e[32..48].copy_from_slice(guid);
    let crc = CASTAGNOLI.checksum(&e);
    e[4..8].copy_from_slice(&crc.to_le_bytes());
    e
}

#[test]
fn a_log_to_replay_is_refused_as_qemu_refuses_it_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let image = vhdx(dir.path(), "d.vhdx", 64 * MIB, &[]);
    let guid = [0x3c; 16];
    let dirty = patch::copy_with(&image, "dirty.vhdx", &[(LOG_AT, &log_entry(&guid))]);
    for h in HEADER_AT {
        patch::write(&dirty, h + 48, &guid);
        reseal(&dirty, h, 4096);
    }
    let e = quick_error(&dirty);
    assert!(
        e.contains("VHDX log at byte 1048576: entry 5 is not yet applied to the file"),
        "{e}"
    );
    // qemu agrees: it refuses the file read-only.
    let (code, err) = common::sh_status("qemu-img", &["info", dirty.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("needs to be replayed"), "{err}");
    // The same log GUID over a log with no entry: nothing to replay.
    let clean = patch::copy_with(&dirty, "clean.vhdx", &[(LOG_AT, &[0; 4])]);
    assert_same_guest(&clean, "vhdx", ContainerFormat::Vhdx);
}
