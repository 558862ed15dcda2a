//! The figures of a check run: the disk maps, the boundary zooms, the
//! stack drawn as layers, the tools' verdicts and the findings.
//!
//! Ids, from the run's `id` and each target's index `n`:
//! `{id}-map-{n}` (the disk map), `{id}-zoom-{n}-p{number}-start|end`
//! (the boundary zooms), `{id}-stack-{n}` (its layers), `{id}-assembled`
//! (the md arrays and volume groups of the run), `{id}-tools-{n}`; each
//! figure's numbers are in the table `{figure id}-table`.

mod axis;
mod grid;
mod layout;
pub(super) mod look;
mod map;
mod stack;
mod tables;
mod verdicts;
mod zoom;

use super::page;
use crate::saved::check::{Finding, Limits, Target};
use crate::saved::CheckDoc;
use crate::units::human;

/// The section of one check run; `id` prefixes every id in it.
pub fn section(id: &str, name: &str, doc: &CheckDoc) -> String {
    let mut s = page::heading(2, id, &format!("check: {name}"));
    s.push_str(&verdicts::summary(id, doc));
    for (n, t) in doc.targets.iter().enumerate() {
        s.push_str(&target(id, n, t));
    }
    if !doc.assembled.is_empty() {
        s.push_str(&page::heading(
            3,
            &format!("{id}-assembled-heading"),
            "Assembled across the targets: md arrays and volume groups",
        ));
        s.push_str(&stack::figure(
            &format!("{id}-assembled"),
            "Layers assembled across the targets",
            &doc.assembled,
        ));
    }
    s.push_str(&verdicts::findings(id, doc));
    s
}

/// One target: its verdict and limits, map, zooms, stack and the tools.
fn target(id: &str, n: usize, t: &Target) -> String {
    let mut s = page::heading(
        3,
        &format!("{id}-target-{n}"),
        &format!("{}: {}", t.path, t.verdict),
    );
    s.push_str(&page::note(&format!(
        "{} {}, {} bytes ({}); partition table {}; limits ({}): {}.",
        t.kind,
        t.path,
        t.size_bytes,
        human(t.size_bytes),
        if t.partition_table.kind.is_empty() {
            "unknown"
        } else {
            &t.partition_table.kind
        },
        if t.topology_source.is_empty() {
            "kernel"
        } else {
            &t.topology_source
        },
        limits(&t.topology)
    )));
    if t.partitions.is_empty() {
        s.push_str(&page::para(&format!(
            "{} has no partitions to draw.",
            t.path
        )));
    } else {
        s.push_str(&map::figure(&format!("{id}-map-{n}"), t));
        s.push_str(&page::heading(
            4,
            &format!("{id}-zooms-{n}"),
            "Boundaries against the grids",
        ));
        s.push_str(&zoom::section(&format!("{id}-zoom-{n}"), t));
    }
    s.push_str(&page::heading(4, &format!("{id}-layers-{n}"), "The stack"));
    if stack::has_layers(&t.stack) {
        s.push_str(&stack::figure(
            &format!("{id}-stack-{n}"),
            &format!("Stack of {}", t.path),
            &t.stack,
        ));
    } else {
        s.push_str(&page::para(&format!(
            "Nothing was found above the {} of {}.",
            if t.partitions.is_empty() {
                "device"
            } else {
                "partitions"
            },
            t.path
        )));
    }
    if !t.partitions.is_empty() {
        s.push_str(&page::heading(
            4,
            &format!("{id}-verdicts-{n}"),
            "The tools' verdicts",
        ));
        s.push_str(&verdicts::tools(&format!("{id}-tools-{n}"), t));
    }
    s
}

/// A disk's limits in one phrase.
fn limits(t: &Limits) -> String {
    format!(
        "logical {} B, physical {} B, minimum I/O {} B, optimal I/O {} B, alignment offset {} B",
        t.logical_block_size,
        t.physical_block_size,
        t.minimum_io_size,
        t.optimal_io_size,
        t.alignment_offset
    )
}

/// The codes of some findings, comma-separated.
fn codes(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| f.code.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
