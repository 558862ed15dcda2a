//! Every output goes through one interface: an [`Exporter`] per format
//! (human, JSON, CSV), like hyperfine's exporters. The human table and the
//! CSV share one column model ([`columns`]), like lsblk's `colinfo`, so a
//! column added there shows in both. The JSON documents are a public,
//! versioned interface (docs/json.md): fields are only ever added.
//! `check` and `topology` can also write Prometheus metrics ([`prometheus`],
//! docs/prometheus.md) beside whichever format they print.

pub mod columns;
pub mod csv;
pub mod html;
pub mod human;
pub mod json;
pub mod plan;
pub mod progress;
pub mod prometheus;
pub mod script;
pub mod style;

use crate::check::CheckRun;
use crate::compare::Comparison;
use crate::probe::report::ProbeReport;
use crate::topology::Survey;
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

/// The output formats every command has.
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
}

crate::spelled_as_serde!(Format);

/// One output format: each command's result as the text to print.
pub trait Exporter {
    fn check(&self, run: &CheckRun) -> String;
    fn topology(&self, survey: &Survey) -> String;
    fn probe(&self, report: &ProbeReport) -> String;
    /// `compare`: two saved runs side by side.
    fn compare(&self, comparison: &Comparison) -> String;
}

/// The exporter of `format`; `style` is for the human one, `stamp` for
/// the JSON documents (and the pages drawn from them).
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
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn targets_count_from_one_even_at_the_end_of_usize() {
        assert_eq!(super::target_label(0), "target 1");
        assert_eq!(
            super::target_label(usize::MAX),
            format!("target {}", usize::MAX)
        );
    }
}
