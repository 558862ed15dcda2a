//! The container readers (src/image/) against qemu's own: every image is
//! made by the real `qemu-img` (Debian's qemu-utils) from a raw disk, and
//! the guest disk diskalign reads must be the bytes of
//! `qemu-img convert -O raw` of the same image, with the virtual size
//! `qemu-img info` gives. One module per format.

#[path = "../common/mod.rs"]
mod common;

mod by_hand;
mod check;
mod patch;
mod qcow2;
mod vdi;
mod vhd;
mod vhdx;
mod vmdk;

use diskalign::image::{self, ContainerFormat, HostFiles, Opened};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A raw disk of `size` bytes with a GPT made by sgdisk and a recognisable,
/// mostly sparse content: a few MiB of pseudo-random bytes at scattered
/// offsets (some across 64 KiB and 2 MiB boundaries, one at the very end),
/// and holes that read as zeros.
pub fn patterned_disk(dir: &Path, name: &str, size: u64) -> PathBuf {
    let p = common::image(dir, name, size);
    common::sh(
        "sgdisk",
        &["-o", "-n1:2048:+8M", "-n2:0:0", p.to_str().unwrap()],
    );
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let spots = [
        (1 << 20, 4096u64),
        ((2 << 20) - 3000, 70_000),
        (5 << 20, 1 << 20),
        ((8 << 20) + 12345, 100_000),
        (size - 3 * 65536 - 77, 3 * 65536 + 77 - 16896),
    ];
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    for (at, len) in spots {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 24) as u8
            })
            .collect();
        f.write_all_at(&bytes, at).unwrap();
    }
    p
}

/// `qemu-img info --output=json`'s virtual size.
pub fn qemu_virtual_size(image: &Path) -> u64 {
    let out = common::sh(
        "qemu-img",
        &["info", "--output=json", "-U", image.to_str().unwrap()],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["virtual-size"].as_u64().unwrap()
}

/// Open `image` with diskalign's reader.
pub fn open(image: &Path) -> Opened {
    image::open(image, &HostFiles).unwrap_or_else(|e| panic!("{}: {e}", image.display()))
}

/// The guest diskalign reads from `image` is, byte for byte, what
/// `qemu-img convert -O raw` makes of it (as format `qemu_format`), and
/// its size is qemu's virtual size. Returns what was opened.
pub fn assert_same_guest(image: &Path, qemu_format: &str, expect: ContainerFormat) -> Opened {
    let raw = image.with_extension("qemu-raw");
    common::sh(
        "qemu-img",
        &[
            "convert",
            "-f",
            qemu_format,
            "-O",
            "raw",
            image.to_str().unwrap(),
            raw.to_str().unwrap(),
        ],
    );
    let opened = open(image);
    assert_eq!(opened.container.format, expect, "{}", image.display());
    let guest = opened.guest.clone().expect("a readable guest disk");
    let want = qemu_virtual_size(image);
    assert_eq!(guest.len(), want, "{}: virtual size", image.display());
    assert_eq!(opened.container.virtual_size, want);
    let raw_bytes = std::fs::read(&raw).unwrap();
    assert_eq!(raw_bytes.len() as u64, want);
    // Odd-sized reads at odd offsets cross every unit boundary somewhere.
    let mut at = 0u64;
    let mut step = 0usize;
    let sizes = [65536usize, 4096, 512, 131072 + 512, 1 << 20, 333];
    while at < want {
        let n = (sizes[step % sizes.len()] as u64).min(want - at) as usize;
        let mut buf = vec![0xa5u8; n];
        guest
            .read_exact_at(&mut buf, at)
            .unwrap_or_else(|e| panic!("{}: read at {at}: {e}", image.display()));
        if buf[..] != raw_bytes[at as usize..at as usize + n] {
            let first = (0..n)
                .find(|&i| buf[i] != raw_bytes[at as usize + i])
                .unwrap();
            panic!(
                "{}: guest byte {} differs from qemu's",
                image.display(),
                at + first as u64
            );
        }
        at += n as u64;
        step += 1;
    }
    std::fs::remove_file(&raw).unwrap();
    opened
}

/// Run `qemu-io -c CMD IMAGE` (writes into an overlay).
pub fn qemu_io(image: &Path, format: &str, cmd: &str) {
    common::require_tool("qemu-io");
    let out = Command::new("qemu-io")
        .args(["-f", format, "-c", cmd, image.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "qemu-io {cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What `diskalign::image::open` says of a broken image, as one line.
pub fn open_error(image: &Path) -> String {
    match image::open(image, &HostFiles) {
        Ok(_) => panic!("{} opened", image.display()),
        Err(e) => e.to_string(),
    }
}
