//! The FAT, exFAT and NTFS boot sector parsers (stack::parse_fat,
//! parse_exfat, parse_ntfs) on volumes made here by mkfs.fat, mkfs.exfat
//! and mkntfs over the options that move their layout, every field against
//! what the tools' own readers print: `fsck.fat -v -n` (dosfstools),
//! `dump.exfat` (exfatprogs), `ntfsinfo -m -f` (ntfs-3g), and blkid for the
//! serial.

mod common;
use common::*;
use diskalign::stack::{parse_exfat, parse_fat, parse_ntfs, FatType};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The first 48 KiB of a volume: a whole exFAT boot region of 4 KiB sectors.
fn head(path: &Path) -> Vec<u8> {
    bytes_at(path, 0, 48 << 10)
}

fn bytes_at(path: &Path, offset: u64, len: u64) -> Vec<u8> {
    let mut f = std::fs::File::open(path).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    let mut b = Vec::new();
    f.take(len).read_to_end(&mut b).unwrap();
    b
}

/// The first number on the line holding `label` (fsck.fat's "   N label").
fn before(txt: &str, label: &str) -> u64 {
    let line = txt.lines().find(|l| l.contains(label));
    let line = line.unwrap_or_else(|| panic!("no {label:?} in\n{txt}"));
    line.split_whitespace().next().unwrap().parse().unwrap()
}

/// The number after `label` ("Data area starts at byte N", "Label:\tN"),
/// decimal or 0x hex.
fn after(txt: &str, label: &str) -> u64 {
    let line = txt.lines().find(|l| l.trim_start().starts_with(label));
    let line = line.unwrap_or_else(|| panic!("no {label:?} in\n{txt}"));
    let v = line.trim_start()[label.len()..]
        .split_whitespace()
        .next()
        .unwrap();
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => v.parse().unwrap_or_else(|_| panic!("{line}")),
    }
}

/// blkid's UUID of the volume, its dashes dropped.
fn blkid_serial(path: &Path) -> String {
    let out = sh(
        "blkid",
        &["-p", "-o", "value", "-s", "UUID", path.to_str().unwrap()],
    );
    String::from_utf8_lossy(&out.stdout).trim().replace('-', "")
}

#[test]
fn fat_boot_sectors_read_as_fsck_fat_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, u64, &[&str])] = &[
        ("fat12", 8 << 20, &["-F", "12"]),
        ("fat16", 64 << 20, &["-F", "16"]),
        ("fat16-4k", 256 << 20, &["-F", "16", "-S", "4096"]),
        ("fat32", 256 << 20, &["-F", "32"]),
        ("fat32-s1", 256 << 20, &["-F", "32", "-s", "1"]),
        ("fat32-s8", 256 << 20, &["-F", "32", "-s", "8"]),
        ("fat32-s8-a", 256 << 20, &["-F", "32", "-s", "8", "-a"]),
        (
            "fat32-R33",
            256 << 20,
            &["-F", "32", "-s", "8", "-a", "-R", "33"],
        ),
        (
            "fat32-4k",
            512 << 20,
            &["-F", "32", "-S", "4096", "-h", "2048"],
        ),
        ("fat32-f1", 256 << 20, &["-F", "32", "-f", "1", "-h", "63"]),
    ];
    for &(name, size, opts) in cases {
        let img = image(dir.path(), name, size);
        let path = img.to_str().unwrap();
        sh("mkfs.fat", &[opts, &[path]].concat());
        let (_, txt) = sh_status("fsck.fat", &["-v", "-n", path]);
        let f = parse_fat(&head(&img)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let bits = match f.fat_type {
            FatType::Fat12 => 12,
            FatType::Fat16 => 16,
            FatType::Fat32 => 32,
        };
        assert_eq!(format!("-F {bits}"), format!("{} {}", opts[0], opts[1]));
        assert!(
            txt.contains(&format!("{bits} bit entries")),
            "{name}: {txt}"
        );
        assert_eq!(
            u64::from(f.bytes_per_sector),
            before(&txt, "bytes per logical sector")
        );
        assert_eq!(
            f.cluster_bytes(),
            before(&txt, "bytes per cluster"),
            "{name}"
        );
        assert_eq!(
            u64::from(f.reserved_sectors),
            before(&txt, "reserved sector")
        );
        assert_eq!(u64::from(f.fats), before(&txt, "FATs,"), "{name}");
        let fat_bytes = f.fat_sectors * u64::from(f.bytes_per_sector);
        assert_eq!(fat_bytes, before(&txt, "bytes per FAT"), "{name}");
        assert_eq!(f.fat_offset_bytes, after(&txt, "First FAT starts at byte"));
        let data = after(&txt, "Data area starts at byte");
        assert_eq!(f.data_offset_bytes, data, "{name}");
        assert_eq!(f.cluster_count, before(&txt, "data clusters"), "{name}");
        assert_eq!(u64::from(f.hidden_sectors), before(&txt, "hidden sectors"));
        assert_eq!(f.total_sectors, before(&txt, "sectors total"), "{name}");
        assert_eq!(f.size_bytes(), size, "{name}");
        if let Some(root) = f.root_cluster {
            assert_eq!(
                u64::from(root),
                after(&txt, "Root directory start at cluster")
            );
        } else {
            assert_eq!(
                u64::from(f.root_entries),
                before(&txt, "root directory entries")
            );
        }
        let serial = format!("{:08X}", f.serial.unwrap());
        assert_eq!(serial, blkid_serial(&img), "{name}");
    }
}

#[test]
fn exfat_boot_regions_read_as_dump_exfat_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, u64, &[&str])] = &[
        ("c4k", 256 << 20, &["-c", "4K"]),
        ("c128k", 256 << 20, &["-c", "128K"]),
        ("b1m", 256 << 20, &["-b", "1M"]),
        ("b16m", 256 << 20, &["-c", "32K", "-b", "16M"]),
        ("64g", 64 << 30, &[]),
    ];
    for &(name, size, opts) in cases {
        let img = image(dir.path(), name, size);
        let path = img.to_str().unwrap();
        sh("mkfs.exfat", &[opts, &[path]].concat());
        let out = sh("dump.exfat", &[path]);
        let txt = String::from_utf8_lossy(&out.stdout);
        let x = parse_exfat(&head(&img)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(x.volume_length, after(&txt, "Volume Length(sectors):"));
        assert_eq!(
            u64::from(x.fat_offset),
            after(&txt, "FAT Offset(sector offset):")
        );
        assert_eq!(u64::from(x.fat_length), after(&txt, "FAT Length(sectors):"));
        let heap = after(&txt, "Cluster Heap Offset (sector offset):");
        assert_eq!(u64::from(x.cluster_heap_offset), heap, "{name}");
        assert_eq!(u64::from(x.cluster_count), after(&txt, "Cluster Count:"));
        assert_eq!(
            u64::from(x.root_cluster),
            after(&txt, "Root Cluster (cluster offset):")
        );
        assert_eq!(u64::from(x.serial), after(&txt, "Volume Serial:"), "{name}");
        let bits = after(&txt, "Sector Size Bits:");
        assert_eq!(u64::from(x.bytes_per_sector_shift), bits);
        let spc = after(&txt, "Sector per Cluster bits:");
        assert_eq!(u64::from(x.sectors_per_cluster_shift), spc, "{name}");
        assert_eq!(x.cluster_bytes(), after(&txt, "Cluster size:"), "{name}");
        assert_eq!(x.size_bytes(), size, "{name}");
        assert_eq!(format!("{:08X}", x.serial), blkid_serial(&img));
        // The backup boot region (sectors 12 to 23) carries the same sum.
        let sector = x.sector_bytes() as usize;
        let backup = &head(&img)[12 * sector..24 * sector];
        assert_eq!(parse_exfat(backup).map(|b| b.checksum), Ok(x.checksum));
    }
}

#[test]
fn ntfs_boot_sectors_read_as_ntfsinfo_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, u64, &[&str])] = &[
        ("c512", 64 << 20, &["-c", "512", "-p", "2048"]),
        ("c4096", 256 << 20, &["-c", "4096", "-p", "63"]),
        ("c65536", 256 << 20, &["-c", "65536"]),
        (
            "s4096",
            256 << 20,
            &["-s", "4096", "-c", "4096", "-p", "256"],
        ),
        ("c2m", 1 << 30, &["-c", "2097152"]),
    ];
    for &(name, size, opts) in cases {
        let img = image(dir.path(), name, size);
        let path = img.to_str().unwrap();
        sh("mkntfs", &[&["-F", "-Q", "-q"], opts, &[path]].concat());
        let out = sh("ntfsinfo", &["-m", "-f", path]);
        let txt = String::from_utf8_lossy(&out.stdout);
        let n = parse_ntfs(&head(&img)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let opt = |flag: &str| {
            let i = opts.iter().position(|&o| o == flag)?;
            opts[i + 1].parse::<u64>().ok()
        };
        assert_eq!(u64::from(n.bytes_per_sector), after(&txt, "Sector Size:"));
        assert_eq!(u64::from(n.bytes_per_sector), opt("-s").unwrap_or(512));
        assert_eq!(n.cluster_bytes(), after(&txt, "Cluster Size:"), "{name}");
        assert_eq!(Some(n.cluster_bytes()), opt("-c"));
        assert_eq!(n.clusters(), after(&txt, "Volume Size in Clusters:"));
        assert_eq!(n.mft_record_bytes, after(&txt, "MFT Record Size:"));
        let mft = after(&txt, "LCN of Data Attribute for FILE_MFT:");
        assert_eq!(n.mft_lcn, mft, "{name}");
        let mirr = after(&txt, "LCN of Data Attribute for File_MFTMirr:");
        assert_eq!(n.mftmirr_lcn, mirr, "{name}");
        assert_eq!(u64::from(n.hidden_sectors), opt("-p").unwrap_or(0));
        // mkntfs leaves the last sector out of the volume: its backup
        // boot sector, a copy of the first.
        let bps = u64::from(n.bytes_per_sector);
        assert_eq!(n.total_sectors, size / bps - 1, "{name}");
        let last = bytes_at(&img, size - bps, bps);
        assert_eq!(parse_ntfs(&last).as_ref(), Ok(&n), "{name}");
        assert_eq!(format!("{:016X}", n.serial), blkid_serial(&img));
    }
}
