//! The human report of `check`.

use crate::check::report::TargetReport;
use crate::check::CheckRun;
use crate::layout::TableKind;
use crate::report::columns::{partitions, table_rows, PartitionRow};
use crate::report::style::{table, Style};
use crate::units::human;
use std::fmt::Write;

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
    out.push_str(&crate::report::style::errors(
        &run.errors,
        st,
        "could not check:",
    ));
    out
}

fn target(out: &mut String, r: &TargetReport, st: &Style) {
    let t = &r.topology;
    let table_desc = match r.partition_table.kind {
        TableKind::Gpt => format!("GPT, {}-byte sectors", r.partition_table.sector_size),
        TableKind::Mbr => format!("MBR, {}-byte sectors", r.partition_table.sector_size),
        TableKind::None => "no partition table".to_string(),
        TableKind::Kernel => "partitions as the kernel registered them".to_string(),
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
        let rows: Vec<PartitionRow> = r
            .partitions
            .iter()
            .map(|p| PartitionRow {
                target: r,
                partition: p,
            })
            .collect();
        let rows = table_rows(&partitions(), &rows.iter().collect::<Vec<_>>(), st);
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
