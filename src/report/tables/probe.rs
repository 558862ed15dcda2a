//! `probe`'s CSV columns: one row per cell.

use super::{opt4, opt_text};
use crate::probe::env::Environment;
use crate::probe::outcome::{ProbeRun, TargetInfo};
use crate::probe::results::CellReport;
use crate::report::columns::{Column, Entry};
use crate::report::style::Style;

/// A probe cell with the run it belongs to (its CSV row names the target,
/// the device, the seed and the time, so two files can be told apart).
pub struct CellRow<'a> {
    pub report: &'a ProbeRun,
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
pub struct Versus<'a>(pub &'a crate::probe::results::ContrastReport);

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
