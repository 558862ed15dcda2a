//! `plan`: runs `plan::plan_targets` (or `plan::plan_new_target` for
//! `--new`), says on stderr what cannot be planned or scripted, and
//! writes the outputs asked for (the script among them, when the plan can
//! keep the data).

use super::{status, warn, Out};
use crate::check::CheckOptions;
use crate::layout::TableKind;
use crate::plan::{self, PlanOptions};
use crate::report::{Format, Planned, Run};
use std::path::{Path, PathBuf};

/// Returns the report text and the exit status: 0 nothing to change, 1 a
/// plan with changes, 2 a target could not be read or planned.
pub fn run(
    opts: &CheckOptions,
    targets: &[PathBuf],
    plan_opts: &PlanOptions,
    new: Option<(PathBuf, String, TableKind)>,
    out: Out,
) -> (String, u8) {
    if let Some((disk, sizes, label)) = new {
        return run_new(opts, &disk, &sizes, label, out);
    }
    let script = out.outputs.has_file(Format::Script);
    if script && targets.len() != 1 {
        warn("--script writes the plan of one disk: give one target");
        return (String::new(), 2);
    }
    let (run, now) = plan::plan_targets(targets, opts, plan_opts);
    for e in &run.errors {
        warn(&e.to_string());
    }
    let mut code = status(!run.errors.is_empty() || run.refused(), run.has_changes());
    // A disk that cannot be planned is said once, here (the human report
    // leaves it out; the JSON and the page carry `refused`).
    let no_script = if script { "; no script written" } else { "" };
    for d in &run.targets {
        if !d.refused.is_empty() {
            warn(&format!(
                "{}: cannot plan: {}{no_script}",
                d.path,
                d.refused.join("; ")
            ));
        }
    }
    let mut outputs = out.outputs.clone();
    if let (true, Some(d)) = (script, run.targets.first()) {
        if !d.refused.is_empty() {
            outputs.drop_files(Format::Script);
        } else if let Some(why) = &d.script_refused {
            warn(&format!("no script written: {why}"));
            code |= 2;
            outputs.drop_files(Format::Script);
        } else if d.is_noop() {
            let why = if d.has_work() {
                "nothing for a script to change until what is to be done by hand is done"
            } else {
                "nothing to change"
            };
            warn(&format!("{}: {why}: no script written", d.path));
            outputs.drop_files(Format::Script);
        }
    }
    let planned = Planned {
        plan: &run,
        now: &now,
    };
    Out {
        outputs: &outputs,
        ..out
    }
    .write(Run::Plan(planned), code)
}

fn run_new(
    opts: &CheckOptions,
    disk: &Path,
    sizes: &str,
    label: TableKind,
    out: Out,
) -> (String, u8) {
    let d = match plan::plan_new_target(disk, sizes, label, opts) {
        Ok(d) => d,
        Err(why) => {
            if let Some(why) = why {
                warn(&why);
            }
            return (String::new(), 2);
        }
    };
    let mut outputs = out.outputs.clone();
    let mut code = 1;
    if let Some(why) = d.refused.first() {
        if outputs.has_file(Format::Script) {
            warn(&format!("no script written: {why}"));
        } else {
            warn(&format!("{}: cannot plan: {why}", d.path));
        }
        outputs.drop_files(Format::Script);
        code = 2;
    } else if let (true, Some(why)) = (outputs.has_file(Format::Script), &d.script_refused) {
        warn(&format!("no script written: {why}"));
        outputs.drop_files(Format::Script);
        code |= 2;
    }
    Out {
        outputs: &outputs,
        ..out
    }
    .write(Run::NewDisk(&d), code)
}
