//! The io_uring engine: one ring per job, the target registered as a fixed
//! file, one registered buffer per queue slot, submissions and completions
//! handled in batches with one clock read per batch.

use super::{
    short_io, AlignedBuf, Descriptor, Engine, EngineKind, Measurement, Meter, Positions, Workload,
};
use io_uring::{opcode, squeue, types, IoUring};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The registry's entry (see `engine::ENGINES`).
pub static ENGINE: Descriptor = Descriptor {
    kind: EngineKind::IoUring,
    fio: "ioengine=io_uring\nfixedbufs=1\nregisterfiles=1",
    depth_is_threads: false,
    start: |s| {
        Ok(Box::new(Uring::new(
            s.fd,
            s.qd,
            s.max_bs,
            s.writes,
            s.same_thread,
        )?))
    },
};

/// Marks the write half of a linked write + fdatasync pair.
const WRITE_TAG: u64 = 1 << 32;

pub struct Uring {
    ring: IoUring,
    qd: u32,
    max_bs: u32,
    buf: AlignedBuf,
    /// The buffers are registered (READ_FIXED / WRITE_FIXED); false when the
    /// kernel refused to pin them, then plain READ / WRITE are used.
    fixed_buffers: bool,
}

impl Uring {
    /// `same_thread`: the ring is used only by the thread creating it,
    /// which lets the kernel run completion work at the next wait.
    pub fn new(
        fd: RawFd,
        qd: u32,
        max_bs: u32,
        writes: bool,
        same_thread: bool,
    ) -> io::Result<Uring> {
        let qd = qd.max(1);
        // Two entries per slot: a write and its linked fdatasync.
        let entries = (2 * qd).next_power_of_two();
        // Completions are only reaped inside io_uring_enter: with one
        // thread, let the kernel defer task work to then (6.1+); otherwise
        // cooperative task work (5.19+); a plain ring on older kernels.
        let single = if same_thread {
            IoUring::builder()
                .setup_single_issuer()
                .setup_defer_taskrun()
                .build(entries)
        } else {
            Err(io::Error::other("shared between threads"))
        };
        let ring = single
            .or_else(|_| IoUring::builder().setup_coop_taskrun().build(entries))
            .or_else(|_| IoUring::builder().build(entries))?;
        ring.submitter().register_files(&[fd])?;
        let mut buf = AlignedBuf::new(qd as usize * max_bs as usize, writes);
        let base = buf.as_mut_ptr();
        // io-uring's register_buffers takes libc's iovec: the one use of libc
        // outside the tests, as rustix has no io_uring registration.
        let iovecs: Vec<libc::iovec> = (0..qd as usize)
            .map(|i| libc::iovec {
                // SAFETY: slot i lies inside the qd × max_bs allocation.
                iov_base: unsafe { base.add(i * max_bs as usize) }.cast(),
                iov_len: max_bs as usize,
            })
            .collect();
        // SAFETY: the buffers live as long as the ring: both are owned by
        // the returned value, and the ring is dropped first (field order).
        let fixed_buffers = unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        Ok(Uring {
            ring,
            qd,
            max_bs,
            buf,
            fixed_buffers,
        })
    }

    fn slot_ptr(&mut self, slot: usize) -> *mut u8 {
        // SAFETY: slot < qd, so the offset stays inside the allocation.
        unsafe { self.buf.as_mut_ptr().add(slot * self.max_bs as usize) }
    }

    /// Queue the I/O (and its fdatasync) for `slot` at byte `at`.
    fn push(&mut self, w: &Workload, slot: usize, at: u64) -> io::Result<()> {
        let ptr = self.slot_ptr(slot);
        let len = w.block_size;
        let file = types::Fixed(0);
        let io = match (w.pattern.is_write(), self.fixed_buffers) {
            (false, true) => opcode::ReadFixed::new(file, ptr, len, slot as u16)
                .offset(at)
                .build(),
            (false, false) => opcode::Read::new(file, ptr, len).offset(at).build(),
            (true, true) => opcode::WriteFixed::new(file, ptr, len, slot as u16)
                .offset(at)
                .build(),
            (true, false) => opcode::Write::new(file, ptr, len).offset(at).build(),
        };
        let sync = w.fdatasync && w.pattern.is_write();
        let io = if sync {
            io.user_data(slot as u64 | WRITE_TAG)
                .flags(squeue::Flags::IO_LINK)
        } else {
            io.user_data(slot as u64)
        };
        let mut sq = self.ring.submission();
        // SAFETY: the buffer stays valid and untouched until this slot's
        // completion is reaped (the slot is not reused before then).
        unsafe {
            sq.push(&io)
                .map_err(|_| io::Error::other("submission queue full"))?;
            if sync {
                let fsync = opcode::Fsync::new(file)
                    .flags(types::FsyncFlags::DATASYNC)
                    .build()
                    .user_data(slot as u64);
                sq.push(&fsync)
                    .map_err(|_| io::Error::other("submission queue full"))?;
            }
        }
        Ok(())
    }
}

impl Engine for Uring {
    fn kind(&self) -> EngineKind {
        EngineKind::IoUring
    }

    fn run(&mut self, w: &Workload, stop: &AtomicBool) -> io::Result<Measurement> {
        if w.block_size > self.max_bs || w.qd > self.qd {
            return Err(io::Error::other(
                "workload larger than the engine was built for",
            ));
        }
        let mut pos = Positions::new(w, 0);
        let mut free: Vec<usize> = (0..w.qd as usize).rev().collect();
        let mut issued_at = vec![Instant::now(); w.qd as usize];
        let mut offset_of = vec![0u64; w.qd as usize];
        let mut place_of = vec![0usize; w.qd as usize];
        let mut inflight = 0usize;
        let mut meter = Meter::new(Instant::now(), w, 1);
        let mut failure: Option<io::Error> = None;
        let sync = w.fdatasync && w.pattern.is_write();
        loop {
            let now = Instant::now();
            let stopping = failure.is_some() || stop.load(Ordering::Relaxed);
            if !free.is_empty() && meter.open(now, stopping) {
                while let Some(slot) = free.pop() {
                    let (place, at) = pos.next();
                    self.push(w, slot, at)?;
                    issued_at[slot] = now;
                    offset_of[slot] = at;
                    place_of[slot] = place;
                    inflight += 1;
                }
            }
            if inflight == 0 {
                // Nothing in flight and nothing issued: the window is closed.
                meter.open(now, true);
                break;
            }
            // Wake once a quarter of the queue has completed: three quarters
            // stay in flight, and wake-ups and system calls per I/O drop.
            // Waiting for one at a time lagged fio (README, Performance).
            self.ring.submit_and_wait((inflight / 4).max(1))?;
            let now = Instant::now();
            for cqe in self.ring.completion() {
                let tag = cqe.user_data();
                let slot = (tag & 0xffff_ffff) as usize;
                let is_write_half = tag & WRITE_TAG != 0;
                // What the data transfer must return: the whole block. The
                // fdatasync of a pair returns 0, and -ECANCELED after its
                // write failed (that error is kept instead).
                let expect = if sync && !is_write_half {
                    0
                } else {
                    w.block_size as i32
                };
                let res = cqe.result();
                if res != expect
                    && failure.is_none()
                    && res != -rustix::io::Errno::CANCELED.raw_os_error()
                {
                    failure = Some(if res < 0 {
                        io::Error::from_raw_os_error(-res)
                    } else {
                        short_io(w.pattern, res as usize, w.block_size, offset_of[slot])
                    });
                }
                if is_write_half {
                    // The pair completes, and is timed, with its fdatasync.
                    continue;
                }
                inflight -= 1;
                free.push(slot);
                if res == expect {
                    meter.complete(place_of[slot], issued_at[slot], now);
                }
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        Ok(meter.finish())
    }
}
