//! `compare`'s CSV columns: the cells both probe runs measured, and the
//! findings that changed between two checks.

use super::*;

/// A cell of a probe comparison, with the comparison (for its target's path).
pub struct RatioRow<'a> {
    pub comparison: &'a ProbeComparison,
    pub cell: &'a CellRatio,
}

type RR<'a> = Column<RatioRow<'a>>;

/// One row per cell both runs measured (`compare --format csv`, probe runs).
pub fn ratios<'a>() -> Vec<RR<'a>> {
    vec![
        RR::csv_only("target", |r| {
            r.comparison.target_path(r.cell.key.target).to_string()
        }),
        RR::csv_only("pattern", |r| r.cell.key.pattern.as_str().into()),
        RR::csv_only("block_size", |r| r.cell.key.block_size.to_string()),
        RR::csv_only("offset", |r| r.cell.key.offset.to_string()),
        RR::csv_only("a_iops", |r| format!("{:.1}", r.cell.a_iops)),
        RR::csv_only("b_iops", |r| format!("{:.1}", r.cell.b_iops)),
        RR::csv_only("a_rounds", |r| r.cell.a_rounds.to_string()),
        RR::csv_only("b_rounds", |r| r.cell.b_rounds.to_string()),
        RR::csv_only("ratio", |r| opt4(r.cell.ratio)),
        RR::csv_only("ci_lo", |r| opt4(r.cell.ci95.map(|c| c[0]))),
        RR::csv_only("ci_hi", |r| opt4(r.cell.ci95.map(|c| c[1]))),
        RR::csv_only("ci_level", |r| opt4(r.cell.ci_level)),
        RR::csv_only("p_value", |r| opt4(r.cell.p_value)),
        RR::csv_only("p_adjusted", |r| opt4(r.cell.p_adjusted)),
        RR::csv_only("significant", |r| r.cell.significant.to_string()),
        RR::csv_only("decision", |r| r.cell.decision.as_str().into()),
    ]
}

type FC = Column<FindingChange>;

/// One row per finding that appeared, disappeared or changed
/// (`compare --format csv`, check runs).
pub fn changes() -> Vec<FC> {
    vec![
        FC::csv_only("change", |f| f.change.as_str().into()),
        FC::csv_only("target", |f| opt_text(&f.target)),
        FC::csv_only("partition", |f| opt_text(&f.partition)),
        FC::csv_only("layer", |f| opt_text(&f.layer)),
        FC::csv_only("code", |f| f.code.clone()),
        FC::csv_only("severity_a", |f| opt_text(&f.severity_a)),
        FC::csv_only("severity_b", |f| opt_text(&f.severity_b)),
        FC::csv_only("message_a", |f| opt_text(&f.message_a)),
        FC::csv_only("message_b", |f| opt_text(&f.message_b)),
    ]
}
