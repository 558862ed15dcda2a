//! The column model shared by the human tables and the CSV: each column
//! has a CSV name and a raw value, a human title and a display value, or
//! only one of the two (the human "parted opt/min" is two CSV columns).

use super::style::Style;
use crate::check::report::{PartitionReport, TargetReport};
use crate::probe::analyse::CellReport;
use crate::probe::env::Environment;
use crate::probe::report::{ProbeReport, TargetInfo};
use crate::topology::Disk;
use crate::units::human;

/// One column over rows of type `R`.
pub struct Column<R: ?Sized> {
    /// The CSV header; None for a human-only column.
    pub csv: Option<&'static str>,
    /// The human table's title; None for a CSV-only column.
    pub title: Option<&'static str>,
    /// The raw value (bytes, numbers, names) for CSV.
    pub raw: fn(&R) -> String,
    /// The value as people read it; None: the raw value.
    pub shown: Option<fn(&R, &Style) -> String>,
}

impl<R: ?Sized> Column<R> {
    const fn both(csv: &'static str, title: &'static str, raw: fn(&R) -> String) -> Self {
        Column {
            csv: Some(csv),
            title: Some(title),
            raw,
            shown: None,
        }
    }

    const fn csv_only(csv: &'static str, raw: fn(&R) -> String) -> Self {
        Column {
            csv: Some(csv),
            title: None,
            raw,
            shown: None,
        }
    }

    const fn shown_as(mut self, shown: fn(&R, &Style) -> String) -> Self {
        self.shown = Some(shown);
        self
    }
}

/// The human table: a dimmed title row, then one row per item.
pub fn table_rows<R: ?Sized>(cols: &[Column<R>], rows: &[&R], st: &Style) -> Vec<Vec<String>> {
    let human: Vec<&Column<R>> = cols.iter().filter(|c| c.title.is_some()).collect();
    let mut out = vec![human
        .iter()
        .map(|c| st.dim(c.title.unwrap_or_default()))
        .collect::<Vec<_>>()];
    for r in rows {
        out.push(
            human
                .iter()
                .map(|c| match c.shown {
                    Some(f) => f(r, st),
                    None => (c.raw)(r),
                })
                .collect(),
        );
    }
    out
}

/// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV: the header, then one line per row.
pub fn csv<R: ?Sized>(cols: &[Column<R>], rows: &[&R]) -> String {
    let cols: Vec<&Column<R>> = cols.iter().filter(|c| c.csv.is_some()).collect();
    let mut out = cols
        .iter()
        .map(|c| c.csv.unwrap_or_default())
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    for r in rows {
        let line: Vec<String> = cols.iter().map(|c| field(&(c.raw)(r))).collect();
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

fn yes(b: bool) -> &'static str {
    if b {
        "ok"
    } else {
        "NO"
    }
}

/// A partition with the target it belongs to (the CSV names the target).
pub struct PartitionRow<'a> {
    pub target: &'a TargetReport,
    pub partition: &'a PartitionReport,
}

/// Problem codes of a finding list, space-separated.
fn problem_codes(f: &[crate::findings::Finding]) -> String {
    f.iter()
        .filter(|f| f.is_problem())
        .map(|f| f.code.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

type P<'a> = Column<PartitionRow<'a>>;

/// The partition table of `check`.
pub fn partitions<'a>() -> Vec<P<'a>> {
    vec![
        P::csv_only("target", |r| r.target.path.clone()),
        P::both("number", "#", |r| r.partition.number.to_string()),
        P::both("kind", "kind", |r| r.partition.kind.as_str().into()),
        P::both("start_sector", "start(sector)", |r| {
            r.partition.start_sector.to_string()
        }),
        P::both("start_bytes", "start(bytes)", |r| {
            r.partition.start_bytes.to_string()
        }),
        P::both("end_bytes", "end(last byte)", |r| {
            r.partition.end_bytes.to_string()
        }),
        P::both("size_bytes", "size", |r| r.partition.size_bytes.to_string())
            .shown_as(|r, _| human(r.partition.size_bytes)),
        P::both("start_alignment", "start on", |r| {
            r.partition.start_alignment.to_string()
        })
        .shown_as(|r, _| human(r.partition.start_alignment)),
        P::both("kernel_offset", "k-off", |r| {
            r.partition.kernel_offset.to_string()
        }),
        P::both("device_block_size", "node-bs", |r| {
            r.partition.device_block_size.to_string()
        }),
        P {
            csv: None,
            title: Some("parted opt/min"),
            raw: |r| {
                format!(
                    "{}/{}",
                    yes(r.partition.tools.parted_optimal),
                    yes(r.partition.tools.parted_minimal)
                )
            },
            shown: None,
        },
        P::csv_only("parted_optimal", |r| {
            r.partition.tools.parted_optimal.to_string()
        }),
        P::csv_only("parted_minimal", |r| {
            r.partition.tools.parted_minimal.to_string()
        }),
        P::both("fdisk", "fdisk", |r| r.partition.tools.fdisk.to_string())
            .shown_as(|r, _| yes(r.partition.tools.fdisk).into()),
        P::both("sgdisk", "sgdisk", |r| r.partition.tools.sgdisk.to_string())
            .shown_as(|r, _| yes(r.partition.tools.sgdisk).into()),
        P::both("aligned", "verdict", |r| r.partition.aligned.to_string()).shown_as(|r, st| {
            if r.partition.aligned {
                st.good("aligned")
            } else {
                st.bad("MISALIGNED")
            }
        }),
        P::csv_only("problems", |r| problem_codes(&r.partition.findings)),
    ]
}

fn opt_text<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(T::to_string).unwrap_or_default()
}

/// One row per disk for `topology --format csv`.
pub const DISKS: &[Column<Disk>] = &[
    Column::csv_only("name", |d| d.name.clone()),
    Column::csv_only("device", |d| d.device.display().to_string()),
    Column::csv_only("size_bytes", |d| d.size_bytes.to_string()),
    Column::csv_only("transport", |d| d.transport.as_str().into()),
    Column::csv_only("logical_block_size", |d| {
        d.topology.logical_block_size.to_string()
    }),
    Column::csv_only("physical_block_size", |d| {
        d.topology.physical_block_size.to_string()
    }),
    Column::csv_only("minimum_io_size", |d| {
        d.topology.minimum_io_size.to_string()
    }),
    Column::csv_only("optimal_io_size", |d| {
        d.topology.optimal_io_size.to_string()
    }),
    Column::csv_only("alignment_offset", |d| {
        d.topology.alignment_offset.to_string()
    }),
    Column::csv_only("discard_granularity", |d| {
        d.topology.discard_granularity.to_string()
    }),
    Column::csv_only("discard_alignment", |d| {
        d.topology.discard_alignment.to_string()
    }),
    Column::csv_only("rotational", |d| opt_text(&d.rotational)),
    Column::csv_only("removable", |d| opt_text(&d.removable)),
    Column::csv_only("vendor", |d| opt_text(&d.vendor)),
    Column::csv_only("model", |d| opt_text(&d.model)),
    Column::csv_only("serial", |d| opt_text(&d.serial)),
    Column::csv_only("problems", |d| problem_codes(&d.findings)),
];

fn opt4(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.4}")).unwrap_or_default()
}

/// A probe cell with the run it belongs to (its CSV row names the target,
/// the device, the seed and the time, so two files can be told apart).
pub struct CellRow<'a> {
    pub report: &'a ProbeReport,
    /// The target the cell belongs to (one of several, perhaps).
    pub target: &'a TargetInfo,
    pub environment: &'a Environment,
    pub cell: &'a CellReport,
}

type C<'a> = Column<CellRow<'a>>;

/// One row per probe cell (`probe --format csv`, `--csv FILE`).
pub fn cells<'a>() -> Vec<C<'a>> {
    vec![
        C::csv_only("pattern", |r| r.cell.cell.pattern.as_str().into()),
        C::csv_only("block_size", |r| r.cell.cell.block_size.to_string()),
        C::csv_only("offset", |r| r.cell.cell.offset.to_string()),
        C::csv_only("iops_median", |r| format!("{:.1}", r.cell.iops.median)),
        C::csv_only("iops_ci95_lo", |r| format!("{:.1}", r.cell.iops.ci95[0])),
        C::csv_only("iops_ci95_hi", |r| format!("{:.1}", r.cell.iops.ci95[1])),
        C::csv_only("mib_s_median", |r| format!("{:.3}", r.cell.mib_s.median)),
        C::csv_only("lat_us_p50", |r| format!("{:.2}", r.cell.lat_us.p50)),
        C::csv_only("lat_us_p99", |r| format!("{:.2}", r.cell.lat_us.p99)),
        C::csv_only("lat_us_p999", |r| format!("{:.2}", r.cell.lat_us.p999)),
        C::csv_only("ratio", |r| opt4(r.cell.relative.as_ref().map(|x| x.ratio))),
        C::csv_only("ratio_ci95_lo", |r| {
            opt4(r.cell.relative.as_ref().map(|x| x.ci95[0]))
        }),
        C::csv_only("ratio_ci95_hi", |r| {
            opt4(r.cell.relative.as_ref().map(|x| x.ci95[1]))
        }),
        C::csv_only("p_adjusted", |r| {
            opt4(r.cell.relative.as_ref().map(|x| x.p_adjusted))
        }),
        C::csv_only("significant", |r| {
            r.cell
                .relative
                .as_ref()
                .map(|x| x.significant.to_string())
                .unwrap_or_default()
        }),
        C::csv_only("decision", |r| {
            r.cell
                .relative
                .as_ref()
                .map(|x| x.decision.as_str().to_string())
                .unwrap_or_default()
        }),
        C::csv_only("rounds", |r| r.cell.rounds.len().to_string()),
        C::csv_only("target", |r| r.target.path.display().to_string()),
        C::csv_only("disk", |r| opt_text(&r.environment.disk)),
        C::csv_only("model", |r| opt_text(&r.environment.model)),
        C::csv_only("firmware", |r| opt_text(&r.environment.firmware)),
        C::csv_only("seed", |r| r.report.plan.seed.to_string()),
        C::csv_only("started_unix", |r| r.report.started_unix.to_string()),
        C::csv_only("partial", |r| r.report.partial.to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/csv.md names every CSV column.
    #[test]
    fn every_csv_column_is_documented() {
        let doc = include_str!("../../docs/csv.md");
        let names = partitions()
            .iter()
            .filter_map(|c| c.csv)
            .chain(DISKS.iter().filter_map(|c| c.csv))
            .chain(cells().iter().filter_map(|c| c.csv))
            .collect::<Vec<_>>();
        for n in names {
            assert!(doc.contains(&format!("`{n}`")), "docs/csv.md lacks {n}");
        }
    }

    #[test]
    fn fields_are_quoted_when_needed() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
