//! Test helpers the VMDK files share: a small monolithicSparse file
//! built in memory, opening images from memory, and checks on what a
//! refusal names.

use super::header::{
    KDMV_CAPACITY, KDMV_DESCRIPTOR_OFFSET, KDMV_DESCRIPTOR_SIZE, KDMV_FLAGS, KDMV_GD_OFFSET,
    KDMV_GRAIN_SIZE, KDMV_GTES_PER_GT, KDMV_OVERHEAD, KDMV_VERSION,
};
use crate::image::{ImageError, MemFiles, Opened};
use std::path::Path;
use std::time::{Duration, Instant};

const GRAIN: u64 = 8; // sectors: 4 KiB grains
const GTES: u32 = 4;

/// A small monolithicSparse file: 64 sectors in 8 grains of 4 KiB, two
/// grain tables of 4 entries. Sector 0 header, 1 descriptor, 2 GD,
/// 3 and 4 the grain tables, grains from sector 8 on. `grains` gives
/// (grain index, its GTE); a GTE of 8 + 8k holds bytes of value k + 1.
pub(super) struct Sparse {
    pub(super) bytes: Vec<u8>,
}

impl Sparse {
    pub(super) fn new(flags: u32, grains: &[(usize, u32)], descriptor: &str) -> Self {
        let mut bytes = vec![0u8; 8 * 512];
        bytes[..4].copy_from_slice(b"KDMV");
        let mut s = Sparse { bytes };
        s.put32(KDMV_VERSION, 1);
        s.put32(KDMV_FLAGS, flags);
        s.put64(KDMV_CAPACITY, 64);
        s.put64(KDMV_GRAIN_SIZE, GRAIN);
        s.put64(KDMV_DESCRIPTOR_OFFSET, 1);
        s.put64(KDMV_DESCRIPTOR_SIZE, 1);
        s.put32(KDMV_GTES_PER_GT, GTES);
        s.put64(KDMV_GD_OFFSET, 2);
        s.put64(KDMV_OVERHEAD, 8);
        s.bytes[512..512 + descriptor.len()].copy_from_slice(descriptor.as_bytes());
        s.put32(1024, 3);
        s.put32(1028, 4);
        for &(index, gte) in grains {
            s.put32((3 + index / 4) * 512 + index % 4 * 4, gte);
            if (8..1000).contains(&gte) {
                let at = gte as usize * 512;
                let end = at + 4096;
                if s.bytes.len() < end {
                    s.bytes.resize(end, 0);
                }
                s.bytes[at..end].fill((gte / 8) as u8);
            }
        }
        s
    }
    pub(super) fn put32(&mut self, at: usize, v: u32) {
        self.bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
    pub(super) fn put64(&mut self, at: usize, v: u64) {
        self.bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
}

pub(super) fn open_mem(files: MemFiles, top: &str) -> Result<Opened, ImageError> {
    crate::image::open(Path::new(top), &files)
}

pub(super) fn open_one(bytes: Vec<u8>) -> Result<Opened, ImageError> {
    open_mem(
        MemFiles::default().with("/vm/disk.vmdk", bytes),
        "/vm/disk.vmdk",
    )
}

pub(super) fn guest_bytes(o: &Opened) -> Vec<u8> {
    let g = o.guest.clone().unwrap();
    let mut buf = vec![0xa5u8; g.len() as usize];
    g.read_exact_at(&mut buf, 0).unwrap();
    buf
}

/// The error's line names all of `names`, and came quickly.
pub(super) fn refused(r: Result<Opened, ImageError>, names: &[&str]) -> String {
    let e = match r {
        Ok(_) => panic!("opened, expected {names:?}"),
        Err(e) => e.to_string(),
    };
    for n in names {
        assert!(e.contains(n), "{e:?} does not name {n:?}");
    }
    e
}

pub(super) fn timed<T>(f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let t = f();
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "took {:?}",
        start.elapsed()
    );
    t
}

pub(super) fn descriptor(lines: &str) -> Vec<u8> {
    format!("# Disk DescriptorFile\nversion=1\ncreateType=\"custom\"\n{lines}").into_bytes()
}
