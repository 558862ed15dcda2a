//! dm-thin pool metadata read from the bytes of a pool's `_tmeta` LV: the
//! superblock, the two-level data-mapping btree, and from them the map of a
//! thin LV's first virtual blocks onto the pool's data LV. Layout and
//! checksums as the kernel writes them (torvalds/linux
//! drivers/md/dm-thin-metadata.c: `struct thin_disk_superblock`,
//! `sb_check`, `pack_block_time`; drivers/md/persistent-data/
//! dm-btree-internal.h: `struct node_header`, `value_base`;
//! dm-block-manager.c `dm_bm_checksum`), and as thin-provisioning-tools'
//! `thin_dump` reads them (jthornber/thin-provisioning-tools
//! src/thin/superblock.rs `unpack`, src/pdata/btree.rs `unpack_node`,
//! src/checksum.rs), which the tests agree with.

use crate::bytes::{le_u32, le_u64, read_bytes, Mapped, ParseError, ReadAt, SharedReader};
use std::rc::Rc;

const LAYER: &str = "dm-thin metadata";
/// Every metadata block is 4 KiB (`THIN_METADATA_BLOCK_SIZE`).
pub const META_BLOCK: u64 = 4096;
/// `THIN_SUPERBLOCK_MAGIC`.
const MAGIC: u64 = 27_022_010;
/// XORed into the CRC-32C of a block (`SUPERBLOCK_CSUM_XOR` in
/// dm-thin-metadata.c, `BTREE_CSUM_XOR` in dm-btree-internal.h).
pub const SUPERBLOCK_XOR: u32 = 160_774;
pub const NODE_XOR: u32 = 121_107;
const INTERNAL: u32 = 1;
const LEAF: u32 = 2;
/// Real trees are 3 or 4 levels deep even for petabyte pools.
const MAX_DEPTH: usize = 16;
/// Nodes read for one map: enough for the first `MAX_MAPPINGS` blocks.
const MAX_NODES: usize = 2048;
/// Mappings kept per thin LV: its first blocks are what the readers above
/// need (superblocks, labels); the rest is said to be unknown, not zeros.
pub const MAX_MAPPINGS: usize = 1 << 16;

/// What the superblock (metadata block 0) says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThinSuperblock {
    pub transaction_id: u64,
    /// The pool's chunk in bytes (`data_block_size`, in sectors on disk).
    pub data_block_bytes: u64,
    pub data_mapping_root: u64,
    pub metadata_blocks: u64,
}

/// The CRC the kernel stores: `crc32c(~0, block[4..]) ^ xor` without the
/// final inversion standard CRC-32C applies (dm_bm_checksum).
pub fn block_checksum(block: &[u8], xor: u32) -> u32 {
    const C: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);
    C.checksum(&block[4..]) ^ 0xFFFF_FFFF ^ xor
}

fn block(meta: &dyn ReadAt, n: u64) -> Result<Vec<u8>, ParseError> {
    let at = n
        .checked_mul(META_BLOCK)
        .ok_or_else(|| ParseError::new(LAYER, u64::MAX, format!("block {n} is out of range")))?;
    read_bytes(meta, LAYER, at, META_BLOCK)
}

pub fn superblock(meta: &dyn ReadAt) -> Result<ThinSuperblock, ParseError> {
    let b = block(meta, 0)?;
    let bad = |at: u64, m: String| Err(ParseError::new(LAYER, at, m));
    if le_u64(&b, 32) != MAGIC {
        return bad(32, "no dm-thin superblock magic".into());
    }
    let (stored, want) = (le_u32(&b, 0), block_checksum(&b, SUPERBLOCK_XOR));
    if stored != want {
        return bad(
            0,
            format!("superblock checksum {stored:#x}, computed {want:#x}"),
        );
    }
    let sectors = le_u32(&b, 336);
    if sectors == 0 || le_u32(&b, 340) != 8 {
        return bad(336, "data or metadata block size is not plausible".into());
    }
    Ok(ThinSuperblock {
        transaction_id: le_u64(&b, 48),
        data_block_bytes: u64::from(sectors) * 512,
        data_mapping_root: le_u64(&b, 320),
        metadata_blocks: le_u64(&b, 344),
    })
}

/// One btree node, checked: its keys and its 8-byte values.
struct Node {
    leaf: bool,
    keys: Vec<u64>,
    values: Vec<u64>,
}

fn node(meta: &dyn ReadAt, n: u64) -> Result<Node, ParseError> {
    let b = block(meta, n)?;
    let at = n * META_BLOCK;
    let bad = |o: u64, m: String| Err(ParseError::new(LAYER, at + o, m));
    let (stored, want) = (le_u32(&b, 0), block_checksum(&b, NODE_XOR));
    if stored != want {
        return bad(
            0,
            format!("btree node {n}: checksum {stored:#x}, computed {want:#x}"),
        );
    }
    let flags = le_u32(&b, 4);
    if le_u64(&b, 8) != n {
        return bad(
            8,
            format!("btree node {n} says it is block {}", le_u64(&b, 8)),
        );
    }
    let (count, max, size) = (
        le_u32(&b, 16) as usize,
        le_u32(&b, 20) as usize,
        le_u32(&b, 24),
    );
    // Both trees hold 8-byte values (block numbers, packed block times).
    if !matches!(flags, INTERNAL | LEAF) || size != 8 || count > max || 32 + max * 16 > 4096 {
        return bad(
            4,
            format!("btree node {n}: flags {flags}, {count} of {max} entries of {size} bytes"),
        );
    }
    let keys: Vec<u64> = (0..count).map(|i| le_u64(&b, 32 + 8 * i)).collect();
    if keys.windows(2).any(|w| w[0] >= w[1]) {
        return bad(32, format!("btree node {n}: keys out of order"));
    }
    let base = 32 + 8 * max;
    let values = (0..count).map(|i| le_u64(&b, base + 8 * i)).collect();
    Ok(Node {
        leaf: flags == LEAF,
        keys,
        values,
    })
}

/// The value under `key` in the tree at `root` (btree_lookup: the greatest
/// key at or below in internal nodes, an exact one in a leaf).
fn lookup(meta: &dyn ReadAt, root: u64, key: u64) -> Result<Option<u64>, ParseError> {
    let mut at = root;
    for _ in 0..MAX_DEPTH {
        let n = node(meta, at)?;
        let i = n.keys.partition_point(|&k| k <= key);
        if n.leaf {
            return Ok((i > 0 && n.keys[i - 1] == key).then(|| n.values[i - 1]));
        }
        if i == 0 {
            return Ok(None);
        }
        at = n.values[i - 1];
    }
    Err(ParseError::new(
        LAYER,
        root * META_BLOCK,
        "btree deeper than 16 levels",
    ))
}

/// The first mappings of one thin device: (virtual block, data block) in
/// key order, and whether the walk stopped at a limit (then blocks after
/// the last one are unknown, not unprovisioned).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceMap {
    pub blocks: Vec<(u64, u64)>,
    pub truncated: bool,
}

/// The data blocks of thin device `device_id`, or None when the pool's
/// metadata has no such device.
pub fn device_map(
    meta: &dyn ReadAt,
    sb: &ThinSuperblock,
    device_id: u64,
) -> Result<Option<DeviceMap>, ParseError> {
    let Some(root) = lookup(meta, sb.data_mapping_root, device_id)? else {
        return Ok(None);
    };
    let mut map = DeviceMap::default();
    let mut nodes = 0;
    collect(meta, root, 0, &mut nodes, &mut map)?;
    Ok(Some(map))
}

fn collect(
    meta: &dyn ReadAt,
    at: u64,
    depth: usize,
    nodes: &mut usize,
    map: &mut DeviceMap,
) -> Result<(), ParseError> {
    if depth >= MAX_DEPTH {
        return Err(ParseError::new(
            LAYER,
            at * META_BLOCK,
            "btree deeper than 16 levels",
        ));
    }
    *nodes += 1;
    if *nodes > MAX_NODES || map.blocks.len() >= MAX_MAPPINGS {
        map.truncated = true;
        return Ok(());
    }
    let n = node(meta, at)?;
    for (&k, &v) in n.keys.iter().zip(&n.values) {
        if map.truncated {
            break;
        }
        if n.leaf {
            if map.blocks.len() >= MAX_MAPPINGS {
                map.truncated = true;
                break;
            }
            // The low 24 bits are the time the block was provisioned
            // (unpack_block_time).
            map.blocks.push((k, v >> 24));
        } else {
            collect(meta, v, depth + 1, nodes, map)?;
        }
    }
    Ok(())
}

/// Zeros: what an unprovisioned block of a thin LV reads as.
struct Zeros;

impl ReadAt for Zeros {
    fn len(&self) -> u64 {
        u64::MAX
    }
    fn read_exact_at(&self, buf: &mut [u8], _: u64) -> std::io::Result<()> {
        buf.fill(0);
        Ok(())
    }
}

/// A thin LV of `len` bytes read through its blocks in the pool's data LV.
/// Blocks past a truncated map are on no source: a read there fails.
pub fn thin_map(data: SharedReader, chunk: u64, map: DeviceMap, len: u64) -> Mapped {
    let known = if map.truncated {
        map.blocks.last().map_or(0, |b| b.0 + 1)
    } else {
        u64::MAX
    };
    let data_len = data.len();
    Mapped {
        sources: vec![data, Rc::new(Zeros)],
        len,
        locate: Box::new(move |x| {
            let (vb, within) = (x / chunk, x % chunk);
            let run = chunk - within;
            match map.blocks.binary_search_by_key(&vb, |b| b.0) {
                Ok(i) => {
                    let at = map.blocks[i].1.checked_mul(chunk)?.checked_add(within)?;
                    (at < data_len).then_some((0, at, run))
                }
                Err(_) if vb < known => Some((1, 0, run)),
                Err(_) => None,
            }
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A metadata area with a superblock and a one-leaf tree per level,
    /// sealed as the kernel seals them.
    pub fn tiny(chunk_sectors: u32, dev: u64, blocks: &[(u64, u64)]) -> Vec<u8> {
        let mut m = vec![0u8; 4 * 4096];
        let leaf = |m: &mut [u8], n: usize, entries: &[(u64, u64)]| {
            let b = &mut m[n * 4096..(n + 1) * 4096];
            b[4..8].copy_from_slice(&LEAF.to_le_bytes());
            b[8..16].copy_from_slice(&(n as u64).to_le_bytes());
            b[16..20].copy_from_slice(&(entries.len() as u32).to_le_bytes());
            b[20..24].copy_from_slice(&126u32.to_le_bytes());
            b[24..28].copy_from_slice(&8u32.to_le_bytes());
            for (i, (k, v)) in entries.iter().enumerate() {
                b[32 + 8 * i..40 + 8 * i].copy_from_slice(&k.to_le_bytes());
                let at = 32 + 8 * 126 + 8 * i;
                b[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            let c = block_checksum(b, NODE_XOR);
            b[0..4].copy_from_slice(&c.to_le_bytes());
        };
        leaf(&mut m, 1, &[(dev, 2)]);
        let packed: Vec<(u64, u64)> = blocks.iter().map(|&(k, d)| (k, d << 24 | 7)).collect();
        leaf(&mut m, 2, &packed);
        let s = &mut m[..4096];
        s[32..40].copy_from_slice(&MAGIC.to_le_bytes());
        s[48..56].copy_from_slice(&5u64.to_le_bytes());
        s[320..328].copy_from_slice(&1u64.to_le_bytes());
        s[336..340].copy_from_slice(&chunk_sectors.to_le_bytes());
        s[340..344].copy_from_slice(&8u32.to_le_bytes());
        s[344..352].copy_from_slice(&4u64.to_le_bytes());
        let c = block_checksum(s, SUPERBLOCK_XOR);
        s[0..4].copy_from_slice(&c.to_le_bytes());
        m
    }

    #[test]
    fn a_device_maps_through_both_levels_and_holes_read_as_zeros() {
        let m = tiny(128, 3, &[(0, 5), (2, 1)]);
        let sb = superblock(&m).unwrap();
        assert_eq!((sb.data_block_bytes, sb.transaction_id), (65536, 5));
        assert_eq!(device_map(&m, &sb, 4).unwrap(), None);
        let map = device_map(&m, &sb, 3).unwrap().unwrap();
        assert_eq!(map.blocks, [(0, 5), (2, 1)]);
        let data: Vec<u8> = (0..8 * 65536u32).map(|i| (i / 65536) as u8 + 1).collect();
        let t = thin_map(Rc::new(data), 65536, map, 4 * 65536);
        let mut b = [0u8; 3];
        t.read_exact_at(&mut b, 65535).unwrap();
        assert_eq!(b, [6, 0, 0]);
        t.read_exact_at(&mut b, 2 * 65536).unwrap();
        assert_eq!(b, [2, 2, 2]);
    }

    #[test]
    fn damage_is_named_with_its_offset() {
        let mut m = tiny(128, 3, &[(0, 5)]);
        m[2 * 4096 + 40] ^= 1;
        let sb = superblock(&m).unwrap();
        let e = device_map(&m, &sb, 3).unwrap_err();
        assert_eq!(e.offset, 2 * 4096);
        assert!(e.message.contains("checksum"), "{e}");
        m[33] ^= 1;
        assert_eq!(superblock(&m).unwrap_err().offset, 32);
        assert!(superblock(&m[..100].to_vec()).is_err());
    }
}
