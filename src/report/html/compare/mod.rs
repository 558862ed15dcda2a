//! The figures of a comparison: for probe runs, B/A per cell with its
//! interval (a forest plot per pattern) after the environment
//! differences; for check runs, the findings by severity in each run and
//! every finding that appeared, disappeared or changed.

mod answer;
mod check;
mod forest;

use super::page;
use crate::compare::{Comparison, ProbeComparison, RunInfo};
use crate::report::columns::{self, Column};
use crate::report::tables;
use crate::units::utc;

/// The section of one comparison; `id` prefixes every id in it.
pub fn section(id: &str, name: &str, c: &Comparison) -> String {
    let mut s = page::heading(2, id, &format!("compare: {name}"));
    match c {
        Comparison::Probe(p) => probe(&mut s, id, p),
        Comparison::Check(k) => check::section(&mut s, id, k),
        Comparison::Watch(w) => watch(&mut s, id, w),
    }
    s.push_str(&outcome(c));
    s
}

/// What got better and worse, and the exit status (`outcome`).
fn outcome(c: &Comparison) -> String {
    let o = c.outcome();
    let unit = c.counted();
    let worse = if o.worse() {
        "B is worse than A"
    } else {
        "B is not worse than A"
    };
    page::para(&format!(
        "Outcome ({unit}): {} improved, {} regressed, {} unchanged; {worse}; exit status {}.",
        o.improved, o.regressed, o.unchanged, o.exit_status
    ))
}

/// Two watch runs: each device and direction's shares in A and B, then
/// the findings that changed.
fn watch(s: &mut String, id: &str, w: &crate::compare::WatchComparison) {
    s.push_str(&runs(&w.a, &w.b));
    s.push_str(&page::para(&w.summary));
    let rows: Vec<_> = w.devices.iter().collect();
    let devices = tables::watch_devices_compared(&rows);
    s.push_str(&columns::html(
        &format!("{id}-devices"),
        "Each device and direction in A and B (the workloads may differ: shares are shown, not tested)",
        &devices.iter().collect::<Vec<_>>(),
        &rows,
    ));
    if !w.submitters.is_empty() {
        let submitters = tables::watch_submitters_compared();
        let rows: Vec<_> = w.submitters.iter().collect();
        s.push_str(&columns::html(
            &format!("{id}-submitters"),
            "Each device's submitters in A and B",
            &submitters.iter().collect::<Vec<_>>(),
            &rows,
        ));
    }
    s.push_str(&check::changes(id, &w.changes));
}

/// "A (reference): run.json (probe on db-07, started 2026-11-22 21:04
/// UTC)": the host and the start when the document says.
pub(super) fn runs(a: &RunInfo, b: &RunInfo) -> String {
    let one = |r: &RunInfo| {
        let host = match r.host.as_str() {
            "" => String::new(),
            h => format!(" on {h}"),
        };
        match r.started_unix {
            0 => format!("{} ({}{host})", r.file, r.source),
            t => format!("{} ({}{host}, started {})", r.file, r.source, utc(t)),
        }
    };
    page::para(&format!("A (reference): {}. B: {}.", one(a), one(b)))
}

fn probe(s: &mut String, id: &str, p: &ProbeComparison) {
    s.push_str(&answer::section(id, p));
    s.push_str(&runs(&p.a, &p.b));
    s.push_str(&page::para(&p.summary));
    s.push_str(&environment(id, p));
    for n in &p.notes {
        s.push_str(&page::note(n));
    }
    s.push_str(&forest::figures(id, p));
    s.push_str(&only_in(id, p));
}

/// The environment, differing fields first: they often explain it all.
/// Drawn by compare's environment columns (the terminal's list).
fn environment(id: &str, p: &ProbeComparison) -> String {
    let mut fields: Vec<_> = p.environment.iter().collect();
    fields.sort_by_key(|f| !f.differs);
    let rows = tables::env_rows(p, fields);
    let all = tables::environment();
    columns::html(
        &format!("{id}-environment"),
        "The environments, differences first",
        &columns::select(&all, None, |c| c.html),
        &rows.iter().collect::<Vec<_>>(),
    )
}

/// Something only one run has: the run ("A" or "B") and what.
struct OnlyRow {
    side: &'static str,
    what: String,
}

fn only_columns() -> Vec<Column<OnlyRow>> {
    vec![
        Column::html_only("only_in", "only in", |r: &OnlyRow| r.side.to_string()),
        Column::html_only("what", "what", |r: &OnlyRow| r.what.clone()),
    ]
}

/// Cells, patterns and targets only one run has.
fn only_in(id: &str, p: &ProbeComparison) -> String {
    let mut rows = Vec::new();
    for (side, only) in [("A", &p.only_a), ("B", &p.only_b)] {
        let row = |what: String| OnlyRow { side, what };
        for t in &only.targets {
            rows.push(row(format!("target {}", t.path)));
        }
        for pat in &only.patterns {
            rows.push(row(format!(
                "pattern {} ({})",
                pat.pattern,
                crate::report::target_label(pat.target)
            )));
        }
        for c in &only.cells {
            rows.push(row(format!("cell {}", c.label())));
        }
    }
    if rows.is_empty() {
        return page::note("Both runs measured the same cells.");
    }
    let cols = only_columns();
    columns::html(
        &format!("{id}-only"),
        "Measured in one run only",
        &cols.iter().collect::<Vec<_>>(),
        &rows.iter().collect::<Vec<_>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runs_say_when_they_started_when_known() {
        let a = RunInfo {
            file: "a.json".into(),
            source: "probe".into(),
            started_unix: 1_795_381_475,
            host: "db-07".into(),
        };
        let b = RunInfo {
            file: "b.json".into(),
            source: "fio".into(),
            started_unix: 0,
            host: String::new(),
        };
        assert_eq!(
            runs(&a, &b),
            "<p>A (reference): a.json (probe on db-07, started 2026-11-22 21:04 UTC). B: b.json (fio).</p>\n"
        );
    }
}
