//! Synthetic inputs for the unit tests: snapshots and devices made up
//! here (the devices as the ao-3584 fixture tree has them: sdb, 4 KiB
//! physical, partition 1 at sector 63 and 2 at sector 2048; and a zoned
//! disk as null_blk's `zoned=1 zone_size=4` is), not read from a kernel.

use crate::iolimits::{ZoneModel, Zones};
use crate::sys::{Counters, DevNum, Direction, Snapshot, Stage};
use crate::topology::{DeviceLayer, Watched};

/// `ios` 4 KiB I/Os starting on 4 KiB, `straddle` of them counted as
/// straddling.
pub fn counters_4k(ios: u64, straddle: u64) -> Counters {
    let mut c = Counters {
        ios,
        bytes: ios * 4096,
        size_log2: vec![0; 32],
        align_log2: vec![0; 32],
        start_mod_4k: vec![0; 8],
        straddle_4k: straddle,
        straddle_grain: straddle,
        ..Counters::default()
    };
    c.size_log2[3] = ios;
    c.align_log2[3] = ios;
    c.start_mod_4k[0] = ios;
    c
}

pub fn snapshot(counters: Vec<((DevNum, Direction, Stage), Counters)>, elapsed_s: f64) -> Snapshot {
    Snapshot {
        counters,
        latency: vec![],
        lost_records: 0,
        elapsed_s,
        ..Snapshot::default()
    }
}

/// sdb, sdb1 at sector 63, sdb2 at sector 2048 (with the devices'
/// mapping, in `topology::devices`).
pub(crate) use crate::topology::test_device as device;
pub(crate) use crate::topology::watched_ao;

/// The zone size of `watched_zoned`: 4 MiB (null_blk `zone_size=4`,
/// sysfs queue/chunk_sectors 8192).
pub const ZONE: u64 = 4 << 20;

/// nullb0 (252:0), a 1 GiB zoned disk of 512-byte blocks in zones of
/// `ZONE` bytes, of zone model `model`.
pub fn watched_zoned(model: ZoneModel) -> Vec<Watched> {
    vec![Watched {
        device: "nullb0".into(),
        major: 252,
        minor: 0,
        physical_block_bytes: 512,
        grain_bytes: 512,
        zoned: Zones {
            model,
            zone_size_bytes: ZONE,
            zones: 256,
            ..Zones::default()
        },
        ..device("nullb0", 0, DeviceLayer::Disk, 0)
    }]
}
