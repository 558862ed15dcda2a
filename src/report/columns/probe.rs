//! `probe`'s CSV columns: one row per cell.

use super::*;

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
