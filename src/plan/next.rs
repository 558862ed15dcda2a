//! The next step `check` and `watch` name after a finding a layout change
//! fixes: the `diskalign plan` command of its disk, with the options the
//! check ran with (`--sysfs-root`, `--topology`, `--probe`), so that it runs as
//! printed, and only where planning that disk has work (the command would
//! exit 1): never for a partition (plan takes its disk), a table not read
//! (plan needs it), or a layout plan refuses.

use super::{plan, Action, DiskPlan, Manual, PlanOptions};
use crate::check::{self, CheckRun, CheckedTarget};
use crate::findings::FailOn;
use crate::inspect::{InspectOptions, Inspection, Measured, TargetKind};
use crate::names::shell_word;
use std::collections::HashMap;
use std::path::PathBuf;

/// One `check` run, as the `check` command and `watch` both make it:
/// the targets read (no targets: every disk), judged, and each target's
/// next step set. It lives here, not in `check`, because `plan` imports
/// `check` (its rules judge a layout after the move) and the arrow runs
/// one way (tests/floors.rs).
pub struct Checked {
    pub run: CheckRun,
    /// Each `--probe` run that measured none of the devices checked.
    pub unused: Vec<Measured>,
}

/// Read, judge, and set each target's next step.
pub fn check_run(paths: &[PathBuf], opts: &InspectOptions, fail_on: FailOn) -> Checked {
    let read = check::read(paths, opts);
    let unused =
        opts.measured
            .iter()
            .filter(|m| {
                !read.targets.iter().any(|t| {
                    t.measured.as_ref() == Some(*m) || t.measured_erase.as_ref() == Some(*m)
                })
            })
            .cloned()
            .collect();
    let planned = next_commands(read.clone(), opts);
    let mut run = check::judge(read, fail_on);
    next_steps(&mut run, planned, opts);
    Checked { run, unused }
}

/// Each target's next step (`CheckedTarget::next`): its own plan command,
/// or for a partition target whose partition a layout change would fix,
/// its disk's, read whole for that (the check read the one partition).
fn next_steps(run: &mut CheckRun, planned: Vec<Next>, opts: &InspectOptions) {
    let by = |n: Vec<Next>| n.into_iter().map(|n| (n.path.clone(), n));
    let mut by_path: HashMap<String, Next> = by(planned).collect();
    let disks: Vec<PathBuf> = run
        .targets
        .iter()
        .filter_map(partition_to_fix)
        .filter(|d| !by_path.contains_key(d))
        .map(PathBuf::from)
        .collect();
    if !disks.is_empty() {
        by_path.extend(by(next_commands(
            crate::inspect::inspect(&disks, opts),
            opts,
        )));
    }
    for t in &mut run.targets {
        let path = partition_to_fix(t).unwrap_or_else(|| t.path.clone());
        let next = by_path.get(&path);
        // A path's layout is the map's: its fix is planned on the map.
        t.next = match t.multipath_map_node() {
            Some(map) => next.map(|_| command(map, opts)),
            None => next.map(|n| n.command.clone()),
        };
        t.next_says = next.map(|n| n.says.clone()).filter(|s| !s.is_empty());
    }
}

/// The disk of a partition target whose partition is not clean.
fn partition_to_fix(t: &CheckedTarget) -> Option<String> {
    let disk = t
        .disk
        .as_ref()
        .filter(|_| t.kind == TargetKind::Partition)?;
    let fix = t.partitions.iter().any(|p| !p.status.is_clean());
    fix.then(|| format!("/dev/{disk}"))
}

/// `diskalign [--sysfs-root DIR] plan DISK [--topology SPEC] [--probe RUN.json ...]`.
pub fn command(disk: &str, opts: &InspectOptions) -> String {
    command_of(&[disk], opts)
}

/// The same for several disks planned together (an array or volume group
/// assembled from them).
fn command_of(disks: &[&str], opts: &InspectOptions) -> String {
    let mut c = String::from("diskalign ");
    if !opts.sysfs.is_live() {
        let root = opts.sysfs.root().display().to_string();
        c.push_str(&format!("--sysfs-root {} ", shell_word(&root)));
    }
    c.push_str("plan ");
    let words: Vec<String> = disks.iter().map(|d| shell_word(d)).collect();
    c.push_str(&words.join(" "));
    c.push_str(&next_options(opts));
    c
}

/// ` --topology SPEC --probe RUN.json ...`: what a plan or check of the
/// same disks takes to judge as this one did (empty when nothing).
pub fn next_options(opts: &InspectOptions) -> String {
    let mut c = String::new();
    if let Some(t) = &opts.topology {
        c.push_str(&format!(" --topology {t}"));
    }
    let mut runs: Vec<&str> = opts.measured.iter().map(|m| m.file.as_str()).collect();
    runs.dedup();
    for r in runs {
        c.push_str(&format!(" --probe {}", shell_word(r)));
    }
    c
}

/// Each target of `i` whose plan has work, by its path as given, with
/// its command. A partition target has none: the caller plans its disk.
/// When what was assembled across the targets has work by hand, every
/// target's command plans them all together: planned alone, a disk does
/// not assemble the volume group or array it holds part of.
pub fn next_commands(i: Inspection, opts: &InspectOptions) -> Vec<Next> {
    let plan_opts = PlanOptions {
        again: next_options(opts),
        ..PlanOptions::default()
    };
    let run = plan(i, &plan_opts);
    if !run.assembled_manual.is_empty() {
        let all: Vec<&DiskPlan> = run
            .targets
            .iter()
            .filter(|d| d.refused.is_empty())
            .collect();
        let paths: Vec<&str> = all.iter().map(|d| d.path.as_str()).collect();
        let together = command_of(&paths, opts);
        let manual = all
            .iter()
            .flat_map(|d| d.manual.iter())
            .chain(&run.assembled_manual);
        let says = says(all.iter().copied(), manual);
        return paths
            .iter()
            .map(|d| Next {
                path: d.to_string(),
                command: together.clone(),
                says: says.clone(),
            })
            .collect();
    }
    run.targets
        .iter()
        .filter(|d| d.has_work())
        .map(|d| Next {
            path: d.path.clone(),
            command: command(&d.path, opts),
            says: says(std::iter::once(d), d.manual.iter()),
        })
        .collect()
}

/// A target's next step: the plan command, and what that plan says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Next {
    /// The target as given.
    pub path: String,
    pub command: String,
    /// "moves 1 partition; by hand: tune2fs for fs-stripe-hints-missing;
    /// in words: fs-block-below-physical".
    pub says: String,
}

/// What the plans of `disks` will print, in a few words: the partitions
/// the script moves or resizes, the findings commands by hand clear, and
/// those said in words only.
fn says<'a>(
    disks: impl Iterator<Item = &'a DiskPlan>,
    manual: impl Iterator<Item = &'a Manual>,
) -> String {
    let changed: usize = disks
        .map(|d| {
            d.partitions
                .iter()
                .filter(|p| p.action != Action::Keep)
                .count()
        })
        .sum();
    let mut parts = Vec::new();
    if changed > 0 {
        let s = if changed == 1 { "" } else { "s" };
        parts.push(format!("moves or resizes {changed} partition{s}"));
    }
    let (mut run, mut words) = (Vec::new(), Vec::new());
    for m in manual {
        let Some(x) = &m.about else { continue };
        match m.commands.first() {
            Some(c) if m.clears => {
                // A one-line sh subshell (the boot sectors' guarded
                // write) is named by the tool that writes: dd.
                let tool = match c.split_whitespace().next().unwrap_or_default() {
                    "(" => "dd",
                    t => t,
                };
                run.push(format!("{tool} for {}", x.code));
            }
            _ if !words.contains(&x.code.to_string()) => words.push(x.code.to_string()),
            _ => {}
        }
    }
    if !run.is_empty() {
        parts.push(format!("by hand: {}", run.join(", ")));
    }
    if !words.is_empty() {
        parts.push(format!("said in words: {}", words.join(", ")));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Sysfs;

    /// A path of a multipath map named on the command line: its fix is
    /// planned on the map, with the same options; what the plan says stays.
    #[test]
    fn a_multipath_path_plans_its_map() {
        use crate::findings::{Code, Facts, Finding};
        let path = CheckedTarget {
            path: "/dev/sdb".into(),
            findings: vec![Finding::of(
                Code::MultipathPath,
                Facts {
                    map_node: Some("/dev/mapper/mpatha".into()),
                    ..Facts::default()
                },
            )],
            ..CheckedTarget::default()
        };
        let plain = CheckedTarget {
            path: "/dev/sda".into(),
            ..CheckedTarget::default()
        };
        let mut run = CheckRun {
            targets: vec![path, plain],
            ..CheckRun::default()
        };
        let planned = ["/dev/sdb", "/dev/sda"].map(|p| Next {
            path: p.into(),
            command: format!("diskalign plan {p}"),
            says: "moves or resizes 1 partition".into(),
        });
        next_steps(&mut run, planned.to_vec(), &InspectOptions::default());
        let t = &run.targets;
        assert_eq!(
            t[0].next.as_deref(),
            Some("diskalign plan /dev/mapper/mpatha")
        );
        assert_eq!(
            t[0].next_says.as_deref(),
            Some("moves or resizes 1 partition")
        );
        assert_eq!(t[1].next.as_deref(), Some("diskalign plan /dev/sda"));
    }

    #[test]
    fn the_command_repeats_what_the_check_ran_with() {
        let live = InspectOptions::default();
        assert_eq!(command("/dev/sda", &live), "diskalign plan /dev/sda");
        assert_eq!(command("a disk.img", &live), "diskalign plan 'a disk.img'");
        let what_if = InspectOptions {
            sysfs: Sysfs::new(std::path::Path::new("tests/fixtures/sysfs/usb-bridge")),
            topology: Some("pbs=4096,opt=33553920".parse().unwrap()),
            measured: vec![crate::inspect::Measured {
                path: "/dev/sda1".into(),
                disk: Some("sda".into()),
                unit_bytes: 4096,
                file: "a run.json".into(),
                erase: false,
            }],
            ..InspectOptions::default()
        };
        assert_eq!(
            command("/dev/sda", &what_if),
            "diskalign --sysfs-root tests/fixtures/sysfs/usb-bridge plan /dev/sda --topology pbs=4096,opt=33553920 --probe 'a run.json'"
        );
    }
}
