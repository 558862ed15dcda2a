//! The numbers behind each figure, as tables folded under them.

use super::super::page::{self, Td};
use super::figures::bs_contrast;
use super::layout::{bs_label, change, interval, offset_label, rate, Rel, Standing};
use super::Run;
use crate::probe::engine::Pattern;
use crate::probe::results::Estimate;

fn ci(e: &Estimate) -> Td {
    Td::num(
        e.interval()
            .map(|c| interval(c, rate))
            .unwrap_or_else(|| "n/a".into()),
    )
}

/// Ratio, its interval, change, decision and rounds of a comparison.
fn rel_cells(r: Option<&Rel>) -> Vec<Td> {
    let Some(r) = r else {
        return vec![Td::text(""), Td::text(""), Td::text(""), Td::text("")];
    };
    vec![
        Td::num(format!("{:.3}", r.ratio)),
        Td::num(
            r.ci.map(|c| interval(c, |x| format!("{x:.3}")))
                .unwrap_or_else(|| "n/a".into()),
        ),
        Td::num(change(r.ratio)),
        Td::Class(
            format!("decision-{}", r.decision_name()),
            r.decision_name().into(),
        ),
    ]
}

/// A cell against offset 0: its comparison, or what it is instead.
fn standing_cells(s: &Standing) -> Vec<Td> {
    match s {
        Standing::Measured(r) => rel_cells(Some(r)),
        Standing::Reference => {
            let mut row = rel_cells(None);
            row[3] = Td::text("aligned reference");
            row
        }
        Standing::Unpaired => rel_cells(None),
    }
}

/// Every cell of a pattern: the heatmap's and the line plot's numbers.
pub fn cells(run: &Run, pattern: Pattern) -> String {
    let mut headers = vec![
        "block size",
        "offset",
        "IOPS (median)",
        "IOPS 95 % CI",
        "MiB/s",
        "p99 latency (µs)",
        "ratio to offset 0",
        "ratio 95 % CI",
        "IOPS change",
        "decision",
        "rounds",
    ];
    if run.multi() {
        headers.insert(0, "target");
    }
    let mut rows = Vec::new();
    for t in 0..run.parts.len() {
        for (c, s) in run
            .standings(t)
            .into_iter()
            .filter(|(c, _)| c.cell.pattern == pattern)
        {
            let mut row = vec![
                Td::text(bs_label(u64::from(c.cell.block_size))),
                Td::text(offset_label(c.cell.offset)),
                Td::num(rate(c.iops.median)),
                ci(&c.iops),
                Td::num(rate(c.mib_s.median)),
                Td::num(rate(c.lat_us.p99)),
            ];
            row.extend(standing_cells(&s));
            row.push(Td::num(c.rounds.len()));
            if run.multi() {
                row.insert(0, Td::num(t));
            }
            rows.push(row);
        }
    }
    let n = rows.len();
    page::folded(
        &format!("Numbers of the {pattern} heatmap and line plot ({n} cells)"),
        &page::table(
            &format!("{}-cells-{pattern}", run.id),
            &format!("{pattern}: every cell against offset 0 of its block size"),
            &headers,
            &rows,
        ),
    )
}

/// The aligned cells: the block-size curve's numbers.
pub fn bs_curve(run: &Run) -> String {
    let mut rows = Vec::new();
    for t in 0..run.parts.len() {
        for c in run.parts[t].cells.iter().filter(|c| c.cell.offset == 0) {
            let contrast = bs_contrast(run, t, c);
            let mut row = vec![
                Td::num(t),
                Td::text(c.cell.pattern.to_string()),
                Td::text(bs_label(u64::from(c.cell.block_size))),
                Td::num(rate(c.iops.median)),
                ci(&c.iops),
                Td::num(rate(c.mib_s.median)),
                ci(&c.mib_s),
                Td::text(contrast.map(|(b, _)| bs_label(b)).unwrap_or_default()),
            ];
            row.extend(rel_cells(contrast.as_ref().map(|(_, r)| r)));
            rows.push(row);
        }
    }
    page::folded(
        &format!("Numbers of the block-size curve ({} cells)", rows.len()),
        &page::table(
            &format!("{}-bs-curve-table", run.id),
            "Aligned cells (offset 0), and each block size against the next larger one",
            &[
                "target",
                "pattern",
                "block size",
                "IOPS (median)",
                "IOPS 95 % CI",
                "MiB/s (median)",
                "MiB/s 95 % CI",
                "against",
                "IOPS ratio",
                "ratio 95 % CI",
                "IOPS change",
                "decision",
            ],
            &rows,
        ),
    )
}

/// Every further target's cell against the first's.
pub fn versus(run: &Run) -> String {
    let rows: Vec<Vec<Td>> = run
        .versus()
        .iter()
        .map(|v| {
            let mut row = vec![
                Td::num(v.target),
                Td::num(v.reference),
                Td::text(v.key.0.to_string()),
                Td::text(bs_label(v.key.1)),
                Td::text(offset_label(v.key.2)),
            ];
            row.extend(rel_cells(Some(&v.rel)));
            row.push(Td::num(v.rel.rounds));
            row
        })
        .collect();
    page::folded(
        &format!("Numbers of the target comparisons ({} cells)", rows.len()),
        &page::table(
            &format!("{}-versus-table", run.id),
            "Each further target's IOPS against the first target's, cell by cell",
            &[
                "target",
                "against target",
                "pattern",
                "block size",
                "offset",
                "IOPS ratio",
                "ratio 95 % CI",
                "IOPS change",
                "decision",
                "rounds",
            ],
            &rows,
        ),
    )
}
