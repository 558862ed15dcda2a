//! Many paths, one disk: a multipath map (a dm device whose uuid starts
//! `mpath-`, `dm::DmRole::Multipath`) and the SCSI disks under it, each
//! one path to the same LUN. The map is the disk people use and judge;
//! a path is found by its `holders/` (the map holds every path), a map's
//! paths by its `slaves/`. Both lists are what `Sysfs::disk` reads anyway;
//! the default targets read each map's `slaves/` once (the kernel keeps
//! the two lists in step), and nothing more on a host without a map.

use super::dm::{dm_role, DmRole};
use crate::sys::{list_dir, Sysfs};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::PathBuf;

/// The multipath map a path device is one path of.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MultipathMap {
    /// The map's kernel name (`dm-0`).
    pub name: String,
    /// Its device-mapper name (`mpatha`, sysfs `dm/name`).
    pub dm_name: String,
}

impl MultipathMap {
    /// The node multipath-tools and people name the map by:
    /// `/dev/mapper/DM_NAME` (libdevmapper's), or `/dev/dm-N` when the
    /// map has no name.
    pub fn node(&self) -> PathBuf {
        if self.dm_name.is_empty() {
            PathBuf::from("/dev").join(&self.name)
        } else {
            PathBuf::from("/dev/mapper").join(&self.dm_name)
        }
    }
}

/// The multipath map among a disk's `holders`; None for a disk no map
/// holds. Only the dm devices among them are asked their names.
pub fn map_among(sysfs: &Sysfs, holders: &[String]) -> Option<MultipathMap> {
    holders
        .iter()
        .filter(|h| h.starts_with("dm-"))
        .find_map(|h| {
            let ids = sysfs.dm_ids(h)?;
            (dm_role(&ids) == DmRole::Multipath).then(|| MultipathMap {
                name: h.clone(),
                dm_name: ids.name.unwrap_or_default(),
            })
        })
}

/// The paths of every multipath map among `disks` (each disk's name
/// and dm role, as the default targets read them): each map's `slaves/`,
/// listed once; nothing is read on a host without a map.
pub fn paths_of_maps(sysfs: &Sysfs, disks: &[(String, Option<DmRole>)]) -> HashSet<String> {
    disks
        .iter()
        .filter(|(_, role)| *role == Some(DmRole::Multipath))
        .flat_map(|(map, _)| list_dir(&sysfs.block_dir(map).join("slaves")))
        .collect()
}

/// A map's paths: its `slaves/` (kernel names, sorted); empty for any
/// other device.
pub fn paths_of(role: Option<DmRole>, slaves: &[String]) -> Vec<String> {
    match role {
        Some(DmRole::Multipath) => slaves.to_vec(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A tree with dm-0 (`uuid`) holding sdb, and sda held by nothing.
    fn tree(uuid: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let block = dir.path().join("block");
        for d in ["sda/holders", "sdb/holders/dm-0", "dm-0/dm"] {
            fs::create_dir_all(block.join(d)).unwrap();
        }
        fs::write(block.join("dm-0/dm/name"), "mpatha\n").unwrap();
        fs::write(block.join("dm-0/dm/uuid"), format!("{uuid}\n")).unwrap();
        dir
    }

    #[test]
    fn a_path_is_held_by_a_map_with_an_mpath_uuid() {
        let t = tree("mpath-3600508b400105e210000900000490000");
        let sysfs = Sysfs::new(t.path());
        let map = map_among(&sysfs, &["dm-0".into()]).unwrap();
        assert_eq!(map.dm_name, "mpatha");
        assert_eq!(map.node(), PathBuf::from("/dev/mapper/mpatha"));
        // A disk under an LV, a dm-crypt mapping, a kpartx map: no path.
        for uuid in ["LVM-abc", "CRYPT-LUKS2-x", "part1-mpath-3600508b4", ""] {
            let t = tree(uuid);
            assert_eq!(
                map_among(&Sysfs::new(t.path()), &["dm-0".into()]),
                None,
                "{uuid}"
            );
        }
    }

    #[test]
    fn the_default_targets_read_only_a_maps_slaves() {
        let t = tree("mpath-3600508b4");
        fs::create_dir_all(t.path().join("block/dm-0/slaves/sdb")).unwrap();
        let sysfs = Sysfs::new(t.path());
        let disks = [
            ("dm-0".to_string(), Some(DmRole::Multipath)),
            ("sda".to_string(), None),
            ("sdb".to_string(), None),
        ];
        assert_eq!(paths_of_maps(&sysfs, &disks), HashSet::from(["sdb".into()]));
        assert!(paths_of_maps(&sysfs, &disks[1..]).is_empty());
    }

    #[test]
    fn only_a_map_lists_paths() {
        let slaves = ["sdb".to_string(), "sdc".to_string()];
        assert_eq!(paths_of(Some(DmRole::Multipath), &slaves), slaves);
        assert!(paths_of(Some(DmRole::Volume), &slaves).is_empty());
        assert!(paths_of(None, &slaves).is_empty());
    }
}
