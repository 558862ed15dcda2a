//! The summary of a target and of a whole run, for scripts and fleets:
//! the status, findings counted by severity, how many partitions and
//! layers are aligned, what is incomplete, and the exit status that
//! follows under `--fail-on`.

use super::outcome::{CheckedTarget, TargetSummary};
use crate::findings::{Counts, FailOn, Finding, Status};
use crate::layout::PartKind;
use crate::stack::Layer;
use serde::{Deserialize, Serialize};

/// The whole run in numbers (`summary` at the top of the JSON).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RunSummary {
    /// The worst status of every target and assembled array or VG, at
    /// least `incomplete` when a target could not be checked (so a run
    /// with exit status 2 is never `aligned`); null when no target could
    /// be checked.
    pub status: Option<Status>,
    /// Targets asked for (or found), checked, and not checked (errors).
    pub targets: usize,
    pub checked: usize,
    pub unchecked: usize,
    /// Checked targets with no warning or error.
    pub aligned: usize,
    /// Targets and assembled layers with something not followed.
    pub incomplete: usize,
    /// md arrays and volume groups assembled across the targets.
    pub assembled: usize,
    /// Every finding, the assembled section's included.
    #[serde(flatten)]
    pub findings: Counts,
    pub fail_on: FailOn,
    /// Findings at or above `fail_on`.
    pub failing: usize,
    /// 1 findings at or above `fail_on`, 2 a target not checked, 3 both.
    pub exit_status: u8,
}

/// The layers above a target's roots (the partitions or whole device).
pub fn layers(r: &CheckedTarget) -> Vec<&Layer> {
    r.stack
        .iter()
        .flat_map(|l| l.children.iter())
        .flat_map(|l| l.walk())
        .collect()
}

pub fn target(r: &CheckedTarget) -> TargetSummary {
    let data: Vec<_> = r
        .partitions
        .iter()
        .filter(|p| p.kind != PartKind::Extended)
        .collect();
    let layers = layers(r);
    // A misaligned LV leg has no finding of its own: its status counts too.
    let status = Status::of(r.all_findings())
        .max(data.iter().map(|p| p.status).max().unwrap_or_default())
        .max(layers.iter().map(|l| l.status).max().unwrap_or_default());
    TargetSummary {
        status,
        findings: Counts::of(r.all_findings()),
        partitions: data.len(),
        partitions_aligned: data.iter().filter(|p| p.status.is_clean()).count(),
        layers: layers.len(),
        layers_aligned: layers.iter().filter(|l| l.status.is_clean()).count(),
        incomplete: r.all_findings().any(Finding::leaves_incomplete),
    }
}

/// The run's summary from its targets, the assembled layers and the
/// number of targets that could not be checked.
pub fn run(
    targets: &[CheckedTarget],
    assembled: &[Layer],
    unchecked: usize,
    fail_on: FailOn,
) -> RunSummary {
    let mut findings = Counts::default();
    let mut status = Status::Aligned;
    let mut incomplete = 0;
    for t in targets {
        findings.merge(t.summary.findings);
        status = status.max(t.summary.status);
        incomplete += usize::from(t.summary.incomplete);
    }
    for l in assembled {
        let all = l.walk();
        findings.merge(Counts::of(all.iter().flat_map(|x| x.findings.iter())));
        let worst = all.iter().map(|x| x.status).max().unwrap_or_default();
        status = status.max(worst);
        let mut findings_of_all = all.iter().flat_map(|x| x.findings.iter());
        incomplete += usize::from(findings_of_all.any(Finding::leaves_incomplete));
    }
    let failing = findings.failing(fail_on);
    if unchecked > 0 {
        // A run that could not read a target is not aligned, whatever the
        // others are: what it did not read is not followed.
        status = status.max(Status::Incomplete);
    }
    RunSummary {
        status: (!targets.is_empty()).then_some(status),
        targets: targets.len() + unchecked,
        checked: targets.len(),
        unchecked,
        aligned: targets
            .iter()
            .filter(|t| t.summary.status.is_clean())
            .count(),
        incomplete,
        assembled: assembled.len(),
        findings,
        fail_on,
        failing,
        exit_status: u8::from(failing > 0) | if unchecked > 0 { 2 } else { 0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run with a target it could not read has exit status 2 and is
    /// never `aligned`: at least `incomplete`, the worse status kept.
    #[test]
    fn a_run_with_an_unread_target_is_not_aligned() {
        let mut aligned = CheckedTarget::default();
        aligned.summary.status = Status::Aligned;
        let all_read = run(std::slice::from_ref(&aligned), &[], 0, FailOn::Warning);
        assert_eq!(
            (all_read.status, all_read.exit_status),
            (Some(Status::Aligned), 0)
        );
        let one_unread = run(std::slice::from_ref(&aligned), &[], 1, FailOn::Warning);
        assert_eq!(
            (one_unread.status, one_unread.exit_status),
            (Some(Status::Incomplete), 2)
        );
        let mut misaligned = aligned.clone();
        misaligned.summary.status = Status::Misaligned;
        let worse = run(&[misaligned], &[], 1, FailOn::Never);
        assert_eq!(worse.status, Some(Status::Misaligned));
        assert_eq!(run(&[], &[], 1, FailOn::Warning).status, None);
    }
}
