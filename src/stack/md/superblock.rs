//! md RAID member superblocks, v0.90 and v1.0/1.1/1.2, checksums verified.
//! Layout: the kernel's include/uapi/linux/raid/md_p.h (`mdp_super_t`,
//! `mdp_superblock_1`) and mdadm's super0.c/super1.c for placement.

use crate::bytes::ParseError;
use crate::bytes::{le_u16, le_u32, le_u64, read_bytes, ReadAt};
use serde::{Deserialize, Serialize};

pub const MAGIC: u32 = 0xa92b_4efc;
const LAYER: &str = "md superblock";

/// `MD_SB_DISKS` (md_p.h): a v0.90 superblock has 27 disk descriptors.
const V090_MAX_DISKS: u32 = 27;

/// What one member's superblock says.
#[derive(Clone, Default, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MdMember {
    /// "0.90", "1.0", "1.1" or "1.2".
    pub version: String,
    /// Byte offset of the superblock in the member.
    pub superblock_offset: u64,
    /// The array's UUID as mdadm prints it (four groups of 8 hex digits).
    pub array_uuid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// 0, 1, 4, 5, 6, 10, -1 (linear)...
    pub level: i32,
    pub layout: u32,
    pub chunk_bytes: u64,
    pub raid_disks: u32,
    /// Where the member's data starts, from the member start.
    pub data_offset_bytes: u64,
    /// How much of the member the array uses.
    pub data_size_bytes: u64,
    /// This member's slot (0-based), None for a spare or faulty device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<u32>,
}

impl MdMember {
    /// "raid5", "linear"...
    pub fn level_name(&self) -> String {
        match self.level {
            -1 => "linear".into(),
            -4 => "multipath".into(),
            -5 => "faulty".into(),
            l => format!("raid{l}"),
        }
    }

    /// Levels that spread data in chunks over the members (0, 4, 5, 6, 10);
    /// their chunk is the unit writes are split in.
    pub fn is_striped(&self) -> bool {
        matches!(self.level, 0 | 4 | 5 | 6 | 10)
    }

    /// Data disks of one stripe (for the optimal I/O size).
    pub fn data_disks(&self) -> Option<u32> {
        let n = self.raid_disks;
        match self.level {
            0 => Some(n),
            4 | 5 => n.checked_sub(1),
            6 => n.checked_sub(2),
            10 => {
                let near = (self.layout & 0xff).max(1);
                let far = ((self.layout >> 8) & 0xff).max(1);
                Some(n / (near * far).max(1))
            }
            _ => None,
        }
        .filter(|&d| d > 0)
    }
}

fn uuid(words: [u32; 4]) -> String {
    words.map(|w| format!("{w:08x}")).join(":")
}

fn fold(sum: u64) -> u32 {
    ((sum & 0xffff_ffff) + (sum >> 32)) as u32
}

/// Where each version's superblock would be on a device of `len` bytes,
/// in the order they are looked for: 1.1 at 0, 1.2 at 4 KiB, 1.0 8 KiB
/// from the end on a 4 KiB boundary, 0.90 in the last whole 64 KiB
/// (mdadm super1.c `load_super1`, super0.c `load_super0`).
pub fn places(len: u64) -> Vec<(u64, &'static str)> {
    let sectors = len / 512;
    let mut at = vec![(0u64, "1.1"), (4096, "1.2")];
    if sectors >= 16 {
        at.push((((sectors - 16) & !7) * 512, "1.0"));
    }
    if sectors >= 128 {
        at.push((((sectors & !127) - 128) * 512, "0.90"));
    }
    at
}

/// The superblock on `src`, if any; a magic with a bad checksum is an error.
pub fn read(src: &(impl ReadAt + ?Sized)) -> Result<Option<MdMember>, ParseError> {
    for (off, version) in places(src.len()) {
        let found = match version {
            "0.90" => v090(src, off)?,
            _ => v1(src, off, version)?,
        };
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

fn has_magic(src: &(impl ReadAt + ?Sized), off: u64) -> bool {
    off + 4 <= src.len() && read_bytes(src, LAYER, off, 4).is_ok_and(|b| le_u32(&b, 0) == MAGIC)
}

fn v1(
    src: &(impl ReadAt + ?Sized),
    off: u64,
    version: &'static str,
) -> Result<Option<MdMember>, ParseError> {
    if !has_magic(src, off) || off + 1024 > src.len() {
        return Ok(None);
    }
    let b = read_bytes(src, LAYER, off, 1024)?;
    if le_u32(&b, 4) != 1 {
        return Ok(None); // not a v1 superblock at this place
    }
    let err =
        |at: u64, m: String| ParseError::new(LAYER, off + at, format!("version {version}: {m}"));
    let max_dev = le_u32(&b, 220) as usize;
    if max_dev > 384 {
        return Err(err(
            220,
            format!("max_dev {max_dev} is beyond the 1 KiB superblock"),
        ));
    }
    let len = 256 + 2 * max_dev;
    let mut sum = 0u64;
    let mut i = 0;
    while i + 4 <= len {
        if i != 216 {
            sum += u64::from(le_u32(&b, i));
        }
        i += 4;
    }
    if i < len {
        sum += u64::from(le_u16(&b, i));
    }
    let stored = le_u32(&b, 216);
    if fold(sum) != stored {
        return Err(err(
            216,
            format!(
                "checksum {stored:#010x} does not match the computed {:#010x}",
                fold(sum)
            ),
        ));
    }
    // Each role is recorded in dev_roles[max_dev] (md_p.h, struct
    // mdp_superblock_1): an array of more disks cannot be described.
    let raid_disks = le_u32(&b, 92);
    if raid_disks as usize > max_dev {
        return Err(err(
            92,
            format!("raid_disks {raid_disks} is more than the {max_dev} roles the superblock records (max_dev)"),
        ));
    }
    let data_offset = le_u64(&b, 128);
    let data_size = le_u64(&b, 136);
    let too_big = |v: u64| v.checked_mul(512).filter(|&x| x <= src.len());
    let data_offset_bytes = too_big(data_offset).ok_or_else(|| {
        err(
            128,
            format!("data_offset {data_offset} sectors is beyond the device"),
        )
    })?;
    let data_size_bytes = data_size
        .checked_mul(512)
        .ok_or_else(|| err(136, "data_size overflows".into()))?;
    let dev_number = le_u32(&b, 160) as usize;
    let role = (dev_number < max_dev)
        .then(|| u32::from(le_u16(&b, 256 + 2 * dev_number)))
        .filter(|&r| r < 0xfffe);
    let name = String::from_utf8_lossy(&b[32..64])
        .trim_end_matches('\0')
        .to_string();
    let w = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    Ok(Some(MdMember {
        version: version.into(),
        superblock_offset: off,
        array_uuid: uuid([w(16), w(20), w(24), w(28)]),
        name: (!name.is_empty()).then_some(name),
        level: le_u32(&b, 72) as i32,
        layout: le_u32(&b, 76),
        chunk_bytes: u64::from(le_u32(&b, 88)) * 512,
        raid_disks,
        data_offset_bytes,
        data_size_bytes,
        role,
    }))
}

fn v090(src: &(impl ReadAt + ?Sized), off: u64) -> Result<Option<MdMember>, ParseError> {
    if !has_magic(src, off) || off + 4096 > src.len() {
        return Ok(None);
    }
    let b = read_bytes(src, LAYER, off, 4096)?;
    if le_u32(&b, 4) != 0 || le_u32(&b, 8) != 90 {
        return Ok(None);
    }
    let sum: u64 = (0..1024)
        .filter(|&i| i != 152 / 4)
        .map(|i| u64::from(le_u32(&b, 4 * i)))
        .sum();
    let stored = le_u32(&b, 152);
    if fold(sum) != stored {
        return Err(ParseError::new(
            LAYER,
            off + 152,
            format!(
                "version 0.90: checksum {stored:#010x} does not match the computed {:#010x}",
                fold(sum)
            ),
        ));
    }
    // this_disk is the last 128-byte descriptor: number, major, minor, raid_disk, state.
    let raid_disk = le_u32(&b, 3968 + 12);
    let state = le_u32(&b, 3968 + 16);
    let raid_disks = le_u32(&b, 40);
    if raid_disks > V090_MAX_DISKS {
        return Err(ParseError::new(
            LAYER,
            off + 40,
            format!("version 0.90: raid_disks {raid_disks} is more than the {V090_MAX_DISKS} disk descriptors the format has"),
        ));
    }
    let active = state & (1 << 1) != 0; // MD_DISK_ACTIVE
    Ok(Some(MdMember {
        version: "0.90".into(),
        superblock_offset: off,
        array_uuid: uuid([
            le_u32(&b, 20),
            le_u32(&b, 52),
            le_u32(&b, 56),
            le_u32(&b, 60),
        ]),
        name: None,
        level: le_u32(&b, 28) as i32,
        layout: le_u32(&b, 256),
        chunk_bytes: u64::from(le_u32(&b, 260)),
        raid_disks,
        data_offset_bytes: 0,
        data_size_bytes: u64::from(le_u32(&b, 32)).saturating_mul(1024),
        role: (active && raid_disk < raid_disks).then_some(raid_disk),
    }))
}
