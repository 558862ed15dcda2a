//! cgroup v2 ids as paths. bpf_get_current_cgroup_id() gives the id of
//! the task's cgroup in the default (v2) hierarchy: its kernfs node id,
//! which the cgroup2 filesystem shows as the inode number of the cgroup's
//! directory (Linux 5.5 and later; before, the low 32 bits are the inode
//! number and the high 32 a generation: kernfs_node's id in
//! include/linux/kernfs.h). The cgroup2 mount is found in mountinfo
//! (/sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid
//! one) and its directories walked until every id asked for is found.

use super::procfs;
use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Deeper cgroups than this, and more directories than that, are not
/// walked (a host has hundreds or a few thousand).
const MAX_DEPTH: usize = 32;
const MAX_DIRS: usize = 200_000;

/// Where the cgroup2 filesystem is mounted, if it is.
pub fn mount_point() -> Option<PathBuf> {
    procfs::parse_mountinfo(&procfs::mountinfo())
        .into_iter()
        .find(|m| m.fs_type == "cgroup2")
        .map(|m| PathBuf::from(m.point))
}

/// Whether a directory's inode number is the cgroup id `id`.
fn is_id(ino: u64, id: u64) -> bool {
    ino == id || (id >> 32 != 0 && ino == id & 0xffff_ffff)
}

/// The paths of the cgroups `ids` under the cgroup2 mount `root`, each
/// relative to it (`/`, `/system.slice/cron.service`); ids not found
/// (a cgroup removed since) are absent.
pub fn paths_under(root: &Path, ids: &[u64]) -> HashMap<u64, String> {
    let mut out = HashMap::new();
    let mut want: Vec<u64> = ids.to_vec();
    let mut found = |ino: u64, rel: &str, want: &mut Vec<u64>| {
        want.retain(|&id| {
            let hit = is_id(ino, id);
            if hit {
                out.insert(id, rel.to_string());
            }
            !hit
        });
    };
    if let Ok(m) = std::fs::metadata(root) {
        found(m.ino(), "/", &mut want);
    }
    let mut queue = VecDeque::from([(root.to_path_buf(), String::new(), 0usize)]);
    let mut walked = 0;
    while let Some((dir, rel, depth)) = queue.pop_front() {
        if want.is_empty() || walked >= MAX_DIRS {
            break;
        }
        walked += 1;
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let child = format!("{rel}/{name}");
            found(e.ino(), &child, &mut want);
            if depth + 1 < MAX_DEPTH {
                queue.push_back((e.path(), child, depth + 1));
            }
        }
    }
    out
}

/// The paths of `ids` in the live cgroup2 hierarchy; empty where cgroup2
/// is not mounted.
pub fn paths(ids: &[u64]) -> HashMap<u64, String> {
    match mount_point() {
        Some(root) if !ids.is_empty() => paths_under(&root, ids),
        _ => HashMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_the_directories_inode_numbers() {
        let t = tempfile::tempdir().unwrap();
        let leaf = t.path().join("system.slice/cron.service");
        std::fs::create_dir_all(&leaf).unwrap();
        let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
        let (root, slice, svc) = (
            ino(t.path()),
            ino(&t.path().join("system.slice")),
            ino(&leaf),
        );
        // An id of a kernel before 5.5: the generation above the inode.
        let old = (7u64 << 32) | svc;
        let got = paths_under(t.path(), &[root, slice, old, u64::MAX - 1]);
        assert_eq!(got.get(&root).map(String::as_str), Some("/"));
        assert_eq!(got.get(&slice).map(String::as_str), Some("/system.slice"));
        assert_eq!(
            got.get(&old).map(String::as_str),
            Some("/system.slice/cron.service")
        );
        assert_eq!(got.len(), 3, "an id not found is absent");
    }
}
