//! `check`: read, judge, name the next step, and write the outputs.

use super::{warn, Out};
use crate::check::CheckedTarget;
use crate::check::{self, CheckOptions, CheckRun};
use crate::findings::FailOn;
use crate::plan;
use crate::report::Run;
use std::collections::HashMap;
use std::path::PathBuf;

/// Returns the report text and the exit status. Each target that could
/// not be checked is one line on stderr, here and nowhere else.
pub fn run(opts: &CheckOptions, targets: &[PathBuf], fail_on: FailOn, out: &Out) -> (String, u8) {
    let read = check::read(targets, opts);
    for m in &opts.measured {
        if !read.targets.iter().any(|t| t.measured.as_ref() == Some(m)) {
            warn(&format!(
                "--probe {}: {} is none of the devices checked (the same path, or a partition of the same disk): not used",
                m.file,
                m.path.display()
            ));
        }
    }
    let planned = plan::next_commands(read.clone(), opts);
    let mut run = check::judge(read, fail_on);
    next_steps(&mut run, planned, opts);
    for e in &run.errors {
        warn(&e.to_string());
    }
    out.write(Run::Check(&run), run.summary.exit_status)
}

/// Each target's next step (`CheckedTarget::next`): its own plan command,
/// or for a partition target whose partition a layout change would fix,
/// its disk's, read whole for that (the check read the one partition).
fn next_steps(run: &mut CheckRun, planned: Vec<plan::Next>, opts: &CheckOptions) {
    let by = |n: Vec<plan::Next>| n.into_iter().map(|n| (n.path.clone(), n));
    let mut by_path: HashMap<String, plan::Next> = by(planned).collect();
    let disks: Vec<PathBuf> = run
        .targets
        .iter()
        .filter_map(partition_to_fix)
        .filter(|d| !by_path.contains_key(d))
        .map(PathBuf::from)
        .collect();
    if !disks.is_empty() {
        by_path.extend(by(plan::next_commands(
            crate::inspect::inspect(&disks, opts),
            opts,
        )));
    }
    for t in &mut run.targets {
        let path = partition_to_fix(t).unwrap_or_else(|| t.path.clone());
        let next = by_path.get(&path);
        t.next = next.map(|n| n.command.clone());
        t.next_says = next.map(|n| n.says.clone()).filter(|s| !s.is_empty());
    }
}

/// The disk of a partition target whose partition is not clean.
fn partition_to_fix(t: &CheckedTarget) -> Option<String> {
    let disk = t
        .disk
        .as_ref()
        .filter(|_| t.kind == crate::inspect::TargetKind::Partition)?;
    let fix = t.partitions.iter().any(|p| !p.status.is_clean());
    fix.then(|| format!("/dev/{disk}"))
}
