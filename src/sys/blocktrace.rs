//! What the kernel's block tracepoints counted (issue 28, `watch`): the
//! data the tracing code in `sys/` hands up to `watch/`. Only types live
//! here; the code that fills them (BPF programs attached to the block
//! tracepoints, or raw perf samples decoded through the tracefs `format`
//! files) is added beside them.

use serde::{Deserialize, Serialize};

/// Buckets of the log2 histograms: bucket k holds values v with
/// 2^k ≤ v / base < 2^(k+1) (base 512 bytes for sizes and alignments,
/// 1 µs for latencies); the last bucket is open-ended.
pub const LOG2_BUCKETS: usize = 32;

/// A device as the kernel numbers it (`dev_t`): /sys/dev/block/MAJ:MIN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DevNum {
    pub major: u32,
    pub minor: u32,
}

/// An I/O's direction, from the tracepoints' `rwbs` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    Read,
    Write,
    Discard,
    Flush,
}

crate::spelled_as_serde!(Direction);

/// Where in the stack an I/O was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// `block_bio_queue`: a bio submitted to the device. A partition's
    /// bio is seen here at its whole disk, at the disk's sector (the
    /// event's `dev` is bio_dev(), the disk's dev_t, since Linux 5.12);
    /// the partition itself shows as `RemapFrom`.
    Queue,
    /// `block_bio_remap`, counted at the upper device (`old_dev`,
    /// `old_sector`): the bio as its submitter addressed it before a
    /// partition, dm or md moved it down.
    RemapFrom,
    /// `block_rq_issue`: a request sent to the driver.
    Issue,
}

crate::spelled_as_serde!(Stage);

/// One (device, direction, stage)'s counters. The grains it is judged
/// against are the ones handed to the tracer per device (`Grains`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub ios: u64,
    pub bytes: u64,
    /// Request sizes, log2 buckets from 512 bytes.
    pub size_log2: Vec<u64>,
    /// The start's alignment: bucket k when the byte offset is a multiple
    /// of 512 << k but not of 512 << (k + 1); offset 0 in the last bucket.
    pub align_log2: Vec<u64>,
    /// The start sector modulo 8 (its 512-byte position in a 4 KiB unit).
    pub start_mod_4k: Vec<u64>,
    /// I/Os that cross a 4 KiB boundary without covering whole 4 KiB
    /// units (start or end not a multiple of 4 KiB).
    pub straddle_4k: u64,
    /// The same against the device's grain.
    pub straddle_grain: u64,
    /// Writes smaller than the device's physical block.
    pub sub_physical: u64,
    /// `block_split` events seen for this device and direction (in the
    /// `Stage::Queue` entry only: splits and merges happen to bios).
    pub splits: u64,
    /// `block_bio_backmerge` and `block_bio_frontmerge` events (in the
    /// `Stage::Queue` entry only).
    pub merges: u64,
    /// Writes without data that carry a flush (REQ_PREFLUSH: the empty
    /// write of each fsync or fdatasync, `blkdev_issue_flush`), counted
    /// under `Direction::Flush`. The kernel's own statistics
    /// (/proc/diskstats) count each as a write.
    #[serde(default)]
    pub preflush_writes: u64,
    /// I/Os whose submitter was not counted: the table of submitters was
    /// full (`Stage::Queue` and `Stage::RemapFrom` only).
    #[serde(default)]
    pub unattributed: u64,
    /// Requests issued whose latency was not recorded: the table of
    /// requests in flight had no room for it at the issue, or the latency
    /// table was full at the completion (`Stage::Issue` only).
    #[serde(default)]
    pub untimed: u64,
    /// Writes whose byte range [start, start + length) crosses a zone
    /// boundary of a zoned device (`Grains::zone_bytes`); always 0 on a
    /// device that is not zoned. Counted at every stage, as straddling
    /// is: at `Stage::Issue` none cross on a zoned disk, the block layer
    /// having split each bio at its zone boundaries before it became a
    /// request (block/blk-merge.c `get_max_io_size`, chunk_sectors).
    #[serde(default)]
    pub zone_crossing_writes: u64,
    /// Bios remapped onto a device below that were not counted there:
    /// the table of legs was full (`Stage::RemapFrom` only).
    #[serde(default)]
    pub unmapped: u64,
}

/// A device's bios as `block_bio_remap` hands them to a device below (a
/// dm table's leg, an md member, a partition's disk), counted at the
/// sector they land on there. `lower` is the bio's own block device where
/// the typed raw tracepoints read it; on the other paths (the record's
/// `dev`) the whole disk, with the sector relative to the device the
/// bio was sent to. Its counts are a `Counters` without histograms:
/// `ios`, `bytes`, `straddle_4k` and `start_mod_4k`, on the device below.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LegKey {
    pub upper: DevNum,
    pub lower: DevNum,
    pub direction: Direction,
}

/// Who submitted bios: the task's name and cgroup where the bio was
/// submitted (`Stage::Queue`, `block_bio_queue`, and `Stage::RemapFrom`,
/// `block_bio_remap`, both of which run in the submitting task), for one
/// device and direction. Its counts are a `Counters` without histograms:
/// `ios`, `bytes`, `straddle_4k`, `straddle_grain`, `sub_physical`,
/// `splits` and `start_mod_4k`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SubmitterKey {
    pub dev: DevNum,
    pub direction: Direction,
    pub stage: Stage,
    /// The task's `comm` (its name, at most 15 bytes).
    pub comm: String,
    /// The task's cgroup v2 id (the inode number of its directory in the
    /// cgroup2 filesystem); 0 where it is not known.
    pub cgroup_id: u64,
}

/// What the kernel's own I/O statistics (/proc/diskstats, which iostat
/// and node_exporter read) counted for one device and direction:
/// requests completed, I/Os merged into them, sectors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accounted {
    pub ios: u64,
    pub merges: u64,
    pub sectors: u64,
}

/// Issue-to-complete latencies of requests of one size bucket, aligned
/// (covering whole grains) or straddling, log2 buckets from 1 µs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latency {
    pub dev: DevNum,
    pub direction: Direction,
    pub size_bucket: u8,
    pub straddles: bool,
    pub micros_log2: Vec<u64>,
}

/// The grains a device's I/O is judged against, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grains {
    pub dev: DevNum,
    /// max(physical block, minimum I/O), or the user's `--unit`.
    pub grain_bytes: u64,
    pub physical_bytes: u64,
    /// The zone size of a zoned device (sysfs `queue/chunk_sectors` of a
    /// host-managed or host-aware disk, a power of two), whose writes
    /// crossing a zone boundary are counted; 0 for a device that is not
    /// zoned, which counts none.
    #[serde(default)]
    pub zone_bytes: u64,
    /// Count its bios where block_bio_remap hands them to a device below
    /// (`Snapshot::legs`): a dm or md device's. A partition's own remap
    /// onto its disk is its `off_4k_on_disk` already, and is not counted
    /// again.
    #[serde(default)]
    pub legs: bool,
}

/// Everything counted from the start of tracing to one read of the maps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub counters: Vec<((DevNum, Direction, Stage), Counters)>,
    pub latency: Vec<Latency>,
    /// Records the kernel dropped (ring overflow on the perf path; always
    /// 0 when the BPF programs count in the kernel).
    pub lost_records: u64,
    /// Events the kernel did not run a BPF program on (its recursion
    /// misses: the tracepoint fired in an interrupt taken while a tracing
    /// program ran on that CPU); 0 on the perf-samples path, and on
    /// kernels before 5.12, which do not count them.
    #[serde(default)]
    pub missed_events: u64,
    /// Seconds since tracing started.
    pub elapsed_s: f64,
    /// Submitters per device, direction and stage (`SubmitterKey`).
    #[serde(default)]
    pub submitters: Vec<(SubmitterKey, Counters)>,
    /// The paths of the cgroups in `submitters`, relative to the cgroup2
    /// mount (`/system.slice/postgresql.service`); an id whose cgroup is
    /// gone is absent.
    #[serde(default)]
    pub cgroups: Vec<(u64, String)>,
    /// The kernel's own statistics of each traced device (/proc/diskstats,
    /// since boot), read with the maps.
    #[serde(default)]
    pub diskstats: Vec<((DevNum, Direction), Accounted)>,
    /// Devices asked for but not traced: more than the tracer counts.
    #[serde(default)]
    pub untraced_devices: Vec<DevNum>,
    /// Each device's bios where they landed below it (`LegKey`).
    #[serde(default)]
    pub legs: Vec<(LegKey, Counters)>,
}

/// How the events were read, said in the output with its cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TracePath {
    /// BPF programs count inside the kernel.
    Bpf,
    /// Raw perf samples decoded in user space (where BPF is refused).
    PerfSamples,
}

crate::spelled_as_serde!(TracePath);

/// How the BPF programs get their events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BpfAttach {
    /// Typed raw tracepoints (`tp_btf`, where the kernel has BTF): each
    /// program reads the tracepoint's own arguments; no record is built.
    RawTracepoint,
    /// A perf event on each tracepoint builds its record (the tracefs
    /// format) and runs the program on it.
    PerfEvent,
}

crate::spelled_as_serde!(BpfAttach);
