//! The fallback engine: queue depth N is N threads, each doing blocking
//! `pread`/`pwrite` (and `fdatasync` when asked). Works wherever plain
//! system calls do, including under seccomp filters that block io_uring.

use super::{
    short_io, AlignedBuf, Descriptor, Engine, EngineKind, Measurement, Meter, Positions, Workload,
};
use rustix::fd::BorrowedFd;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The registry's entry (see `engine::ENGINES`).
pub static ENGINE: Descriptor = Descriptor {
    kind: EngineKind::Psync,
    fio: "ioengine=psync",
    depth_is_threads: true,
    start: |s| Ok(Box::new(Psync::new(s.fd, s.qd, s.max_bs, s.writes))),
};

pub struct Psync {
    fd: RawFd,
    bufs: Vec<AlignedBuf>,
}

impl Psync {
    pub fn new(fd: RawFd, qd: u32, max_bs: u32, writes: bool) -> Psync {
        let bufs = (0..qd.max(1))
            .map(|_| AlignedBuf::new(max_bs as usize, writes))
            .collect();
        Psync { fd, bufs }
    }
}

/// One thread's loop: blocking I/O back to back until the deadline.
fn worker(
    fd: RawFd,
    buf: &mut AlignedBuf,
    w: &Workload,
    thread: u64,
    stop: &AtomicBool,
) -> io::Result<Measurement> {
    // SAFETY: the descriptor is owned by the prober and outlives the run.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    // Each thread is its own stream: sequential ones start apart.
    let threads = u64::from(w.qd.max(1));
    let stream = Workload {
        job: (u64::from(w.job) * threads + thread) as u32,
        jobs: (u64::from(w.jobs.max(1)) * threads) as u32,
        ..w.clone()
    };
    let mut pos = Positions::new(&stream, thread);
    let bs = w.block_size as usize;
    let mut meter = Meter::new(Instant::now(), w, threads);
    loop {
        let t0 = Instant::now();
        if !meter.open(t0, stop.load(Ordering::Relaxed)) {
            break;
        }
        let (place, at) = pos.next();
        let data = &mut buf.as_mut_slice()[..bs];
        let n = if w.pattern.is_write() {
            let n = rustix::io::pwrite(fd, data, at)?;
            if w.fdatasync {
                rustix::fs::fdatasync(fd)?;
            }
            n
        } else {
            rustix::io::pread(fd, data, at)?
        };
        if n != bs {
            return Err(short_io(w.pattern, n, w.block_size, at));
        }
        meter.complete(place, t0, Instant::now());
    }
    Ok(meter.finish())
}

impl Engine for Psync {
    fn kind(&self) -> EngineKind {
        EngineKind::Psync
    }

    fn run(&mut self, w: &Workload, stop: &AtomicBool) -> io::Result<Measurement> {
        let threads = (w.qd as usize).min(self.bufs.len());
        let fd = self.fd;
        super::in_parallel(self.bufs[..threads].iter_mut().enumerate(), |(i, buf)| {
            worker(fd, buf, w, i as u64, stop)
        })
    }
}
