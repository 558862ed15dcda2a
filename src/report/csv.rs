//! CSV for every command, from the shared column model: `check` one row
//! per partition, `topology` one row per disk, `probe` one row per cell.
//! Targets that could not be read are on stderr, as for every format.

use super::columns::{self, PartitionRow, DISKS};
use super::Exporter;
use crate::check::CheckRun;
use crate::probe::report::ProbeReport;
use crate::topology::Survey;

pub struct Csv;

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
        columns::csv(&columns::partitions(), &rows.iter().collect::<Vec<_>>())
    }

    fn topology(&self, survey: &Survey) -> String {
        columns::csv(DISKS, &survey.disks.iter().collect::<Vec<_>>())
    }

    fn probe(&self, report: &ProbeReport) -> String {
        probe(report)
    }
}

/// `probe --csv FILE` and `probe --format csv`: one row per cell.
pub fn probe(report: &ProbeReport) -> String {
    let rows: Vec<columns::CellRow> = report
        .cells
        .iter()
        .map(|cell| columns::CellRow { report, cell })
        .collect();
    columns::csv(&columns::cells(), &rows.iter().collect::<Vec<_>>())
}
