//! The metadata region (`vhdx_parse_metadata`): its table, the items
//! qemu requires placed apart in the region, and their values: block
//! size, virtual size, logical and physical sector sizes.

use super::{guid, File, Region, KIB, MAX_TABLE_ENTRIES, METADATA, MIB};
use crate::bytes::{le_u16, le_u32, le_u64};
use crate::image::ImageError;

/// The metadata table, at the start of the metadata region; items lie
/// past it (`VHDX_METADATA_TABLE_MAX_SIZE`).
const METADATA_TABLE_BYTES: u64 = 64 * KIB;
/// `VHDX_BLOCK_SIZE_MIN`, `VHDX_BLOCK_SIZE_MAX`.
const MIN_BLOCK: u64 = MIB;
const MAX_BLOCK: u64 = 256 * MIB;
/// `VHDX_MAX_IMAGE_SIZE` (qemu enforces it creating an image; the
/// specification's limit).
const MAX_VIRTUAL_SIZE: u64 = 64 << 40;

/// The metadata items qemu knows (block/vhdx.c `file_param_guid` ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Item {
    FileParameters,
    VirtualDiskSize,
    Page83,
    LogicalSectorSize,
    PhysicalSectorSize,
    ParentLocator,
}

impl Item {
    const ALL: [Item; 6] = [
        Item::FileParameters,
        Item::VirtualDiskSize,
        Item::Page83,
        Item::LogicalSectorSize,
        Item::PhysicalSectorSize,
        Item::ParentLocator,
    ];

    /// block/vhdx.c `file_param_guid`, `virtual_size_guid`, ...
    pub(super) fn guid(self) -> [u8; 16] {
        match self {
            Item::FileParameters => guid("CAA16737-FA36-4D43-B3B6-33F0AA44E76B"),
            Item::VirtualDiskSize => guid("2FA54224-CD1B-4876-B211-5DBED83BF4B8"),
            Item::Page83 => guid("BECA12AB-B2E6-4523-93EF-C309E000C746"),
            Item::LogicalSectorSize => guid("8141BF1D-A96F-4709-BA47-F233A8FAAB5F"),
            Item::PhysicalSectorSize => guid("CDA348C7-445D-4471-9CC9-E9885251C556"),
            Item::ParentLocator => guid("A8D35F2D-B30B-454D-ABF7-D3D84834AB0C"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Item::FileParameters => "file parameters",
            Item::VirtualDiskSize => "virtual disk size",
            Item::Page83 => "page 83 data",
            Item::LogicalSectorSize => "logical sector size",
            Item::PhysicalSectorSize => "physical sector size",
            Item::ParentLocator => "parent locator",
        }
    }

    /// The bytes of the item this reader reads.
    fn bytes(self) -> u64 {
        match self {
            Item::FileParameters | Item::VirtualDiskSize => 8,
            Item::Page83 => 16,
            Item::LogicalSectorSize | Item::PhysicalSectorSize => 4,
            Item::ParentLocator => 0,
        }
    }
}

/// What the metadata says of the guest disk.
pub(super) struct Metadata {
    pub(super) block_bytes: u64,
    pub(super) leave_allocated: bool,
    pub(super) virtual_size: u64,
    pub(super) logical: u32,
    pub(super) physical: u32,
}

/// Where one metadata item lies, relative to the metadata region, and
/// the byte of its table entry.
#[derive(Clone, Copy)]
struct Placed {
    offset: u64,
    len: u64,
    entry_at: u64,
}

/// The metadata (`vhdx_parse_metadata`): the table at the start of the
/// region, then the items qemu requires. Every item must lie in the
/// region past the table, apart from the others.
pub(super) fn metadata(file: &File, region: Region) -> Result<Metadata, ImageError> {
    if region.len < METADATA_TABLE_BYTES {
        return Err(file.err(
            METADATA,
            region.start,
            format!(
                "the region of {} bytes cannot hold the 64 KiB table",
                region.len
            ),
        ));
    }
    let t = file.read(METADATA, region.start, METADATA_TABLE_BYTES)?;
    if &t[..8] != b"metadata" {
        return Err(file.err(METADATA, region.start, "signature is not \"metadata\""));
    }
    let count = u64::from(le_u16(&t, 10));
    if count > MAX_TABLE_ENTRIES {
        return Err(file.err(
            METADATA,
            region.start + 10,
            format!("entry count {count} is beyond {MAX_TABLE_ENTRIES}"),
        ));
    }
    let items = metadata_items(file, &t, region, count)?;
    read_items(file, region, &items)
}

/// The known items of the table, each placed once.
fn metadata_items(
    file: &File,
    t: &[u8],
    region: Region,
    count: u64,
) -> Result<[Option<Placed>; 6], ImageError> {
    let mut items = [None; 6];
    let mut placed: Vec<Placed> = Vec::new();
    for i in 0..count {
        let e = 32 + 32 * i as usize;
        let entry_at = region.start + e as u64;
        let err =
            |message: String| Err(file.err(METADATA, entry_at, format!("entry {i}: {message}")));
        let item = Placed {
            offset: le_u32(t, e + 16).into(),
            len: le_u32(t, e + 20).into(),
            entry_at,
        };
        let known = Item::ALL.iter().position(|k| t[e..e + 16] == k.guid());
        if item.len > 0 {
            if item.offset < METADATA_TABLE_BYTES || item.offset + item.len > region.len {
                return err(format!(
                    "item at offset {} of {} bytes lies outside the {}-byte region past its table",
                    item.offset, item.len, region.len
                ));
            }
            let apart =
                |p: &&Placed| item.offset < p.offset + p.len && p.offset < item.offset + item.len;
            if let Some(other) = placed.iter().find(apart) {
                return err(format!(
                    "item at offset {} of {} bytes overlaps the item of the entry at byte {}",
                    item.offset, item.len, other.entry_at
                ));
            }
            placed.push(item);
        }
        match known {
            Some(k) if items[k].is_some() => {
                return err(format!("a second {} item", Item::ALL[k].name()));
            }
            Some(k) => items[k] = Some(item),
            None if le_u32(t, e + 24) & 4 != 0 => {
                return err("an item this reader does not know is marked required".into());
            }
            None => {}
        }
    }
    Ok(items)
}

/// Read the items qemu requires and check their values: a block size of
/// a power of two from 1 to 256 MiB, sector sizes of 512 or 4096 bytes, a
/// virtual size of at most 64 TiB. A file with a parent is refused.
fn read_items(
    file: &File,
    region: Region,
    items: &[Option<Placed>; 6],
) -> Result<Metadata, ImageError> {
    let value = |item: Item| -> Result<(Vec<u8>, u64), ImageError> {
        let Some(p) = items[item as usize] else {
            return Err(file.err(
                METADATA,
                region.start + 10,
                format!(
                    "entry count: the table has no {} item, which qemu requires",
                    item.name()
                ),
            ));
        };
        if p.len < item.bytes() {
            return Err(file.err(
                METADATA,
                p.entry_at + 20,
                format!(
                    "{} item length {} is less than {}",
                    item.name(),
                    p.len,
                    item.bytes()
                ),
            ));
        }
        let at = region.start + p.offset;
        Ok((file.read(METADATA, at, item.bytes())?, at))
    };
    let (params, params_at) = value(Item::FileParameters)?;
    let (size, size_at) = value(Item::VirtualDiskSize)?;
    value(Item::Page83)?;
    let (logical, logical_at) = value(Item::LogicalSectorSize)?;
    let (physical, physical_at) = value(Item::PhysicalSectorSize)?;
    let block_bytes = u64::from(le_u32(&params, 0));
    let flags = le_u32(&params, 4);
    // qemu: ENOTSUP with a parent locator, EINVAL without one.
    if flags & 2 != 0 {
        return Err(file.err(
            METADATA,
            params_at + 4,
            "file parameters: has parent is set (a differencing VHDX), which qemu does not \
             read and neither do we",
        ));
    }
    if !(MIN_BLOCK..=MAX_BLOCK).contains(&block_bytes) || !block_bytes.is_power_of_two() {
        return Err(file.err(
            METADATA,
            params_at,
            format!(
                "file parameters: block size {block_bytes} is not a power of two from 1 to 256 MiB"
            ),
        ));
    }
    let sector = |b: &[u8], at: u64, name: &str| {
        let v = le_u32(b, 0);
        if v == 512 || v == 4096 {
            Ok(v)
        } else {
            Err(file.err(METADATA, at, format!("{name} {v} is neither 512 nor 4096")))
        }
    };
    // qemu reads only 512-byte logical sectors (`vhdx_parse_metadata`:
    // "Currently we only support 512"); the layout differs only in the
    // chunk ratio, which we compute from the sector size as the
    // specification does, so a 4Kn VHDX reads too.
    let logical = sector(&logical, logical_at, "logical sector size")?;
    let physical = sector(&physical, physical_at, "physical sector size")?;
    let declared = le_u64(&size, 0);
    if declared > MAX_VIRTUAL_SIZE {
        return Err(file.err(
            METADATA,
            size_at,
            format!("virtual disk size {declared} is beyond 64 TiB"),
        ));
    }
    Ok(Metadata {
        block_bytes,
        leave_allocated: flags & 1 != 0,
        // qemu counts whole logical sectors (`bs->total_sectors`).
        virtual_size: declared / u64::from(logical) * u64::from(logical),
        logical,
        physical,
    })
}

#[cfg(test)]
mod tests {
    use crate::image::vhdx::test_support::{error, open_mem, put, Build};
    use crate::image::vhdx::MIB;

    #[test]
    fn the_sector_sizes_come_from_the_metadata() {
        let b = Build {
            logical: 4096,
            physical: 4096,
            size: 8 * MIB + 1000,
            flags: 1,
            ..Build::default()
        };
        let c = open_mem(b.bytes()).unwrap().container;
        assert_eq!(
            (c.logical_sector_bytes, c.physical_sector_bytes),
            (Some(4096), Some(4096))
        );
        // Whole logical sectors, as qemu counts them.
        assert_eq!(c.virtual_size, 8 * MIB);
        assert_eq!(c.subformat.as_deref(), Some("fixed"));
    }

    /// The default image with the metadata table entry `i`'s field at `field` set.
    fn metadata_entry(i: usize, field: usize, value: u32) -> Vec<u8> {
        let mut img = Build::default().bytes();
        let at = 3 * MIB + 32 + 32 * i as u64 + field as u64;
        put(&mut img, at, &value.to_le_bytes());
        img
    }

    #[test]
    fn metadata_items_outside_the_region_or_overlapping_are_refused() {
        let e = error(metadata_entry(1, 16, 65536 + 4));
        assert!(
            e.contains(
                "VHDX metadata at byte 3145792: entry 1: item at offset 65540 of 8 bytes overlaps"
            ),
            "{e}"
        );
        let e = error(metadata_entry(1, 16, u32::MAX));
        assert!(
            e.contains("entry 1: item at offset 4294967295 of 8 bytes lies outside"),
            "{e}"
        );
        let e = error(metadata_entry(0, 16, 100));
        assert!(e.contains("entry 0: item at offset 100"), "{e}");
        let e = error(metadata_entry(3, 20, 2));
        assert!(
            e.contains("logical sector size item length 2 is less than 4"),
            "{e}"
        );
        let mut img = Build::default().bytes();
        put(&mut img, 3 * MIB + 10, &3000u16.to_le_bytes());
        assert!(error(img).contains("VHDX metadata at byte 3145738: entry count 3000"));
        let mut img = Build::default().bytes();
        put(&mut img, 3 * MIB + 32 + 32 * 2, &[0; 32]);
        assert!(error(img).contains("the table has no page 83 data item"));
    }

    #[test]
    fn metadata_values_beyond_what_qemu_allows_are_refused() {
        let cases: [(Build, &str); 6] = [
            (
                Build {
                    block: 0,
                    ..Build::default()
                },
                "at byte 3211264: file parameters: block size 0",
            ),
            (
                Build {
                    block: 3 << 20,
                    ..Build::default()
                },
                "block size 3145728 is not a power of two",
            ),
            (
                Build {
                    block: 512 << 20,
                    ..Build::default()
                },
                "block size 536870912",
            ),
            (
                Build {
                    logical: 1024,
                    ..Build::default()
                },
                "logical sector size 1024 is neither",
            ),
            (
                Build {
                    physical: 0,
                    ..Build::default()
                },
                "physical sector size 0 is neither",
            ),
            (
                Build {
                    size: (64 << 40) + 512,
                    ..Build::default()
                },
                "at byte 3211272: virtual disk size 70368744178176 is beyond 64 TiB",
            ),
        ];
        for (b, want) in cases {
            let e = error(b.bytes());
            assert!(e.contains(want), "{e}");
        }
        let e = error(
            Build {
                flags: 2,
                ..Build::default()
            }
            .bytes(),
        );
        assert!(
            e.contains("at byte 3211268: file parameters: has parent is set (a differencing VHDX)"),
            "{e}"
        );
    }
}
