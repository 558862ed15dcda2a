//! The summary of a target and of a whole run, for scripts and fleets:
//! the status, findings counted by severity, how many partitions and
//! layers are aligned, what is incomplete, and the exit status that
//! follows under `--fail-on`.

use super::outcome::{CheckedPartition, CheckedTarget, TargetSummary};
use crate::findings::{distinct, Code, Counts, FailOn, Finding, Status};
use crate::layout::PartKind;
use crate::stack::Layer;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub use super::subjects::made_from;

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

/// A target in numbers. `made_from_it` are the arrays and volume groups
/// assembled from it (`subjects::made_from`): a problem found in them
/// (warnings and errors) makes its status too, and their findings count
/// in its own, each once.
/// The codes of the warnings and errors at one place of `t`: partition
/// `number` (its placement, every layer inside it, and the arrays and
/// groups assembled from it) or, for None, the whole target without a
/// partition table; each code once, in the order found (the CSV's
/// `problems`).
pub fn problems(t: &CheckedTarget, number: Option<u32>, assembled: &[Layer]) -> Vec<Code> {
    let roots: Vec<&Layer> = match number {
        Some(n) => {
            let name = format!("partition {n}");
            t.stack.iter().filter(|r| r.name == name).collect()
        }
        None => t.stack.iter().collect(),
    };
    let placement = t
        .partitions
        .iter()
        .filter(|p| Some(p.number) == number)
        .flat_map(|p| p.findings.iter());
    codes_at(placement, &roots, assembled)
}

/// `problems` of each partition of `t`, in order. The partitions and
/// the stack's roots are grouped by number once and each number's codes
/// found once, where `problems` called per row searches the whole table
/// for each row (quadratic: 20,000 partitions took seconds).
pub fn partition_problems(t: &CheckedTarget, assembled: &[Layer]) -> Vec<Vec<Code>> {
    let mut roots: HashMap<&str, Vec<&Layer>> = HashMap::new();
    for r in &t.stack {
        roots.entry(r.name.as_str()).or_default().push(r);
    }
    let mut placed: HashMap<u32, Vec<&CheckedPartition>> = HashMap::new();
    for p in &t.partitions {
        placed.entry(p.number).or_default().push(p);
    }
    let mut found: HashMap<u32, Vec<Code>> = HashMap::new();
    let mut codes_of = |n: u32| {
        let found = found.entry(n).or_insert_with(|| {
            let name = format!("partition {n}");
            let roots = roots.get(name.as_str()).map_or(&[][..], Vec::as_slice);
            let placement = placed[&n].iter().flat_map(|p| p.findings.iter());
            codes_at(placement, roots, assembled)
        });
        found.clone()
    };
    t.partitions.iter().map(|p| codes_of(p.number)).collect()
}

/// The codes of the problems among the `placement` findings, then of
/// the layers inside `roots` and of those assembled from them, each once.
fn codes_at<'a>(
    placement: impl Iterator<Item = &'a Finding>,
    roots: &[&'a Layer],
    assembled: &'a [Layer],
) -> Vec<Code> {
    let made = super::subjects::made_from_roots(roots, assembled);
    let layers = roots
        .iter()
        .chain(made.iter())
        .flat_map(|r| r.walk())
        .flat_map(|l| l.findings.iter());
    let mut out: Vec<Code> = Vec::new();
    for f in placement.chain(layers).filter(|f| f.is_problem()) {
        if !out.contains(&f.code) {
            out.push(f.code);
        }
    }
    out
}

/// The findings of `t` and of the arrays and groups assembled from it,
/// each once (`findings::distinct`): what its counts count.
pub fn target_findings<'a>(t: &'a CheckedTarget, made_from_it: &[&'a Layer]) -> Vec<&'a Finding> {
    let assembled = made_from_it
        .iter()
        .flat_map(|a| a.walk())
        .map(|l| l.findings.as_slice());
    distinct(t.places().chain(assembled))
}

/// Every finding of a run, each once, however many places show it (an
/// LV's filesystem under each PV's disk and in its assembled VG).
pub fn run_findings<'a>(targets: &'a [CheckedTarget], assembled: &'a [Layer]) -> Vec<&'a Finding> {
    let places = targets.iter().flat_map(|t| t.places()).chain(
        assembled
            .iter()
            .flat_map(|a| a.walk())
            .map(|l| l.findings.as_slice()),
    );
    distinct(places)
}

/// The worst status inside an assembled array or group (its layers' and
/// their findings'): what `-q` says of it.
pub fn worst(a: &Layer) -> Status {
    a.walk()
        .iter()
        .map(|l| l.status.max(Status::of(&l.findings)))
        .max()
        .unwrap_or_default()
}

pub fn target(r: &CheckedTarget, made_from_it: &[&Layer]) -> TargetSummary {
    let data: Vec<_> = r
        .partitions
        .iter()
        .filter(|p| p.kind != PartKind::Extended)
        .collect();
    let layers = layers(r);
    let assembled: Vec<&Layer> = made_from_it.iter().flat_map(|a| a.walk()).collect();
    let assembled_problem = assembled
        .iter()
        .map(|l| l.status.max(Status::of(&l.findings)))
        .filter(|s| !s.is_clean())
        .max()
        .unwrap_or_default();
    // A misaligned LV leg has no finding of its own: its status counts too.
    let status = Status::of(r.all_findings())
        .max(data.iter().map(|p| p.status).max().unwrap_or_default())
        .max(layers.iter().map(|l| l.status).max().unwrap_or_default())
        .max(assembled_problem);
    TargetSummary {
        status,
        findings: Counts::of(target_findings(r, made_from_it)),
        partitions: data.len(),
        partitions_aligned: data.iter().filter(|p| p.status.is_clean()).count(),
        layers: layers.len(),
        layers_aligned: layers.iter().filter(|l| l.status.is_clean()).count(),
        incomplete: r.all_findings().any(Finding::leaves_incomplete),
    }
}

/// The run's summary from its targets, the assembled layers and the
/// number of targets that could not be checked.
pub fn summarize_run(
    targets: &[CheckedTarget],
    assembled: &[Layer],
    unchecked: usize,
    fail_on: FailOn,
) -> RunSummary {
    let mut status = Status::Aligned;
    let mut incomplete = 0;
    for t in targets {
        status = status.max(t.summary.status);
        incomplete += usize::from(t.summary.incomplete);
    }
    for l in assembled {
        let all = l.walk();
        let worst = all.iter().map(|x| x.status).max().unwrap_or_default();
        status = status.max(worst);
        let mut findings_of_all = all.iter().flat_map(|x| x.findings.iter());
        incomplete += usize::from(findings_of_all.any(Finding::leaves_incomplete));
    }
    let findings = Counts::of(run_findings(targets, assembled));
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
        let all_read = summarize_run(std::slice::from_ref(&aligned), &[], 0, FailOn::Warning);
        assert_eq!(
            (all_read.status, all_read.exit_status),
            (Some(Status::Aligned), 0)
        );
        let one_unread = summarize_run(std::slice::from_ref(&aligned), &[], 1, FailOn::Warning);
        assert_eq!(
            (one_unread.status, one_unread.exit_status),
            (Some(Status::Incomplete), 2)
        );
        let mut misaligned = aligned.clone();
        misaligned.summary.status = Status::Misaligned;
        let worse = summarize_run(&[misaligned], &[], 1, FailOn::Never);
        assert_eq!(worse.status, Some(Status::Misaligned));
        assert_eq!(summarize_run(&[], &[], 1, FailOn::Warning).status, None);
    }

    /// Each partition's problems, found for the whole table at once, are
    /// what `problems` finds for its number: its placement's warnings and
    /// errors, then its layers', each code once; two partitions sharing a
    /// number (a saved document may say so) share them. 20,000 partitions,
    /// as a fuzzed saved document had.
    #[test]
    fn every_partition_s_problems_at_once() {
        let finding = |c| Finding::new(c, "x");
        let mut t = CheckedTarget::default();
        for number in 1..=20_000u32 {
            let mut p = CheckedPartition {
                number,
                ..Default::default()
            };
            if number % 2 == 0 {
                p.findings.push(finding(Code::StartNotOptimal));
            }
            p.findings.push(finding(Code::StartNot1Mib));
            t.partitions.push(p);
            let inside = Layer {
                findings: (number % 3 == 0)
                    .then(|| finding(Code::StartMisaligned))
                    .into_iter()
                    .collect(),
                ..Default::default()
            };
            t.stack.push(Layer {
                name: format!("partition {number}"),
                children: vec![inside],
                ..Default::default()
            });
        }
        t.partitions.push(CheckedPartition {
            number: 3,
            findings: vec![finding(Code::StartNot4k)],
            ..Default::default()
        });
        let all = partition_problems(&t, &[]);
        assert_eq!(all.len(), t.partitions.len());
        for (p, codes) in t.partitions.iter().zip(&all) {
            let n = p.number;
            let want: Vec<Code> = [
                (n % 2 == 0, Code::StartNotOptimal),
                (n == 3, Code::StartNot4k),
                (n % 3 == 0, Code::StartMisaligned),
            ]
            .into_iter()
            .filter_map(|(is, code)| is.then_some(code))
            .collect();
            assert_eq!(codes, &want, "partition {n}");
        }
        for (i, n) in [(0, 1), (1, 2), (2, 3), (5, 6), (20_000, 3)] {
            assert_eq!(all[i], problems(&t, Some(n), &[]), "row {i}");
        }
    }
}
