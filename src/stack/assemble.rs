//! Devices made of several others: md arrays from their members and LVM
//! volume groups from their PVs, across every target given. The contents of
//! an array or LV are read through the member/segment map.

use super::lvm::{LogicalVolume, Segment, ThinPoolSeg, ThinSeg, VolumeGroup};
use super::md::MdMember;
use super::region::Region;
use super::walk::{self, MdHandle, Pending, PvHandle};
use super::Detail;
use super::{limits, ArrayInfo, ArrayMember, Layer, LayerKind, LegInfo, LvInfo, VgInfo, VgPv};
use crate::bytes::{Mapped, SharedReader};
use crate::findings::{Code, Finding};
use crate::iolimits::Topology;
use crate::units::exact;
use std::rc::Rc;

/// Assemble md arrays, then volume groups (whose PVs may sit on the arrays).
pub fn assemble(pending: &mut Pending) -> Vec<Layer> {
    let mut out = Vec::new();
    let mds = std::mem::take(&mut pending.mds);
    let mut uuids: Vec<&str> = Vec::new();
    for m in &mds {
        if !uuids.contains(&m.member.array_uuid.as_str()) {
            uuids.push(&m.member.array_uuid);
        }
    }
    for uuid in uuids {
        let members: Vec<&MdHandle> = mds.iter().filter(|m| m.member.array_uuid == uuid).collect();
        out.push(md_array(&members, pending));
    }
    let pvs = std::mem::take(&mut pending.pvs);
    let mut vg_ids: Vec<String> = Vec::new();
    for p in &pvs {
        if let Some(vg) = p.found.vg() {
            if !vg_ids.contains(&vg.id) {
                vg_ids.push(vg.id.clone());
            }
        }
    }
    for id in vg_ids {
        let newest = pvs
            .iter()
            .filter_map(|p| p.found.vg())
            .filter(|vg| vg.id == id)
            .max_by_key(|vg| vg.seqno)
            .cloned();
        if let Some(vg) = newest {
            out.push(volume_group(&vg, &pvs, pending));
        }
    }
    out
}

/// The array device, its stacked limits and what is inside it.
fn md_array(members: &[&MdHandle], pending: &mut Pending) -> Layer {
    let first = &members[0].member;
    let mut slots: Vec<Option<&MdHandle>> = vec![None; first.raid_disks.min(4096) as usize];
    for m in members {
        if let Some(slot) = m.member.role.and_then(|r| slots.get_mut(r as usize)) {
            slot.get_or_insert(m);
        }
    }
    let present: Vec<&MdHandle> = slots.iter().flatten().copied().collect();
    let stacked: Vec<(Topology, u64)> = present
        .iter()
        .map(|m| (m.region.below, m.region.offset + m.member.data_offset_bytes))
        .collect();
    let exposes = limits::md(first.chunk_bytes, first.data_disks(), &stacked);
    let device = format!("md:{}", first.name.as_deref().unwrap_or(&first.array_uuid));
    let data_size = present
        .iter()
        .map(|m| m.member.data_size_bytes)
        .min()
        .unwrap_or(0);
    let map = md_map(first, &slots, data_size);
    let len = map.as_ref().map_or(0, |m| m.len);
    let mut l = Layer::new(
        LayerKind::MdArray,
        format!(
            "md array {} ({}, {} disks, chunk {})",
            first.name.as_deref().unwrap_or(&first.array_uuid),
            first.level_name(),
            first.raid_disks,
            exact(first.chunk_bytes)
        ),
        device.clone(),
        0,
        len,
        exposes,
    );
    l.exposes = Some(exposes);
    l.detail = Some(Detail::Array(ArrayInfo {
        uuid: first.array_uuid.clone(),
        level: first.level_name(),
        layout: first.layout,
        chunk_bytes: first.chunk_bytes,
        raid_disks: first.raid_disks,
        members: members
            .iter()
            .map(|m| ArrayMember {
                role: m.member.role,
                device: m.region.device.clone(),
                offset_bytes: m.region.offset,
                data_start_bytes: m.region.offset + m.member.data_offset_bytes,
                level: m.member.level,
                chunk_bytes: m.member.chunk_bytes,
                raid_disks: m.member.raid_disks,
                layout: m.member.layout,
            })
            .collect(),
        readable: map.is_some(),
    }));
    if let Some(map) = map {
        let r = Region {
            src: Rc::new(map),
            device,
            offset: 0,
            len,
            below: exposes,
        };
        l.children.extend(walk::walk_region(&r, pending));
    }
    l
}

/// The read map of an array, when this level and the members present allow
/// reading it.
fn md_map(m: &MdMember, slots: &[Option<&MdHandle>], data_size: u64) -> Option<Mapped> {
    let n = slots.len() as u64;
    let chunk = m.chunk_bytes;
    // Every slot has its member (needed by all levels but raid1).
    let all = slots.iter().all(Option::is_some);
    let sources: Vec<SharedReader> = slots.iter().flatten().map(|h| h.region.window()).collect();
    let starts: Vec<u64> = slots
        .iter()
        .map(|s| s.map_or(0, |h| h.member.data_offset_bytes))
        .collect();
    if n == 0 || data_size == 0 {
        return None;
    }
    match m.level {
        1 => {
            let h = slots.iter().flatten().next()?;
            let start = h.member.data_offset_bytes;
            Some(Mapped {
                sources: vec![h.region.window()],
                len: data_size,
                locate: Box::new(move |x| Some((0, start + x, data_size - x))),
            })
        }
        _ if m.is_striped() && all && chunk > 0 => {
            let (level, layout) = (m.level, m.layout);
            let data = u64::from(m.data_disks()?);
            let rows = data_size / chunk;
            let len = rows.checked_mul(chunk)?.checked_mul(data)?;
            if level == 6 && layout != 2 || level == 10 && layout >> 8 != 1 {
                return None; // only the default raid6 and near-only raid10 layouts
            }
            Some(Mapped {
                sources,
                len,
                locate: Box::new(move |x| {
                    let c = x / chunk;
                    let within = x % chunk;
                    let (disk, row) = match level {
                        0 => (c % n, c / n),
                        4 => (c % (n - 1), c / (n - 1)),
                        5 => raid5(c, n, layout),
                        6 => {
                            let (row, i) = (c / (n - 2), c % (n - 2));
                            let pd = n - 1 - row % n;
                            ((pd + 2 + i) % n, row)
                        }
                        _ => {
                            let k = u64::from(layout & 0xff).max(1);
                            ((c * k) % n, (c * k) / n)
                        }
                    };
                    let d = disk as usize;
                    Some((d, starts[d] + row * chunk + within, chunk - within))
                }),
            })
        }
        -1 if all => {
            let sizes: Vec<u64> = slots
                .iter()
                .map(|s| s.map_or(0, |h| h.member.data_size_bytes))
                .collect();
            let len = sizes.iter().sum();
            Some(Mapped {
                sources,
                len,
                locate: Box::new(move |mut x| {
                    for (i, &s) in sizes.iter().enumerate() {
                        if x < s {
                            return Some((i, starts[i] + x, s - x));
                        }
                        x -= s;
                    }
                    None
                }),
            })
        }
        _ => None,
    }
}

/// Chunk `c` of a RAID5 array of `n` disks: (disk, row) for md's four layouts.
fn raid5(c: u64, n: u64, layout: u32) -> (u64, u64) {
    let (row, i) = (c / (n - 1), c % (n - 1));
    let disk = match layout {
        0 => {
            // left-asymmetric
            let pd = n - 1 - row % n;
            if i < pd {
                i
            } else {
                i + 1
            }
        }
        1 => {
            // right-asymmetric
            let pd = row % n;
            if i < pd {
                i
            } else {
                i + 1
            }
        }
        3 => (row % n + 1 + i) % n,         // right-symmetric
        _ => (n - 1 - row % n + 1 + i) % n, // left-symmetric (default, 2)
    };
    (disk, row)
}

/// The VG with its LVs, their legs on the PVs and what each LV holds.
fn volume_group(vg: &VolumeGroup, pvs: &[PvHandle], pending: &mut Pending) -> Layer {
    let es = vg.extent_size_bytes;
    let mut l = Layer::new(
        LayerKind::LvmVg,
        format!("VG {} (extent {})", vg.name, exact(es)),
        format!("lvm:{}", vg.name),
        0,
        0,
        limits::STACKING_DEFAULT,
    );
    l.detail = Some(Detail::Vg(VgInfo {
        id: vg.id.clone(),
        seqno: vg.seqno,
        extent_size_bytes: es,
        pvs: vg
            .pvs
            .iter()
            .map(|p| VgPv {
                key: p.key.clone(),
                uuid: p.uuid.clone(),
                found_on: pvs
                    .iter()
                    .find(|h| h.found.label.uuid == p.uuid)
                    .map(|h| h.region.device.clone()),
                device_hint: p.device_hint.clone(),
            })
            .collect(),
    }));
    for lv in &vg.lvs {
        l.children.push(lv_layer(vg, lv, pvs, pending));
    }
    l
}

fn pv_handle<'a>(vg: &VolumeGroup, pvs: &'a [PvHandle], key: &str) -> Option<&'a PvHandle> {
    let entry = vg.pvs.iter().find(|p| p.key == key)?;
    pvs.iter().find(|h| h.found.label.uuid == entry.uuid)
}

fn find_lv<'a>(vg: &'a VolumeGroup, name: &str) -> Option<&'a LogicalVolume> {
    vg.lvs.iter().find(|l| l.name == name)
}

/// The LV's legs on the PVs present and the limits its segments stack to
/// (dm-linear and dm-stripe tables).
fn legs(vg: &VolumeGroup, lv: &LogicalVolume, pvs: &[PvHandle]) -> (Vec<Layer>, Topology) {
    let es = vg.extent_size_bytes;
    let mut targets = Vec::new();
    let mut legs = Vec::new();
    for (si, seg) in lv.segments.iter().enumerate() {
        let n = seg.legs.len().max(1) as u64;
        let mut stacked = Vec::new();
        for (k, leg) in seg.legs.iter().enumerate() {
            let Some(h) = pv_handle(vg, pvs, &leg.pv) else {
                continue;
            };
            let start = h
                .region
                .offset
                .saturating_add(h.found.pe_start)
                .saturating_add(leg.start_extent.saturating_mul(es));
            let mut ll = Layer::new(
                LayerKind::LvmLeg,
                format!("segment {} stripe {} on {}", si + 1, k, leg.pv),
                h.region.device.clone(),
                start,
                (seg.extent_count / n).saturating_mul(es),
                h.region.below,
            );
            ll.detail = Some(Detail::Leg(LegInfo {
                segment: si,
                stripe: k,
                pv: leg.pv.clone(),
                start_extent: leg.start_extent,
                stripe_size_bytes: seg.stripe_size_bytes,
            }));
            legs.push(ll);
            stacked.push((h.region.below, start));
        }
        targets.push((seg.stripe_size_bytes, stacked));
    }
    (legs, limits::dm(&targets))
}

/// The thin-pool segment of a pool LV, or of the pool a thin LV is in.
fn pool_of<'a>(vg: &'a VolumeGroup, lv: &'a LogicalVolume) -> Option<&'a ThinPoolSeg> {
    let seg = lv.segments.first()?;
    match (&seg.thin_pool, &seg.thin) {
        (Some(p), _) => Some(p),
        (None, Some(t)) => find_lv(vg, &t.pool)?.segments.first()?.thin_pool.as_ref(),
        _ => None,
    }
}

/// Where a pool's chunks land: the device under its data LV, the data's
/// first byte there and that device's limits, when the data LV is one
/// linear piece; else the data LV itself (its stripes are judged on it).
fn pool_placement(
    vg: &VolumeGroup,
    pool: &ThinPoolSeg,
    pvs: &[PvHandle],
) -> Option<(String, u64, Topology, Topology)> {
    let data = find_lv(vg, &pool.data_lv)?;
    let (legs, exposes) = legs(vg, data, pvs);
    match (&data.segments[..], &legs[..]) {
        ([seg], [leg]) if seg.legs.len() == 1 => {
            Some((leg.device.clone(), leg.offset_bytes, leg.below, exposes))
        }
        _ => Some((format!("{}/{}", vg.name, data.name), 0, exposes, exposes)),
    }
}

/// A layer of its own per LV: a pool's data and metadata LVs too, with
/// their legs, but not walked (what they hold is the thin LVs').
fn lv_layer(
    vg: &VolumeGroup,
    lv: &LogicalVolume,
    pvs: &[PvHandle],
    pending: &mut Pending,
) -> Layer {
    let es = vg.extent_size_bytes;
    let size = lv
        .segments
        .iter()
        .map(|s| s.extent_count.saturating_mul(es))
        .fold(0u64, u64::saturating_add);
    let device = format!("{}/{}", vg.name, lv.name);
    let (legs, mut exposes) = legs(vg, lv, pvs);
    let (mut below, mut at, mut under) = (exposes, 0, device.clone());
    let pool = pool_of(vg, lv);
    let placed = pool.and_then(|p| pool_placement(vg, p, pvs));
    if let (Some(p), Some((dev, start, t, data))) = (pool, &placed) {
        let pooled = limits::thin_pool(data, p.chunk_bytes);
        exposes = pooled;
        if lv.segments.first().is_some_and(|s| s.thin.is_some()) {
            below = pooled;
        } else {
            (below, at, under) = (*t, *start, dev.clone());
        }
    }
    let mut ll = Layer::new(
        LayerKind::LvmLv,
        format!("LV {device}"),
        under,
        at,
        size,
        below,
    );
    ll.exposes = Some(exposes);
    ll.detail = Some(Detail::Lv(LvInfo {
        segments: lv.segments.clone(),
        pool_chunk_bytes: pool.map(|p| p.chunk_bytes),
    }));
    ll.children = legs;
    let component = vg
        .lvs
        .iter()
        .filter_map(|o| o.segments.first()?.thin_pool.as_ref())
        .any(|p| p.data_lv == lv.name || p.metadata_lv == lv.name);
    let map = match lv.segments.first() {
        _ if component => return ll,
        Some(s) if s.thin_pool.is_some() => return ll,
        Some(Segment { thin: Some(t), .. }) => match thin_contents(vg, t, pvs, size) {
            Ok(m) => Some(m),
            Err(why) => {
                ll.findings.push(Finding::new(
                    Code::LayerNotFollowed,
                    format!("the contents of thin LV {device} were not read: {why}"),
                ));
                None
            }
        },
        _ => lv_map(vg, &lv.segments, pvs),
    };
    if let Some(map) = map {
        let r = Region {
            src: Rc::new(map),
            device,
            offset: 0,
            len: size,
            below: exposes,
        };
        ll.children.extend(walk::walk_region(&r, pending));
    }
    ll
}

/// A thin LV read through its pool: the pool's metadata (committed: an
/// active pool may hold newer mappings in memory) maps its blocks onto
/// the data LV.
fn thin_contents(
    vg: &VolumeGroup,
    t: &ThinSeg,
    pvs: &[PvHandle],
    size: u64,
) -> Result<Mapped, String> {
    let pool = find_lv(vg, &t.pool)
        .and_then(|p| p.segments.first()?.thin_pool.as_ref())
        .ok_or_else(|| format!("its pool {} is not in the VG", t.pool))?;
    let map_of = |name: &str, what: &str| {
        find_lv(vg, name)
            .and_then(|l| lv_map(vg, &l.segments, pvs))
            .ok_or_else(|| {
                format!("the pool's {what} LV {name} uses PVs that are not among the targets")
            })
    };
    let meta = map_of(&pool.metadata_lv, "metadata")?;
    let data: SharedReader = Rc::new(map_of(&pool.data_lv, "data")?);
    let sb = super::lvm::thin_superblock(&meta)
        .map_err(|e| format!("{} of {}: {e}", pool.metadata_lv, t.pool))?;
    if sb.data_block_bytes != pool.chunk_bytes {
        return Err(format!(
            "the pool's metadata says chunk {} where LVM says {}",
            exact(sb.data_block_bytes),
            exact(pool.chunk_bytes)
        ));
    }
    let map = super::lvm::thin_device_map(&meta, &sb, t.device_id)
        .map_err(|e| format!("{} of {}: {e}", pool.metadata_lv, t.pool))?
        .ok_or_else(|| {
            format!(
                "device {} is not in the pool's committed metadata",
                t.device_id
            )
        })?;
    if map.blocks.first().is_none_or(|b| b.0 != 0) {
        return Err("its first chunk is not provisioned (nothing was written at its start)".into());
    }
    Ok(super::lvm::thin_map(data, pool.chunk_bytes, map, size))
}

/// One LV segment in the read map: its bytes in the LV, its stripe size,
/// and per leg (source index, first byte on the PV).
struct SegMap {
    start: u64,
    len: u64,
    stripe: u64,
    legs: Vec<(usize, u64)>,
}

/// The read map of an LV when every PV it uses is present.
fn lv_map(vg: &VolumeGroup, segs: &[Segment], pvs: &[PvHandle]) -> Option<Mapped> {
    let es = vg.extent_size_bytes;
    let mut sources: Vec<SharedReader> = Vec::new();
    let mut table: Vec<SegMap> = Vec::new();
    for seg in segs {
        if seg.kind != "striped" || seg.legs.is_empty() {
            return None;
        }
        let mut legs = Vec::new();
        for leg in &seg.legs {
            let entry = vg.pvs.iter().find(|p| p.key == leg.pv)?;
            let h = pvs.iter().find(|h| h.found.label.uuid == entry.uuid)?;
            sources.push(h.region.window());
            legs.push((
                sources.len() - 1,
                h.found
                    .pe_start
                    .checked_add(leg.start_extent.checked_mul(es)?)?,
            ));
        }
        let start = seg.start_extent.checked_mul(es)?;
        let len = seg.extent_count.checked_mul(es)?;
        table.push(SegMap {
            start,
            len,
            stripe: seg.stripe_size_bytes.unwrap_or(len.max(1)),
            legs,
        });
    }
    let len = table.iter().map(|t| t.start + t.len).max().unwrap_or(0);
    Some(Mapped {
        sources,
        len,
        locate: Box::new(move |x| {
            let t = table.iter().find(|t| x >= t.start && x < t.start + t.len)?;
            let (o, ss) = (x - t.start, t.stripe);
            let n = t.legs.len() as u64;
            let chunk = o / ss;
            let (src, base) = t.legs[(chunk % n) as usize];
            let run = (ss - o % ss).min(t.len - o);
            Some((src, base + (chunk / n) * ss + o % ss, run))
        }),
    })
}
