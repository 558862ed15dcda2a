//! The one-line verdict of a target: its status word, what is damaged,
//! the partitions and layers tallied by status, and the findings counted.

use super::outcome::CheckedTarget;
use super::summary;
use crate::findings::Status;
use crate::layout::{PartKind, TableKind};
use crate::stack::Layer;

/// The one-line summary: the status word, then what it comes from,
/// the arrays and volume groups assembled from the target included.
pub fn verdict(r: &CheckedTarget, made_from_it: &[&Layer]) -> String {
    let sum = &r.summary;
    let registered = if r.partition_table.kind == TableKind::Kernel {
        " registered"
    } else {
        ""
    };
    // What is damaged first: the verdict alone (-q, a cron mail) says it.
    let mut parts = damage(r);
    parts.push(match sum.partitions {
        0 if r.partition_table.kind == TableKind::None => "no partition table".into(),
        0 => format!("no partitions{registered}"),
        n => tally(
            n,
            "partition",
            r.partitions
                .iter()
                .filter(|p| p.kind != PartKind::Extended)
                .map(|p| p.status),
        ),
    });
    if sum.partitions > 0 {
        parts.push(
            if r.portable {
                "portable"
            } else {
                "not portable"
            }
            .into(),
        );
    }
    if sum.layers > 0 {
        let statuses = summary::layers(r).into_iter().map(|l| l.status);
        parts.push(tally(sum.layers, "stack layer", statuses));
    }
    parts.extend(made_from_it.iter().filter_map(|a| assembled(a)));
    // Named by a signature but not read: said, so "aligned" is not taken
    // for a judgement of what is inside.
    let mut unread: Vec<&str> = Vec::new();
    for s in summary::layers(r).into_iter().filter_map(|l| l.signature()) {
        if !unread.contains(&s.short()) {
            unread.push(s.short());
        }
    }
    if !unread.is_empty() {
        parts.push(format!("{} not read", unread.join(", ")));
    }
    format!(
        "{}: {} ({})",
        sum.status.word(),
        parts.join(", "),
        sum.findings.phrase()
    )
}

/// "1 of 4 layers untidy in VG vg0 (extent 4 MiB)", for an array or group
/// assembled from the target with a problem inside; None when clean.
fn assembled(a: &Layer) -> Option<String> {
    let all: Vec<&Layer> = a.walk();
    let status = |l: &&Layer| l.status.max(Status::of(&l.findings));
    if all.iter().map(status).all(Status::is_clean) {
        return None;
    }
    Some(format!(
        "{} in {}",
        tally(all.len(), "layer", all.iter().map(status)),
        a.name
    ))
}

/// The target's damage in a few words each: "primary GPT damaged (the
/// backup was used)", once per code.
fn damage(r: &CheckedTarget) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let damaged = r
        .all_findings()
        .filter(|f| Status::of([*f]) == Status::Damaged);
    for f in damaged {
        let words = f.code.meaning().damage.unwrap_or("layer metadata damaged");
        if !out.iter().any(|w| w == words) {
            out.push(words.to_string());
        }
    }
    out
}

/// "1 partition aligned", "all 3 partitions aligned", "1 of 3 partitions
/// MISALIGNED, 1 untidy".
fn tally(n: usize, noun: &str, statuses: impl Iterator<Item = Status>) -> String {
    let mut by: Vec<(Status, usize)> = Vec::new();
    for s in statuses {
        match by.iter_mut().find(|(x, _)| *x == s) {
            Some((_, c)) => *c += 1,
            None => by.push((s, 1)),
        }
    }
    by.sort_by_key(|b| std::cmp::Reverse(b.0));
    let nouns = if n == 1 {
        noun.to_string()
    } else {
        format!("{noun}s")
    };
    // "inherits" is a verb: "1 inherits", "2 inherit" (a misalignment).
    let word = |s: Status, c: usize| match (s, c) {
        (Status::Inherits, 1) => "inherits a misaligned offset".to_string(),
        (Status::Inherits, _) => "inherit a misaligned offset".to_string(),
        _ => s.to_string(),
    };
    match by.as_slice() {
        [(s, _)] if n == 1 => format!("1 {nouns} {}", word(*s, 1)),
        [(s, _)] => format!("all {n} {nouns} {}", word(*s, n)),
        [(s, c), rest @ ..] => {
            let mut t = format!("{c} of {n} {nouns} {}", word(*s, *c));
            for (s, c) in rest.iter().filter(|(s, _)| *s != Status::Aligned) {
                t.push_str(&format!(", {c} {}", word(*s, *c)));
            }
            t
        }
        [] => format!("no {nouns}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixture::{image, part};
    use crate::check::judge;
    use crate::findings::FailOn;
    use crate::inspect::Inspection;
    use crate::iolimits::Topology;
    use crate::units::MIB;

    #[test]
    fn tallies() {
        use Status::*;
        assert_eq!(
            tally(1, "partition", [Aligned].into_iter()),
            "1 partition aligned"
        );
        assert_eq!(
            tally(3, "partition", [Aligned; 3].into_iter()),
            "all 3 partitions aligned"
        );
        assert_eq!(
            tally(3, "partition", [Aligned, Misaligned, Untidy].into_iter()),
            "1 of 3 partitions misaligned, 1 untidy"
        );
        assert_eq!(
            tally(2, "stack layer", [Inherits; 2].into_iter()),
            "all 2 stack layers inherit a misaligned offset"
        );
        assert_eq!(tally(0, "partition", [].into_iter()), "no partitions");
    }

    fn verdict_of(parts: Vec<crate::layout::Partition>) -> String {
        let t = image(64 * MIB, Topology::IMAGE_DEFAULT, parts);
        let i = Inspection {
            targets: vec![t],
            ..Inspection::default()
        };
        judge(i, FailOn::default()).targets.remove(0).verdict
    }

    #[test]
    fn verdicts_of_whole_targets() {
        assert_eq!(
            verdict_of(vec![
                part(1, PartKind::Primary, 2048, 4095),
                part(2, PartKind::Primary, 4096, 8191)
            ]),
            "aligned: all 2 partitions aligned, portable (no findings)"
        );
        let overlap = verdict_of(vec![
            part(1, PartKind::Primary, 2048, 8191),
            part(2, PartKind::Primary, 4096, 8191),
            part(3, PartKind::Primary, 4096, 6143),
        ]);
        // Damage first, once however many findings show it.
        assert!(
            overlap.starts_with("DAMAGED: partitions overlap, all 3 partitions aligned"),
            "{overlap}"
        );
        assert_eq!(verdict_of(vec![]), "aligned: no partitions (no findings)");
    }
}
