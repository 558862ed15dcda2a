//! The tables under the disk map: the partitions as drawn, with every
//! number exactly, and the free space between them.

use super::super::page;
use super::layout::{self, end_mark, start_mark};
use crate::check::CheckedTarget;
use crate::findings::Finding;
use crate::report::columns::{self, Column};
use crate::report::tables::{self, PartitionRow};
use crate::units::human;

/// The partitions as drawn, with every number exactly: check's columns
/// (the terminal's and the CSV's the page has room for), and the two the
/// map draws, which finding marks each boundary.
pub fn partitions(fig: &str, t: &CheckedTarget) -> String {
    let all = tables::partitions();
    let mut cols = columns::select(&all, None, |c| c.html);
    let marks: [Column<PartitionRow>; 2] = [
        Column::html_only("start_mark", "start mark", |r: &PartitionRow| {
            mark_text(r.partition.and_then(start_mark))
        })
        .class(|r: &PartitionRow| mark_class(r.partition.and_then(start_mark))),
        Column::html_only("end_mark", "end mark", |r: &PartitionRow| {
            mark_text(r.partition.and_then(end_mark))
        })
        .class(|r: &PartitionRow| mark_class(r.partition.and_then(end_mark))),
    ];
    cols.extend(marks.iter());
    let rows: Vec<PartitionRow> = PartitionRow::all(t);
    columns::html(
        &format!("{fig}-table"),
        &format!(
            "Partitions of {} as drawn in the map (bytes; last byte inclusive)",
            t.path
        ),
        &cols,
        &rows.iter().collect::<Vec<_>>(),
    )
}

fn mark_text(f: Option<&Finding>) -> String {
    match f {
        Some(f) => format!("✗ {}", f.code),
        None => "✓ on its grain".into(),
    }
}

fn mark_class(f: Option<&Finding>) -> Option<String> {
    f.map(|_| "status-misaligned".to_string())
}

/// The free space between the partitions, folded away.
pub fn free(fig: &str, t: &CheckedTarget) -> String {
    let gaps = layout::gaps(t.size_bytes, &t.partitions);
    let cols = gap_columns();
    page::folded(
        &format!("Free space of {}: {} ranges", t.path, gaps.len()),
        &columns::html(
            &format!("{fig}-free"),
            &format!("Free space of {} (bytes; last byte inclusive)", t.path),
            &cols.iter().collect::<Vec<_>>(),
            &gaps.iter().collect::<Vec<_>>(),
        ),
    )
}

/// A free range: its first byte and the byte after its last.
type Gap = (u64, u64);

/// The free space table's columns: where each range starts and ends, and
/// its size in bytes and as people read it.
fn gap_columns() -> Vec<Column<Gap>> {
    vec![
        Column::html_only("start", "start", |g: &Gap| g.0.to_string()).num(),
        Column::html_only("last_byte", "last byte", |g: &Gap| (g.1 - 1).to_string()).num(),
        Column::html_only("size_bytes", "size (bytes)", |g: &Gap| {
            (g.1 - g.0).to_string()
        })
        .num(),
        Column::html_only("size", "size", |g: &Gap| human(g.1 - g.0)).num(),
    ]
}
