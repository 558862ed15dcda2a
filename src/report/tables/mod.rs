//! Each command's tables: its rows and its column lists, one file per
//! command, which its human, CSV and HTML exporters all draw from (they
//! are per format; a table is per command, so it lives apart from both
//! the engine and any one format). Each list hands the column engine
//! (`report::columns`), which knows no command, its rows.

mod check;
mod compare;
mod plan;
mod probe;
mod topology;
mod watch;

pub use check::{partition_rows, partitions, target_rows, PartitionRow};
pub use compare::{
    changes, check_targets_compared, env_label, env_rows, environment, ratio_rows, ratios,
    watch_devices_compared, watch_submitters_compared, EnvRow, RATIOS_HTML,
};
pub use plan::{new_partitions, plan_partitions, NewPartition};
pub use probe::{cells, CellRow, Iops, Versus};
pub use topology::DISKS;
pub use watch::{
    histogram, leg_rows, span, submitter_rows, unless_zoned, watch_buckets, watch_devices,
    watch_latency, watch_legs, watch_rows, watch_submitters,
};

use super::columns;
use super::style::Style;
use crate::findings::Finding;

/// `check --list-columns`.
pub fn check_list(st: &Style) -> String {
    columns::list(&partitions(), "`check`", st)
}

/// `topology --list-columns`.
pub fn topology_list(st: &Style) -> String {
    columns::list(DISKS, "`topology`", st)
}

/// `check --help` and its part of the man page.
pub fn check_help() -> String {
    columns::help(&partitions(), None)
}

/// `topology --help` and its part of the man page.
pub fn topology_help() -> String {
    columns::help(DISKS, None)
}

/// Every column `-o` accepts for `check`: (id, title).
pub fn check_ids() -> Vec<(String, String)> {
    columns::ids(&partitions())
}

/// Every column `-o` accepts for `topology`: (id, title).
pub fn topology_ids() -> Vec<(String, String)> {
    columns::ids(DISKS)
}

fn yes(b: bool) -> &'static str {
    if b {
        "ok"
    } else {
        "NO"
    }
}

/// Problem codes of a finding list, space-separated.
fn problem_codes(f: &[Finding]) -> String {
    f.iter()
        .filter(|f| f.is_problem())
        .map(|f| f.code.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn opt_text<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(T::to_string).unwrap_or_default()
}

fn opt4(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.4}")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::columns::resolve;

    /// docs/csv.md names every CSV column.
    #[test]
    fn every_csv_column_is_documented() {
        let doc = include_str!("../../../docs/csv.md");
        let names = partitions()
            .iter()
            .filter(|c| c.csv)
            .map(|c| c.id.to_string())
            .chain(DISKS.iter().filter(|c| c.csv).map(|c| c.id.to_string()))
            .chain(cells().iter().filter(|c| c.csv).map(|c| c.id.to_string()))
            .chain(ratios().iter().filter(|c| c.csv).map(|c| c.id.to_string()))
            .chain(changes().iter().filter(|c| c.csv).map(|c| c.id.to_string()))
            .chain(
                watch_buckets()
                    .iter()
                    .filter(|c| c.csv)
                    .map(|c| c.id.to_string()),
            )
            .collect::<Vec<_>>();
        for n in names {
            assert!(doc.contains(&format!("`{n}`")), "docs/csv.md lacks {n}");
        }
    }

    /// Topology's columns are all known to `-o`, and its default table
    /// is the lsblk -t set.
    #[test]
    fn topology_columns() {
        let shown: Vec<&str> = DISKS.iter().filter(|c| c.human).map(|c| &*c.id).collect();
        assert_eq!(shown[0], "name");
        assert!(shown.contains(&"physical_block_size") && shown.contains(&"problems"));
        let ids = topology_ids();
        assert_eq!(
            resolve(&["+model".into()], &ids, "topology"),
            Ok(vec!["+model".to_string()])
        );
        let e = resolve(&["number".into()], &ids, "topology").unwrap_err();
        assert!(
            e.starts_with("\"number\" is not a column of topology"),
            "{e}"
        );
    }

    /// `-o` takes a column by id, title or key, in any case, as lsblk's
    /// does (`NAME`, `phy-sec`); an id wins over another's title.
    #[test]
    fn columns_are_named_by_id_title_or_key() {
        let typed = ["NAME", "phy-sec", "+MIN-IO", "Size", "physical_block_size"];
        let typed: Vec<String> = typed.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            resolve(&typed, &topology_ids(), "topology").unwrap(),
            [
                "name",
                "physical_block_size",
                "+minimum_io_size",
                "size_bytes",
                "physical_block_size"
            ]
        );
        let typed = ["#".to_string(), "parted-opt/min".into(), "verdict".into()];
        assert_eq!(
            resolve(&typed, &check_ids(), "check").unwrap(),
            ["number", "parted", "aligned"]
        );
    }
}
