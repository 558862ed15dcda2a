//! `probe --csv FILE`: one row per cell, for spreadsheets and plotting.

use crate::probe::report::ProbeReport;
use std::fmt::Write;

pub const HEADER: &str = "pattern,block_size,offset,iops_median,iops_ci95_lo,iops_ci95_hi,mib_s_median,lat_us_p50,lat_us_p99,lat_us_p999,ratio,ratio_ci95_lo,ratio_ci95_hi,p_adjusted,significant";

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.4}")).unwrap_or_default()
}

pub fn probe(r: &ProbeReport) -> String {
    let mut s = String::from(HEADER);
    s.push('\n');
    for c in &r.cells {
        let rel = c.relative.as_ref();
        let _ = writeln!(
            s,
            "{},{},{},{:.1},{:.1},{:.1},{:.3},{:.2},{:.2},{:.2},{},{},{},{},{}",
            c.cell.pattern.as_str(),
            c.cell.block_size,
            c.cell.offset,
            c.iops.median,
            c.iops.ci95[0],
            c.iops.ci95[1],
            c.mib_s.median,
            c.lat_us.p50,
            c.lat_us.p99,
            c.lat_us.p999,
            opt(rel.map(|x| x.ratio)),
            opt(rel.map(|x| x.ci95[0])),
            opt(rel.map(|x| x.ci95[1])),
            opt(rel.map(|x| x.p_adjusted)),
            rel.map(|x| x.significant.to_string()).unwrap_or_default(),
        );
    }
    s
}
