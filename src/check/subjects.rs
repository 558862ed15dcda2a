//! One layer, one subject. The same device can be shown in several places
//! of one run: an LV under each PV's disk (the kernel's holder above the
//! PV), in the volume group assembled from those PVs, and as a target of
//! its own when it was named or listed; an md array under each member's
//! disk and assembled from them. Its findings are one problem each, so
//! every copy gets the subject of one place, the canonical one: the
//! assembled layer when there is one, else the first place it was seen.
//! `findings::Distinct` then counts each once, wherever the tree shows it.
//!
//! It also says which targets an assembled array or volume group is made
//! from, so that what is found in it makes those targets' status too.

use super::outcome::CheckedTarget;
use crate::findings::Subject;
use crate::stack::{Layer, LayerKind};
use std::collections::HashMap;

/// The place a layer's findings are said to be about, and the layer seen
/// there (its children pair with the other places' children).
#[derive(Clone)]
struct Canon {
    target: Option<String>,
    partition: Option<u32>,
    path: String,
    layer: Layer,
}

impl Canon {
    fn subject(&self) -> Subject {
        Subject {
            target: self.target.clone(),
            partition: self.partition,
            layer: Some(self.path.clone()),
        }
    }

    /// The canonical place of `child` (a layer inside this one).
    fn child(&self, child: &Layer) -> Canon {
        Canon {
            target: self.target.clone(),
            partition: self.partition,
            path: format!("{} / {}", self.path, child.name),
            layer: child.clone(),
        }
    }
}

/// Give every copy of a layer the subject of its canonical place: the
/// kernel's holders in the targets' trees, and targets that are such a
/// holder's device (`/dev/dm-0` named or listed beside its PVs' disks).
pub fn unify(targets: &mut [CheckedTarget], assembled: &[Layer]) {
    let mut by_device: HashMap<String, Canon> = HashMap::new();
    // First the holders, whose canonical place is an assembled layer or
    // their first place; then the targets that are one of them.
    for t in targets.iter_mut() {
        let target = t.path.clone();
        for root in &mut t.stack {
            let partition = root_partition(root);
            let path = root.name.clone();
            holders(root, &path, &target, partition, assembled, &mut by_device);
        }
    }
    for t in targets.iter_mut() {
        let Some(canon) = by_device.get(&t.path) else {
            continue;
        };
        if let [root] = t.stack.as_mut_slice() {
            pair(canon, root);
        }
    }
}

/// The partition a root layer stands for ("partition 3").
fn root_partition(root: &Layer) -> Option<u32> {
    match root.kind {
        LayerKind::Partition => root.name.strip_prefix("partition ")?.parse().ok(),
        _ => None,
    }
}

/// What a holder's parent says about which assembled layer the holder is:
/// where it is, and whether it is an md member or a PV (its uuid).
struct Parent {
    device: String,
    offset_bytes: u64,
    md_member: bool,
    pv_uuid: Option<String>,
}

impl Parent {
    fn of(l: &Layer) -> Parent {
        Parent {
            device: l.device.clone(),
            offset_bytes: l.offset_bytes,
            md_member: l.md().is_some(),
            pv_uuid: l.pv().map(|p| p.uuid.clone()),
        }
    }
}

/// Walk `l` (at `path` in `target`) for holders, and give each (and what
/// it holds) its canonical subject.
fn holders(
    l: &mut Layer,
    path: &str,
    target: &str,
    partition: Option<u32>,
    assembled: &[Layer],
    by_device: &mut HashMap<String, Canon>,
) {
    let parent = Parent::of(l);
    for c in &mut l.children {
        let here = format!("{path} / {}", c.name);
        if c.kind == LayerKind::Holder {
            let canon = assembled_of(&parent, c, assembled)
                .or_else(|| by_device.get(&c.device).cloned())
                .unwrap_or_else(|| Canon {
                    target: Some(target.to_string()),
                    partition,
                    path: here.clone(),
                    layer: c.clone(),
                });
            by_device
                .entry(c.device.clone())
                .or_insert_with(|| canon.clone());
            pair(&canon, c);
        }
        holders(c, &here, target, partition, assembled, by_device);
    }
}

/// The assembled layer a holder is the kernel's device of: the md array
/// whose member is the holder's parent, or the LV of the volume group
/// whose PV it is, by the dm name LVM gives it.
fn assembled_of(parent: &Parent, holder: &Layer, assembled: &[Layer]) -> Option<Canon> {
    let info = holder.holder()?;
    for a in assembled.iter().flat_map(|a| a.walk()) {
        if let (Some(array), true) = (a.array(), parent.md_member) {
            let member = array
                .members
                .iter()
                .any(|m| m.device == parent.device && m.offset_bytes == parent.offset_bytes);
            if member && info.md_level.is_some() {
                return path_to(assembled, a);
            }
        }
        if let Some(vg) = a.vg() {
            let member = match &parent.pv_uuid {
                Some(pv_uuid) => vg
                    .pvs
                    .iter()
                    .any(|p| &p.uuid == pv_uuid && p.found_on.as_deref() == Some(&parent.device)),
                // A thin LV's device stands on its pool's (-tpool), not on
                // a PV: its dm name, unique on the live host, says which LV
                // it is.
                None => info.dm_target.as_deref() == Some("thin"),
            };
            let vg_name = a.device.strip_prefix("lvm:").unwrap_or(&a.device);
            let lv = a.children.iter().find(|lv| {
                // By its name ("LV vg/lv"): a thin pool's device is where
                // its data lies.
                let lv_name = lv.name.rsplit('/').next().unwrap_or_default();
                info.dm_name.as_deref() == Some(&dm_name(vg_name, lv_name))
            });
            if let (true, Some(lv)) = (member, lv) {
                return path_to(assembled, lv);
            }
        }
    }
    None
}

/// The canonical place of `want`, a layer of the assembled trees.
fn path_to(assembled: &[Layer], want: &Layer) -> Option<Canon> {
    fn find(l: &Layer, path: String, want: &Layer) -> Option<String> {
        if std::ptr::eq(l, want) {
            return Some(path);
        }
        l.children
            .iter()
            .find_map(|c| find(c, format!("{path} / {}", c.name), want))
    }
    assembled.iter().find_map(|a| {
        find(a, a.name.clone(), want).map(|path| Canon {
            target: None,
            partition: None,
            path,
            layer: want.clone(),
        })
    })
}

/// The device-mapper name LVM gives an LV: the VG and LV names joined by
/// a dash, each dash inside a name doubled (lvm2 `dm_build_dm_name`,
/// libdm/libdm-common.c, which quotes `-` as `--`).
fn dm_name(vg: &str, lv: &str) -> String {
    format!("{}-{}", vg.replace('-', "--"), lv.replace('-', "--"))
}

/// `other` is another place of `canon`'s layer: its findings take the
/// canonical subject, and so do those of each child that is the same
/// layer there (the same kind at the same offset; an LV's legs are only
/// in the assembled view).
fn pair(canon: &Canon, other: &mut Layer) {
    let subject = canon.subject();
    for f in &mut other.findings {
        f.subject = subject.clone();
    }
    for c in &mut other.children {
        let same = canon
            .layer
            .children
            .iter()
            .find(|x| x.kind == c.kind && x.offset_bytes == c.offset_bytes);
        if let Some(x) = same {
            pair(&canon.child(x), c);
        }
    }
}

/// The assembled layers (each top one with everything in it) that are
/// made from `t`: a PV or md member found on one of its devices, also
/// through an array or group assembled from it (a PV on an md array).
pub fn made_from<'a>(t: &CheckedTarget, assembled: &'a [Layer]) -> Vec<&'a Layer> {
    made_from_roots(&t.stack.iter().collect::<Vec<_>>(), assembled)
}

/// The same, for some of a target's roots (one partition's).
pub fn made_from_roots<'a>(roots: &[&Layer], assembled: &'a [Layer]) -> Vec<&'a Layer> {
    let inside: Vec<&Layer> = roots.iter().flat_map(|r| r.walk()).collect();
    let mut devices: Vec<String> = Vec::new();
    let mut out: Vec<&Layer> = Vec::new();
    loop {
        let before = out.len();
        for a in assembled {
            let new = !out.iter().any(|x| std::ptr::eq(*x, a));
            if new && (from_roots(a, roots, &inside) || members(a).any(|m| devices.contains(&m))) {
                out.push(a);
                // Its own devices (an array's, an LV's), not its legs':
                // those are on the targets' devices.
                let own = a.walk().into_iter().filter(|l| l.kind != LayerKind::LvmLeg);
                devices.extend(own.map(|l| l.device.clone()));
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

/// An md member of `a` within one of the roots, or a PV of `a` that is
/// one of the layers inside them.
fn from_roots(a: &Layer, roots: &[&Layer], inside: &[&Layer]) -> bool {
    let within = |device: &str, at: u64| {
        roots.iter().any(|r| {
            r.device == device && r.offset_bytes <= at && at - r.offset_bytes < r.size_bytes.max(1)
        })
    };
    let array = a
        .array()
        .is_some_and(|x| x.members.iter().any(|m| within(&m.device, m.offset_bytes)));
    let group = a.vg().is_some_and(|v| {
        v.pvs.iter().any(|p| {
            inside.iter().any(|l| {
                l.pv().is_some_and(|x| x.uuid == p.uuid) && p.found_on.as_deref() == Some(&l.device)
            })
        })
    });
    array || group
}

/// The devices an assembled array's members or a group's PVs were found on.
fn members(a: &Layer) -> impl Iterator<Item = String> + '_ {
    let arrays = a
        .array()
        .into_iter()
        .flat_map(|x| x.members.iter().map(|m| m.device.clone()));
    let groups = a
        .vg()
        .into_iter()
        .flat_map(|v| v.pvs.iter().filter_map(|p| p.found_on.clone()));
    arrays.chain(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lvm_doubles_the_dashes_inside_names() {
        assert_eq!(dm_name("vgb", "lv"), "vgb-lv");
        assert_eq!(dm_name("my-vg", "root-lv"), "my--vg-root--lv");
    }
}
