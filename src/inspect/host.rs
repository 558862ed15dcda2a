//! The host under an image file: where the file's bytes lie on the host's
//! disk. A guest disk aligned inside its image is aligned on the host
//! only if the file's extents are too: an image on an ext4 in a host
//! partition at sector 63 puts every guest block 3584 bytes off 4 KiB.
//!
//! Read here, judged in `check::host`: the file's extents (FS_IOC_FIEMAP,
//! `sys::extents`), the block device of its filesystem and the devices
//! below it down to the disk, as `watch` maps them (`topology::devices`:
//! a partition's start, a dm linear table's offset), the host grain, and
//! each guest start (partitions, layers) mapped to its host byte.
//!
//! FIEMAP's physical offsets are offsets on the filesystem's own block
//! device only where the filesystem says so: ext4's `ext4_set_iomap`
//! (fs/ext4/inode.c) and XFS's `xfs_bmbt_to_iomap` (fs/xfs/xfs_iomap.c)
//! give `iomap->addr` on `i_sb->s_bdev` and the inode's data device.
//! Btrfs gives addresses in its own logical chunk space (fs/btrfs,
//! `btrfs_extent_item_to_extent_map`'s `disk_bytenr`; e2fsprogs issues 84
//! and 88), overlayfs answers for another filesystem's inode
//! (`ovl_fiemap`, fs/overlayfs/inode.c), and a filesystem without
//! `->fiemap` (tmpfs, NFS, ZFS on Linux) has no answer (`ioctl_fiemap`,
//! fs/ioctl.c): those are not judged, and say why.

use crate::sys::{self, Extent, ExtentFlags, Sysfs};
use crate::topology::{self as devices, DeviceLayer, Watched};
use crate::units::KIB;
use serde::{Deserialize, Serialize};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Extents read at most: an image in more pieces than this is judged on
/// its first ones, and says so (`extents_complete: false`).
pub const MAX_EXTENTS: usize = 4096;

/// Filesystems whose FIEMAP offsets are bytes of their one block device.
const DEVICE_OFFSETS: [&str; 4] = ["ext2", "ext3", "ext4", "xfs"];

/// Where the host grain comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostGrainFrom {
    /// 4 KiB, the page every filesystem and 4K medium works in, where the
    /// device reports nothing larger.
    #[default]
    #[serde(rename = "4k")]
    FourKib,
    PhysicalBlock,
    /// The minimum I/O: an md chunk, a RAID controller's unit.
    MinimumIo,
    /// `check --host-grain`.
    HostGrain,
}

crate::spelled_as_serde!(HostGrainFrom);

/// One piece of the file (contiguous extents collapsed into one).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostExtent {
    /// Where it starts in the file.
    pub logical_bytes: u64,
    pub length_bytes: u64,
    /// Where it starts on the filesystem's device (FIEMAP's fe_physical).
    pub physical_bytes: u64,
    /// Where it starts on `judged_on`: `physical_bytes` plus the
    /// filesystem device's offset there.
    pub host_bytes: u64,
    /// FIEMAP's flags by name (`last`, `merged`, ...); an extent with
    /// `unknown`, `delalloc`, `encoded`, `data-encrypted`, `not-aligned`,
    /// `data-inline`, `data-tail`, `unwritten` or `shared` is not judged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

/// A guest start (a partition's, a layer's data) and where it lands.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostUnit {
    /// `partition 1`, `partition 1 / ext4`.
    pub what: String,
    pub guest_offset_bytes: u64,
    /// Its byte in the image file; null where the file does not hold it
    /// (an unallocated or compressed cluster).
    pub file_offset_bytes: Option<u64>,
    /// Its byte on `judged_on`; null where no judged extent holds it.
    pub host_offset_bytes: Option<u64>,
}

/// Where an image file lies on the host (the `host` of a target in the
/// JSON, docs/json.md).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Host {
    /// The host filesystem's type and mount point (mountinfo).
    pub filesystem: String,
    pub mount_point: String,
    /// Its block device (`sdb1`, `dm-0`, `md0`) and the devices below it
    /// down to the disk, as `watch` follows them.
    pub device: Option<String>,
    pub devices: Vec<String>,
    /// The device the offsets are judged on: the disk, where the
    /// filesystem's device starts at one known byte of it (a partition, a
    /// dm linear mapping), else the filesystem's device itself (md, a
    /// striped or thin LV).
    pub judged_on: Option<String>,
    /// Where the filesystem's device starts on `judged_on`.
    pub device_offset_bytes: u64,
    /// `judged_on`'s limits.
    pub logical_block_bytes: u64,
    pub physical_block_bytes: u64,
    pub minimum_io_bytes: u64,
    pub optimal_io_bytes: u64,
    pub grain_bytes: u64,
    pub grain_from: HostGrainFrom,
    /// The file's extents from its start, contiguous ones collapsed.
    pub extents: Vec<HostExtent>,
    /// False when the file has more than [`MAX_EXTENTS`] extents: the
    /// rest are not judged.
    pub extents_complete: bool,
    pub units: Vec<HostUnit>,
    /// Why nothing is judged on the host; null when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
}

impl Host {
    /// Nothing judged, for `reason`.
    fn refused(fs: Option<&sys::Mount>, reason: String) -> Host {
        Host {
            filesystem: fs.map(|m| m.fs_type.clone()).unwrap_or_default(),
            mount_point: fs.map(|m| m.point.clone()).unwrap_or_default(),
            not_judged: Some(reason),
            ..Host::default()
        }
    }

    /// The byte of `judged_on` that byte `file_offset` of the file lies
    /// at; None in a hole, past the extents read, or in an extent that is
    /// not judged.
    pub fn host_offset(&self, file_offset: u64) -> Option<u64> {
        let e = self.extents.iter().find(|e| {
            e.logical_bytes <= file_offset && file_offset - e.logical_bytes < e.length_bytes
        })?;
        judged(e).then(|| e.host_bytes + (file_offset - e.logical_bytes))
    }
}

/// Where a file's offsets land on the host disk, in brief: the probe's
/// `environment.host` (docs/probe.md).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Landing {
    /// The filesystem's device and the device judged on (its disk).
    pub device: Option<String>,
    pub judged_on: Option<String>,
    pub device_offset_bytes: u64,
    pub grain_bytes: u64,
    pub grain_from: HostGrainFrom,
    /// The first judged extent: its byte in the file and on `judged_on`.
    pub first_logical_bytes: Option<u64>,
    pub first_host_bytes: Option<u64>,
    /// How far file offsets that are multiples of the grain land past
    /// the host grain, in that extent: 0 when they land on it.
    pub misalignment_bytes: Option<u64>,
    /// Every judged extent is off by the same amount (so every file
    /// offset lands the same distance off the grain).
    pub uniform: bool,
    /// The extents read, and those not judged (unwritten, shared, ...).
    pub extents: usize,
    pub extents_not_judged: usize,
    /// Why nothing is judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<String>,
}

impl Landing {
    /// In one phrase, as the probe's human report and HTML page say it:
    /// `file byte 0 lands at byte 2129408 of loop0, 3584 bytes off its
    /// 4 KiB grain (4k); every extent alike`.
    pub fn phrase(&self) -> String {
        if let Some(why) = &self.not_judged {
            return format!("not judged on the host: {why}");
        }
        let (Some(l), Some(h), Some(m)) = (
            self.first_logical_bytes,
            self.first_host_bytes,
            self.misalignment_bytes,
        ) else {
            return "no extent of the file has a place on the host to judge".into();
        };
        let on = self.judged_on.as_deref().unwrap_or("?");
        let off = match m {
            0 => format!(
                "on its {} grain ({})",
                crate::units::exact(self.grain_bytes),
                self.grain_from
            ),
            m => format!(
                "{m} bytes off its {} grain ({})",
                crate::units::exact(self.grain_bytes),
                self.grain_from
            ),
        };
        let alike = match (self.uniform, self.extents - self.extents_not_judged) {
            (_, 1) => "one extent".to_string(),
            (true, n) => format!("all {n} extents alike"),
            (false, n) => format!("{n} extents, not all alike"),
        };
        format!("file byte {l} lands at byte {h} of {on}, {off}; {alike}")
    }
}

impl Host {
    /// The brief the probe records.
    pub fn landing(&self) -> Landing {
        let g = self.grain_bytes.max(1);
        let off = |e: &HostExtent| (e.host_bytes % g + g - e.logical_bytes % g) % g;
        let judged: Vec<&HostExtent> = self.extents.iter().filter(|e| judged(e)).collect();
        let first = judged.first();
        Landing {
            device: self.device.clone(),
            judged_on: self.judged_on.clone(),
            device_offset_bytes: self.device_offset_bytes,
            grain_bytes: self.grain_bytes,
            grain_from: self.grain_from,
            first_logical_bytes: first.map(|e| e.logical_bytes),
            first_host_bytes: first.map(|e| e.host_bytes),
            misalignment_bytes: first.map(|e| off(e)),
            uniform: judged.windows(2).all(|w| off(w[0]) == off(w[1])),
            extents: self.extents.len(),
            extents_not_judged: self.extents.len() - judged.len(),
            not_judged: self.not_judged.clone(),
        }
    }
}

/// FIEMAP flags (by `sys::ExtentFlags` name) that make an extent's place
/// on the device no place to judge: not known yet, not the data's own
/// bytes (encoded, inline, tail-packed), never written (what the device
/// holds there is not the file's), or shared with another file (a write
/// moves it).
const NOT_JUDGED: [&str; 9] = [
    "unknown",
    "delalloc",
    "encoded",
    "data-encrypted",
    "not-aligned",
    "data-inline",
    "data-tail",
    "unwritten",
    "shared",
];

/// Whether an extent's host offset is judged (none of [`NOT_JUDGED`]).
pub fn judged(e: &HostExtent) -> bool {
    !e.flags.iter().any(|f| NOT_JUDGED.contains(&f.as_str()))
}

/// The guest starts of `t` (each partition's, each layer's data start
/// on the guest disk) with their bytes in the file (`guest`: the
/// container's map; a raw file is its own guest) and on the host.
pub fn units(
    t: &super::Target,
    guest: Option<&crate::bytes::SharedReader>,
    h: &Host,
) -> Vec<HostUnit> {
    let ss = t.table.sector_size;
    let mut starts: Vec<(String, u64)> = t
        .partitions()
        .filter(|p| p.kind != crate::layout::PartKind::Extended)
        .map(|p| {
            (
                format!("partition {}", p.number),
                p.first_lba.saturating_mul(ss),
            )
        })
        .collect();
    let disk = t.layer_device();
    for root in &t.stack {
        let prefix = root.partition.map(|n| format!("partition {n} / "));
        for l in root.layer.walk() {
            let at = l
                .offset_bytes
                .saturating_add(l.data_offset_bytes.unwrap_or(0));
            if l.device == disk && !starts.iter().any(|(_, s)| *s == at) {
                let what = format!("{}{}", prefix.as_deref().unwrap_or(""), l.name);
                starts.push((what, at));
            }
        }
    }
    starts
        .into_iter()
        .map(|(what, g)| {
            let file = match (&t.container, guest) {
                (None, _) => Some(g),
                (Some(_), Some(r)) => r.file_offset(g),
                (Some(_), None) => None,
            };
            HostUnit {
                what,
                guest_offset_bytes: g,
                file_offset_bytes: file,
                host_offset_bytes: file.and_then(|f| h.host_offset(f)),
            }
        })
        .collect()
}

/// Where the image file at `path` lies on the host; `grain` is
/// `--host-grain`.
pub fn place(path: &Path, sysfs: &Sysfs, grain: Option<u64>) -> Host {
    match std::fs::File::open(path) {
        Ok(f) => place_open(&f, path, sysfs, grain),
        Err(e) => Host::refused(None, format!("cannot open the file: {e}")),
    }
}

/// [`place`] for a file already open (the probe's, which may have no
/// name); `path` names it in errors.
pub fn place_open(file: &std::fs::File, path: &Path, sysfs: &Sysfs, grain: Option<u64>) -> Host {
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => return Host::refused(None, format!("cannot stat the file: {e}")),
    };
    // A btrfs subvolume's files have a device number of their own, which
    // mountinfo does not list: statfs(2)'s type names the filesystem.
    let mount = sys::mount_of(meta.dev()).or_else(|| {
        sys::fs_type_of_file(file).map(|fs_type| sys::Mount {
            devno: None,
            point: String::new(),
            fs_type,
            source: String::new(),
        })
    });
    let Some(m) = mount.as_ref() else {
        return Host::refused(None, "its filesystem is not in /proc/self/mountinfo".into());
    };
    if let Some(reason) = not_device_offsets(&m.fs_type) {
        return Host::refused(mount.as_ref(), reason);
    }
    let (major, minor) = sys::major_minor(meta.dev());
    let chain = match devices::of_number(major, minor, sysfs) {
        Ok(c) => c,
        Err(e) => return Host::refused(mount.as_ref(), e),
    };
    let map = match sys::extents(file, path, 0, meta.len(), MAX_EXTENTS) {
        Ok(map) => map,
        Err(e) => return Host::refused(mount.as_ref(), e.to_string()),
    };
    let mut h = on_device(&chain, sysfs, grain);
    h.filesystem = m.fs_type.clone();
    h.mount_point = m.point.clone();
    h.extents = collapse(&map.extents, h.device_offset_bytes);
    h.extents_complete = map.complete;
    h
}

/// Why a filesystem's FIEMAP offsets are no bytes of a device to judge;
/// None for those that are.
pub fn not_device_offsets(fs_type: &str) -> Option<String> {
    if DEVICE_OFFSETS.contains(&fs_type) {
        return None;
    }
    Some(match fs_type {
        "btrfs" => "btrfs maps extents to its own logical (chunk) addresses, not to bytes of a device (a chunk can lie on several)".into(),
        "overlay" => "overlayfs answers FIEMAP for the file of the filesystem below it, not for its own device: check the file there".into(),
        "zfs" | "tmpfs" | "ramfs" | "nfs" | "nfs4" | "cifs" | "smb3" | "9p" | "virtiofs" | "ceph" => {
            format!("{fs_type} does not map a file's extents onto a block device (no FIEMAP)")
        }
        f if f.starts_with("fuse") => {
            format!("{f} is a FUSE filesystem: its extents, if any, are not a kernel block device's")
        }
        f => format!("{f} is not known to map extents to bytes of its block device (ext2/3/4 and XFS are)"),
    })
}

/// The device the offsets are judged on, its offset there and its
/// grain, from the filesystem's device and those below (`chain`, itself
/// first, as `topology::devices` resolves them).
fn on_device(chain: &[Watched], sysfs: &Sysfs, grain: Option<u64>) -> Host {
    let Some(fs_dev) = chain.first() else {
        return Host::default();
    };
    let (judged, offset) = match fs_dev.offset_on_disk_bytes {
        Some(o) => (bottom(chain, fs_dev), o),
        None => (fs_dev, 0),
    };
    // A partition has no queue/ of its own: its disk's limits are its.
    let limits_of = match judged.layer {
        DeviceLayer::Partition => judged.disk.as_deref().unwrap_or(&judged.device),
        _ => judged.device.as_str(),
    };
    let topo = sysfs.topology(limits_of).unwrap_or_default();
    let (grain_bytes, grain_from) = host_grain(
        u64::from(topo.physical_block_size),
        u64::from(topo.minimum_io_size),
        grain,
    );
    Host {
        device: Some(fs_dev.device.clone()),
        devices: chain.iter().map(|w| w.device.clone()).collect(),
        judged_on: Some(judged.device.clone()),
        device_offset_bytes: offset,
        logical_block_bytes: u64::from(topo.logical_block_size),
        physical_block_bytes: u64::from(topo.physical_block_size),
        minimum_io_bytes: u64::from(topo.minimum_io_size),
        optimal_io_bytes: u64::from(topo.optimal_io_size),
        grain_bytes,
        grain_from,
        ..Host::default()
    }
}

/// The disk at the bottom of `from`'s chain: its first device below,
/// followed down to a disk or loop device.
fn bottom<'a>(chain: &'a [Watched], from: &'a Watched) -> &'a Watched {
    let mut at = from;
    for _ in 0..chain.len() {
        let below = at
            .below
            .first()
            .and_then(|b| chain.iter().find(|w| &w.device == b));
        match below {
            Some(b) => at = b,
            None => break,
        }
    }
    at
}

/// The grain: `--host-grain`, else the largest of 4 KiB, the physical
/// block and the minimum I/O, with where it came from.
pub fn host_grain(physical: u64, minimum_io: u64, given: Option<u64>) -> (u64, HostGrainFrom) {
    if let Some(g) = given.filter(|&g| g > 0) {
        return (g, HostGrainFrom::HostGrain);
    }
    // A 4 KiB physical block is named as the device's own; a minimum I/O
    // only where it is larger than the physical block (an md chunk).
    let mut best = (4 * KIB, HostGrainFrom::FourKib);
    if physical >= best.0 {
        best = (physical, HostGrainFrom::PhysicalBlock);
    }
    if minimum_io > best.0 {
        best = (minimum_io, HostGrainFrom::MinimumIo);
    }
    best
}

/// The extents as [`HostExtent`]s on the judged device (`offset` added),
/// each run of extents contiguous in the file and on the device, with the
/// same judged flags, collapsed into one.
pub fn collapse(extents: &[Extent], offset: u64) -> Vec<HostExtent> {
    // LAST and MERGED say nothing about the place.
    let quiet = ExtentFlags(ExtentFlags::LAST.0 | ExtentFlags::MERGED.0);
    let mut out: Vec<(HostExtent, u32)> = Vec::new();
    for e in extents {
        let kind = e.flags.0 & !quiet.0;
        if let Some((last, k)) = out.last_mut() {
            let follows = last.logical_bytes + last.length_bytes == e.logical
                && last.physical_bytes + last.length_bytes == e.physical;
            if follows && *k == kind {
                last.length_bytes += e.length;
                last.flags = e.flags.names().iter().map(|s| s.to_string()).collect();
                continue;
            }
        }
        out.push((
            HostExtent {
                logical_bytes: e.logical,
                length_bytes: e.length,
                physical_bytes: e.physical,
                host_bytes: e.physical.saturating_add(offset),
                flags: e.flags.names().iter().map(|s| s.to_string()).collect(),
            },
            kind,
        ));
    }
    out.into_iter().map(|(e, _)| e).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(logical: u64, physical: u64, length: u64, flags: u32) -> Extent {
        Extent {
            logical,
            physical,
            length,
            flags: ExtentFlags(flags),
        }
    }

    #[test]
    fn contiguous_extents_collapse_and_the_device_offset_is_added() {
        let v = collapse(
            &[
                ext(0, 1 << 20, 4096, 0x1000),
                ext(4096, (1 << 20) + 4096, 8192, 0),
                ext(12288, 9 << 20, 4096, 0x800),
                ext(16384, (9 << 20) + 4096, 4096, 0x800 | 0x1),
            ],
            63 * 512,
        );
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(
            (v[0].logical_bytes, v[0].length_bytes, v[0].host_bytes),
            (0, 12288, (1 << 20) + 63 * 512)
        );
        assert_eq!(v[1].length_bytes, 8192);
        assert_eq!(v[1].flags, ["last", "unwritten"]);
        assert!(judged(&v[0]) && !judged(&v[1]));
    }

    #[test]
    fn a_file_byte_maps_through_its_extent_or_not_at_all() {
        let h = Host {
            extents: collapse(&[ext(0, 1 << 20, 8192, 0), ext(8192, 0, 4096, 0x2)], 32256),
            ..Host::default()
        };
        assert_eq!(h.host_offset(4096), Some((1 << 20) + 32256 + 4096));
        assert_eq!(h.host_offset(8192), None, "unknown place");
        assert_eq!(h.host_offset(1 << 30), None, "past the extents");
    }

    #[test]
    fn the_landing_says_the_first_extent_and_whether_all_are_alike() {
        let mut h = Host {
            judged_on: Some("sdb".into()),
            grain_bytes: 4096,
            extents: collapse(
                &[ext(0, 1 << 20, 4096, 0), ext(8192, 9 << 20, 4096, 0x800)],
                32256,
            ),
            ..Host::default()
        };
        let l = h.landing();
        assert_eq!(l.first_host_bytes, Some((1 << 20) + 32256));
        assert_eq!(l.misalignment_bytes, Some(3584));
        assert!(l.uniform);
        assert_eq!((l.extents, l.extents_not_judged), (2, 1));
        assert_eq!(
            l.phrase(),
            "file byte 0 lands at byte 1080832 of sdb, 3584 bytes off its 4 KiB grain (4k); one extent"
        );
        h.extents[1].flags.clear();
        h.extents[1].host_bytes += 512;
        assert!(!h.landing().uniform);
        assert!(h.landing().phrase().ends_with("2 extents, not all alike"));
    }

    #[test]
    fn the_grain_is_the_largest_reported_or_the_one_given() {
        assert_eq!(host_grain(512, 512, None), (4096, HostGrainFrom::FourKib));
        assert_eq!(
            host_grain(4096, 4096, None),
            (4096, HostGrainFrom::PhysicalBlock)
        );
        assert_eq!(
            host_grain(4096, 65536, None),
            (65536, HostGrainFrom::MinimumIo)
        );
        assert_eq!(
            host_grain(8192, 512, None),
            (8192, HostGrainFrom::PhysicalBlock)
        );
        assert_eq!(
            host_grain(512, 512, Some(1 << 20)),
            (1 << 20, HostGrainFrom::HostGrain)
        );
        assert_eq!(HostGrainFrom::FourKib.as_str(), "4k");
    }

    #[test]
    fn only_ext_and_xfs_offsets_are_device_offsets() {
        assert!(not_device_offsets("ext4").is_none());
        assert!(not_device_offsets("xfs").is_none());
        assert!(not_device_offsets("btrfs").unwrap().contains("logical"));
        assert!(not_device_offsets("tmpfs").unwrap().contains("no FIEMAP"));
        assert!(not_device_offsets("fuse.sshfs").unwrap().contains("FUSE"));
        assert!(not_device_offsets("overlay").unwrap().contains("below"));
    }

    /// The ao-3584 tree: sdb1 at sector 63 of sdb (4 KiB physical);
    /// stack-holders: dm-1 over sdd1, whose offset on sdd is not read
    /// from a fixture (no live dm table), so it is judged on dm-1 itself.
    #[test]
    fn the_judged_device_is_the_disk_where_the_offset_is_known() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs");
        let ao = Sysfs::new(root.join("ao-3584"));
        let chain =
            devices::resolve_devices(&[std::path::PathBuf::from("sdb1")], &ao, None).watched;
        let h = on_device(&chain, &ao, None);
        assert_eq!(h.judged_on.as_deref(), Some("sdb"));
        assert_eq!(h.device_offset_bytes, 63 * 512);
        assert_eq!(
            (h.grain_bytes, h.grain_from),
            (4096, HostGrainFrom::PhysicalBlock)
        );
        assert_eq!(h.physical_block_bytes, 4096);
        let holders = Sysfs::new(root.join("stack-holders"));
        let chain =
            devices::resolve_devices(&[std::path::PathBuf::from("dm-1")], &holders, None).watched;
        let h = on_device(&chain, &holders, None);
        assert_eq!(h.judged_on.as_deref(), Some("dm-1"));
        assert_eq!(h.device_offset_bytes, 0);
        assert_eq!(h.devices, ["dm-1", "sdd1", "sdd"]);
        // md-raid5: md127 over three partitions, chunk 512 KiB (minimum
        // I/O), stripe 1 MiB: judged on the array against its chunk.
        let md = Sysfs::new(root.join("md-raid5"));
        let chain =
            devices::resolve_devices(&[std::path::PathBuf::from("md127")], &md, None).watched;
        let h = on_device(&chain, &md, None);
        assert_eq!(h.judged_on.as_deref(), Some("md127"));
        assert_eq!(
            (h.grain_bytes, h.grain_from, h.optimal_io_bytes),
            (512 << 10, HostGrainFrom::MinimumIo, 1 << 20)
        );
    }
}
