//! Writes md RAID member superblocks (v0.90, v1.0, v1.1, v1.2) the way
//! mdadm lays them out, since `mdadm --create` needs the md driver this
//! kernel lacks. `mdadm --examine FILE` accepts what this writes.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// One member's geometry.
pub struct Member<'a> {
    pub version: &'a str,
    pub level: i32,
    pub layout: u32,
    pub chunk_bytes: u32,
    pub raid_disks: u32,
    pub role: u32,
    /// v1.x only (v0.90 data always starts at 0).
    pub data_offset_sectors: u64,
    pub data_size_sectors: u64,
    pub uuid: [u8; 16],
    pub name: &'a str,
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn fold(sum: u64) -> u32 {
    ((sum & 0xffff_ffff) + (sum >> 32)) as u32
}

/// Write `m`'s superblock into the member file or device at `path`.
pub fn write(path: &Path, m: &Member) {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let size = f.metadata().unwrap().len();
    let size = if size == 0 {
        // A block device: ask for its size.
        let out = std::process::Command::new("blockdev")
            .args(["--getsize64"])
            .arg(path)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    } else {
        size
    };
    let sectors = size / 512;
    if m.version == "0.90" {
        let at = ((sectors & !127) - 128) * 512;
        let mut b = vec![0u8; 4096];
        let w = |b: &mut [u8], i: usize, v: u32| put32(b, 4 * i, v);
        let u = |i: usize| u32::from_le_bytes(m.uuid[4 * i..4 * i + 4].try_into().unwrap());
        w(&mut b, 0, 0xa92b_4efc);
        w(&mut b, 1, 0);
        w(&mut b, 2, 90);
        w(&mut b, 5, u(0));
        w(&mut b, 6, 1_700_000_000);
        w(&mut b, 7, m.level as u32);
        w(&mut b, 8, (m.data_size_sectors / 2) as u32);
        w(&mut b, 9, m.raid_disks);
        w(&mut b, 10, m.raid_disks);
        w(&mut b, 13, u(1));
        w(&mut b, 14, u(2));
        w(&mut b, 15, u(3));
        w(&mut b, 32, 1_700_000_000); // utime
        w(&mut b, 33, 1); // state: clean
        w(&mut b, 34, m.raid_disks);
        w(&mut b, 35, m.raid_disks);
        w(&mut b, 39, 1); // events_lo
        w(&mut b, 64, m.layout);
        w(&mut b, 65, m.chunk_bytes);
        // disks[i] at word 128 + 32 i, this_disk at word 992: number, major, minor, raid_disk, state.
        for i in 0..m.raid_disks as usize {
            let d = 128 + 32 * i;
            w(&mut b, d, i as u32);
            w(&mut b, d + 3, i as u32);
            w(&mut b, d + 4, 6); // active, sync
        }
        w(&mut b, 992, m.role);
        w(&mut b, 995, m.role);
        w(&mut b, 996, 6);
        let sum: u64 = (0..1024)
            .map(|i| u64::from(u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().unwrap())))
            .sum();
        w(&mut b, 38, fold(sum));
        f.write_all_at(&b, at).unwrap();
        return;
    }
    let at = match m.version {
        "1.0" => ((sectors - 16) & !7) * 512,
        "1.1" => 0,
        "1.2" => 4096,
        v => panic!("unknown md version {v}"),
    };
    let max_dev = m.raid_disks.max(1);
    let mut b = vec![0u8; 1024];
    put32(&mut b, 0, 0xa92b_4efc);
    put32(&mut b, 4, 1);
    b[16..32].copy_from_slice(&m.uuid);
    let name = m.name.as_bytes();
    b[32..32 + name.len().min(32)].copy_from_slice(&name[..name.len().min(32)]);
    put64(&mut b, 64, 1_700_000_000);
    put32(&mut b, 72, m.level as u32);
    put32(&mut b, 76, m.layout);
    put64(&mut b, 80, m.data_size_sectors);
    put32(&mut b, 88, m.chunk_bytes / 512);
    put32(&mut b, 92, m.raid_disks);
    put64(&mut b, 128, m.data_offset_sectors);
    put64(&mut b, 136, m.data_size_sectors);
    put64(&mut b, 144, at / 512);
    put32(&mut b, 160, m.role);
    b[168..184].copy_from_slice(&[m.role as u8 + 1; 16]);
    put64(&mut b, 192, 1_700_000_000);
    put64(&mut b, 200, 1); // events
    put64(&mut b, 208, u64::MAX); // resync_offset: clean
    put32(&mut b, 220, max_dev);
    for i in 0..max_dev as usize {
        b[256 + 2 * i..258 + 2 * i].copy_from_slice(&(i as u16).to_le_bytes());
    }
    let len = 256 + 2 * max_dev as usize;
    let mut sum = 0u64;
    let mut i = 0;
    while i + 4 <= len {
        sum += u64::from(u32::from_le_bytes(b[i..i + 4].try_into().unwrap()));
        i += 4;
    }
    if i < len {
        sum += u64::from(u16::from_le_bytes(b[i..i + 2].try_into().unwrap()));
    }
    put32(&mut b, 216, fold(sum));
    f.write_all_at(&b[..len.div_ceil(512) * 512], at).unwrap();
}

/// Rewrite the u32 at `field` of the v1.x superblock at byte `at` of `path`
/// and fix its checksum, the way a crafted (but checksum-valid) superblock
/// would look.
pub fn patch_v1(path: &Path, at: u64, field: usize, value: u32) {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = vec![0u8; 1024];
    f.read_exact_at(&mut b, at).unwrap();
    put32(&mut b, field, value);
    let max_dev = u32::from_le_bytes(b[220..224].try_into().unwrap()) as usize;
    let len = 256 + 2 * max_dev;
    let mut sum = 0u64;
    let mut i = 0;
    while i + 4 <= len {
        if i != 216 {
            sum += u64::from(u32::from_le_bytes(b[i..i + 4].try_into().unwrap()));
        }
        i += 4;
    }
    if i < len {
        sum += u64::from(u16::from_le_bytes(b[i..i + 2].try_into().unwrap()));
    }
    put32(&mut b, 216, fold(sum));
    f.write_all_at(&b, at).unwrap();
}

/// A RAID0 member of `disks`, chunk 64 KiB, 16 MiB of data.
pub fn member(version: &str, disks: u32, role: u32, data_offset_sectors: u64) -> Member<'_> {
    Member {
        version,
        level: 0,
        layout: 0,
        chunk_bytes: 65536,
        raid_disks: disks,
        role,
        data_offset_sectors,
        data_size_sectors: 16 << 11,
        uuid: [0x5a; 16],
        name: "test:0",
    }
}

/// RAID0 member images of 20 MiB (one per offset), chunk 64 KiB, holding
/// `data` laid out chunk by chunk as md does.
pub fn raid0_members(dir: &Path, version: &str, offsets: &[u64], data: &[u8]) -> Vec<PathBuf> {
    let n = offsets.len();
    (0..n)
        .map(|role| {
            let p = super::image(dir, &format!("m{role}.img"), 20 << 20);
            write(&p, &member(version, n as u32, role as u32, offsets[role]));
            let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            let start = if version == "0.90" || version == "1.0" {
                0
            } else {
                offsets[role] * 512
            };
            for (c, chunk) in data.chunks(65536).enumerate() {
                if c % n == role {
                    f.write_all_at(chunk, start + (c / n) as u64 * 65536)
                        .unwrap();
                }
            }
            p
        })
        .collect()
}
