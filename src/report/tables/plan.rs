//! `plan`'s tables: each partition now and after, and a new disk's layout.

use crate::plan::{Action, DiskPlan, Extent, PartPlan};
use crate::report::columns::Column;
use crate::units::human;

/// A partition of a disk planned, with its disk (to name it in a table
/// of several).
pub struct PlanRow<'a> {
    pub disk: &'a DiskPlan,
    pub part: &'a PartPlan,
}

/// The rows of disk `d`'s table.
pub fn plan_rows(d: &DiskPlan) -> Vec<PlanRow<'_>> {
    d.partitions
        .iter()
        .map(|part| PlanRow { disk: d, part })
        .collect()
}

type PP<'a> = Column<PlanRow<'a>>;

/// The last sector of an extent.
fn last_sector(e: &Extent) -> String {
    e.start_sector
        .saturating_add(e.sectors.max(1) - 1)
        .to_string()
}

/// A partition's change in words: keep, move +1 MiB, size -4 KiB.
fn change(p: &PartPlan) -> String {
    let moved = p.after.start_bytes as i128 - p.before.start_bytes as i128;
    let sized = p.after.size_bytes as i128 - p.before.size_bytes as i128;
    let signed = |b: i128| {
        let s = human(b.unsigned_abs() as u64);
        if b < 0 {
            format!("-{s}")
        } else {
            format!("+{s}")
        }
    };
    match p.action {
        Action::Keep => "keep".into(),
        Action::Move => format!("move {}", signed(moved)),
        Action::Resize => format!("size {}", signed(sized)),
        Action::MoveResize => format!("move {}, size {}", signed(moved), signed(sized)),
    }
}

/// `plan`'s table of each partition now and after: sectors on the
/// terminal, and on the HTML page the bytes too (the JSON has every
/// number); `-o` picks its columns, in one table of every disk planned.
pub fn plan_partitions<'a>() -> Vec<PP<'a>> {
    vec![
        PP::human_only("disk", "disk", |r| r.disk.path.clone())
            .on_request()
            .help("the disk or image planned; the table's first column when several are"),
        PP::human_only("number", "#", |r| r.part.number.to_string())
            .num()
            .long("partition")
            .help("the partition's number"),
        PP::human_only("content", "content", |r| r.part.content.clone())
            .drop(1)
            .help("what lives in it (ext4 filesystem, LVM PV of vg0, ...)"),
        PP::human_only("start", "start", |r| r.part.before.start_sector.to_string())
            .num()
            .long("start now (sector)")
            .help("its first sector now"),
        PP::human_only("end", "end", |r| last_sector(&r.part.before))
            .drop(3)
            .num()
            .long("end now (sector)")
            .help("its last sector now"),
        PP::html_only("start_bytes", "start now", |r| {
            r.part.before.start_bytes.to_string()
        })
        .num()
        .help("its first byte now"),
        PP::html_only("size_bytes", "size now", |r| {
            r.part.before.size_bytes.to_string()
        })
        .shown_as(|r, _| human(r.part.before.size_bytes))
        .size()
        .help("its size now (bytes with -b)"),
        PP::human_only("new_start", "new start", |r| {
            r.part.after.start_sector.to_string()
        })
        .num()
        .long("start after (sector)")
        .help("its first sector after the plan"),
        PP::human_only("new_end", "new end", |r| last_sector(&r.part.after))
            .drop(2)
            .num()
            .long("end after (sector)")
            .help("its last sector after the plan"),
        PP::html_only("new_start_bytes", "start after", |r| {
            r.part.after.start_bytes.to_string()
        })
        .num()
        .help("its first byte after the plan"),
        PP::html_only("new_size_bytes", "size after", |r| {
            r.part.after.size_bytes.to_string()
        })
        .shown_as(|r, _| human(r.part.after.size_bytes))
        .size()
        .help("its size after the plan (bytes with -b)"),
        PP::human_only("change", "change", |r| change(r.part))
            .help("keep, move +1 MiB, size -4 KiB, or both"),
    ]
}

/// A partition of a new disk's layout, numbered from 1.
pub struct NewPartition<'a> {
    pub number: usize,
    pub extent: &'a Extent,
}

type NP<'a> = Column<NewPartition<'a>>;

/// `plan --new`'s table of the layout it proposes, in sectors.
pub fn new_partitions<'a>() -> Vec<NP<'a>> {
    vec![
        NP::human_only("number", "#", |p| p.number.to_string())
            .num()
            .help("the partition's number"),
        NP::human_only("start", "start", |p| p.extent.start_sector.to_string())
            .num()
            .help("its first sector"),
        NP::human_only("end", "end", |p| last_sector(p.extent))
            .num()
            .help("its last sector"),
        NP::human_only("size_bytes", "size", |p| p.extent.size_bytes.to_string())
            .shown_as(|p, _| human(p.extent.size_bytes))
            .size()
            .help("its size (bytes with -b)"),
    ]
}
