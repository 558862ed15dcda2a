//! The fallback where the kernel refuses BPF: every hit of the seven
//! tracepoints as a raw perf sample (PERF_SAMPLE_TIME | PERF_SAMPLE_RAW)
//! into one ring buffer per CPU, read by a thread and counted in user
//! space through the format files' offsets (tally.rs). Records the kernel
//! could not write (a full ring) arrive as PERF_RECORD_LOST and are
//! counted, never dropped silently. The ring layout is struct
//! perf_event_mmap_page and its data pages (include/uapi/linux/perf_event.h).

use super::format::{Event, Layout, Record};
use super::perf::{self, Sampling, SAMPLE_CGROUP, SAMPLE_RAW, SAMPLE_TIME};
use super::tally::{Tally, Who};
use super::Capacity;
use crate::sys::blocktrace::{Grains, Snapshot, Stage};
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Data pages per CPU ring (a power of two), and the fewer tried when
/// perf_event_mlock_kb refuses that many.
const RING_PAGES: [usize; 3] = [256, 32, 8];
const RECORD_SAMPLE: u32 = 9;
const RECORD_LOST: u32 = 2;
/// perf_event_mmap_page: data_head and data_tail.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;

/// One CPU's ring: a mapping of the first event opened on that CPU.
struct Ring {
    fd: OwnedFd,
    base: *mut u8,
    page: usize,
    data_size: usize,
    record: Vec<u8>,
}

// SAFETY: the mapping belongs to this Ring alone; it is only touched
// under the Mutex that holds it.
unsafe impl Send for Ring {}

impl Ring {
    fn map(fd: OwnedFd) -> io::Result<Ring> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let mut last = io::Error::other("no ring size tried");
        for pages in RING_PAGES {
            let len = page * (pages + 1);
            // SAFETY: a fresh shared mapping of the perf fd; checked below.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
                    0,
                )
            };
            if p != libc::MAP_FAILED {
                return Ok(Ring {
                    fd,
                    base: p.cast(),
                    page,
                    data_size: page * pages,
                    record: Vec::new(),
                });
            }
            last = io::Error::last_os_error();
        }
        Err(last)
    }

    fn word(&self, at: usize) -> &AtomicU64 {
        // SAFETY: the first page is the control page, 8-byte aligned words
        // at these offsets, alive as long as the mapping.
        unsafe { &*(self.base.add(at) as *const AtomicU64) }
    }

    /// Hands each complete record to `f`, then frees its room.
    fn drain(&mut self, f: &mut dyn FnMut(&[u8])) {
        let head = self.word(DATA_HEAD).load(Ordering::Acquire);
        let mut tail = self.word(DATA_TAIL).load(Ordering::Relaxed);
        // SAFETY: the data area follows the control page.
        let data = unsafe { std::slice::from_raw_parts(self.base.add(self.page), self.data_size) };
        while tail < head {
            let at = (tail % self.data_size as u64) as usize;
            let size =
                u16::from_ne_bytes([data[(at + 6) % data.len()], data[(at + 7) % data.len()]])
                    as usize;
            if size < 8 || size as u64 > head - tail {
                // Not a record: skip to the head rather than loop.
                tail = head;
                break;
            }
            self.record.clear();
            let first = size.min(data.len() - at);
            self.record.extend_from_slice(&data[at..at + first]);
            self.record.extend_from_slice(&data[..size - first]);
            f(&self.record);
            tail += size as u64;
        }
        self.word(DATA_TAIL).store(tail, Ordering::Release);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in `map`, once.
        unsafe { libc::munmap(self.base.cast(), self.page + self.data_size) };
    }
}

/// The rings and what they have counted, behind one lock.
struct State {
    rings: Vec<Ring>,
    tally: Tally,
    layouts: HashMap<u16, Layout>,
    /// The samples carry the task's cgroup id (PERF_SAMPLE_CGROUP).
    cgroup: bool,
}

impl State {
    fn drain(&mut self) {
        let State {
            rings,
            tally,
            layouts,
            cgroup,
        } = self;
        // The rings are per CPU: their records are counted in time order
        // across rings, so a request's issue comes before its completion
        // when both are read in one pass (Tally keeps an early completion
        // for the next pass otherwise).
        let mut records: Vec<(u64, Vec<u8>)> = Vec::new();
        for ring in rings.iter_mut() {
            ring.drain(&mut |rec| records.push((sample_time(rec), rec.to_vec())));
        }
        records.sort_by_key(|r| r.0);
        // A remap records no task name: learn the names of this pass's
        // tasks from the events that do (the bio queued right after its
        // remap, by the same task) before counting.
        for (_, rec) in &records {
            if let Some((_, r, _)) = decode(rec, layouts, *cgroup) {
                if let Some(comm) = r.comm {
                    tally.learn(r.pid, comm);
                }
            }
        }
        for (_, rec) in &records {
            count_record(rec, layouts, *cgroup, tally);
        }
    }
}

/// A sample's time (PERF_SAMPLE_TIME, after the 8-byte header); 0 for
/// other records (a loss counts wherever it falls).
fn sample_time(rec: &[u8]) -> u64 {
    match rec.get(0..4) {
        Some(t) if u32::from_ne_bytes([t[0], t[1], t[2], t[3]]) == RECORD_SAMPLE => rec
            .get(8..16)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u64::from_ne_bytes),
        _ => 0,
    }
}

/// A sample's event, counted fields and time, and the task's cgroup id
/// (0 without PERF_SAMPLE_CGROUP): the time after the 8-byte header,
/// then the raw tracepoint record (its size, then the record, which
/// starts with common_type, the event's id, and is padded so that the
/// sample stays 8-byte aligned), then the cgroup id.
fn decode(
    rec: &[u8],
    layouts: &HashMap<u16, Layout>,
    cgroup: bool,
) -> Option<(Event, Record, (u64, u64))> {
    let u32_at = |at: usize| {
        rec.get(at..at + 4)
            .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |at: usize| {
        rec.get(at..at + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_ne_bytes)
    };
    if u32_at(0)? != RECORD_SAMPLE {
        return None;
    }
    let (ns, len) = (u64_at(8)?, u32_at(16)? as usize);
    let raw = rec.get(20..20usize.checked_add(len)?)?;
    let layout = layouts.get(&u16::from_ne_bytes([*raw.first()?, *raw.get(1)?]))?;
    let r = layout.decode(raw)?;
    let cgroup_id = if cgroup { u64_at(20 + len)? } else { 0 };
    Some((layout.event, r, (ns, cgroup_id)))
}

/// One perf record: a sample or a loss.
pub fn count_record(rec: &[u8], layouts: &HashMap<u16, Layout>, cgroup: bool, tally: &mut Tally) {
    let kind = rec
        .get(0..4)
        .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    match kind {
        Some(RECORD_LOST) => {
            let lost = rec
                .get(16..24)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u64::from_ne_bytes);
            tally.lost_records = tally.lost_records.saturating_add(lost);
        }
        Some(RECORD_SAMPLE) => {
            if let Some((event, r, (ns, cgroup_id))) = decode(rec, layouts, cgroup) {
                count_event(event, &r, ns, cgroup_id, tally);
            }
        }
        _ => {}
    }
}

/// The name of task `pid` from /proc, for a remap whose task no event
/// of the pass named (it has exited, or its bio was queued later).
fn proc_comm(pid: u32) -> Option<[u8; 16]> {
    let text = std::fs::read(format!("/proc/{pid}/comm")).ok()?;
    let name = text.strip_suffix(b"\n").unwrap_or(&text);
    let mut comm = [0u8; 16];
    let n = name.len().min(15);
    comm[..n].copy_from_slice(&name[..n]);
    Some(comm)
}

fn count_event(e: Event, r: &Record, ns: u64, cgroup_id: u64, t: &mut Tally) {
    let who = |comm: Option<[u8; 16]>| comm.map(|comm| Who { comm, cgroup_id });
    match e {
        Event::BioQueue => {
            t.io(
                Stage::Queue,
                r.dev,
                r.sector,
                r.nr_sector,
                r.rwbs,
                who(r.comm),
            );
        }
        Event::BioRemap => {
            if let Some((dev, sector)) = r.old {
                let comm = t.comm_of(r.pid).or_else(|| proc_comm(r.pid));
                t.io(
                    Stage::RemapFrom,
                    dev,
                    sector,
                    r.nr_sector,
                    r.rwbs,
                    who(comm),
                );
            }
        }
        Event::RqIssue => t.issue(r.dev, r.sector, r.nr_sector, r.rwbs, ns),
        Event::RqComplete => t.complete(r.dev, r.sector, ns),
        Event::Split => t.split(r.dev, r.rwbs, who(r.comm)),
        Event::BackMerge | Event::FrontMerge => t.merge(r.dev, r.rwbs, r.nr_sector),
    }
}

/// The sampling path, running.
pub struct PerfTrace {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
    _events: Vec<OwnedFd>,
}

impl PerfTrace {
    pub fn start(
        grains: &[Grains],
        events: &[(Event, u64, Layout)],
        cap: Capacity,
    ) -> Result<PerfTrace, String> {
        let cpus = perf::cpus("online").map_err(|e| format!("online CPUs: {e}"))?;
        let cgroup = takes_cgroup(events, cpus[0] as i32);
        let mut rings = Vec::new();
        let mut fds = Vec::new();
        for &cpu in &cpus {
            let (ring, mut others) = open_cpu(cpu as i32, events, cgroup)?;
            rings.push(ring);
            fds.append(&mut others);
        }
        let layouts = events.iter().map(|(_, id, l)| (*id as u16, *l)).collect();
        let state = Arc::new(Mutex::new(State {
            rings,
            tally: Tally::sized(grains, cap),
            layouts,
            cgroup,
        }));
        let lock = state.lock().unwrap_or_else(|p| p.into_inner());
        for fd in lock.rings.iter().map(|r| &r.fd).chain(&fds) {
            perf::enable(fd).map_err(|e| format!("enabling a tracepoint: {e}"))?;
        }
        drop(lock);
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (state, stop) = (state.clone(), stop.clone());
            std::thread::spawn(move || read_loop(&state, &stop))
        };
        Ok(PerfTrace {
            state,
            stop,
            reader: Some(reader),
            _events: fds,
        })
    }

    pub fn snapshot(&self, elapsed_s: f64) -> Snapshot {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.drain();
        s.tally.snapshot(elapsed_s)
    }
}

/// Whether the kernel puts the task's cgroup id in a sample
/// (PERF_SAMPLE_CGROUP, Linux 5.7; older kernels refuse the event).
fn takes_cgroup(events: &[(Event, u64, Layout)], cpu: i32) -> bool {
    let sampling = Sampling {
        sample_type: SAMPLE_TIME | SAMPLE_RAW | SAMPLE_CGROUP,
        wakeup_bytes: 64 * 1024,
    };
    events
        .first()
        .is_some_and(|(_, id, _)| perf::open_tracepoint(*id, cpu, Some(sampling)).is_ok())
}

/// One CPU's events: the first owns the ring, the others write into it.
/// `cgroup`: each sample carries the task's cgroup id.
fn open_cpu(
    cpu: i32,
    events: &[(Event, u64, Layout)],
    cgroup: bool,
) -> Result<(Ring, Vec<OwnedFd>), String> {
    let sampling = Sampling {
        sample_type: SAMPLE_TIME | SAMPLE_RAW | if cgroup { SAMPLE_CGROUP } else { 0 },
        wakeup_bytes: 64 * 1024,
    };
    let mut ring: Option<Ring> = None;
    let mut others = Vec::new();
    for (event, id, _) in events {
        let fd = perf::open_tracepoint(*id, cpu, Some(sampling))
            .map_err(|e| format!("{} on CPU {cpu}: {e}", event.name()))?;
        match &ring {
            None => {
                ring = Some(
                    Ring::map(fd).map_err(|e| format!("mapping a perf ring on CPU {cpu}: {e}"))?,
                )
            }
            Some(r) => {
                perf::set_output(&fd, &r.fd)
                    .map_err(|e| format!("sharing CPU {cpu}'s ring: {e}"))?;
                others.push(fd);
            }
        }
    }
    let ring = ring.ok_or_else(|| "no tracepoint to open".to_string())?;
    Ok((ring, others))
}

fn read_loop(state: &Mutex<State>, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let mut fds: Vec<libc::pollfd> = {
            let s = state.lock().unwrap_or_else(|p| p.into_inner());
            s.rings
                .iter()
                .map(|r| libc::pollfd {
                    fd: r.fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect()
        };
        // SAFETY: `fds` is a valid array of pollfd for its length; the
        // descriptors stay open while `state` lives.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 50) };
        state.lock().unwrap_or_else(|p| p.into_inner()).drain();
        std::thread::sleep(Duration::from_millis(1));
    }
}

impl Drop for PerfTrace {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::blocktrace::{DevNum, Direction};
    use crate::sys::trace::format;
    use crate::sys::trace::tally::kernel_dev;

    const QUEUE: &str = "name: block_bio_queue\nID: 2097\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\tfield:unsigned int nr_sector;\toffset:24;\tsize:4;\tsigned:0;\n\tfield:char rwbs[10];\toffset:28;\tsize:10;\tsigned:0;\n";

    fn sample(id: u16, dev: u32, sector: u64, nr: u32) -> Vec<u8> {
        let mut raw = vec![0u8; 40];
        raw[0..2].copy_from_slice(&id.to_ne_bytes());
        raw[8..12].copy_from_slice(&dev.to_ne_bytes());
        raw[16..24].copy_from_slice(&sector.to_ne_bytes());
        raw[24..28].copy_from_slice(&nr.to_ne_bytes());
        raw[28..30].copy_from_slice(b"WS");
        let mut rec = Vec::new();
        rec.extend_from_slice(&RECORD_SAMPLE.to_ne_bytes());
        rec.extend_from_slice(&[0, 0, 64, 0]);
        rec.extend_from_slice(&5u64.to_ne_bytes());
        rec.extend_from_slice(&(raw.len() as u32).to_ne_bytes());
        rec.extend_from_slice(&raw);
        rec
    }

    #[test]
    fn samples_and_losses_are_counted() {
        let dev = DevNum { major: 7, minor: 1 };
        let g = Grains {
            dev,
            grain_bytes: 4096,
            physical_bytes: 512,
            zone_bytes: 0,
        };
        let layout = format::layout(Event::BioQueue, &format::parse(QUEUE).unwrap()).unwrap();
        let layouts = HashMap::from([(2097u16, layout)]);
        let mut t = Tally::new(&[g]);
        count_record(
            &sample(2097, kernel_dev(dev), 1, 8),
            &layouts,
            false,
            &mut t,
        );
        count_record(
            &sample(2098, kernel_dev(dev), 1, 8),
            &layouts,
            false,
            &mut t,
        );
        count_record(
            &sample(2097, kernel_dev(dev), 1, 8)[..30],
            &layouts,
            false,
            &mut t,
        );
        let mut lost = vec![0u8; 24];
        lost[0..4].copy_from_slice(&RECORD_LOST.to_ne_bytes());
        lost[16..24].copy_from_slice(&7u64.to_ne_bytes());
        count_record(&lost, &layouts, false, &mut t);
        let s = t.snapshot(0.0);
        assert_eq!(s.lost_records, 7);
        assert_eq!(s.counters.len(), 1);
        let ((_, dir, _), c) = &s.counters[0];
        assert_eq!((*dir, c.ios, c.straddle_4k), (Direction::Write, 1, 1));
    }
}
