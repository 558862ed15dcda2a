//! Where snapshots come from, and the loop that takes them. A
//! [`SnapshotSource`] is the kernel's tracer ([`tracer`], the one function
//! `sys::blocktrace` plugs into) or a [`Replay`] of recorded snapshots
//! (tests, and runs saved for later); [`observe`] takes one snapshot at
//! the start and one every interval until the run ends.

use crate::sys::{BpfAttach, Grains, Snapshot, TracePath};
use crate::sys::{Prefer, Tracer};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Cumulative counts of the block tracepoints, read on demand.
pub trait SnapshotSource {
    /// Everything counted since tracing started.
    fn snapshot(&mut self) -> Result<Snapshot, String>;
    /// How the events are read.
    fn path(&self) -> TracePath;
    /// True when snapshots come as fast as they are asked for (a
    /// recording): the loop then does not wait between them.
    fn recorded(&self) -> bool {
        false
    }
    /// A recording with no snapshot left.
    fn finished(&self) -> bool {
        false
    }
    /// Why the preferred path was not taken (BPF refused by the kernel,
    /// or no BTF for the typed raw tracepoints).
    fn note(&self) -> Option<String> {
        None
    }
    /// How the BPF programs are attached, where they run.
    fn attach(&self) -> Option<BpfAttach> {
        None
    }
}

/// The kernel's tracer for the devices `grains` names: BPF programs on
/// the block tracepoints, or raw perf samples where BPF is refused
/// (`sys::trace`). One line saying what is missing when it cannot start.
pub fn tracer(grains: &[Grains]) -> Result<Box<dyn SnapshotSource>, String> {
    let t = Tracer::start(grains, preferred()?).map_err(|e| e.to_string())?;
    Ok(Box::new(Kernel(t)))
}

/// The variable that asks for one way of reading the events (tests and
/// comparisons: docs/watch.md); unset, the best the kernel allows.
pub const TRACE_VARIABLE: &str = "DISKALIGN_WATCH_TRACE";

/// The way `DISKALIGN_WATCH_TRACE` asks for: `bpf-tracefs` (BPF on perf
/// events reading the tracefs records, even where the kernel has BTF) or
/// `perf-samples`; unset or empty, `Prefer::Auto`.
fn preferred() -> Result<Prefer, String> {
    match std::env::var(TRACE_VARIABLE).unwrap_or_default().as_str() {
        "" => Ok(Prefer::Auto),
        "bpf-tracefs" => Ok(Prefer::BpfTracefs),
        "perf-samples" => Ok(Prefer::PerfSamples),
        other => Err(format!(
            "{TRACE_VARIABLE}={other}: expected bpf-tracefs or perf-samples (or unset)"
        )),
    }
}

/// The kernel's tracer as a [`SnapshotSource`].
struct Kernel(Tracer);

impl SnapshotSource for Kernel {
    fn snapshot(&mut self) -> Result<Snapshot, String> {
        self.0.snapshot().map_err(|e| e.to_string())
    }

    fn path(&self) -> TracePath {
        self.0.path()
    }

    fn note(&self) -> Option<String> {
        let bpf = self
            .0
            .bpf_refused()
            .map(|why| format!("BPF was refused ({why}): raw perf samples instead"));
        let typed = self.0.typed_refused().map(|why| {
            format!(
                "the typed raw tracepoints could not be used ({why}): BPF on perf events instead"
            )
        });
        bpf.or(typed)
    }

    fn attach(&self) -> Option<BpfAttach> {
        self.0.attach()
    }
}

/// Snapshots recorded earlier, as a file holds them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Recording {
    pub path: Option<TracePath>,
    pub snapshots: Vec<Snapshot>,
}

/// A [`SnapshotSource`] that plays a recording back, snapshot by snapshot.
pub struct Replay {
    path: TracePath,
    left: VecDeque<Snapshot>,
}

impl Replay {
    /// A recording's JSON text; one line saying why it is not one.
    pub fn parse(text: &str) -> Result<Replay, String> {
        let r: Recording =
            serde_json::from_str(text).map_err(|e| format!("not a recording of snapshots: {e}"))?;
        if r.snapshots.is_empty() {
            return Err("the recording holds no snapshot".into());
        }
        Ok(Replay {
            path: r.path.unwrap_or(TracePath::Bpf),
            left: r.snapshots.into(),
        })
    }
}

impl SnapshotSource for Replay {
    fn snapshot(&mut self) -> Result<Snapshot, String> {
        self.left
            .pop_front()
            .ok_or_else(|| "the recording has ended".to_string())
    }

    fn path(&self) -> TracePath {
        self.path
    }

    fn recorded(&self) -> bool {
        true
    }

    fn finished(&self) -> bool {
        self.left.is_empty()
    }
}

/// Why a run stops, asked between snapshots: Ctrl-C, or the command
/// watched has ended.
pub trait Stop {
    fn now(&mut self) -> bool;
}

impl<F: FnMut() -> bool> Stop for F {
    fn now(&mut self) -> bool {
        self()
    }
}

/// The first and last snapshots of a run, and the error that ended it
/// early (a device gone, the tracer failing): what was counted until
/// then still stands.
pub struct Observed {
    pub first: Snapshot,
    pub last: Snapshot,
    pub error: Option<String>,
}

/// How often a waiting loop looks at `stop`.
const POLL: Duration = Duration::from_millis(50);

/// From `first`, the snapshot the run starts at (taken before a COMMAND
/// starts, so none of its I/O falls before it), take one every
/// `interval` until `duration` has passed, `stop` says so or a recording
/// ends; `each` gets every interval's (previous, current) pair, for the
/// live view.
pub fn observe(
    source: &mut dyn SnapshotSource,
    first: Snapshot,
    interval: Duration,
    duration: Option<Duration>,
    stop: &mut dyn Stop,
    each: &mut dyn FnMut(&Snapshot, &Snapshot),
) -> Observed {
    let mut last = first.clone();
    let (start, t0) = (Instant::now(), first.elapsed_s);
    // A recording's time is its own; a live run's the clock's.
    let ran = |last: &Snapshot, recorded: bool| {
        if recorded {
            Duration::from_secs_f64((last.elapsed_s - t0).max(0.0))
        } else {
            start.elapsed()
        }
    };
    while !source.finished() {
        // A live run that stops (the command ended, Ctrl-C) takes one
        // more snapshot, the last: a command that ended before the first
        // look still has its I/O counted, and so does the I/O since the
        // snapshot before. A recording stops where it is.
        let mut stopping = stop.now();
        if source.recorded() {
            if stopping {
                break;
            }
        } else if !stopping {
            let left = duration.map_or(interval, |d| d.saturating_sub(start.elapsed()));
            stopping = wait(interval.min(left), stop);
        }
        let now = match source.snapshot() {
            Ok(s) => s,
            Err(e) => {
                return Observed {
                    first,
                    last,
                    error: Some(e),
                }
            }
        };
        each(&last, &now);
        last = now;
        if stopping || duration.is_some_and(|d| ran(&last, source.recorded()) >= d) {
            break;
        }
    }
    Observed {
        first,
        last,
        error: None,
    }
}

/// Sleep `d` in short steps; true when `stop` said so meanwhile.
fn wait(d: Duration, stop: &mut dyn Stop) -> bool {
    let end = Instant::now() + d;
    loop {
        let now = Instant::now();
        if now >= end {
            return false;
        }
        if stop.now() {
            return true;
        }
        std::thread::sleep(POLL.min(end - now));
    }
}

#[cfg(test)]
mod tests {
    //! Synthetic snapshots, made up here.
    use super::*;
    use crate::sys::{DevNum, Direction, Stage};
    use crate::watch::fixture::{counters_4k, snapshot};

    fn recording(n: usize) -> String {
        let dev = DevNum {
            major: 8,
            minor: 17,
        };
        let snaps: Vec<Snapshot> = (0..n)
            .map(|i| {
                snapshot(
                    vec![(
                        (dev, Direction::Write, Stage::RemapFrom),
                        counters_4k(10 * i as u64, 0),
                    )],
                    i as f64,
                )
            })
            .collect();
        serde_json::to_string(&Recording {
            path: Some(TracePath::PerfSamples),
            snapshots: snaps,
        })
        .unwrap()
    }

    /// A live source: the recording's snapshots, not marked recorded.
    struct Live(Replay);

    impl SnapshotSource for Live {
        fn snapshot(&mut self) -> Result<Snapshot, String> {
            self.0.snapshot()
        }
        fn path(&self) -> TracePath {
            self.0.path()
        }
        fn recorded(&self) -> bool {
            false
        }
    }

    #[test]
    fn a_command_that_ended_before_the_first_look_is_counted() {
        // The command ended before observe looked: one more snapshot is
        // taken at once, so its I/O is counted, not lost.
        let mut live = Live(Replay::parse(&recording(3)).unwrap());
        let first = live.snapshot().unwrap();
        let o = observe(
            &mut live,
            first,
            Duration::from_secs(3600),
            None,
            &mut || true,
            &mut |_: &Snapshot, _: &Snapshot| {},
        );
        assert_eq!((o.first.elapsed_s, o.last.elapsed_s), (0.0, 1.0));
        assert!(o.error.is_none());
    }

    #[test]
    fn a_recording_plays_to_its_end() {
        let mut r = Replay::parse(&recording(4)).unwrap();
        assert_eq!(r.path(), TracePath::PerfSamples);
        let mut intervals = 0;
        let first = r.snapshot().unwrap();
        let o = observe(
            &mut r,
            first,
            Duration::from_secs(1),
            None,
            &mut || false,
            &mut |_: &Snapshot, _: &Snapshot| intervals += 1,
        );
        assert_eq!(intervals, 3);
        assert_eq!((o.first.elapsed_s, o.last.elapsed_s), (0.0, 3.0));
        assert!(o.error.is_none());
    }

    #[test]
    fn for_a_duration_stops_there_and_ctrl_c_at_once() {
        let mut r = Replay::parse(&recording(6)).unwrap();
        let first = r.snapshot().unwrap();
        let o = observe(
            &mut r,
            first,
            Duration::from_secs(1),
            Some(Duration::from_secs(2)),
            &mut || false,
            &mut |_: &Snapshot, _: &Snapshot| {},
        );
        assert_eq!(o.last.elapsed_s, 2.0);
        let mut r = Replay::parse(&recording(6)).unwrap();
        let first = r.snapshot().unwrap();
        let o = observe(
            &mut r,
            first,
            Duration::from_secs(1),
            None,
            &mut || true,
            &mut |_: &Snapshot, _: &Snapshot| {},
        );
        assert_eq!(o.last.elapsed_s, 0.0);
    }

    #[test]
    fn what_is_not_a_recording_is_one_line() {
        let e = Replay::parse("{\"snapshots\": []}").err().unwrap();
        assert_eq!(e, "the recording holds no snapshot");
        assert!(Replay::parse("[")
            .err()
            .unwrap()
            .starts_with("not a recording"));
    }
}
