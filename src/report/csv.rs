//! CSV for every command, from the shared column model: `check` one row
//! per partition, `topology` one row per disk, `probe` one row per cell.
//! Targets that could not be read are on stderr, as for every format.

use super::columns::{self, PartitionRow, DISKS};
use super::Exporter;
use crate::check::CheckRun;
use crate::probe::report::ProbeReport;
use crate::topology::Survey;

/// CSV with the columns `-o` asked for (None: every CSV column).
pub struct Csv {
    pub columns: Option<Vec<String>>,
}

impl Exporter for Csv {
    fn check(&self, run: &CheckRun) -> String {
        let rows: Vec<PartitionRow> = run
            .targets
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(move |p| PartitionRow {
                    target: t,
                    partition: p,
                })
            })
            .collect();
        columns::csv(
            &columns::partitions(),
            &rows.iter().collect::<Vec<_>>(),
            self.columns.as_deref(),
        )
    }

    fn topology(&self, survey: &Survey) -> String {
        columns::csv(DISKS, &survey.disks.iter().collect::<Vec<_>>(), None)
    }

    // Replaced by the compare branch's rendering.
    fn compare(&self, _c: &crate::compare::Comparison) -> String {
        String::new()
    }

    fn probe(&self, report: &ProbeReport) -> String {
        probe(report)
    }
}

/// `probe --csv FILE` and `probe --format csv`: one row per cell.
pub fn probe(report: &ProbeReport) -> String {
    let mut rows: Vec<columns::CellRow> = Vec::new();
    if report.targets.is_empty() {
        rows.extend(report.cells.iter().map(|cell| columns::CellRow {
            report,
            target: &report.target,
            environment: &report.environment,
            cell,
        }));
    }
    for t in &report.targets {
        rows.extend(t.cells.iter().map(|cell| columns::CellRow {
            report,
            target: &t.target,
            environment: &t.environment,
            cell,
        }));
    }
    columns::csv(&columns::cells(), &rows.iter().collect::<Vec<_>>(), None)
}
