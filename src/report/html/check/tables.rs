//! The tables under the disk map: the partitions as drawn, with every
//! number exactly, and the free space between them.

use super::super::look;
use super::super::page::{self, Td};
use super::layout::status;
use super::layout::{self, end_mark, start_mark};
use crate::check::document::{Finding, Target};
use crate::units::human;

/// The partitions as drawn, with every number exactly.
pub fn partitions(fig: &str, t: &Target) -> String {
    let rows: Vec<Vec<Td>> = t
        .partitions
        .iter()
        .map(|p| {
            vec![
                Td::num(p.number),
                Td::text(p.kind.as_str()),
                Td::text(&p.type_id),
                Td::text(p.name.as_deref().unwrap_or("")),
                Td::num(p.start_bytes),
                Td::num(p.end_bytes),
                Td::num(p.size_bytes),
                Td::num(human(p.size_bytes)),
                Td::num(human(p.start_alignment)),
                Td::Class(look::class(status(p)), look::words(status(p))),
                mark_cell(start_mark(p)),
                mark_cell(end_mark(p)),
                Td::text(p.partuuid.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    page::table(
        &format!("{fig}-table"),
        &format!(
            "Partitions of {} as drawn in the map (bytes; last byte inclusive)",
            t.path
        ),
        &[
            "#",
            "kind",
            "type",
            "name",
            "start",
            "last byte",
            "size (bytes)",
            "size",
            "start alignment",
            "status",
            "start mark",
            "end mark",
            "PARTUUID",
        ],
        &rows,
    )
}

fn mark_cell(f: Option<&Finding>) -> Td {
    match f {
        Some(f) => Td::Class("status-misaligned".into(), format!("✗ {}", f.code)),
        None => Td::text("✓ on its grain"),
    }
}

/// The free space between the partitions, folded away.
pub fn free(fig: &str, t: &Target) -> String {
    let gaps = layout::gaps(t.size_bytes, &t.partitions);
    let rows: Vec<Vec<Td>> = gaps
        .iter()
        .map(|(s, e)| {
            vec![
                Td::num(s),
                Td::num(e - 1),
                Td::num(e - s),
                Td::num(human(e - s)),
            ]
        })
        .collect();
    page::folded(
        &format!("Free space of {}: {} ranges", t.path, gaps.len()),
        &page::table(
            &format!("{fig}-free"),
            &format!("Free space of {} (bytes; last byte inclusive)", t.path),
            &["start", "last byte", "size (bytes)", "size"],
            &rows,
        ),
    )
}
