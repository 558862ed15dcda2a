//! `check`: runs `plan::check_run` (read, judge, each target's next
//! step), says on stderr what could not be used or checked, and writes
//! the outputs.

use super::{warn, Out};
use crate::check::CheckOptions;
use crate::findings::FailOn;
use crate::report::Run;
use std::path::PathBuf;

/// Returns the report text and the exit status. Each target that could
/// not be checked is one line on stderr, here and nowhere else.
pub fn run(
    opts: &CheckOptions,
    targets: &[PathBuf],
    fail_on: FailOn,
    stats: bool,
    out: &Out,
) -> (String, u8) {
    let started = std::time::Instant::now();
    let checked = crate::plan::check_run(targets, opts, fail_on);
    if stats {
        let lines = crate::report::cost_lines(&checked.run.run, started.elapsed());
        eprint!("{lines}");
    }
    for m in &checked.unused {
        warn(&format!(
            "--probe {}: {} is none of the devices checked (the same path, or a partition of the same disk): not used",
            m.file,
            m.path.display()
        ));
    }
    let run = checked.run;
    for e in &run.errors {
        warn(&e.to_string());
    }
    out.write(Run::Check(&run), run.summary.exit_status)
}
