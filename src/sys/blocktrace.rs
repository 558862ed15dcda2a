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
}

/// Everything counted from the start of tracing to one read of the maps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub counters: Vec<((DevNum, Direction, Stage), Counters)>,
    pub latency: Vec<Latency>,
    /// Records the kernel dropped (ring overflow on the perf path; always
    /// 0 when the BPF programs count in the kernel).
    pub lost_records: u64,
    /// Seconds since tracing started.
    pub elapsed_s: f64,
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
