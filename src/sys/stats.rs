//! What a run cost the system, counted where the reads happen: device
//! and image reads (and their bytes) and sysfs attributes read, so a
//! report can show per target what it took (`check --stats`, the JSON's
//! `run`). Counts only: no clock, so a document of the same disks reads
//! the same every time.

use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

static DEVICE_READS: AtomicU64 = AtomicU64::new(0);
static BYTES_READ: AtomicU64 = AtomicU64::new(0);
static SYSFS_READS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The same counts, of this thread's reads only: a target's reads
    /// are made in two threads (inspect reads ahead in one).
    static HERE: Cell<Cost> = const { Cell::new(Cost::ZERO) };
}

/// Reads counted so far, or between two points (`b.since(a)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Cost {
    /// Reads of a device node or image file that reached the kernel.
    pub device_reads: u64,
    /// The bytes those reads asked for.
    pub bytes_read: u64,
    /// sysfs and procfs attributes read and directories listed.
    pub sysfs_reads: u64,
}

impl Cost {
    const ZERO: Cost = Cost {
        device_reads: 0,
        bytes_read: 0,
        sysfs_reads: 0,
    };

    /// The counts so far in this thread.
    pub fn here() -> Cost {
        HERE.with(Cell::get)
    }

    /// The counts so far in this process.
    pub fn now() -> Cost {
        Cost {
            device_reads: DEVICE_READS.load(Relaxed),
            bytes_read: BYTES_READ.load(Relaxed),
            sysfs_reads: SYSFS_READS.load(Relaxed),
        }
    }

    /// What was counted between `earlier` and this.
    pub fn since(self, earlier: Cost) -> Cost {
        Cost {
            device_reads: self.device_reads.saturating_sub(earlier.device_reads),
            bytes_read: self.bytes_read.saturating_sub(earlier.bytes_read),
            sysfs_reads: self.sysfs_reads.saturating_sub(earlier.sysfs_reads),
        }
    }

    /// Both added up.
    pub fn plus(self, other: Cost) -> Cost {
        Cost {
            device_reads: self.device_reads + other.device_reads,
            bytes_read: self.bytes_read + other.bytes_read,
            sysfs_reads: self.sysfs_reads + other.sysfs_reads,
        }
    }
}

/// One read of `bytes` from a device or image.
pub(super) fn count_read(bytes: usize) {
    DEVICE_READS.fetch_add(1, Relaxed);
    BYTES_READ.fetch_add(bytes as u64, Relaxed);
    let _ = HERE.try_with(|c| {
        let mut now = c.get();
        now.device_reads += 1;
        now.bytes_read += bytes as u64;
        c.set(now);
    });
}

/// One attribute read or directory listed.
pub(super) fn count_sysfs() {
    SYSFS_READS.fetch_add(1, Relaxed);
    let _ = HERE.try_with(|c| {
        let mut now = c.get();
        now.sysfs_reads += 1;
        c.set(now);
    });
}
