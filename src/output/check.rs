//! The human report of `check`.

use super::style::{table, Style};
use crate::check::report::TargetReport;
use crate::check::CheckRun;
use crate::layout::TableKind;
use crate::units::human;
use std::fmt::Write;

fn yes(b: bool) -> &'static str {
    if b {
        "ok"
    } else {
        "NO"
    }
}

/// Render every target, the assembled arrays and volume groups, and errors.
pub fn render(run: &CheckRun, st: &Style) -> String {
    let mut out = String::new();
    for r in &run.targets {
        target(&mut out, r, st);
        out.push('\n');
    }
    if !run.assembled.is_empty() {
        let _ = writeln!(out, "{}", st.bold("assembled from the targets:"));
        super::stack::tree(&mut out, &run.assembled, st, "  ");
        out.push('\n');
    }
    out.push_str(&super::style::errors(&run.errors, st, "could not check:"));
    out
}

fn target(out: &mut String, r: &TargetReport, st: &Style) {
    let t = &r.topology;
    let table_desc = match r.partition_table.kind {
        TableKind::Gpt => format!("GPT, {}-byte sectors", r.partition_table.sector_size),
        TableKind::Mbr => format!("MBR, {}-byte sectors", r.partition_table.sector_size),
        TableKind::None => "no partition table".to_string(),
    };
    let _ = writeln!(
        out,
        "{}  {}, {} ({} bytes), {}",
        st.bold(&r.path),
        r.kind.as_str(),
        human(r.size_bytes),
        r.size_bytes,
        table_desc
    );
    let _ = writeln!(
        out,
        "  topology ({}): logical {} physical {} min-io {} opt-io {} alignment-offset {} discard {}",
        r.topology_source.as_str(),
        t.logical_block_size,
        t.physical_block_size,
        t.minimum_io_size,
        t.optimal_io_size,
        t.alignment_offset,
        t.discard_granularity
    );
    if !r.partitions.is_empty() {
        let mut rows = vec![[
            "#",
            "kind",
            "start(sector)",
            "start(bytes)",
            "end(last byte)",
            "size",
            "start on",
            "k-off",
            "node-bs",
            "parted opt/min",
            "fdisk",
            "sgdisk",
            "verdict",
        ]
        .iter()
        .map(|s| st.dim(s))
        .collect::<Vec<_>>()];
        for p in &r.partitions {
            rows.push(vec![
                p.number.to_string(),
                format!("{:?}", p.kind).to_lowercase(),
                p.start_sector.to_string(),
                p.start_bytes.to_string(),
                p.end_bytes.to_string(),
                human(p.size_bytes),
                human(p.start_alignment),
                p.kernel_offset.to_string(),
                p.device_block_size.to_string(),
                format!(
                    "{}/{}",
                    yes(p.tools.parted_optimal),
                    yes(p.tools.parted_minimal)
                ),
                yes(p.tools.fdisk).to_string(),
                yes(p.tools.sgdisk).to_string(),
                if p.aligned {
                    st.good("aligned")
                } else {
                    st.bad("MISALIGNED")
                },
            ]);
        }
        for line in table(&rows).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    let f = &r.first_start_bytes;
    let _ = writeln!(
        out,
        "  first start on an empty disk: parted {} | fdisk {} | sgdisk {}",
        f.parted, f.fdisk, f.sgdisk
    );
    let verdict = if r.aligned {
        st.good(&r.verdict)
    } else {
        st.bad(&r.verdict)
    };
    let _ = writeln!(out, "  verdict: {verdict}");
    for f in &r.findings {
        out.push_str(&st.finding("  ", "", f));
    }
    for p in &r.partitions {
        for f in &p.findings {
            out.push_str(&st.finding("  ", &format!("partition {} ", p.number), f));
        }
    }
    if r.stack.iter().any(|l| !l.children.is_empty()) {
        let _ = writeln!(out, "  stack:");
        super::stack::tree(out, &r.stack, st, "  ");
    }
}
