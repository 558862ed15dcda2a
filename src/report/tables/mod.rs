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
pub use plan::{new_partitions, plan_partitions, plan_rows, NewPartition, PlanRow};
pub use probe::{cell_rows, cells, erase_columns, erase_rows, Iops, Versus};
pub use topology::DISKS;
pub use watch::{
    histogram, leg_rows, span, submitter_rows, unless_zoned, watch_buckets, watch_devices,
    watch_latency, watch_legs, watch_rows, watch_submitters,
};

use super::columns::{self, Column};
use super::style::Style;
use super::Listed;
use crate::compare::Comparison;
use crate::findings::Finding;

/// A table whose columns `-o` picks: a command's one table, or one of
/// the two `compare` and `plan` have (which one is known from the runs
/// compared, from `--new`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Check,
    Topology,
    Probe,
    /// `compare` of two probe runs: the cells both measured.
    ProbeRuns,
    /// `compare` of two check or two watch runs: the findings changed.
    FindingRuns,
    Plan,
    /// `plan --new`: the layout proposed.
    NewDisk,
}

impl Table {
    /// The tables of a command, as `--list-columns` and `--help` show them.
    pub fn of(listed: Listed) -> &'static [Table] {
        match listed {
            Listed::Check => &[Table::Check],
            Listed::Topology => &[Table::Topology],
            Listed::Probe => &[Table::Probe],
            Listed::Compare => &[Table::ProbeRuns, Table::FindingRuns],
            Listed::Plan => &[Table::Plan, Table::NewDisk],
        }
    }

    /// The table of compare's `-o` for the runs compared.
    pub fn compared(c: &Comparison) -> Table {
        match c {
            Comparison::Probe(_) => Table::ProbeRuns,
            Comparison::Check(_) | Comparison::Watch(_) => Table::FindingRuns,
        }
    }

    /// The command, as `COMMAND --list-columns` names it.
    pub fn command(self) -> &'static str {
        match self {
            Table::Check => "check",
            Table::Topology => "topology",
            Table::Probe => "probe",
            Table::ProbeRuns | Table::FindingRuns => "compare",
            Table::Plan | Table::NewDisk => "plan",
        }
    }

    /// The table as a refusal names it: the command, or which of its two.
    pub fn name(self) -> &'static str {
        match self {
            Table::ProbeRuns => "compare of two probe runs",
            Table::FindingRuns => "compare of two check or watch runs",
            Table::NewDisk => "plan --new",
            t => t.command(),
        }
    }

    /// What a command with two tables calls this one in `--help`.
    fn which(self) -> Option<&'static str> {
        match self {
            Table::ProbeRuns => Some("two probe runs"),
            Table::FindingRuns => Some("two check or watch runs"),
            Table::NewDisk => Some("plan --new"),
            _ => None,
        }
    }

    /// Every column `-o` accepts: (id, title).
    pub fn ids(self) -> Vec<(String, String)> {
        self.ask(Ids)
    }

    /// The columns `-o` named (`COL`, `+COL`, by id or title, in any
    /// case) as this table's ids, or the one line that refuses a name it
    /// has not.
    pub fn named(self, asked: Option<&[String]>) -> Result<Option<Vec<String>>, String> {
        asked
            .map(|a| columns::resolve(a, &self.ids(), self.name(), self.command()))
            .transpose()
    }

    /// Its `--list-columns` section.
    fn list(self, st: &Style) -> String {
        let of = match self.which() {
            Some(w) if self.command() == "compare" => format!("`compare` of {w}"),
            Some(w) => format!("`{w}`"),
            None => format!("`{}`", self.command()),
        };
        self.ask(List(&of, st))
    }

    /// Its part of `--help` and the man page.
    fn help(self) -> String {
        self.ask(Help(self.which()))
    }

    /// `ask`'s answer about this table's column list (each list has a row
    /// type of its own).
    fn ask<A: Ask>(self, ask: A) -> A::Answer {
        match self {
            Table::Check => ask.of(&partitions()),
            Table::Topology => ask.of(DISKS),
            Table::Probe => ask.of(&cells()),
            Table::ProbeRuns => ask.of(&ratios()),
            Table::FindingRuns => ask.of(&changes()),
            Table::Plan => ask.of(&plan_partitions()),
            Table::NewDisk => ask.of(&new_partitions()),
        }
    }
}

/// Something asked of a column list, whatever its row type.
trait Ask {
    type Answer;
    fn of<R: ?Sized>(&self, cols: &[Column<R>]) -> Self::Answer;
}

/// The (id, title) of every column.
struct Ids;

impl Ask for Ids {
    type Answer = Vec<(String, String)>;
    fn of<R: ?Sized>(&self, cols: &[Column<R>]) -> Self::Answer {
        columns::ids(cols)
    }
}

/// The `--list-columns` section, headed "Columns of OF".
struct List<'a>(&'a str, &'a Style);

impl Ask for List<'_> {
    type Answer = String;
    fn of<R: ?Sized>(&self, cols: &[Column<R>]) -> String {
        columns::list(cols, self.0, self.1)
    }
}

/// The `--help` paragraphs, naming the table where a command has two.
struct Help(Option<&'static str>);

impl Ask for Help {
    type Answer = String;
    fn of<R: ?Sized>(&self, cols: &[Column<R>]) -> String {
        columns::help(cols, self.0)
    }
}

/// `COMMAND --list-columns`: each table's columns, a blank line between
/// two tables.
pub fn list(listed: Listed, st: &Style) -> String {
    let each: Vec<String> = Table::of(listed).iter().map(|t| t.list(st)).collect();
    each.join("\n")
}

/// `COMMAND --help` and its part of the man page: each table's columns.
pub fn columns_help(listed: Listed) -> String {
    let each: Vec<String> = Table::of(listed).iter().map(|t| t.help()).collect();
    each.join("\n")
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
        let ids = Table::Topology.ids();
        assert_eq!(
            resolve(&["+model".into()], &ids, "topology", "topology"),
            Ok(vec!["+model".to_string()])
        );
        let e = resolve(&["number".into()], &ids, "topology", "topology").unwrap_err();
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
            resolve(&typed, &Table::Topology.ids(), "topology", "topology").unwrap(),
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
            resolve(&typed, &Table::Check.ids(), "check", "check").unwrap(),
            ["number", "parted", "aligned"]
        );
    }

    /// Every table `-o` picks from names each column once and says what
    /// it means (`--list-columns`, `--help`).
    #[test]
    fn every_column_of_every_table_is_explained_once() {
        let all = [
            Table::Check,
            Table::Topology,
            Table::Probe,
            Table::ProbeRuns,
            Table::FindingRuns,
            Table::Plan,
            Table::NewDisk,
        ];
        for t in all {
            let ids = t.ids();
            let mut seen: Vec<&str> = ids.iter().map(|(id, _)| id.as_str()).collect();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len(), ids.len(), "{t:?} names a column twice");
            let help = t.help();
            for (id, _) in &ids {
                let para = help
                    .lines()
                    .find(|l| l.starts_with(&format!("{id} (")))
                    .unwrap_or_else(|| panic!("{t:?}: no {id} in {help}"));
                assert!(!para.ends_with("): "), "{t:?}: {id} says nothing");
            }
        }
    }

    /// compare's and plan's two tables each: the one `-o` picks from is
    /// named in a refusal, and `--list-columns` lists both.
    #[test]
    fn a_command_with_two_tables_lists_both() {
        let st = Style::plain();
        let text = list(Listed::Compare, &st);
        assert!(
            text.starts_with("Columns of `compare` of two probe runs (-o"),
            "{text}"
        );
        assert!(
            text.contains("\n\nColumns of `compare` of two check or watch runs (-o"),
            "{text}"
        );
        let text = list(Listed::Plan, &st);
        assert!(text.contains("\n\nColumns of `plan --new` (-o"), "{text}");
        let ids = Table::FindingRuns.ids();
        let e = resolve(
            &["ratio".into()],
            &ids,
            Table::FindingRuns.name(),
            "compare",
        )
        .unwrap_err();
        assert!(
            e.starts_with("\"ratio\" is not a column of compare of two check or watch runs; compare --list-columns names them (change, "),
            "{e}"
        );
        assert_eq!(
            resolve(&["A".into(), "where".into()], &ids, "c", "compare").unwrap(),
            ["severity_a", "where"]
        );
        let typed = ["BS".to_string(), "iops".into(), "vs-0".into()];
        assert_eq!(
            resolve(&typed, &Table::Probe.ids(), "probe", "probe").unwrap(),
            ["block_size", "iops_median", "ratio"]
        );
    }
}
