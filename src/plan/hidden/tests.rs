//! The commands run by sh on a file holding volumes the real mkfs tools
//! made (tests/fixtures/fs), read back by the same readers as check.

use super::*;
use crate::iolimits::Topology;
use crate::stack::{walk_region, Pending, Region};
use std::rc::Rc;

const MIB: u64 = 1 << 20;

pub(crate) fn fixture(name: &str) -> Vec<u8> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fs/");
    std::fs::read(format!("{dir}{name}.bin")).unwrap()
}

/// The volume layer the walk finds at `at` of `disk` (`len` bytes).
pub(crate) fn layer(disk: &[u8], at: u64, len: u64) -> Layer {
    let r = Region {
        src: Rc::new(disk.to_vec()),
        device: "d".into(),
        offset: at,
        len,
        below: Topology::IMAGE_DEFAULT,
    };
    walk_region(&r, &mut Pending::default()).unwrap()
}

pub(crate) fn put(disk: &mut [u8], at: u64, bytes: &[u8]) {
    disk[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
}

/// `sh -c CMD`: exit status and what it printed.
pub(crate) fn sh(cmd: &str) -> (i32, String) {
    let out = std::process::Command::new("sh")
        .args(["-c", cmd])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

/// A 4 MiB disk with `boot` (a volume's first sectors) at sector 63 and
/// again at `backup` sectors in, its start recorded as 63 by `record`.
pub(crate) fn disk_with(boot: &[u8], backup: u64, record: &dyn Fn(&mut Vec<u8>)) -> Vec<u8> {
    let mut b = boot.to_vec();
    record(&mut b);
    let mut disk = vec![0u8; 4 * MIB as usize];
    put(&mut disk, 63 * 512, &b);
    put(&mut disk, (63 + backup) * 512, &b);
    disk
}

/// The volume's move from sector 63 to 2048 of `disk`, the copy made,
/// then the command run on the file: twice, and on a copy of the disk
/// where the volume's serial differs (nothing written then).
fn moved(disk: &[u8], volume_len: u64, name: &str) -> (Vec<u8>, HiddenSectors, String) {
    let l = layer(disk, 63 * 512, volume_len);
    let b = BootVolume::of(&l, 0).unwrap();
    let h = planned(&b, 63 * 512, MIB, volume_len).unwrap();
    assert_eq!(h.volume, name);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("d.img");
    let file = f.to_str().unwrap();
    std::fs::write(&f, disk).unwrap();
    let check = h.check_command(file, 63 * 512, Voice::Printed);
    assert_eq!(sh(&check).0, 0, "{check}");
    let mut copied = disk.to_vec();
    copied.copy_within(63 * 512..(63 * 512 + volume_len as usize), MIB as usize);
    std::fs::write(&f, &copied).unwrap();
    let cmd = h.write_command(file, MIB, Voice::Printed);
    let (code, out) = sh(&cmd);
    assert_eq!(code, 0, "{cmd}\n{out}");
    assert!(out.contains("into its boot sector"), "{out}");
    let once = std::fs::read(&f).unwrap();
    let (code, out) = sh(&cmd);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("already record its start as 2048"), "{out}");
    assert!(std::fs::read(&f).unwrap() == once, "written twice");
    (once, h, cmd)
}

fn le32(b: &[u8], at: u64) -> u32 {
    u32::from_le_bytes(b[at as usize..at as usize + 4].try_into().unwrap())
}

/// FAT32 (mkfs.fat -F 32 -s 1, backup in sector 6): both boot sectors
/// get 2048, the volume read back records it, its backup still the same.
#[test]
fn a_fat32_gets_its_start_in_both_boot_sectors() {
    let disk = disk_with(&fixture("fat32-s1"), 6, &|b| {
        put(b, 0x1c, &63u32.to_le_bytes())
    });
    let l = layer(&disk, 63 * 512, 2 * MIB);
    assert_eq!(
        l.filesystem()
            .unwrap()
            .volume
            .as_ref()
            .unwrap()
            .backup
            .state,
        BackupState::Same
    );
    let (after, h, _) = moved(&disk, 2 * MIB, "FAT32");
    assert_eq!(h.at_bytes, [0, 3072]);
    assert_eq!((h.from, h.to), (63, 2048));
    assert_eq!(le32(&after, MIB + 0x1c), 2048);
    assert_eq!(le32(&after, MIB + 3072 + 0x1c), 2048);
    let v = layer(&after, MIB, 2 * MIB);
    let v = v.filesystem().unwrap().volume.clone().unwrap();
    assert_eq!((v.hidden_sectors, v.start_sectors), (2048, Some(2048)));
    assert_eq!(v.backup.state, BackupState::Same);
}

/// NTFS: the backup after the volume's last sector.
#[test]
fn an_ntfs_gets_its_start_in_its_backup_after_the_volume() {
    let boot = fixture("ntfs-c4096");
    let sectors = u64::from_le_bytes(boot[0x28..0x30].try_into().unwrap());
    // The fixture's volume is 64 MiB: keep its boot sector, count 2 MiB.
    let mut b = boot.clone();
    put(&mut b, 0x28, &4095u64.to_le_bytes());
    put(&mut b, 56, &8u64.to_le_bytes());
    assert!(sectors > 4095);
    let disk = disk_with(&b, 4095, &|b| put(b, 0x1c, &63u32.to_le_bytes()));
    let (after, h, _) = moved(&disk, 2 * MIB, "NTFS");
    assert_eq!(h.at_bytes, [0, 4095 * 512]);
    assert_eq!(le32(&after, MIB + 0x1c), 2048);
    assert_eq!(le32(&after, MIB + 4095 * 512 + 0x1c), 2048);
}

/// exFAT: PartitionOffset in both boot regions, whose checksum sectors
/// are made again; a run killed between the field and the checksum is
/// finished by the next.
#[test]
fn an_exfat_gets_its_offset_and_its_checksums_again() {
    let record = |b: &mut Vec<u8>| {
        put(b, 64, &63u64.to_le_bytes());
        let sum = crate::stack::exfat_boot_checksum(b, 512).unwrap();
        for k in 0..128 {
            put(b, 11 * 512 + 4 * k, &sum.to_le_bytes());
        }
    };
    let disk = disk_with(&fixture("exfat-c4K"), 12, &record);
    let (after, h, cmd) = moved(&disk, 2 * MIB, "exFAT");
    assert_eq!(h.at_bytes, [0, 6144]);
    for base in [MIB, MIB + 6144] {
        let region = &after[base as usize..base as usize + 6144];
        let x = crate::stack::parse_exfat(region).unwrap();
        assert_eq!(x.volume_offset, 2048, "{base}");
    }
    // The field written, the checksum not yet: the command finishes it.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("d.img");
    let mut half = disk.clone();
    half.copy_within(63 * 512..63 * 512 + 2 * MIB as usize, MIB as usize);
    put(&mut half, MIB + 64, &2048u64.to_le_bytes());
    std::fs::write(&f, &half).unwrap();
    let cmd = cmd.replace(
        std::path::Path::new(&cmd_file(&cmd)).to_str().unwrap(),
        f.to_str().unwrap(),
    );
    let (code, out) = sh(&cmd);
    assert_eq!(code, 0, "{out}");
    assert!(std::fs::read(&f).unwrap() == after);
}

/// The file a command reads (its first `dd if=`).
fn cmd_file(cmd: &str) -> String {
    let at = cmd.find("dd if=").unwrap() + 6;
    cmd[at..].split(' ').next().unwrap().to_string()
}

/// Nothing is written where the bytes are not the volume read: another
/// serial, a field that records something else, a checksum that does not
/// match; and the check before the copy says why, writing nothing.
#[test]
fn another_volume_or_another_start_gets_nothing() {
    let disk = disk_with(&fixture("fat32-s1"), 6, &|b| {
        put(b, 0x1c, &63u32.to_le_bytes())
    });
    let l = layer(&disk, 63 * 512, 2 * MIB);
    let b = BootVolume::of(&l, 0).unwrap();
    let h = planned(&b, 63 * 512, MIB, 2 * MIB).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("d.img");
    let file = f.to_str().unwrap();
    for (what, at, bytes) in [
        ("another serial", 63 * 512 + 67, vec![0u8; 4]),
        (
            "another start",
            63 * 512 + 0x1c,
            99u32.to_le_bytes().to_vec(),
        ),
        (
            "a backup of another start",
            69 * 512 + 0x1c,
            vec![1, 0, 0, 0],
        ),
    ] {
        let mut d = disk.clone();
        put(&mut d, at, &bytes);
        std::fs::write(&f, &d).unwrap();
        let (code, out) = sh(&h.check_command(file, 63 * 512, Voice::Printed));
        assert_eq!(code, 1, "{what}: {out}");
        assert!(out.contains("nothing done"), "{what}: {out}");
        let mut moved = d.clone();
        moved.copy_within(63 * 512..63 * 512 + 2 * MIB as usize, MIB as usize);
        std::fs::write(&f, &moved).unwrap();
        let (code, out) = sh(&h.write_command(file, MIB, Voice::Printed));
        assert_eq!(code, 1, "{what}: {out}");
        assert!(out.contains("nothing written"), "{what}: {out}");
        assert!(std::fs::read(&f).unwrap() == moved, "{what}: written");
    }
}

/// No rewrite where the boot sector records no start (0), one that is
/// not the old start, or one beyond the field's 32 bits; in the device's
/// sectors where it counts in those (mkfs.fat -S 4096 on a 512 disk).
#[test]
fn what_is_rewritten_and_in_which_sectors() {
    let b = |hidden: u64, sector: u64| BootVolume {
        kind: FsKind::Vfat,
        volume: Volume {
            fat_type: Some(crate::stack::FatType::Fat32),
            cluster_bytes: 4096,
            cluster_count: 1000,
            fat_offset_bytes: None,
            data_offset_bytes: 0,
            data_start_bytes: 0,
            mft_offset_bytes: None,
            hidden_sectors: hidden,
            start_sectors: None,
            span_bytes: MIB,
            region_bytes: MIB,
            label: None,
            serial: None,
            backup: crate::stack::Backup::default(),
        },
        sector,
        into: 0,
        lbs: 512,
    };
    let (old, new) = (63 * 512, MIB);
    assert!(planned(&b(0, 512), old, new, MIB).is_none());
    assert!(planned(&b(64, 512), old, new, MIB).is_none());
    assert!(planned(&b(63, 512), old, old, MIB).is_none());
    assert_eq!(planned(&b(63, 512), old, new, MIB).unwrap().to, 2048);
    // 4096-byte sectors counted in 512-byte ones, and in their own.
    assert_eq!(planned(&b(64, 4096), 64 * 512, new, MIB).unwrap().to, 2048);
    assert_eq!(planned(&b(8, 4096), 64 * 512, new, MIB).unwrap().to, 256);
    assert!(planned(&b(63, 512), old, 1 << 42, MIB).is_none());
    let h = planned(&b(63, 512), old, new, MIB).unwrap();
    assert_eq!(h.at_bytes, [0], "no backup read: the main one only");
}
