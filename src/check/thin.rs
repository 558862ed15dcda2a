//! Rules for LVM thin pools. A pool provisions its data LV in chunks, each
//! placed wherever the next free one is: a chunk is the unit a thin LV's
//! first write to a region turns into, so it is what has to fit the stripe
//! below. lvm2 itself takes the device's optimal I/O size (the full stripe
//! on md: lib/device/dev-md.c) as the chunk only under
//! `allocation/thin_pool_chunk_size_policy = "performance"`
//! (lib/metadata/thin_manip.c `get_default_allocation_thin_pool_chunk_size`,
//! lib/metadata/pool_manip.c `recalculate_pool_chunk_size_with_dev_hints`);
//! the default `generic` policy takes the minimum I/O size (one md chunk,
//! one LV stripe), at least 64 KiB.

use super::start::sane_optimal;
use crate::findings::{Code, Facts, Finding};
use crate::stack::{Layer, LayerKind};
use crate::units::exact;

/// The full stripe of the device under `l` (its optimal I/O size where the
/// minimum says it is striped), as the filesystem rules take it.
fn full_stripe(l: &Layer) -> Option<u64> {
    let b = &l.below;
    sane_optimal(b).filter(|_| b.minimum_io_size > b.physical_block_size)
}

/// The VG and LV names of `vg/lv`.
fn split(device: &str) -> (&str, &str) {
    device.split_once('/').unwrap_or(("VG", device))
}

/// A thin pool's chunk against the full stripe of what its data LV sits on,
/// and where the data LV starts on it.
pub fn pool_findings(l: &Layer) -> Vec<Finding> {
    let Some(p) = l.lv().and_then(|i| i.segments.first()?.thin_pool.as_ref()) else {
        return vec![];
    };
    let Some(stripe) = full_stripe(l) else {
        return vec![];
    };
    let (vg, name) = split(l.name.trim_start_matches("LV "));
    let chunk = p.chunk_bytes;
    let facts = Facts {
        region: Some(format!("thin pool {vg}/{name}")),
        device: Some(l.device.clone()),
        chunk_bytes: Some(chunk),
        stripe_width_bytes: Some(stripe),
        ..Facts::default()
    };
    if chunk % stripe != 0 {
        // The chunk is fixed when the pool is made (lvmthin(7), "Chunk
        // size"): the route is a new pool and a copy of each thin LV.
        let fix = format!(
            "lvcreate --type thin-pool --chunksize {}k -L {}b -n {name}_new {vg}; then for each thin LV: lvcreate -V SIZE --thinpool {vg}/{name}_new -n NEW {vg} and, with the old one unmounted, dd if=/dev/{vg}/OLD of=/dev/{vg}/NEW bs={} conv=sparse,fsync",
            stripe / 1024,
            l.size_bytes,
            stripe
        );
        let facts = Facts {
            fix: Some(fix),
            ..facts
        };
        return vec![Finding::of(Code::ThinChunkBelowStripe, facts)];
    }
    if l.offset_bytes % stripe != 0 {
        let facts = Facts {
            offset_bytes: Some(l.offset_bytes),
            misalignment_bytes: Some(l.offset_bytes % stripe),
            ..facts
        };
        return vec![Finding::of(Code::ThinDataStart, facts)];
    }
    vec![]
}

/// A filesystem's stripe hints inside a thin LV: a full stripe of the
/// filesystem is a run of the LV's blocks, which the pool places chunk by
/// chunk; only when a chunk holds whole stripe widths do the hints still
/// meet stripes below. Added to the filesystem layers right above `l`
/// before they are judged.
pub fn hints_inside(l: &mut Layer) {
    let Some(chunk) = l
        .lv()
        .filter(|i| i.segments.first().is_some_and(|s| s.thin.is_some()))
        .and_then(|i| i.pool_chunk_bytes)
    else {
        return;
    };
    for c in &mut l.children {
        let Some(fs) = c.filesystem().filter(|_| c.kind == LayerKind::Filesystem) else {
            continue;
        };
        let (unit, width) = (fs.stripe_unit_bytes(), fs.stripe_width_bytes());
        let span = if width != 0 { width } else { unit };
        if span == 0 || chunk % span == 0 {
            continue;
        }
        let facts = Facts {
            region: Some(fs.kind.as_str().to_string()),
            device: Some(c.device.clone()),
            chunk_bytes: Some(chunk),
            hint_unit_bytes: Some(unit),
            hint_width_bytes: Some(width),
            fix: Some(format!(
                "a pool whose chunk is a multiple of {} (the thin-chunk-below-stripe route: lvcreate --type thin-pool --chunksize), or hints the chunk holds (tune2fs -E stride=,stripe_width= on ext4, the sunit=,swidth= mount options on XFS)",
                exact(span)
            )),
            ..Facts::default()
        };
        c.findings.push(Finding::of(Code::ThinFsHintsChunk, facts));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixture::logical_512_over;
    use crate::iolimits::Topology;
    use crate::stack::{Detail, Filesystem, FsKind, LvInfo, Segment, ThinPoolSeg, ThinSeg};
    use crate::units::MIB;

    /// md RAID0 of 512 KiB chunks on two disks: the full stripe 1 MiB.
    fn raid0() -> Topology {
        Topology {
            minimum_io_size: 512 << 10,
            optimal_io_size: 1 << 20,
            ..logical_512_over(512)
        }
    }

    fn pool(chunk: u64, data_at: u64) -> Layer {
        let mut l = Layer::new(
            LayerKind::LvmLv,
            "LV vg/pool",
            "md:r0",
            data_at,
            64 * MIB,
            raid0(),
        );
        l.detail = Some(Detail::Lv(LvInfo {
            segments: vec![Segment {
                kind: "thin-pool".into(),
                thin_pool: Some(ThinPoolSeg {
                    chunk_bytes: chunk,
                    ..ThinPoolSeg::default()
                }),
                ..Segment::default()
            }],
            pool_chunk_bytes: Some(chunk),
        }));
        l
    }

    fn codes(f: &[Finding]) -> Vec<Code> {
        f.iter().map(|f| f.code).collect()
    }

    #[test]
    fn the_chunk_is_judged_against_the_full_stripe_then_the_data_start() {
        let small = pool(64 << 10, MIB);
        let f = pool_findings(&small);
        assert_eq!(codes(&f), [Code::ThinChunkBelowStripe]);
        assert_eq!(f[0].facts.stripe_width_bytes, Some(MIB));
        assert!(f[0].facts.fix.as_deref().unwrap().starts_with(
            "lvcreate --type thin-pool --chunksize 1024k -L 67108864b -n pool_new vg;"
        ));
        // 1.5 MiB is a multiple of 64 KiB (lvm2 takes it), not of the stripe.
        assert_eq!(
            codes(&pool_findings(&pool(1536 << 10, MIB))),
            [Code::ThinChunkBelowStripe]
        );
        assert!(pool_findings(&pool(MIB, MIB)).is_empty());
        assert!(pool_findings(&pool(2 * MIB, 3 * MIB)).is_empty());
        // On the stripe's multiple but its data 512 KiB into a stripe.
        let off = pool_findings(&pool(MIB, MIB + (512 << 10)));
        assert_eq!(codes(&off), [Code::ThinDataStart]);
        assert_eq!(off[0].facts.misalignment_bytes, Some(512 << 10));
        // Nothing striped below: nothing to say.
        let mut plain = pool(64 << 10, MIB);
        plain.below = logical_512_over(4096);
        assert!(pool_findings(&plain).is_empty());
    }

    #[test]
    fn hints_wider_than_the_chunk_are_named_on_the_filesystem() {
        let thin = |chunk: u64, stride: u32, width: u32| {
            let mut l = Layer::new(
                LayerKind::LvmLv,
                "LV vg/thin",
                "vg/thin",
                0,
                64 * MIB,
                raid0(),
            );
            l.detail = Some(Detail::Lv(LvInfo {
                segments: vec![Segment {
                    kind: "thin".into(),
                    thin: Some(ThinSeg::default()),
                    ..Segment::default()
                }],
                pool_chunk_bytes: Some(chunk),
            }));
            let mut fs = Layer::new(
                LayerKind::Filesystem,
                "ext4",
                "vg/thin",
                0,
                64 * MIB,
                raid0(),
            );
            fs.detail = Some(Detail::Filesystem(Filesystem {
                kind: FsKind::Ext4,
                block_size: 4096,
                sector_size: 4096,
                stripe_unit_blocks: stride,
                stripe_width_blocks: width,
                size_bytes: 64 * MIB,
                free_bytes: None,
                zoned: false,
                volume: None,
                f2fs: None,
            }));
            l.children.push(fs);
            hints_inside(&mut l);
            codes(&l.children[0].findings)
        };
        assert_eq!(thin(64 << 10, 128, 256), [Code::ThinFsHintsChunk]);
        assert!(thin(MIB, 128, 256).is_empty());
        assert!(thin(2 * MIB, 128, 256).is_empty());
        assert!(thin(64 << 10, 0, 0).is_empty());
        assert!(thin(64 << 10, 16, 0).is_empty());
    }
}
