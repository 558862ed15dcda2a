//! A block device and everything below it, down to the disks: each
//! target (a disk, a partition, a dm, md or loop device, or a directory's
//! filesystem) resolved through sysfs into its kernel name and number,
//! with the devices below (`slaves/`, a partition's disk), each with its
//! grain and where it starts on the device below and on its disk. The
//! devices a `watch` run looks at, and the host device under an image
//! file (`inspect`'s host placement): one mapping for both.

use crate::errors::TargetError;
use crate::findings::Finding;
use crate::iolimits::Zones;
use crate::sys::Sysfs;
use crate::sys::{list_dir, read_num, read_str};
use crate::sys::{DevNum, Grains};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What kind of block device a watched device is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceLayer {
    Partition,
    Dm,
    Md,
    Loop,
    #[default]
    Disk,
}

crate::spelled_as_serde!(DeviceLayer);

/// Where a device's grain comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GrainFrom {
    /// max(physical block, minimum I/O) as sysfs gives them.
    #[default]
    Topology,
    /// `--unit`.
    Unit,
}

crate::spelled_as_serde!(GrainFrom);

/// One device watched, as sysfs describes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Watched {
    /// The kernel's name, as in /sys/class/block (`sdb1`, `dm-0`).
    pub device: String,
    pub major: u32,
    pub minor: u32,
    pub layer: DeviceLayer,
    /// The devices directly below (a partition's disk, a dm or md
    /// device's `slaves/`).
    pub below: Vec<String>,
    /// The whole disk a partition is on, or the disk itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    /// Where the device starts on the device below, in bytes (a
    /// partition's `start`, a loop device's `loop/offset` in its file);
    /// null where sysfs does not say (dm and md map through their tables).
    pub offset_bytes: Option<u64>,
    /// Where it starts on its disk: a partition's start, 0 for a disk;
    /// null otherwise.
    pub offset_on_disk_bytes: Option<u64>,
    pub size_bytes: u64,
    pub logical_block_bytes: u64,
    pub physical_block_bytes: u64,
    /// The unit a straddle is judged against.
    pub grain_bytes: u64,
    pub grain_from: GrainFrom,
    /// Its zones (a partition's are its disk's): the model and zone size
    /// sysfs gives (`queue/zoned`, `queue/chunk_sectors`, `queue/nr_zones`);
    /// model `none` and zeros for a device that is not zoned.
    /// `conventional_zones` is not read (null).
    pub zoned: Zones,
    /// What `check` says about this device's placement (a partition's
    /// start or size, a layer's data offset): the cause a misaligned
    /// workload points to.
    pub causes: Vec<Finding>,
    /// The plan command of its disk (`diskalign plan /dev/sdb`) when
    /// planning that disk has work, as check's `next:` names it: the fix
    /// a finding about its placement names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

impl Watched {
    pub fn dev(&self) -> DevNum {
        DevNum {
            major: self.major,
            minor: self.minor,
        }
    }

    /// The grains handed to the tracer for this device.
    pub fn grains(&self) -> Grains {
        Grains {
            dev: self.dev(),
            grain_bytes: self.grain_bytes,
            physical_bytes: self.physical_block_bytes,
            zone_bytes: self.zone_bytes(),
            legs: matches!(self.layer, DeviceLayer::Dm | DeviceLayer::Md),
        }
    }

    /// The zone size its writes crossing a zone boundary are counted
    /// against; 0 where none are counted: a device that is not zoned, and
    /// a partition that does not start on a zone boundary of its disk (its
    /// I/O is counted at its own sectors, `Stage::RemapFrom`, so its zones
    /// are its disk's only from a boundary; the kernels that register a
    /// partition on a zoned disk at all required that of it,
    /// block/partition-generic.c `part_zone_aligned`, or stop treating the
    /// disk as zoned: check/zones.rs). Its disk counts them either way.
    pub fn zone_bytes(&self) -> u64 {
        let zone = self.zoned.zone_size_bytes;
        let from_a_boundary = match self.layer {
            DeviceLayer::Partition => self.offset_bytes.is_some_and(|o| zone > 0 && o % zone == 0),
            _ => true,
        };
        if self.zoned.is_zoned() && from_a_boundary {
            zone
        } else {
            0
        }
    }
}

/// The devices of every target, and the targets that could not be
/// resolved.
#[derive(Clone, Debug, Default)]
pub struct Resolved {
    pub watched: Vec<Watched>,
    pub errors: Vec<TargetError>,
}

/// Deeper stacks than this are not followed (as `stack::kernel`).
const MAX_DEPTH: usize = 8;

/// Resolve `targets` (no target: every disk with its partitions) into
/// the devices to watch, each once, the targets' own first. `unit`
/// (`--unit`) replaces every device's grain.
pub fn resolve(targets: &[PathBuf], sysfs: &Sysfs, unit: Option<u64>) -> Resolved {
    let mut out = Resolved::default();
    let names: Vec<(String, String)> = if targets.is_empty() {
        match sysfs.default_disks() {
            Ok(d) => d.into_iter().map(|n| (n.clone(), n)).collect(),
            Err(e) => {
                out.errors.push(TargetError::new(
                    sysfs.root().join("block").display().to_string(),
                    format!("cannot list disks: {e}"),
                ));
                vec![]
            }
        }
    } else {
        targets
            .iter()
            .filter_map(|t| {
                let shown = t.display().to_string();
                match kernel_name(t, sysfs) {
                    Ok(n) => Some((shown, n)),
                    Err(e) => {
                        out.errors.push(TargetError::new(shown, e));
                        None
                    }
                }
            })
            .collect()
    };
    for (shown, name) in names {
        if let Err(e) = add(&name, sysfs, unit, &mut out.watched, 0, true) {
            out.errors.push(TargetError::new(shown, e));
        }
    }
    fill_offsets_on_disk(
        &mut out.watched,
        sysfs.is_live().then_some(dm_linear as DmLookup),
    );
    out
}

/// The block device `major:minor` (a filesystem's, st_dev) with
/// everything below it, as [`resolve`] gives them: itself first, each
/// with its offset on its disk where that is one number.
pub fn of_number(major: u32, minor: u32, sysfs: &Sysfs) -> Result<Vec<Watched>, String> {
    let name = by_number(major, minor, sysfs).ok_or_else(|| {
        format!(
            "device {major}:{minor} is not a block device under {}/dev/block",
            sysfs.root().display()
        )
    })?;
    let r = resolve(&[PathBuf::from(&name)], sysfs, None);
    match r.errors.into_iter().next() {
        Some(e) => Err(e.message),
        None => Ok(r.watched),
    }
}

/// The kernel name of a target: a block device node, `NAME` or
/// `/dev/NAME` as sysfs knows it, or a directory (the device of the
/// filesystem it is on).
fn kernel_name(target: &Path, sysfs: &Sysfs) -> Result<String, String> {
    let text = target.to_string_lossy();
    let bare = text.strip_prefix("/dev/").unwrap_or(&text);
    if !sysfs.is_live() || !target.exists() {
        if let Some(dir) = device_dir(bare, sysfs) {
            if dir.exists() {
                return Ok(bare.to_string());
            }
        }
    }
    let meta = std::fs::metadata(target).map_err(|e| format!("cannot open: {e}"))?;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else if meta.is_dir() {
        meta.dev()
    } else {
        return Err("not a block device or a directory on a mounted filesystem".into());
    };
    let (major, minor) = split_dev(dev);
    by_number(major, minor, sysfs).ok_or_else(|| {
        format!(
            "device {major}:{minor} is not a block device under {}/dev/block (a filesystem without one, such as tmpfs or overlay, cannot be watched)",
            sysfs.root().display()
        )
    })
}

/// A `dev_t` as glibc's `gnu_dev_major`/`gnu_dev_minor` (sys/sysmacros.h)
/// split it: 12 bits of major and 20 of minor, the low ones first.
fn split_dev(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

/// The kernel name of `major:minor`, from the `dev/block` link.
pub fn by_number(major: u32, minor: u32, sysfs: &Sysfs) -> Option<String> {
    let link = sysfs.root().join(format!("dev/block/{major}:{minor}"));
    let path = std::fs::canonicalize(link).ok()?;
    Some(path.file_name()?.to_string_lossy().into_owned())
}

/// The sysfs directory of a block device: `block/NAME`, or
/// `block/DISK/NAME` for a partition.
fn device_dir(name: &str, sysfs: &Sysfs) -> Option<PathBuf> {
    // A name, never a path: `block/` joined with `/x` would be `/x`.
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return None;
    }
    if sysfs.has_disk(name) {
        return Some(sysfs.block_dir(name));
    }
    match sysfs.resolve_name(name)? {
        (disk, Some(_)) => Some(sysfs.block_dir(&disk).join(name)),
        (disk, None) => Some(sysfs.block_dir(&disk)),
    }
}

/// Add `name` and everything below it (and, for a target that is a
/// disk, its partitions), each once.
fn add(
    name: &str,
    sysfs: &Sysfs,
    unit: Option<u64>,
    out: &mut Vec<Watched>,
    depth: usize,
    target: bool,
) -> Result<(), String> {
    if depth >= MAX_DEPTH || out.iter().any(|w| w.device == name) {
        return Ok(());
    }
    let dir = device_dir(name, sysfs)
        .ok_or_else(|| format!("no block device {name} under {}", sysfs.root().display()))?;
    let w = describe(name, &dir, sysfs, unit)?;
    let below = w.below.clone();
    let layer = w.layer;
    out.push(w);
    for b in &below {
        add(b, sysfs, unit, out, depth + 1, false)?;
    }
    if target && layer != DeviceLayer::Partition {
        for p in sysfs.partitions(name) {
            add(&p.name, sysfs, unit, out, depth + 1, false)?;
        }
    }
    Ok(())
}

/// One device from its sysfs directory.
fn describe(name: &str, dir: &Path, sysfs: &Sysfs, unit: Option<u64>) -> Result<Watched, String> {
    let partition_of = sysfs
        .resolve_name(name)
        .and_then(|(disk, n)| n.map(|_| disk));
    let layer = match &partition_of {
        Some(_) => DeviceLayer::Partition,
        None if dir.join("dm").exists() => DeviceLayer::Dm,
        None if dir.join("md").exists() => DeviceLayer::Md,
        None if dir.join("loop").exists() || name.starts_with("loop") => DeviceLayer::Loop,
        None => DeviceLayer::Disk,
    };
    // A partition has no queue/ of its own: its disk's limits are its.
    let limits_of = partition_of.as_deref().unwrap_or(name);
    let topo = sysfs.topology(limits_of).map_err(|e| e.to_string())?;
    let (major, minor): (u32, u32) = read_str(&dir.join("dev"))
        .and_then(|s| {
            let (a, b) = s.split_once(':')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .ok_or_else(|| format!("cannot read {}", dir.join("dev").display()))?;
    let sectors = |file: &str| read_num::<u64>(&dir.join(file)).map(|s| s.saturating_mul(512));
    let (below, offset) = match (&partition_of, layer) {
        (Some(disk), _) => (vec![disk.clone()], sectors("start")),
        (None, DeviceLayer::Loop) => (vec![], read_num::<u64>(&dir.join("loop/offset"))),
        (None, DeviceLayer::Disk) => (vec![], None),
        (None, _) => (list_dir(&dir.join("slaves")), None),
    };
    let disk = match (&partition_of, layer) {
        (Some(d), _) => Some(d.clone()),
        (None, DeviceLayer::Disk) => Some(name.to_string()),
        _ => None,
    };
    let zoned = sysfs.zones(limits_of).map_err(|e| e.to_string())?;
    let (grain_bytes, grain_from) = match unit {
        Some(u) => (u, GrainFrom::Unit),
        None => (topo.grain(), GrainFrom::Topology),
    };
    Ok(Watched {
        device: name.to_string(),
        major,
        minor,
        layer,
        below,
        disk,
        offset_bytes: offset,
        offset_on_disk_bytes: None,
        size_bytes: sectors("size").unwrap_or(0),
        logical_block_bytes: u64::from(topo.logical_block_size),
        physical_block_bytes: u64::from(topo.physical_block_size),
        grain_bytes,
        grain_from,
        zoned,
        causes: Vec::new(),
        next: None,
    })
}

/// A dm device's single `linear` target: the device below (major,
/// minor) and the offset on it in bytes; None for any other table.
type DmLookup = fn(u32, u32) -> Option<((u32, u32), u64)>;

/// The live table through DM_TABLE_STATUS (`sys::dm`).
fn dm_linear(major: u32, minor: u32) -> Option<((u32, u32), u64)> {
    let t = crate::sys::dm_table(major, minor).ok()?;
    match t.as_slice() {
        [one] if one.start == 0 => {
            crate::sys::linear_origin(one).map(|(dev, sectors)| (dev, sectors * 512))
        }
        _ => None,
    }
}

/// A partition starts on its disk at its own offset; a disk at 0; a dm
/// device with one linear target at its target's offset plus the offset
/// of the device below, when that is known (`dm`: the table, on a live
/// system). md and other dm tables have none.
fn fill_offsets_on_disk(watched: &mut [Watched], dm: Option<DmLookup>) {
    for w in watched.iter_mut() {
        w.offset_on_disk_bytes = match w.layer {
            DeviceLayer::Partition => w.offset_bytes,
            DeviceLayer::Disk => Some(0),
            _ => None,
        };
    }
    let Some(dm) = dm else {
        return;
    };
    // dm over dm: a few passes settle the chain.
    for _ in 0..4 {
        for i in 0..watched.len() {
            if watched[i].layer != DeviceLayer::Dm || watched[i].offset_on_disk_bytes.is_some() {
                continue;
            }
            let Some((below, offset)) = dm(watched[i].major, watched[i].minor) else {
                continue;
            };
            let base = watched
                .iter()
                .find(|b| (b.major, b.minor) == below)
                .and_then(|b| b.offset_on_disk_bytes);
            if let Some(base) = base {
                watched[i].offset_on_disk_bytes = Some(base + offset);
            }
        }
    }
}

/// One device as the ao-3584 fixture tree has it (sdb, 4 KiB physical).
#[cfg(test)]
pub(crate) fn test_device(name: &str, minor: u32, layer: DeviceLayer, offset: u64) -> Watched {
    Watched {
        device: name.into(),
        major: 8,
        minor,
        layer,
        below: if layer == DeviceLayer::Partition {
            vec!["sdb".into()]
        } else {
            vec![]
        },
        disk: Some("sdb".into()),
        offset_bytes: (layer == DeviceLayer::Partition).then_some(offset),
        offset_on_disk_bytes: Some(offset),
        size_bytes: 1 << 30,
        logical_block_bytes: 512,
        physical_block_bytes: 4096,
        grain_bytes: 4096,
        grain_from: GrainFrom::Topology,
        zoned: Zones::default(),
        causes: vec![],
        next: None,
    }
}

/// sdb, sdb1 at sector 63, sdb2 at sector 2048.
#[cfg(test)]
pub(crate) fn watched_ao() -> Vec<Watched> {
    vec![
        test_device("sdb", 16, DeviceLayer::Disk, 0),
        test_device("sdb1", 17, DeviceLayer::Partition, 63 * 512),
        test_device("sdb2", 18, DeviceLayer::Partition, 2048 * 512),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dm_linear_device_is_placed_on_the_disk_through_its_table() {
        // Synthetic: the ao-3584 devices (sdb1 at sector 63), dm-0 linear
        // over sdb1 at sector 8, dm-1 linear over dm-0 at 0, dm-2 with
        // another table.
        let mut v = watched_ao();
        let dm = |name: &str, minor| Watched {
            device: name.into(),
            major: 254,
            minor,
            layer: DeviceLayer::Dm,
            offset_bytes: None,
            offset_on_disk_bytes: None,
            ..v[0].clone()
        };
        let dms = [dm("dm-1", 1), dm("dm-0", 0), dm("dm-2", 2)];
        v.splice(0..0, dms);
        fn tables(major: u32, minor: u32) -> Option<((u32, u32), u64)> {
            match (major, minor) {
                (254, 0) => Some(((8, 17), 8 * 512)),
                (254, 1) => Some(((254, 0), 0)),
                _ => None,
            }
        }
        fill_offsets_on_disk(&mut v, Some(tables));
        let on = |i: usize| v[i].offset_on_disk_bytes;
        assert_eq!(
            (on(0), on(1), on(2)),
            (Some(71 * 512), Some(71 * 512), None)
        );
        assert_eq!((on(3), on(4)), (Some(0), Some(63 * 512)), "sdb, sdb1");
        // Without a live system (a fixture tree) no table is read.
        fill_offsets_on_disk(&mut v, None);
        assert_eq!(v[1].offset_on_disk_bytes, None);
    }

    fn fixture(name: &str) -> Sysfs {
        Sysfs::new(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/sysfs")
                .join(name),
        )
    }

    #[test]
    fn a_dm_device_is_followed_down_to_its_disk() {
        let r = resolve(
            &[PathBuf::from("/dev/dm-1")],
            &fixture("stack-holders"),
            None,
        );
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        let names: Vec<(&str, DeviceLayer)> = r
            .watched
            .iter()
            .map(|w| (w.device.as_str(), w.layer))
            .collect();
        assert_eq!(
            names,
            [
                ("dm-1", DeviceLayer::Dm),
                ("sdd1", DeviceLayer::Partition),
                ("sdd", DeviceLayer::Disk)
            ]
        );
        let p = &r.watched[1];
        assert_eq!((p.major, p.minor), (8, 49));
        assert_eq!(p.offset_on_disk_bytes, Some(2048 * 512));
        assert_eq!((p.physical_block_bytes, p.grain_bytes), (4096, 4096));
        assert_eq!(r.watched[0].offset_on_disk_bytes, None);
    }

    #[test]
    fn a_disk_brings_its_partitions_and_unit_replaces_the_grain() {
        let r = resolve(&[PathBuf::from("sdb")], &fixture("ao-3584"), Some(65536));
        let names: Vec<&str> = r.watched.iter().map(|w| w.device.as_str()).collect();
        assert_eq!(names, ["sdb", "sdb1", "sdb2"]);
        assert_eq!(r.watched[1].offset_on_disk_bytes, Some(63 * 512));
        assert!(r
            .watched
            .iter()
            .all(|w| w.grain_bytes == 65536 && w.grain_from == GrainFrom::Unit));
    }

    /// The zoned-hm tree: sdb host-managed in 4 MiB zones
    /// (queue/chunk_sectors 8192).
    #[test]
    fn a_zoned_disk_is_watched_with_its_zones() {
        let r = resolve(&[PathBuf::from("sdb")], &fixture("zoned-hm"), None);
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        let d = &r.watched[0];
        assert_eq!(d.zoned.model, crate::iolimits::ZoneModel::HostManaged);
        assert_eq!(
            (d.zoned.zone_size_bytes, d.zone_bytes()),
            (4 << 20, 4 << 20)
        );
        assert_eq!(d.grains().zone_bytes, 4 << 20);
        let plain = resolve(&[PathBuf::from("sdb")], &fixture("ao-3584"), None);
        assert!(plain.watched.iter().all(|w| w.grains().zone_bytes == 0));
    }

    /// A partition counts its zone crossings at its own sectors: only one
    /// starting on a zone boundary of its disk can.
    #[test]
    fn a_partition_counts_zone_crossings_only_from_a_zone_boundary() {
        let zoned = crate::iolimits::Zones {
            model: crate::iolimits::ZoneModel::HostAware,
            zone_size_bytes: 4 << 20,
            ..Default::default()
        };
        let mut v = watched_ao();
        for w in &mut v {
            w.zoned = zoned.clone();
        }
        v[2].offset_bytes = Some(8 << 20);
        let zones: Vec<u64> = v.iter().map(Watched::zone_bytes).collect();
        assert_eq!(
            zones,
            [4 << 20, 0, 4 << 20],
            "sdb, sdb1 at 63, sdb2 at 8 MiB"
        );
    }

    #[test]
    fn an_unknown_name_is_an_error_naming_it() {
        let r = resolve(&[PathBuf::from("/dev/nosuch")], &fixture("ao-3584"), None);
        assert!(r.watched.is_empty());
        assert_eq!(r.errors[0].path, "/dev/nosuch");
    }

    #[test]
    fn dev_t_splits_as_glibc_does() {
        assert_eq!(split_dev(0x811), (8, 17));
        assert_eq!(split_dev((259 << 8) | 1), (259, 1));
        // A large minor: its high bits sit above the major's.
        let dev = (0x12345u64 & 0xff) | ((0x12345u64 & !0xff) << 12) | (253 << 8);
        assert_eq!(split_dev(dev), (253, 0x12345));
    }
}
