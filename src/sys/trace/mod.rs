//! Tracing the block layer for `watch` (issue 28): the kernel side. The
//! block tracepoints' fields are found in their tracefs `format` files
//! (`format.rs`, mounted privately when tracefs is not: `tracefs.rs`);
//! small BPF programs built here (`bpf/`) count each event into maps
//! inside the kernel, and where the kernel refuses BPF, raw perf samples
//! of the same tracepoints are counted in user space (`ring.rs`) by the
//! same rules (`tally.rs`). Either way the result is a cumulative
//! `blocktrace::Snapshot`. Everything is a file descriptor: dropping the
//! `Tracer`, or the process dying (even by SIGKILL), disables it all.

pub mod access;
pub mod bpf;
pub mod format;
pub mod perf;
pub mod ring;
pub mod tally;
pub mod tracefs;

use crate::sys::blocktrace::{Grains, Snapshot, TracePath};
use format::{Event, FormatError, Layout};
use std::time::Instant;

/// Which path to take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefer {
    /// BPF, else raw perf samples (saying why BPF was refused).
    Auto,
    /// BPF or an error.
    Bpf,
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
    Bpf(bpf::BpfTrace),
    Perf(ring::PerfTrace),
}

/// The tracepoints attached and counting.
pub struct Tracer {
    backend: Backend,
    started: Instant,
    bpf_refused: Option<String>,
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

/// The devices to count, once each, with usable grains.
fn devices(grains: &[Grains]) -> Vec<Grains> {
    let mut seen = std::collections::HashSet::new();
    grains
        .iter()
        .filter(|g| seen.insert(g.dev))
        .take(bpf::MAX_DEVICES)
        .map(tally::sane)
        .collect()
}

/// Single-line text (a verifier log or an errno may carry newlines).
fn one_line(s: String) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Tracer {
    /// Attach to the block tracepoints and count the I/O of the devices
    /// in `grains` (others are not counted), judged against their grains.
    pub fn start(grains: &[Grains], prefer: Prefer) -> Result<Tracer, TraceError> {
        let who = access::current();
        if let Some(missing) = who.missing() {
            return Err(TraceError::NotPermitted(missing));
        }
        let events = layouts()?;
        let devs = devices(grains);
        let started = Instant::now();
        let perf_path = |bpf_refused| {
            ring::PerfTrace::start(&devs, &events)
                .map(|p| Tracer {
                    backend: Backend::Perf(p),
                    started,
                    bpf_refused,
                })
                .map_err(|e| TraceError::Perf(one_line(e)))
        };
        if prefer == Prefer::PerfSamples {
            return perf_path(None);
        }
        let bpf = if who.may_bpf() {
            bpf::BpfTrace::start(&devs, &events).map_err(one_line)
        } else {
            Err("needs CAP_BPF and CAP_PERFMON, or root".to_string())
        };
        match (bpf, prefer) {
            (Ok(b), _) => Ok(Tracer {
                backend: Backend::Bpf(b),
                started,
                bpf_refused: None,
            }),
            (Err(e), Prefer::Bpf) => Err(TraceError::Bpf(e)),
            (Err(e), _) => perf_path(Some(e)),
        }
    }

    /// The path that runs.
    pub fn path(&self) -> TracePath {
        match self.backend {
            Backend::Bpf(_) => TracePath::Bpf,
            Backend::Perf(_) => TracePath::PerfSamples,
        }
    }

    /// Why BPF was refused, when `Prefer::Auto` fell back to samples.
    pub fn bpf_refused(&self) -> Option<&str> {
        self.bpf_refused.as_deref()
    }

    /// Everything counted since `start`.
    pub fn snapshot(&self) -> Result<Snapshot, TraceError> {
        let elapsed_s = self.started.elapsed().as_secs_f64();
        match &self.backend {
            Backend::Perf(p) => Ok(p.snapshot(elapsed_s)),
            Backend::Bpf(b) => {
                let read = |e: std::io::Error| TraceError::Read(e.to_string());
                Ok(Snapshot {
                    counters: b.counters().map_err(read)?,
                    latency: b.latency().map_err(read)?,
                    lost_records: 0,
                    elapsed_s,
                })
            }
        }
    }
}
