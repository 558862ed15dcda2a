//! Many reads of one device in flight together: one io_uring submission
//! for all of them and one wait, where a pread each would be a system
//! call, a trip through the driver and a wake-up of the reader apiece. A
//! check of many disks reads each disk's first bytes this way (the table
//! read, every partition's start and the few bytes each format looks at
//! beyond it), which costs a loop device a third of what as many preads
//! do and a SAN LUN one round trip instead of one per read. One ring per
//! thread, made at its first batch; where the kernel refuses io_uring
//! (too old, or forbidden by a seccomp filter or sysctl) the reads are
//! made one by one.

use io_uring::{opcode, types, IoUring, Probe};
use std::cell::RefCell;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// Reads in flight at once: a ring's size.
const ENTRIES: u32 = 64;

// The thread's ring: None before its first batch, Some(None) once the
// kernel refused one or failed.
thread_local! {
    static RING: RefCell<Option<Option<IoUring>>> = const { RefCell::new(None) };
}

/// Each read's outcome: the bytes read (possibly short), or the errno.
pub type Outcome = Result<usize, io::Error>;

/// Read each `(offset, buffer)` of `reads` from `file`, all in flight
/// together (in rings of [`ENTRIES`]), with the outcome of each; None
/// when this thread has no ring, and nothing was read.
pub fn read_batch(file: &File, reads: &mut [(u64, &mut [u8])]) -> Option<Vec<Outcome>> {
    if reads.is_empty() {
        return Some(Vec::new());
    }
    RING.with(|slot| {
        let mut slot = slot.borrow_mut();
        let ring = slot.get_or_insert_with(new_ring);
        ring.as_ref()?;
        let mut out = Vec::with_capacity(reads.len());
        for chunk in reads.chunks_mut(ENTRIES as usize) {
            let done = ring.as_mut().map(|r| submit(r, file, chunk));
            match done {
                Some(Ok(done)) => out.extend(done),
                // A ring the kernel failed is not used again; these reads
                // are left to the caller.
                Some(Err(e)) => {
                    *ring = None;
                    out.extend(chunk.iter().map(|_| Err(io::Error::from(e.kind()))));
                }
                // The ring failed on an earlier chunk of these reads.
                None => out.extend(chunk.iter().map(|_| Err(io::ErrorKind::Other.into()))),
            }
        }
        Some(out)
    })
}

/// A ring that can read: IORING_OP_READ came in 5.6, and a kernel from
/// 5.1 to 5.5 makes the ring but fails each read with EINVAL (each would
/// then be read twice); it has no probe either, so it gets no ring.
fn new_ring() -> Option<IoUring> {
    let ring = IoUring::builder()
        .setup_coop_taskrun()
        .build(ENTRIES)
        .or_else(|_| IoUring::new(ENTRIES))
        .ok()?;
    let mut probe = Probe::new();
    ring.submitter().register_probe(&mut probe).ok()?;
    probe.is_supported(opcode::Read::CODE).then_some(ring)
}

/// Submit `reads` (at most [`ENTRIES`]) and wait for every one. On Err
/// the ring may hold entries the kernel never took, so it must not be
/// used again; every one it took has completed by then.
fn submit(
    ring: &mut IoUring,
    file: &File,
    reads: &mut [(u64, &mut [u8])],
) -> io::Result<Vec<Outcome>> {
    let fd = types::Fd(file.as_raw_fd());
    for (i, (at, buf)) in reads.iter_mut().enumerate() {
        let len = u32::try_from(buf.len()).map_err(|_| io::ErrorKind::InvalidInput)?;
        let sqe = opcode::Read::new(fd, buf.as_mut_ptr(), len)
            .offset(*at)
            .build()
            .user_data(i as u64);
        // SAFETY: each buffer outlives its read: nothing returns from here
        // while a read the kernel took is still in flight (below).
        unsafe { ring.submission().push(&sqe) }.map_err(|_| io::ErrorKind::OutOfMemory)?;
    }
    let n = reads.len();
    let mut result: Vec<Option<Outcome>> = reads.iter().map(|_| None).collect();
    let mut reaped = 0;
    let mut failed = None;
    loop {
        match &failed {
            None => match ring.submit_and_wait(n - reaped) {
                Ok(_) => {}
                Err(e) if retry(&e) => {}
                Err(e) => failed = Some(e),
            },
            // The reads taken complete without our waiting call (the ring
            // defers no work to it).
            Some(_) => std::thread::sleep(Duration::from_millis(1)),
        }
        for cqe in ring.completion() {
            let Some(slot) = result.get_mut(cqe.user_data() as usize) else {
                continue;
            };
            let r = cqe.result();
            *slot = Some(usize::try_from(r).map_err(|_| io::Error::from_raw_os_error(-r)));
            reaped += 1;
        }
        let taken = n - ring.submission().len();
        if reaped >= n || (failed.is_some() && reaped >= taken) {
            break;
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(result
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(io::ErrorKind::Other.into())))
        .collect())
}

fn retry(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINTR) | Some(libc::EAGAIN) | Some(libc::EBUSY)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_batch_reads_every_buffer_from_its_offset() {
        let mut f = tempfile::tempfile().unwrap();
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        f.write_all(&bytes).unwrap();
        let mut a = vec![0u8; 4096];
        let mut b = [0u8; 100];
        let mut c = [0u8; 10];
        let mut reads: Vec<(u64, &mut [u8])> =
            vec![(8192, &mut a[..]), (299_950, &mut b[..]), (7, &mut c[..])];
        // The machines the tests run on have io_uring (5.6 or later, not
        // refused); the fallback is tested in tests/live.rs.
        let out = read_batch(&f, &mut reads).expect("io_uring refused here");
        assert_eq!(out.len(), 3);
        assert_eq!(*out[0].as_ref().unwrap(), 4096);
        assert_eq!(*out[1].as_ref().unwrap(), 50, "short at the end");
        assert_eq!(a, bytes[8192..8192 + 4096]);
        assert_eq!(b[..50], bytes[299_950..]);
        assert_eq!(c, bytes[7..17]);
    }

    #[test]
    fn more_reads_than_a_ring_holds() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&[7u8; 1000]).unwrap();
        let mut bufs = vec![[0u8; 3]; 200];
        let mut reads: Vec<(u64, &mut [u8])> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| (i as u64 * 4, &mut b[..]))
            .collect();
        let out = read_batch(&f, &mut reads).expect("io_uring refused here");
        assert!(out.iter().all(|r| *r.as_ref().unwrap() == 3));
        assert!(bufs.iter().all(|b| *b == [7; 3]));
    }
}
