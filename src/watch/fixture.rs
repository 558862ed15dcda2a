//! Synthetic inputs for the unit tests: snapshots and devices made up
//! here (the devices as the ao-3584 fixture tree has them: sdb, 4 KiB
//! physical, partition 1 at sector 63 and 2 at sector 2048), not read
//! from a kernel.

use super::devices::{DeviceLayer, GrainFrom, Watched};
use crate::sys::blocktrace::{Counters, DevNum, Direction, Snapshot, Stage};

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

fn device(name: &str, minor: u32, layer: DeviceLayer, offset: u64) -> Watched {
    Watched {
        device: name.into(),
        major: 8,
        minor,
        layer,
        below: if layer == DeviceLayer::Partition {
            vec!["sdb".into()]
        } else {
            vec![]
        },
        disk: Some("sdb".into()),
        offset_bytes: (layer == DeviceLayer::Partition).then_some(offset),
        offset_on_disk_bytes: Some(offset),
        size_bytes: 1 << 30,
        logical_block_bytes: 512,
        physical_block_bytes: 4096,
        grain_bytes: 4096,
        grain_from: GrainFrom::Topology,
        causes: vec![],
        next: None,
    }
}

/// sdb, sdb1 at sector 63, sdb2 at sector 2048.
pub fn watched_ao() -> Vec<Watched> {
    vec![
        device("sdb", 16, DeviceLayer::Disk, 0),
        device("sdb1", 17, DeviceLayer::Partition, 63 * 512),
        device("sdb2", 18, DeviceLayer::Partition, 2048 * 512),
    ]
}
