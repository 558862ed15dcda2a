//! `plan`: read the targets, plan, print, and write the script if asked.

use super::{side_file, status, warn};
use crate::check::CheckOptions;
use crate::layout::TableKind;
use crate::plan::{self, new_disk, PlanOptions};
use crate::report::style::Style;
use crate::report::{plan as out, script, Stamp};
use std::path::{Path, PathBuf};

/// Returns the report text (the JSON document, with this run's stamp, when
/// `json` has one) and the exit status: 0 nothing to change, 1 a plan with
/// changes, 2 a target could not be read or planned.
pub fn run(
    opts: &CheckOptions,
    targets: &[PathBuf],
    json: Option<&Stamp>,
    script_file: Option<&Path>,
    plan_opts: &PlanOptions,
    new: Option<(PathBuf, String, TableKind)>,
    style: &Style,
) -> (String, u8) {
    if let Some((disk, sizes, label)) = new {
        return run_new(opts, &disk, &sizes, label, json, script_file, style);
    }
    if script_file.is_some() && targets.len() != 1 {
        warn("--script writes the plan of one disk: give one target");
        return (String::new(), 2);
    }
    let run = plan::plan(crate::inspect::inspect(targets, opts), plan_opts);
    for e in &run.errors {
        warn(&e.to_string());
    }
    let text = if let Some(stamp) = json {
        crate::report::json::plan(&run, stamp)
    } else {
        out::human(&run, style)
    };
    let mut code = status(!run.errors.is_empty() || run.refused(), run.has_changes());
    if script_file.is_none() {
        for d in &run.targets {
            if let Some(why) = d.refused.first() {
                warn(&format!("{}: cannot plan: {why}", d.path));
            }
        }
    }
    if let (Some(path), Some(d)) = (script_file, run.targets.first()) {
        if let Some(why) = d.refused.first() {
            warn(&format!("no script written: {why}"));
            code |= 2;
        } else if d.is_noop() {
            warn(&format!(
                "nothing to change on {}: no script written",
                d.path
            ));
        } else {
            code = side_file(Some(path), code, || {
                script::render(d, env!("CARGO_PKG_VERSION"))
            });
        }
    }
    (text, code)
}

fn run_new(
    opts: &CheckOptions,
    disk: &Path,
    sizes: &str,
    label: TableKind,
    json: Option<&Stamp>,
    script_file: Option<&Path>,
    style: &Style,
) -> (String, u8) {
    let sizes = match new_disk::parse_sizes(sizes) {
        Ok(s) => s,
        Err(e) => {
            warn(&format!("--sizes: {e}"));
            return (String::new(), 2);
        }
    };
    let i = crate::inspect::inspect(&[disk.to_path_buf()], opts);
    if let Some(e) = i.errors.first() {
        warn(&e.to_string());
        return (String::new(), 2);
    }
    let Some(t) = i.targets.first() else {
        return (String::new(), 2);
    };
    let d = new_disk::plan(t, &sizes, label);
    let text = if let Some(stamp) = json {
        crate::report::json::plan(&d, stamp)
    } else {
        out::human_new(&d, style)
    };
    if let Some(why) = d.refused.first() {
        if script_file.is_some() {
            warn(&format!("no script written: {why}"));
        } else {
            warn(&format!("{}: cannot plan: {why}", d.path));
        }
        return (text, 2);
    }
    let code = side_file(script_file, 1, || {
        script::render_new(&d, env!("CARGO_PKG_VERSION"))
    });
    (text, code)
}
