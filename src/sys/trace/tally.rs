//! The counting rules, in user space: how a block event is tallied into
//! `Counters` and `Latency`. The raw perf path counts with these directly;
//! the BPF programs (bpf/prog/) do the same arithmetic in the kernel,
//! and the integration test holds both paths to the same counts.

use crate::sys::blocktrace::{
    Counters, DevNum, Direction, Grains, Latency, LegKey, Snapshot, Stage, SubmitterKey,
    LOG2_BUCKETS,
};
use std::collections::{BTreeMap, HashMap};

/// Bytes in a sector as the block layer counts them (SECTOR_SHIFT 9).
pub const SECTOR_BYTES: u64 = 512;

use super::Capacity;

/// Completions read before their issue kept at most (the table is
/// emptied when full).
const MAX_EARLY: usize = 1 << 16;

/// Tasks whose names are remembered at most (the table is emptied when
/// full).
const MAX_COMMS: usize = 1 << 16;

/// The kernel's dev_t of a device number: MKDEV in include/linux/kdev_t.h
/// (MINORBITS 20), as the tracepoints record it.
pub fn kernel_dev(d: DevNum) -> u32 {
    (d.major << 20) | (d.minor & 0xf_ffff)
}

pub fn dev_num(k: u32) -> DevNum {
    DevNum {
        major: k >> 20,
        minor: k & 0xf_ffff,
    }
}

/// The direction from the first two bytes of `rwbs` (blk_fill_rwbs:
/// an optional `F` for a preflush, then `R`, `W`, `D`, `F` or `N`).
/// A preflush with no data, or a flush operation, is a flush; a write of
/// no sectors is the empty preflush write of blkdev_issue_flush.
/// `N` (write zeroes, zone operations) is not counted.
pub fn direction(rwbs: [u8; 2], nr_sector: u32) -> Option<Direction> {
    let (op, preflush) = match rwbs {
        [b'F', c] => (c, true),
        [c, _] => (c, false),
    };
    match op {
        b'R' => Some(Direction::Read),
        b'W' if nr_sector == 0 => Some(Direction::Flush),
        b'W' => Some(Direction::Write),
        b'D' => Some(Direction::Discard),
        _ if preflush => Some(Direction::Flush),
        _ => None,
    }
}

/// A write of no sectors: the empty write that carries a flush
/// (REQ_PREFLUSH, `F` before `W` in rwbs), counted as a flush.
pub fn empty_write(rwbs: [u8; 2], nr_sector: u32) -> bool {
    nr_sector == 0 && matches!(rwbs, [b'F', b'W'] | [b'W', _])
}

/// A task's name as the kernel keeps it (16 bytes, NUL-padded).
pub fn comm_text(comm: &[u8]) -> String {
    let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    String::from_utf8_lossy(&comm[..end]).into_owned()
}

/// The task behind a bio on the sample path: its name and cgroup v2 id
/// (0 where the kernel gave none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Who {
    pub comm: [u8; 16],
    pub cgroup_id: u64,
}

/// floor(log2(v)), capped to the last bucket; 0 for 0.
pub fn log2_bucket(v: u64) -> usize {
    let l = 63usize.saturating_sub(v.leading_zeros() as usize);
    l.min(LOG2_BUCKETS - 1)
}

/// The alignment bucket of a start sector: its trailing zero bits,
/// sector 0 in the last bucket.
pub fn align_bucket(sector: u64) -> usize {
    if sector == 0 {
        return LOG2_BUCKETS - 1;
    }
    (sector.trailing_zeros() as usize).min(LOG2_BUCKETS - 1)
}

/// Whether [start, start + len) crosses a boundary of `unit` without
/// covering whole units (its start or its end is off the grid).
pub fn straddles(start: u64, len: u64, unit: u64) -> bool {
    if unit == 0 || len == 0 {
        return false;
    }
    let r = start % unit;
    let crosses = r.wrapping_add(len) > unit;
    crosses && (r != 0 || start.wrapping_add(len) % unit != 0)
}

/// Whether [start, start + len) crosses a boundary between zones of
/// `zone` bytes (a power of two, as a zoned disk's chunk_sectors is):
/// its first and last bytes lie in different zones. Unlike straddling,
/// a write that covers whole zones from a boundary crosses too: the
/// block layer splits it at each boundary all the same
/// (block/blk-merge.c `get_max_io_size`, `blk_chunk_sectors_left`).
/// A zone of 0 is no zoned device: nothing crosses.
pub fn crosses_zone(start: u64, len: u64, zone: u64) -> bool {
    if zone == 0 || len == 0 {
        return false;
    }
    (start & (zone - 1)).saturating_add(len) > zone
}

/// How one I/O of a device looks against its grains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub size_bucket: usize,
    pub align_bucket: usize,
    pub mod_4k: usize,
    pub straddle_4k: bool,
    pub straddle_grain: bool,
    pub sub_physical: bool,
    /// A write crossing a zone boundary of a zoned device.
    pub zone_crossing: bool,
}

/// The shape of `nr_sector` sectors at `sector` (nr_sector > 0).
pub fn shape(dir: Direction, sector: u64, nr_sector: u32, g: &Grains) -> Shape {
    let start = sector.wrapping_mul(SECTOR_BYTES);
    let len = u64::from(nr_sector) * SECTOR_BYTES;
    Shape {
        size_bucket: log2_bucket(u64::from(nr_sector)),
        align_bucket: align_bucket(sector),
        mod_4k: (sector % 8) as usize,
        straddle_4k: straddles(start, len, 4096),
        straddle_grain: straddles(start, len, g.grain_bytes),
        sub_physical: dir == Direction::Write && len < g.physical_bytes,
        zone_crossing: dir == Direction::Write && crosses_zone(start, len, g.zone_bytes),
    }
}

/// Counters with their histograms sized.
pub fn new_counters() -> Counters {
    Counters {
        size_log2: vec![0; LOG2_BUCKETS],
        align_log2: vec![0; LOG2_BUCKETS],
        start_mod_4k: vec![0; 8],
        ..Counters::default()
    }
}

/// Grains as the tracer uses them: no zero grain or physical block, and
/// a zone size only where it is a power of two of whole sectors (the
/// programs take it as a mask); any other is no zoned device.
pub fn sane(g: &Grains) -> Grains {
    let zoned = g.zone_bytes.is_power_of_two() && g.zone_bytes >= SECTOR_BYTES;
    Grains {
        grain_bytes: g.grain_bytes.max(SECTOR_BYTES),
        physical_bytes: g.physical_bytes.max(SECTOR_BYTES),
        zone_bytes: if zoned { g.zone_bytes } else { 0 },
        ..*g
    }
}

/// A latency histogram's key: device, direction, size bucket, straddles.
pub type LatKey = (DevNum, Direction, u8, bool);

/// Everything counted so far on the user-space path.
#[derive(Debug)]
pub struct Tally {
    grains: HashMap<u32, Grains>,
    counters: BTreeMap<(DevNum, Direction, Stage), Counters>,
    latency: BTreeMap<LatKey, Vec<u64>>,
    inflight: HashMap<(u32, u64), (u64, LatKey)>,
    submitters: BTreeMap<SubmitterKey, Counters>,
    legs: BTreeMap<LegKey, Counters>,
    /// The names of tasks seen in events that record one, by pid: a
    /// remap records none.
    comms: HashMap<u32, [u8; 16]>,
    /// Completions read before their issue: on the perf path each CPU has
    /// its own ring, and a request issued on one CPU and completed on
    /// another can be read in that order.
    early: HashMap<(u32, u64), u64>,
    pub lost_records: u64,
    cap: Capacity,
}

impl Tally {
    /// Only the devices in `grains` are counted.
    pub fn new(grains: &[Grains]) -> Tally {
        Tally::sized(grains, Capacity::DEFAULT)
    }

    /// [`Tally::new`] holding `cap` at once.
    pub fn sized(grains: &[Grains], cap: Capacity) -> Tally {
        let mut t = Tally {
            grains: HashMap::new(),
            counters: BTreeMap::new(),
            latency: BTreeMap::new(),
            inflight: HashMap::new(),
            submitters: BTreeMap::new(),
            legs: BTreeMap::new(),
            comms: HashMap::new(),
            early: HashMap::new(),
            lost_records: 0,
            cap,
        };
        for g in grains {
            t.grains.entry(kernel_dev(g.dev)).or_insert_with(|| sane(g));
        }
        t
    }

    fn entry(&mut self, dev: u32, dir: Direction, stage: Stage) -> Option<(&mut Counters, Grains)> {
        let g = *self.grains.get(&dev)?;
        let c = self
            .counters
            .entry((g.dev, dir, stage))
            .or_insert_with(new_counters);
        Some((c, g))
    }

    /// One I/O seen at `stage`, submitted by `who` (at the submission
    /// stages, queue and remap); its direction and shape when counted.
    pub fn io(
        &mut self,
        stage: Stage,
        dev: u32,
        sector: u64,
        nr: u32,
        rwbs: [u8; 2],
        who: Option<Who>,
    ) -> Option<(Direction, Shape)> {
        let dir = direction(rwbs, nr)?;
        let (c, g) = self.entry(dev, dir, stage)?;
        c.ios += 1;
        c.bytes += u64::from(nr) * SECTOR_BYTES;
        c.preflush_writes += u64::from(empty_write(rwbs, nr));
        let s = (nr > 0).then(|| shape(dir, sector, nr, &g));
        if let Some(s) = s {
            c.size_log2[s.size_bucket] += 1;
            c.align_log2[s.align_bucket] += 1;
            c.start_mod_4k[s.mod_4k] += 1;
            c.straddle_4k += u64::from(s.straddle_4k);
            c.straddle_grain += u64::from(s.straddle_grain);
            c.sub_physical += u64::from(s.sub_physical);
            c.zone_crossing_writes += u64::from(s.zone_crossing);
        }
        if stage != Stage::Issue {
            self.attribute(g.dev, dir, stage, who, nr, s);
        }
        s.map(|s| (dir, s))
    }

    /// The submitter's counters of (dev, dir, stage), made the first time
    /// unless the table is full (as the BPF programs' `who` map).
    fn submitter(
        &mut self,
        dev: DevNum,
        direction: Direction,
        stage: Stage,
        who: Who,
    ) -> Option<&mut Counters> {
        let key = SubmitterKey {
            dev,
            direction,
            stage,
            comm: comm_text(&who.comm),
            cgroup_id: who.cgroup_id,
        };
        let full = self.submitters.len() >= self.cap.submitters;
        if full && !self.submitters.contains_key(&key) {
            return None;
        }
        Some(self.submitters.entry(key).or_insert_with(|| Counters {
            start_mod_4k: vec![0; 8],
            ..Counters::default()
        }))
    }

    fn attribute(
        &mut self,
        dev: DevNum,
        dir: Direction,
        stage: Stage,
        who: Option<Who>,
        nr: u32,
        s: Option<Shape>,
    ) {
        let Some(c) = who.and_then(|w| self.submitter(dev, dir, stage, w)) else {
            if let Some(c) = self.counters.get_mut(&(dev, dir, stage)) {
                c.unattributed += 1;
            }
            return;
        };
        c.ios += 1;
        c.bytes += u64::from(nr) * SECTOR_BYTES;
        if let Some(s) = s {
            c.straddle_4k += u64::from(s.straddle_4k);
            c.straddle_grain += u64::from(s.straddle_grain);
            c.sub_physical += u64::from(s.sub_physical);
            c.start_mod_4k[s.mod_4k] += 1;
        }
    }

    /// A remapped bio where it lands: `nr` sectors at `sector` of `lower`
    /// (the record's dev), from the traced device `upper`; counted as
    /// the programs' `legs` map counts it.
    pub fn leg(&mut self, upper: u32, lower: u32, sector: u64, nr: u32, rwbs: [u8; 2]) {
        let (Some(dir), Some(g)) = (direction(rwbs, nr), self.grains.get(&upper)) else {
            return;
        };
        if !g.legs {
            return;
        }
        let key = LegKey {
            upper: g.dev,
            lower: dev_num(lower),
            direction: dir,
        };
        if self.legs.len() >= self.cap.legs && !self.legs.contains_key(&key) {
            if let Some(c) = self.counters.get_mut(&(key.upper, dir, Stage::RemapFrom)) {
                c.unmapped += 1;
            }
            return;
        }
        let c = self.legs.entry(key).or_insert_with(|| Counters {
            start_mod_4k: vec![0; 8],
            ..Counters::default()
        });
        c.ios += 1;
        c.bytes += u64::from(nr) * SECTOR_BYTES;
        if nr > 0 {
            let start = sector.wrapping_mul(SECTOR_BYTES);
            c.straddle_4k += u64::from(straddles(start, u64::from(nr) * SECTOR_BYTES, 4096));
            c.start_mod_4k[(sector % 8) as usize] += 1;
        }
    }

    /// Remember the name of task `pid` (from an event that records it).
    pub fn learn(&mut self, pid: u32, comm: [u8; 16]) {
        if self.comms.len() >= MAX_COMMS && !self.comms.contains_key(&pid) {
            self.comms.clear();
        }
        self.comms.insert(pid, comm);
    }

    /// The name of task `pid`, if an event recorded it.
    pub fn comm_of(&self, pid: u32) -> Option<[u8; 16]> {
        self.comms.get(&pid).copied()
    }

    /// `block_split` (counted with the device's queued I/O, and for its
    /// submitter).
    pub fn split(&mut self, dev: u32, rwbs: [u8; 2], who: Option<Who>) {
        let Some(dir) = direction(rwbs, 1) else {
            return;
        };
        let Some((c, g)) = self.entry(dev, dir, Stage::Queue) else {
            return;
        };
        c.splits += 1;
        let dev = g.dev;
        if let Some(c) = who.and_then(|w| self.submitter(dev, dir, Stage::Queue, w)) {
            c.splits += 1;
        }
    }

    /// `block_bio_backmerge` or `block_bio_frontmerge`.
    pub fn merge(&mut self, dev: u32, rwbs: [u8; 2], nr: u32) {
        if let Some(dir) = direction(rwbs, nr) {
            if let Some((c, _)) = self.entry(dev, dir, Stage::Queue) {
                c.merges += 1;
            }
        }
    }

    /// `block_rq_issue` at time `ns`: counted, and timed until completion.
    pub fn issue(&mut self, dev: u32, sector: u64, nr: u32, rwbs: [u8; 2], ns: u64) {
        let Some((dir, s)) = self.io(Stage::Issue, dev, sector, nr, rwbs, None) else {
            return;
        };
        if !super::bpf::sampled(sector, self.cap.sample_bits()) {
            return;
        }
        if self.inflight.len() >= self.cap.inflight && !self.inflight.contains_key(&(dev, sector)) {
            if let Some((c, _)) = self.entry(dev, dir, Stage::Issue) {
                c.untimed += 1;
            }
            return;
        }
        let key = (dev_num(dev), dir, s.size_bucket as u8, s.straddle_grain);
        match self.early.remove(&(dev, sector)) {
            Some(done) if done >= ns => self.time(key, done - ns),
            _ => {
                self.inflight.insert((dev, sector), (ns, key));
            }
        }
    }

    /// `block_rq_complete` at time `ns`.
    pub fn complete(&mut self, dev: u32, sector: u64, ns: u64) {
        if !super::bpf::sampled(sector, self.cap.sample_bits()) {
            return;
        }
        let Some((t0, key)) = self.inflight.remove(&(dev, sector)) else {
            if self.grains.contains_key(&dev) {
                if self.early.len() >= MAX_EARLY {
                    self.early.clear();
                }
                self.early.insert((dev, sector), ns);
            }
            return;
        };
        self.time(key, ns.saturating_sub(t0));
    }

    /// One request's issue-to-complete time, `ns` nanoseconds.
    fn time(&mut self, key: LatKey, ns: u64) {
        let micros = ns / 1000;
        let h = self
            .latency
            .entry(key)
            .or_insert_with(|| vec![0; LOG2_BUCKETS]);
        h[log2_bucket(micros)] += 1;
    }

    pub fn snapshot(&self, elapsed_s: f64) -> Snapshot {
        Snapshot {
            counters: self.counters.iter().map(|(k, c)| (*k, c.clone())).collect(),
            latency: latencies(&self.latency),
            lost_records: self.lost_records,
            elapsed_s,
            submitters: self
                .submitters
                .iter()
                .map(|(k, c)| (k.clone(), c.clone()))
                .collect(),
            legs: self.legs.iter().map(|(k, c)| (*k, c.clone())).collect(),
            ..Snapshot::default()
        }
    }
}

/// Latency histograms keyed by (device, direction, size bucket, straddles).
pub fn latencies(m: &BTreeMap<LatKey, Vec<u64>>) -> Vec<Latency> {
    m.iter()
        .map(|(&(dev, direction, size_bucket, straddles), h)| Latency {
            dev,
            direction,
            size_bucket,
            straddles,
            micros_log2: h.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISK: DevNum = DevNum { major: 7, minor: 0 };

    fn grains(grain: u64, physical: u64) -> Grains {
        Grains {
            dev: DISK,
            grain_bytes: grain,
            physical_bytes: physical,
            zone_bytes: 0,
            legs: false,
        }
    }

    #[test]
    fn directions_follow_blk_fill_rwbs() {
        assert_eq!(direction(*b"RA", 8), Some(Direction::Read));
        assert_eq!(direction(*b"WS", 8), Some(Direction::Write));
        assert_eq!(direction(*b"FW", 8), Some(Direction::Write));
        assert_eq!(direction(*b"FW", 0), Some(Direction::Flush));
        assert_eq!(direction(*b"FF", 0), Some(Direction::Flush));
        assert_eq!(direction([b'F', 0], 0), Some(Direction::Flush));
        assert_eq!(direction(*b"DS", 8), Some(Direction::Discard));
        assert_eq!(direction(*b"N\0", 8), None);
        assert_eq!(direction([0, 0], 8), None);
    }

    #[test]
    fn buckets() {
        assert_eq!(log2_bucket(0), 0);
        assert_eq!(log2_bucket(1), 0);
        assert_eq!(log2_bucket(8), 3);
        assert_eq!(log2_bucket(15), 3);
        assert_eq!(log2_bucket(u64::MAX), 31);
        assert_eq!(align_bucket(0), 31);
        assert_eq!(align_bucket(1), 0);
        assert_eq!(align_bucket(2048), 11);
        assert_eq!(align_bucket(1 << 40), 31);
    }

    #[test]
    fn straddling_needs_a_crossing_off_the_grid() {
        assert!(straddles(512, 4096, 4096));
        assert!(!straddles(0, 8192, 4096), "two whole units");
        assert!(straddles(0, 6144, 4096), "ends off the grid");
        assert!(!straddles(2048, 2048, 4096), "inside one unit");
        assert!(!straddles(512, 512, 4096));
        assert!(
            straddles(3 * 65536 - 512, 1024, 3 * 65536),
            "a grain that is no power of two"
        );
        assert!(!straddles(65536 - 512, 1024, 3 * 65536));
        assert!(!straddles(0, 0, 4096));
        assert!(!straddles(512, 4096, 0));
    }

    #[test]
    fn a_zone_is_crossed_when_the_first_and_last_bytes_are_in_two() {
        const Z: u64 = 4 << 20;
        assert!(crosses_zone(Z - 4096, 8192, Z), "across the boundary");
        assert!(!crosses_zone(Z - 4096, 4096, Z), "ends on it");
        assert!(!crosses_zone(Z, 4096, Z), "starts on it");
        assert!(!crosses_zone(0, Z, Z), "one whole zone");
        assert!(
            crosses_zone(0, 2 * Z, Z),
            "two whole zones: split all the same"
        );
        assert!(
            crosses_zone(7 * Z - 512, 1024, Z),
            "any zone, not only the first"
        );
        assert!(!crosses_zone(Z - 4096, 8192, 0), "not zoned");
        assert!(!crosses_zone(Z - 4096, 0, Z), "no data");
    }

    #[test]
    fn only_writes_of_a_zoned_device_are_counted_crossing() {
        let zoned = Grains {
            zone_bytes: 65536,
            ..grains(4096, 4096)
        };
        let mut t = Tally::new(&[zoned]);
        let dev = kernel_dev(DISK);
        // 65536 - 4096 bytes is sector 120: 8 KiB from there crosses.
        for _ in 0..3 {
            t.io(Stage::Queue, dev, 120, 16, *b"WS", None);
        }
        t.io(Stage::Queue, dev, 128, 16, *b"WS", None);
        t.io(Stage::Queue, dev, 120, 16, *b"RA", None);
        t.io(Stage::Queue, dev, 120, 0, *b"FW", None);
        let s = t.snapshot(1.0);
        let by = |d| {
            s.counters
                .iter()
                .find(|(k, _)| k.1 == d)
                .map(|(_, c)| c.zone_crossing_writes)
        };
        assert_eq!(by(Direction::Write), Some(3));
        assert_eq!(
            by(Direction::Read),
            Some(0),
            "a read across it is not counted"
        );
        assert_eq!(by(Direction::Flush), Some(0));
        let mut plain = Tally::new(&[grains(4096, 4096)]);
        plain.io(Stage::Queue, dev, 120, 16, *b"WS", None);
        assert_eq!(plain.snapshot(1.0).counters[0].1.zone_crossing_writes, 0);
    }

    #[test]
    fn a_zone_size_the_programs_cannot_mask_is_no_zoned_device() {
        let z = |zone_bytes| {
            sane(&Grains {
                zone_bytes,
                ..grains(4096, 4096)
            })
            .zone_bytes
        };
        assert_eq!((z(4 << 20), z(0), z(3 << 20), z(256)), (4 << 20, 0, 0, 0));
    }

    /// A tally that times every request (no sample).
    fn timing_all(g: Grains) -> Tally {
        Tally::sized(
            &[g],
            Capacity {
                latency_one_in: 1,
                ..Capacity::DEFAULT
            },
        )
    }

    #[test]
    fn a_completion_read_before_its_issue_is_still_timed() {
        // The perf path reads one ring per CPU: a request issued on one
        // CPU and completed on another can come completion first (a CI
        // run timed 99 of 100 writes before this).
        let mut t = timing_all(grains(4096, 4096));
        let dev = kernel_dev(DISK);
        t.complete(dev, 2049, 5_000_000);
        t.issue(dev, 2049, 8, *b"WS", 1_000_000);
        t.issue(dev, 4097, 8, *b"WS", 6_000_000);
        t.complete(dev, 4097, 7_000_000);
        let timed: u64 = t
            .snapshot(1.0)
            .latency
            .iter()
            .map(|l| l.micros_log2.iter().sum::<u64>())
            .sum();
        assert_eq!(timed, 2);
        // A completion of a device not traced is not kept.
        t.complete(dev + 1, 8, 1);
        assert!(t.early.is_empty());
    }

    #[test]
    fn a_misaligned_4k_write_counts_everywhere() {
        let mut t = Tally::new(&[grains(4096, 4096)]);
        let dev = kernel_dev(DISK);
        for i in 0..10 {
            t.io(Stage::Queue, dev, 2049 + 16 * i, 8, *b"WS", None);
        }
        t.io(Stage::Queue, dev, 4096, 1, *b"WS", None);
        t.io(Stage::Queue, dev + 1, 4096, 1, *b"WS", None);
        let s = t.snapshot(1.0);
        assert_eq!(s.counters.len(), 1, "an unknown device is not counted");
        let ((d, dir, st), c) = &s.counters[0];
        assert_eq!((*d, *dir, *st), (DISK, Direction::Write, Stage::Queue));
        assert_eq!((c.ios, c.bytes), (11, 10 * 4096 + 512));
        assert_eq!(
            (c.straddle_4k, c.straddle_grain, c.sub_physical),
            (10, 10, 1)
        );
        assert_eq!((c.size_log2[3], c.size_log2[0]), (10, 1));
        assert_eq!((c.start_mod_4k[1], c.start_mod_4k[0]), (10, 1));
        assert_eq!((c.align_log2[0], c.align_log2[12]), (10, 1));
    }

    #[test]
    fn submitters_are_counted_where_bios_are_submitted() {
        let mut t = Tally::new(&[grains(4096, 4096)]);
        let dev = kernel_dev(DISK);
        let who = |name: &[u8], cgroup_id| {
            let mut comm = [0u8; 16];
            comm[..name.len()].copy_from_slice(name);
            Some(Who { comm, cgroup_id })
        };
        for i in 0..5 {
            t.io(Stage::Queue, dev, 2049 + 16 * i, 8, *b"WS", who(b"fio", 7));
        }
        t.io(Stage::Queue, dev, 0, 0, *b"FW", who(b"postgres", 9));
        t.io(Stage::Queue, dev, 64, 8, *b"WS", None);
        t.split(dev, *b"WS", who(b"fio", 7));
        t.io(Stage::Issue, dev, 64, 8, *b"WS", who(b"kworker/0:1", 1));
        let s = t.snapshot(1.0);
        let find = |comm: &str| {
            s.submitters
                .iter()
                .find(|(k, _)| k.comm == comm)
                .map(|(k, c)| (k.direction, k.cgroup_id, c.ios, c.straddle_4k, c.splits))
        };
        assert_eq!(find("fio"), Some((Direction::Write, 7, 5, 5, 1)));
        assert_eq!(
            find("postgres"),
            Some((Direction::Flush, 9, 1, 0, 0)),
            "the empty write of an fdatasync is a flush"
        );
        assert_eq!(find("kworker/0:1"), None, "an issue names nobody");
        let q = |d| {
            s.counters
                .iter()
                .find(|(k, _)| *k == (DISK, d, Stage::Queue))
                .map(|(_, c)| (c.unattributed, c.preflush_writes))
        };
        assert_eq!(q(Direction::Write), Some((1, 0)));
        assert_eq!(q(Direction::Flush), Some((0, 1)));
    }

    #[test]
    fn latency_from_issue_to_complete() {
        let mut t = timing_all(grains(4096, 512));
        let dev = kernel_dev(DISK);
        t.issue(dev, 1, 8, *b"RA", 1_000_000);
        t.complete(dev, 1, 1_003_000);
        t.complete(dev, 1, 1_009_000);
        let s = t.snapshot(1.0);
        assert_eq!(s.latency.len(), 1);
        let l = &s.latency[0];
        assert_eq!(
            (l.size_bucket, l.straddles, l.direction),
            (3, true, Direction::Read)
        );
        assert_eq!(l.micros_log2[1], 1, "3 µs is in [2, 4)");
        assert_eq!(
            l.micros_log2.iter().sum::<u64>(),
            1,
            "a second completion is not timed"
        );
    }

    #[test]
    fn flushes_count_without_shapes() {
        let mut t = Tally::new(&[grains(4096, 512)]);
        let dev = kernel_dev(DISK);
        t.io(Stage::Issue, dev, 0, 0, *b"FF", None);
        t.split(dev, *b"WS", None);
        t.merge(dev, *b"WS", 8);
        let s = t.snapshot(1.0);
        let flush = &s
            .counters
            .iter()
            .find(|(k, _)| k.1 == Direction::Flush)
            .unwrap()
            .1;
        assert_eq!(
            (flush.ios, flush.bytes, flush.size_log2.iter().sum::<u64>()),
            (1, 0, 0)
        );
        let w = &s
            .counters
            .iter()
            .find(|(k, _)| k.1 == Direction::Write)
            .unwrap()
            .1;
        assert_eq!((w.ios, w.splits, w.merges), (0, 1, 1));
    }
}
