//! `plan`'s table of each partition now and after.

use super::*;

type PP = Column<crate::plan::PartPlan>;

/// The last sector of an extent.
fn last_sector(e: &crate::plan::Extent) -> String {
    e.start_sector
        .saturating_add(e.sectors.max(1) - 1)
        .to_string()
}

/// `plan`'s table of each partition now and after (for people only: the
/// JSON has every number).
pub fn plan_partitions() -> Vec<PP> {
    vec![
        PP::human_only("number", "#", |p| p.number.to_string()),
        PP::human_only("content", "content", |p| p.content.clone()).drop(1),
        PP::human_only("start", "start", |p| p.before.start_sector.to_string()),
        PP::human_only("end", "end", |p| last_sector(&p.before)).drop(3),
        PP::human_only("new_start", "new start", |p| {
            p.after.start_sector.to_string()
        }),
        PP::human_only("new_end", "new end", |p| last_sector(&p.after)).drop(2),
        PP::human_only("change", "change", crate::report::plan::change),
    ]
}
