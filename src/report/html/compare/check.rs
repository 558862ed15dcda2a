//! A check comparison: each target's status in A and in B, the findings
//! of each run by severity (a grouped bar chart), and every finding that
//! appeared, disappeared or changed.

use super::super::kit;
use super::super::kit::y_grid;
use super::super::kit::y_title;
use super::super::kit::Axis;
use super::super::kit::{swatch, KeyBox, Legend};
use super::super::kit::{ticks, Room};
use super::super::page;
use super::super::scale::{Band, Linear, Rgb};
use super::super::svg::{El, Figure};
use crate::compare::CheckComparison;
use crate::compare::{Change, FindingChange};
use crate::findings::Severity;
use crate::report::columns::{self, Column};
use crate::report::tables;

pub fn section(s: &mut String, id: &str, k: &CheckComparison) {
    s.push_str(&super::runs(&k.a, &k.b));
    for t in &k.targets {
        if let Some(why) = &t.different_disk {
            s.push_str(&page::para(&format!(
                "Warning: {}: A and B may not be the same disk ({why}); compared all the same.",
                t.target
            )));
        }
    }
    s.push_str(&page::para(&k.summary));
    s.push_str(&targets(id, k));
    let counts = counts(k);
    s.push_str(&bars(id, &counts));
    s.push_str(&changes(id, &k.changes));
}

fn targets(id: &str, k: &CheckComparison) -> String {
    let cols = tables::check_targets_compared();
    let rows: Vec<_> = k.targets.iter().collect();
    columns::html(
        &format!("{id}-targets"),
        "Each target in A and in B",
        &cols.iter().collect::<Vec<_>>(),
        &rows,
    )
}

/// Findings by severity in A and in B: `[error, warning, info]` each.
/// Only the findings that differ are in the comparison, so these count
/// what each run had of them: B = A - disappeared + appeared.
pub fn counts(k: &CheckComparison) -> [[usize; 3]; 2] {
    let mut c = [[0; 3]; 2];
    let index = |s: Severity| match s {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Info => 2,
    };
    for ch in &k.changes {
        if let Some(s) = ch.severity_a {
            c[0][index(s)] += 1;
        }
        if let Some(s) = ch.severity_b {
            c[1][index(s)] += 1;
        }
    }
    c
}

const SEVERITIES: [(&str, Rgb); 3] = [
    ("error", Rgb(213, 94, 0)),
    ("warning", Rgb(230, 159, 0)),
    ("info", Rgb(86, 180, 233)),
];

/// Grouped bars: per severity, the changed findings A had and B has.
fn bars(id: &str, counts: &[[usize; 3]; 2]) -> String {
    let (w, h, left, top, bottom) = (520.0, 230.0, 60.0, 40.0, 180.0);
    let mut f = Figure::new(
        &format!("{id}-severity"),
        w,
        h,
        "Findings that differ, by severity, in A and in B",
    );
    let max = counts.iter().flatten().copied().max().unwrap_or(0).max(1) as f64;
    let y = Linear::new((0.0, max), (bottom, top));
    let band = Band {
        n: 3,
        r0: left,
        r1: w - 20.0,
    };
    // Counts: whole numbers only, a line of room between labels.
    let room = Room {
        axis: Axis::Y,
        size: 11.0,
        gap: 14.0,
    };
    let t = ticks(
        kit::linear(0.0, max, 1.0),
        |v| y.map(v),
        |v| format!("{v}"),
        room,
    );
    y_grid(&mut f, &t, left, w - 20.0);
    for (i, (name, colour)) in SEVERITIES.iter().enumerate() {
        for (side, label) in ["A", "B"].iter().enumerate() {
            let n = counts[side][i];
            let x = band.start(i) + 12.0 + side as f64 * (band.width() - 24.0) / 2.0;
            let bw = (band.width() - 24.0) / 2.0 - 4.0;
            let fill = if side == 0 {
                "#ffffff".to_string()
            } else {
                colour.hex()
            };
            f.group(
                "count",
                &[
                    ("severity", name.to_string()),
                    ("run", label.to_string()),
                    ("count", n.to_string()),
                ],
            );
            f.add(
                El::new("rect")
                    .at("x", x)
                    .at("y", y.map(n as f64))
                    .at("width", bw)
                    .at("height", bottom - y.map(n as f64))
                    .attr("fill", fill)
                    .attr("stroke", colour.hex())
                    .attr("stroke-width", 2)
                    .title(format!(
                        "{label}: {n} {name} finding(s) among those that differ"
                    )),
            );
            f.add(
                El::new("text")
                    .at("x", x + bw / 2.0)
                    .at("y", bottom + 14.0)
                    .attr("text-anchor", "middle")
                    .text(*label),
            );
            f.end_group();
        }
        f.add(
            El::new("text")
                .at("x", band.mid(i))
                .at("y", bottom + 30.0)
                .attr("text-anchor", "middle")
                .attr("font-weight", "bold")
                .text(*name),
        );
    }
    y_title(&mut f, 14.0, (top + bottom) / 2.0, "findings (count)");
    let mut l = Legend::across(left, h - 8.0);
    for (run, fill, words) in [
        ("A", "#ffffff", "A: outlined"),
        ("B", "#555555", "B: filled"),
    ] {
        let key = |b: KeyBox| vec![swatch(b, fill, "#555555").attr("stroke-width", 2)];
        l.entry(&mut f, (run, &[]), key, &[words]);
    }
    let rows: Vec<SeverityRow> = SEVERITIES
        .iter()
        .enumerate()
        .map(|(i, (name, _))| SeverityRow {
            severity: name,
            a: counts[0][i],
            b: counts[1][i],
        })
        .collect();
    let cols = severity_columns();
    f.finish()
        + &columns::html(
            &format!("{id}-severity-table"),
            "Findings that differ, by severity",
            &cols.iter().collect::<Vec<_>>(),
            &rows.iter().collect::<Vec<_>>(),
        )
}

/// A severity with how many of the findings that differ A had and B has.
struct SeverityRow {
    severity: &'static str,
    a: usize,
    b: usize,
}

/// The numbers of the severity bars.
fn severity_columns() -> Vec<Column<SeverityRow>> {
    vec![
        Column::html_only("severity", "severity", |r: &SeverityRow| {
            r.severity.to_string()
        }),
        Column::html_only("a", "A", |r: &SeverityRow| r.a.to_string()).num(),
        Column::html_only("b", "B", |r: &SeverityRow| r.b.to_string()).num(),
    ]
}

/// The findings that appeared, disappeared or changed, a table each,
/// drawn by compare's column list of them (the CSV's).
pub(super) fn changes(id: &str, all: &[FindingChange]) -> String {
    let list = tables::changes();
    let cols = columns::select(&list, None, |c| c.html);
    let mut s = String::new();
    for change in [Change::Appeared, Change::Disappeared, Change::Changed] {
        let rows: Vec<&FindingChange> = all.iter().filter(|c| c.change == change).collect();
        if rows.is_empty() {
            continue;
        }
        s.push_str(&columns::html(
            &format!("{id}-{change}"),
            &format!("Findings that {change} ({})", rows.len()),
            &cols,
            &rows,
        ));
    }
    if s.is_empty() {
        s = page::para("No finding appeared, disappeared or changed.");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the page's table says a finding is.
    fn where_(c: &FindingChange) -> String {
        let cols = tables::changes();
        let at = cols.iter().find(|c| c.id == "where").unwrap();
        at.raw(c)
    }

    #[test]
    fn a_layer_in_a_partition_names_the_partition_once() {
        let c = FindingChange {
            target: Some("img".into()),
            partition: Some(1),
            layer: Some("partition 1 / ext4".into()),
            ..FindingChange::default()
        };
        assert_eq!(where_(&c), "img, partition 1, ext4");
        let root = FindingChange {
            layer: Some("partition 1".into()),
            ..c.clone()
        };
        assert_eq!(where_(&root), "img, partition 1");
        let assembled = FindingChange {
            target: None,
            partition: None,
            layer: Some("VG vg / LV vg/lv".into()),
            ..c
        };
        assert_eq!(where_(&assembled), "assembled, VG vg / LV vg/lv");
    }

    #[test]
    fn the_bars_count_in_whole_numbers_under_a_clear_legend() {
        let svg = bars("run1", &[[3, 0, 1], [0, 2, 7]]);
        assert_eq!(super::super::super::kit::assert_legends_clear(&svg), 2);
        // Ticks 0 to 7, whole numbers only, one line of room apart.
        assert!(svg.contains(">0</text>") && svg.contains(">6</text>"));
        assert!(!svg.contains(">0.5</text>") && !svg.contains(">2.5</text>"));
        for max in [1, 12, 13] {
            let svg = bars("run1", &[[max, 0, 0], [0, 0, 0]]);
            assert!(!svg.contains(".5</text>"), "{svg}");
        }
    }
}
