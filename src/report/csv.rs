//! CSV for every command, from the shared column model: `check` one row
//! per partition (and one per target without partitions or not checked,
//! with its `error`), `topology` one row per disk, `probe` one row per
//! cell, `compare` one row per cell compared or per finding changed,
//! `watch` one row per device, direction and request-size bucket.
//! Targets that could not be read are on stderr too, as for every format.

use super::columns;
use super::tables::{self, DISKS};
use super::Exporter;
use crate::check::CheckRun;
use crate::compare::Comparison;
use crate::probe::outcome::ProbeRun;
use crate::topology::Survey;

/// CSV with the columns `-o` asked for (None: every CSV column), with
/// its header line unless `-n`.
pub struct Csv {
    pub columns: Option<Vec<String>>,
    pub headings: bool,
}

impl Exporter for Csv {
    fn check(&self, run: &CheckRun) -> Option<String> {
        let rows = tables::target_rows(run);
        Some(columns::csv_with(
            &tables::partitions(),
            &rows.iter().collect::<Vec<_>>(),
            self.columns.as_deref(),
            self.headings,
        ))
    }

    fn topology(&self, survey: &Survey) -> Option<String> {
        Some(columns::csv_with(
            DISKS,
            &survey.disks.iter().collect::<Vec<_>>(),
            self.columns.as_deref(),
            self.headings,
        ))
    }

    fn probe(&self, report: &ProbeRun) -> Option<String> {
        Some(probe(report))
    }

    fn compare(&self, comparison: &Comparison) -> Option<String> {
        Some(compare(comparison))
    }

    fn watch(&self, run: &crate::watch::WatchRun) -> Option<String> {
        let rows = tables::watch_rows(run);
        Some(columns::csv_with(
            &tables::watch_buckets(),
            &rows.iter().collect::<Vec<_>>(),
            self.columns.as_deref(),
            self.headings,
        ))
    }
}

/// `compare --format csv`: one row per cell both probe runs measured, or
/// one row per finding that appeared, disappeared or changed.
pub fn compare(comparison: &Comparison) -> String {
    match comparison {
        Comparison::Probe(p) => {
            let rows = tables::ratio_rows(p, &p.cells);
            columns::csv(&tables::ratios(), &rows.iter().collect::<Vec<_>>(), None)
        }
        Comparison::Check(c) => columns::csv(
            &tables::changes(),
            &c.changes.iter().collect::<Vec<_>>(),
            None,
        ),
        Comparison::Watch(w) => columns::csv(
            &tables::changes(),
            &w.changes.iter().collect::<Vec<_>>(),
            None,
        ),
    }
}

/// `probe --csv FILE` and `probe --format csv`: one row per cell.
pub fn probe(report: &ProbeRun) -> String {
    let mut rows: Vec<tables::CellRow> = Vec::new();
    if report.targets.is_empty() {
        rows.extend(report.cells.iter().map(|cell| tables::CellRow {
            report,
            target: &report.target,
            environment: &report.environment,
            cell,
        }));
    }
    for t in &report.targets {
        rows.extend(t.cells.iter().map(|cell| tables::CellRow {
            report,
            target: &t.target,
            environment: &t.environment,
            cell,
        }));
    }
    columns::csv(&tables::cells(), &rows.iter().collect::<Vec<_>>(), None)
}

#[cfg(test)]
mod tests {
    use crate::compare::fixtures;

    #[test]
    fn a_comparison_is_one_row_per_cell_or_change() {
        let text = super::compare(&fixtures::slower());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("target,pattern,block_size,offset,a_iops,b_iops"));
        assert!(lines[1].starts_with("/dev/sdb,randwrite,4096,0,"), "{text}");
        assert!(lines[1].ends_with(",true,slower"), "{text}");
        let text = super::compare(&fixtures::fixed());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "change,target,partition,layer,code,severity_a,severity_b,message_a,message_b"
        );
        assert_eq!(
            lines[1],
            "disappeared,disk.img,1,,start-not-4k,warning,,starts at 32256,"
        );
        assert_eq!(lines.len(), 3);
    }
}
