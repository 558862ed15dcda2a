//! Every output goes through one interface: an [`Exporter`] per format
//! (human, JSON, CSV, HTML, Prometheus, the plan's script), like
//! hyperfine's exporters; a command's result is one [`Run`], and `cli`
//! writes it in each (format, destination) pair asked for. The human table and the
//! CSV share one column model, like lsblk's `colinfo`, so a column added
//! there shows in both: each command's lists in [`tables`], drawn by the
//! engine in [`columns`], which knows no command. The JSON documents are a public,
//! versioned interface (docs/json.md): fields are only ever added.
//! Which kind of run has which format is one table, [`Kind::formats`].

mod columns;
mod csv;
mod html;
mod human;
mod json;
mod plan;
mod progress;
mod prometheus;
mod script;
mod style;
mod tables;

/// The self-contained HTML page of saved runs, and its figures.
pub use html::{html_figures, render_html, Input};
/// `watch`'s live screen.
pub use human::{cost_lines, watch_live};
/// Each command's JSON document.
pub use json::{check_json, compare_json, plan_json, probe_json, topology_json, watch_json};
/// The progress bar of long runs.
pub use progress::Progress;
/// The plan's shell script.
pub use script::{render_new_disk_script, render_script};
/// How output looks: colour, table form, the view of a run.
pub use style::{ColorChoice, TableForm, TableMode, View};
/// The tables `-o` picks columns of, and their help.
pub use tables::{columns_help, Table};

use crate::check::CheckRun;
use crate::compare::Comparison;
use crate::plan::NewDisk;
use crate::plan::PlanRun;
use crate::probe::ProbeRun;
use crate::topology::Survey;
use crate::watch::WatchRun;
pub use style::Style;

/// A target as people count it: `target 1` for the JSON's index 0. A
/// saved document's index may be anything, up to usize::MAX.
pub fn target_label(index: usize) -> String {
    format!("target {}", index.saturating_add(1))
}

/// Where and when a run was made: the `host` and `started_at` of every
/// JSON document (and so of every page), and the Prometheus run time.
/// Taken once when the command starts, so every output of a run agrees.
#[derive(Clone, Debug, PartialEq)]
pub struct Stamp {
    /// The host name (uname's nodename).
    pub host: String,
    pub started: std::time::SystemTime,
}

impl Stamp {
    /// When the run started, in whole seconds since 1970.
    pub fn started_unix(&self) -> u64 {
        self.started
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }

    /// When the run started, RFC 3339 in UTC: `2026-11-22T21:04:35Z`.
    pub fn started_at(&self) -> String {
        crate::units::rfc3339(self.started_unix())
    }
}

/// The output formats. Standard output gets one (`--format`); `--json`,
/// `--csv`, `--html`, `--prometheus` and plan's `--script` add files in
/// more of them. Which command has which is [`Kind::formats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Tables and sentences for people.
    Human,
    /// One JSON document (docs/json.md).
    Json,
    /// One header line and one row per partition, disk or cell.
    Csv,
    /// One self-contained HTML page with figures (docs/html.md).
    Html,
    /// Prometheus metrics, node_exporter's textfile format
    /// (docs/prometheus.md); a file only (`--prometheus FILE`).
    #[value(skip)]
    Prometheus,
    /// The plan as a POSIX sh script (docs/plan.md); a file only
    /// (`plan --script FILE`).
    #[value(skip)]
    Script,
}

crate::spelled_as_serde!(Format);

impl Format {
    /// How people name it in a refusal: `CSV`, `HTML`, `Prometheus`.
    pub fn title(self) -> &'static str {
        match self {
            Format::Human => "human",
            Format::Json => "JSON",
            Format::Csv => "CSV",
            Format::Html => "HTML",
            Format::Prometheus => "Prometheus",
            Format::Script => "script",
        }
    }
}

/// Whose columns `--list-columns` lists (`tables::Table::of` its tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listed {
    Check,
    Topology,
    Probe,
    Compare,
    Plan,
}

/// What a plan run hands its exporters: the plan, and the check of the
/// disks as they are now (the HTML page draws each disk before and after).
#[derive(Clone, Copy)]
pub struct Planned<'a> {
    pub plan: &'a PlanRun,
    pub now: &'a CheckRun,
}

/// What a command produced, for every output of it.
#[derive(Clone, Copy)]
pub enum Run<'a> {
    Check(&'a CheckRun),
    Topology(&'a Survey),
    Probe(&'a ProbeRun),
    Compare(&'a Comparison),
    Plan(Planned<'a>),
    NewDisk(&'a NewDisk),
    Columns(Listed),
    Watch(&'a WatchRun),
}

/// The kinds of run, known before the run is made, so an output the
/// command does not have is refused before any work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Check,
    Topology,
    Probe,
    Compare,
    Plan,
    NewDisk,
    Columns,
    Watch,
}

impl Kind {
    /// The formats a kind of run has: the one table of which command
    /// writes what (a unit test holds the exporters to it).
    pub fn formats(self) -> &'static [Format] {
        use Format::*;
        match self {
            Kind::Check | Kind::Topology | Kind::Watch => &[Human, Json, Csv, Html, Prometheus],
            Kind::Probe | Kind::Compare => &[Human, Json, Csv, Html],
            Kind::Plan => &[Human, Json, Html, Script],
            Kind::NewDisk => &[Human, Json, Script],
            Kind::Columns => &[Human],
        }
    }

    /// The command as a refusal names it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Check => "check",
            Kind::Topology => "topology",
            Kind::Probe => "probe",
            Kind::Compare => "compare",
            Kind::Plan => "plan",
            Kind::NewDisk => "plan --new",
            Kind::Columns => "--list-columns",
            Kind::Watch => "watch",
        }
    }
}

impl Run<'_> {
    pub fn kind(&self) -> Kind {
        match self {
            Run::Check(_) => Kind::Check,
            Run::Topology(_) => Kind::Topology,
            Run::Probe(_) => Kind::Probe,
            Run::Compare(_) => Kind::Compare,
            Run::Plan(_) => Kind::Plan,
            Run::NewDisk(_) => Kind::NewDisk,
            Run::Columns(_) => Kind::Columns,
            Run::Watch(_) => Kind::Watch,
        }
    }

    /// The run in `out`'s format; None when the format has no form of it.
    pub fn export(&self, out: &dyn Exporter) -> Option<String> {
        match *self {
            Run::Check(r) => out.check(r),
            Run::Topology(s) => out.topology(s),
            Run::Probe(r) => out.probe(r),
            Run::Compare(c) => out.compare(c),
            Run::Plan(p) => out.plan(p),
            Run::NewDisk(d) => out.new_disk(d),
            Run::Columns(l) => out.columns(l),
            Run::Watch(w) => out.watch(w),
        }
    }
}

/// One output format: each kind of run as the text to write, or None
/// where the format has no form of it.
pub trait Exporter {
    fn check(&self, _run: &CheckRun) -> Option<String> {
        None
    }
    fn topology(&self, _survey: &Survey) -> Option<String> {
        None
    }
    fn probe(&self, _report: &ProbeRun) -> Option<String> {
        None
    }
    /// `compare`: two saved runs side by side.
    fn compare(&self, _comparison: &Comparison) -> Option<String> {
        None
    }
    fn plan(&self, _plan: Planned) -> Option<String> {
        None
    }
    /// `plan --new`: an empty disk laid out.
    fn new_disk(&self, _disk: &NewDisk) -> Option<String> {
        None
    }
    /// `--list-columns`.
    fn columns(&self, _listed: Listed) -> Option<String> {
        None
    }
    /// `watch`: the I/O seen at each layer.
    fn watch(&self, _run: &WatchRun) -> Option<String> {
        None
    }
}

/// The exporter of `format`; `style` is for the human one (and the CSV
/// columns), `stamp` for the JSON documents (and the pages drawn from
/// them) and the Prometheus run time.
pub fn exporter(format: Format, style: Style, stamp: &Stamp) -> Box<dyn Exporter> {
    match format {
        Format::Human => Box::new(human::Human { style }),
        Format::Json => Box::new(json::Json {
            stamp: stamp.clone(),
        }),
        Format::Csv => Box::new(csv::Csv {
            headings: style.table.headings,
            columns: style.columns,
        }),
        Format::Html => Box::new(html::Html {
            stamp: stamp.clone(),
        }),
        Format::Prometheus => Box::new(prometheus::Prometheus {
            stamp: stamp.clone(),
        }),
        Format::Script => Box::new(script::Script),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk_plan() -> crate::plan::DiskPlan {
        crate::plan::DiskPlan {
            path: "a.img".into(),
            identity: Default::default(),
            image: true,
            table: crate::layout::TableKind::Mbr,
            sector_size: 512,
            start_grain_bytes: 1 << 20,
            start_grain_why: "1 MiB".into(),
            end_grain_bytes: 4096,
            partitions: vec![],
            steps: vec![],
            manual: vec![],
            refused: vec![],
            script_refused: None,
            offline: vec![],
            leaves: vec![],
            remains: vec![],
            part_of: vec![],
            after_script: vec![],
            bytes_to_move: 0,
            estimated_seconds: 0.0,
        }
    }

    fn new_disk() -> NewDisk {
        NewDisk {
            path: "a.img".into(),
            label: crate::layout::TableKind::Gpt,
            sector_size: 512,
            start_grain_bytes: 1 << 20,
            start_grain_why: "1 MiB".into(),
            partitions: vec![],
            sfdisk_script: "label: gpt\n".into(),
            tools_first_start_bytes: crate::check::FirstStarts {
                parted: 1 << 20,
                fdisk: 1 << 20,
                sgdisk: 1 << 20,
            },
            notes: vec![],
            refused: vec![],
            advice: vec![],
            script_refused: None,
        }
    }

    /// The table of which kind of run has which format is what the
    /// exporters do: each format renders exactly the kinds it lists.
    #[test]
    fn every_exporter_renders_exactly_the_kinds_the_table_lists() {
        let check = CheckRun {
            targets: vec![],
            assembled: vec![],
            errors: vec![],
            summary: crate::check::summarize_run(&[], &[], 0, Default::default()),
            run: Default::default(),
        };
        let survey = Survey {
            disks: vec![],
            errors: vec![],
        };
        let comparison = crate::compare::fixtures::fixed();
        let probe = crate::compare::fixtures::probe_run(
            &crate::compare::fixtures::grid("6.1.0", 1.0),
            "a.json",
        );
        let plan = PlanRun {
            throughput_bytes_per_second: 1,
            targets: vec![disk_plan()],
            assembled_leaves: vec![],
            assembled_manual: vec![],
            assembled_remains: vec![],
            errors: vec![],
        };
        let new = new_disk();
        let watch = WatchRun::default();
        let runs = [
            Run::Watch(&watch),
            Run::Check(&check),
            Run::Topology(&survey),
            Run::Probe(&probe),
            Run::Compare(&comparison),
            Run::Plan(Planned {
                plan: &plan,
                now: &check,
            }),
            Run::NewDisk(&new),
            Run::Columns(Listed::Check),
        ];
        let stamp = Stamp {
            host: "h".into(),
            started: std::time::UNIX_EPOCH,
        };
        let all = [
            Format::Human,
            Format::Json,
            Format::Csv,
            Format::Html,
            Format::Prometheus,
            Format::Script,
        ];
        // No wildcard: a new format does not compile until it has its arm
        // here, beside the list above it belongs in.
        for f in all {
            match f {
                Format::Human
                | Format::Json
                | Format::Csv
                | Format::Html
                | Format::Prometheus
                | Format::Script => {}
            }
        }
        // Every kind has its run above. No wildcard: a new kind does not
        // compile until it has its arm here, and then fails until its run
        // is in `runs`.
        for k in [
            Kind::Check,
            Kind::Topology,
            Kind::Probe,
            Kind::Compare,
            Kind::Plan,
            Kind::NewDisk,
            Kind::Columns,
            Kind::Watch,
        ] {
            match k {
                Kind::Check
                | Kind::Topology
                | Kind::Probe
                | Kind::Compare
                | Kind::Plan
                | Kind::NewDisk
                | Kind::Columns
                | Kind::Watch => {}
            }
            assert!(
                runs.iter().any(|r| r.kind() == k),
                "no {} run in this test",
                k.name()
            );
        }
        for run in runs {
            for f in all {
                let out = exporter(f, Style::plain(), &stamp);
                assert_eq!(
                    run.export(&*out).is_some(),
                    run.kind().formats().contains(&f),
                    "{} in {f}",
                    run.kind().name()
                );
            }
        }
    }

    #[test]
    fn targets_count_from_one_even_at_the_end_of_usize() {
        assert_eq!(super::target_label(0), "target 1");
        assert_eq!(
            super::target_label(usize::MAX),
            format!("target {}", usize::MAX)
        );
    }
}
