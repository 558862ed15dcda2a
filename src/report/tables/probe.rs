//! `probe`'s table: one row per cell, the CSV's rows, which `-o` picks
//! the columns of (the human report draws its grids instead); and the
//! entries of those grids.

use super::{opt4, opt_text};
use crate::probe::Environment;
use crate::probe::{CandidateReport, CellReport, Place};
use crate::probe::{ProbeRun, TargetInfo};
use crate::report::columns::{offset_label, Column, Entry};
use crate::report::style::Style;
use crate::units::human;

/// A probe cell with the run it belongs to (its CSV row names the target,
/// the device, the seed and the time, so two files can be told apart).
pub struct CellRow<'a> {
    pub report: &'a ProbeRun,
    /// The target the cell belongs to (one of several, perhaps).
    pub target: &'a TargetInfo,
    pub environment: &'a Environment,
    pub cell: &'a CellReport,
}

/// Every cell of a run, target by target: the rows of the CSV and of
/// `probe -o`'s table.
pub fn cell_rows(report: &ProbeRun) -> Vec<CellRow<'_>> {
    let mut rows: Vec<CellRow> = Vec::new();
    if report.targets.is_empty() {
        rows.extend(report.cells.iter().map(|cell| CellRow {
            report,
            target: &report.target,
            environment: &report.environment,
            cell,
        }));
    }
    for t in &report.targets {
        rows.extend(t.cells.iter().map(|cell| CellRow {
            report,
            target: &t.target,
            environment: &t.environment,
            cell,
        }));
    }
    rows
}

type C<'a> = Column<CellRow<'a>>;

/// A value of the cell against the aligned cell of its pattern and block
/// size (`relative`); empty for the aligned cell itself.
fn rel(r: &CellRow, f: fn(&crate::probe::Relative) -> String) -> String {
    r.cell.relative.as_ref().map(f).unwrap_or_default()
}

/// One row per probe cell: `probe --format csv`, `--csv FILE`, and the
/// table `-o`, `-n`, `-r` and `-P` print (the columns shown in it by
/// default are the cell and its figures; the run's are in the CSV).
pub fn cells<'a>() -> Vec<C<'a>> {
    vec![
        C::both("pattern", "pattern", |r| r.cell.cell.pattern.as_str().into())
            .help("the access pattern: randread, randwrite"),
        C::both("block_size", "bs", |r| r.cell.cell.block_size.to_string())
            .shown_as(|r, _| human(u64::from(r.cell.cell.block_size)))
            .size()
            .help("the block size of each I/O (bytes in CSV and with -b)"),
        C::both("offset", "offset", |r| r.cell.cell.offset.to_string())
            .shown_as(|r, _| offset_label(r.cell.cell.offset))
            .num()
            .help("the bytes each I/O starts past an aligned boundary (0: aligned; the table writes 63.5K for 65024)"),
        C::both("iops_median", "IOPS", |r| format!("{:.1}", r.cell.iops.median))
            .shown_as(|r, _| si(r.cell.iops.median))
            .num()
            .help("the median IOPS over the rounds (the table writes 12.3k for 12345.6)"),
        C::csv_only("iops_ci95_lo", |r| format!("{:.1}", r.cell.iops.ci95[0]))
            .titled("IOPS lo")
            .num()
            .help("the lower end of the median IOPS's 95 % interval"),
        C::csv_only("iops_ci95_hi", |r| format!("{:.1}", r.cell.iops.ci95[1]))
            .titled("IOPS hi")
            .num()
            .help("the upper end of the median IOPS's 95 % interval"),
        C::both("mib_s_median", "MiB/s", |r| format!("{:.3}", r.cell.mib_s.median))
            .shown_as(|r, _| format!("{:.1}", r.cell.mib_s.median))
            .num()
            .help("the median throughput in MiB/s"),
        C::both("lat_us_p50", "p50 us", |r| format!("{:.2}", r.cell.lat_us.p50))
            .num()
            .help("the median latency of an I/O, in microseconds"),
        C::both("lat_us_p99", "p99 us", |r| format!("{:.2}", r.cell.lat_us.p99))
            .num()
            .help("the 99th percentile of the latency, in microseconds"),
        C::csv_only("lat_us_p999", |r| format!("{:.2}", r.cell.lat_us.p999))
            .titled("p99.9 us")
            .num()
            .help("the 99.9th percentile of the latency, in microseconds"),
        C::both("ratio", "vs 0", |r| opt4(r.cell.relative.as_ref().map(|x| x.ratio)))
            .shown_as(|r, st| {
                r.cell
                    .relative
                    .as_ref()
                    .map_or("-".into(), |x| percent(x.ratio, x.significant, st))
            })
            .num()
            .help("the IOPS against the aligned cell (offset 0) of the same pattern and block size: B/A in CSV (0.7900), the difference in the table (-21%, starred when decided); empty for the aligned cell"),
        C::csv_only("ratio_ci95_lo", |r| opt4(r.cell.relative.as_ref().map(|x| x.ci95[0])))
            .titled("vs 0 lo")
            .num()
            .help("the lower end of the ratio's 95 % interval"),
        C::csv_only("ratio_ci95_hi", |r| opt4(r.cell.relative.as_ref().map(|x| x.ci95[1])))
            .titled("vs 0 hi")
            .num()
            .help("the upper end of the ratio's 95 % interval"),
        C::csv_only("p_adjusted", |r| opt4(r.cell.relative.as_ref().map(|x| x.p_adjusted)))
            .titled("p adj")
            .num()
            .help("the ratio's p-value, adjusted for every comparison and look (docs/probe.md)"),
        C::csv_only("significant", |r| rel(r, |x| x.significant.to_string()))
            .flag()
            .help("true when the ratio was decided slower or faster (1 with -r and -P)"),
        C::both("decision", "decision", |r| rel(r, |x| x.decision.as_str().to_string()))
            .help("slower, faster, fine or open (docs/probe.md); empty for the aligned cell"),
        C::both("rounds", "rounds", |r| r.cell.rounds.len().to_string())
            .num()
            .help("the rounds this cell ran (a comparison stops once decided)"),
        C::csv_only("target", |r| r.target.path.display().to_string())
            .help("the path probed; the table's first column when a run has several targets"),
        C::csv_only("disk", |r| opt_text(&r.environment.disk))
            .help("the disk's kernel name (sysfs; empty for a file)"),
        C::csv_only("model", |r| opt_text(&r.environment.model))
            .help("the disk's model (sysfs; empty for a file)"),
        C::csv_only("firmware", |r| opt_text(&r.environment.firmware))
            .help("the disk's firmware revision (sysfs; empty for a file)"),
        C::csv_only("seed", |r| r.report.plan.seed.to_string())
            .help("the seed of the random positions and cell order (--seed)"),
        C::csv_only("started_unix", |r| r.report.started_unix.to_string())
            .help("when the run started, in seconds since 1970"),
        C::csv_only("partial", |r| r.report.partial.to_string())
            .flag()
            .help("true when Ctrl-C ended the run (1 with -r and -P)"),
        C::csv_only("erase_candidate", |r| {
            erase_of(r).map_or(String::new(), |(c, _)| c.unit_bytes.to_string())
        })
        .help("probe --erase-unit: the candidate unit whose boundary the cell reads at, in bytes (empty for the grid's cells)"),
        C::csv_only("erase_place", |r| {
            erase_of(r).map_or(String::new(), |(_, p)| p.as_str().into())
        })
        .help("probe --erase-unit: ends-at, across or starts-at, where the cell's reads sit against the boundary"),
        C::csv_only("erase_decision", |r| {
            erase_of(r).map_or(String::new(), |(c, _)| c.decision.as_str().into())
        })
        .help("probe --erase-unit: the candidate's decision (slower, fine or open), the same on its three cells"),
        C::csv_only("erase_unit_bytes", |r| {
            r.report
                .erase_unit
                .as_ref()
                .and_then(|e| e.unit_bytes)
                .map_or(String::new(), |u| u.to_string())
        })
        .help("probe --erase-unit: the unit the search names (bracketed or likely), on every row; empty when it names none"),
    ]
}

/// The erase-unit candidate a cell reads for, and where it reads.
fn erase_of<'a>(r: &CellRow<'a>) -> Option<(&'a CandidateReport, Place)> {
    let e = r.report.erase_unit.as_ref()?;
    e.candidates.iter().find_map(|c| {
        let i = c.offsets.iter().position(|o| *o == r.cell.cell.offset)?;
        Some((c, [Place::EndsAt, Place::Across, Place::StartsAt][i]))
    })
}

/// One candidate of the erase-unit search, with its three cells.
pub struct EraseRow<'a> {
    pub candidate: &'a CandidateReport,
    /// The cells ending at, across and starting at its boundaries.
    pub cells: [Option<&'a CellReport>; 3],
}

/// The erase-unit search's rows, smallest candidate first.
pub fn erase_rows(r: &ProbeRun) -> Vec<EraseRow<'_>> {
    let Some(e) = &r.erase_unit else {
        return Vec::new();
    };
    e.candidates
        .iter()
        .map(|c| EraseRow {
            candidate: c,
            cells: c
                .offsets
                .map(|o| r.cells.iter().find(|x| x.cell.offset == o)),
        })
        .collect()
}

/// The median latency of one of a row's cells, in microseconds.
fn p50(r: &EraseRow, i: usize) -> String {
    r.cells[i].map_or("-".into(), |c| format!("{:.0}", c.lat_us.p50))
}

type E<'a> = Column<EraseRow<'a>>;

/// The erase-unit search's table, in the human report and the HTML page.
pub fn erase_columns<'a>() -> Vec<E<'a>> {
    vec![
        E::both("unit", "boundary", |r| r.candidate.unit_bytes.to_string())
            .shown_as(|r, _| human(r.candidate.unit_bytes))
            .size(),
        E::both("ends_at_us", "ends at us", |r| p50(r, 0)).num(),
        E::both("across_us", "across us", |r| p50(r, 1)).num(),
        E::both("starts_at_us", "starts at us", |r| p50(r, 2)).num(),
        E::both("slower_pct", "across", |r| {
            format!("{:+.1}%", r.candidate.slower_pct)
        })
        .num(),
        E::both("ci95", "95% interval", |r| {
            let c = r.candidate.ci95_pct;
            format!("[{:+.0}, {:+.0}]", c[0], c[1])
        }),
        E::both("decision", "decision", |r| {
            r.candidate.decision.as_str().into()
        }),
        E::both("rounds", "rounds", |r| r.candidate.rounds.to_string()).num(),
    ]
}

/// A cell in the probe's grid: its IOPS at the aligned offset, else its
/// difference from them (starred when decided).
pub struct Iops<'a>(pub &'a CellReport);

impl Entry for Iops<'_> {
    fn raw(&self) -> String {
        match &self.0.relative {
            Some(rel) => format!("{:.4}", rel.ratio),
            None => format!("{:.1}", self.0.iops.median),
        }
    }

    fn shown(&self, st: &Style) -> String {
        match &self.0.relative {
            Some(rel) => percent(rel.ratio, rel.significant, st),
            None => si(self.0.iops.median),
        }
    }
}

/// A cell of a further target against the first target's: the
/// difference, starred when decided.
pub struct Versus<'a>(pub &'a crate::probe::ContrastReport);

impl Entry for Versus<'_> {
    fn raw(&self) -> String {
        format!("{:.4}", self.0.relative.ratio)
    }

    fn shown(&self, st: &Style) -> String {
        percent(self.0.relative.ratio, self.0.relative.significant, st)
    }
}

/// `-21%*`: the difference of `ratio` from 1, starred (and coloured) when
/// decided.
pub fn percent(ratio: f64, significant: bool, st: &Style) -> String {
    let pct = (ratio - 1.0) * 100.0;
    let text = format!("{pct:+.0}%{}", if significant { "*" } else { "" });
    if significant && pct < 0.0 {
        st.bad(&text)
    } else if significant {
        st.good(&text)
    } else {
        st.dim(&text)
    }
}

/// A rate with an SI prefix: `950`, `12.3k`, `1.25M`.
pub fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}
