//! The live kernel's own stack: from a disk or partition up through sysfs
//! `holders/` (dm-crypt, dm-linear/striped LVs, md arrays) to the top
//! devices, with the limits the kernel computed for each. On the live
//! system the top devices are opened read-only to find the filesystem
//! inside (an opened LUKS mapping, an active LV).

use super::region::Region;
use super::walk::{self, Pending};
use super::Detail;
use super::{HolderInfo, Layer, LayerKind};
use crate::bytes::SharedReader;
use crate::findings::{Code, Finding};
use crate::iolimits::Topology;
use crate::sys::{list_dir, read_str};
use crate::topology::Sysfs;
use std::path::Path;
use std::rc::Rc;

/// Deeper stacks than this are not followed (real ones have 3 or 4 levels).
const MAX_DEPTH: usize = 8;

/// The holders of the block device whose sysfs directory is `dir`
/// (`block/sda` or `block/sda/sda1`), and theirs, recursively.
pub fn holders(sysfs: &Sysfs, dir: &Path, below: Topology, pending: &mut Pending) -> Vec<Layer> {
    walk_holders(sysfs, dir, below, pending, 0)
}

fn walk_holders(
    sysfs: &Sysfs,
    dir: &Path,
    below: Topology,
    pending: &mut Pending,
    depth: usize,
) -> Vec<Layer> {
    if depth >= MAX_DEPTH {
        return Vec::new();
    }
    let mut out = Vec::new();
    for name in list_dir(&dir.join("holders")) {
        let hdir = sysfs.root().join("block").join(&name);
        // Limits no kernel would report leave the holder in the tree,
        // unfollowed, with the reason, instead of dropping it unseen.
        let topo = sysfs.topology(&name);
        let size = read_str(&hdir.join("size"))
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
            .saturating_mul(512);
        let dm = sysfs.dm_ids(&name).unwrap_or_default();
        let info = HolderInfo {
            kernel_name: name.clone(),
            dm_name: dm.name,
            dm_uuid: dm.uuid,
            md_level: read_str(&hdir.join("md/level")),
            dm_target: sysfs.is_live().then(|| dm_target(&hdir)).flatten(),
        };
        let what = match (&info.dm_uuid, &info.md_level) {
            (Some(u), _) if u.starts_with("CRYPT-") => "dm-crypt",
            (Some(u), _) if u.starts_with("LVM-") => match info.dm_target.as_deref() {
                // The pool's own device (-tpool) and a thin LV: what the
                // kernel's limits below are for.
                Some("thin-pool") => "LVM thin-pool",
                Some("thin") => "LVM thin LV",
                _ => "LVM LV",
            },
            (Some(_), _) | (None, None) => "dm",
            (None, Some(_)) => "md",
        };
        let label = info
            .dm_name
            .clone()
            .or_else(|| info.md_level.clone())
            .unwrap_or_default();
        let device = format!("/dev/{name}");
        let mut l = Layer::new(
            LayerKind::Holder,
            format!("{what} {label} ({name})"),
            device.clone(),
            0,
            size,
            below,
        );
        l.detail = Some(Detail::Holder(info));
        let topo = match topo {
            Ok(topo) => topo,
            Err(e) => {
                l.findings.push(Finding::new(
                    Code::LayerNotFollowed,
                    format!("the kernel's limits of {name} cannot be read ({e}): what it holds is not checked"),
                ));
                out.push(l);
                continue;
            }
        };
        l.exposes = Some(topo);
        l.children = walk_holders(sysfs, &hdir, topo, pending, depth + 1);
        if l.children.is_empty() && sysfs.is_live() {
            if let Some(src) = open(&device) {
                let r = Region {
                    src,
                    device,
                    offset: 0,
                    len: size,
                    below: topo,
                };
                l.children.extend(walk::walk_region(&r, pending));
            }
        }
        out.push(l);
    }
    out
}

/// The first target type of the live dm device whose sysfs directory is
/// `dir` (its `dev` is `major:minor`).
fn dm_target(dir: &Path) -> Option<String> {
    let dev = read_str(&dir.join("dev"))?;
    let (major, minor) = dev.trim().split_once(':')?;
    let table = crate::sys::dm_table(major.parse().ok()?, minor.parse().ok()?).ok()?;
    table.into_iter().next().map(|t| t.kind)
}

fn open(node: &str) -> Option<SharedReader> {
    let src = crate::sys::open_source(Path::new(node)).ok()?;
    Some(Rc::new(src))
}
