//! Human-readable reports: tables, a one-line verdict, reasons underneath;
//! colour only on a terminal.

mod check;
mod compare;
mod probe;
mod stack;
mod topology;

use super::style::Style;
use super::Exporter;
use crate::check::CheckRun;
use crate::compare::Comparison;
use crate::probe::report::ProbeReport;
use crate::topology::Survey;

pub struct Human {
    pub style: Style,
}

impl Exporter for Human {
    fn check(&self, run: &CheckRun) -> String {
        check::render(run, &self.style)
    }

    fn topology(&self, survey: &Survey) -> String {
        topology::render(&survey.disks, &survey.errors, &self.style)
    }

    fn probe(&self, report: &ProbeReport) -> String {
        probe::render(report, &self.style)
    }

    fn compare(&self, comparison: &Comparison) -> String {
        compare::render(comparison, &self.style)
    }
}
