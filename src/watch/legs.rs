//! Where a dm or md device's I/O lands below it: each bio the kernel
//! hands from the device to a device below (`block_bio_remap`: a dm
//! table's target, dm-crypt's clone, an md member), counted per device
//! below (a leg) at the sector it lands on there, so a striped LV that is
//! aligned on itself and off 4 KiB on one of its PVs shows which PV.
//!
//! The kernel does the mapping, whatever the table: dm_submit_bio_remap
//! and __map_bio (drivers/md/dm.c), raid0's raid0_map_submit_bio, the
//! read and write paths of raid1 and raid10, and raid5's ops_run_io each
//! call trace_block_bio_remap with the member's bio. A partition's own
//! remap onto its disk is the partition's `off_4k_on_disk` already, and
//! is not counted (`Grains::legs` is set for dm and md devices only).

use super::counts::{off, padded, share, shifted};
use crate::sys::{DevNum, Direction, Snapshot};
use crate::topology::{DeviceLayer, Watched};
use serde::{Deserialize, Serialize};

/// One device's I/O in one direction as it landed on one device below.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Leg {
    /// The device below, by its kernel name (`sdb1`, `dm-3`), or
    /// `MAJOR:MINOR` for one that is not watched.
    pub device: String,
    /// The bios remapped onto it.
    pub ios: u64,
    pub bytes: u64,
    /// Of those, the ones whose byte range crosses a 4 KiB boundary of
    /// the device below, at the sectors they landed on there.
    pub straddle_4k: u64,
    /// Starts by their 512-byte position in a 4 KiB unit of the device
    /// below.
    pub start_mod_4k: Vec<u64>,
    /// Starts not a multiple of 4 KiB on the device below.
    pub off_4k: u64,
    /// Where the device below starts on its disk (a partition's start, 0
    /// for a disk, a one-segment linear dm device's table offset); null
    /// where that is not known (an md device, another dm table, a device
    /// not watched, two partitions of one disk the record cannot tell
    /// apart).
    pub offset_on_disk_bytes: Option<u64>,
    /// The starts off 4 KiB on that disk: `start_mod_4k` moved by
    /// `offset_on_disk_bytes`; null where that is null.
    pub off_4k_on_disk: Option<u64>,
    /// max(straddle_4k, off_4k_on_disk) / ios.
    pub straddle_share: f64,
}

/// The legs of `w`'s I/O in direction `d`, the busiest first: none for a
/// device that is not a dm or md device.
pub fn legs(w: &Watched, d: Direction, snap: &Snapshot, stack: &[Watched]) -> Vec<Leg> {
    if !matches!(w.layer, DeviceLayer::Dm | DeviceLayer::Md) {
        return Vec::new();
    }
    let mut out: Vec<Leg> = Vec::new();
    for (k, c) in &snap.legs {
        if k.upper != w.dev() || k.direction != d || c.ios == 0 {
            continue;
        }
        let below = below_of(w, k.lower, stack);
        let name = below.name(k.lower);
        let mod4k = padded(&c.start_mod_4k, 8);
        // Two records of the same leg (the whole disk named on one path,
        // its partition on another) are one leg.
        let leg = match out.iter_mut().position(|l| l.device == name) {
            Some(i) => &mut out[i],
            None => {
                out.push(Leg {
                    device: name,
                    start_mod_4k: vec![0; 8],
                    offset_on_disk_bytes: below.offset_on_disk_bytes(),
                    ..Leg::default()
                });
                out.last_mut().expect("just pushed")
            }
        };
        leg.ios += c.ios;
        leg.bytes += c.bytes;
        leg.straddle_4k += c.straddle_4k;
        for (a, b) in leg.start_mod_4k.iter_mut().zip(&mod4k) {
            *a += b;
        }
    }
    for leg in &mut out {
        leg.off_4k = off(&leg.start_mod_4k);
        leg.off_4k_on_disk = leg
            .offset_on_disk_bytes
            .map(|o| off(&shifted(&leg.start_mod_4k, o)));
        let worst = leg.straddle_4k.max(leg.off_4k_on_disk.unwrap_or(0));
        leg.straddle_share = share(worst, leg.ios);
    }
    out.sort_by(|a, b| b.ios.cmp(&a.ios).then_with(|| a.device.cmp(&b.device)));
    out
}

/// The watched device a remap landed on. The perf-event paths name the
/// whole device (the tracepoint's `dev` is the bio's disk) where the bio
/// went to a partition of it, with the sector inside the partition: that
/// partition, when it is the one partition of that device directly below
/// `w`. When two are (an md mirror over sdb1 and sdb2), the record cannot
/// tell which: the device is named, its offset unknown (`Below::Either`).
fn below_of<'a>(w: &Watched, lower: DevNum, stack: &'a [Watched]) -> Below<'a> {
    let Some(found) = stack.iter().find(|s| s.dev() == lower) else {
        return Below::Unwatched;
    };
    if found.layer == DeviceLayer::Partition || w.below.contains(&found.device) {
        return Below::Known(found);
    }
    let mut parts = stack.iter().filter(|s| {
        s.layer == DeviceLayer::Partition
            && s.disk.as_deref() == Some(found.device.as_str())
            && w.below.contains(&s.device)
    });
    match (parts.next(), parts.next()) {
        (Some(p), None) => Below::Known(p),
        (Some(_), Some(_)) => Below::Either(found),
        _ => Below::Known(found),
    }
}

/// Where a leg's bios went, as far as the record says.
enum Below<'a> {
    /// This watched device.
    Known(&'a Watched),
    /// One of this device's partitions below, which one unknown.
    Either(&'a Watched),
    Unwatched,
}

impl Below<'_> {
    fn name(&self, lower: DevNum) -> String {
        match self {
            Below::Known(w) | Below::Either(w) => w.device.clone(),
            Below::Unwatched => format!("{}:{}", lower.major, lower.minor),
        }
    }

    fn offset_on_disk_bytes(&self) -> Option<u64> {
        match self {
            Below::Known(w) => w.offset_on_disk_bytes,
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{Counters, LegKey};

    fn dev(minor: u32) -> DevNum {
        DevNum { major: 8, minor }
    }

    fn watched(name: &str, minor: u32, layer: DeviceLayer, below: &[&str]) -> Watched {
        Watched {
            device: name.into(),
            major: 8,
            minor,
            layer,
            below: below.iter().map(|s| s.to_string()).collect(),
            ..Watched::default()
        }
    }

    fn leg_counts(ios: u64, straddle: u64, mod4k: [u64; 8]) -> Counters {
        Counters {
            ios,
            bytes: ios * 4096,
            straddle_4k: straddle,
            start_mod_4k: mod4k.to_vec(),
            ..Counters::default()
        }
    }

    /// A striped dm device over sdb1 (at sector 63 of sdb) and sdc: the
    /// perf path names sdb for sdb1's bios; the typed path names sdc.
    #[test]
    fn a_striped_device_is_shown_on_each_leg_and_the_partition_named_for_its_disk() {
        let mut sdb1 = watched("sdb1", 17, DeviceLayer::Partition, &["sdb"]);
        sdb1.disk = Some("sdb".into());
        sdb1.offset_on_disk_bytes = Some(63 * 512);
        let mut sdb = watched("sdb", 16, DeviceLayer::Disk, &[]);
        sdb.offset_on_disk_bytes = Some(0);
        let mut sdc = watched("sdc", 32, DeviceLayer::Disk, &[]);
        sdc.offset_on_disk_bytes = Some(0);
        let dm = watched("dm-0", 0, DeviceLayer::Dm, &["sdb1", "sdc"]);
        let stack = vec![dm.clone(), sdb1, sdb, sdc];
        let key = |lower, direction| LegKey {
            upper: dm.dev(),
            lower: dev(lower),
            direction,
        };
        let snap = Snapshot {
            legs: vec![
                (
                    key(16, Direction::Write),
                    leg_counts(10, 0, [10, 0, 0, 0, 0, 0, 0, 0]),
                ),
                (
                    key(32, Direction::Write),
                    leg_counts(30, 0, [30, 0, 0, 0, 0, 0, 0, 0]),
                ),
                (
                    key(32, Direction::Read),
                    leg_counts(5, 0, [5, 0, 0, 0, 0, 0, 0, 0]),
                ),
            ],
            ..Snapshot::default()
        };
        let got = legs(&dm, Direction::Write, &snap, &stack);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].device.as_str(), got[0].ios), ("sdc", 30));
        assert_eq!(got[0].off_4k_on_disk, Some(0));
        assert_eq!(got[0].straddle_share, 0.0);
        // Aligned in sdb1, 7 sectors off 4 KiB on sdb.
        assert_eq!((got[1].device.as_str(), got[1].ios), ("sdb1", 10));
        assert_eq!((got[1].off_4k, got[1].off_4k_on_disk), (0, Some(10)));
        assert_eq!(got[1].straddle_share, 1.0);
        // A partition's own remap is not a leg.
        let part = &stack[1];
        assert!(legs(part, Direction::Write, &snap, &stack).is_empty());
    }

    /// An md mirror over sdb1 and sdb2, seen on a perf-event path: the
    /// record names sdb with a sector inside one of them, which one
    /// unknown, so the leg is sdb's and its start on the disk unknown.
    #[test]
    fn two_partitions_of_one_disk_below_are_the_disk_with_no_offset() {
        let part = |name: &str, minor, start: u64| Watched {
            disk: Some("sdb".into()),
            offset_on_disk_bytes: Some(start),
            ..watched(name, minor, DeviceLayer::Partition, &["sdb"])
        };
        let sdb = Watched {
            offset_on_disk_bytes: Some(0),
            ..watched("sdb", 16, DeviceLayer::Disk, &[])
        };
        let md = watched("md0", 9, DeviceLayer::Md, &["sdb1", "sdb2"]);
        let stack = vec![
            md.clone(),
            part("sdb1", 17, 1 << 20),
            part("sdb2", 18, 63 * 512),
            sdb,
        ];
        let snap = Snapshot {
            legs: vec![(
                LegKey {
                    upper: md.dev(),
                    lower: dev(16),
                    direction: Direction::Write,
                },
                leg_counts(8, 0, [8, 0, 0, 0, 0, 0, 0, 0]),
            )],
            ..Snapshot::default()
        };
        let got = legs(&md, Direction::Write, &snap, &stack);
        assert_eq!((got[0].device.as_str(), got[0].ios), ("sdb", 8));
        assert_eq!(
            (got[0].offset_on_disk_bytes, got[0].off_4k_on_disk),
            (None, None)
        );
        assert_eq!(got[0].straddle_share, 0.0);
    }

    #[test]
    fn a_device_below_that_is_not_watched_is_named_by_its_number() {
        let dm = watched("dm-0", 0, DeviceLayer::Dm, &["sdz"]);
        let snap = Snapshot {
            legs: vec![(
                LegKey {
                    upper: dm.dev(),
                    lower: DevNum { major: 9, minor: 1 },
                    direction: Direction::Read,
                },
                leg_counts(3, 3, [0, 3, 0, 0, 0, 0, 0, 0]),
            )],
            ..Snapshot::default()
        };
        let got = legs(&dm, Direction::Read, &snap, std::slice::from_ref(&dm));
        assert_eq!(got[0].device, "9:1");
        assert_eq!((got[0].off_4k, got[0].off_4k_on_disk), (3, None));
        assert_eq!(got[0].straddle_share, 1.0);
    }
}
