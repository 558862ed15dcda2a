//! An f2fs on flash: its segments start where segment 0 does, and its
//! cleaner frees a section at a time (`-s` segments). mkfs.f2fs means to
//! put segment 0 on a zone boundary of the device, counting the
//! partition's start (f2fs-tools `mkfs/f2fs_format.c`), but where it
//! cannot read that start it counts from the partition: seen with
//! f2fs-tools 1.15.0 on a loop partition at 1 MiB, segment 0 at 2 MiB into
//! the filesystem (3 MiB on the disk) by default and 4 MiB with `-s 2`.
//! So segment 0 is judged where the superblock puts it on the device.

use super::start::start_findings;
use crate::findings::{Code, Facts, Finding, Severity};
use crate::stack::{F2fsAreas, Layer};
use crate::units::exact;

/// Segment 0's start on the device, through the one start rule, and the
/// section against the card's allocation unit.
pub fn f2fs_findings(l: &Layer, a: &F2fsAreas) -> Vec<Finding> {
    let b = &l.below;
    let mut out = start_findings(
        b,
        l.offset_bytes.saturating_add(a.segment0_offset_bytes),
        &format!(
            "the f2fs segments (segment 0, {} in)",
            exact(a.segment0_offset_bytes)
        ),
        &l.device,
    );
    let unit = b.erase_unit_bytes;
    if unit > 0 && a.section_bytes % unit != 0 {
        // Sections of whole units: -s is a count of segments.
        let fix = (unit % a.segment_bytes == 0).then(|| {
            format!(
                "mkfs.f2fs -s {} (sections of {}), after a backup",
                unit / a.segment_bytes,
                exact(unit)
            )
        });
        let f = Finding::of(
            Code::FsSectionNotEraseUnit,
            Facts {
                region: Some("the f2fs sections".into()),
                block_size_bytes: Some(a.section_bytes),
                grain_bytes: Some(unit),
                device: Some(l.device.clone()),
                fix,
                ..Facts::default()
            },
        );
        out.push(if b.removable_flash {
            f
        } else {
            f.severity(Severity::Info)
        });
    }
    out
}
