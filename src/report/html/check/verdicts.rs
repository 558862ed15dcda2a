//! The tables in words: the run's summary, the targets not checked, the
//! tools' verdicts beside diskalign's, and the findings by severity.

use super::super::look;
use super::super::page;
use crate::check::{CheckDoc, CheckedPartition, CheckedTarget};
use crate::findings::Finding;
use crate::findings::{Severity, Status};
use crate::report::columns::{self, Column};

/// The run in numbers, and the targets that could not be checked.
pub fn summary(id: &str, doc: &CheckDoc) -> String {
    let mut s = String::new();
    // An older document without `summary` reads as one of no targets.
    if doc.summary.targets > 0 {
        let cols = summary_columns();
        s.push_str(&columns::html(
            &format!("{id}-summary"),
            "The run",
            &cols.iter().collect::<Vec<_>>(),
            &[doc],
        ));
    }
    s.push_str(&super::super::findings::errors_html(
        &format!("{id}-errors"),
        "Targets not checked",
        "target",
        &doc.errors,
    ));
    s
}

type Run = Column<CheckDoc>;

/// The run's one row: its status, the targets and findings counted, and
/// the exit status.
fn summary_columns() -> Vec<Run> {
    vec![
        Run::html_only("status", "status", |d| look::words(d.summary.status))
            .class(|d| Some(look::class(d.summary.status))),
        Run::html_only("targets", "targets", |d| d.summary.targets.to_string()).num(),
        Run::html_only("checked", "checked", |d| d.summary.checked.to_string()).num(),
        Run::html_only("not_checked", "not checked", |d| d.errors.len().to_string()).num(),
        Run::html_only("errors", "errors", |d| {
            d.summary.findings.errors.to_string()
        })
        .num(),
        Run::html_only("warnings", "warnings", |d| {
            d.summary.findings.warnings.to_string()
        })
        .num(),
        Run::html_only("info", "info", |d| d.summary.findings.info.to_string()).num(),
        Run::html_only("exit_status", "exit status", |d| {
            d.summary.exit_status.to_string()
        })
        .num(),
    ]
}

fn verdict(ok: bool) -> String {
    if ok {
        "✓ aligned".into()
    } else {
        "✗ not aligned".into()
    }
}

fn verdict_class(ok: bool) -> Option<String> {
    Some(
        if ok {
            "status-aligned"
        } else {
            "status-misaligned"
        }
        .into(),
    )
}

/// diskalign's status of a partition; none for an extended one (a
/// container, not judged).
fn status(p: &CheckedPartition) -> Option<Status> {
    (p.kind != crate::layout::PartKind::Extended).then_some(p.status)
}

type Tools = Column<CheckedPartition>;

/// What parted (optimal and minimal), fdisk and sgdisk would say of a
/// partition, beside diskalign's status.
fn tools_columns() -> Vec<Tools> {
    vec![
        Tools::html_only("number", "partition", |p| p.number.to_string()).num(),
        Tools::html_only("start_bytes", "start (bytes)", |p| {
            p.start_bytes.to_string()
        })
        .num(),
        Tools::html_only("parted_optimal", "parted align-check opt", |p| {
            verdict(p.tools.parted_optimal)
        })
        .class(|p| verdict_class(p.tools.parted_optimal)),
        Tools::html_only("parted_minimal", "parted align-check min", |p| {
            verdict(p.tools.parted_minimal)
        })
        .class(|p| verdict_class(p.tools.parted_minimal)),
        Tools::html_only("fdisk", "fdisk", |p| verdict(p.tools.fdisk))
            .class(|p| verdict_class(p.tools.fdisk)),
        Tools::html_only("sgdisk", "sgdisk -v", |p| verdict(p.tools.sgdisk))
            .class(|p| verdict_class(p.tools.sgdisk)),
        Tools::html_only("status", "diskalign", |p| look::words(status(p)))
            .class(|p| Some(look::class(status(p)))),
    ]
}

/// Where a tool would start the first partition of an empty disk: the
/// tool, and the byte.
type First = (&'static str, u64);

fn on(b: u64, grain: u64) -> String {
    if b % grain == 0 { "✓ yes" } else { "✗ no" }.into()
}

fn first_columns() -> Vec<Column<First>> {
    vec![
        Column::html_only("tool", "tool", |f: &First| f.0.to_string()),
        Column::html_only("first_start_bytes", "first start (bytes)", |f: &First| {
            f.1.to_string()
        })
        .num(),
        Column::html_only("in_units", "in units", |f: &First| crate::units::exact(f.1)),
        Column::html_only("on_4k", "on 4 KiB", |f: &First| on(f.1, 4096)),
        Column::html_only("on_1m", "on 1 MiB", |f: &First| on(f.1, 1 << 20)),
    ]
}

/// One row per partition: what parted (optimal and minimal), fdisk and
/// sgdisk would say, beside diskalign's status; then where each tool
/// would start the first partition of an empty disk.
pub fn tools(fig: &str, t: &CheckedTarget) -> String {
    let cols = tools_columns();
    let mut s = columns::html(
        fig,
        &format!(
            "The tools' verdicts on {} (docs/tools.md), beside diskalign's",
            t.path
        ),
        &cols.iter().collect::<Vec<_>>(),
        &t.partitions.iter().collect::<Vec<_>>(),
    );
    let first = t.first_start_bytes;
    if !t.partitionable || !first.any_fits(t.size_bytes, u64::from(t.topology.logical_block_size)) {
        // Nobody partitions it (an LV, a partition), or it is too small
        // for any partition: where the tools start says nothing.
        return s;
    }
    let starts: [First; 3] = [
        ("parted -a optimal", first.parted),
        ("fdisk / sfdisk", first.fdisk),
        ("sgdisk", first.sgdisk),
    ];
    let cols = first_columns();
    s.push_str(&columns::html(
        &format!("{fig}-first"),
        &format!(
            "Where each tool would start the first partition of an empty {}",
            t.path
        ),
        &cols.iter().collect::<Vec<_>>(),
        &starts.iter().collect::<Vec<_>>(),
    ));
    s
}

/// Every finding of the run, a table per severity, worst first. A
/// finding that repeats another's cause (`same_cause_as`) is counted
/// and listed once, beside its cause, as the JSON summary counts it.
pub fn findings(id: &str, doc: &CheckDoc) -> String {
    let all = doc.all_findings();
    let (causes, repeats): (Vec<&Finding>, Vec<&Finding>) =
        all.iter().partition(|f| cause_of(f, &all).is_none());
    let mut s = page::heading(
        3,
        &format!("{id}-findings"),
        &format!("Findings ({})", causes.len()),
    );
    for (sev, word) in [
        (Severity::Error, "Errors"),
        (Severity::Warning, "Warnings"),
        (Severity::Info, "Info"),
    ] {
        let these: Vec<&Finding> = causes
            .iter()
            .copied()
            .filter(|f| f.severity == sev)
            .collect();
        if these.is_empty() {
            s.push_str(&page::note(&format!("{word}: none.")));
            continue;
        }
        let rows: Vec<FindingRow> = these
            .iter()
            .map(|f| FindingRow {
                finding: f,
                repeats: &repeats,
                all: &all,
            })
            .collect();
        let cols = finding_columns();
        s.push_str(&columns::html(
            &format!("{id}-findings-{sev}"),
            &format!("{word} ({})", these.len()),
            &cols.iter().collect::<Vec<_>>(),
            &rows.iter().collect::<Vec<_>>(),
        ));
    }
    s
}

/// A finding of the run, with the run's findings its code cell names
/// those that repeat its cause from.
struct FindingRow<'a> {
    finding: &'a Finding,
    repeats: &'a [&'a Finding],
    all: &'a [Finding],
}

type F<'a> = Column<FindingRow<'a>>;

/// A finding's code (and those repeating its cause) in its severity's
/// colour, what it is about, and its sentence.
fn finding_columns<'a>() -> Vec<F<'a>> {
    vec![
        F::html_only("code", "code", |r| code_cell(r.finding, r.repeats, r.all))
            .class(|r| Some(format!("sev-{}", r.finding.severity))),
        F::html_only("about", "about", |r| page::subject(&r.finding.subject)),
        F::html_only("message", "message", |r| r.finding.message.clone()),
    ]
}

/// The finding whose cause `f` repeats, if the run holds it: the same
/// subject, the code `same_cause_as` names.
fn cause_of<'a>(f: &Finding, all: &'a [Finding]) -> Option<&'a Finding> {
    let code = f.same_cause_as?;
    all.iter()
        .find(|c| c.code == code && c.subject == f.subject && c.same_cause_as.is_none())
}

/// `✗ start-misaligned (also start-not-4k)`: the code, and the codes of
/// the findings that repeat its cause.
fn code_cell(f: &Finding, repeats: &[&Finding], all: &[Finding]) -> String {
    let also: Vec<&str> = repeats
        .iter()
        .filter(|r| cause_of(r, all).is_some_and(|c| std::ptr::eq(c, f)))
        .map(|r| r.code.as_str())
        .collect();
    let code = format!("{} {}", glyph(f.severity), f.code);
    if also.is_empty() {
        code
    } else {
        format!("{code} (also {})", also.join(", "))
    }
}

fn glyph(sev: Severity) -> &'static str {
    match sev {
        Severity::Error => "✗",
        Severity::Warning => "!",
        Severity::Info => "ℹ",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Subject;

    #[test]
    fn a_finding_of_the_same_cause_is_counted_once_beside_its_cause() {
        let doc = CheckDoc::new(
            serde_json::from_str(
                r#"{"targets":[{"path":"a.img","partitions":[{"number":1,"findings":[
              {"code":"start-misaligned","severity":"error","message":"m1"},
              {"code":"start-not-4k","severity":"error","message":"m2",
               "same_cause_as":"start-misaligned"}]}]}]}"#,
            )
            .unwrap(),
            "a.json",
        );
        let html = findings("f", &doc);
        assert!(html.contains("Findings (1)"), "{html}");
        assert!(html.contains("Errors (1)"), "{html}");
        assert!(
            html.contains("✗ start-misaligned (also start-not-4k)"),
            "{html}"
        );
        assert!(!html.contains("m2"), "{html}");
    }

    #[test]
    fn subjects_name_target_partition_and_layer_once() {
        let s = Subject {
            target: Some("/dev/loop1".into()),
            partition: Some(1),
            layer: Some("partition 1 / PV abc".into()),
        };
        assert_eq!(page::subject(&s), "/dev/loop1, partition 1, PV abc");
        let s = Subject {
            target: None,
            partition: None,
            layer: Some("VG vgh / LV vgh/lvs".into()),
        };
        assert_eq!(page::subject(&s), "VG vgh / LV vgh/lvs");
    }
}
