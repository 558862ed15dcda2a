//! The tables in words: the run's summary, the targets not checked, the
//! tools' verdicts beside diskalign's, and the findings by severity.

use super::super::look;
use super::super::page::{self, Td};
use crate::check::document::{CheckDoc, Finding, Target};
use crate::findings::Severity;

/// The run in numbers, and the targets that could not be checked.
pub fn summary(id: &str, doc: &CheckDoc) -> String {
    let mut s = String::new();
    // An older document without `summary` reads as one of no targets.
    let sum = &doc.summary;
    if sum.targets > 0 {
        let rows = vec![vec![
            Td::Class(look::class(sum.status), look::words(sum.status)),
            Td::num(sum.targets),
            Td::num(sum.checked),
            Td::num(doc.errors.len()),
            Td::num(sum.findings.errors),
            Td::num(sum.findings.warnings),
            Td::num(sum.findings.info),
            Td::num(sum.exit_status),
        ]];
        s.push_str(&page::table(
            &format!("{id}-summary"),
            "The run",
            &[
                "status",
                "targets",
                "checked",
                "not checked",
                "errors",
                "warnings",
                "info",
                "exit status",
            ],
            &rows,
        ));
    }
    s.push_str(&crate::report::columns::errors_html(
        &format!("{id}-errors"),
        "Targets not checked",
        "target",
        &doc.errors,
    ));
    s
}

fn verdict(ok: bool) -> Td {
    if ok {
        Td::Class("status-aligned".into(), "✓ aligned".into())
    } else {
        Td::Class("status-misaligned".into(), "✗ not aligned".into())
    }
}

/// One row per partition: what parted (optimal and minimal), fdisk and
/// sgdisk would say, beside diskalign's status; then where each tool
/// would start the first partition of an empty disk.
pub fn tools(fig: &str, t: &Target) -> String {
    let rows: Vec<Vec<Td>> = t
        .partitions
        .iter()
        .map(|p| {
            let st = if p.kind == crate::layout::PartKind::Extended {
                None
            } else {
                Some(p.status)
            };
            vec![
                Td::num(p.number),
                Td::num(p.start_bytes),
                verdict(p.tools.parted_optimal),
                verdict(p.tools.parted_minimal),
                verdict(p.tools.fdisk),
                verdict(p.tools.sgdisk),
                Td::Class(look::class(st), look::words(st)),
            ]
        })
        .collect();
    let mut s = page::table(
        fig,
        &format!(
            "The tools' verdicts on {} (docs/tools.md), beside diskalign's",
            t.path
        ),
        &[
            "partition",
            "start (bytes)",
            "parted align-check opt",
            "parted align-check min",
            "fdisk",
            "sgdisk -v",
            "diskalign",
        ],
        &rows,
    );
    let first = t.first_start_bytes;
    if !first.any_fits(t.size_bytes, u64::from(t.topology.logical_block_size)) {
        // Too small for any partition: where the tools start says nothing.
        return s;
    }
    let starts = [
        ("parted -a optimal", first.parted),
        ("fdisk / sfdisk", first.fdisk),
        ("sgdisk", first.sgdisk),
    ];
    let rows: Vec<Vec<Td>> = starts
        .iter()
        .map(|(tool, b)| {
            let on = |g: u64| if b % g == 0 { "✓ yes" } else { "✗ no" };
            vec![
                Td::text(*tool),
                Td::num(b),
                Td::text(crate::units::exact(*b)),
                Td::text(on(4096)),
                Td::text(on(1 << 20)),
            ]
        })
        .collect();
    s.push_str(&page::table(
        &format!("{fig}-first"),
        &format!(
            "Where each tool would start the first partition of an empty {}",
            t.path
        ),
        &[
            "tool",
            "first start (bytes)",
            "in units",
            "on 4 KiB",
            "on 1 MiB",
        ],
        &rows,
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
        let rows: Vec<Vec<Td>> = these
            .iter()
            .map(|f| {
                vec![
                    Td::Class(format!("sev-{sev}"), code_cell(f, &repeats, &all)),
                    Td::text(page::subject(&f.subject)),
                    Td::text(&f.message),
                ]
            })
            .collect();
        s.push_str(&page::table(
            &format!("{id}-findings-{sev}"),
            &format!("{word} ({})", these.len()),
            &["code", "about", "message"],
            &rows,
        ));
    }
    s
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
    use crate::check::document::Subject;

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
