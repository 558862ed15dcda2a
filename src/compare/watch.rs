//! Two watch runs compared, before and after a fix: for each device and
//! direction either run saw, the I/Os and the share straddling and below
//! the physical block in each; and the findings that appeared,
//! disappeared or changed, matched by device and code; and each
//! submitter (task name and cgroup) of each device and direction, before
//! and after. The shares are shown side by side, not tested: the runs'
//! workloads need not be the same, so only the findings decide that
//! something differs.

use super::check::{Change, FindingChange};
use super::probe::and_list;
use super::RunInfo;
use crate::findings::Finding;
use crate::sys::Direction;
use crate::watch::share;
use crate::watch::DeviceSummary;
use crate::watch::Submitter;
use crate::watch::{DeviceLayer, WatchDocument};
use serde::{Deserialize, Serialize};

/// One device and direction in either run.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct DeviceChange {
    pub device: String,
    pub layer: DeviceLayer,
    pub direction: Option<Direction>,
    /// Null on the side that did not see it.
    pub ios_a: Option<u64>,
    pub ios_b: Option<u64>,
    pub straddle_share_a: Option<f64>,
    pub straddle_share_b: Option<f64>,
    /// sub_physical / ios.
    pub sub_physical_share_a: Option<f64>,
    pub sub_physical_share_b: Option<f64>,
    /// zone_crossing_writes / ios (the larger of the two, as the finding
    /// takes it); null where none were counted (not zoned, not writes) or
    /// the run did not see it.
    pub zone_crossing_share_a: Option<f64>,
    pub zone_crossing_share_b: Option<f64>,
}

/// One submitter of one device and direction in either run, matched by
/// its name and cgroup path (ids differ between boots); `other` and
/// `unattributed` are matched as names too.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct SubmitterChange {
    pub device: String,
    pub direction: Option<Direction>,
    pub submitter: String,
    pub cgroup: Option<String>,
    /// Null on the side that did not see it.
    pub ios_a: Option<u64>,
    pub ios_b: Option<u64>,
    pub straddle_share_a: Option<f64>,
    pub straddle_share_b: Option<f64>,
    pub sub_physical_share_a: Option<f64>,
    pub sub_physical_share_b: Option<f64>,
}

/// Two watch runs side by side.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct WatchComparison {
    pub a: RunInfo,
    pub b: RunInfo,
    pub devices: Vec<DeviceChange>,
    /// Each device's submitters in A and B.
    pub submitters: Vec<SubmitterChange>,
    /// By device and code.
    pub changes: Vec<FindingChange>,
    /// One sentence: what changed.
    pub summary: String,
    /// Findings that disappeared or became less severe (improved), that
    /// appeared or became more severe (regressed), and those in both at
    /// the same severity; the exit status.
    pub outcome: super::Outcome,
}

impl WatchComparison {
    /// Some finding appeared, disappeared or changed.
    pub fn differs(&self) -> bool {
        !self.changes.is_empty()
    }
}

fn run_info(name: &str, d: &WatchDocument) -> RunInfo {
    RunInfo {
        file: name.to_string(),
        source: "watch".into(),
        started_unix: crate::units::parse_rfc3339(&d.header.started_at).unwrap_or(0),
        host: d.header.host.clone(),
    }
}

/// Compares A (`a_name`, the reference) with B.
pub fn compare_watches(
    a_name: &str,
    a: &WatchDocument,
    b_name: &str,
    b: &WatchDocument,
) -> WatchComparison {
    let mut c = WatchComparison {
        a: run_info(a_name, a),
        b: run_info(b_name, b),
        devices: devices(&a.body.devices, &b.body.devices),
        submitters: submitters(&a.body.devices, &b.body.devices),
        changes: changes(&a.body.findings, &b.body.findings),
        summary: String::new(),
        outcome: super::Outcome::default(),
    };
    c.summary = summary(&c);
    let both = a
        .body
        .findings
        .iter()
        .filter(|x| b.body.findings.iter().any(|y| key(y) == key(x)))
        .count();
    c.outcome = super::check::finding_outcome(&c.changes, both);
    c
}

fn devices(a: &[DeviceSummary], b: &[DeviceSummary]) -> Vec<DeviceChange> {
    let key = |s: &DeviceSummary| (s.device.clone(), s.direction);
    let mut out: Vec<DeviceChange> = Vec::new();
    for s in a.iter().chain(b) {
        if out
            .iter()
            .any(|d| (d.device.clone(), d.direction) == key(s))
        {
            continue;
        }
        let find = |side: &[DeviceSummary]| side.iter().find(|x| key(x) == key(s)).cloned();
        let (x, y) = (find(a), find(b));
        out.push(DeviceChange {
            device: s.device.clone(),
            layer: s.layer,
            direction: s.direction,
            ios_a: x.as_ref().map(|x| x.ios),
            ios_b: y.as_ref().map(|y| y.ios),
            straddle_share_a: x.as_ref().map(|x| x.straddle_share),
            straddle_share_b: y.as_ref().map(|y| y.straddle_share),
            sub_physical_share_a: x.as_ref().map(|x| share(x.sub_physical, x.ios)),
            sub_physical_share_b: y.as_ref().map(|y| share(y.sub_physical, y.ios)),
            zone_crossing_share_a: x.as_ref().and_then(zone_crossing_share),
            zone_crossing_share_b: y.as_ref().and_then(zone_crossing_share),
        });
    }
    out
}

/// The share of a device's writes that crossed a zone boundary, of the
/// larger of its I/Os and those (the crossing ones are counted as
/// submitted, the I/Os as issued: `watch::rules`).
fn zone_crossing_share(s: &DeviceSummary) -> Option<f64> {
    s.zone_crossing_writes.map(|n| share(n, s.ios.max(n)))
}

/// Every submitter of every device and direction in A or B, in A's order
/// then B's.
fn submitters(a: &[DeviceSummary], b: &[DeviceSummary]) -> Vec<SubmitterChange> {
    type Key = (String, Option<Direction>, String, Option<String>);
    let rows = |side: &[DeviceSummary]| -> Vec<(Key, Submitter)> {
        side.iter()
            .flat_map(|d| {
                d.submitters.iter().map(move |x| {
                    let key = (
                        d.device.clone(),
                        d.direction,
                        x.name.clone(),
                        x.cgroup.clone(),
                    );
                    (key, x.clone())
                })
            })
            .collect()
    };
    let (ra, rb) = (rows(a), rows(b));
    let mut out: Vec<SubmitterChange> = Vec::new();
    for (key, _) in ra.iter().chain(&rb) {
        let seen = out.iter().any(|c| {
            (&c.device, c.direction, &c.submitter, &c.cgroup) == (&key.0, key.1, &key.2, &key.3)
        });
        if seen {
            continue;
        }
        let find =
            |side: &[(Key, Submitter)]| side.iter().find(|(k, _)| k == key).map(|(_, x)| x.clone());
        let (x, y) = (find(&ra), find(&rb));
        out.push(SubmitterChange {
            device: key.0.clone(),
            direction: key.1,
            submitter: key.2.clone(),
            cgroup: key.3.clone(),
            ios_a: x.as_ref().map(|x| x.ios),
            ios_b: y.as_ref().map(|y| y.ios),
            straddle_share_a: x.as_ref().map(|x| x.straddle_share),
            straddle_share_b: y.as_ref().map(|y| y.straddle_share),
            sub_physical_share_a: x.as_ref().map(|x| share(x.sub_physical, x.ios)),
            sub_physical_share_b: y.as_ref().map(|y| share(y.sub_physical, y.ios)),
        });
    }
    out
}

/// A finding's key: its device (the subject's target) and code.
fn key(f: &Finding) -> (Option<String>, String) {
    (f.subject.target.clone(), f.code.as_str().to_string())
}

fn change(c: Change, a: Option<&Finding>, b: Option<&Finding>) -> FindingChange {
    let f = a.or(b).expect("one side has the finding");
    let (target, code) = key(f);
    FindingChange {
        change: c,
        target,
        partition: None,
        layer: None,
        code,
        severity_a: a.map(|f| f.severity),
        severity_b: b.map(|f| f.severity),
        message_a: a.map(|f| f.message.clone()),
        message_b: b.map(|f| f.message.clone()),
    }
}

/// Matched by device and code: in both and equal is no change; in both
/// with another severity or message is `changed`; else appeared or
/// disappeared.
fn changes(a: &[Finding], b: &[Finding]) -> Vec<FindingChange> {
    let mut out = Vec::new();
    for x in a {
        match b.iter().find(|y| key(y) == key(x)) {
            Some(y) if (y.severity, &y.message) == (x.severity, &x.message) => {}
            Some(y) => out.push(change(Change::Changed, Some(x), Some(y))),
            None => out.push(change(Change::Disappeared, Some(x), None)),
        }
    }
    for y in b.iter().filter(|y| !a.iter().any(|x| key(x) == key(y))) {
        out.push(change(Change::Appeared, None, Some(y)));
    }
    out
}

fn summary(c: &WatchComparison) -> String {
    let count = |k: Change| c.changes.iter().filter(|x| x.change == k).count();
    let parts: Vec<String> = [
        (Change::Disappeared, "disappeared"),
        (Change::Appeared, "appeared"),
        (Change::Changed, "changed"),
    ]
    .iter()
    .filter(|(k, _)| count(*k) > 0)
    .map(|(k, w)| format!("{} finding(s) {w}", count(*k)))
    .collect();
    if parts.is_empty() {
        "the same findings in both runs".into()
    } else {
        and_list(&parts.iter().map(String::as_str).collect::<Vec<_>>())
    }
}

#[cfg(test)]
mod tests {
    //! Synthetic runs, made up here.
    use super::*;
    use crate::findings::{Code, Facts};

    fn doc(share: f64, found: bool) -> WatchDocument {
        let mut d = WatchDocument::default();
        d.body.devices.push(DeviceSummary {
            device: "sdb1".into(),
            direction: Some(Direction::Write),
            ios: 1000,
            straddle_share: share,
            submitters: vec![Submitter {
                name: "postgres".into(),
                cgroup: Some("/system.slice/postgresql.service".into()),
                ios: 1000,
                straddle_share: share,
                ..Submitter::default()
            }],
            ..DeviceSummary::default()
        });
        if found {
            let mut f = Finding::of(Code::StraddlingIo, Facts::default());
            f.subject.target = Some("/dev/sdb1".into());
            d.body.findings.push(f);
        }
        d
    }

    #[test]
    fn a_fixed_partition_loses_its_finding() {
        let c = compare_watches(
            "before.json",
            &doc(1.0, true),
            "after.json",
            &doc(0.0, false),
        );
        assert!(c.differs());
        assert_eq!(c.changes[0].change, Change::Disappeared);
        assert_eq!(c.changes[0].target.as_deref(), Some("/dev/sdb1"));
        assert_eq!(
            (c.devices[0].straddle_share_a, c.devices[0].straddle_share_b),
            (Some(1.0), Some(0.0))
        );
        assert_eq!(c.summary, "1 finding(s) disappeared");
        let s = &c.submitters;
        assert_eq!(s.len(), 1, "matched by name and cgroup");
        assert_eq!(
            (
                s[0].submitter.as_str(),
                s[0].straddle_share_a,
                s[0].straddle_share_b
            ),
            ("postgres", Some(1.0), Some(0.0))
        );
        let same = compare_watches("a", &doc(1.0, true), "b", &doc(1.0, true));
        assert!(!same.differs());
        assert_eq!(same.devices[0].zone_crossing_share_a, None, "not zoned");
    }

    /// 60 of 600 writes submitted across a zone boundary, issued as 660
    /// requests: the share is of the larger count; 0 after the fix.
    #[test]
    fn the_share_across_zone_boundaries_is_shown_in_both_runs() {
        let zoned = |crossing| {
            let mut d = doc(0.0, false);
            d.body.devices[0].ios = 660;
            d.body.devices[0].zone_crossing_writes = Some(crossing);
            d
        };
        let c = compare_watches("a", &zoned(60), "b", &zoned(0));
        let d = &c.devices[0];
        assert_eq!(
            (d.zone_crossing_share_a, d.zone_crossing_share_b),
            (Some(60.0 / 660.0), Some(0.0))
        );
    }
}
