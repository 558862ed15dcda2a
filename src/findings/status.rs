//! The tiers findings fall into, and the one-word status of a partition,
//! a layer or a target that follows from them:
//!
//! - an **error** hurts every I/O (a data start off its grain, a stripe
//!   leg off the unit) or means the layout is broken;
//! - a **warning** is hygiene (an end or size off 4 KiB, a start on the
//!   grain but off the stripe width, a hint to distrust);
//! - **info** is advice (portability, what the tools would do).
//!
//! `--fail-on` picks the tier that makes the exit status 1.

use super::{Finding, Severity};
use serde::Serialize;

/// One word for a partition, a layer or a target.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// No warning or error.
    #[default]
    Aligned,
    /// Nothing judged wrong, but part of it could not be followed (a PV
    /// or md member that is not among the targets).
    Incomplete,
    /// Warnings only: aligned where every I/O is concerned, with hygiene
    /// to fix (an end or size off 4 KiB, a start off the stripe width).
    Untidy,
    /// A layer whose own start is on its grid inside what it sits on, but
    /// whose bytes are off on the device at the bottom of the stack because
    /// something below (a partition's start) is: it pays for every I/O as a
    /// misaligned layer does, and the fix is the cause's (`inherits_from`).
    Inherits,
    /// A data start off its grain: every I/O pays for it.
    Misaligned,
    /// An error that is not about alignment: damaged metadata, partitions
    /// that overlap or leave the disk. It outranks a misalignment: the
    /// table must be repaired before anything is moved, and a fleet's
    /// alert on damage must not be hidden by one.
    Damaged,
}

crate::spelled_as_serde!(Status);

impl Finding {
    /// True for the findings that say something could not be followed
    /// (a PV or md member not among the targets, an encrypted image's
    /// guest disk): they leave what they are about incomplete.
    pub fn leaves_incomplete(&self) -> bool {
        self.code.meaning().incomplete
    }
}

impl Status {
    /// Every status a target can have, in order (the states its
    /// Prometheus series carry, each 0 or 1).
    pub const OF_TARGET: [Status; 6] = [
        Status::Aligned,
        Status::Incomplete,
        Status::Untidy,
        Status::Inherits,
        Status::Misaligned,
        Status::Damaged,
    ];

    /// Every status a partition's placement can have: its start, end and
    /// size findings are errors (misaligned) and warnings (untidy).
    pub const OF_PLACEMENT: [Status; 3] = [Status::Aligned, Status::Untidy, Status::Misaligned];

    /// The status `findings` give: the worst of them.
    pub fn of<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> Status {
        findings
            .into_iter()
            .map(|f| match f.severity {
                Severity::Error if f.code.meaning().damage.is_some() => Status::Damaged,
                Severity::Error => Status::Misaligned,
                Severity::Warning => Status::Untidy,
                Severity::Info if f.leaves_incomplete() => Status::Incomplete,
                Severity::Info => Status::Aligned,
            })
            .max()
            .unwrap_or(Status::Aligned)
    }

    /// The word people read: the serious ones in capitals.
    pub fn word(self) -> &'static str {
        match self {
            Status::Aligned => "aligned",
            Status::Incomplete => "incomplete",
            Status::Untidy => "untidy",
            Status::Inherits => "INHERITS",
            Status::Damaged => "DAMAGED",
            Status::Misaligned => "MISALIGNED",
        }
    }

    /// No warning or error (what the `aligned` booleans of the JSON say).
    pub fn is_clean(self) -> bool {
        matches!(self, Status::Aligned | Status::Incomplete)
    }
}

/// Which findings make the exit status 1 (`--fail-on`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum FailOn {
    /// Only errors: a data start off its grain, a broken layout.
    Error,
    /// Errors and warnings (hygiene such as an end off 4 KiB): the default.
    #[default]
    Warning,
    /// Any finding, advice included.
    Info,
    /// Never: the exit status says only whether every target was checked.
    Never,
}

crate::spelled_as_serde!(FailOn);

impl FailOn {
    /// True when a finding of this severity makes the exit status 1.
    pub fn fails(self, s: Severity) -> bool {
        match self {
            FailOn::Error => s == Severity::Error,
            FailOn::Warning => s >= Severity::Warning,
            FailOn::Info => true,
            FailOn::Never => false,
        }
    }
}

/// Findings counted by severity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Counts {
    pub errors: usize,
    pub warnings: usize,
    pub info: usize,
}

impl Counts {
    pub fn of<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> Counts {
        let mut c = Counts::default();
        for f in findings.into_iter().filter(|f| f.counts()) {
            c.add(f.severity, 1);
        }
        c
    }

    pub fn add(&mut self, s: Severity, n: usize) {
        match s {
            Severity::Error => self.errors += n,
            Severity::Warning => self.warnings += n,
            Severity::Info => self.info += n,
        }
    }

    pub fn merge(&mut self, o: Counts) {
        self.errors += o.errors;
        self.warnings += o.warnings;
        self.info += o.info;
    }

    /// How many of these make the exit status 1 under `fail_on`.
    pub fn failing(&self, fail_on: FailOn) -> usize {
        [
            (Severity::Error, self.errors),
            (Severity::Warning, self.warnings),
            (Severity::Info, self.info),
        ]
        .iter()
        .filter(|(s, _)| fail_on.fails(*s))
        .map(|(_, n)| n)
        .sum()
    }

    /// "1 error, 2 warnings, 3 info", leaving out the zeros; "no findings".
    pub fn phrase(&self) -> String {
        let plural = |n: usize, one: &str, many: &str| match n {
            1 => format!("1 {one}"),
            _ => format!("{n} {many}"),
        };
        let parts: Vec<String> = [
            (self.errors, "error", "errors"),
            (self.warnings, "warning", "warnings"),
            (self.info, "info", "info"),
        ]
        .iter()
        .filter(|(n, _, _)| *n > 0)
        .map(|(n, one, many)| plural(*n, one, many))
        .collect();
        if parts.is_empty() {
            "no findings".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Each finding once, however many places show it: the first of each,
/// in order. A finding is one problem where its subject and code are the
/// same (an LV's filesystem under each PV's disk, in the volume group
/// assembled from them, and as a target of its own, all given one
/// subject by `check`); the n-th finding of a code in one place (a
/// layer's, a partition's, a target's own list) is the n-th in another.
/// Findings that repeat another's cause (`same_cause_as`) are left out,
/// as `Counts::of` leaves them out.
pub fn distinct<'a, P>(places: impl IntoIterator<Item = P>) -> Vec<&'a Finding>
where
    P: IntoIterator<Item = &'a Finding>,
{
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for place in places {
        let mut nth: Vec<(super::Code, usize)> = Vec::new();
        for f in place.into_iter().filter(|f| f.counts()) {
            let n = match nth.iter_mut().find(|(c, _)| *c == f.code) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    nth.push((f.code, 0));
                    0
                }
            };
            if seen.insert((&f.subject, f.code, n)) {
                out.push(f);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::Code;

    #[test]
    fn a_finding_shown_in_two_places_counts_once() {
        let at = |layer: &str| {
            let mut f = Finding::new(Code::FsStripeHintsMissing, "x");
            f.subject.layer = Some(layer.into());
            f
        };
        let lv = vec![at("VG v / LV v/lv / ext4")];
        assert_eq!(distinct([&lv, &lv]).len(), 1);
        // Two of one code in one place are two; another place's is another.
        let two = vec![at("VG v / LV v/lv / ext4"), at("VG v / LV v/lv / ext4")];
        let other = vec![at("partition 1 / ext4")];
        assert_eq!(distinct([&lv, &two, &other]).len(), 3);
    }

    #[test]
    fn the_worst_finding_decides() {
        let f = |c: Code| Finding::new(c, "x");
        assert_eq!(Status::of([]), Status::Aligned);
        assert_eq!(Status::of(&[f(Code::StartNot1Mib)]), Status::Aligned);
        assert_eq!(Status::of(&[f(Code::LvmPvMissing)]), Status::Incomplete);
        assert_eq!(
            Status::of(&[f(Code::LvmPvMissing), f(Code::EndNot4k)]),
            Status::Untidy
        );
        assert_eq!(
            Status::of(&[f(Code::MetadataInvalid), f(Code::EndNot4k)]),
            Status::Damaged
        );
        // Damage outranks a misalignment (docs/findings.md).
        assert_eq!(
            Status::of(&[f(Code::MetadataInvalid), f(Code::StartMisaligned)]),
            Status::Damaged
        );
    }

    #[test]
    fn fail_on_thresholds() {
        assert!(FailOn::Warning.fails(Severity::Warning));
        assert!(!FailOn::Warning.fails(Severity::Info));
        assert!(!FailOn::Error.fails(Severity::Warning));
        assert!(FailOn::Info.fails(Severity::Info));
        assert!(!FailOn::Never.fails(Severity::Error));
        let c = Counts {
            errors: 1,
            warnings: 2,
            info: 3,
        };
        assert_eq!(c.failing(FailOn::Warning), 3);
        assert_eq!(c.phrase(), "1 error, 2 warnings, 3 info");
        assert_eq!(Counts::default().phrase(), "no findings");
    }
}
