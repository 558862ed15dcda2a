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
pub fn pool(l: &Layer) -> Vec<Finding> {
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
                "a pool whose chunk is a multiple of {} (the thin-chunk-below-stripe route: lvcreate --type thin-pool --chunksize), or hints the chunk holds (tune2fs -E stride=,stripe_width= on ext4; XFS's are fixed at mkfs)",
                exact(span)
            )),
            ..Facts::default()
        };
        c.findings.push(Finding::of(Code::ThinFsHintsChunk, facts));
    }
}
