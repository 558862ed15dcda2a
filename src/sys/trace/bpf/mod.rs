//! The in-kernel path: maps created, one program per tracepoint loaded
//! and attached through a perf event (PERF_EVENT_IOC_SET_BPF: the program
//! runs on every CPU where the tracepoint fires, as libbpf's tracepoint
//! attach does with one event on CPU 0), and the maps read back into a
//! `Snapshot`. Every map, program and event is a file descriptor owned
//! here: dropping `BpfTrace`, or the process dying, detaches everything.

mod asm;
mod prog;
mod syscall;
mod typed;

use super::format::{Event, Layout};
use super::perf;
use super::tally::{kernel_dev, latencies, new_counters, SECTOR_BYTES};
use crate::sys::blocktrace::{
    Counters, DevNum, Direction, Grains, Latency, LegKey, Stage, SubmitterKey,
};
pub use prog::sampled;
use prog::{Fields, Kind, Maps};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
pub use typed::Typed;

/// Latency histogram cells (device, direction, size, straddles, bucket).
const LAT_MAX: u32 = 8_192;
use super::Capacity;

/// What a `Counters` is counted per.
pub type CounterKey = (DevNum, Direction, Stage);

const DIRECTIONS: [Direction; 4] = [
    Direction::Read,
    Direction::Write,
    Direction::Discard,
    Direction::Flush,
];
const STAGES: [Stage; 3] = [Stage::Queue, Stage::RemapFrom, Stage::Issue];

/// How the programs get their events.
#[derive(Clone, Copy, Debug)]
pub enum Programs<'a> {
    /// Typed raw tracepoints (`tp_btf`): each program runs on the
    /// tracepoint's arguments, read at the offsets of the kernel's BTF, and
    /// is attached with BPF_RAW_TRACEPOINT_OPEN; no record is built.
    Typed(&'a Typed),
    /// Each program attached to a perf event of the tracepoint, reading
    /// the record the event builds at its tracefs format's offsets:
    /// (event, tracepoint id, layout).
    Tracefs(&'a [(Event, u64, Layout)]),
}

/// The counting programs attached, and their maps.
pub struct BpfTrace {
    // Events first: dropping them detaches the programs before the maps go.
    _events: Vec<OwnedFd>,
    progs: Vec<OwnedFd>,
    _devs: OwnedFd,
    /// `timers` (typed path) or `inflight` (perf-event path).
    _timing: OwnedFd,
    counts: OwnedFd,
    lat: OwnedFd,
    who: OwnedFd,
    /// Each CPU's recent submitters (typed path; prog::WHO_CACHE).
    whocache: Option<OwnedFd>,
    legs: OwnedFd,
    /// The device of each slot.
    slots: Vec<DevNum>,
    /// Possible CPUs: the per-CPU maps hold one value for each.
    ncpu: usize,
}

/// The program each event runs.
fn kind(e: Event) -> Kind {
    match e {
        Event::BioQueue => Kind::Count(Stage::Queue),
        Event::BioRemap => Kind::Count(Stage::RemapFrom),
        Event::RqIssue => Kind::Count(Stage::Issue),
        Event::Split => Kind::Split,
        Event::BackMerge | Event::FrontMerge => Kind::Merge,
        Event::RqComplete => Kind::Complete,
    }
}

fn devinfo(slot: u32, g: &Grains) -> [u8; prog::DEVINFO_BYTES] {
    let mut v = [0u8; prog::DEVINFO_BYTES];
    v[0..4].copy_from_slice(&slot.to_ne_bytes());
    v[4..8].copy_from_slice(&kernel_dev(g.dev).to_ne_bytes());
    v[8..16].copy_from_slice(&g.grain_bytes.to_ne_bytes());
    v[16..24].copy_from_slice(&g.physical_bytes.to_ne_bytes());
    let mask = if g.grain_bytes.is_power_of_two() {
        g.grain_bytes - 1
    } else {
        0
    };
    v[24..32].copy_from_slice(&mask.to_ne_bytes());
    // tally::sane left a zone size only where it is a power of two of
    // whole sectors.
    let zone_mask = (g.zone_bytes / SECTOR_BYTES).saturating_sub(1);
    v[32..40].copy_from_slice(&zone_mask.to_ne_bytes());
    v[40..48].copy_from_slice(&u64::from(g.legs).to_ne_bytes());
    v
}

/// Each event's program loaded typed and attached to its raw tracepoint:
/// (programs, links).
fn attach_typed(t: &Typed, maps: &Maps) -> Result<(Vec<OwnedFd>, Vec<OwnedFd>), String> {
    let (mut progs, mut links) = (Vec::new(), Vec::new());
    for &event in &Event::ALL {
        let insns = prog::program(kind(event), Fields::Typed(t), maps)
            .map_err(|e| format!("{}: {e}", event.name()))?;
        let id = t
            .attach_id(event)
            .ok_or_else(|| format!("{}: no BTF type to attach to", event.name()))?;
        let p = syscall::prog_load_typed(&insns, event.name(), id)?;
        links.push(syscall::raw_tracepoint_open(&p).map_err(err(event.name()))?);
        progs.push(p);
    }
    Ok((progs, links))
}

/// Each event's program attached to a perf event of its tracepoint:
/// (programs, events).
fn attach_tracefs(
    events: &[(Event, u64, Layout)],
    maps: &Maps,
) -> Result<(Vec<OwnedFd>, Vec<OwnedFd>), String> {
    let (mut progs, mut fds) = (Vec::new(), Vec::new());
    for (event, id, layout) in events {
        let insns = prog::program(kind(*event), Fields::Tracefs(layout), maps)
            .map_err(|e| format!("{}: {e}", event.name()))?;
        let p = syscall::prog_load(&insns, event.name())?;
        let fd = perf::open_tracepoint(*id, 0, None).map_err(err(event.name()))?;
        perf::set_bpf(&fd, &p).map_err(err("attaching a BPF program"))?;
        perf::enable(&fd).map_err(err("enabling a tracepoint"))?;
        progs.push(p);
        fds.push(fd);
    }
    Ok((progs, fds))
}

/// The `devs` table: its size in bits and where each device's entry is,
/// by linear probing from prog::dev_home; at least 4 times as many
/// entries as devices, doubled until every device is found within
/// prog::DEV_PROBES probes.
fn dev_table(devs: &[u32]) -> (u32, Vec<u32>) {
    let mut bits = 4;
    while (1usize << bits) < 4 * devs.len() {
        bits += 1;
    }
    loop {
        let size = 1u32 << bits;
        let mut used = vec![false; size as usize];
        let mut at = Vec::with_capacity(devs.len());
        for &d in devs {
            let home = prog::dev_home(d, bits);
            let free = (0..prog::DEV_PROBES)
                .map(|i| (home + i) & (size - 1))
                .find(|&i| !used[i as usize]);
            match free {
                Some(i) => {
                    used[i as usize] = true;
                    at.push(i);
                }
                None => break,
            }
        }
        if at.len() == devs.len() {
            return (bits, at);
        }
        bits += 1;
    }
}

fn err(what: &str) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

impl BpfTrace {
    /// `grains` are already deduplicated and sane (tally::sane); `events`
    /// are (event, tracepoint id, layout).
    /// The submitters' map allocates as it fills (BPF_F_NO_PREALLOC), each
    /// entry one value per possible CPU; the others are preallocated.
    pub fn start(grains: &[Grains], how: Programs, cap: Capacity) -> Result<BpfTrace, String> {
        if let Programs::Tracefs(events) = how {
            if let Some((e, _, _)) = events.iter().find(|(_, _, l)| !l.aligned()) {
                return Err(format!("{}: a field is not naturally aligned", e.name()));
            }
        }
        let n = grains.len().clamp(1, cap.devices) as u32;
        let ncpu = perf::cpus("possible").map_err(err("possible CPUs"))?.len();
        let map = |kind, key: usize, value: usize, max, flags, name| {
            syscall::map_create(kind, key as u32, value as u32, max, flags, name)
                .map_err(err("creating a BPF map"))
        };
        let kdevs: Vec<u32> = grains
            .iter()
            .take(n as usize)
            .map(|g| kernel_dev(g.dev))
            .collect();
        let (dev_bits, at) = dev_table(&kdevs);
        let devs = map(
            syscall::MAP_ARRAY,
            4,
            prog::DEVINFO_BYTES,
            1 << dev_bits,
            0,
            "da_devs",
        )?;
        let counts_len = n * prog::DIRECTIONS * prog::STAGES;
        let counts = map(
            syscall::MAP_PERCPU_ARRAY,
            4,
            prog::WORDS * 8,
            counts_len,
            0,
            "da_counts",
        )?;
        // The typed path times requests in an array it claims entries of
        // atomically; the perf-event path (kernels without BTF, which may
        // lack BPF atomics) in a hash map.
        let timer_bits = cap.inflight.max(2).next_power_of_two().ilog2();
        let timing = match how {
            Programs::Typed(_) => map(
                syscall::MAP_ARRAY,
                4,
                prog::TIMER_VALUE_BYTES,
                1 << timer_bits,
                0,
                "da_timers",
            )?,
            Programs::Tracefs(_) => map(
                syscall::MAP_HASH,
                prog::INFLIGHT_KEY_BYTES,
                prog::INFLIGHT_VALUE_BYTES,
                cap.inflight as u32,
                0,
                "da_inflight",
            )?,
        };
        let typed = matches!(how, Programs::Typed(_));
        let whocache = if typed {
            Some(map(
                syscall::MAP_PERCPU_ARRAY,
                4,
                prog::WHO_KEY_BYTES + prog::WHO_WORDS * 8,
                prog::WHO_CACHE,
                0,
                "da_whocache",
            )?)
        } else {
            None
        };
        let lat = map(
            syscall::MAP_PERCPU_HASH,
            prog::LAT_KEY_BYTES,
            8,
            LAT_MAX,
            0,
            "da_lat",
        )?;
        let who = map(
            syscall::MAP_PERCPU_HASH,
            prog::WHO_KEY_BYTES,
            prog::WHO_WORDS * 8,
            cap.submitters as u32,
            syscall::NO_PREALLOC,
            "da_who",
        )?;
        let legs = map(
            syscall::MAP_PERCPU_HASH,
            prog::LEG_KEY_BYTES,
            prog::LEG_WORDS * 8,
            cap.legs as u32,
            syscall::NO_PREALLOC,
            "da_legs",
        )?;
        let slots: Vec<DevNum> = grains.iter().take(n as usize).map(|g| g.dev).collect();
        for (slot, (g, index)) in grains.iter().zip(&at).enumerate() {
            syscall::update(
                &devs,
                &index.to_ne_bytes(),
                &devinfo(slot as u32, g),
                syscall::ANY,
            )
            .map_err(err("filling the devices' map"))?;
        }
        let maps = Maps {
            devs: devs.as_raw_fd(),
            counts: counts.as_raw_fd(),
            inflight: if typed { -1 } else { timing.as_raw_fd() },
            timers: if typed { timing.as_raw_fd() } else { -1 },
            timer_bits,
            lat: lat.as_raw_fd(),
            who: who.as_raw_fd(),
            whocache: whocache.as_ref().map_or(-1, |m| m.as_raw_fd()),
            legs: legs.as_raw_fd(),
            dev_bits,
            sample_bits: cap.sample_bits(),
        };
        let (progs, fds) = match how {
            Programs::Typed(t) => attach_typed(t, &maps)?,
            Programs::Tracefs(events) => attach_tracefs(events, &maps)?,
        };
        Ok(BpfTrace {
            _events: fds,
            progs,
            _devs: devs,
            _timing: timing,
            counts,
            lat,
            who,
            whocache,
            legs,
            slots,
            ncpu,
        })
    }

    /// Events the kernel did not run a program on (recursion misses,
    /// `syscall::prog_misses`), summed over the programs.
    pub fn missed(&self) -> std::io::Result<u64> {
        self.progs
            .iter()
            .try_fold(0u64, |n, p| Ok(n.saturating_add(syscall::prog_misses(p)?)))
    }

    /// Every per-CPU value of `key` in `map`, summed word by word.
    fn percpu_sum(
        &self,
        map: &OwnedFd,
        key: &[u8],
        words: usize,
    ) -> std::io::Result<Option<Vec<u64>>> {
        let mut buf = vec![0u8; words * 8 * self.ncpu];
        if !syscall::lookup(map, key, &mut buf)? {
            return Ok(None);
        }
        let mut sum = vec![0u64; words];
        for (i, chunk) in buf.chunks_exact(8).enumerate() {
            let v = u64::from_ne_bytes(chunk.try_into().unwrap_or([0; 8]));
            sum[i % words] = sum[i % words].wrapping_add(v);
        }
        Ok(Some(sum))
    }

    pub fn counters(&self) -> std::io::Result<Vec<(CounterKey, Counters)>> {
        let mut out = Vec::new();
        for (slot, dev) in self.slots.iter().enumerate() {
            for (d, dir) in DIRECTIONS.iter().enumerate() {
                for (s, stage) in STAGES.iter().enumerate() {
                    let index = ((slot * 4 + d) * 3 + s) as u32;
                    let Some(w) =
                        self.percpu_sum(&self.counts, &index.to_ne_bytes(), prog::WORDS)?
                    else {
                        continue;
                    };
                    if w.iter().any(|&v| v != 0) {
                        out.push(((*dev, *dir, *stage), from_words(&w)));
                    }
                }
            }
        }
        out.sort_by_key(|(k, _)| *k);
        Ok(out)
    }

    pub fn latency(&self) -> std::io::Result<Vec<Latency>> {
        let mut cells = BTreeMap::new();
        let mut key = [0u8; prog::LAT_KEY_BYTES];
        let mut first = true;
        loop {
            let mut next = [0u8; prog::LAT_KEY_BYTES];
            let prev = if first { None } else { Some(&key[..]) };
            if !syscall::next_key(&self.lat, prev, &mut next)? {
                break;
            }
            first = false;
            key = next;
            let Some(count) = self.percpu_sum(&self.lat, &key, 1)? else {
                continue;
            };
            let lat_key = u32::from_ne_bytes([key[0], key[1], key[2], key[3]]) as usize;
            let bucket = u32::from_ne_bytes([key[4], key[5], key[6], key[7]]) as usize;
            let (size, straddles, dir, slot) = (
                lat_key % 32,
                (lat_key / 32) % 2,
                (lat_key / 64) % 4,
                lat_key / 256,
            );
            let Some(dev) = self.slots.get(slot) else {
                continue;
            };
            let h: &mut Vec<u64> = cells
                .entry((*dev, DIRECTIONS[dir], size as u8, straddles == 1))
                .or_insert_with(|| vec![0; crate::sys::blocktrace::LOG2_BUCKETS]);
            if let Some(cell) = h.get_mut(bucket) {
                *cell += count[0];
            }
        }
        Ok(latencies(&cells))
    }
}

impl BpfTrace {
    /// Every entry of the per-CPU hash `map` (keys of K bytes, `words`
    /// u64 per CPU), summed over the CPUs; an entry gone between the walk
    /// and its read is left out.
    fn percpu_entries<const K: usize>(
        &self,
        map: &OwnedFd,
        words: usize,
    ) -> std::io::Result<Vec<([u8; K], Vec<u64>)>> {
        let mut out = Vec::new();
        let mut key = [0u8; K];
        let mut first = true;
        loop {
            let mut next = [0u8; K];
            let prev = if first { None } else { Some(&key[..]) };
            if !syscall::next_key(map, prev, &mut next)? {
                break;
            }
            first = false;
            key = next;
            if let Some(w) = self.percpu_sum(map, &key, words)? {
                out.push((key, w));
            }
        }
        Ok(out)
    }

    /// Every submitter counted, by device, direction, stage, comm and
    /// cgroup id: the `who` map's and the CPUs' cached ones, summed.
    pub fn submitters(&self) -> std::io::Result<Vec<(SubmitterKey, Counters)>> {
        let mut words: BTreeMap<[u8; prog::WHO_KEY_BYTES], Vec<u64>> = BTreeMap::new();
        let mut add = |key: [u8; prog::WHO_KEY_BYTES], w: &[u64]| {
            let sum = words.entry(key).or_insert_with(|| vec![0; prog::WHO_WORDS]);
            for (s, v) in sum.iter_mut().zip(w) {
                *s = s.wrapping_add(*v);
            }
        };
        for (key, w) in
            self.percpu_entries::<{ prog::WHO_KEY_BYTES }>(&self.who, prog::WHO_WORDS)?
        {
            add(key, &w);
        }
        if let Some(cache) = &self.whocache {
            for (key, w) in self.cached_submitters(cache)? {
                add(key, &w);
            }
        }
        let mut out: Vec<_> = words
            .iter()
            .filter_map(|(key, w)| Some((who_key(key, &self.slots)?, from_who_words(w))))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Every taken `whocache` entry of every CPU, its key unmarked.
    fn cached_submitters(
        &self,
        cache: &OwnedFd,
    ) -> std::io::Result<Vec<([u8; prog::WHO_KEY_BYTES], Vec<u64>)>> {
        let entry = prog::WHO_KEY_BYTES + prog::WHO_WORDS * 8;
        let mut buf = vec![0u8; entry * self.ncpu];
        let mut out = Vec::new();
        for index in 0..prog::WHO_CACHE {
            if !syscall::lookup(cache, &index.to_ne_bytes(), &mut buf)? {
                continue;
            }
            for value in buf.chunks_exact(entry) {
                if let Some(e) = cached_entry(value) {
                    out.push(e);
                }
            }
        }
        Ok(out)
    }

    /// Every device's bios where they landed below it.
    pub fn legs(&self) -> std::io::Result<Vec<(LegKey, Counters)>> {
        let entries =
            self.percpu_entries::<{ prog::LEG_KEY_BYTES }>(&self.legs, prog::LEG_WORDS)?;
        let mut out: Vec<_> = entries
            .iter()
            .filter_map(|(key, w)| Some((leg_key(key, &self.slots)?, from_leg_words(w))))
            .collect();
        out.sort_by_key(|(k, _)| *k);
        Ok(out)
    }
}

/// One CPU's `whocache` entry as a `who` key and its words; None for a
/// free entry, or one whose key is still being written (no I/O counted).
fn cached_entry(value: &[u8]) -> Option<([u8; prog::WHO_KEY_BYTES], Vec<u64>)> {
    let (k, w) = value.split_at(prog::WHO_KEY_BYTES);
    let mut key: [u8; prog::WHO_KEY_BYTES] = k.try_into().ok()?;
    let first = u64::from_ne_bytes(key[..8].try_into().ok()?);
    if first & prog::WHO_CACHED == 0 {
        return None;
    }
    key[..8].copy_from_slice(&(first & !prog::WHO_CACHED).to_ne_bytes());
    let words: Vec<u64> = w
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    (words[prog::WHO_IOS] > 0 || words[prog::WHO_SPLITS] > 0).then_some((key, words))
}

/// A `legs` key (prog::LEG_KEY_BYTES) read back; None for a slot or
/// direction out of range.
fn leg_key(key: &[u8; prog::LEG_KEY_BYTES], slots: &[DevNum]) -> Option<LegKey> {
    let word = |i: usize| u32::from_ne_bytes([key[i], key[i + 1], key[i + 2], key[i + 3]]);
    Some(LegKey {
        upper: *slots.get(word(0) as usize)?,
        lower: super::tally::dev_num(word(4)),
        direction: *DIRECTIONS.get(word(8) as usize)?,
    })
}

/// A `legs` value (prog::LEG_*) as Counters without histograms.
fn from_leg_words(w: &[u64]) -> Counters {
    Counters {
        ios: w[prog::LEG_IOS],
        bytes: w[prog::LEG_BYTES],
        straddle_4k: w[prog::LEG_STRADDLE_4K],
        start_mod_4k: w[prog::LEG_MOD_4K..prog::LEG_MOD_4K + 8].to_vec(),
        ..Counters::default()
    }
}

/// A `who` key (prog::WHO_KEY_BYTES) read back; None for a slot or
/// stage out of range.
fn who_key(k: &[u8; prog::WHO_KEY_BYTES], slots: &[DevNum]) -> Option<SubmitterKey> {
    let slot = u32::from_ne_bytes([k[0], k[1], k[2], k[3]]) as usize;
    let comm = &k[16..32];
    let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    Some(SubmitterKey {
        dev: *slots.get(slot)?,
        direction: *DIRECTIONS.get(k[4] as usize)?,
        stage: *STAGES.get(k[5] as usize)?,
        comm: String::from_utf8_lossy(&comm[..end]).into_owned(),
        cgroup_id: u64::from_ne_bytes(k[8..16].try_into().ok()?),
    })
}

/// A `who` value (prog::WHO_*) as Counters without histograms.
fn from_who_words(w: &[u64]) -> Counters {
    Counters {
        ios: w[prog::WHO_IOS],
        bytes: w[prog::WHO_BYTES],
        straddle_4k: w[prog::WHO_STRADDLE_4K],
        straddle_grain: w[prog::WHO_STRADDLE_GRAIN],
        sub_physical: w[prog::WHO_SUB_PHYSICAL],
        splits: w[prog::WHO_SPLITS],
        start_mod_4k: w[prog::WHO_MOD_4K..prog::WHO_MOD_4K + 8].to_vec(),
        ..Counters::default()
    }
}

/// A `counts` value (prog::W_*) as Counters.
fn from_words(w: &[u64]) -> Counters {
    let mut c = new_counters();
    c.ios = w[prog::W_IOS];
    c.bytes = w[prog::W_BYTES];
    c.straddle_4k = w[prog::W_STRADDLE_4K];
    c.straddle_grain = w[prog::W_STRADDLE_GRAIN];
    c.sub_physical = w[prog::W_SUB_PHYSICAL];
    c.splits = w[prog::W_SPLITS];
    c.merges = w[prog::W_MERGES];
    c.unattributed = w[prog::W_UNATTRIBUTED];
    c.untimed = w[prog::W_UNTIMED];
    c.preflush_writes = w[prog::W_PREFLUSH_WRITES];
    c.zone_crossing_writes = w[prog::W_ZONE_CROSSING];
    c.unmapped = w[prog::W_UNMAPPED];
    c.size_log2
        .copy_from_slice(&w[prog::W_SIZE..prog::W_SIZE + 32]);
    c.align_log2
        .copy_from_slice(&w[prog::W_ALIGN..prog::W_ALIGN + 32]);
    c.start_mod_4k
        .copy_from_slice(&w[prog::W_MOD_4K..prog::W_MOD_4K + 8]);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_device_is_within_its_probes() {
        // 4096 devices: sdX partitions (8:N), loops (7:N), dm (254:N), NVMe.
        let devs: Vec<u32> = (0..4096u32)
            .map(|i| match i % 4 {
                0 => (8 << 20) | i,
                1 => (7 << 20) | i,
                2 => (254 << 20) | i,
                _ => (259 << 20) | i,
            })
            .collect();
        for n in [1, 2, 7, 100, 4096] {
            let (bits, at) = dev_table(&devs[..n]);
            assert!(1usize << bits >= 4 * n);
            let mut seen = std::collections::HashSet::new();
            for (d, i) in devs[..n].iter().zip(&at) {
                let home = prog::dev_home(*d, bits);
                let dist = i.wrapping_sub(home) & ((1 << bits) - 1);
                assert!(dist < prog::DEV_PROBES, "{d:x} at {i}, home {home}");
                assert!(seen.insert(*i), "two devices at {i}");
            }
        }
        assert_eq!(dev_table(&[]).0, 4);
    }

    #[test]
    fn a_zoned_device_carries_its_zone_mask_in_sectors() {
        let g = |zone_bytes| Grains {
            dev: DevNum { major: 8, minor: 0 },
            grain_bytes: 4096,
            physical_bytes: 4096,
            zone_bytes,
            legs: false,
        };
        let mask = |v: [u8; prog::DEVINFO_BYTES]| u64::from_ne_bytes(v[32..40].try_into().unwrap());
        assert_eq!(mask(devinfo(0, &g(4 << 20))), 8191);
        assert_eq!(mask(devinfo(0, &g(0))), 0, "not zoned: no mask");
        let legs =
            |g: Grains| u64::from_ne_bytes(devinfo(0, &g).as_slice()[40..48].try_into().unwrap());
        assert_eq!(legs(g(0)), 0);
        assert_eq!(legs(Grains { legs: true, ..g(0) }), 1);
    }
}
