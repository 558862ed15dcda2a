//! `watch`: the alignment of the real I/O, at every layer of the stack,
//! while it happens. It observes: before it starts counting it reads the
//! partition tables and layer headers of the disks (as `check` does) to
//! name the causes, and during the counted window it issues no I/O. The
//! kernel's block tracepoints are counted (by `sys::blocktrace`) into cumulative
//! [`Snapshot`]s, and this module turns them into per-device summaries,
//! a latency comparison of aligned against straddling requests, and
//! findings that name what `check` says about the device.
//!
//! Everything here works on snapshots handed in through [`SnapshotSource`], so
//! the tests feed synthetic or recorded ones; [`tracer`] is the one place
//! the kernel's tracer plugs in.

mod accounting;
mod counts;
mod latency;
mod legs;
mod rules;
mod session;
mod source;
mod submitters;
mod summary;

#[cfg(test)]
pub(crate) mod fixture;

/// The devices watched: the targets resolved to the layers below them.
pub use crate::topology::{resolve_devices as resolve, DeviceLayer, Resolved, Watched};
/// A share of I/Os, as the summaries give it.
pub use counts::share;
/// Latency against the aligned I/O, and whether it differs.
pub use latency::{LatencyComparison, LatencyDecision, Span};
/// A leg of a striped or mirrored device.
pub use legs::Leg;
/// A watch run, from the targets to the summaries (the CLI's `watch`).
pub use session::session;
/// Where snapshots come from: the tracer, a recording, a replay.
pub use source::{observe, tracer, Observed, Recording, Replay, SnapshotSource, Stop};
/// Who issued the I/O.
pub use submitters::Submitter;
/// Each device's summary, and its size buckets.
pub use summary::{Bucket, DeviceSummary};

use crate::check::CheckOptions;
use crate::errors::TargetError;
use crate::findings::{Code, FailOn, Finding};
use crate::schema::Document;
use crate::sys::{BpfAttach, Snapshot, TracePath};
use crate::topology::Sysfs;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What to watch and how.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    pub sysfs: Sysfs,
    pub targets: Vec<PathBuf>,
    /// How long; None: until Ctrl-C or the end of the command.
    pub duration: Option<std::time::Duration>,
    /// How often the live view is refreshed.
    pub interval: std::time::Duration,
    /// `--unit`: the grain every device is judged against.
    pub unit: Option<u64>,
    /// `--top`: submitters shown per device and direction.
    pub top: usize,
}

/// How the events were read, and what that costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Trace {
    pub path: TracePath,
    /// How the BPF programs get their events: typed raw tracepoints
    /// (where the kernel has BTF) or perf events on the tracepoints; null
    /// on the perf-samples path and in a recording that does not say.
    pub attach: Option<BpfAttach>,
    /// What reading them this way costs, as measured (docs/watch.md).
    pub cost: String,
    /// Why the preferred path was not taken (BPF refused, or no BTF for
    /// the raw tracepoints); null when it was.
    pub note: Option<String>,
}

impl Default for Trace {
    fn default() -> Self {
        Trace::of(TracePath::Bpf)
    }
}

impl Trace {
    pub fn of(path: TracePath) -> Trace {
        let cost = match path {
            TracePath::Bpf => "counted inside the kernel by BPF programs (bench/watch-overhead measures the cost against bpftrace's count() on the same tracepoints)",
            TracePath::PerfSamples => "raw perf samples decoded in user space, one record per event (bench/watch-overhead --perf-samples measures the cost)",
        };
        Trace {
            path,
            attach: None,
            cost: cost.into(),
            note: None,
        }
    }
}

/// What the tracer holds at once, and what went beyond it: counted and
/// shown, never dropped silently.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Devices traced at most.
    pub max_devices: u64,
    /// Requests timed (issue to completion) at once at most.
    pub max_inflight: u64,
    /// Submitters (device, direction, stage, task name, cgroup) counted
    /// at most.
    pub max_submitters: u64,
    /// Latency is timed on one request in this many, chosen by its
    /// sector (the counts are exact; only the timing is sampled).
    pub latency_one_in: u64,
    /// Requests issued whose latency was not recorded.
    pub untimed: u64,
    /// I/Os whose submitter was not counted.
    pub unattributed: u64,
    /// Devices watched but not traced (beyond `max_devices`).
    pub untraced_devices: Vec<String>,
    /// (device, device below, direction) legs counted at most.
    pub max_legs: u64,
    /// Bios remapped below a device that no leg counted.
    pub unmapped: u64,
}

impl Limits {
    /// The limits of `sys::trace` and what the run's summaries and
    /// snapshot say went beyond them.
    fn of(devices: &[DeviceSummary], stack: &[Watched], d: &Snapshot) -> Limits {
        let cap = crate::sys::Capacity::DEFAULT;
        let name = |dev: &crate::sys::DevNum| {
            stack.iter().find(|w| w.dev() == *dev).map_or_else(
                || format!("{}:{}", dev.major, dev.minor),
                |w| w.device.clone(),
            )
        };
        Limits {
            max_devices: cap.devices as u64,
            max_inflight: cap.inflight as u64,
            max_submitters: cap.submitters as u64,
            latency_one_in: u64::from(cap.latency_one_in),
            untimed: devices.iter().map(|s| s.untimed).sum(),
            unattributed: devices.iter().map(|s| s.unattributed).sum(),
            untraced_devices: d.untraced_devices.iter().map(name).collect(),
            max_legs: cap.legs as u64,
            unmapped: devices.iter().map(|s| s.unmapped).sum(),
        }
    }

    /// Something went beyond a limit.
    pub fn dropped(&self) -> bool {
        self.untimed > 0
            || self.unattributed > 0
            || self.unmapped > 0
            || !self.untraced_devices.is_empty()
    }
}

/// The command `watch` ran (`-- COMMAND ARGS...`) and how it ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChildRun {
    pub argv: Vec<String>,
    /// Its exit status; null when it was killed by a signal or still ran
    /// when the watch ended.
    pub exit_status: Option<i32>,
    /// The signal that ended it, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

/// A `watch` run: the body of the `diskalign.watch` document.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WatchRun {
    /// The targets as given (empty: every disk).
    pub targets: Vec<String>,
    pub trace: Trace,
    pub duration_s: f64,
    pub interval_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit_bytes: Option<u64>,
    /// Records the kernel dropped (the perf path's ring overflowed).
    pub lost_records: u64,
    /// Events the kernel did not run the BPF programs on
    /// (`Snapshot::missed_events`): the counts are short by at most this.
    pub missed_events: u64,
    /// What the tracer holds at once, and what went beyond it.
    pub limits: Limits,
    /// Every device watched, the targets' own first.
    pub stack: Vec<Watched>,
    /// One entry per device and direction with I/O.
    pub devices: Vec<DeviceSummary>,
    pub latency: Vec<LatencyComparison>,
    pub findings: Vec<Finding>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<ChildRun>,
    /// Targets that could not be watched, and a tracer that failed.
    pub errors: Vec<TargetError>,
    /// The exit status: 1 findings of warning or above, 2 something could
    /// not be watched.
    pub exit_status: u8,
    /// What watch itself read before it started counting, to name the
    /// causes (the partition tables and layer headers `check` reads): the
    /// bytes fetched from storage (/proc/self/io `read_bytes`), none of
    /// them in the counts; null where the kernel does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_before_bytes: Option<u64>,
}

/// The `diskalign.watch` document, written and read back by this type.
pub type WatchDocument = Document<WatchRun>;

impl WatchRun {
    /// The run from what was observed: the difference of the first and
    /// last snapshots, summarised device by device.
    pub fn new(
        opts: &WatchOptions,
        stack: Vec<Watched>,
        path: TracePath,
        first: &Snapshot,
        last: &Snapshot,
    ) -> WatchRun {
        let d = summary::delta(last, first);
        let devices = summary::summarise(&stack, &d, opts.top);
        let findings = rules::findings(&stack, &devices);
        let mut run = WatchRun {
            targets: opts
                .targets
                .iter()
                .map(|t| t.display().to_string())
                .collect(),
            trace: Trace::of(path),
            duration_s: d.elapsed_s,
            interval_s: opts.interval.as_secs_f64(),
            unit_bytes: opts.unit,
            lost_records: d.lost_records,
            missed_events: d.missed_events,
            limits: Limits::of(&devices, &stack, &d),
            latency: latency::compare(&stack, &d),
            stack,
            devices,
            findings,
            command: None,
            errors: Vec::new(),
            exit_status: 0,
            read_before_bytes: None,
        };
        run.settle();
        run
    }

    /// The exit status from the findings and errors.
    pub fn settle(&mut self) {
        let problems = self.findings.iter().any(|f| f.is_problem());
        self.exit_status = u8::from(problems) | if self.errors.is_empty() { 0 } else { 2 };
    }

    /// The summaries sorted as the table shows them: the largest
    /// straddling share first, then by I/Os.
    pub fn by_share(&self) -> Vec<&DeviceSummary> {
        let mut v: Vec<&DeviceSummary> = self.devices.iter().collect();
        v.sort_by(|a, b| {
            b.straddle_share
                .total_cmp(&a.straddle_share)
                .then(b.ios.cmp(&a.ios))
        });
        v
    }
}

/// The codes of `check` that place a device's data: what a finding of
/// `watch` names as its cause.
const PLACEMENT: [Code; 9] = [
    Code::StartMisaligned,
    Code::StartNot4k,
    Code::EndNot4k,
    Code::EndNotPhysical,
    Code::SizeNot4k,
    Code::StartNotOptimal,
    Code::LayerStartMisaligned,
    Code::LayerStartNot4k,
    Code::KernelReportsMisaligned,
];

/// What `check` says about each watched device's placement: a
/// partition's own findings, and a dm or md device's (found by its kernel
/// name among the holders of the disks' stacks). The disks below are
/// checked once, together.
pub fn add_causes(stack: &mut [Watched], sysfs: &Sysfs) {
    let mut disks: Vec<String> = stack.iter().filter_map(|w| w.disk.clone()).collect();
    disks.sort();
    disks.dedup();
    if disks.is_empty() {
        return;
    }
    let paths: Vec<PathBuf> = disks
        .iter()
        .map(|d| PathBuf::from("/dev").join(d))
        .collect();
    let opts = CheckOptions {
        sysfs: sysfs.clone(),
        ..CheckOptions::default()
    };
    // Checked as the `check` command checks them: each target's next
    // step is the plan command of its disk when that plan has work, the
    // fix the findings name.
    let run = crate::plan::check_run(&paths, &opts, FailOn::default()).run;
    let cause = |f: &&Finding| PLACEMENT.contains(&f.code) && f.counts() && f.is_problem();
    for w in stack.iter_mut() {
        let mut found: Vec<Finding> = Vec::new();
        // The disk whose plan fixes it: its own, else the one whose stack
        // the causes of a dm or md device were found in.
        let mut disk = w.disk.as_ref().map(|d| format!("/dev/{d}"));
        for t in &run.targets {
            let before = found.len();
            if w.layer == DeviceLayer::Partition && t.disk.as_deref() == w.disk.as_deref() {
                let number = partition_number(&w.device, w.disk.as_deref());
                for p in t.partitions.iter().filter(|p| Some(p.number) == number) {
                    found.extend(p.findings.iter().filter(cause).cloned());
                }
            }
            for root in &t.stack {
                holder_findings(root, &w.device, &mut found, &cause);
            }
            if disk.is_none() && found.len() > before {
                disk = Some(t.path.clone());
            }
        }
        w.causes = found;
        w.next = run
            .targets
            .iter()
            .find(|t| Some(&t.path) == disk.as_ref())
            .and_then(|t| t.next.clone());
    }
}

/// The partition number in `sdb1`, `nvme0n1p2`, after its disk's name.
fn partition_number(name: &str, disk: Option<&str>) -> Option<u32> {
    let rest = name.strip_prefix(disk?)?;
    rest.trim_start_matches('p').parse().ok()
}

/// The findings that place the holder named `name`: its own and those
/// of the layer it is built from (a PV's data start, an md member's).
fn holder_findings(
    l: &crate::stack::Layer,
    name: &str,
    out: &mut Vec<Finding>,
    cause: &dyn Fn(&&Finding) -> bool,
) {
    for c in &l.children {
        if c.holder().is_some_and(|h| h.kernel_name == name) {
            out.extend(l.findings.iter().filter(cause).cloned());
            out.extend(c.findings.iter().filter(cause).cloned());
        }
        holder_findings(c, name, out, cause);
    }
}

#[cfg(test)]
mod tests {
    //! Synthetic snapshots (made up here, not traced): 4 KiB writes to a
    //! partition at sector 63 and one at 2048 of a 4 KiB-physical disk.
    use super::fixture::{counters_4k, snapshot, watched_ao};
    use super::*;
    use crate::sys::{DevNum, Direction, Stage};
    use std::time::Duration;

    fn opts() -> WatchOptions {
        WatchOptions {
            sysfs: Sysfs::default(),
            targets: vec![PathBuf::from("/dev/sdb")],
            duration: None,
            interval: Duration::from_secs(1),
            unit: None,
            top: submitters::TOP,
        }
    }

    #[test]
    fn a_run_is_the_difference_of_its_first_and_last_snapshots() {
        let (p1, p2, disk) = (
            DevNum {
                major: 8,
                minor: 17,
            },
            DevNum {
                major: 8,
                minor: 18,
            },
            DevNum {
                major: 8,
                minor: 16,
            },
        );
        let at = |n: u64, t: f64| {
            snapshot(
                vec![
                    ((p1, Direction::Write, Stage::RemapFrom), counters_4k(n, 0)),
                    ((p2, Direction::Write, Stage::RemapFrom), counters_4k(n, 0)),
                    (
                        (disk, Direction::Write, Stage::Issue),
                        counters_4k(2 * n, n),
                    ),
                ],
                t,
            )
        };
        let run = WatchRun::new(
            &opts(),
            watched_ao(),
            TracePath::Bpf,
            &at(100, 1.0),
            &at(1100, 11.0),
        );
        assert_eq!(run.duration_s, 10.0);
        let rows: Vec<(&str, u64, Option<u64>)> = run
            .devices
            .iter()
            .map(|d| (d.device.as_str(), d.ios, d.off_4k_on_disk))
            .collect();
        assert_eq!(
            rows,
            [
                ("sdb", 2000, Some(0)),
                ("sdb1", 1000, Some(1000)),
                ("sdb2", 1000, Some(0))
            ]
        );
        // The partition's writes off 4 KiB on the disk are the disk's
        // straddling writes: one misalignment, one finding, at the
        // partition that causes it.
        let found: Vec<(&str, Code)> = run
            .findings
            .iter()
            .map(|f| (f.facts.device.as_deref().unwrap_or(""), f.code))
            .collect();
        assert_eq!(found, [("sdb1", Code::StraddlingIo)]);
        assert_eq!(run.exit_status, 1);
        assert_eq!(run.by_share()[0].device, "sdb1");
    }

    #[test]
    fn partitions_are_numbered_after_their_disk() {
        assert_eq!(partition_number("sdb1", Some("sdb")), Some(1));
        assert_eq!(partition_number("nvme0n1p12", Some("nvme0n1")), Some(12));
        assert_eq!(partition_number("sdb", Some("sdb")), None);
        assert_eq!(partition_number("sdc1", Some("sdb")), None);
    }
}
