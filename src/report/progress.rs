//! Progress on a terminal: a bar with ETA while a scratch file is filled
//! and while the grid runs; nothing when stderr is not a terminal or the
//! output is JSON.

use crate::probe::grid::{Cell, Plan};
use crate::units::human;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

pub struct Bar {
    bar: Option<ProgressBar>,
}

impl Bar {
    pub fn new(enabled: bool) -> Bar {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{msg:32} [{bar:30}] {percent:>3}% ETA {eta}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            b
        });
        Bar { bar }
    }
}

impl crate::probe::Progress for Bar {
    fn filling(&self, done: u64, total: u64) {
        if let Some(b) = &self.bar {
            b.set_length(total);
            b.set_position(done);
            b.set_message(format!("writing scratch file ({})", human(total)));
        }
    }

    fn start(&self, plan: &Plan) {
        if let Some(b) = &self.bar {
            b.reset();
            b.set_length((plan.cells.len() as u64) * u64::from(plan.rounds));
            b.set_position(0);
        }
    }

    fn cell_done(&self, cell: &Cell, round: u32) {
        if let Some(b) = &self.bar {
            b.inc(1);
            b.set_message(format!(
                "round {} {} {} @{}",
                round + 1,
                cell.pattern.as_str(),
                human(u64::from(cell.block_size)),
                cell.offset
            ));
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
