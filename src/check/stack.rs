//! Rules for the layers above the partition table: every layer judged in
//! its own address space against the limits of the layer below it.

use super::start::{kernel_offset, sane_optimal, start_findings};
use crate::findings::{Code, Facts, Finding, LegFact, Severity, Status};
use crate::stack::FsKind;
use crate::stack::{Layer, LayerKind};
use crate::units::{exact, gcd, KIB};

/// Add the findings of `l` and everything above it; set `aligned`.
pub fn judge_layer(l: &mut Layer) {
    l.walk_mut(&mut |l| {
        let mut f = match l.kind {
            LayerKind::LvmPv => pv(l),
            LayerKind::MdMember => md_member(l),
            LayerKind::Luks => luks(l),
            LayerKind::Bcache => bcache(l),
            LayerKind::Filesystem => filesystem(l),
            LayerKind::MdArray => md_array(l),
            LayerKind::LvmVg => vg(l),
            LayerKind::LvmLv => {
                // Before the layers above are judged (walk_mut goes down).
                super::thin::hints_inside(l);
                let mut f = lv(l);
                f.extend(super::thin::pool_findings(l));
                f
            }
            LayerKind::Holder => holder(l),
            LayerKind::LvmLeg => {
                // The segment's finding is on the LV; the leg's verdict says which legs are off.
                let unit = l.below.grain().max(4 * KIB);
                if l.offset_bytes % unit != 0 || kernel_offset(&l.below, l.offset_bytes) != 0 {
                    l.status = Status::Misaligned;
                }
                vec![]
            }
            LayerKind::ZfsMember => zfs(l),
            LayerKind::Unread => unread(l),
            LayerKind::Bluestore => super::bluestore::findings(l),
            LayerKind::Partition | LayerKind::Device | LayerKind::Swap => vec![],
        };
        l.findings.append(&mut f);
        // A partition root arrives with its partition's status.
        l.status = l.status.max(Status::of(&l.findings));
        l.aligned = l.status.is_clean();
    });
}

fn pv(l: &Layer) -> Vec<Finding> {
    match (l.pv(), l.data_start()) {
        (Some(p), Some(start)) => start_findings(
            &l.below,
            start,
            &format!(
                "the PV's first extent (pe_start {})",
                exact(p.pe_start_bytes)
            ),
            &l.device,
        ),
        _ => vec![],
    }
}

fn md_member(l: &Layer) -> Vec<Finding> {
    let (Some(m), Some(start)) = (l.md(), l.data_start()) else {
        return vec![];
    };
    let mut out = start_findings(
        &l.below,
        start,
        &format!(
            "the md data area (data_offset {})",
            exact(m.data_offset_bytes)
        ),
        &l.device,
    );
    let pbs = u64::from(l.below.physical_block_size);
    if m.is_striped() && m.chunk_bytes > 0 && (m.chunk_bytes < pbs || m.chunk_bytes % pbs != 0) {
        out.push(Finding::of(
            Code::MdChunkBelowPhysical,
            Facts {
                chunk_bytes: Some(m.chunk_bytes),
                physical_block_bytes: Some(pbs),
                device: Some(l.device.clone()),
                ..Facts::default()
            },
        ));
    }
    out
}

/// A backing device's data start is judged like any layer's; bcache's
/// block size below the physical block makes every write of that size a
/// read-modify-write of the device below.
fn bcache(l: &Layer) -> Vec<Finding> {
    let Some(b) = l.bcache() else { return vec![] };
    let mut out = match l.data_start() {
        Some(start) => start_findings(
            &l.below,
            start,
            &format!(
                "the bcache backing device's data (data_offset {})",
                exact(b.data_offset_bytes.unwrap_or(0))
            ),
            &l.device,
        ),
        None => vec![],
    };
    let pbs = u64::from(l.below.physical_block_size);
    if b.block_size_bytes < pbs {
        out.push(Finding::of(
            Code::BcacheBlockSize,
            Facts {
                block_size_bytes: Some(b.block_size_bytes),
                physical_block_bytes: Some(pbs),
                device: Some(l.device.clone()),
                fix: Some(format!("make-bcache --block {pbs}")),
                ..Facts::default()
            },
        ));
    }
    out
}

/// A ZFS member's top-level vdev allocates in 2^ashift bytes: below the
/// physical block every write smaller than the block, and every block
/// sized write that does not start on one, is a read-modify-write there.
/// Blocks are allocated anywhere on the 2^ashift grid, so of the writes
/// of one physical block, 1 - 2^ashift / block start off one (7 in 8 for
/// ashift 9 on 4 KiB): the `share`.
fn zfs(l: &Layer) -> Vec<Finding> {
    // Its allocations start 4 MiB into the device: judged like any
    // layer's data, so a pool on a partition off 4 KiB inherits its cause.
    let mut out = match l.data_start() {
        Some(start) => start_findings(
            &l.below,
            start,
            &format!("the ZFS pool's allocations (from {})", exact(start)),
            &l.device,
        ),
        None => vec![],
    };
    let unit = l
        .zfs()
        .and_then(|z| z.ashift())
        .and_then(|a| 1u64.checked_shl(u32::try_from(a).ok()?));
    let pbs = u64::from(l.below.physical_block_size);
    let Some(unit) = unit else {
        return out;
    };
    // Above the block is information said once all evidence is in
    // (`check::declared::ashift_above`).
    if unit >= pbs {
        return out;
    }
    out.push(Finding::of(
        Code::ZfsAshiftBelowPhysical,
        Facts {
            block_size_bytes: Some(unit),
            physical_block_bytes: Some(pbs),
            share: Some(1.0 - unit as f64 / pbs as f64),
            device: Some(l.device.clone()),
            pool: l.zfs().and_then(|z| z.pool_name.clone()),
            fix: Some(format!("-o ashift={}", pbs.trailing_zeros())),
            ..Facts::default()
        },
    ));
    out
}

fn luks(l: &Layer) -> Vec<Finding> {
    let (Some(h), Some(start)) = (l.luks(), l.data_start()) else {
        return vec![];
    };
    let mut out = start_findings(
        &l.below,
        start,
        &format!(
            "the LUKS{} payload (offset {})",
            h.version,
            exact(h.payload_offset_bytes)
        ),
        &l.device,
    );
    let (lbs, pbs) = (l.below.logical_block_size, l.below.physical_block_size);
    let facts = Facts {
        block_size_bytes: Some(h.sector_size.into()),
        device: Some(l.device.clone()),
        ..Facts::default()
    };
    if h.sector_size < lbs {
        out.push(
            Finding::of(
                Code::LuksSectorSize,
                Facts {
                    logical_block_bytes: Some(lbs.into()),
                    ..facts
                },
            )
            .severity(Severity::Error),
        );
    } else if h.sector_size < pbs {
        let fix = if h.version == 1 {
            format!("LUKS1 always uses 512; `cryptsetup convert --type luks2` then `cryptsetup reencrypt --sector-size {pbs}` changes it")
        } else {
            format!("cryptsetup picks {pbs} by itself on such a disk; `cryptsetup reencrypt --sector-size {pbs}` changes it")
        };
        out.push(Finding::of(
            Code::LuksSectorSize,
            Facts {
                physical_block_bytes: Some(pbs.into()),
                fix: Some(fix),
                ..facts
            },
        ));
    }
    if l.children.is_empty() {
        out.push(Finding::new(
            Code::LuksContentsUnchecked,
            "the payload is encrypted: the layers inside cannot be checked without opening it (`cryptsetup open`); on a live system diskalign follows the opened dm-crypt device",
        ));
    }
    out
}

/// What a signature names but no layer reads: its start is judged as any
/// layer's (so one at the start of a partition that is off inherits it,
/// check::inherit); what is inside it is not read, so not judged.
fn unread(l: &Layer) -> Vec<Finding> {
    let what = l.signature().map_or("it", |s| s.what.as_str());
    start_findings(&l.below, l.offset_bytes, &format!("the {what}"), &l.device)
}

fn filesystem(l: &Layer) -> Vec<Finding> {
    let Some(fs) = l.filesystem() else {
        return vec![];
    };
    if let Some(v) = &fs.volume {
        return super::volume::volume_findings(l, fs.kind, fs.sector_size, v);
    }
    let b = &l.below;
    let name = fs.kind.as_str();
    let mut out = Vec::new();
    let mut size_rule = |what: &str, v: u32| {
        let facts = Facts {
            region: Some(format!("{name} {what}")),
            block_size_bytes: Some(v.into()),
            device: Some(l.device.clone()),
            ..Facts::default()
        };
        if v < b.logical_block_size {
            let facts = Facts {
                logical_block_bytes: Some(b.logical_block_size.into()),
                ..facts
            };
            out.push(Finding::of(Code::FsBlockBelowPhysical, facts).severity(Severity::Error));
            true
        } else if v < b.physical_block_size {
            let facts = Facts {
                physical_block_bytes: Some(b.physical_block_size.into()),
                ..facts
            };
            out.push(Finding::of(Code::FsBlockBelowPhysical, facts));
            true
        } else {
            false
        }
    };
    if !size_rule("block size", fs.block_size) && fs.sector_size != fs.block_size {
        size_rule("sector size", fs.sector_size);
    }
    // Judged at its offset on the device below, as every layer is; a
    // filesystem at the start of a partition that is off inherits that
    // (check::inherit), one on its grid says nothing. An f2fs writes
    // whole segments from segment 0 on: that is its start.
    match &fs.f2fs {
        Some(a) => out.extend(super::f2fs::f2fs_findings(l, a)),
        None => out.extend(start_findings(
            b,
            l.offset_bytes,
            &format!("the {name} filesystem"),
            &l.device,
        )),
    }
    // Neither keeps stripe hints (nor FAT, exFAT, NTFS: judged above).
    if !matches!(fs.kind, FsKind::Ext4 | FsKind::Xfs) {
        return out;
    }
    let (unit, width) = (fs.stripe_unit_bytes(), fs.stripe_width_bytes());
    let (min, opt) = (u64::from(b.minimum_io_size), sane_optimal(b));
    let suggest = |min: u64, opt: u64| match fs.kind {
        FsKind::Xfs => format!("mkfs.xfs -d su={min},sw={}", opt / min.max(1)),
        _ => format!(
            "mkfs.ext4 -E stride={},stripe_width={} (or tune2fs -E on the existing one)",
            min / u64::from(fs.block_size),
            opt / u64::from(fs.block_size)
        ),
    };
    let facts = Facts {
        region: Some(name.to_string()),
        device: Some(l.device.clone()),
        hint_unit_bytes: Some(unit),
        hint_width_bytes: Some(width),
        ..Facts::default()
    };
    match opt {
        Some(opt) if min > u64::from(b.physical_block_size) => {
            let facts = Facts {
                chunk_bytes: Some(min),
                stripe_width_bytes: Some(opt),
                fix: Some(suggest(min, opt)),
                ..facts
            };
            if unit == 0 && width == 0 {
                out.push(Finding::of(Code::FsStripeHintsMissing, facts));
            } else if unit != min || width != opt {
                out.push(Finding::of(Code::FsStripeHintsMismatch, facts));
            }
        }
        _ if unit != 0 || width != 0 => {
            let facts = Facts {
                minimum_io_bytes: Some(min),
                optimal_io_bytes: Some(b.optimal_io_size.into()),
                ..facts
            };
            out.push(Finding::of(Code::FsStripeHintsMismatch, facts).severity(Severity::Info));
        }
        _ => {}
    }
    out
}

/// The roles in `0..count` that no member holds, as ranges ("2-5", "7"):
/// the work grows with the members present, not with the count.
fn missing_ranges(count: u32, present: &[u32]) -> Vec<String> {
    let mut held: Vec<u32> = present.iter().copied().filter(|&r| r < count).collect();
    held.sort_unstable();
    held.dedup();
    let mut out = Vec::new();
    let mut next = 0u32;
    for r in held.into_iter().chain(std::iter::once(count)) {
        match r.checked_sub(next) {
            Some(0) | None => {}
            Some(1) => out.push(next.to_string()),
            Some(_) => out.push(format!("{next}-{}", r - 1)),
        }
        next = r.saturating_add(1);
    }
    out
}

fn md_array(l: &Layer) -> Vec<Finding> {
    let Some(a) = l.array() else { return vec![] };
    let mut out = Vec::new();
    let present: Vec<u32> = a.members.iter().filter_map(|m| m.role).collect();
    let missing = missing_ranges(a.raid_disks, &present);
    if !missing.is_empty() {
        out.push(Finding::new(
            Code::MdMemberMissing,
            format!(
                "roles {} of the {} array are not among the targets; give their devices too",
                missing.join(", "),
                a.level
            ),
        ));
    }
    let first = &a.members[0];
    let odd: Vec<&str> = a
        .members
        .iter()
        .filter(|m| {
            (m.level, m.chunk_bytes, m.raid_disks, m.layout)
                != (
                    first.level,
                    first.chunk_bytes,
                    first.raid_disks,
                    first.layout,
                )
        })
        .map(|m| m.device.as_str())
        .collect();
    if !odd.is_empty() {
        out.push(Finding::new(
            Code::MdMembersInconsistent,
            format!("{} describe a different geometry (level, chunk, disks or layout) than {}: stale superblocks of another array?", odd.join(", "), first.device),
        ).severity(Severity::Error));
    }
    let offs: Vec<u64> = a
        .members
        .iter()
        .map(|m| m.data_start_bytes % (4 * KIB))
        .collect();
    if offs.iter().any(|&o| o != offs[0]) {
        let list: Vec<String> = a
            .members
            .iter()
            .map(|m| format!("{} +{}", m.device, m.data_start_bytes % (4 * KIB)))
            .collect();
        out.push(Finding::new(
            Code::MdMembersInconsistent,
            format!("the members' data areas sit at different offsets from 4 KiB ({}): a chunk write is aligned on some members and straddles sectors on others", list.join(", ")),
        ));
    }
    if !a.readable {
        out.push(Finding::new(
            Code::LayerNotFollowed,
            format!(
                "the contents of this {} array were not read ({})",
                a.level,
                if missing.is_empty() {
                    "layout not supported"
                } else {
                    "members missing"
                }
            ),
        ));
    }
    out
}

fn vg(l: &Layer) -> Vec<Finding> {
    let Some(v) = l.vg() else { return vec![] };
    let mut out = Vec::new();
    for p in v.pvs.iter().filter(|p| p.found_on.is_none()) {
        out.push(Finding::new(
            Code::LvmPvMissing,
            format!(
                "PV {} (uuid {}{}) is not among the targets: give its device or image too to check the LVs on it",
                p.key,
                p.uuid,
                p.device_hint.as_ref().map(|d| format!(", last seen as {d}")).unwrap_or_default()
            ),
        ));
    }
    let es = v.extent_size_bytes;
    let mut stripes: Vec<u64> = l
        .children
        .iter()
        .filter_map(|c| c.lv())
        .flat_map(|lv| lv.segments.iter().filter_map(|s| s.stripe_size_bytes))
        .collect();
    stripes.sort_unstable();
    stripes.dedup();
    let extent = Facts {
        size_bytes: Some(es),
        ..Facts::default()
    };
    for ss in stripes.into_iter().filter(|ss| es % ss != 0) {
        let facts = Facts {
            chunk_bytes: Some(ss),
            ..extent.clone()
        };
        out.push(Finding::of(Code::LvmExtentMisaligned, facts));
    }
    let mut opts: Vec<u64> = l
        .children
        .iter()
        .flat_map(|lv| lv.children.iter())
        .filter(|c| c.kind == LayerKind::LvmLeg)
        .filter_map(|c| sane_optimal(&c.below))
        .collect();
    opts.sort_unstable();
    opts.dedup();
    for opt in opts.into_iter().filter(|o| es % o != 0) {
        let facts = Facts {
            optimal_io_bytes: Some(opt),
            ..extent.clone()
        };
        out.push(Finding::of(Code::LvmExtentMisaligned, facts));
    }
    out
}

fn lv(l: &Layer) -> Vec<Finding> {
    let Some(info) = l.lv() else { return vec![] };
    let mut out = Vec::new();
    for (si, seg) in info.segments.iter().enumerate() {
        let legs: Vec<&Layer> = l
            .children
            .iter()
            .filter(|c| c.leg().is_some_and(|g| g.segment == si))
            .collect();
        if legs.len() < seg.legs.len() {
            out.push(Finding::new(
                Code::LayerNotFollowed,
                format!("segment {} uses PVs that are not among the targets; its legs and the LV's contents were not checked", si + 1),
            ));
            continue;
        }
        match seg.stripe_size_bytes {
            Some(ss) => out.extend(striped(&legs, ss, si)),
            None => {
                for leg in legs {
                    out.extend(start_findings(
                        &leg.below,
                        leg.offset_bytes,
                        &format!("segment {} of {}", si + 1, l.name),
                        &leg.device,
                    ));
                }
            }
        }
    }
    out
}

/// Units touched by one stripe-size write at `start`.
fn touched(start: u64, ss: u64, unit: u64) -> u128 {
    (u128::from(start % unit) + u128::from(ss)).div_ceil(u128::from(unit))
}

/// A striped segment: every leg on the unit, legs consistent, and the write
/// amplification when not.
fn striped(legs: &[&Layer], ss: u64, si: usize) -> Vec<Finding> {
    let unit = legs
        .iter()
        .map(|g| g.below.grain())
        .max()
        .unwrap_or(4 * KIB)
        .max(4 * KIB);
    let bad: Vec<&&Layer> = legs
        .iter()
        .filter(|g| g.offset_bytes % unit != 0 || kernel_offset(&g.below, g.offset_bytes) != 0)
        .collect();
    let offsets: Vec<u64> = legs.iter().map(|g| g.offset_bytes % unit).collect();
    if bad.is_empty() && offsets.iter().all(|&o| o == offsets[0]) {
        return vec![];
    }
    // Chunk k of a leg starts at start + k*ss; the offsets into the unit
    // repeat after `period` chunks, so average over those.
    let period = (unit / gcd(ss, unit).max(1)).min(1 << 16);
    let ideal = u128::from(ss.div_ceil(unit).max(1));
    let (mut worst_total, mut worst) = (0u128, 0.0f64);
    for g in legs {
        let total: u128 = (0..period)
            .map(|k| touched(g.offset_bytes % unit + (k * (ss % unit)) % unit, ss, unit))
            .sum();
        let factor = total as f64 / (u128::from(period) * ideal) as f64;
        if factor > worst {
            (worst_total, worst) = (total, factor);
        }
    }
    let legs = legs
        .iter()
        .map(|g| LegFact {
            stripe: g.leg().map_or(0, |x| x.stripe),
            device: g.device.clone(),
            offset_bytes: g.offset_bytes,
            misalignment_bytes: g.offset_bytes % unit,
        })
        .collect();
    vec![Finding::of(
        Code::LvmStripeMisaligned,
        Facts {
            segment: Some(si + 1),
            chunk_bytes: Some(ss),
            grain_bytes: Some(unit),
            units_touched: Some(worst_total as f64 / period as f64),
            units_ideal: Some(ideal as u64),
            amplification: Some(worst),
            legs,
            ..Facts::default()
        },
    )]
}

fn holder(l: &Layer) -> Vec<Finding> {
    match l.exposes {
        Some(t) if t.reports_misaligned() && !l.below.reports_misaligned() => vec![Finding::new(
            Code::KernelReportsMisaligned,
            format!(
                "the kernel reports {} misaligned (alignment_offset {}): the devices under it start at offsets that no single alignment can satisfy",
                l.name, t.alignment_offset
            ),
        )],
        Some(t) if t.alignment_offset > 0 && !t.reports_misaligned() => vec![Finding::new(
            Code::KernelReportsMisaligned,
            crate::topology::stacked_offset_why(&l.name, &t),
        )],
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixture::logical_512_over;
    use crate::iolimits::Topology;
    use crate::stack::Filesystem;
    use crate::stack::Luks;
    use crate::stack::MdMember;
    use crate::stack::{Bcache, BcacheRole};
    use crate::stack::{Detail, LegInfo, LvInfo, PvInfo};
    use crate::stack::{Leg, Segment};
    use crate::units::MIB;

    /// A layer of `kind` at `offset` on `sda` (4 KiB physical), with
    /// `detail`, judged alone.
    fn judged(kind: LayerKind, offset: u64, data: Option<u64>, detail: Detail) -> Layer {
        let mut l = Layer::new(kind, "l", "sda", offset, 64 * MIB, logical_512_over(4096));
        l.data_offset_bytes = data;
        l.detail = Some(detail);
        judge_layer(&mut l);
        l
    }

    fn codes(l: &Layer) -> Vec<Code> {
        l.findings.iter().map(|f| f.code).collect()
    }

    fn pv(pe_start: u64) -> Detail {
        Detail::Pv(PvInfo {
            pe_start_bytes: pe_start,
            ..PvInfo::default()
        })
    }

    #[test]
    fn a_pv_is_judged_at_its_first_extent_on_the_device() {
        let ok = judged(LayerKind::LvmPv, MIB, Some(MIB), pv(MIB));
        assert!(ok.aligned, "{:?}", codes(&ok));
        // pe_start 1 MiB in a partition at sector 63: off 4 KiB on the disk.
        let off = judged(LayerKind::LvmPv, 63 * 512, Some(MIB), pv(MIB));
        assert_eq!(off.status, Status::Misaligned);
        assert!(
            codes(&off).contains(&Code::LayerStartMisaligned),
            "{:?}",
            codes(&off)
        );
        assert_eq!(off.findings[0].facts.offset_bytes, Some(63 * 512 + MIB));
    }

    fn md(level: i32, chunk: u64) -> Detail {
        Detail::Md(MdMember {
            level,
            chunk_bytes: chunk,
            data_offset_bytes: MIB,
            ..MdMember::default()
        })
    }

    #[test]
    fn an_md_chunk_below_the_physical_block_is_named_on_striped_levels_only() {
        let raid0 = judged(LayerKind::MdMember, MIB, Some(MIB), md(0, 2048));
        assert!(codes(&raid0).contains(&Code::MdChunkBelowPhysical));
        let raid1 = judged(LayerKind::MdMember, MIB, Some(MIB), md(1, 2048));
        assert!(!codes(&raid1).contains(&Code::MdChunkBelowPhysical));
        let fine = judged(LayerKind::MdMember, MIB, Some(MIB), md(5, 512 * 1024));
        assert!(fine.aligned, "{:?}", codes(&fine));
    }

    #[test]
    fn a_bcache_block_below_the_physical_block_gets_the_make_bcache_fix() {
        let b = |block| {
            Detail::Bcache(Bcache {
                role: BcacheRole::Backing,
                version: 1,
                uuid: String::new(),
                data_offset_bytes: Some(8192),
                block_size_bytes: block,
                bucket_size_bytes: None,
            })
        };
        let small = judged(LayerKind::Bcache, MIB, Some(8192), b(512));
        let f = small
            .findings
            .iter()
            .find(|f| f.code == Code::BcacheBlockSize);
        assert_eq!(
            f.and_then(|f| f.facts.fix.as_deref()),
            Some("make-bcache --block 4096")
        );
        let ok = judged(LayerKind::Bcache, MIB, Some(8192), b(4096));
        assert!(ok.aligned, "{:?}", codes(&ok));
    }

    /// ashift 9 over a 4096-byte physical block: the warning with its
    /// fix; 12 and 13 fit; an ashift past 63 (a label's nonsense) is no
    /// finding and no overflow.
    #[test]
    fn a_zfs_ashift_below_the_physical_block_is_an_error_with_its_share() {
        let z = |ashift| {
            Detail::Zfs(Box::new(crate::stack::Zfs {
                vdev_tree: Some(crate::stack::Vdev {
                    vdev_type: "disk".into(),
                    ashift: Some(ashift),
                    ..Default::default()
                }),
                ..Default::default()
            }))
        };
        let small = judged(LayerKind::ZfsMember, MIB, None, z(9));
        assert_eq!(codes(&small), [Code::ZfsAshiftBelowPhysical]);
        let f = &small.findings[0];
        assert_eq!(f.facts.block_size_bytes, Some(512));
        assert_eq!(f.facts.physical_block_bytes, Some(4096));
        assert_eq!(f.facts.share, Some(0.875));
        assert_eq!(f.severity, crate::findings::Severity::Error);
        assert!(
            f.message.contains("512-byte units (ashift 9)")
                && f.message.contains("88 % of 4 KiB writes")
                && f.message.contains("-o ashift=12"),
            "{}",
            f.message
        );
        for fits in [12, 64, u64::MAX] {
            let ok = judged(LayerKind::ZfsMember, MIB, None, z(fits));
            assert!(ok.findings.is_empty(), "ashift {fits}: {:?}", codes(&ok));
        }
    }

    fn luks(version: u16, sector: u32) -> Detail {
        Detail::Luks(Luks {
            version,
            payload_offset_bytes: 16 * MIB,
            sector_size: sector,
            ..Luks::default()
        })
    }

    #[test]
    fn a_luks_sector_below_the_physical_block_is_a_warning_with_the_right_fix() {
        let l1 = judged(LayerKind::Luks, MIB, Some(16 * MIB), luks(1, 512));
        let f = l1
            .findings
            .iter()
            .find(|f| f.code == Code::LuksSectorSize)
            .unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert!(f
            .facts
            .fix
            .as_deref()
            .unwrap()
            .contains("cryptsetup convert --type luks2"));
        let l2 = judged(LayerKind::Luks, MIB, Some(16 * MIB), luks(2, 512));
        let f = l2
            .findings
            .iter()
            .find(|f| f.code == Code::LuksSectorSize)
            .unwrap();
        assert!(f
            .facts
            .fix
            .as_deref()
            .unwrap()
            .starts_with("cryptsetup picks 4096"));
        // Nothing opened above it: its contents are said to be unchecked.
        assert!(codes(&l2).contains(&Code::LuksContentsUnchecked));
        let ok = judged(LayerKind::Luks, MIB, Some(16 * MIB), luks(2, 4096));
        assert!(!codes(&ok).contains(&Code::LuksSectorSize));
    }

    #[test]
    fn a_luks_sector_below_the_logical_block_is_an_error() {
        let mut l = Layer::new(
            LayerKind::Luks,
            "l",
            "sda",
            MIB,
            64 * MIB,
            Topology::plain(4096),
        );
        l.data_offset_bytes = Some(16 * MIB);
        l.detail = Some(luks(2, 512));
        judge_layer(&mut l);
        let f = l
            .findings
            .iter()
            .find(|f| f.code == Code::LuksSectorSize)
            .unwrap();
        assert_eq!(f.severity, Severity::Error);
    }

    fn ext4(block: u32, stride: u32, width: u32) -> Detail {
        Detail::Filesystem(Filesystem {
            kind: FsKind::Ext4,
            block_size: block,
            sector_size: block,
            stripe_unit_blocks: stride,
            stripe_width_blocks: width,
            size_bytes: 64 * MIB,
            free_bytes: None,
            zoned: false,
            volume: None,
            f2fs: None,
        })
    }

    #[test]
    fn a_filesystem_block_below_the_physical_block_is_named() {
        let small = judged(LayerKind::Filesystem, MIB, None, ext4(1024, 0, 0));
        let f = small
            .findings
            .iter()
            .find(|f| f.code == Code::FsBlockBelowPhysical);
        assert_eq!(f.map(|f| f.severity), Some(Severity::Warning));
        let ok = judged(LayerKind::Filesystem, MIB, None, ext4(4096, 0, 0));
        assert!(ok.aligned, "{:?}", codes(&ok));
    }

    #[test]
    fn stripe_hints_are_checked_against_the_stripe_below() {
        // A 64 KiB chunk, 3 data disks: minimum 64 KiB, optimal 192 KiB.
        let mut l = Layer::new(
            LayerKind::Filesystem,
            "l",
            "md0",
            0,
            64 * MIB,
            Topology {
                minimum_io_size: 65536,
                optimal_io_size: 196608,
                ..logical_512_over(4096)
            },
        );
        l.detail = Some(ext4(4096, 0, 0));
        judge_layer(&mut l);
        let f = l
            .findings
            .iter()
            .find(|f| f.code == Code::FsStripeHintsMissing)
            .unwrap();
        assert_eq!(
            f.facts.fix.as_deref(),
            Some("mkfs.ext4 -E stride=16,stripe_width=48 (or tune2fs -E on the existing one)")
        );
        // judge() keeps the status a layer arrives with (a partition
        // root's), so the hinted filesystem is a layer of its own.
        let mut hinted = Layer::new(LayerKind::Filesystem, "l", "md0", 0, 64 * MIB, l.below);
        hinted.detail = Some(ext4(4096, 16, 48));
        judge_layer(&mut hinted);
        assert!(hinted.aligned, "{:?}", codes(&hinted));
    }

    /// An LV with one segment striped over `legs` (offsets on sda), chunk `ss`.
    fn striped_lv(legs: &[u64], ss: u64) -> Layer {
        let mut lv = Layer::new(
            LayerKind::LvmLv,
            "lv",
            "vg/lv",
            0,
            64 * MIB,
            logical_512_over(4096),
        );
        lv.detail = Some(Detail::Lv(LvInfo {
            segments: vec![Segment {
                kind: "striped".into(),
                stripe_size_bytes: Some(ss),
                legs: legs
                    .iter()
                    .map(|_| Leg {
                        pv: "pv0".into(),
                        start_extent: 0,
                    })
                    .collect(),
                ..Segment::default()
            }],
            ..LvInfo::default()
        }));
        for (i, &at) in legs.iter().enumerate() {
            let mut g = Layer::new(
                LayerKind::LvmLeg,
                "leg",
                "sda",
                at,
                MIB,
                logical_512_over(4096),
            );
            g.detail = Some(Detail::Leg(LegInfo {
                stripe: i,
                ..LegInfo::default()
            }));
            lv.children.push(g);
        }
        judge_layer(&mut lv);
        lv
    }

    #[test]
    fn striped_legs_off_the_unit_are_priced_in_units_touched() {
        let lv = striped_lv(&[MIB, MIB + 1536], 8192);
        let f = lv
            .findings
            .iter()
            .find(|f| f.code == Code::LvmStripeMisaligned)
            .unwrap();
        assert_eq!(f.facts.units_ideal, Some(2));
        assert_eq!(f.facts.amplification, Some(1.5));
        assert_eq!(f.facts.legs.len(), 2);
        assert_eq!(f.facts.legs[1].misalignment_bytes, 1536);
        assert_eq!(lv.children[1].status, Status::Misaligned);
        assert!(lv.children[0].status.is_clean());
        let ok = striped_lv(&[MIB, 2 * MIB], 8192);
        assert!(ok.findings.is_empty(), "{:?}", codes(&ok));
    }

    #[test]
    fn a_segment_whose_legs_are_not_all_here_is_not_followed() {
        let mut lv = striped_lv(&[MIB, 2 * MIB], 8192);
        lv.children.pop();
        lv.findings.clear();
        judge_layer(&mut lv);
        assert_eq!(codes(&lv), [Code::LayerNotFollowed]);
    }

    #[test]
    fn missing_roles_are_ranges() {
        assert_eq!(missing_ranges(4, &[0, 1, 2, 3]), Vec::<String>::new());
        assert_eq!(missing_ranges(6, &[1, 4]), ["0", "2-3", "5"]);
        assert_eq!(missing_ranges(3, &[0, 0, 9]), ["1-2"]);
        // A huge count costs nothing: one range.
        assert_eq!(missing_ranges(u32::MAX, &[0, 1]), ["2-4294967294"]);
    }

    #[test]
    fn stripe_write_amplification() {
        // 8 KiB stripes, 1536 bytes off 4 KiB: 3 units instead of 2.
        assert_eq!(touched(1536, 8192, 4096), 3);
        assert_eq!(touched(0, 8192, 4096), 2);
        assert_eq!(touched(4096 + 512, 4096, 4096), 2);
    }
}
