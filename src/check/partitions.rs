//! Each valid partition of a target judged: its placement, the tools'
//! verdicts, and the block size of its node, into its report.

use super::declared;
use super::disagree;
use super::outcome::{CheckedPartition, TopologySource};
use super::placement::{self, Placement};
use super::start::kernel_offset;
use super::tools::{self, ToolView};
use crate::findings::{Code, Finding, Status};
use crate::inspect::Target;
use crate::layout::PartKind;

/// Each valid partition judged: placement, the tools, the node block size.
pub fn partition_reports(t: &Target, view: &ToolView, mismatch: bool) -> Vec<CheckedPartition> {
    let topo = &t.topology;
    let ss = t.table.sector_size;
    let device_sectors = |bytes: u64| bytes / view.lbs;
    let data_starts: Vec<u64> = t
        .table
        .partitions
        .iter()
        .filter(|p| p.kind != PartKind::Extended && p.last_lba >= p.first_lba)
        .map(|p| device_sectors(p.first_lba.saturating_mul(ss)))
        .collect();
    let sg_align = tools::sgdisk_alignment(view, &data_starts);
    let unit = declared::write_unit(t.disk.as_ref().and_then(|d| d.declared.as_ref()));
    let mut out = Vec::new();
    for p in t.partitions() {
        let start = p.first_lba * ss;
        let size = (p.last_lba - p.first_lba + 1) * ss;
        let placement = Placement {
            kind: p.kind,
            start,
            size,
        };
        let kpart = t.disk.as_ref().filter(|_| !mismatch).and_then(|d| {
            d.partitions
                .iter()
                .find(|k| k.number == p.number && k.start_bytes == start)
        });
        // The kernel's own offset only answers for the real topology.
        let kernel_ao = kpart
            .filter(|_| t.source == TopologySource::Kernel)
            .map(|k| k.alignment_offset);
        let mut pf = placement::placement_findings(topo, &placement, kernel_ao);
        if p.kind != PartKind::Extended && !mismatch {
            pf.extend(declared::partition_start(unit, topo, start));
            if let Some(d) = &t.disk {
                pf.extend(super::zones::partition_findings(
                    &d.zoned,
                    start,
                    start + size,
                    t.size,
                ));
            }
        }
        let first = device_sectors(start);
        let last = device_sectors(start + size).saturating_sub(1);
        let mut verdicts = disagree::tool_verdicts(view, first, last, sg_align);
        if p.kind == PartKind::Extended {
            // sgdisk reads a DOS table into a GPT of its data partitions
            // (gptfdisk's MBRData::AsGPT and GPTData::XFormPartitions leave extended ones
            // out): it has no word on the container, which is not among
            // the starts it lowers its alignment to fit either.
            verdicts.sgdisk = true;
        }
        if !verdicts.all_agree() && p.kind != PartKind::Extended {
            pf.push(Finding::new(
                Code::ToolsDisagree,
                disagree::explain_disagreement(view, &verdicts, sg_align),
            ));
        }
        let device_block_size = placement::device_block_size(
            topo.logical_block_size,
            placement::node_size(p.kind, topo.logical_block_size, size),
        );
        let device_block_size_kernel = kpart.and_then(|k| t.node_block_size(k.number));
        pf.extend(placement::node_block_size_finding(
            device_block_size,
            device_block_size_kernel,
        ));
        let status = Status::of(pf.iter().filter(|f| placement::is_placement_code(f.code)));
        out.push(CheckedPartition {
            number: p.number,
            kind: p.kind,
            type_id: p.type_id.clone(),
            name: p.name.clone(),
            partuuid: p.uuid.clone(),
            start_bytes: start,
            end_bytes: start + size - 1,
            size_bytes: size,
            start_sector: p.first_lba,
            end_sector: p.last_lba,
            sectors: p.last_lba - p.first_lba + 1,
            kernel_offset: kernel_offset(topo, start),
            kernel_alignment_offset: kernel_ao,
            start_alignment: crate::units::alignment_of(start),
            device_block_size,
            device_block_size_kernel,
            aligned: status.is_clean(),
            status,
            tools: verdicts,
            findings: pf,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixture::{image, part};
    use crate::iolimits::Topology;
    use crate::units::MIB;

    fn judged(topology: Topology, parts: Vec<crate::layout::Partition>) -> Vec<CheckedPartition> {
        let t = image(64 * MIB, topology, parts);
        partition_reports(&t, &ToolView::new(&t.topology, t.size), false)
    }

    #[test]
    fn a_legacy_start_on_a_4k_disk() {
        let t = Topology {
            physical_block_size: 4096,
            minimum_io_size: 4096,
            ..Topology::IMAGE_DEFAULT
        };
        let r = judged(t, vec![part(1, PartKind::Primary, 63, 2047)]);
        let p = &r[0];
        assert_eq!(
            (p.start_bytes, p.end_bytes, p.size_bytes),
            (63 * 512, MIB - 1, MIB - 63 * 512)
        );
        assert_eq!(p.kernel_offset, 512);
        assert_eq!(p.status, Status::Misaligned);
        assert!(!p.aligned);
        // Every tool refuses it, so they agree and say nothing more.
        assert!(p.tools.all_agree());
        assert!(!p.findings.iter().any(|f| f.code == Code::ToolsDisagree));
        // 1 MiB - 31.5 KiB: a node of 512-byte blocks.
        assert_eq!(p.device_block_size, 512);
        assert_eq!(p.kernel_alignment_offset, None);
    }

    #[test]
    fn an_extended_container_is_judged_for_information_only() {
        let r = judged(
            Topology::IMAGE_DEFAULT,
            vec![
                part(2, PartKind::Extended, 2047, 8191),
                part(5, PartKind::Logical, 4096, 8191),
            ],
        );
        assert!(r[0]
            .findings
            .iter()
            .all(|f| f.severity == crate::findings::Severity::Info));
        assert!(!r[0].findings.iter().any(|f| f.code == Code::ToolsDisagree));
        assert_eq!(r[0].device_block_size, 1024);
        assert_eq!(r[1].status, Status::Aligned);
    }
}
