//! Portability: a layout that is aligned here may not be under every
//! plausible topology (a 4K disk moved out of a USB enclosure, a RAID chunk
//! of 64 KiB to 1 MiB, a 4Kn presentation). Starts on 1 MiB and ends on
//! 4 KiB are.

use super::outcome::CheckedPartition;
use crate::findings::{Code, Finding};
use crate::layout::PartKind;
use crate::units::{human, KIB, MIB};

/// Why each data partition is not portable.
fn unportable(partitions: &[CheckedPartition]) -> Vec<String> {
    partitions
        .iter()
        .filter(|p| p.kind != PartKind::Extended)
        .filter(|p| p.start_bytes % MIB != 0 || (p.end_bytes + 1) % (4 * KIB) != 0)
        .map(|p| {
            if p.start_bytes % MIB != 0 {
                format!(
                    "partition {} starts on a {} boundary, not 1 MiB",
                    p.number,
                    human(p.start_alignment)
                )
            } else {
                format!("partition {} ends off 4 KiB", p.number)
            }
        })
        .collect()
}

/// `layout-not-portable` when some data partition is not; None when all are.
pub fn finding(partitions: &[CheckedPartition]) -> Option<Finding> {
    let unportable = unportable(partitions);
    (!unportable.is_empty()).then(|| {
        Finding::new(
            Code::LayoutNotPortable,
            format!(
                "{}: aligned here perhaps, but not under every plausible topology (a 4K disk moved from a USB enclosure, a RAID chunk of 64 KiB to 1 MiB, a 4Kn presentation)",
                unportable.join("; ")
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixture::{image, part};
    use crate::check::partitions::partition_reports;
    use crate::check::tools::ToolView;
    use crate::iolimits::Topology;

    fn reports(parts: Vec<crate::layout::Partition>) -> Vec<CheckedPartition> {
        let t = image(64 * MIB, Topology::IMAGE_DEFAULT, parts);
        partition_reports(&t, &ToolView::new(&t.topology, t.size), false)
    }

    #[test]
    fn starts_on_1_mib_and_ends_on_4_kib_are_portable() {
        let r = reports(vec![
            part(1, PartKind::Primary, 2048, 4095),
            // An extended container is not data: its odd end does not count.
            part(2, PartKind::Extended, 4096, 8000),
        ]);
        assert!(finding(&r).is_none());
    }

    #[test]
    fn each_unportable_partition_is_named() {
        let r = reports(vec![
            part(1, PartKind::Primary, 63, 2047),
            part(2, PartKind::Primary, 2048, 4094),
        ]);
        let f = finding(&r).expect("not portable");
        assert_eq!(f.code, Code::LayoutNotPortable);
        assert!(f.message.starts_with(
            "partition 1 starts on a 512 B boundary, not 1 MiB; partition 2 ends off 4 KiB:"
        ));
    }
}
