//! Tracing the block layer for `watch` (issue 28): the kernel side. The
//! block tracepoints' fields are found in their tracefs `format` files
//! (`format.rs`, mounted privately when tracefs is not: `tracefs.rs`);
//! small BPF programs built here (`bpf/`) count each event into maps
//! inside the kernel, and where the kernel refuses BPF, raw perf samples
//! of the same tracepoints are counted in user space (`ring.rs`) by the
//! same rules (`tally.rs`). Either way the result is a cumulative
//! `blocktrace::Snapshot`. Everything is a file descriptor: dropping the
//! `Tracer`, or the process dying (even by SIGKILL), disables it all.

mod access;
mod bpf;
mod btf;
mod format;
mod perf;
mod ring;
mod tally;
mod tracefs;

/// The parsers by themselves, for the fuzz targets (fuzz/src/entries.rs).
pub use bpf::{sampled, Typed};
pub use btf::Btf;
pub use format::{layout as event_layout, parse as parse_event_format, Event};
pub use ring::count_record;
pub use tally::{dev_num, Tally};

use crate::sys::blocktrace::{
    Accounted, BpfAttach, DevNum, Direction, Grains, Snapshot, TracePath,
};
use crate::sys::{cgroup, procfs};
use format::{FormatError, Layout};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// How much the tracer holds at once, on both paths. What goes beyond
/// is counted, never dropped silently: devices beyond `devices` are named
/// as not traced, requests beyond `inflight` counted as untimed, the I/Os
/// of submitters beyond `submitters` as unattributed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity {
    pub devices: usize,
    /// Requests timed (issue to completion) at once, at most: the
    /// entries of the typed path's `timers` (rounded up to a power of
    /// two; a request may take one of two, so it may find no room with
    /// fewer in flight) or of the other paths' table.
    pub inflight: usize,
    /// (device, direction, stage, comm, cgroup) counted.
    pub submitters: usize,
    /// (device, device below, direction) counted.
    pub legs: usize,
    /// One request in this many (a power of two) is timed, chosen by its
    /// sector (`bpf::prog::sampled`): a request outside the sample costs
    /// no lookup at its completion. 1 times every request.
    pub latency_one_in: u32,
}

impl Capacity {
    /// What `watch` traces with.
    pub const DEFAULT: Capacity = Capacity {
        devices: 4_096,
        inflight: 16_384,
        submitters: 4_096,
        legs: 4_096,
        latency_one_in: 8,
    };

    /// log2 of `latency_one_in` (rounded down to a power of two).
    pub fn sample_bits(&self) -> u32 {
        self.latency_one_in.max(1).ilog2()
    }
}

/// Which path to take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefer {
    /// BPF (typed raw tracepoints where the kernel has BTF, else perf
    /// events on the tracepoints), else raw perf samples (saying why BPF
    /// was refused).
    Auto,
    /// BPF, either way, or an error.
    Bpf,
    /// BPF on perf events reading the tracefs records even where the
    /// kernel has BTF (tests, comparisons), or an error.
    BpfTracefs,
    /// Raw perf samples even where BPF would work (tests, comparisons).
    PerfSamples,
}

/// Why tracing could not start; each message is one line.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot trace the block layer: {0}")]
    NotPermitted(String),
    #[error("cannot read the block tracepoints from tracefs: {0}")]
    Tracefs(String),
    #[error("the tracefs format of {event} cannot be used: {source}")]
    Format {
        event: &'static str,
        source: FormatError,
    },
    #[error("the kernel refused the BPF counting programs: {0}")]
    Bpf(String),
    #[error("cannot open the block tracepoints as perf events: {0}")]
    Perf(String),
    #[error("cannot read the BPF maps: {0}")]
    Read(String),
}

enum Backend {
    Bpf(bpf::BpfTrace, BpfAttach),
    Perf(ring::PerfTrace),
}

/// The programs on typed raw tracepoints, from the kernel's BTF.
fn start_typed(devs: &[Grains], cap: Capacity) -> Result<bpf::BpfTrace, String> {
    let btf = btf::vmlinux()?;
    let typed = bpf::Typed::from(&btf)?;
    bpf::BpfTrace::start(devs, bpf::Programs::Typed(&typed), cap)
}

/// The tracepoints attached and counting.
pub struct Tracer {
    backend: Backend,
    started: Instant,
    bpf_refused: Option<String>,
    /// Why the typed raw tracepoints were not used, when BPF runs on
    /// perf events instead (no BTF, or a field it lacks).
    typed_refused: Option<String>,
    /// The devices counted, and those asked for beyond the tracer's limit.
    traced: Vec<DevNum>,
    untraced: Vec<DevNum>,
    /// cgroup ids already looked for, and the paths of those found.
    cgroups: Mutex<HashMap<u64, Option<String>>>,
}

/// The events' ids and layouts, from tracefs.
fn layouts() -> Result<Vec<(Event, u64, Layout)>, TraceError> {
    let files = tracefs::read_events().map_err(TraceError::Tracefs)?;
    files
        .iter()
        .map(|f| {
            let bad = |source| TraceError::Format {
                event: f.event.name(),
                source,
            };
            let parsed = format::parse(&f.format).map_err(bad)?;
            Ok((
                f.event,
                f.id,
                format::layout(f.event, &parsed).map_err(bad)?,
            ))
        })
        .collect()
}

/// The devices to count, once each, with usable grains, and the devices
/// beyond `max`, which are not counted.
fn devices(grains: &[Grains], max: usize) -> (Vec<Grains>, Vec<DevNum>) {
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<&Grains> = grains.iter().filter(|g| seen.insert(g.dev)).collect();
    let cut = unique.len().min(max);
    (
        unique[..cut].iter().map(|g| tally::sane(g)).collect(),
        unique[cut..].iter().map(|g| g.dev).collect(),
    )
}

/// What /proc/diskstats says of `devs`, per direction.
fn diskstats(devs: &[DevNum]) -> Vec<((DevNum, Direction), Accounted)> {
    let acc = |v: [u64; 3]| Accounted {
        ios: v[0],
        merges: v[1],
        sectors: v[2],
    };
    let mut out = Vec::new();
    for l in procfs::parse_diskstats(&procfs::diskstats()) {
        let dev = DevNum {
            major: l.major,
            minor: l.minor,
        };
        if !devs.contains(&dev) {
            continue;
        }
        out.push(((dev, Direction::Read), acc(l.read)));
        out.push(((dev, Direction::Write), acc(l.write)));
        out.push(((dev, Direction::Discard), acc(l.discard)));
        let flush = Accounted {
            ios: l.flushes,
            ..Accounted::default()
        };
        out.push(((dev, Direction::Flush), flush));
    }
    out.sort_by_key(|(k, _)| *k);
    out
}

/// Single-line text (a verifier log or an errno may carry newlines).
fn one_line(s: String) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Tracer {
    /// Attach to the block tracepoints and count the I/O of the devices
    /// in `grains` (others are not counted), judged against their grains.
    pub fn start(grains: &[Grains], prefer: Prefer) -> Result<Tracer, TraceError> {
        Tracer::start_with(grains, prefer, Capacity::DEFAULT)
    }

    /// [`Tracer::start`] holding `cap` at once (the tests fill smaller
    /// tables on purpose).
    pub fn start_with(
        grains: &[Grains],
        prefer: Prefer,
        cap: Capacity,
    ) -> Result<Tracer, TraceError> {
        let who = access::current();
        if let Some(missing) = who.missing() {
            return Err(TraceError::NotPermitted(missing));
        }
        let (devs, untraced) = devices(grains, cap.devices);
        let started = Instant::now();
        let tracer = |backend, bpf_refused, typed_refused| Tracer {
            backend,
            started,
            bpf_refused,
            typed_refused,
            traced: devs.iter().map(|g| g.dev).collect(),
            untraced: untraced.clone(),
            cgroups: Mutex::new(HashMap::new()),
        };
        let typed_refused = if !who.may_bpf() {
            None
        } else if matches!(prefer, Prefer::Auto | Prefer::Bpf) {
            match start_typed(&devs, cap) {
                Ok(b) => {
                    return Ok(tracer(
                        Backend::Bpf(b, BpfAttach::RawTracepoint),
                        None,
                        None,
                    ))
                }
                Err(e) => Some(one_line(e)),
            }
        } else {
            None
        };
        let events = layouts()?;
        let perf_path = |bpf_refused| {
            ring::PerfTrace::start(&devs, &events, cap)
                .map(|p| tracer(Backend::Perf(p), bpf_refused, None))
                .map_err(|e| TraceError::Perf(one_line(e)))
        };
        if prefer == Prefer::PerfSamples {
            return perf_path(None);
        }
        let bpf = if who.may_bpf() {
            bpf::BpfTrace::start(&devs, bpf::Programs::Tracefs(&events), cap).map_err(one_line)
        } else {
            Err("needs CAP_BPF and CAP_PERFMON, or root".to_string())
        };
        match (bpf, prefer) {
            (Ok(b), _) => Ok(tracer(
                Backend::Bpf(b, BpfAttach::PerfEvent),
                None,
                typed_refused,
            )),
            (Err(e), Prefer::Bpf | Prefer::BpfTracefs) => Err(TraceError::Bpf(e)),
            (Err(e), _) => perf_path(Some(e)),
        }
    }

    /// How the BPF programs are attached; None on the perf samples path.
    pub fn attach(&self) -> Option<BpfAttach> {
        match self.backend {
            Backend::Bpf(_, a) => Some(a),
            Backend::Perf(_) => None,
        }
    }

    /// Why the typed raw tracepoints were not used, when BPF runs on perf
    /// events instead.
    pub fn typed_refused(&self) -> Option<&str> {
        self.typed_refused.as_deref()
    }

    /// The path that runs.
    pub fn path(&self) -> TracePath {
        match self.backend {
            Backend::Bpf(..) => TracePath::Bpf,
            Backend::Perf(_) => TracePath::PerfSamples,
        }
    }

    /// Why BPF was refused, when `Prefer::Auto` fell back to samples.
    pub fn bpf_refused(&self) -> Option<&str> {
        self.bpf_refused.as_deref()
    }

    /// Everything counted since `start`, with the kernel's own
    /// statistics of the traced devices read at the same time.
    pub fn snapshot(&self) -> Result<Snapshot, TraceError> {
        let elapsed_s = self.started.elapsed().as_secs_f64();
        let mut s = match &self.backend {
            Backend::Perf(p) => p.snapshot(elapsed_s),
            Backend::Bpf(b, _) => {
                let read = |e: std::io::Error| TraceError::Read(e.to_string());
                Snapshot {
                    counters: b.counters().map_err(read)?,
                    latency: b.latency().map_err(read)?,
                    submitters: b.submitters().map_err(read)?,
                    legs: b.legs().map_err(read)?,
                    missed_events: b.missed().map_err(read)?,
                    elapsed_s,
                    ..Snapshot::default()
                }
            }
        };
        s.diskstats = diskstats(&self.traced);
        s.untraced_devices = self.untraced.clone();
        s.cgroups = self.cgroup_paths(&s);
        Ok(s)
    }

    /// The paths of the cgroups the submitters ran in, each id looked
    /// for once (a walk of the cgroup2 tree).
    fn cgroup_paths(&self, s: &Snapshot) -> Vec<(u64, String)> {
        let mut known = self.cgroups.lock().unwrap_or_else(|p| p.into_inner());
        let mut ids: Vec<u64> = s.submitters.iter().map(|(k, _)| k.cgroup_id).collect();
        ids.sort_unstable();
        ids.dedup();
        let new: Vec<u64> = ids
            .iter()
            .copied()
            .filter(|id| *id != 0 && !known.contains_key(id))
            .collect();
        if !new.is_empty() {
            let found = cgroup::paths(&new);
            for id in new {
                known.insert(id, found.get(&id).cloned());
            }
        }
        ids.iter()
            .filter_map(|id| Some((*id, known.get(id)?.clone()?)))
            .collect()
    }
}
