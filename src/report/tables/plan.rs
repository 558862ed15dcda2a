//! `plan`'s tables: each partition now and after, and a new disk's layout.

use crate::report::columns::Column;
use crate::units::human;

type PP = Column<crate::plan::PartPlan>;

/// The last sector of an extent.
fn last_sector(e: &crate::plan::Extent) -> String {
    e.start_sector
        .saturating_add(e.sectors.max(1) - 1)
        .to_string()
}

/// `plan`'s table of each partition now and after: sectors on the
/// terminal, and on the HTML page the bytes too (the JSON has every
/// number).
pub fn plan_partitions() -> Vec<PP> {
    vec![
        PP::human_only("number", "#", |p| p.number.to_string())
            .num()
            .long("partition"),
        PP::human_only("content", "content", |p| p.content.clone()).drop(1),
        PP::human_only("start", "start", |p| p.before.start_sector.to_string())
            .num()
            .long("start now (sector)"),
        PP::human_only("end", "end", |p| last_sector(&p.before))
            .drop(3)
            .num()
            .long("end now (sector)"),
        PP::html_only("start_bytes", "start now", |p| {
            p.before.start_bytes.to_string()
        })
        .num(),
        PP::html_only("size_bytes", "size now", |p| {
            p.before.size_bytes.to_string()
        })
        .shown_as(|p, _| human(p.before.size_bytes))
        .size(),
        PP::human_only("new_start", "new start", |p| {
            p.after.start_sector.to_string()
        })
        .num()
        .long("start after (sector)"),
        PP::human_only("new_end", "new end", |p| last_sector(&p.after))
            .drop(2)
            .num()
            .long("end after (sector)"),
        PP::html_only("new_start_bytes", "start after", |p| {
            p.after.start_bytes.to_string()
        })
        .num(),
        PP::html_only("new_size_bytes", "size after", |p| {
            p.after.size_bytes.to_string()
        })
        .shown_as(|p, _| human(p.after.size_bytes))
        .size(),
        PP::human_only("change", "change", crate::report::plan::change),
    ]
}

/// A partition of a new disk's layout, numbered from 1.
pub struct NewPartition<'a> {
    pub number: usize,
    pub extent: &'a crate::plan::Extent,
}

type NP<'a> = Column<NewPartition<'a>>;

/// `plan --new`'s table of the layout it proposes, in sectors.
pub fn new_partitions<'a>() -> Vec<NP<'a>> {
    vec![
        NP::human_only("number", "#", |p| p.number.to_string()).num(),
        NP::human_only("start", "start", |p| p.extent.start_sector.to_string()).num(),
        NP::human_only("end", "end", |p| last_sector(p.extent)).num(),
        NP::human_only("size_bytes", "size", |p| p.extent.size_bytes.to_string())
            .shown_as(|p, _| human(p.extent.size_bytes))
            .size(),
    ]
}
