//! May we write to this device? Destructive I/O is refused while the device
//! or any of its partitions is mounted, held by LVM/md/dm, used as swap, or
//! (unless forced) carries a partition table, filesystem, LVM, RAID or
//! LUKS signature. Devices are matched by device number, never by name.

use crate::bytes::ReadAt;
use crate::stack;
use crate::sys::{self, list_dir};
use std::path::Path;

/// A block device by name and number, as sysfs lists it.
#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub major: u32,
    pub minor: u32,
}

/// Why writing is refused.
#[derive(Debug, Default)]
pub struct Verdict {
    /// In use right now: never overridden.
    pub in_use: Vec<String>,
    /// Holds data: overridden by --force.
    pub signatures: Vec<String>,
}

impl Verdict {
    pub fn refused(&self, force: bool) -> bool {
        !self.in_use.is_empty() || (!force && !self.signatures.is_empty())
    }
}

/// The device itself, its partitions (for a whole disk) or its disk (for
/// a partition): everything whose use makes writing here unsafe.
pub fn related_nodes(
    sysfs_root: &Path,
    disk: &str,
    partitions: &[String],
    only: Option<&str>,
) -> Vec<Node> {
    let names: Vec<String> = match only {
        Some(part) => vec![part.to_string(), disk.to_string()],
        None => std::iter::once(disk.to_string())
            .chain(partitions.iter().cloned())
            .collect(),
    };
    names
        .into_iter()
        .filter_map(|name| {
            let (major, minor) = sys::devnum(sysfs_root, &name)?;
            Some(Node { name, major, minor })
        })
        .collect()
}

/// Mounts of any of `nodes`: matched by the device number of the mount, or
/// of its source device (btrfs reports an anonymous device number in the
/// first field).
pub fn mounts(mountinfo: &str, nodes: &[Node]) -> Vec<String> {
    let mut out = Vec::new();
    for m in sys::parse_mountinfo(mountinfo) {
        let by_source = sys::rdev_of(&m.source);
        for n in nodes {
            let id = Some((n.major, n.minor));
            if m.devno == id || by_source == id {
                out.push(format!(
                    "{} ({}:{}) is mounted on {}",
                    n.name, n.major, n.minor, m.point
                ));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Active swap on any of `nodes`, from /proc/swaps text.
pub fn swaps(proc_swaps: &str, nodes: &[Node]) -> Vec<String> {
    let mut out = Vec::new();
    for line in proc_swaps.lines().skip(1) {
        let Some(path) = line.split_whitespace().next() else {
            continue;
        };
        let path = sys::unescape(path);
        if let Some(id) = sys::rdev_of(&path) {
            for n in nodes.iter().filter(|n| (n.major, n.minor) == id) {
                out.push(format!("{} is active swap ({path})", n.name));
            }
        }
    }
    out
}

/// Holders (device-mapper, md, LVM) listed under sysfs for any of `nodes`.
pub fn holders(sysfs_root: &Path, nodes: &[Node]) -> Vec<String> {
    let mut out = Vec::new();
    for n in nodes {
        let names = list_dir(&sysfs_root.join("class/block").join(&n.name).join("holders"));
        if !names.is_empty() {
            out.push(format!("{} is held by {}", n.name, names.join(", ")));
        }
    }
    out
}

/// Why random writes to a disk are refused outright, whatever the flags:
/// its sequential-write-required zones (a host-managed disk, an NVMe ZNS
/// namespace) reject a write that is not at the zone's write pointer, so
/// the probe's random writes would only fail at the device. The sentence
/// is the one line `probe --write` stops with, before any I/O.
pub fn zoned_refusal(path: &Path, zones: &crate::iolimits::Zones) -> Option<String> {
    zones.has_sequential_write_required().then(|| {
        format!(
            "refusing to write to {}: it is a {} zoned disk whose sequential zones take writes only at their write pointer ({} zones of {} bytes), so random writes would be rejected by the device; probe it without --write (reads are measured as on any disk)",
            path.display(),
            zones.model,
            zones.zones,
            zones.zone_size_bytes
        )
    })
}

/// Everything that makes writing to the device unsafe.
pub fn assess(sysfs_root: &Path, nodes: &[Node], content: &(impl ReadAt + ?Sized)) -> Verdict {
    let mountinfo = sys::mountinfo();
    let proc_swaps = sys::swaps();
    let mut in_use = mounts(&mountinfo, nodes);
    in_use.extend(swaps(&proc_swaps, nodes));
    in_use.extend(holders(sysfs_root, nodes));
    let mut signatures: Vec<String> = stack::scan_signatures(content)
        .into_iter()
        .map(|s| {
            let a = stack::article(s.what);
            format!("it carries {a} {} (magic at byte {})", s.what, s.offset)
        })
        .collect();
    // An image container (a qcow2 file written to a disk, or given as the
    // target) holds a guest disk: as much data as any filesystem.
    if let Ok(f) = crate::image::detect(content) {
        if f != crate::image::ContainerFormat::Raw {
            signatures.push(format!("it is a {f} disk image"));
        }
    }
    Verdict { in_use, signatures }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, major: u32, minor: u32) -> Node {
        Node {
            name: name.into(),
            major,
            minor,
        }
    }

    #[test]
    fn mounts_match_by_number_not_name() {
        let info = "36 25 7:1 / /mnt/my\\040data rw,relatime shared:1 - ext4 /dev/whatever rw\n\
                    37 25 0:45 / /srv rw - btrfs /nonexistent rw\n";
        let got = mounts(info, &[node("loop0p1", 7, 1), node("loop0", 7, 0)]);
        assert_eq!(got, vec!["loop0p1 (7:1) is mounted on /mnt/my data"]);
        assert!(mounts(info, &[node("sda1", 8, 1)]).is_empty());
        assert!(mounts("garbage\n\n1 2 3\n", &[node("x", 7, 1)]).is_empty());
    }

    #[test]
    fn unescape_octal() {
        assert_eq!(sys::unescape("a\\040b\\134c"), "a b\\c");
        assert_eq!(sys::unescape("tail\\04"), "tail\\04");
    }
}

#[cfg(test)]
mod zoned_tests {
    use super::*;
    use crate::iolimits::{ZoneModel, Zones};

    fn zones(model: ZoneModel) -> Zones {
        Zones {
            model,
            zone_size_bytes: 4 << 20,
            zones: 64,
            ..Zones::default()
        }
    }

    #[test]
    fn only_sequential_write_required_zones_refuse_writes() {
        let p = Path::new("/dev/sdb");
        let why = zoned_refusal(p, &zones(ZoneModel::HostManaged)).unwrap();
        assert!(
            why.starts_with("refusing to write to /dev/sdb: it is a host-managed zoned disk"),
            "{why}"
        );
        assert!(why.contains("64 zones of 4194304 bytes"), "{why}");
        assert!(!why.contains('\n'));
        assert_eq!(zoned_refusal(p, &zones(ZoneModel::HostAware)), None);
        assert_eq!(zoned_refusal(p, &Zones::default()), None);
    }
}
