//! Counted as iostat counts. `/proc/diskstats` (what iostat and
//! node_exporter read) counts a device's requests as the kernel accounts
//! them when they complete, and that is not always what was issued: the
//! empty write that carries each fsync's or fdatasync's flush (a write
//! with REQ_PREFLUSH and no data, blkdev_issue_flush) is never issued as
//! a write; the flush machinery (block/blk-flush.c) sends a flush request
//! in its place and then ends the write, which blk_account_io_done counts
//! as one. On a loop disk, 3000 4 KiB writes each followed by fdatasync
//! and 500 plain ones are 3500 writes issued, 2999 flushes issued and 6499
//! writes in /proc/diskstats. `watch` reads the kernel's statistics with
//! every snapshot, shows them beside what was issued where the two
//! differ, and says why in one line from what it counted.

use crate::sys::{Direction, Snapshot, Stage};
use crate::topology::DeviceLayer;
use serde::{Deserialize, Serialize};

/// What the kernel's own I/O statistics counted for one device and
/// direction over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelCounts {
    /// Requests completed (a flush: flush requests completed).
    pub ios: u64,
    /// I/Os merged into them (none for flushes).
    pub merges: u64,
    pub bytes: u64,
}

/// The kernel's counts of `dev` in direction `d` in `snap` (a difference
/// of two snapshots); None where /proc/diskstats has no line for it.
pub fn kernel_counts(
    snap: &Snapshot,
    dev: crate::sys::DevNum,
    d: Direction,
) -> Option<KernelCounts> {
    snap.diskstats
        .iter()
        .find(|(k, _)| *k == (dev, d))
        .map(|(_, a)| KernelCounts {
            ios: a.ios,
            merges: a.merges,
            bytes: a.sectors.saturating_mul(512),
        })
}

/// The empty writes that carried a flush, counted where `dev`'s bios are
/// queued (a partition's are queued at its disk, so it has none here).
pub fn preflush_writes(snap: &Snapshot, dev: crate::sys::DevNum) -> u64 {
    snap.counters
        .iter()
        .filter(|((v, d, s), _)| (*v, *d, *s) == (dev, Direction::Flush, Stage::Queue))
        .map(|(_, c)| c.preflush_writes)
        .sum()
}

fn noun(d: Direction, n: u64) -> String {
    let word = match d {
        Direction::Read => "read",
        Direction::Write => "write",
        Direction::Discard => "discard",
        Direction::Flush => "flush",
    };
    match (d, n) {
        (Direction::Flush, 1) => "1 flush".into(),
        (Direction::Flush, _) => format!("{n} flushes"),
        (_, 1) => format!("1 {word}"),
        _ => format!("{n} {word}s"),
    }
}

/// Why the kernel's statistics count `kernel` I/Os where `watch` counted
/// `ios` at `stage`, in one line; None when they agree.
pub fn note(
    layer: DeviceLayer,
    d: Direction,
    stage: Option<Stage>,
    ios: u64,
    kernel: u64,
    preflush: u64,
) -> Option<String> {
    if kernel == ios {
        return None;
    }
    let head = format!(
        "the kernel's statistics (/proc/diskstats, what iostat reads) count {}",
        noun(d, kernel)
    );
    let seen = match stage {
        Some(Stage::Issue) => "issued",
        Some(Stage::Queue) => "queued",
        _ => "submitted",
    };
    let why = if d == Direction::Write && preflush > 0 && kernel == ios + preflush {
        format!(": the {ios} {seen} and the {preflush} empty writes that carried a flush (REQ_PREFLUSH without data, sent to the driver as a flush), which it counts as writes")
    } else if layer == DeviceLayer::Partition {
        format!(
            " where {ios} bios were addressed to the partition: it counts the requests they became (bios merged into one are one), and the empty writes that carry a flush, which watch sees only at the disk"
        )
    } else if d == Direction::Flush && stage != Some(Stage::Issue) {
        format!(
            " where {ios} were {seen}: it counts the flush requests it completed, and the empty writes that carried them as writes"
        )
    } else {
        let mut s = format!(
            " where {ios} were {seen}: it counts requests as they complete (one in flight at the start or end of the run falls on one side only)"
        );
        if d == Direction::Write && preflush > 0 {
            s.push_str(&format!(
                ", and counts the {preflush} empty writes that carried a flush as writes"
            ));
        }
        s
    };
    Some(format!("{head}{why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_fdatasync_writes_twice_in_iostat() {
        // The loop disk of the module's comment (measured on Linux 6.18).
        let n = note(
            DeviceLayer::Loop,
            Direction::Write,
            Some(Stage::Issue),
            3500,
            6499,
            2999,
        )
        .unwrap();
        assert_eq!(
            n,
            "the kernel's statistics (/proc/diskstats, what iostat reads) count 6499 writes: the 3500 issued and the 2999 empty writes that carried a flush (REQ_PREFLUSH without data, sent to the driver as a flush), which it counts as writes"
        );
        assert_eq!(
            note(
                DeviceLayer::Loop,
                Direction::Flush,
                Some(Stage::Issue),
                2999,
                2999,
                0
            ),
            None,
            "flushes agree"
        );
        let p = note(
            DeviceLayer::Partition,
            Direction::Write,
            Some(Stage::RemapFrom),
            2048,
            128,
            0,
        )
        .unwrap();
        assert!(p.contains("count 128 writes where 2048 bios"), "{p}");
    }
}
