//! The human report of `compare`. Probe runs: which runs, the environment
//! differences first (they often explain everything), the notes, a table
//! of the cells with B/A, its interval and the decision, what only one run
//! has, then the summary. Check runs: the targets' status in each run, the
//! findings that disappeared, appeared or changed, then the summary. The
//! last line is the outcome: what improved and regressed, and the exit
//! status. `-q` prints the answer, the summary and the outcome; `-v` adds
//! the environment that did not differ.

use crate::compare::OnlyIn;
use crate::compare::{Change, FindingChange};
use crate::compare::{CheckComparison, Comparison, ProbeComparison, RunInfo};
use crate::report::columns;
use crate::report::style::{Style, View};
use crate::report::tables;
use crate::units::utc;
use std::fmt::Write;

pub fn render(c: &Comparison, st: &Style) -> String {
    if st.view == View::Table {
        return table_only(c, st);
    }
    let report = match c {
        Comparison::Probe(p) if st.quiet => answer(p, st) + &format!("{}\n", st.bold(&p.summary)),
        Comparison::Check(k) if st.quiet => format!("{}\n", st.bold(&k.summary)),
        Comparison::Watch(w) if st.quiet => format!("{}\n", st.bold(&w.summary)),
        Comparison::Probe(p) => probe(p, st),
        Comparison::Check(k) => check(k, st),
        Comparison::Watch(w) => watch(w, st),
    };
    report + &outcome(c, st)
}

/// The last line: what got better and worse, and the exit status that
/// says it (`outcome` in the JSON).
fn outcome(c: &Comparison, st: &Style) -> String {
    let o = c.outcome();
    let unit = c.counted();
    let worse = if o.worse() {
        st.bad("B is worse than A")
    } else {
        "B is not worse than A".to_string()
    };
    let text = format!(
        "{unit}: {} improved, {} regressed, {} unchanged; {worse}; exit status {}",
        o.improved, o.regressed, o.unchanged, o.exit_status
    );
    st.line("outcome: ", &text, "  ")
}

/// Two watch runs: each device and direction's shares in A and B (not
/// tested: the workloads may differ), the findings that changed, the
/// summary.
fn watch(c: &crate::compare::WatchComparison, st: &Style) -> String {
    let mut out = run_line("A", &c.a, st) + &run_line("B", &c.b, st);
    out.push('\n');
    let rows: Vec<_> = c.devices.iter().collect();
    let cols = tables::watch_devices_compared(&rows);
    let picked: Vec<_> = cols.iter().collect();
    out.push_str(&columns::render(&picked, &rows, st, ""));
    out.push_str(&watch_submitters(c, st));
    out.push_str(&changes_and_summary(&c.changes, &c.summary, st));
    out
}

/// Each device's submitters in A and B.
fn watch_submitters(c: &crate::compare::WatchComparison, st: &Style) -> String {
    if c.submitters.is_empty() {
        return String::new();
    }
    let cols = tables::watch_submitters_compared();
    let picked: Vec<_> = cols.iter().collect();
    let rows: Vec<_> = c.submitters.iter().collect();
    format!("\nsubmitters:\n{}", columns::render(&picked, &rows, st, ""))
}

fn run_line(side: &str, r: &RunInfo, st: &Style) -> String {
    let host = match r.host.as_str() {
        "" => String::new(),
        h => format!(" on {h}"),
    };
    let when = match r.started_unix {
        0 => String::new(),
        t => format!(", {}", utc(t)),
    };
    format!("{side}: {} ({}{host}{when})\n", st.bold(&r.file), r.source)
}

/// The answer first: B/A over every cell, as a sentence (nothing for a
/// saved comparison from a version without it).
fn answer(c: &ProbeComparison, st: &Style) -> String {
    match c.overall.sentence.as_str() {
        "" => String::new(),
        s => st.line("", &st.bold(s), ""),
    }
}

/// Each pattern's B/A, when there are several.
fn by_pattern(out: &mut String, c: &ProbeComparison, st: &Style) {
    if c.patterns.len() < 2 {
        return;
    }
    let _ = writeln!(
        out,
        "\n{}",
        st.bold("by pattern (geometric mean of B/A over the cells, 95 % interval):")
    );
    for p in &c.patterns {
        out.push_str(&st.line("  ", &p.sentence, "    "));
    }
}

fn probe(c: &ProbeComparison, st: &Style) -> String {
    let mut out = answer(c, st) + &run_line("A", &c.a, st) + &run_line("B", &c.b, st);
    by_pattern(&mut out, c, st);
    environment(&mut out, c, st);
    for n in &c.notes {
        out.push_str(&st.line("", &st.warn(n), "  "));
    }
    if !c.cells.is_empty() {
        let head = "B against A, cell by cell (* significant after Holm's correction; each interval at the level Holm judged its cell at):";
        out.push('\n');
        out.push_str(&st.line("", &st.bold(head), ""));
        out.push_str(&cells(c, st));
    }
    only(&mut out, "A", &c.only_a, c, st);
    only(&mut out, "B", &c.only_b, c, st);
    let _ = writeln!(out, "\n{}", st.bold(&c.summary));
    out
}

/// The fields that differ as a table; with `-v` the rest on one line.
fn environment(out: &mut String, c: &ProbeComparison, st: &Style) {
    let rows = tables::env_rows(c, &c.environment);
    let differing: Vec<&tables::EnvRow> = rows.iter().filter(|r| r.field.differs).collect();
    if !differing.is_empty() {
        let _ = writeln!(out, "\n{}", st.bold("environment differs:"));
        let all = tables::environment();
        let cols = columns::select(&all, None, |c| c.human);
        out.push_str(&columns::render(&cols, &differing, st, "  "));
    }
    if st.verbose {
        let same: Vec<String> = rows
            .iter()
            .filter(|r| !r.field.differs)
            .map(|r| {
                let f = r.field;
                let v = if f.a.is_some() { &f.a } else { &f.b };
                format!(
                    "{} {}",
                    tables::env_label(r),
                    v.clone().unwrap_or_else(|| "-".into())
                )
            })
            .collect();
        out.push_str(&st.line(
            "",
            &st.dim(&format!(
                "same or not recorded on both sides: {}",
                same.join(", ")
            )),
            "  ",
        ));
    }
}

/// The cell-by-cell table, from compare's column list (the CSV's), of
/// the columns `-o` picked, the target first when there are several.
fn cells(c: &ProbeComparison, st: &Style) -> String {
    let all = tables::ratios();
    let picked = columns::naming_rows(
        &all,
        columns::select(&all, st.columns.as_deref(), |c| c.human),
        "target",
        c.target_count(),
    );
    let rows = tables::ratio_rows(c, &c.cells);
    let rows: Vec<_> = rows.iter().collect();
    columns::render(&picked, &rows, st, "")
}

fn only(out: &mut String, side: &str, o: &OnlyIn, c: &ProbeComparison, st: &Style) {
    if o.is_empty() {
        return;
    }
    let mut what: Vec<String> = o
        .targets
        .iter()
        .map(|t| format!("target {}", t.path))
        .collect();
    let on = |t: usize| match c.target_count() {
        1 => String::new(),
        _ => format!(" on {}", c.target_path(t)),
    };
    what.extend(
        o.patterns
            .iter()
            .map(|p| format!("pattern {}{}", p.pattern, on(p.target))),
    );
    what.extend(
        o.cells
            .iter()
            .map(|k| format!("{}{}", k.label(), on(k.target))),
    );
    let head = format!("\n{} ", st.warn(&format!("only in {side}:")));
    out.push_str(&st.line(&head, &what.join(", "), "  "));
}

fn check(c: &CheckComparison, st: &Style) -> String {
    let mut out = run_line("A", &c.a, st) + &run_line("B", &c.b, st);
    for t in &c.targets {
        if let Some(why) = &t.different_disk {
            let head = format!("{} ", st.warn("warning:"));
            let text = format!(
                "{}: A and B may not be the same disk ({why}); compared all the same",
                t.target
            );
            out.push_str(&st.line(&head, &text, "  "));
        }
    }
    out.push('\n');
    let cols = tables::check_targets_compared();
    let rows: Vec<_> = c.targets.iter().collect();
    out.push_str(&columns::render(
        &cols.iter().collect::<Vec<_>>(),
        &rows,
        st,
        "",
    ));
    out.push_str(&changes_and_summary(&c.changes, &c.summary, st));
    out
}

/// `/dev/sdb, partition 1, PV x`: what the finding is about.
fn subject(f: &FindingChange) -> String {
    f.subject().phrase()
}

/// The findings that changed, a line each, then the summary in bold.
fn changes_and_summary(changes: &[FindingChange], summary: &str, st: &Style) -> String {
    let mut out = String::new();
    if !changes.is_empty() {
        out.push('\n');
    }
    for f in changes {
        out.push_str(&change_line(f, st));
    }
    let _ = writeln!(out, "\n{}", st.bold(summary));
    out
}

fn change_line(f: &FindingChange, st: &Style) -> String {
    let sev = |s: Option<crate::findings::Severity>| {
        let text = format!("{:<7}", s.map_or("", |s| s.as_str()));
        match s {
            Some(s) if s >= crate::findings::Severity::Warning => st.warn(&text),
            _ => st.dim(&text),
        }
    };
    let (mark, severity, message) = match f.change {
        Change::Disappeared => (
            st.good("- disappeared"),
            sev(f.severity_a),
            f.message_a.clone(),
        ),
        Change::Appeared => (
            st.bad("+ appeared   "),
            sev(f.severity_b),
            f.message_b.clone(),
        ),
        Change::Changed => (st.warn("~ changed    "), sev(f.severity_b), changed(f)),
    };
    let head = format!("{mark}  {severity}  {}: {}: ", subject(f), st.bold(&f.code));
    st.line(&head, &message.unwrap_or_default(), &" ".repeat(25))
}

/// What a changed finding said in each run.
fn changed(f: &FindingChange) -> Option<String> {
    let sev = |s: Option<crate::findings::Severity>| s.map_or("?", |s| s.as_str());
    let was = match f.severity_a == f.severity_b {
        true => String::new(),
        false => format!("was {}; ", sev(f.severity_a)),
    };
    Some(match f.message_a == f.message_b {
        true => format!("{was}{}", f.message_b.clone().unwrap_or_default()),
        false => format!(
            "{was}A: {}; B: {}",
            f.message_a.clone().unwrap_or_default(),
            f.message_b.clone().unwrap_or_default()
        ),
    })
}

/// `compare -o COLUMNS` (and `-n`, `-r`, `-P`): the CSV's table alone,
/// of the columns `-o` picked: two probe runs' cells, or the findings
/// two check or watch runs changed.
fn table_only(c: &Comparison, st: &Style) -> String {
    let changes = |rows: &[FindingChange]| {
        let all = tables::changes();
        let cols = columns::select(&all, st.columns.as_deref(), |c| c.human);
        let rows: Vec<&FindingChange> = rows.iter().collect();
        columns::render(&cols, &rows, st, "")
    };
    match c {
        Comparison::Probe(p) => cells(p, st),
        Comparison::Check(k) => changes(&k.changes),
        Comparison::Watch(w) => changes(&w.changes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::fixtures;

    #[test]
    fn probe_report_puts_the_environment_first() {
        let text = render(&fixtures::slower(), &Style::plain());
        let env = text.find("environment differs").expect("environment");
        let cells = text.find("cell by cell").expect("cells");
        assert!(env < cells, "{text}");
        assert!(text.contains("kernel  6.1.0  6.8.0"), "{text}");
        assert!(text.contains("-50%*"), "{text}");
        assert!(text.contains("slower"), "{text}");
        // The environment that did not differ, then the outcome last.
        let (report, last) = text.trim_end().rsplit_once('\n').unwrap();
        assert!(report.ends_with("kernel"), "{text}");
        assert!(last.starts_with("outcome: cells: "), "{text}");
        // The answer comes first, then each pattern's.
        assert!(
            text.starts_with("B is 1.6× slower than A over 3 cells, ["),
            "{text}"
        );
        assert!(
            text.contains("\n  B is 2.0× slower than A for randwrite in every cell, ["),
            "{text}"
        );
    }

    #[test]
    fn a_layer_in_a_partition_names_the_partition_once() {
        let c = FindingChange {
            target: Some("img".into()),
            partition: Some(1),
            layer: Some("partition 1 / ext4".into()),
            ..FindingChange::default()
        };
        assert_eq!(subject(&c), "img, partition 1, ext4");
    }

    #[test]
    fn check_report_lists_the_changes() {
        let text = render(&fixtures::fixed(), &Style::plain());
        for line in [
            "- disappeared  warning  disk.img, partition 1: start-not-4k: starts at 32256\n",
            "+ appeared     info     new.img: layout-not-portable: not portable\n",
            "new.img   -       aligned\n",
        ] {
            assert!(text.contains(line), "{line} not in\n{text}");
        }
        let quiet = Style {
            quiet: true,
            ..Style::plain()
        };
        // -q: the summary line and the outcome line.
        let q = render(&fixtures::fixed(), &quiet);
        assert_eq!(q.lines().count(), 2, "{q}");
        assert!(
            q.lines().nth(1).unwrap().starts_with("outcome: targets: "),
            "{q}"
        );
    }

    #[test]
    fn a_saved_comparison_with_the_largest_target_index_renders() {
        // A hostile document: target indexes of usize::MAX, counted from 1
        // in every output.
        let doc = serde_json::json!({
            "schema": "diskalign.compare", "kind": "probe",
            "cells": [{"target": usize::MAX, "pattern": "randread", "block_size": 4096, "offset": 0}],
            "environment": [{"field": "target", "target": usize::MAX, "a": "x", "b": "y", "differs": true}],
            "only_a": {"patterns": [{"target": usize::MAX, "pattern": "randread"}]}
        });
        let Ok(crate::saved::Saved::Compare(c)) =
            crate::saved::Saved::parse(&doc.to_string(), "c.json")
        else {
            panic!("not a comparison");
        };
        let Comparison::Probe(p) = &*c else {
            panic!("not a probe comparison");
        };
        assert_eq!(p.target_count(), usize::MAX);
        let stamp = crate::report::Stamp {
            host: "h".into(),
            started: std::time::UNIX_EPOCH,
        };
        for format in [crate::report::Format::Human, crate::report::Format::Html] {
            let out = crate::report::exporter(format, crate::report::Style::plain(), &stamp)
                .compare(&c)
                .unwrap();
            assert!(out.contains(&usize::MAX.to_string()), "{format:?}");
        }
    }
}
