//! Progress on a terminal: a bar with ETA while a scratch file is filled
//! and while the grid runs; nothing when stderr is not a terminal or the
//! output is JSON.

use crate::probe::grid::{Cell, Plan};
use crate::units::human;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU32, Ordering};

pub struct Bar {
    bar: Option<ProgressBar>,
    round: AtomicU32,
    max_rounds: AtomicU32,
}

/// `probe plan: 26 cells, 3 to 12 rounds, first decisions after ~16 s,
/// at most ~62 s`: printed before the first I/O.
pub fn plan_line(plan: &Plan, targets: usize) -> String {
    let zoom = if plan.zoom.is_empty() {
        String::new()
    } else {
        format!(
            " (+{} if the unit looks larger than 32 KiB)",
            plan.zoom.len()
        )
    };
    let on = if targets > 1 {
        format!(" on each of {targets} targets")
    } else {
        String::new()
    };
    let n = targets.max(1) as f64;
    format!(
        "probe plan: {} cells{zoom}{on}, {} to {} rounds; first decisions after ~{:.0} s, at most ~{:.0} s; decided comparisons stop early",
        plan.cells.len(),
        plan.min_rounds,
        plan.rounds,
        plan.first_look_time().as_secs_f64() * n,
        plan.planned_time().as_secs_f64() * n
    )
}

impl Bar {
    pub fn new(enabled: bool) -> Bar {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{msg:48} [{bar:24}] {percent:>3}%")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            b
        });
        Bar {
            bar,
            round: AtomicU32::new(0),
            max_rounds: AtomicU32::new(0),
        }
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

    fn start(&self, plan: &Plan, targets: usize) {
        if let Some(b) = &self.bar {
            b.println(plan_line(plan, targets));
            b.reset();
            b.set_length(plan.cells.len() as u64);
            b.set_position(0);
            self.max_rounds.store(plan.rounds, Ordering::Relaxed);
        }
    }

    fn round(&self, round: u32, cells: usize) {
        if let Some(b) = &self.bar {
            b.set_length(cells as u64);
            b.set_position(0);
            self.round.store(round + 1, Ordering::Relaxed);
        }
    }

    fn cell_done(&self, cell: &Cell, iops: f64) {
        if let Some(b) = &self.bar {
            b.inc(1);
            b.set_message(format!(
                "round {}/{} {} {} @{} {:.0} IOPS",
                self.round.load(Ordering::Relaxed),
                self.max_rounds.load(Ordering::Relaxed),
                cell.pattern.as_str(),
                human(u64::from(cell.block_size)),
                cell.offset,
                iops
            ));
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
