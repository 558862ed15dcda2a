//! Two check runs compared finding by finding: what appeared, what
//! disappeared and what changed, per target, partition and layer. It
//! confirms a fix (the `start-not-4k` of the repartitioned partition is
//! gone) or shows what moving a disk from USB to SATA changed.
//!
//! Findings are matched by target, partition, layer and code (the subject
//! `all_findings` fills in). Identical findings match first; of the rest,
//! those with the same key pair in order and are `changed` (severity,
//! message or facts differ); what is left appeared or disappeared.
//!
//! When each run has exactly one target and their paths differ (a disk
//! that was `/dev/sdb` behind USB is `/dev/sda` on SATA), the two are the
//! same target: B's findings are keyed by A's path, and the target's
//! `path_b` says what B called it.

use super::probe::and_list;
use super::RunInfo;
use crate::check::CheckDoc;
use crate::check::CheckedTarget;
use crate::errors::TargetError;
use crate::findings::Finding;
use crate::findings::{Severity, Status};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// How a finding differs between the runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// In B only.
    #[default]
    Appeared,
    /// In A only.
    Disappeared,
    /// In both, with another severity, message or facts.
    Changed,
}

crate::spelled_as_serde!(Change);

/// One target of either run.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct TargetChange {
    /// The path as A gave it (as B did, for a target only in B).
    pub target: String,
    /// B's path for the same target, when it differs (one target each).
    pub path_b: Option<String>,
    /// Checked in each run.
    pub in_a: bool,
    pub in_b: bool,
    /// Its status in each run (null: not checked, or an older document).
    pub status_a: Option<Status>,
    pub status_b: Option<Status>,
    /// Why it could not be checked, in each run.
    pub error_a: Option<String>,
    pub error_b: Option<String>,
    /// What says the two runs' disks under this name are not the same
    /// disk: a serial, WWN or size that differs, or a partition table made
    /// again (another PTUUID). Compared all the same, with this warning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub different_disk: Option<String>,
}

/// A finding that appeared, disappeared or changed.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct FindingChange {
    pub change: Change,
    /// Null for the md arrays and volume groups assembled across targets.
    pub target: Option<String>,
    pub partition: Option<u32>,
    pub layer: Option<String>,
    pub code: String,
    pub severity_a: Option<Severity>,
    pub severity_b: Option<Severity>,
    pub message_a: Option<String>,
    pub message_b: Option<String>,
}

impl FindingChange {
    /// What the finding is about; `assembled` stands for the target of an
    /// array or VG assembled across targets.
    pub fn subject(&self) -> crate::findings::Subject {
        crate::findings::Subject {
            target: Some(self.target.clone().unwrap_or_else(|| "assembled".into())),
            partition: self.partition,
            layer: self.layer.clone(),
        }
    }
}

/// Two check runs side by side.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct CheckComparison {
    pub a: RunInfo,
    pub b: RunInfo,
    pub targets: Vec<TargetChange>,
    /// By target (assembled layers last), partition, layer and code.
    pub changes: Vec<FindingChange>,
    /// One sentence: what changed.
    pub summary: String,
    /// Targets whose status is better in B (improved), worse or that B
    /// could not check (regressed), and the same; the exit status.
    pub outcome: super::Outcome,
}

impl CheckComparison {
    /// Some finding appeared, disappeared or changed.
    pub fn differs(&self) -> bool {
        !self.changes.is_empty()
    }

    /// How many findings had `c`.
    pub fn count(&self, c: Change) -> usize {
        self.changes.iter().filter(|x| x.change == c).count()
    }
}

fn run_info(d: &CheckDoc) -> RunInfo {
    RunInfo {
        file: d.name.clone(),
        source: "check".into(),
        started_unix: crate::units::parse_rfc3339(&d.header.started_at).unwrap_or(0),
        host: d.header.host.clone(),
    }
}

/// B's path → A's, when the runs hold one target each under two names.
fn renamed(a: &CheckDoc, b: &CheckDoc) -> Option<(String, String)> {
    match (&a.targets[..], &b.targets[..]) {
        ([x], [y]) if x.path != y.path && a.errors.is_empty() && b.errors.is_empty() => {
            Some((y.path.clone(), x.path.clone()))
        }
        _ => None,
    }
}

/// A run's targets and unchecked targets by path (the first of each),
/// so that runs of thousands of targets compare in linear time.
struct Sides<'d> {
    targets: HashMap<&'d str, &'d CheckedTarget>,
    errors: HashMap<&'d str, &'d TargetError>,
}

impl<'d> Sides<'d> {
    fn of(d: &'d CheckDoc) -> Self {
        let mut targets = HashMap::new();
        for t in &d.targets {
            targets.entry(t.path.as_str()).or_insert(t);
        }
        let mut errors = HashMap::new();
        for e in &d.errors {
            errors.entry(e.path.as_str()).or_insert(e);
        }
        Sides { targets, errors }
    }

    /// Whether `path` was checked, its status, and why not.
    fn side(&self, path: &str) -> (bool, Option<Status>, Option<String>) {
        let t = self.targets.get(path);
        let e = self.errors.get(path);
        (
            t.is_some(),
            t.map(|t| t.summary.status),
            e.map(|e| e.message.clone()),
        )
    }
}

/// Why A's and B's targets under one name are not the same disk: each
/// identity both know and that differs (serial, WWN, size, then the
/// table's PTUUID, which a table made again changes too).
fn different_disk(a: &CheckedTarget, b: &CheckedTarget) -> Option<String> {
    let fields = [
        ("serial", a.serial.clone(), b.serial.clone()),
        ("WWN", a.wwn.clone(), b.wwn.clone()),
        (
            "size",
            Some(format!("{} bytes", a.size_bytes)),
            Some(format!("{} bytes", b.size_bytes)),
        ),
        (
            "PTUUID",
            a.partition_table.ptuuid.clone(),
            b.partition_table.ptuuid.clone(),
        ),
    ];
    let differ: Vec<String> = fields
        .iter()
        .filter_map(|(what, x, y)| match (x, y) {
            (Some(x), Some(y)) if x != y => Some(format!("{what} {x} in A, {y} in B")),
            _ => None,
        })
        .collect();
    (!differ.is_empty()).then(|| differ.join(", "))
}

/// Every target a run names: checked, then not checked.
fn paths(d: &CheckDoc) -> impl Iterator<Item = &String> {
    let errors = d.errors.iter().map(|e| &e.path);
    d.targets.iter().map(|t| &t.path).chain(errors)
}

/// Every target of either run, A's first: (the name used, B's path).
fn names(
    a: &CheckDoc,
    b: &CheckDoc,
    rename: &Option<(String, String)>,
) -> Vec<(String, Option<String>)> {
    let mut out: Vec<(String, Option<String>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for p in paths(a) {
        if !at.contains_key(p) {
            at.insert(p.clone(), out.len());
            out.push((p.clone(), None));
        }
    }
    for p in paths(b) {
        let name = match rename {
            Some((from, to)) if from == p => to,
            _ => p,
        };
        match at.get(name) {
            Some(&i) => out[i].1 = Some(p.clone()),
            None => {
                at.insert(name.clone(), out.len());
                out.push((name.clone(), Some(p.clone())));
            }
        }
    }
    out
}

fn targets(a: &CheckDoc, b: &CheckDoc, rename: &Option<(String, String)>) -> Vec<TargetChange> {
    let nowhere = (false, None, None);
    let (sa, sb) = (Sides::of(a), Sides::of(b));
    names(a, b, rename)
        .into_iter()
        .map(|(name, in_b)| {
            let (in_a, status_a, error_a) = sa.side(&name);
            let (present_b, status_b, error_b) =
                in_b.as_deref().map_or(nowhere.clone(), |p| sb.side(p));
            let both = sa
                .targets
                .get(name.as_str())
                .zip(in_b.as_deref().and_then(|p| sb.targets.get(p)));
            TargetChange {
                path_b: in_b.filter(|p| *p != name),
                target: name,
                in_a,
                in_b: present_b,
                status_a,
                status_b,
                error_a,
                error_b,
                different_disk: both.and_then(|(x, y)| different_disk(x, y)),
            }
        })
        .collect()
}

/// Whether a finding change makes B better (-1), worse (1) or neither
/// (0): a warning or error gone or lowered, appeared or raised.
fn direction(c: &FindingChange) -> i8 {
    let serious = |s: Option<Severity>| s.is_some_and(|s| s >= Severity::Warning);
    match (c.severity_a, c.severity_b) {
        (a, b) if a == b => 0,
        (a, None) if serious(a) => -1,
        (None, b) if serious(b) => 1,
        (Some(a), Some(b)) if a > b => -1,
        (Some(a), Some(b)) if a < b => 1,
        _ => 0,
    }
}

/// Findings that disappeared or became less severe (improved), that
/// appeared or became more severe (regressed), as [`direction`] judges
/// them, and those `in_both` runs at one severity (unchanged): `watch`
/// comparisons count findings so.
pub fn finding_outcome(changes: &[FindingChange], in_both: usize) -> super::Outcome {
    let count = |way: i8| changes.iter().filter(|c| direction(c) == way).count();
    let moved = changes
        .iter()
        .filter(|c| c.severity_a.is_some() && c.severity_b.is_some() && direction(c) != 0)
        .count();
    super::Outcome::new(
        count(-1),
        count(1),
        in_both.saturating_sub(moved),
        !changes.is_empty(),
    )
}

/// Targets by their status: better in B (or checked in B only after A
/// could not), worse (or not checked in B), or the same status with a
/// warning or error gone (better) or new (worse); the rest unchanged.
/// Targets in one run only are in no count.
fn target_outcome(c: &CheckComparison) -> super::Outcome {
    let (mut improved, mut regressed, mut unchanged) = (0, 0, 0);
    for t in &c.targets {
        let findings: Vec<i8> = c
            .changes
            .iter()
            .filter(|f| f.target.as_deref() == Some(t.target.as_str()))
            .map(direction)
            .collect();
        let way = match (t.status_a, t.status_b) {
            (Some(a), Some(b)) if a != b => {
                if b > a {
                    1
                } else {
                    -1
                }
            }
            (Some(_), Some(_)) if findings.contains(&1) => 1,
            (Some(_), Some(_)) if findings.contains(&-1) => -1,
            (Some(_), Some(_)) => 0,
            (Some(_), None) if t.error_b.is_some() => 1,
            (None, Some(_)) if t.error_a.is_some() => -1,
            _ => continue,
        };
        match way {
            1 => regressed += 1,
            -1 => improved += 1,
            _ => unchanged += 1,
        }
    }
    super::Outcome::new(improved, regressed, unchanged, c.differs())
}

/// CheckedTarget (assembled last), partition, layer, code.
type Key = (bool, Option<String>, Option<u32>, Option<String>, String);

fn grouped(findings: Vec<Finding>) -> BTreeMap<Key, Vec<Finding>> {
    let mut out: BTreeMap<Key, Vec<Finding>> = BTreeMap::new();
    for f in findings {
        let s = &f.subject;
        let key = (
            s.target.is_none(),
            s.target.clone(),
            s.partition,
            s.layer.clone(),
            f.code.as_str().to_string(),
        );
        out.entry(key).or_default().push(f);
    }
    out
}

fn change(c: Change, key: &Key, a: Option<&Finding>, b: Option<&Finding>) -> FindingChange {
    FindingChange {
        change: c,
        target: key.1.clone(),
        partition: key.2,
        layer: key.3.clone(),
        code: key.4.clone(),
        severity_a: a.map(|f| f.severity),
        severity_b: b.map(|f| f.severity),
        message_a: a.map(|f| f.message.clone()),
        message_b: b.map(|f| f.message.clone()),
    }
}

/// The changes among the findings of one key: identical ones drop out,
/// the rest pair in order, and the unpaired appeared or disappeared.
fn diff_key(key: &Key, mut a: Vec<Finding>, mut b: Vec<Finding>) -> Vec<FindingChange> {
    a.retain(|f| match b.iter().position(|g| g == f) {
        Some(i) => {
            b.remove(i);
            false
        }
        None => true,
    });
    let mut out = Vec::new();
    for i in 0..a.len().max(b.len()) {
        let c = match (a.get(i), b.get(i)) {
            (Some(_), Some(_)) => Change::Changed,
            (Some(_), None) => Change::Disappeared,
            _ => Change::Appeared,
        };
        out.push(change(c, key, a.get(i), b.get(i)));
    }
    out
}

/// Compares A (before) with B (after).
pub fn compare_checks(a: &CheckDoc, b: &CheckDoc) -> CheckComparison {
    let rename = renamed(a, b);
    let mut fb = b.all_findings();
    if let Some((from, to)) = &rename {
        for f in fb
            .iter_mut()
            .filter(|f| f.subject.target.as_ref() == Some(from))
        {
            f.subject.target = Some(to.clone());
        }
    }
    let mut ga = grouped(a.all_findings());
    let mut gb = grouped(fb);
    let mut keys: Vec<Key> = ga.keys().chain(gb.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    let changes = keys
        .iter()
        .flat_map(|k| {
            let x = ga.remove(k).unwrap_or_default();
            diff_key(k, x, gb.remove(k).unwrap_or_default())
        })
        .collect();
    let mut c = CheckComparison {
        a: run_info(a),
        b: run_info(b),
        targets: targets(a, b, &rename),
        changes,
        summary: String::new(),
        outcome: super::Outcome::default(),
    };
    c.summary = summary(&c);
    c.outcome = target_outcome(&c);
    c
}

fn status(s: Option<Status>) -> &'static str {
    s.map_or("?", |s| s.word())
}

/// `/dev/sdb: misaligned → aligned`, `/dev/sdc only in B`.
fn target_clause(t: &TargetChange) -> Option<String> {
    let name = match &t.path_b {
        Some(b) => format!("{} (B: {b})", t.target),
        None => t.target.clone(),
    };
    match (t.in_a, t.in_b) {
        (true, true) if t.status_a != t.status_b => Some(format!(
            "{name}: {} → {}",
            status(t.status_a),
            status(t.status_b)
        )),
        (true, false) => Some(format!("{name} checked only in A")),
        (false, true) => Some(format!("{name} checked only in B")),
        _ => None,
    }
}

/// One sentence: the counts of changes, then the targets whose status
/// changed or that only one run checked.
fn summary(c: &CheckComparison) -> String {
    let mut counts = Vec::new();
    for ch in [Change::Disappeared, Change::Appeared, Change::Changed] {
        let n = c.count(ch);
        if n > 0 {
            let noun = if counts.is_empty() {
                if n == 1 {
                    " finding"
                } else {
                    " findings"
                }
            } else {
                ""
            };
            counts.push(format!("{n}{noun} {ch}"));
        }
    }
    let counts: Vec<&str> = counts.iter().map(String::as_str).collect();
    let mut parts = vec![match counts.is_empty() {
        true => "no finding appeared, disappeared or changed".to_string(),
        false => and_list(&counts),
    }];
    parts.extend(c.targets.iter().filter_map(target_clause));
    parts.join("; ")
}
