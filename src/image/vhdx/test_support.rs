//! Test helpers the VHDX files share: an image laid out as qemu-img lays
//! one out, built with its checksums, and opening it from memory.

use super::bat::FULLY_PRESENT;
use super::metadata::Item;
use super::regions::{
    BAT_GUID, HEADER_AT, HEADER_BYTES, METADATA_GUID, REGION_TABLE_AT, REGION_TABLE_BYTES,
};
use super::{crc32c_without, open, KIB, MIB};
use crate::image::{Chain, ImageError, MemFiles, Opened};
use std::io;
use std::path::Path;
use std::rc::Rc;

/// A VHDX laid out as qemu-img lays one out: log at 1 MiB, BAT at
/// 2 MiB, metadata at 3 MiB, payload blocks from 4 MiB.
pub(super) struct Build {
    pub(super) block: u32,
    pub(super) logical: u32,
    pub(super) physical: u32,
    pub(super) size: u64,
    pub(super) flags: u32,
    /// BAT entries set: (index, state, payload fill byte for state 6).
    pub(super) entries: Vec<(u64, u64, u8)>,
}

impl Default for Build {
    fn default() -> Self {
        Build {
            block: MIB as u32,
            logical: 512,
            physical: 4096,
            size: 8 * MIB,
            flags: 0,
            entries: vec![(1, FULLY_PRESENT, 0x44), (2, 2, 0)],
        }
    }
}

pub(super) fn seal(b: &mut [u8]) {
    let crc = crc32c_without(b, 4);
    b[4..8].copy_from_slice(&crc.to_le_bytes());
}

pub(super) fn put(img: &mut [u8], at: u64, bytes: &[u8]) {
    img[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
}

pub(super) fn header(sequence: u64, log_guid: [u8; 16]) -> Vec<u8> {
    let mut h = vec![0u8; HEADER_BYTES as usize];
    h[..4].copy_from_slice(b"head");
    h[8..16].copy_from_slice(&sequence.to_le_bytes());
    h[48..64].copy_from_slice(&log_guid);
    h[66..68].copy_from_slice(&1u16.to_le_bytes());
    h[68..72].copy_from_slice(&(MIB as u32).to_le_bytes());
    h[72..80].copy_from_slice(&MIB.to_le_bytes());
    seal(&mut h);
    h
}

pub(super) fn region_table() -> Vec<u8> {
    let mut t = vec![0u8; REGION_TABLE_BYTES as usize];
    t[..4].copy_from_slice(b"regi");
    t[8..12].copy_from_slice(&2u32.to_le_bytes());
    for (i, (g, at)) in [(BAT_GUID, 2 * MIB), (METADATA_GUID, 3 * MIB)]
        .iter()
        .enumerate()
    {
        let e = 16 + 32 * i;
        t[e..e + 16].copy_from_slice(g);
        t[e + 16..e + 24].copy_from_slice(&at.to_le_bytes());
        t[e + 24..e + 28].copy_from_slice(&(MIB as u32).to_le_bytes());
        t[e + 28..e + 32].copy_from_slice(&1u32.to_le_bytes());
    }
    seal(&mut t);
    t
}

impl Build {
    fn metadata(&self) -> Vec<u8> {
        let mut m = vec![0u8; 128 * KIB as usize];
        m[..8].copy_from_slice(b"metadata");
        m[10..12].copy_from_slice(&5u16.to_le_bytes());
        let items = [
            (
                Item::FileParameters,
                [self.block.to_le_bytes(), self.flags.to_le_bytes()].concat(),
            ),
            (Item::VirtualDiskSize, self.size.to_le_bytes().to_vec()),
            (Item::Page83, vec![9; 16]),
            (Item::LogicalSectorSize, self.logical.to_le_bytes().to_vec()),
            (
                Item::PhysicalSectorSize,
                self.physical.to_le_bytes().to_vec(),
            ),
        ];
        let mut offset = 64 * KIB as usize;
        for (i, (item, value)) in items.iter().enumerate() {
            let e = 32 + 32 * i;
            m[e..e + 16].copy_from_slice(&item.guid());
            m[e + 16..e + 20].copy_from_slice(&(offset as u32).to_le_bytes());
            m[e + 20..e + 24].copy_from_slice(&(value.len() as u32).to_le_bytes());
            m[e + 24..e + 28].copy_from_slice(&4u32.to_le_bytes());
            m[offset..offset + value.len()].copy_from_slice(value);
            offset += value.len();
        }
        m
    }

    pub(super) fn bytes(&self) -> Vec<u8> {
        let present = self.entries.iter().filter(|e| e.1 == FULLY_PRESENT).count() as u64;
        let mut img = vec![0u8; (4 * MIB + present * u64::from(self.block)) as usize];
        put(&mut img, 0, b"vhdxfile");
        put(&mut img, HEADER_AT[0], &header(1, [0; 16]));
        put(&mut img, HEADER_AT[1], &header(2, [0; 16]));
        put(&mut img, REGION_TABLE_AT[0], &region_table());
        put(&mut img, REGION_TABLE_AT[1], &region_table());
        put(&mut img, 3 * MIB, &self.metadata());
        let mut next = 4 * MIB;
        for &(index, state, fill) in &self.entries {
            let mut entry = state;
            if state == FULLY_PRESENT {
                entry |= next;
                img[next as usize..(next + u64::from(self.block)) as usize].fill(fill);
                next += u64::from(self.block);
            }
            put(&mut img, 2 * MIB + 8 * index, &entry.to_le_bytes());
        }
        img
    }
}

pub(super) fn open_mem(bytes: Vec<u8>) -> Result<Opened, ImageError> {
    let files = MemFiles::default();
    open(
        Rc::new(bytes),
        Path::new("/t.vhdx"),
        &mut Chain::new(&files),
    )
}

pub(super) fn error(bytes: Vec<u8>) -> String {
    match open_mem(bytes) {
        Ok(_) => panic!("opened"),
        Err(e) => e.to_string(),
    }
}

pub(super) fn read_guest(bytes: Vec<u8>, at: u64, len: usize) -> io::Result<Vec<u8>> {
    let g = open_mem(bytes).unwrap().guest.unwrap();
    let mut buf = vec![0xa5; len];
    g.read_exact_at(&mut buf, at).map(|_| buf)
}
