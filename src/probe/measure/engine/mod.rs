//! I/O engines: the part that issues reads and writes and times them.
//!
//! One small trait, like fio's ioengines: an engine is built once per job
//! for a file descriptor, then runs one [`Workload`] at a time and returns a
//! [`Measurement`]. [`uring`] is the fast path (io_uring, registered buffers
//! and file, batched submission); [`psync`] is the fallback (a pool of
//! threads doing `pread`/`pwrite`), used when io_uring is unavailable.

mod buffers;
mod measurement;
mod psync;
mod uring;
mod workload;

pub use buffers::AlignedBuf;
pub use measurement::{in_parallel, new_histogram, Measurement, Meter};
pub use workload::{short_io, Pattern, Positions, Workload};

use serde::{Deserialize, Serialize};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::AtomicBool;

/// Which engine ran (or was asked for with `--engine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EngineKind {
    #[serde(rename = "io_uring")]
    IoUring,
    #[serde(rename = "psync")]
    Psync,
}

crate::spelled_as_serde!(EngineKind);

/// An engine instance, bound to one open file.
pub trait Engine: Send {
    fn kind(&self) -> EngineKind;
    /// Run `w` until its warm-up and duration have passed or `stop` is set.
    fn run(&mut self, w: &Workload, stop: &AtomicBool) -> io::Result<Measurement>;
}

/// What an engine is started with: the open target, I/Os up to `max_bs`
/// bytes at depth `qd`, and whether it runs only on the calling thread.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub fd: RawFd,
    pub qd: u32,
    pub max_bs: u32,
    pub writes: bool,
    pub same_thread: bool,
}

/// One engine as the registry knows it.
pub struct Descriptor {
    pub kind: EngineKind,
    /// The fio job lines that run the same I/O path.
    pub fio: &'static str,
    /// The queue depth is a number of threads (fio `numjobs`), not `iodepth`.
    pub depth_is_threads: bool,
    pub start: fn(&Setup) -> io::Result<Box<dyn Engine>>,
}

/// Every engine, in preference order: `--engine auto` takes the first
/// that starts. A new engine is one file with its descriptor and a line here.
pub static ENGINES: &[&Descriptor] = &[&uring::ENGINE, &psync::ENGINE];

/// The descriptor of `kind`.
pub fn descriptor(kind: EngineKind) -> &'static Descriptor {
    ENGINES
        .iter()
        .find(|d| d.kind == kind)
        .expect("every engine kind is registered")
}

/// The engine `--engine NAME` names; None for `auto` or an unknown name.
pub fn by_name(name: &str) -> Option<EngineKind> {
    ENGINES.iter().map(|d| d.kind).find(|k| k.as_str() == name)
}

/// Start the engine asked for, or with None the first in preference order
/// that starts; the reasons the ones before it could not start come back
/// with it.
pub fn build(
    choice: Option<EngineKind>,
    setup: &Setup,
) -> io::Result<(Box<dyn Engine>, Option<String>)> {
    if let Some(kind) = choice {
        return Ok(((descriptor(kind).start)(setup)?, None));
    }
    let mut why: Vec<String> = Vec::new();
    let mut last = None;
    for d in ENGINES {
        match (d.start)(setup) {
            Ok(e) => {
                let reason = (!why.is_empty())
                    .then(|| format!("{}; using {}", why.join("; "), d.kind.as_str()));
                return Ok((e, reason));
            }
            Err(e) => {
                why.push(format!("{} unavailable ({e})", d.kind.as_str()));
                last = Some(e);
            }
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no I/O engine registered")))
}
