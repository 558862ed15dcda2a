//! Two probe runs (or fio results) compared cell by cell.
//!
//! **Cells.** Part i of A (its i-th target) is matched with part i of B,
//! and a cell with the cell of the same pattern, block size and offset.
//! Each side's IOPS figure is the geometric mean of its rounds, and the
//! ratio is B/A.
//!
//! **Test.** The rounds are the replicates, and the two runs are
//! independent, so each cell is Welch's t-test on log IOPS (unpaired).
//! A cell is tested only when both sides have two rounds or more; one fio
//! pass has one figure per cell, so its cells are `untested` rather than
//! given an interval they do not have. The p-values of every tested cell
//! are corrected together with Holm's method, at α = 0.05 family-wise.
//!
//! **Intervals that agree with the test.** Each cell's interval is at the
//! level Holm's procedure judged it at. With m cells tested, sorted by
//! p-value, Holm rejects the k-th while p < α / (m − k + 1) for it and every
//! earlier one; the k-th rejected cell gets the 1 − α/(m − k + 1) interval,
//! and every cell not rejected gets the interval of the step where Holm
//! stopped, 1 − α/(m − j + 1). A Welch interval at level 1 − γ excludes 1
//! exactly when p < γ, so an interval excludes 1 exactly when its cell is
//! significant. `significant` is defined as "the Holm-adjusted p < α and
//! the interval excludes 1", so even rounding at the boundary cannot make
//! the interval shown contradict it. Every interval is at least a 95 % one; when nothing is
//! significant they are Bonferroni's simultaneous intervals (1 − α/m).
//! `ci_level` says which level each has.
//!
//! **Decisions.** `slower`/`faster`: significant, ratio below/above 1.
//! `same`: the interval lies inside 1 ± `min_effect` (the plan's smallest
//! effect worth finding, 0.1 when the runs do not say). `open`: neither.
//! `untested`: a side has fewer than two rounds.

use super::environment::{self, EnvField};
use super::RunInfo;
use crate::probe::CellReport;
use crate::probe::Pattern;
use crate::probe::ProbedTarget;
use crate::probe::NO_REPLICATES;
use crate::probe::{geo_mean_ci, holm, welch_log};
use crate::probe::{ProbeDoc, Producer};
use crate::units::human;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// Family-wise error rate of the significance calls of one comparison.
pub const ALPHA: f64 = 0.05;
/// `min_effect` when neither run's plan gives one.
pub const DEFAULT_MIN_EFFECT: f64 = 0.1;

/// What the comparison decided about one cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// B significantly slower than A.
    Slower,
    /// B significantly faster than A.
    Faster,
    /// The interval lies inside 1 ± min_effect.
    Same,
    /// Tested, neither significant nor shown to be the same.
    Open,
    /// A side has fewer than two rounds (one fio pass): not tested.
    #[default]
    Untested,
}

crate::spelled_as_serde!(Decision);

/// A cell's place: which target (index into the runs' parts) and where
/// in the grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(default)]
pub struct CellKey {
    pub target: usize,
    pub pattern: Pattern,
    pub block_size: u64,
    pub offset: u64,
}

impl Default for CellKey {
    fn default() -> Self {
        CellKey {
            target: 0,
            pattern: Pattern::Randread,
            block_size: 0,
            offset: 0,
        }
    }
}

impl CellKey {
    fn of(target: usize, c: &CellReport) -> Self {
        CellKey {
            target,
            pattern: c.cell.pattern,
            block_size: c.cell.block_size.into(),
            offset: c.cell.offset,
        }
    }

    /// `randwrite 4 KiB at 512`.
    pub fn label(&self) -> String {
        format!(
            "{} {} at {}",
            self.pattern.as_str(),
            human(self.block_size),
            self.offset
        )
    }
}

/// A pattern one run measured on a target and the other did not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct PatternRef {
    pub target: usize,
    pub pattern: Pattern,
}

impl Default for PatternRef {
    fn default() -> Self {
        PatternRef {
            target: 0,
            pattern: Pattern::Randread,
        }
    }
}

/// A target one run has and the other does not.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct TargetRef {
    pub target: usize,
    pub path: String,
}

/// What only one of the runs measured: whole targets, whole patterns of
/// a target both have, and single cells of a pattern both have.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct OnlyIn {
    pub targets: Vec<TargetRef>,
    pub patterns: Vec<PatternRef>,
    pub cells: Vec<CellKey>,
}

impl OnlyIn {
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty() && self.patterns.is_empty() && self.cells.is_empty()
    }
}

/// What the interval of a scope's geometric mean says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Slower,
    Faster,
    Same,
    #[default]
    Undecided,
}

crate::spelled_as_serde!(Direction);

/// B/A over the cells of one scope: one pattern of one target, or every
/// cell (`pattern` and `target` null).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct ScopeRatio {
    pub target: Option<usize>,
    pub pattern: Option<Pattern>,
    /// Cells with a ratio (both sides measured a positive figure).
    pub cells: usize,
    /// Geometric mean of the cells' B/A; null without cells.
    pub geo_mean: Option<f64>,
    /// Its 95 % interval (see the module's notes); null when there is none.
    pub ci95: Option<[f64; 2]>,
    /// How the interval was formed.
    pub method: Method,
    pub direction: Direction,
    /// The cells' own decisions, counted.
    pub slower: usize,
    pub faster: usize,
    pub same: usize,
    pub open: usize,
    pub untested: usize,
    /// The sentence: `B is 6.1× slower than A in every cell, [5.4, 6.9]`.
    pub sentence: String,
}

/// How a scope's interval was formed (see the module's notes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// From the rounds' grid means: round r's geometric mean over the
    /// cells, Welch's t on A's against B's (every cell with the same
    /// rounds on a side).
    Rounds,
    /// From every cell's rounds: the grid's own mean (all cells tested).
    Pooled,
    /// From the spread of the cells' ratios (some cell has no replicates).
    AcrossCells,
    /// No interval: no cell, or one cell without replicates.
    #[default]
    None,
}

crate::spelled_as_serde!(Method);

/// One cell both runs measured: B against A.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct CellRatio {
    #[serde(flatten)]
    pub key: CellKey,
    /// Geometric mean of each side's rounds (IOPS).
    pub a_iops: f64,
    pub b_iops: f64,
    /// Rounds each side measured the cell in.
    pub a_rounds: usize,
    pub b_rounds: usize,
    /// B/A; null when a side has no positive IOPS figure.
    pub ratio: Option<f64>,
    /// The interval of the ratio at `ci_level` (see the module's notes);
    /// null when untested.
    pub ci95: Option<[f64; 2]>,
    pub ci_level: Option<f64>,
    /// Welch's two-sided p-value, and Holm's over the tested cells.
    pub p_value: Option<f64>,
    pub p_adjusted: Option<f64>,
    pub significant: bool,
    pub decision: Decision,
    /// Each side's variance of its mean log IOPS (s²/n) and its degrees
    /// of freedom, for the pooled interval of overall.rs; not saved.
    #[serde(skip)]
    pub spread: Option<[(f64, f64); 2]>,
    /// Each side's rounds (IOPS, in round order), for the by-round
    /// interval of overall.rs; not saved.
    #[serde(skip)]
    pub rounds: Option<[Vec<f64>; 2]>,
}

/// Two probe runs side by side.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct ProbeComparison {
    pub a: RunInfo,
    pub b: RunInfo,
    /// Every recorded setting and property, the ones read first in front.
    pub environment: Vec<EnvField>,
    /// The family-wise error rate and the smallest effect worth finding.
    pub alpha: f64,
    pub min_effect: f64,
    /// Both runs have replicates (two or more rounds): cells can be tested.
    pub replicates: bool,
    /// Cells tested (both sides with two rounds or more).
    pub tested: usize,
    pub cells: Vec<CellRatio>,
    pub only_a: OnlyIn,
    pub only_b: OnlyIn,
    /// What to keep in mind: fio without replicates, partial runs,
    /// different plans.
    pub notes: Vec<String>,
    /// One sentence: how B differs from A.
    pub summary: String,
    /// B/A over every cell both runs measured: the geometric mean, its
    /// interval and the sentence printed first (overall.rs).
    pub overall: ScopeRatio,
    /// The same for each pattern of each target.
    pub patterns: Vec<ScopeRatio>,
    /// Cells B is decided faster in (improved), slower in (regressed),
    /// and the rest; the exit status.
    pub outcome: super::Outcome,
}

impl ProbeComparison {
    /// Some cell is significantly slower or faster.
    pub fn differs(&self) -> bool {
        self.cells.iter().any(|c| c.significant)
    }

    /// How many cells got `d`.
    pub fn count(&self, d: Decision) -> usize {
        self.cells.iter().filter(|c| c.decision == d).count()
    }

    /// How many targets either run has (1 for single-target runs).
    pub fn target_count(&self) -> usize {
        let env = self.environment.iter().filter_map(|f| f.target).max();
        let only = self.only_a.targets.iter().chain(&self.only_b.targets);
        // Saturating: a saved comparison's index may be usize::MAX.
        env.max(only.map(|t| t.target).max())
            .map_or(1, |t| t.saturating_add(1))
    }

    /// The path of target `t` (A's; B's when A has none).
    pub fn target_path(&self, t: usize) -> &str {
        self.environment
            .iter()
            .find(|f| f.field == "target" && f.target == Some(t))
            .and_then(|f| f.a.as_deref().or(f.b.as_deref()))
            .unwrap_or("")
    }
}

fn run_info(d: &ProbeDoc) -> RunInfo {
    RunInfo {
        file: d.name.clone(),
        source: match d.source {
            Producer::Diskalign => "probe".into(),
            Producer::Fio => "fio".into(),
        },
        started_unix: d.started_unix,
        host: d.header.host.clone(),
    }
}

fn min_effect(a: &ProbeDoc, b: &ProbeDoc) -> f64 {
    [a.plan.min_effect, b.plan.min_effect]
        .into_iter()
        .find(|e| *e > 0.0 && *e < 1.0)
        .unwrap_or(DEFAULT_MIN_EFFECT)
}

/// A side's IOPS: the geometric mean of its rounds, or the document's
/// figure when it lists none.
fn iops(c: &CellReport) -> f64 {
    if c.rounds.is_empty() {
        c.iops.geo_mean
    } else {
        geo_mean_ci(&c.rounds, 0.95).0
    }
}

/// Both sides have replicates and a figure to divide by.
fn testable(a: &CellReport, b: &CellReport) -> bool {
    let positive = |c: &CellReport| c.rounds.iter().all(|x| *x > 0.0 && x.is_finite());
    a.rounds.len() >= 2 && b.rounds.len() >= 2 && positive(a) && positive(b)
}

type Pair<'p> = (CellKey, &'p CellReport, &'p CellReport);

/// The cells of part `t` both runs have, in A's order; the rest go to
/// `only_a` and `only_b`, whole patterns apart from single cells.
fn match_part<'p>(
    t: usize,
    a: &'p ProbedTarget,
    b: &'p ProbedTarget,
    only_a: &mut OnlyIn,
    only_b: &mut OnlyIn,
) -> Vec<Pair<'p>> {
    // B's first cell of each key: a map, so that runs of thousands of
    // cells match in linear time.
    let mut in_b: HashMap<(Pattern, u64, u64), &'p CellReport> = HashMap::new();
    for c in &b.cells {
        in_b.entry(c.key()).or_insert(c);
    }
    let pairs = a
        .cells
        .iter()
        .filter_map(|x| Some((CellKey::of(t, x), x, *in_b.get(&x.key())?)))
        .collect();
    unmatched(t, &a.cells, &b.cells, only_a);
    unmatched(t, &b.cells, &a.cells, only_b);
    pairs
}

/// What `mine` has and `theirs` lacks: patterns they never ran, then
/// single cells of the patterns both ran.
fn unmatched(t: usize, mine: &[CellReport], theirs: &[CellReport], only: &mut OnlyIn) {
    let ran: HashSet<Pattern> = theirs.iter().map(|c| c.cell.pattern).collect();
    let keys: HashSet<(Pattern, u64, u64)> = theirs.iter().map(CellReport::key).collect();
    let mut patterns: Vec<Pattern> = Vec::new();
    for c in mine {
        if !ran.contains(&c.cell.pattern) {
            if !patterns.contains(&c.cell.pattern) {
                patterns.push(c.cell.pattern);
            }
        } else if !keys.contains(&c.key()) {
            only.cells.push(CellKey::of(t, c));
        }
    }
    only.patterns.extend(
        patterns
            .into_iter()
            .map(|pattern| PatternRef { target: t, pattern }),
    );
}

/// Holm's adjusted p and the two-sided error of the interval of each
/// tested cell (None: untested), as the module's notes say.
fn holm_steps(p: &[Option<f64>]) -> Vec<Option<(f64, f64)>> {
    let tested: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_some()).collect();
    let ps: Vec<f64> = tested.iter().filter_map(|&i| p[i]).collect();
    let adjusted = holm(&ps);
    let m = ps.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| ps[i].total_cmp(&ps[j]));
    let mut error = vec![ALPHA; m];
    let mut stopped: Option<f64> = None;
    for (rank, &i) in order.iter().enumerate() {
        let step = ALPHA / (m - rank) as f64;
        if stopped.is_none() && adjusted[i] >= ALPHA {
            stopped = Some(step);
        }
        error[i] = stopped.unwrap_or(step);
    }
    let mut out = vec![None; p.len()];
    for (k, &i) in tested.iter().enumerate() {
        out[i] = Some((adjusted[k], error[k]));
    }
    out
}

fn decide(ci: [f64; 2], significant: bool, min_effect: f64) -> Decision {
    match significant {
        true if ci[1] < 1.0 => Decision::Slower,
        true => Decision::Faster,
        false if ci[0] >= 1.0 - min_effect && ci[1] <= 1.0 + min_effect => Decision::Same,
        false => Decision::Open,
    }
}

/// The variance of the mean of log `rounds` (s²/n) and its n − 1.
pub(crate) fn log_spread(rounds: &[f64]) -> (f64, f64) {
    let logs: Vec<f64> = rounds.iter().map(|x| x.ln()).collect();
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (var / n, n - 1.0)
}

/// One matched cell, tested at its Holm step (None: untested).
fn ratio_of(pair: &Pair, step: Option<(f64, f64)>, p: Option<f64>, min_effect: f64) -> CellRatio {
    let (key, a, b) = *pair;
    let (a_iops, b_iops) = (iops(a), iops(b));
    let ok = |x: f64| x > 0.0 && x.is_finite();
    let mut r = CellRatio {
        key,
        a_iops,
        b_iops,
        a_rounds: a.rounds.len(),
        b_rounds: b.rounds.len(),
        ratio: (ok(a_iops) && ok(b_iops)).then(|| b_iops / a_iops),
        ..CellRatio::default()
    };
    let Some((adjusted, error)) = step else {
        return r;
    };
    r.spread = Some([log_spread(&a.rounds), log_spread(&b.rounds)]);
    r.rounds = Some([a.rounds.clone(), b.rounds.clone()]);
    let ci = welch_log(&b.rounds, &a.rounds, 1.0 - error).ci;
    if !(ci[0].is_finite() && ci[1].is_finite()) {
        return r;
    }
    r.significant = adjusted < ALPHA && (ci[1] < 1.0 || ci[0] > 1.0);
    r.decision = decide(ci, r.significant, min_effect);
    r.ci95 = Some(ci);
    r.ci_level = Some(1.0 - error);
    r.p_value = p;
    r.p_adjusted = Some(adjusted);
    r
}

/// A (the reference) against B: B/A for every cell both measured, the
/// environments and notes; `overall::compare_probes` adds the answer per pattern
/// and over every cell, and the outcome.
pub fn cells(a: &ProbeDoc, b: &ProbeDoc) -> ProbeComparison {
    let (pa, pb) = (a.parts(), b.parts());
    let (mut only_a, mut only_b) = (OnlyIn::default(), OnlyIn::default());
    let mut pairs = Vec::new();
    for t in 0..pa.len().max(pb.len()) {
        match (pa.get(t), pb.get(t)) {
            (Some(x), Some(y)) => pairs.extend(match_part(t, x, y, &mut only_a, &mut only_b)),
            (Some(x), None) => only_a.targets.push(target_ref(t, x)),
            (None, Some(y)) => only_b.targets.push(target_ref(t, y)),
            (None, None) => {}
        }
    }
    let p: Vec<Option<f64>> = pairs
        .iter()
        .map(|(_, x, y)| testable(x, y).then(|| welch_log(&y.rounds, &x.rounds, 0.95).p))
        .collect();
    let steps = holm_steps(&p);
    let min_effect = min_effect(a, b);
    let cells = (0..pairs.len())
        .map(|i| ratio_of(&pairs[i], steps[i], p[i], min_effect))
        .collect();
    let mut c = ProbeComparison {
        a: run_info(a),
        b: run_info(b),
        environment: environment::fields(a, b),
        alpha: ALPHA,
        min_effect,
        replicates: a.has_replicates() && b.has_replicates(),
        tested: p.iter().flatten().count(),
        cells,
        only_a,
        only_b,
        notes: notes(a, b),
        summary: String::new(),
        overall: ScopeRatio::default(),
        patterns: Vec::new(),
        outcome: super::Outcome::default(),
    };
    c.summary = summary(&c);
    c
}

fn target_ref(t: usize, p: &ProbedTarget) -> TargetRef {
    TargetRef {
        target: t,
        path: p.target.path.to_string_lossy().into_owned(),
    }
}

/// What a reader must know before trusting the table.
fn notes(a: &ProbeDoc, b: &ProbeDoc) -> Vec<String> {
    let mut out = Vec::new();
    for (side, d) in [("A", a), ("B", b)] {
        if d.source == Producer::Fio {
            out.push(format!("{side}: {NO_REPLICATES}"));
        } else if !d.has_replicates() {
            out.push(format!(
                "{side}: one round per cell, so no replicates: no interval and no test"
            ));
        }
        if d.partial {
            out.push(format!(
                "{side} is a partial run (interrupted): its cells have the rounds measured until then"
            ));
        }
    }
    let both = a.source == Producer::Diskalign && b.source == Producer::Diskalign;
    let (x, y) = (&a.plan, &b.plan);
    if both && x.rounds != y.rounds {
        out.push(format!(
            "the plans differ in rounds (A at most {}, B {}): the intervals differ in width",
            x.rounds, y.rounds
        ));
    }
    if both && x.runtime != y.runtime {
        out.push(format!(
            "the plans differ in the time per cell (A {} s, B {} s): short windows are noisier",
            x.runtime.as_secs_f64(),
            y.runtime.as_secs_f64()
        ));
    }
    if a.parts().len() != b.parts().len() {
        out.push(format!(
            "A has {} targets and B {}: targets are matched in the order given",
            a.parts().len(),
            b.parts().len()
        ));
    }
    out
}

/// `4 %` or `48 %` from a ratio's distance to 1.
fn pct(x: f64) -> String {
    format!("{:.0} %", (x * 100.0).abs())
}

/// The cell furthest from 1 in the direction `d`, as a clause:
/// `up to 48 % slower: randwrite 4 KiB at 512, CI 45–51 %`.
fn extreme(c: &ProbeComparison, d: Decision) -> String {
    let of = |r: &CellRatio| r.ratio.unwrap_or(1.0);
    let cells = c.cells.iter().filter(|r| r.decision == d);
    let worst = match d {
        Decision::Slower => cells.min_by(|x, y| of(x).total_cmp(&of(y))),
        _ => cells.max_by(|x, y| of(x).total_cmp(&of(y))),
    };
    let Some(w) = worst else {
        return String::new();
    };
    let ci = w.ci95.unwrap_or([1.0, 1.0]);
    let (lo, hi) = match d {
        Decision::Slower => (1.0 - ci[1], 1.0 - ci[0]),
        _ => (ci[0] - 1.0, ci[1] - 1.0),
    };
    format!(
        "up to {} {d}: {}, CI {}–{}",
        pct(of(w) - 1.0),
        w.key.label(),
        pct(lo).trim_end_matches(" %"),
        pct(hi)
    )
}

/// Names in prose: `a`, `a and b`, `a, b and c`.
pub fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn plural(n: usize, one: &str) -> String {
    format!("{n} {one}{}", if n == 1 { "" } else { "s" })
}

const REST: [(Decision, &str); 3] = [
    (Decision::Same, "the same"),
    (Decision::Open, "undecided"),
    (Decision::Untested, "untested (no replicates)"),
];

/// The clauses on the cells: what differs, then what does not.
fn cell_clauses(c: &ProbeComparison) -> Vec<String> {
    let n = c.cells.len();
    let mut out = Vec::new();
    let moved: Vec<String> = [Decision::Slower, Decision::Faster]
        .into_iter()
        .filter(|d| c.count(*d) > 0)
        .map(|d| {
            format!(
                "{d} in {} of {} ({})",
                c.count(d),
                plural(n, "cell"),
                extreme(c, d)
            )
        })
        .collect();
    if !moved.is_empty() {
        out.push(format!("B is {}", moved.join(" and ")));
    } else if let Some((_, word)) = REST.iter().find(|(d, _)| c.count(*d) == n) {
        let all = match n {
            1 => "the one cell".to_string(),
            _ => format!("all {n} cells"),
        };
        return vec![format!("{all} {word}")];
    } else {
        out.push(format!(
            "B is not significantly different in any of {}",
            plural(n, "cell")
        ));
    }
    for (d, word) in REST {
        if c.count(d) > 0 {
            out.push(format!("{} {word}", c.count(d)));
        }
    }
    out
}

/// One sentence: the cells, the environment, what only one run has.
fn summary(c: &ProbeComparison) -> String {
    let mut parts = if c.cells.is_empty() {
        vec!["no cell in common".to_string()]
    } else {
        cell_clauses(c)
    };
    let env = environment::differing(&c.environment);
    if !env.is_empty() {
        parts.push(format!("environment differs in {}", and_list(&env)));
    }
    for (side, only) in [("A", &c.only_a), ("B", &c.only_b)] {
        let mut what = Vec::new();
        for (n, word) in [
            (only.targets.len(), "target"),
            (only.patterns.len(), "pattern"),
            (only.cells.len(), "cell"),
        ] {
            if n > 0 {
                what.push(plural(n, word));
            }
        }
        if !what.is_empty() {
            let what: Vec<&str> = what.iter().map(String::as_str).collect();
            parts.push(format!("{} only in {side}", and_list(&what)));
        }
    }
    parts.join("; ")
}
