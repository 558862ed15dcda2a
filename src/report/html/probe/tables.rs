//! The numbers behind each figure, as tables folded under them. Each
//! table is a list of columns (the column model's), over rows that carry
//! what a value needs: the target, the cell, its comparison.

use super::super::page;
use super::figures::bs_contrast;
use super::layout::{bs_label, change, interval, offset_label, rate, Rel, Standing};
use super::{Run, Versus};
use crate::probe::Pattern;
use crate::probe::{CellReport, Estimate};
use crate::report::columns::{self, Column};

fn ci(e: &Estimate) -> String {
    e.interval()
        .map(|c| interval(c, rate))
        .unwrap_or_else(|| "n/a".into())
}

/// A row with a comparison: a cell against offset 0, against the next
/// larger block size, a target's cell against the first target's.
trait Compared {
    fn rel(&self) -> Option<&Rel>;

    /// What the decision says when there is no comparison.
    fn instead(&self) -> &'static str {
        ""
    }
}

/// Ratio (under `ratio`), its interval, change and decision of a row's
/// comparison, empty when it has none.
fn compared<R: Compared>(ratio: &'static str) -> Vec<Column<R>> {
    vec![
        Column::html_only("ratio", ratio, |r: &R| {
            r.rel().map_or(String::new(), |r| format!("{:.3}", r.ratio))
        })
        .num(),
        Column::html_only("ratio_ci95", "ratio 95 % CI", |r: &R| {
            r.rel().map_or(String::new(), |r| {
                r.ci.map(|c| interval(c, |x| format!("{x:.3}")))
                    .unwrap_or_else(|| "n/a".into())
            })
        })
        .num(),
        Column::html_only("change", "IOPS change", |r: &R| {
            r.rel().map_or(String::new(), |r| change(r.ratio))
        })
        .num(),
        Column::html_only("decision", "decision", |r: &R| {
            r.rel()
                .map_or(r.instead().into(), |r| r.decision_name().into())
        })
        .class(|r: &R| r.rel().map(|r| format!("decision-{}", r.decision_name()))),
    ]
}

/// A cell of a pattern with its standing against offset 0.
struct CellLine<'a> {
    target: usize,
    cell: &'a CellReport,
    standing: Standing,
}

impl Compared for CellLine<'_> {
    fn rel(&self) -> Option<&Rel> {
        match &self.standing {
            Standing::Measured(r) => Some(r),
            _ => None,
        }
    }

    fn instead(&self) -> &'static str {
        match self.standing {
            Standing::Reference => "aligned reference",
            _ => "",
        }
    }
}

type CL<'a> = Column<CellLine<'a>>;

/// Every cell's numbers, and its comparison with offset 0.
fn cell_columns<'a>() -> Vec<CL<'a>> {
    let mut cols = vec![
        CL::html_only("target", "target", |r| r.target.to_string()).num(),
        CL::html_only("block_size", "block size", |r| {
            bs_label(u64::from(r.cell.cell.block_size))
        }),
        CL::html_only("offset", "offset", |r| offset_label(r.cell.cell.offset)),
        CL::html_only("iops", "IOPS (median)", |r| rate(r.cell.iops.median)).num(),
        CL::html_only("iops_ci95", "IOPS 95 % CI", |r| ci(&r.cell.iops)).num(),
        CL::html_only("mib_s", "MiB/s", |r| rate(r.cell.mib_s.median)).num(),
        CL::html_only("p99", "p99 latency (µs)", |r| rate(r.cell.lat_us.p99)).num(),
    ];
    cols.extend(compared("ratio to offset 0"));
    cols.push(CL::html_only("rounds", "rounds", |r| r.cell.rounds.len().to_string()).num());
    cols
}

/// Every cell of a pattern: the heatmap's and the line plot's numbers
/// (the target named when there are several).
pub fn cells(run: &Run, pattern: Pattern) -> String {
    let mut rows = Vec::new();
    for t in 0..run.parts.len() {
        for (cell, standing) in run
            .standings(t)
            .into_iter()
            .filter(|(c, _)| c.cell.pattern == pattern)
        {
            rows.push(CellLine {
                target: t,
                cell,
                standing,
            });
        }
    }
    let all = cell_columns();
    let cols: Vec<&CL> = all
        .iter()
        .filter(|c| run.multi() || c.id != "target")
        .collect();
    let n = rows.len();
    page::folded(
        &format!("Numbers of the {pattern} heatmap and line plot ({n} cells)"),
        &columns::html(
            &format!("{}-cells-{pattern}", run.id),
            &format!("{pattern}: every cell against offset 0 of its block size"),
            &cols,
            &rows.iter().collect::<Vec<_>>(),
        ),
    )
}

/// An aligned cell, with the next larger block size it is measured
/// against, if any.
struct CurveLine<'a> {
    target: usize,
    cell: &'a CellReport,
    contrast: Option<(u64, Rel)>,
}

impl Compared for CurveLine<'_> {
    fn rel(&self) -> Option<&Rel> {
        self.contrast.as_ref().map(|(_, r)| r)
    }
}

type CU<'a> = Column<CurveLine<'a>>;

/// The aligned cells' numbers, and each against the next larger block size.
fn curve_columns<'a>() -> Vec<CU<'a>> {
    let mut cols = vec![
        CU::html_only("target", "target", |r| r.target.to_string()).num(),
        CU::html_only("pattern", "pattern", |r| r.cell.cell.pattern.to_string()),
        CU::html_only("block_size", "block size", |r| {
            bs_label(u64::from(r.cell.cell.block_size))
        }),
        CU::html_only("iops", "IOPS (median)", |r| rate(r.cell.iops.median)).num(),
        CU::html_only("iops_ci95", "IOPS 95 % CI", |r| ci(&r.cell.iops)).num(),
        CU::html_only("mib_s", "MiB/s (median)", |r| rate(r.cell.mib_s.median)).num(),
        CU::html_only("mib_s_ci95", "MiB/s 95 % CI", |r| ci(&r.cell.mib_s)).num(),
        CU::html_only("against", "against", |r| {
            r.contrast.map(|(b, _)| bs_label(b)).unwrap_or_default()
        }),
    ];
    cols.extend(compared("IOPS ratio"));
    cols
}

/// The aligned cells: the block-size curve's numbers.
pub fn bs_curve(run: &Run) -> String {
    let mut rows = Vec::new();
    for t in 0..run.parts.len() {
        for cell in run.parts[t].cells.iter().filter(|c| c.cell.offset == 0) {
            rows.push(CurveLine {
                target: t,
                cell,
                contrast: bs_contrast(run, t, cell),
            });
        }
    }
    let cols = curve_columns();
    page::folded(
        &format!("Numbers of the block-size curve ({} cells)", rows.len()),
        &columns::html(
            &format!("{}-bs-curve-table", run.id),
            "Aligned cells (offset 0), and each block size against the next larger one",
            &cols.iter().collect::<Vec<_>>(),
            &rows.iter().collect::<Vec<_>>(),
        ),
    )
}

impl Compared for Versus {
    fn rel(&self) -> Option<&Rel> {
        Some(&self.rel)
    }
}

/// A further target's cell against the first target's.
fn versus_columns() -> Vec<Column<Versus>> {
    type V = Column<Versus>;
    let mut cols = vec![
        V::html_only("target", "target", |v| v.target.to_string()).num(),
        V::html_only("reference", "against target", |v| v.reference.to_string()).num(),
        V::html_only("pattern", "pattern", |v| v.key.0.to_string()),
        V::html_only("block_size", "block size", |v| bs_label(v.key.1)),
        V::html_only("offset", "offset", |v| offset_label(v.key.2)),
    ];
    cols.extend(compared("IOPS ratio"));
    cols.push(V::html_only("rounds", "rounds", |v| v.rel.rounds.to_string()).num());
    cols
}

/// Every further target's cell against the first's.
pub fn versus(run: &Run) -> String {
    let rows = run.versus();
    let cols = versus_columns();
    page::folded(
        &format!("Numbers of the target comparisons ({} cells)", rows.len()),
        &columns::html(
            &format!("{}-versus-table", run.id),
            "Each further target's IOPS against the first target's, cell by cell",
            &cols.iter().collect::<Vec<_>>(),
            &rows.iter().collect::<Vec<_>>(),
        ),
    )
}
