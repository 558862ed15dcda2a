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
use crate::compare::FindingChange;
use crate::probe::ProbeRun;
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
        Some(probe(report, self.columns.as_deref(), self.headings))
    }

    fn compare(&self, comparison: &Comparison) -> Option<String> {
        Some(compare(comparison, self.columns.as_deref(), self.headings))
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

/// `compare --format csv` of the columns `picked` (None: every CSV
/// column), with its header unless `headings` is false: one row per cell
/// both probe runs measured, or one row per finding that appeared,
/// disappeared or changed.
pub fn compare(comparison: &Comparison, picked: Option<&[String]>, headings: bool) -> String {
    let changes = |rows: &[FindingChange]| {
        let rows: Vec<&FindingChange> = rows.iter().collect();
        columns::csv_with(&tables::changes(), &rows, picked, headings)
    };
    match comparison {
        Comparison::Probe(p) => {
            let rows = tables::ratio_rows(p, &p.cells);
            let rows: Vec<_> = rows.iter().collect();
            columns::csv_with(&tables::ratios(), &rows, picked, headings)
        }
        Comparison::Check(c) => changes(&c.changes),
        Comparison::Watch(w) => changes(&w.changes),
    }
}

/// `probe --csv FILE` and `probe --format csv`: one row per cell, of the
/// columns `picked` (None: every CSV column), with its header unless
/// `headings` is false.
pub fn probe(report: &ProbeRun, picked: Option<&[String]>, headings: bool) -> String {
    let rows = tables::cell_rows(report);
    let rows: Vec<_> = rows.iter().collect();
    columns::csv_with(&tables::cells(), &rows, picked, headings)
}

#[cfg(test)]
mod tests {
    use crate::compare::fixtures;

    #[test]
    fn a_comparison_is_one_row_per_cell_or_change() {
        let text = super::compare(&fixtures::slower(), None, true);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("target,pattern,block_size,offset,a_iops,b_iops"));
        assert!(lines[1].starts_with("/dev/sdb,randwrite,4096,0,"), "{text}");
        assert!(lines[1].ends_with(",true,slower"), "{text}");
        let text = super::compare(&fixtures::fixed(), None, true);
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

    /// `-o` and `-n` pick the comparison's CSV columns, as check's.
    #[test]
    fn a_comparisons_csv_takes_the_columns_picked() {
        let picked = ["code".to_string(), "change".into()];
        let text = super::compare(&fixtures::fixed(), Some(&picked), false);
        assert_eq!(
            text,
            "start-not-4k,disappeared\nlayout-not-portable,appeared\n"
        );
        let picked = ["decision".to_string(), "block_size".into()];
        let text = super::compare(&fixtures::slower(), Some(&picked), true);
        assert!(
            text.starts_with("decision,block_size\nslower,4096\n"),
            "{text}"
        );
    }
}
