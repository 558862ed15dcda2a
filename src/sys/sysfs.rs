//! Reading disks from sysfs. The root is configurable so tests can point it
//! at fixture trees; with a non-default root no device node is opened.

use super::attr_dir::{read_open, text, AttrDir};
use crate::iolimits::{Topology, ZoneModel, Zones};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A partition as the kernel registered it (`/sys/block/D/DP`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelPartition {
    pub name: String,
    pub number: u32,
    pub start_bytes: u64,
    pub size_bytes: u64,
    /// As printed by the kernel; 4294967295 means misaligned.
    pub alignment_offset: i64,
}

/// A device-mapper device's own names, as its creator gave them: sysfs
/// `dm/name` (its /dev/mapper name) and `dm/uuid` (`LVM-...`,
/// `CRYPT-...`, `mpath-...`, `part1-...`; none for a plain `dmsetup
/// create`). Only a dm device has a `dm/` directory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DmIds {
    pub name: Option<String>,
    pub uuid: Option<String>,
}

/// A sysfs tree: `/sys` or a fixture copy of one.
#[derive(Clone, Debug)]
pub struct Sysfs {
    root: PathBuf,
}

impl Default for Sysfs {
    fn default() -> Self {
        Sysfs::new("/sys")
    }
}

/// The raw bytes of an attribute, at most one page of them (as [`AttrDir::attr`]).
pub fn read_attr(path: &Path) -> Option<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    super::stats::count_sysfs();
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .ok()?;
    read_open(&f)
}

/// A trimmed, non-empty text attribute (sysfs, procfs).
pub fn read_str(path: &Path) -> Option<String> {
    text(&read_attr(path)?)
}

pub fn read_num<T: std::str::FromStr>(path: &Path) -> Option<T> {
    read_str(path)?.parse().ok()
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Sorted entry names of a directory; empty when it cannot be read.
pub fn list_dir(path: &Path) -> Vec<String> {
    super::stats::count_sysfs();
    let mut names: Vec<String> = fs::read_dir(path)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Where a sysfs link (`block/sda`, `dev/block/8:1`) points, with its
/// `..` resolved by name: sysfs links are relative and point into
/// `devices/`, whose directories are no links, so one readlink does what
/// canonicalize does with one per component.
pub fn link_target(link: &Path) -> Option<PathBuf> {
    let to = fs::read_link(link).ok()?;
    let mut out = link.parent()?.to_path_buf();
    for c in to.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(n) => out.push(n),
            std::path::Component::RootDir => out = PathBuf::from("/"),
            std::path::Component::CurDir | std::path::Component::Prefix(_) => {}
        }
    }
    Some(out)
}

impl Sysfs {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Sysfs { root: root.into() }
    }

    /// True when this is the live `/sys`, so device nodes match it.
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/sys")
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn block_dir(&self, name: &str) -> PathBuf {
        self.root.join("block").join(name)
    }

    /// Whole disks worth looking at: everything in `block/` except ram
    /// disks, loop devices without a backing file, and empty drives.
    pub fn default_disks(&self) -> io::Result<Vec<String>> {
        let dir = self.root.join("block");
        fs::read_dir(&dir)?;
        Ok(list_dir(&dir)
            .into_iter()
            .filter(|name| !name.starts_with("ram"))
            .filter(|name| {
                !name.starts_with("loop") || self.block_dir(name).join("loop/backing_file").exists()
            })
            .filter(|name| read_num::<u64>(&self.block_dir(name).join("size")).unwrap_or(0) > 0)
            .collect())
    }

    /// The dm names of block device `name`; None when it is not a
    /// device-mapper device (it has no `dm/` directory).
    pub fn dm_ids(&self, name: &str) -> Option<DmIds> {
        dm_ids_in(&self.disk_dir(name))
    }

    /// True when `name` is a whole disk in this tree.
    pub fn has_disk(&self, name: &str) -> bool {
        self.block_dir(name).join("size").exists()
    }

    /// Map a device number to (disk name, partition number) through `dev/block/M:m`.
    pub fn resolve_devnum(&self, major: u32, minor: u32) -> Option<(String, Option<u32>)> {
        let link = self.root.join(format!("dev/block/{major}:{minor}"));
        let path = link_target(&link).or_else(|| fs::canonicalize(link).ok())?;
        let name = path.file_name()?.to_string_lossy().into_owned();
        if path.join("partition").exists() {
            let disk = path.parent()?.file_name()?.to_string_lossy().into_owned();
            let number = read_num(&path.join("partition"))?;
            Some((disk, Some(number)))
        } else {
            Some((name, None))
        }
    }

    /// Map a kernel name (`sda`, `sda1`, `nvme0n1p2`) to (disk name,
    /// partition number) without touching /dev: a whole disk in `block/`,
    /// or a partition directory of one (with its `partition` number).
    pub fn resolve_name(&self, name: &str) -> Option<(String, Option<u32>)> {
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return None;
        }
        if self.has_disk(name) {
            return Some((name.to_string(), None));
        }
        list_dir(&self.root.join("block"))
            .into_iter()
            .find_map(|disk| {
                let n = read_num(&self.block_dir(&disk).join(name).join("partition"))?;
                Some((disk, Some(n)))
            })
    }

    /// Map a block-device node to (disk name, partition number); errors say
    /// why `path` is not one this tree knows.
    pub fn resolve_node(&self, meta: &fs::Metadata) -> Result<(String, Option<u32>), String> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        if !meta.file_type().is_block_device() {
            return Err("not a block device".into());
        }
        let rdev = meta.rdev();
        let (major, minor) = (rustix::fs::major(rdev), rustix::fs::minor(rdev));
        self.resolve_devnum(major, minor).ok_or_else(|| {
            format!(
                "no entry for block device {major}:{minor} under {}/dev/block",
                self.root.display()
            )
        })
    }

    /// The limits of one disk as sysfs states them. Every value is input: a
    /// missing limit, one that is not a number, or a set no kernel would
    /// report (a physical block of 0, say) is an error naming the file.
    pub fn topology(&self, name: &str) -> io::Result<Topology> {
        topology_in(&self.disk_dir(name))
    }

    /// A disk's zones as sysfs states them: `queue/zoned` (absent on
    /// kernels before 4.10: none), and for a zoned disk `queue/chunk_sectors`
    /// (the zone size in 512-byte sectors, block/blk-sysfs.c) and
    /// `queue/nr_zones` (5.1 and later). `conventional_zones` is left unread
    /// (None): it takes BLKREPORTZONE. A model sysfs does not name, or a
    /// zoned disk without a zone size, is an error naming the file.
    pub fn zones(&self, name: &str) -> io::Result<Zones> {
        zones_in(&self.disk_dir(name))
    }

    /// The partitions the kernel registered for a disk: the directories
    /// under it named after it (block/partitions/core.c `add_partition`
    /// names each `<disk><N>` or `<disk>p<N>`), so the attributes and
    /// other directories beside them are never opened.
    pub fn partitions(&self, name: &str) -> Vec<KernelPartition> {
        let dir = self.disk_dir(name);
        partitions_from(&dir, &dir.entries("."), name)
    }

    /// Disk `name`'s directory (`block/NAME`), held open to read in.
    pub fn disk_dir(&self, name: &str) -> AttrDir {
        AttrDir::open(self.block_dir(name))
    }
}

/// The limits of the disk whose directory is `dir`, as [`Sysfs::topology`].
pub fn topology_in(dir: &AttrDir) -> io::Result<Topology> {
    let t = Topology {
        logical_block_size: dir.need_num("queue/logical_block_size")?,
        physical_block_size: dir.need_num("queue/physical_block_size")?,
        minimum_io_size: dir.need_num("queue/minimum_io_size")?,
        optimal_io_size: dir.need_num("queue/optimal_io_size")?,
        alignment_offset: dir.opt_num("alignment_offset")?.unwrap_or(0),
        discard_granularity: dir.opt_num("queue/discard_granularity")?.unwrap_or(0),
        // Printed with %d, and Linux 6.1 prints the alignment offset
        // there (so -1 on a misaligned dm device): negative means none.
        discard_alignment: dir
            .opt_num::<i64>("discard_alignment")?
            .map_or(0, |v| u64::try_from(v).unwrap_or(0)),
        // An mmc card's, set by topology from its device/ directory.
        erase_unit_bytes: 0,
        sd_boundary_unit_bytes: 0,
        removable_flash: false,
    };
    t.validate()
        .map_err(|e| invalid(format!("{}: {e}", dir.join("queue").display())))?;
    Ok(t)
}

/// The zones of the disk whose directory is `dir`, as [`Sysfs::zones`].
pub fn zones_in(dir: &AttrDir) -> io::Result<Zones> {
    let model = match dir.str("queue/zoned") {
        None => ZoneModel::None,
        Some(s) => ZoneModel::from_sysfs(&s).ok_or_else(|| {
            let s: String = s.chars().take(40).collect();
            let path = dir.join("queue/zoned");
            invalid(format!("{}: '{s}' is not a zone model", path.display()))
        })?,
    };
    if model == ZoneModel::None {
        return Ok(Zones::default());
    }
    let sectors: u64 = dir.need_num("queue/chunk_sectors")?;
    let chunk = dir.join("queue/chunk_sectors");
    if sectors == 0 {
        return Err(invalid(format!(
            "{}: a {} disk with a zone size of 0",
            chunk.display(),
            model
        )));
    }
    let zone_size_bytes = sectors
        .checked_mul(512)
        .ok_or_else(|| invalid(format!("{}: {sectors} sectors overflow", chunk.display())))?;
    Ok(Zones {
        model,
        zone_size_bytes,
        zones: dir.opt_num("queue/nr_zones")?.unwrap_or(0),
        conventional_zones: None,
        conventional_zones_error: None,
    })
}

/// The dm names of the block device whose directory is `dir`, as
/// [`Sysfs::dm_ids`].
pub fn dm_ids_in(dir: &AttrDir) -> Option<DmIds> {
    dir.is_dir("dm").then(|| DmIds {
        name: dir.str("dm/name"),
        uuid: dir.str("dm/uuid"),
    })
}

/// The partitions of disk `name` whose directory is `dir` (its
/// `entries`, listed already), as [`Sysfs::partitions`].
pub fn partitions_from(
    dir: &AttrDir,
    entries: &[(String, bool)],
    name: &str,
) -> Vec<KernelPartition> {
    let mut parts: Vec<KernelPartition> = entries
        .iter()
        .filter(|(child, is_dir)| *is_dir && child.len() > name.len() && child.starts_with(name))
        .filter_map(|(child, _)| {
            let number =
                number_in_name(name, child).or_else(|| dir.num(&format!("{child}/partition")))?;
            Some(KernelPartition {
                number,
                start_bytes: dir
                    .num::<u64>(&format!("{child}/start"))?
                    .checked_mul(512)?,
                size_bytes: dir.num::<u64>(&format!("{child}/size"))?.checked_mul(512)?,
                alignment_offset: dir.num(&format!("{child}/alignment_offset")).unwrap_or(0),
                name: child.clone(),
            })
        })
        .collect();
    parts.sort_by_key(|p| p.number);
    parts
}

/// A partition's number as the kernel names it: `<disk><N>`, or
/// `<disk>p<N>` when the disk's name ends in a digit
/// (block/partitions/core.c `add_partition`), so its `partition`
/// attribute need not be read; None for a name not made so.
fn number_in_name(disk: &str, child: &str) -> Option<u32> {
    let rest = child.strip_prefix(disk)?;
    let digits = match disk.ends_with(|c: char| c.is_ascii_digit()) {
        true => rest.strip_prefix('p')?,
        false => rest,
    };
    let first = digits.chars().next()?;
    (first.is_ascii_digit() && first != '0' && digits.chars().all(|c| c.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// A block device's number from `class/block/NAME/dev` (`8:1`).
pub fn devnum(sysfs_root: &Path, name: &str) -> Option<(u32, u32)> {
    let s = fs::read_to_string(sysfs_root.join("class/block").join(name).join("dev")).ok()?;
    let (a, b) = s.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::number_in_name;

    #[test]
    fn partition_numbers_come_from_the_kernels_names() {
        assert_eq!(number_in_name("sda", "sda1"), Some(1));
        assert_eq!(number_in_name("sda", "sda12"), Some(12));
        assert_eq!(number_in_name("nvme0n1", "nvme0n1p3"), Some(3));
        assert_eq!(number_in_name("loop7", "loop7p128"), Some(128));
        assert_eq!(number_in_name("mmcblk0", "mmcblk0p2"), Some(2));
        // Not made by add_partition's rule: the attribute decides.
        assert_eq!(number_in_name("nvme0n1", "nvme0n12"), None);
        assert_eq!(number_in_name("sda", "sdap1"), None);
        assert_eq!(number_in_name("sda", "sda01"), None);
        assert_eq!(number_in_name("sda", "sda"), None);
        assert_eq!(number_in_name("sda", "sdb1"), None);
        assert_eq!(number_in_name("sda", "sda99999999999"), None);
    }
}
