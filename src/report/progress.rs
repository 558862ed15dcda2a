//! Progress on a terminal: a bar with ETA while a scratch file is filled
//! and while the grid runs; nothing when stderr is not a terminal or the
//! output is JSON.

use crate::probe::{Cell, Grid};
use crate::units::human;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU32, Ordering};

pub struct Progress {
    bar: Option<ProgressBar>,
    round: AtomicU32,
    max_rounds: AtomicU32,
}

/// `probe plan: 28 cells, 2 to 16 rounds, first decisions after ~8 s,
/// at most ~67 s; …; resolves a penalty of 10% (--min-effect) if rounds
/// vary by less than ±4.1% against each other`: printed before the first
/// I/O.
pub fn plan_line(plan: &Grid, targets: usize) -> String {
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
    let most = plan.planned_time().as_secs_f64() * n;
    let (rounds, sd) = crate::probe::resolvable(plan, targets);
    let most = match plan.max_time {
        Some(t) => format!(
            "budget {:.0} s (--max-time: about {rounds} full rounds)",
            t.as_secs_f64()
        ),
        None => format!("at most ~{most:.0} s"),
    };
    format!(
        "probe plan: {} cells{zoom}{on}, {} to {} rounds; first decisions after ~{:.0} s, {most}; decided comparisons stop early; resolves a penalty of {:.0}% (--min-effect) if rounds vary by less than ±{sd:.1}% against each other",
        plan.cells.len(),
        plan.min_rounds,
        plan.rounds,
        plan.first_look_time().as_secs_f64() * n,
        plan.min_effect * 100.0,
    )
}

impl Progress {
    pub fn new(enabled: bool) -> Progress {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{msg:48} [{bar:24}] {percent:>3}%")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            b
        });
        Progress {
            bar,
            round: AtomicU32::new(0),
            max_rounds: AtomicU32::new(0),
        }
    }
}

impl crate::probe::Progress for Progress {
    fn filling(&self, done: u64, total: u64) {
        if let Some(b) = &self.bar {
            b.set_length(total);
            b.set_position(done);
            b.set_message(format!("writing scratch file ({})", human(total)));
        }
    }

    fn start(&self, plan: &Grid, targets: usize) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_line_says_what_the_budget_resolves() {
        let mut plan = crate::probe::auto_plan(Some(0.05));
        // The auto preset's default budget: 2 minutes.
        let line = plan_line(&plan, 1);
        assert!(
            line.contains("budget 120 s (--max-time: about 28 full rounds)"),
            "{line}"
        );
        assert!(line.contains("2 to 28 rounds"), "{line}");
        plan.max_time = None;
        plan.rounds = 16;
        let line = plan_line(&plan, 1);
        assert!(line.contains("2 to 16 rounds"), "{line}");
        assert!(line.contains("at most ~"), "{line}");
        assert!(
            line.contains("resolves a penalty of 5% (--min-effect) if rounds vary by less than ±"),
            "{line}"
        );
        let (_, all) = crate::probe::resolvable(&plan, 1);
        plan.max_time = Some(std::time::Duration::from_secs(20));
        let line = plan_line(&plan, 1);
        assert!(
            line.contains("budget 20 s (--max-time: about 4 full rounds)"),
            "{line}"
        );
        let (rounds, short) = crate::probe::resolvable(&plan, 1);
        assert_eq!(rounds, 4);
        // Fewer rounds resolve the same penalty only on a quieter device.
        assert!(short < all, "{short} {all}");
    }
}
