//! Human-readable reports: tables, a one-line verdict, reasons underneath;
//! colour only on a terminal.

mod check;
mod compare;
mod cost;
mod declared;
mod probe;
mod stack;
mod topology;
mod watch;

/// `check --stats`: what reading cost, for stderr.
pub use cost::lines as cost_lines;

/// A stack layer's facts as the tree says them (the page's stack table
/// says them in the same words).
pub(super) use stack::detail as layer_detail;

use super::style::Style;
use super::{Exporter, Listed, Planned};
use crate::check::CheckRun;
use crate::compare::Comparison;
use crate::plan::NewDisk;
use crate::probe::ProbeRun;
use crate::topology::Survey;

pub struct Human {
    pub style: Style,
}

impl Exporter for Human {
    fn check(&self, run: &CheckRun) -> Option<String> {
        Some(check::render(run, &self.style))
    }

    fn topology(&self, survey: &Survey) -> Option<String> {
        Some(topology::render(&survey.disks, &survey.errors, &self.style))
    }

    fn probe(&self, report: &ProbeRun) -> Option<String> {
        Some(probe::render(report, &self.style))
    }

    fn compare(&self, comparison: &Comparison) -> Option<String> {
        Some(compare::render(comparison, &self.style))
    }

    fn plan(&self, p: Planned) -> Option<String> {
        Some(super::plan::human(p.plan, &self.style))
    }

    fn new_disk(&self, d: &NewDisk) -> Option<String> {
        Some(super::plan::human_new(d, &self.style))
    }

    fn watch(&self, run: &crate::watch::WatchRun) -> Option<String> {
        Some(watch::render(run, &self.style))
    }

    fn columns(&self, listed: Listed) -> Option<String> {
        Some(super::tables::list(listed, &self.style))
    }
}

/// `watch`'s live view: one interval's table, redrawn every interval.
pub fn watch_live(run: &crate::watch::WatchRun, style: &Style) -> String {
    watch::live(run, style)
}
