//! A partition's placement: its start (through the one start rule in
//! `start.rs`), the discard grid, its end and size, the kernel's own
//! per-partition offset, and the block size of its node.

use super::start::Start;
use crate::findings::{Code, Facts, Finding, Severity};
use crate::iolimits::Topology;
use crate::layout::PartKind;
use crate::topology::is_misaligned_marker;
use crate::units::KIB;

/// The size the kernel registers for a partition node: a DOS extended
/// container gets max(lbs/512, 2) 512-byte sectors (capped by its table
/// size), whatever the table says (block/partitions/msdos.c, "prevent
/// someone doing mkfs or mkswap on an extended partition").
pub fn node_size(kind: PartKind, lbs: u32, size_bytes: u64) -> u64 {
    if kind == PartKind::Extended {
        size_bytes.min(u64::from(lbs).max(1024))
    } else {
        size_bytes
    }
}

/// The block size the kernel picks for a device node of `size_bytes`:
/// start at the logical block and double while below the page size and
/// the size stays a multiple of the doubled value.
pub fn device_block_size(lbs: u32, size_bytes: u64) -> u32 {
    const PAGE: u32 = 4096;
    let mut bs = lbs.max(1);
    while bs < PAGE && size_bytes % (2 * u64::from(bs)) == 0 {
        bs *= 2;
    }
    bs
}

/// The placement facts of one partition in bytes.
pub struct Placement {
    pub kind: PartKind,
    pub start: u64,
    pub size: u64,
}

impl Placement {
    pub fn end_exclusive(&self) -> u64 {
        self.start + self.size
    }
}

/// Codes that decide a partition's `aligned` verdict.
pub fn is_placement_code(c: Code) -> bool {
    c.meaning().placement
}

/// Findings about where a partition starts and ends.
pub fn placement_findings(t: &Topology, p: &Placement, kernel_ao: Option<i64>) -> Vec<Finding> {
    let (start, end, size) = (p.start, p.end_exclusive(), p.size);
    // An extended container's own placement is informational.
    let base = Facts {
        extended_container: p.kind == PartKind::Extended,
        ..Facts::default()
    };
    let judged = Start::judge(t, start);
    let mut out = judged.partition_findings(t.alignment_offset, &base);
    let dg = t.discard_granularity;
    if dg > u64::from(t.logical_block_size)
        && (start % dg + dg - t.discard_alignment % dg) % dg != 0
    {
        out.push(Finding::of(
            Code::StartNotDiscard,
            Facts {
                offset_bytes: Some(start),
                grain_bytes: Some(dg),
                ..base.clone()
            },
        ));
    }
    out.extend(end_findings(t, end, &base));
    // An extended container's node is registered at 1 KiB (4 KiB on 4Kn)
    // whatever its table size: that size decides no block size.
    if size % (4 * KIB) != 0 && p.kind != PartKind::Extended {
        out.push(Finding::of(
            Code::SizeNot4k,
            Facts {
                size_bytes: Some(size),
                grain_bytes: Some(4 * KIB),
                block_size_bytes: Some(device_block_size(t.logical_block_size, size).into()),
                ..base.clone()
            },
        ));
    }
    out.extend(kernel_ao.and_then(|kao| kernel_ao_finding(kao, judged.kernel_offset, &base)));
    if p.kind == PartKind::Extended {
        for f in &mut out {
            f.severity = Severity::Info;
        }
    }
    out
}

/// The end on 4 KiB, and on a physical block larger than that.
fn end_findings(t: &Topology, end: u64, base: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    let at = Facts {
        end_exclusive_bytes: Some(end),
        ..base.clone()
    };
    if end % (4 * KIB) != 0 {
        out.push(Finding::of(
            Code::EndNot4k,
            Facts {
                grain_bytes: Some(4 * KIB),
                misalignment_bytes: Some(end % (4 * KIB)),
                ..at.clone()
            },
        ));
    }
    let unit = t.erase_unit_bytes;
    if unit > 0 && end % unit != 0 {
        out.push(Finding::of(
            Code::EndNotEraseUnit,
            Facts {
                grain_bytes: Some(unit),
                misalignment_bytes: Some(end % unit),
                ..at.clone()
            },
        ));
    }
    let pbs = u64::from(t.physical_block_size);
    if pbs > 4 * KIB && end % pbs != 0 {
        out.push(Finding::of(
            Code::EndNotPhysical,
            Facts {
                grain_bytes: Some(pbs),
                physical_block_bytes: Some(pbs),
                misalignment_bytes: Some(end % pbs),
                ..at
            },
        ));
    }
    out
}

/// The kernel's own per-partition alignment_offset against ours.
fn kernel_ao_finding(kao: i64, ours: u64, base: &Facts) -> Option<Finding> {
    let facts = Facts {
        kernel_value: Some(kao),
        misalignment_bytes: Some(ours),
        ..base.clone()
    };
    if is_misaligned_marker(kao) {
        Some(Finding::of(Code::KernelReportsMisaligned, facts))
    } else if kao != ours as i64 {
        Some(Finding::of(Code::KernelOffsetDiffers, facts))
    } else {
        None
    }
}

/// When the node's block size read back with BLKBSZGET is not the one the
/// kernel picks for its size: something set it since (a mounted filesystem
/// sets its own block size, BLKBSZSET does too).
pub fn node_block_size_finding(predicted: u32, kernel: Option<u32>) -> Option<Finding> {
    let kernel = kernel.filter(|&k| k != predicted)?;
    Some(Finding::of(
        Code::NodeBlockSizeDiffers,
        Facts {
            block_size_bytes: Some(predicted.into()),
            kernel_value: Some(kernel.into()),
            ..Facts::default()
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MIB;

    fn topo(pbs: u32, min: u32, ao: i64) -> Topology {
        Topology {
            physical_block_size: pbs,
            minimum_io_size: min,
            alignment_offset: ao,
            ..Topology::IMAGE_DEFAULT
        }
    }

    #[test]
    fn device_block_sizes() {
        assert_eq!(device_block_size(512, 100 * MIB), 4096);
        assert_eq!(device_block_size(512, 100 * MIB + 512), 512);
        assert_eq!(device_block_size(512, 100 * MIB + 1024), 1024);
        assert_eq!(device_block_size(512, 100 * MIB + 2048), 2048);
        assert_eq!(device_block_size(4096, 100 * MIB), 4096);
        // DOS extended containers are registered at 2 sectors (8 on 4Kn).
        let ext = |lbs, size| device_block_size(lbs, node_size(PartKind::Extended, lbs, size));
        assert_eq!(ext(512, 100 * MIB), 1024);
        assert_eq!(ext(512, 100 * MIB + 512), 1024);
        assert_eq!(ext(4096, 100 * MIB), 4096);
        assert_eq!(ext(512, 512), 512);
    }

    /// On a card with a 4 MiB unit, an end inside a unit is an info
    /// naming how far in; one on the unit says nothing.
    #[test]
    fn an_end_inside_the_cards_unit_is_an_info() {
        let mut t = topo(512, 512, 0);
        t.erase_unit_bytes = 4 * MIB;
        t.removable_flash = true;
        let p = |size| Placement {
            kind: PartKind::Primary,
            start: 4 * MIB,
            size,
        };
        let f = placement_findings(&t, &p(100 * MIB + MIB), None);
        let end = f.iter().find(|f| f.code == Code::EndNotEraseUnit).unwrap();
        assert_eq!(end.severity, Severity::Info);
        assert_eq!(end.facts.misalignment_bytes, Some(MIB));
        assert!(
            end.message.contains("1 MiB into a 4 MiB allocation unit"),
            "{}",
            end.message
        );
        let f = placement_findings(&t, &p(100 * MIB), None);
        assert!(f.iter().all(|f| f.code != Code::EndNotEraseUnit), "{f:?}");
    }

    #[test]
    fn findings_for_legacy_start() {
        let t = topo(4096, 4096, 0);
        let p = Placement {
            kind: PartKind::Primary,
            start: 63 * 512,
            size: 100 * MIB,
        };
        let f = placement_findings(&t, &p, None);
        let codes: Vec<Code> = f.iter().map(|f| f.code).collect();
        assert!(codes.contains(&Code::StartMisaligned));
        assert!(codes.contains(&Code::StartNot4k));
        assert!(codes.contains(&Code::EndNot4k));
        assert!(!codes.contains(&Code::SizeNot4k));
    }
}
