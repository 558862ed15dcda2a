//! Findings from what `watch` counted: straddling I/O, writes below the
//! physical block, split I/O, writes crossing a zone boundary. Each names the device, the counts and what
//! `check` says about the device's placement (its `causes`), and
//! `diskalign plan` when a new partition layout fixes it.

use super::counts::share;
use super::submitters::{behind, Submitter};
use super::summary::DeviceSummary;
use crate::findings::{Code, Facts, Finding, Severity, Subject, SubmitterFact};
use crate::iolimits::ZoneModel;
use crate::sys::Direction;
use crate::topology::{DeviceLayer, Watched};

/// A finding needs at least this share of the device's I/Os...
pub const MIN_SHARE: f64 = 0.05;
/// ...and at least this many of them.
pub const MIN_IOS: u64 = 32;

/// The codes of `check` that a layout change by `plan` fixes: a
/// partition's start, end or size.
const PLAN_FIXES: [Code; 5] = [
    Code::StartMisaligned,
    Code::StartNot4k,
    Code::EndNot4k,
    Code::EndNotPhysical,
    Code::SizeNot4k,
];

/// The codes of `check` that explain straddling I/O: a start off its
/// grain (the device's, or what it is built on).
const STRADDLE_CAUSES: [Code; 5] = [
    Code::StartMisaligned,
    Code::StartNot4k,
    Code::LayerStartMisaligned,
    Code::LayerStartNot4k,
    Code::KernelReportsMisaligned,
];

/// The codes that explain writes below the physical block: a size or end
/// off 4 KiB gives the node a block size below it.
const SIZE_CAUSES: [Code; 3] = [Code::SizeNot4k, Code::EndNot4k, Code::EndNotPhysical];

/// Only the causes among `codes`.
fn only<'a>(causes: &[&'a Finding], codes: &[Code]) -> Vec<&'a Finding> {
    causes
        .iter()
        .copied()
        .filter(|f| codes.contains(&f.code))
        .collect()
}

/// Every finding of the run, device by device.
pub fn findings(watched: &[Watched], devices: &[DeviceSummary]) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in devices {
        let Some(w) = watched.iter().find(|w| w.device == s.device) else {
            continue;
        };
        let causes = causes(w, watched, devices, s.direction);
        out.extend(straddling(w, s, &only(&causes, &STRADDLE_CAUSES)));
        out.extend(sub_physical(w, s, &only(&causes, &SIZE_CAUSES)));
        out.extend(split(w, s, &causes));
        out.extend(zone_crossing(w, s));
    }
    once_per_cause(out, watched)
}

/// One misalignment, one finding: a partition's I/O counted at it and
/// again at its disk below is the same I/O. A disk's finding is left out
/// when its partitions' findings of the same code and direction account
/// for all of its I/Os (as many or more), so what is said is said at the
/// partition, which names the cause; I/O of the disk's own (or of a
/// partition with no finding) keeps the disk's.
fn once_per_cause(found: Vec<Finding>, watched: &[Watched]) -> Vec<Finding> {
    let layer = |f: &Finding| {
        let device = f.facts.device.as_deref();
        watched.iter().find(|w| Some(w.device.as_str()) == device)
    };
    // The disk is whatever its partitions sit on: a disk, a loop device.
    let explained = |f: &Finding| {
        let Some(disk) = layer(f).filter(|w| w.layer != DeviceLayer::Partition) else {
            return false;
        };
        let at_partitions: u64 = found
            .iter()
            .filter(|g| g.code == f.code && g.facts.direction == f.facts.direction)
            .filter(|g| {
                layer(g).is_some_and(|p| {
                    p.layer == DeviceLayer::Partition && p.disk.as_deref() == Some(&disk.device)
                })
            })
            .filter_map(|g| g.facts.affected_ios)
            .sum();
        at_partitions > 0 && at_partitions >= f.facts.affected_ios.unwrap_or(0)
    };
    found.iter().filter(|f| !explained(f)).cloned().collect()
}

fn notable(affected: u64, ios: u64) -> bool {
    affected >= MIN_IOS && share(affected, ios) >= MIN_SHARE
}

/// The check findings behind a device's I/O: its own, and for a disk
/// those of its partitions whose I/O in that direction lands off 4 KiB.
fn causes<'a>(
    w: &'a Watched,
    watched: &'a [Watched],
    devices: &[DeviceSummary],
    direction: Option<Direction>,
) -> Vec<&'a Finding> {
    let mut out: Vec<&Finding> = w.causes.iter().collect();
    if w.layer == DeviceLayer::Disk {
        for p in watched
            .iter()
            .filter(|p| p.layer == DeviceLayer::Partition && p.disk.as_deref() == Some(&w.device))
        {
            let off = devices.iter().any(|s| {
                s.device == p.device
                    && s.direction == direction
                    && s.off_4k_on_disk.unwrap_or(0) > 0
            });
            if off {
                out.extend(p.causes.iter());
            }
        }
    }
    out
}

/// The tasks behind most of `affected` I/Os, counted by `of`.
fn submitted_by(s: &DeviceSummary, of: fn(&Submitter) -> u64, affected: u64) -> Vec<SubmitterFact> {
    behind(&s.submitters, of, affected)
        .into_iter()
        .map(|x| SubmitterFact {
            name: x.name.clone(),
            cgroup: x.cgroup.clone(),
            affected_ios: of(x),
        })
        .collect()
}

/// The facts every watch finding has.
fn facts(w: &Watched, s: &DeviceSummary, affected: u64, causes: &[&Finding]) -> Facts {
    let mut codes: Vec<Code> = causes.iter().map(|f| f.code).collect();
    codes.dedup();
    // The disk's plan command, where a new layout fixes the cause and
    // planning the disk has work (so the command runs as printed).
    let fix = causes
        .iter()
        .any(|f| PLAN_FIXES.contains(&f.code))
        .then(|| w.next.clone())
        .flatten();
    Facts {
        device: Some(w.device.clone()),
        direction: s.direction.map(|d| d.as_str().to_string()),
        ios: Some(s.ios),
        affected_ios: Some(affected),
        share: Some(share(affected, s.ios)),
        causes: codes,
        fix,
        ..Facts::default()
    }
}

fn subject(w: &Watched) -> Subject {
    Subject {
        target: Some(format!("/dev/{}", w.device)),
        partition: None,
        layer: None,
    }
}

/// Straddling I/O: the device's own counts, or at a partition the starts
/// that land off 4 KiB on the disk.
fn straddling(w: &Watched, s: &DeviceSummary, causes: &[&Finding]) -> Option<Finding> {
    let own = s.straddle_4k.max(s.straddle_grain);
    let affected = own.max(s.off_4k_on_disk.unwrap_or(0));
    if !notable(affected, s.ios) {
        return None;
    }
    let grain = if s.straddle_grain > s.straddle_4k {
        s.grain_bytes
    } else {
        4096
    };
    let mut f = Finding::of(
        Code::StraddlingIo,
        Facts {
            grain_bytes: Some(grain),
            offset_bytes: w.offset_on_disk_bytes.filter(|o| *o > 0),
            submitters: submitted_by(s, |x| x.straddling, affected),
            ..facts(w, s, affected, causes)
        },
    );
    f.subject = subject(w);
    if s.direction != Some(Direction::Write) {
        f = f.severity(Severity::Warning);
    }
    Some(f)
}

fn sub_physical(w: &Watched, s: &DeviceSummary, causes: &[&Finding]) -> Option<Finding> {
    if s.direction != Some(Direction::Write) || !notable(s.sub_physical, s.ios) {
        return None;
    }
    let mut f = Finding::of(
        Code::SubPhysicalWrites,
        Facts {
            physical_block_bytes: Some(w.physical_block_bytes),
            submitters: submitted_by(s, |x| x.sub_physical, s.sub_physical),
            ..facts(w, s, s.sub_physical, causes)
        },
    );
    f.subject = subject(w);
    Some(f)
}

fn split(w: &Watched, s: &DeviceSummary, causes: &[&Finding]) -> Option<Finding> {
    // Splits are counted against the bios queued, which may be fewer
    // than the requests issued; the larger is the base.
    let base = s.ios.max(s.splits);
    if !notable(s.splits, base) {
        return None;
    }
    let mut f = Finding::of(
        Code::SplitIo,
        Facts {
            submitters: submitted_by(s, |x| x.splits, s.splits),
            ..facts(w, s, s.splits, causes)
        },
    );
    f.subject = subject(w);
    Some(f)
}

/// Writes crossing a zone boundary of a zoned device (counted as they were
/// submitted, against the requests issued: the larger is the base, as for
/// splits). An error on a host-managed device, where the part that
/// starts a sequential-write-required zone fails unless that zone is
/// empty; a warning on a host-aware one, which takes them split.
fn zone_crossing(w: &Watched, s: &DeviceSummary) -> Option<Finding> {
    let crossing = s.zone_crossing_writes?;
    let base = s.ios.max(crossing);
    if !notable(crossing, base) {
        return None;
    }
    let mut f = Finding::of(
        Code::ZoneCrossingWrites,
        Facts {
            zone_size_bytes: Some(w.zoned.zone_size_bytes),
            zone_model: Some(w.zoned.model),
            ios: Some(base),
            share: Some(share(crossing, base)),
            ..facts(w, s, crossing, &[])
        },
    );
    f.subject = subject(w);
    if w.zoned.model != ZoneModel::HostManaged {
        f = f.severity(Severity::Warning);
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    //! Synthetic summaries, made up here.
    use super::*;
    use crate::watch::fixture::watched_ao;

    fn summary(device: &str, direction: Direction) -> DeviceSummary {
        DeviceSummary {
            device: device.into(),
            direction: Some(direction),
            ios: 1000,
            grain_bytes: 4096,
            physical_block_bytes: 4096,
            ..DeviceSummary::default()
        }
    }

    #[test]
    fn writes_off_4k_on_the_disk_are_found_at_the_partition_with_their_cause() {
        let mut w = watched_ao();
        w[1].causes.push(Finding::of(
            Code::StartNot4k,
            Facts {
                offset_bytes: Some(63 * 512),
                ..Facts::default()
            },
        ));
        w[1].causes[0].subject.target = Some("/dev/sdb".into());
        w[1].next = Some("diskalign plan /dev/sdb".into());
        let s = DeviceSummary {
            off_4k_on_disk: Some(990),
            layer: DeviceLayer::Partition,
            ..summary("sdb1", Direction::Write)
        };
        let f = findings(&w, &[s]);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, Code::StraddlingIo);
        assert_eq!(f[0].facts.causes, [Code::StartNot4k]);
        assert_eq!(f[0].facts.fix.as_deref(), Some("diskalign plan /dev/sdb"));
        assert_eq!(
            f[0].message,
            "990 of 1000 writes (99.0 %) to sdb1 (it starts at byte 32256 of the disk) straddle a 4 KiB boundary on the disk: each touches one unit more than it needs; check finds start-not-4k; `diskalign plan /dev/sdb` proposes the fix"
        );
    }

    /// The disk's straddling writes that its partition's account for are
    /// that partition's finding only; more of them than that (the disk's
    /// own I/O) keep the disk's.
    #[test]
    fn one_misalignment_is_one_finding_at_the_partition() {
        let w = watched_ao();
        let part = DeviceSummary {
            off_4k_on_disk: Some(1000),
            layer: DeviceLayer::Partition,
            ..summary("sdb1", Direction::Write)
        };
        let disk = |straddle: u64| DeviceSummary {
            ios: 3000,
            straddle_4k: straddle,
            layer: DeviceLayer::Disk,
            ..summary("sdb", Direction::Write)
        };
        let devices = |f: Vec<Finding>| -> Vec<String> {
            f.iter().map(|f| f.facts.device.clone().unwrap()).collect()
        };
        let same = findings(&w, &[part.clone(), disk(1000)]);
        assert_eq!(devices(same), ["sdb1"]);
        let more = findings(&w, &[part, disk(2500)]);
        assert_eq!(devices(more), ["sdb1", "sdb"]);
    }

    #[test]
    fn a_few_straddling_reads_are_no_finding_and_many_are_a_warning() {
        let w = watched_ao();
        let few = DeviceSummary {
            straddle_4k: 31,
            ..summary("sdb", Direction::Read)
        };
        assert!(findings(&w, &[few]).is_empty());
        let many = DeviceSummary {
            straddle_4k: 300,
            ..summary("sdb", Direction::Read)
        };
        let f = findings(&w, &[many]);
        assert_eq!(
            (f[0].code, f[0].severity),
            (Code::StraddlingIo, Severity::Warning)
        );
    }

    #[test]
    fn the_finding_names_who_submitted_most_of_it() {
        use crate::watch::submitters::{Submitter, SubmitterKind};
        let w = watched_ao();
        let task = |name: &str, cgroup: &str, straddling: u64| Submitter {
            name: name.into(),
            kind: SubmitterKind::Process,
            cgroup: Some(cgroup.into()),
            ios: 500,
            straddling,
            ..Submitter::default()
        };
        let s = DeviceSummary {
            straddle_4k: 600,
            submitters: vec![
                task("postgres", "/system.slice/postgresql.service", 400),
                task("cp", "/", 150),
                task("tar", "/", 50),
            ],
            ..summary("sdb", Direction::Write)
        };
        let f = findings(&w, &[s]);
        let names: Vec<&str> = f[0]
            .facts
            .submitters
            .iter()
            .map(|x| x.name.as_str())
            .collect();
        assert_eq!(names, ["postgres"], "400 of 600 is at least half");
        assert!(
            f[0].message
                .contains("; most from postgres in /system.slice/postgresql.service (400)"),
            "{}",
            f[0].message
        );
    }

    /// 40 of 280 writes across a 4 MiB zone boundary.
    fn crossing(n: u64) -> DeviceSummary {
        DeviceSummary {
            device: "nullb0".into(),
            direction: Some(Direction::Write),
            ios: 280,
            zone_crossing_writes: Some(n),
            ..DeviceSummary::default()
        }
    }

    #[test]
    fn writes_across_a_zone_boundary_are_an_error_on_a_host_managed_device() {
        use crate::watch::fixture::{watched_zoned, ZONE};
        let w = watched_zoned(ZoneModel::HostManaged);
        let f = findings(&w, &[crossing(40)]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            (f[0].code, f[0].severity),
            (Code::ZoneCrossingWrites, Severity::Error)
        );
        let x = &f[0].facts;
        assert_eq!(
            (x.affected_ios, x.ios, x.zone_size_bytes),
            (Some(40), Some(280), Some(ZONE))
        );
        assert_eq!(x.zone_model, Some(ZoneModel::HostManaged));
        assert_eq!(
            f[0].message,
            "40 of 280 writes (14.3 %) to nullb0 cross a boundary of its 4194304-byte zones: the kernel splits each into one write per zone; on this host-managed device the part that starts a sequential-write-required zone must land on that zone's write pointer, so it fails unless the zone is empty (conventional zones take it)"
        );
        assert!(findings(&w, &[crossing(31)]).is_empty(), "fewer than 32");
        let aware = findings(&watched_zoned(ZoneModel::HostAware), &[crossing(40)]);
        assert_eq!(aware[0].severity, Severity::Warning);
        assert!(aware[0]
            .message
            .ends_with("this host-aware device accepts them, each as two writes or more"));
        // A device that is not zoned has no count, so no finding.
        let plain = DeviceSummary {
            zone_crossing_writes: None,
            ..crossing(0)
        };
        assert!(findings(&w, &[plain]).is_empty());
    }

    #[test]
    fn sub_physical_writes_and_splits() {
        let w = watched_ao();
        let s = DeviceSummary {
            sub_physical: 500,
            splits: 100,
            ..summary("sdb2", Direction::Write)
        };
        let codes: Vec<Code> = findings(&w, &[s]).iter().map(|f| f.code).collect();
        assert_eq!(codes, [Code::SubPhysicalWrites, Code::SplitIo]);
    }
}
