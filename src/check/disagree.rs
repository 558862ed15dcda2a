//! Where parted, fdisk and sgdisk (emulated in `tools.rs`) disagree: each
//! tool's verdict on a partition, the sentence on why they differ, and
//! where each would put the first partition of an empty disk.

use super::start::kernel_offset;
use super::tools::{self, ToolVerdicts, ToolView};
use crate::findings::{Code, Finding, Severity};
use crate::iolimits::Topology;
use crate::units::{bridge_opt_why, human, is_bridge_opt, KIB};

/// Each tool's verdict on a partition given in device sectors.
pub fn tool_verdicts(v: &ToolView, first: u64, last: u64, sgdisk_align: u64) -> ToolVerdicts {
    ToolVerdicts {
        parted_optimal: tools::parted_optimal(v).is_aligned(first),
        parted_minimal: tools::parted_minimal(v).is_aligned(first),
        fdisk: tools::fdisk_phy_aligned(v, first),
        sgdisk: !tools::sgdisk_cautions(sgdisk_align, first, last),
    }
}

/// One sentence on why the tools disagree about a partition.
pub fn explain_disagreement(v: &ToolView, verdicts: &ToolVerdicts, sgdisk_align: u64) -> String {
    let yn = |b: bool| if b { "aligned" } else { "NOT aligned" };
    let opt = tools::parted_optimal(v);
    let min = tools::parted_minimal(v);
    let fdisk_g = v.pbs.max(v.min);
    let mut s = format!(
        "parted align-check opt says {} (grain {} sectors), align-check min says {} (grain {} sectors), fdisk says {} (checks the {fdisk_g}-byte physical boundary{}), sgdisk says {} (its {sgdisk_align}-sector alignment, lowered to fit the existing starts, on both start and end)",
        yn(verdicts.parted_optimal),
        opt.grain,
        yn(verdicts.parted_minimal),
        min.grain,
        yn(verdicts.fdisk),
        if v.ao != 0 { format!(" shifted by alignment offset {}", v.ao) } else { String::new() },
        yn(verdicts.sgdisk),
    );
    if is_bridge_opt(v.opt, v.lbs) {
        s.push_str(&format!(
            "; optimal_io_size is {}: {}",
            v.opt,
            bridge_opt_why(v.opt, v.lbs, v.pbs)
        ));
    }
    s
}

/// Say where the tools would put the first partition when they differ.
/// On a disk that has partitions this is about an imaginary empty disk:
/// advice (info), never a warning.
pub fn first_start_findings(
    t: &Topology,
    v: &ToolView,
    f: &tools::FirstStarts,
    empty: bool,
) -> Vec<Finding> {
    if f.parted == f.fdisk && f.fdisk == f.sgdisk {
        return vec![];
    }
    let show = |b: u64| format!("byte {b} ({}, sector {})", human(b), b / v.lbs);
    let mut msg = format!(
        "on an empty disk with this topology the first partition would start at {} with parted -a optimal, {} with fdisk/sfdisk, {} with sgdisk",
        show(f.parted),
        show(f.fdisk),
        show(f.sgdisk)
    );
    let mut severity = Severity::Info;
    if tools::fdisk_tiny(v) {
        msg.push_str(&format!(
            ": on a disk of at most 4 × their {} grain fdisk/sfdisk drop it to the physical sector ({} bytes) and start at the first usable sector; parted and sgdisk keep their grain",
            human(tools::fdisk_usual_grain(v)),
            v.pbs
        ));
    } else if is_bridge_opt(v.opt, v.lbs) {
        msg.push_str(&format!(
            ": optimal_io_size is {}: {}, and sgdisk never reads it",
            v.opt,
            bridge_opt_why(v.opt, v.lbs, v.pbs)
        ));
    } else if v.ao != 0 {
        msg.push_str(&format!(
            ": fdisk and parted shift starts by the alignment offset {}, sgdisk ignores it",
            v.ao
        ));
    } else {
        msg.push_str(": parted aligns to the optimal I/O size when 1 MiB is not a multiple of it, fdisk to max(optimal I/O, 1 MiB), sgdisk always to 1 MiB");
    }
    // A warning when some tool's default would itself be misaligned.
    if empty
        && [f.parted, f.fdisk, f.sgdisk]
            .iter()
            .any(|&b| b % (4 * KIB) != 0 || kernel_offset(t, b) != 0)
    {
        severity = Severity::Warning;
    }
    vec![Finding::new(Code::ToolsDisagree, msg).severity(severity)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::MIB;

    fn topo(pbs: u32, ao: i64) -> Topology {
        Topology {
            physical_block_size: pbs,
            minimum_io_size: pbs,
            alignment_offset: ao,
            ..Topology::IMAGE_DEFAULT
        }
    }

    #[test]
    fn every_tool_accepts_1_mib_and_none_sector_63_on_4k() {
        let v = ToolView::new(&topo(4096, 0), 64 * MIB);
        let ok = tool_verdicts(&v, 2048, 4095, 2048);
        assert!(ok.all_agree() && ok.fdisk && ok.sgdisk && ok.parted_optimal);
        let bad = tool_verdicts(&v, 63, 4095, 2048);
        assert!(!bad.parted_optimal && !bad.parted_minimal && !bad.fdisk && !bad.sgdisk);
    }

    #[test]
    fn the_sentence_gives_each_tools_verdict_and_grain() {
        let v = ToolView::new(&topo(4096, 0), 64 * MIB);
        let verdicts = ToolVerdicts {
            parted_optimal: false,
            parted_minimal: true,
            fdisk: true,
            sgdisk: false,
        };
        let s = explain_disagreement(&v, &verdicts, 2048);
        assert!(s.starts_with("parted align-check opt says NOT aligned (grain 2048 sectors), align-check min says aligned (grain 8 sectors), fdisk says aligned (checks the 4096-byte physical boundary)"), "{s}");
        assert!(s.contains("sgdisk says NOT aligned (its 2048-sector alignment"));
    }

    #[test]
    fn first_starts_are_said_only_when_the_tools_differ() {
        let t = topo(512, 0);
        let v = ToolView::new(&t, 64 * MIB);
        let same = tools::first_starts(&v, false);
        assert!(first_start_findings(&t, &v, &same, true).is_empty());
        // An alignment offset: fdisk and parted shift, sgdisk does not, and
        // its 1 MiB start is off the kernel's grid.
        let t = topo(4096, 3584);
        let v = ToolView::new(&t, 64 * MIB);
        let differ = tools::first_starts(&v, false);
        let empty = first_start_findings(&t, &v, &differ, true);
        assert_eq!(empty[0].code, Code::ToolsDisagree);
        assert_eq!(empty[0].severity, Severity::Warning);
        assert!(empty[0].message.ends_with(
            "fdisk and parted shift starts by the alignment offset 3584, sgdisk ignores it"
        ));
        let in_use = first_start_findings(&t, &v, &differ, false);
        assert_eq!(in_use[0].severity, Severity::Info);
    }
}
