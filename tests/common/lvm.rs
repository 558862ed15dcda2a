//! LVM on images, written by the real tools (pvcreate, vgcreate, lvcreate
//! without device-mapper) through loop devices.

use super::{image, lvm, sh, LoopDev};
use std::path::PathBuf;
use tempfile::TempDir;

/// A PV's pe_start in bytes, as `pvs` reports it.
pub fn pvs_pe_start(prefix: &str, pv: &str) -> u64 {
    lvm(
        "pvs",
        prefix,
        &[
            "--noheadings",
            "--units",
            "b",
            "--nosuffix",
            "-o",
            "pe_start",
            pv,
        ],
    )
    .trim()
    .parse()
    .unwrap()
}

/// Two 24 MiB partitions (the second starting at `p2_start` sectors), both
/// PVs of one VG with a 2 × 8 KiB striped LV.
pub fn striped_image(dir: &TempDir, p2_start: u64) -> PathBuf {
    let img = image(dir.path(), "lv.img", 64 << 20);
    let p2 = format!("2:{p2_start}:+24M");
    sh(
        "sgdisk",
        &[
            "-a",
            "1",
            "-n",
            "1:2048:+24M",
            "-n",
            &p2,
            img.to_str().unwrap(),
        ],
    );
    let l = LoopDev::attach(&img, None);
    let prefix = format!("{}p", l.dev);
    let (p1, p2) = (l.part(1), l.part(2));
    lvm("pvcreate", &prefix, &[&p1, &p2]);
    lvm("vgcreate", &prefix, &["-s", "1M", "vg0", &p1, &p2]);
    lvm(
        "lvcreate",
        &prefix,
        &[
            "--driverloaded",
            "n",
            "-an",
            "--zero",
            "n",
            "-i2",
            "-I8k",
            "-L",
            "16M",
            "-n",
            "lv0",
            "vg0",
        ],
    );
    assert_eq!(pvs_pe_start(&prefix, &p2), 1 << 20);
    img
}
