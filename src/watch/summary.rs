//! Snapshots into summaries. A snapshot counts from the start of
//! tracing, so an interval is the difference of two; each watched
//! device and direction gets one summary of the stage that shows the
//! device's own I/O (the requests sent to its driver, else the bios
//! queued to it, else the bios as addressed to it before a partition or
//! dm moved them down).

use super::accounting::{self, KernelCounts};
use super::counts::{off, padded, share, shifted};
use super::legs::{self, Leg};
use super::submitters::{self, Submitter};
use crate::sys::{Counters, DevNum, Direction, Latency, Snapshot, Stage};
use crate::topology::{DeviceLayer, Watched};
use serde::{Deserialize, Serialize};

/// The directions, in the order they are shown.
pub const DIRECTIONS: [Direction; 4] = [
    Direction::Read,
    Direction::Write,
    Direction::Discard,
    Direction::Flush,
];

/// The stages a device's summary is taken from, the first with I/O.
const STAGES: [Stage; 3] = [Stage::Issue, Stage::Queue, Stage::RemapFrom];

/// One bucket of a log2 histogram: values from `from_bytes` up to twice
/// that (the last bucket open-ended), and how many I/Os fell there.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Bucket {
    pub from_bytes: u64,
    pub ios: u64,
}

/// One device and direction over the run (or an interval).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DeviceSummary {
    pub device: String,
    pub layer: DeviceLayer,
    pub direction: Option<Direction>,
    /// Which tracepoint the counts are from (`issue`, `queue`, `remap-from`).
    pub stage: Option<Stage>,
    pub ios: u64,
    pub bytes: u64,
    pub straddle_4k: u64,
    pub straddle_grain: u64,
    pub sub_physical: u64,
    /// Writes whose byte range crossed a zone boundary of a zoned device,
    /// as they were submitted (the bios queued to it or, for a partition,
    /// as addressed to it), whatever `stage` the other counts are from:
    /// the kernel splits each at the boundaries before it issues them, so
    /// none of the requests issued to a zoned disk crosses one. Null where none are
    /// counted: a device that is not zoned (`Watched::zone_bytes`), and
    /// directions other than write.
    pub zone_crossing_writes: Option<u64>,
    /// Summed over the stages.
    pub splits: u64,
    pub merges: u64,
    /// max(straddle_4k, straddle_grain, off_4k_on_disk) / ios: the share
    /// straddling here or, at a partition, on the disk; 0 without I/O.
    pub straddle_share: f64,
    /// The count that share is of: max(straddle_4k, straddle_grain,
    /// off_4k_on_disk), shown beside it so a row's columns agree with its
    /// share (a partition at sector 63: 0 across 4 KiB inside it, every
    /// start off 4 KiB on the disk).
    pub straddling: u64,
    pub grain_bytes: u64,
    pub physical_block_bytes: u64,
    /// Request sizes: bucket `from_bytes` holds sizes from it to twice it.
    pub size_histogram: Vec<Bucket>,
    /// Start alignment: bucket `from_bytes` holds starts that are a
    /// multiple of it and not of twice it; the last holds offset 0.
    pub alignment_histogram: Vec<Bucket>,
    /// Starts by their 512-byte position in a 4 KiB unit of this device.
    pub start_mod_4k: Vec<u64>,
    /// I/Os whose start is not a multiple of 4 KiB on this device.
    pub off_4k: u64,
    /// The same starts on the disk below (the partition's offset added),
    /// where the offset is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_mod_4k_on_disk: Option<Vec<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off_4k_on_disk: Option<u64>,
    /// Where the submitters were counted: `queue` (the bios submitted to
    /// the device) or, for a partition, `remap-from`; null without any.
    pub submitters_stage: Option<Stage>,
    /// Who submitted the I/O: the top `--top` tasks by the I/Os they
    /// misaligned, then `other` (the rest summed) and `unattributed`
    /// (the kernel's table of submitters was full).
    pub submitters: Vec<Submitter>,
    /// I/Os whose submitter was not counted (the table was full).
    pub unattributed: u64,
    /// Requests issued whose latency was not recorded (the table of
    /// requests in flight had no room for it, or that of latencies was
    /// full).
    pub untimed: u64,
    /// What the kernel's own statistics (/proc/diskstats, what iostat
    /// reads) counted for the device and direction over the run; null
    /// where it has no line for the device.
    pub diskstats: Option<KernelCounts>,
    /// Why those count another number of I/Os than `ios`, in one line;
    /// null when they agree.
    pub diskstats_note: Option<String>,
    /// A dm or md device's I/O where it landed on each device below it,
    /// the busiest first (`legs`); empty for other devices.
    pub legs: Vec<Leg>,
    /// Bios remapped below it that no leg counted (the kernel's table of
    /// legs was full).
    pub unmapped: u64,
}

/// `later - earlier`, counter by counter: what happened in between.
pub fn delta(later: &Snapshot, earlier: &Snapshot) -> Snapshot {
    let counters = sub_keyed(&later.counters, &earlier.counters);
    let submitters = sub_keyed(&later.submitters, &earlier.submitters);
    let diskstats = later
        .diskstats
        .iter()
        .map(|(key, a)| {
            let b = earlier
                .diskstats
                .iter()
                .find(|(k, _)| k == key)
                .map_or_else(Default::default, |(_, b)| *b);
            let a = crate::sys::Accounted {
                ios: a.ios.saturating_sub(b.ios),
                merges: a.merges.saturating_sub(b.merges),
                sectors: a.sectors.saturating_sub(b.sectors),
            };
            (*key, a)
        })
        .collect();
    let latency = later
        .latency
        .iter()
        .map(|l| {
            let before = earlier.latency.iter().find(|b| same_latency_key(b, l));
            Latency {
                micros_log2: before.map_or_else(
                    || l.micros_log2.clone(),
                    |b| sub_vec(&l.micros_log2, &b.micros_log2),
                ),
                ..l.clone()
            }
        })
        .collect();
    Snapshot {
        counters,
        latency,
        lost_records: later.lost_records.saturating_sub(earlier.lost_records),
        missed_events: later.missed_events.saturating_sub(earlier.missed_events),
        elapsed_s: (later.elapsed_s - earlier.elapsed_s).max(0.0),
        submitters,
        cgroups: later.cgroups.clone(),
        diskstats,
        untraced_devices: later.untraced_devices.clone(),
        legs: sub_keyed(&later.legs, &earlier.legs),
    }
}

/// `later - earlier` of keyed counters, key by key.
fn sub_keyed<K: PartialEq + Clone>(
    later: &[(K, Counters)],
    earlier: &[(K, Counters)],
) -> Vec<(K, Counters)> {
    later
        .iter()
        .map(|(key, c)| {
            let before = earlier.iter().find(|(k, _)| k == key).map(|(_, c)| c);
            (
                key.clone(),
                before.map_or_else(|| c.clone(), |b| sub_counters(c, b)),
            )
        })
        .collect()
}

fn same_latency_key(a: &Latency, b: &Latency) -> bool {
    (a.dev, a.direction, a.size_bucket, a.straddles)
        == (b.dev, b.direction, b.size_bucket, b.straddles)
}

fn sub_vec(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter()
        .enumerate()
        .map(|(i, x)| x.saturating_sub(b.get(i).copied().unwrap_or(0)))
        .collect()
}

fn sub_counters(a: &Counters, b: &Counters) -> Counters {
    Counters {
        ios: a.ios.saturating_sub(b.ios),
        bytes: a.bytes.saturating_sub(b.bytes),
        size_log2: sub_vec(&a.size_log2, &b.size_log2),
        align_log2: sub_vec(&a.align_log2, &b.align_log2),
        start_mod_4k: sub_vec(&a.start_mod_4k, &b.start_mod_4k),
        straddle_4k: a.straddle_4k.saturating_sub(b.straddle_4k),
        straddle_grain: a.straddle_grain.saturating_sub(b.straddle_grain),
        sub_physical: a.sub_physical.saturating_sub(b.sub_physical),
        splits: a.splits.saturating_sub(b.splits),
        merges: a.merges.saturating_sub(b.merges),
        preflush_writes: a.preflush_writes.saturating_sub(b.preflush_writes),
        unattributed: a.unattributed.saturating_sub(b.unattributed),
        untimed: a.untimed.saturating_sub(b.untimed),
        zone_crossing_writes: a
            .zone_crossing_writes
            .saturating_sub(b.zone_crossing_writes),
        unmapped: a.unmapped.saturating_sub(b.unmapped),
    }
}

/// Every watched device's summaries for the I/O in `snap`, in the stack's
/// order and then by direction, each with its `top` submitters; a device
/// and direction with no I/O, no split and no merge has none.
pub fn summarise(watched: &[Watched], snap: &Snapshot, top: usize) -> Vec<DeviceSummary> {
    let mut out = Vec::new();
    for w in watched {
        for d in DIRECTIONS {
            if let Some(mut s) = one(w, d, snap) {
                s.submitters_stage = submitters::stage_of(w, d, snap);
                if let Some(stage) = s.submitters_stage {
                    s.submitters = submitters::submitters(w, d, stage, snap, top);
                    s.unattributed =
                        counters(snap, w.dev(), d, stage).map_or(0, |c| c.unattributed);
                }
                s.untimed = counters(snap, w.dev(), d, Stage::Issue).map_or(0, |c| c.untimed);
                s.legs = legs::legs(w, d, snap, watched);
                s.unmapped = counters(snap, w.dev(), d, Stage::RemapFrom).map_or(0, |c| c.unmapped);
                s.diskstats = accounting::kernel_counts(snap, w.dev(), d);
                s.diskstats_note = s.diskstats.and_then(|k| {
                    let preflush = accounting::preflush_writes(snap, w.dev());
                    accounting::note(w.layer, d, s.stage, s.ios, k.ios, preflush)
                });
                out.push(s);
            }
        }
    }
    out
}

fn counters(snap: &Snapshot, dev: DevNum, d: Direction, stage: Stage) -> Option<&Counters> {
    snap.counters
        .iter()
        .find(|((v, dir, st), _)| (*v, *dir, *st) == (dev, d, stage))
        .map(|(_, c)| c)
}

fn one(w: &Watched, d: Direction, snap: &Snapshot) -> Option<DeviceSummary> {
    let dev = w.dev();
    let all: Vec<(Stage, &Counters)> = STAGES
        .iter()
        .filter_map(|s| counters(snap, dev, d, *s).map(|c| (*s, c)))
        .collect();
    let splits: u64 = all.iter().map(|(_, c)| c.splits).sum();
    let merges: u64 = all.iter().map(|(_, c)| c.merges).sum();
    let shown = all.iter().find(|(_, c)| c.ios > 0);
    if shown.is_none() && splits == 0 && merges == 0 {
        return None;
    }
    let empty = Counters::default();
    let (stage, c) = shown.map_or((None, &empty), |(s, c)| (Some(*s), *c));
    let mod4k = padded(&c.start_mod_4k, 8);
    let on_disk = w.offset_on_disk_bytes.map(|o| shifted(&mod4k, o));
    let off_on_disk = on_disk.as_deref().map(off);
    let zone_crossing_writes = (d == Direction::Write && w.zone_bytes() > 0)
        .then(|| submitted(&all).map_or(0, |c| c.zone_crossing_writes));
    let straddling = c
        .straddle_4k
        .max(c.straddle_grain)
        .max(off_on_disk.unwrap_or(0));
    Some(DeviceSummary {
        device: w.device.clone(),
        layer: w.layer,
        direction: Some(d),
        stage,
        ios: c.ios,
        bytes: c.bytes,
        straddle_4k: c.straddle_4k,
        straddle_grain: c.straddle_grain,
        sub_physical: c.sub_physical,
        zone_crossing_writes,
        splits,
        merges,
        straddle_share: share(straddling, c.ios),
        straddling,
        grain_bytes: w.grain_bytes,
        physical_block_bytes: w.physical_block_bytes,
        size_histogram: buckets(&c.size_log2),
        alignment_histogram: buckets(&c.align_log2),
        off_4k: off(&mod4k),
        off_4k_on_disk: off_on_disk,
        start_mod_4k_on_disk: on_disk,
        start_mod_4k: mod4k,
        ..DeviceSummary::default()
    })
}

/// The I/Os as they were submitted to the device: the bios queued to it
/// (a disk, dm, md or loop device), else as addressed to it before they
/// were moved down (a partition), else the requests issued. Writes
/// crossing a zone boundary are taken from there: block_bio_queue fires
/// once per bio, in `submit_bio_noacct_nocheck` (block/blk-core.c, the
/// BIO_TRACE_COMPLETION flag keeps a resubmitted remainder from firing it
/// again), before `bio_split_to_limits` splits it at the zone boundaries
/// (block/blk-merge.c: `get_max_io_size` caps a bio at
/// `blk_chunk_sectors_left`, and `blk_rq_get_max_sectors` keeps a merge
/// inside one zone), so a zoned disk's requests never cross one.
fn submitted<'a>(all: &[(Stage, &'a Counters)]) -> Option<&'a Counters> {
    [Stage::Queue, Stage::RemapFrom, Stage::Issue]
        .iter()
        .find_map(|s| all.iter().find(|(st, c)| st == s && c.ios > 0))
        .map(|(_, c)| *c)
}

/// The non-empty buckets of a log2 histogram from 512 bytes.
fn buckets(counts: &[u64]) -> Vec<Bucket> {
    counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| Bucket {
            from_bytes: 512u64.checked_shl(k as u32).unwrap_or(u64::MAX),
            ios: *n,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    //! Synthetic snapshots: counters made up here, not read from a kernel.
    use super::*;
    use crate::watch::fixture::{counters_4k, snapshot, watched_ao};

    #[test]
    fn an_interval_is_the_difference_of_two_snapshots() {
        let dev = DevNum {
            major: 8,
            minor: 17,
        };
        let a = snapshot(
            vec![(
                (dev, Direction::Write, Stage::RemapFrom),
                counters_4k(10, 0),
            )],
            1.0,
        );
        let b = snapshot(
            vec![(
                (dev, Direction::Write, Stage::RemapFrom),
                counters_4k(25, 0),
            )],
            3.5,
        );
        let d = delta(&b, &a);
        assert_eq!(d.counters[0].1.ios, 15);
        assert_eq!(d.counters[0].1.size_log2[3], 15);
        assert_eq!(d.elapsed_s, 2.5);
    }

    /// A partition at sector 63: its 4 KiB writes start on 4 KiB inside
    /// it and 7 sectors past it on the disk.
    #[test]
    fn a_partition_at_63_is_aligned_inside_and_off_on_the_disk() {
        let w = watched_ao();
        let p1 = DevNum {
            major: 8,
            minor: 17,
        };
        let snap = snapshot(
            vec![(
                (p1, Direction::Write, Stage::RemapFrom),
                counters_4k(100, 0),
            )],
            1.0,
        );
        let s = summarise(&w, &snap, 10);
        assert_eq!(s.len(), 1);
        let s = &s[0];
        assert_eq!(
            (s.device.as_str(), s.stage),
            ("sdb1", Some(Stage::RemapFrom))
        );
        assert_eq!((s.off_4k, s.off_4k_on_disk), (0, Some(100)));
        // What its share is of: the starts off 4 KiB on the disk.
        assert_eq!(
            (s.straddle_4k, s.straddling, s.straddle_share),
            (0, 100, 1.0)
        );
        assert_eq!(s.start_mod_4k_on_disk.as_ref().unwrap()[7], 100);
        assert_eq!(
            s.size_histogram,
            [Bucket {
                from_bytes: 4096,
                ios: 100
            }]
        );
    }

    /// null_blk zoned: 240 writes submitted, 40 across a zone boundary,
    /// each split in two before it was issued (280 requests, none across
    /// one). The crossing writes are counted as they were submitted.
    #[test]
    fn zone_crossings_are_taken_from_the_bios_submitted() {
        use crate::iolimits::ZoneModel;
        use crate::watch::fixture::watched_zoned;
        let w = watched_zoned(ZoneModel::HostManaged);
        let dev = w[0].dev();
        let write = |stage, ios, crossing| {
            let mut c = counters_4k(ios, 0);
            c.zone_crossing_writes = crossing;
            ((dev, Direction::Write, stage), c)
        };
        let mut queued = write(Stage::Queue, 240, 40);
        queued.1.splits = 40;
        let snap = snapshot(
            vec![
                queued,
                write(Stage::Issue, 280, 0),
                ((dev, Direction::Read, Stage::Issue), counters_4k(10, 0)),
            ],
            1.0,
        );
        let s = summarise(&w, &snap, 10);
        let row = |d| s.iter().find(|x| x.direction == Some(d)).unwrap();
        let wr = row(Direction::Write);
        assert_eq!((wr.stage, wr.ios, wr.splits), (Some(Stage::Issue), 280, 40));
        assert_eq!(wr.zone_crossing_writes, Some(40));
        assert_eq!(
            row(Direction::Read).zone_crossing_writes,
            None,
            "writes only"
        );
        // A device that is not zoned counts none, whatever is in its counters.
        let disk = watched_ao()[0].dev();
        let mut c = counters_4k(240, 0);
        c.zone_crossing_writes = 40;
        let plain = snapshot(vec![((disk, Direction::Write, Stage::Queue), c)], 1.0);
        assert_eq!(
            summarise(&watched_ao(), &plain, 10)[0].zone_crossing_writes,
            None
        );
    }

    #[test]
    fn the_driver_stage_is_shown_before_the_queue() {
        let w = watched_ao();
        let disk = DevNum {
            major: 8,
            minor: 16,
        };
        let snap = snapshot(
            vec![
                ((disk, Direction::Read, Stage::Queue), counters_4k(50, 0)),
                ((disk, Direction::Read, Stage::Issue), counters_4k(40, 40)),
            ],
            1.0,
        );
        let s = summarise(&w, &snap, 10);
        assert_eq!(
            (s[0].stage, s[0].ios, s[0].straddle_4k),
            (Some(Stage::Issue), 40, 40)
        );
        assert_eq!(s[0].straddle_share, 1.0);
    }
}
