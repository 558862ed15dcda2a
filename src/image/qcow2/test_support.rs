//! Test helpers the qcow2 files share: a small version 3 image built
//! field by field, opening it from memory, reading its guest and the one
//! line a refusal gives.

use super::cluster::Geometry;
use super::extensions::EXT_BACKING_FORMAT;
use super::header::{INCOMPAT_EXTL2, MAGIC};
use super::map::OFLAG_COPIED;
use crate::bytes::SharedReader;
use crate::image::{self, MemFiles, Opened};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

pub(super) const TOP: &str = "/vm/top.qcow2";

/// A small version 3 image, built field by field: the header in
/// cluster 0 (112 bytes, extensions after it), the L1 table in
/// cluster 1, one L2 table in cluster 2 (named by L1 entry 0), a data
/// cluster of `PATTERN` bytes in cluster 3, room for more after it.
pub(super) struct Img {
    pub(super) bytes: Vec<u8>,
    pub(super) cluster_bits: u32,
    pub(super) extended: bool,
    /// Where the next header extension goes.
    pub(super) ext_at: usize,
}

pub(super) fn pattern(i: usize) -> u8 {
    (i * 7 + i / 251) as u8
}

impl Img {
    pub(super) fn new(cluster_bits: u32, size: u64, extended: bool) -> Img {
        let c = 1usize << cluster_bits;
        let mut img = Img {
            bytes: vec![0; 8 * c],
            cluster_bits,
            extended,
            ext_at: 112,
        };
        img.put(0, MAGIC);
        img.u32(4, 3);
        img.u32(20, cluster_bits);
        img.u64(24, size);
        let span = Geometry {
            cluster_bits,
            extended,
        }
        .l1_span();
        img.u32(36, size.div_ceil(span) as u32);
        img.u64(40, c as u64);
        img.u32(96, 4);
        img.u32(100, 112);
        if extended {
            img.u64(72, INCOMPAT_EXTL2);
        }
        img.u64(c, (2 * c as u64) | OFLAG_COPIED);
        for i in 0..c {
            img.bytes[3 * c + i] = pattern(i);
        }
        img
    }
    fn c(&self) -> usize {
        1 << self.cluster_bits
    }
    pub(super) fn put(&mut self, at: usize, data: &[u8]) {
        if self.bytes.len() < at + data.len() {
            self.bytes.resize(at + data.len(), 0);
        }
        self.bytes[at..at + data.len()].copy_from_slice(data);
    }
    pub(super) fn u32(&mut self, at: usize, v: u32) {
        self.put(at, &v.to_be_bytes());
    }
    pub(super) fn u64(&mut self, at: usize, v: u64) {
        self.put(at, &v.to_be_bytes());
    }
    /// Set L2 entry `index` of the table in cluster 2 (and its bitmap).
    pub(super) fn l2(&mut self, index: usize, entry: u64, bitmap: u64) {
        let width = if self.extended { 16 } else { 8 };
        let at = 2 * self.c() + index * width;
        self.u64(at, entry);
        if self.extended {
            self.u64(at + 8, bitmap);
        }
    }
    /// The data cluster (cluster 3), allocated.
    pub(super) fn data(&self) -> u64 {
        (3 * self.c() as u64) | OFLAG_COPIED
    }
    pub(super) fn extension(&mut self, kind: u32, data: &[u8]) {
        let at = self.ext_at;
        self.u32(at, kind);
        self.u32(at + 4, data.len() as u32);
        self.put(at + 8, data);
        self.ext_at = at + 8 + data.len().next_multiple_of(8);
    }
    pub(super) fn backing(&mut self, name: &str, format: Option<&str>) {
        if let Some(f) = format {
            self.extension(EXT_BACKING_FORMAT, f.as_bytes());
        }
        self.u64(8, 400);
        self.u32(16, name.len() as u32);
        self.put(400, name.as_bytes());
    }
}

pub(super) fn files(img: &Img) -> MemFiles {
    MemFiles::default().with(TOP, img.bytes.clone())
}

pub(super) fn opened(files: &MemFiles) -> Opened {
    image::open(Path::new(TOP), files).unwrap_or_else(|e| panic!("{e}"))
}

pub(super) fn guest(img: &Img) -> SharedReader {
    opened(&files(img)).guest.expect("a guest")
}

pub(super) fn read(guest: &SharedReader, at: u64, len: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0xa5u8; len];
    guest.read_exact_at(&mut buf, at).map(|_| buf)
}

/// The one line `image::open` refuses `img` with, within a second.
pub(super) fn refused_by(files: &MemFiles) -> String {
    let t = Instant::now();
    let line = match image::open(Path::new(TOP), files) {
        Ok(_) => panic!("opened"),
        Err(e) => e.to_string(),
    };
    assert!(t.elapsed() < Duration::from_secs(1), "{line}");
    assert!(!line.contains('\n'), "{line}");
    line
}

pub(super) fn refused(img: &Img) -> String {
    refused_by(&files(img))
}

pub(super) fn header_error(img: &Img, at: u64, message: &str) {
    assert_eq!(
        refused(img),
        format!("{TOP}: qcow2 header at byte {at}: {message}")
    );
}
