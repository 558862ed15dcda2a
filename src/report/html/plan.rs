//! The page of a plan run (`plan --html FILE`, `plan --format html`): for
//! each disk its map now and after the plan, drawn by the check page's
//! own map, then the partitions' moves, the steps in the order they run,
//! what is done by hand and what check will still report.
//!
//! The map now is the check of the disk as it is (the plan's own check
//! run, the types a saved check document reads into; the page's title
//! comes from that run's document header). The map after is the same disk
//! with each partition at its planned place, judged by the findings the
//! plan says check will still report (`leaves`).
//!
//! Ids, from the run's `id` and each disk's index `n`: `{id}-now-{n}` and
//! `{id}-after-{n}` (the maps, their numbers in the check map's tables),
//! `{id}-moves-{n}`, `{id}-steps-{n}`, `{id}-manual-{n}`,
//! `{id}-leaves-{n}` (tables).

use super::check::disk_map;
use super::describe;
use super::page;
use crate::check::{CheckedPartition as Partition, CheckedTarget as Target};
use crate::findings::Status;
use crate::plan::{DiskPlan, Manual, PartPlan, Step};
use crate::report::columns::{self, Column};
use crate::report::tables;
use crate::report::{plan as text, Planned, Stamp};
use crate::saved::Saved;
use crate::units::human;

/// The whole page of a plan run.
pub fn page(p: Planned, stamp: &Stamp) -> String {
    let json = crate::report::json::check_json(p.now, stamp);
    let now: &[Target] = &p.now.targets;
    // The disks, the host and the date, as every page names its run.
    let what = Saved::parse(&json, "plan")
        .ok()
        .and_then(|doc| describe(&doc))
        .unwrap_or_else(|| "this plan run".to_string());
    let id = "run1";
    let mut s = page::heading(2, id, &format!("plan: {what}"));
    for (n, d) in p.plan.targets.iter().enumerate() {
        let before = now.iter().find(|t| t.path == d.path);
        s.push_str(&disk(id, n, d, before));
    }
    s.push_str(&super::findings::errors_html(
        &format!("{id}-errors"),
        "Targets that could not be read",
        "target",
        &p.plan.errors,
    ));
    page::document(&format!("diskalign plan of {what}"), &[what], &[s])
}

/// One disk: what the plan is, the two maps, the moves, the steps.
fn disk(id: &str, n: usize, d: &DiskPlan, now: Option<&Target>) -> String {
    let verdict = if !d.refused.is_empty() {
        "cannot plan"
    } else if d.is_noop() && !d.has_work() {
        "nothing to move or resize"
    } else if d.is_noop() {
        "by hand first"
    } else {
        "a plan with changes"
    };
    let mut s = page::heading(
        3,
        &format!("{id}-plan-{n}"),
        &format!("{}: {verdict}", d.path),
    );
    s.push_str(&page::note(&format!(
        "{} table, {}-byte sectors; starts on {}; ends on {}.",
        d.table,
        d.sector_size,
        d.start_grain_why,
        human(d.end_grain_bytes)
    )));
    for r in &d.refused {
        s.push_str(&page::para(&format!(
            "Cannot plan: {r}. No script: nothing here can be done without losing data."
        )));
    }
    if let Some(t) = now {
        s.push_str(&page::heading(4, &format!("{id}-now-{n}-heading"), "Now"));
        s.push_str(&disk_map(&format!("{id}-now-{n}"), t));
        if d.refused.is_empty() {
            s.push_str(&page::heading(
                4,
                &format!("{id}-after-{n}-heading"),
                "After the plan",
            ));
            s.push_str(&disk_map(&format!("{id}-after-{n}"), &after(t, d)));
        }
    }
    s.push_str(&moves(&format!("{id}-moves-{n}"), d));
    s.push_str(&steps(&format!("{id}-steps-{n}"), d));
    s.push_str(&manual(&format!("{id}-manual-{n}"), d));
    s.push_str(&leaves(&format!("{id}-leaves-{n}"), d));
    s
}

/// The disk after the plan: each partition at its planned place, judged
/// by what the plan says check will still report on it.
fn after(now: &Target, d: &DiskPlan) -> Target {
    let mut t = now.clone();
    t.findings = d
        .leaves
        .iter()
        .filter(|f| f.subject.partition.is_none())
        .cloned()
        .collect();
    t.stack.clear();
    for p in &mut t.partitions {
        if let Some(planned) = d.partitions.iter().find(|q| q.number == p.number) {
            place(p, planned);
        }
        let own: Vec<&crate::findings::Finding> = d
            .leaves
            .iter()
            .filter(|f| f.subject.partition == Some(p.number) && f.subject.layer.is_none())
            .collect();
        p.status = Status::of(own.iter().copied());
        p.aligned = p.status == Status::Aligned;
        p.findings = own.into_iter().cloned().collect();
    }
    t
}

/// A partition moved to where the plan puts it.
fn place(p: &mut Partition, planned: &PartPlan) {
    p.start_bytes = planned.after.start_bytes;
    p.start_alignment = crate::units::alignment_of(p.start_bytes);
    p.size_bytes = planned.after.size_bytes;
    p.end_bytes = planned
        .after
        .start_bytes
        .saturating_add(planned.after.size_bytes.max(1) - 1);
}

fn moves(id: &str, d: &DiskPlan) -> String {
    if d.partitions.is_empty() {
        return String::new();
    }
    let all = tables::plan_partitions();
    let cols = columns::select(&all, None, |c| c.html);
    let rows = tables::plan_rows(d);
    columns::html(
        id,
        "Each partition now and after the plan (sectors, and bytes)",
        &cols,
        &rows.iter().collect::<Vec<_>>(),
    )
}

/// What to take offline first, then the steps numbered as the script
/// numbers them.
fn steps(id: &str, d: &DiskPlan) -> String {
    if d.steps.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    for o in &d.offline {
        s.push_str(&page::para(&format!("First: {o}")));
    }
    let rows: Vec<Numbered> = d.script_steps().into_iter().enumerate().collect();
    let cols = step_columns();
    s.push_str(&columns::html(
        id,
        "The steps, numbered as the script numbers them, in the order they run",
        &cols.iter().collect::<Vec<_>>(),
        &rows.iter().collect::<Vec<_>>(),
    ));
    if d.bytes_to_move > 0 {
        s.push_str(&page::note(&format!(
            "Moves {} of data ({} bytes), each byte through a staging file.",
            human(d.bytes_to_move),
            d.bytes_to_move
        )));
    }
    s
}

fn manual(id: &str, d: &DiskPlan) -> String {
    if d.manual.is_empty() {
        return String::new();
    }
    let cols = manual_columns();
    columns::html(
        id,
        "By hand",
        &cols.iter().collect::<Vec<_>>(),
        &d.manual.iter().collect::<Vec<_>>(),
    )
}

/// A step of the script (a copy and the entry it rewrites are one),
/// counted from 0.
type Numbered<'a> = (usize, Vec<&'a Step>);

/// The step's number, as the script numbers it from 1, and what it does.
fn step_columns<'a>() -> Vec<Column<Numbered<'a>>> {
    vec![
        Column::html_only("number", "#", |r: &Numbered| (r.0 + 1).to_string()).num(),
        Column::html_only("step", "step", |r: &Numbered| text::steps_text(&r.1)),
    ]
}

/// The partition a thing to do by hand is about (none: the disk), why,
/// and the commands, a line each.
fn manual_columns() -> Vec<Column<Manual>> {
    vec![
        Column::html_only("partition", "partition", |m: &Manual| {
            m.partition.map(|p| p.to_string()).unwrap_or_default()
        }),
        Column::html_only("why", "why", |m: &Manual| m.why.clone()),
        Column::html_only("commands", "commands", |m: &Manual| m.commands.join("\n")),
    ]
}

fn leaves(id: &str, d: &DiskPlan) -> String {
    if d.leaves.is_empty() {
        return page::para("Afterwards check finds nothing to warn about.");
    }
    let cols = super::findings::findings();
    columns::html(
        id,
        "Afterwards check will still report",
        &cols.iter().collect::<Vec<_>>(),
        &d.leaves.iter().collect::<Vec<_>>(),
    )
}
