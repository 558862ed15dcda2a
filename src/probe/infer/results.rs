//! What a probe run concludes, as its document holds it: each cell's
//! estimates, each contrast's relative figures, the penalties, the noise
//! and the inference about the internal unit; written by
//! [`super::analyse`], read back in the document
//! ([`crate::probe::ProbeRun`]) and by the renderers.

use super::sequential::{ContrastKind, Decision};
use super::unitfit::UnitFit;
use crate::probe::measure::Cell;
use crate::probe::measure::Pattern;
use crate::units::human;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Estimate {
    /// Median over rounds.
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub median: f64,
    /// Geometric mean over rounds and its 95 % confidence interval.
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub geo_mean: f64,
    #[serde(
        default = "crate::probe::serde_figures::nan_pair",
        deserialize_with = "crate::probe::serde_figures::pair_or_nan"
    )]
    pub ci95: [f64; 2],
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Latency {
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub p50: f64,
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub p99: f64,
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub p999: f64,
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub max: f64,
}

/// A contrast as judged when its measuring stopped.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Relative {
    /// Geometric-mean IOPS ratio over the paired rounds (this cell over the
    /// reference).
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub ratio: f64,
    /// Its simultaneous 95 % interval (see `inference.method`).
    #[serde(default, deserialize_with = "crate::probe::serde_figures::pair_or_nan")]
    pub ci95: [f64; 2],
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub p_value: f64,
    /// Bonferroni-adjusted over contrasts and looks.
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub p_adjusted: f64,
    /// Decided slower or faster.
    pub significant: bool,
    pub decision: Decision,
    /// Paired rounds used, and rounds left out as outliers.
    pub rounds: usize,
    #[serde(default)]
    pub outliers: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CellReport {
    #[serde(flatten)]
    pub cell: Cell,
    pub iops: Estimate,
    pub mib_s: Estimate,
    pub lat_us: Latency,
    /// IOPS of each round this cell ran, in order.
    pub rounds: Vec<f64>,
    /// The round numbers of those figures (from 0).
    #[serde(default)]
    pub round_numbers: Vec<u32>,
    /// Broken measurements run again, and rounds still broken after that.
    #[serde(default)]
    pub retries: u32,
    #[serde(default)]
    pub broken_rounds: u32,
    /// Against offset 0 of the same block size and pattern; null there.
    pub relative: Option<Relative>,
}

/// Every contrast, including block size against block size.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ContrastReport {
    pub kind: ContrastKind,
    /// Indexes of the targets compared (the same but for `target`
    /// contrasts, whose reference is the first target).
    pub target: usize,
    #[serde(default)]
    pub reference_target: usize,
    pub pattern: Pattern,
    pub block_size: u32,
    pub offset: u64,
    #[serde(default)]
    pub reference_block_size: u32,
    pub reference_offset: u64,
    #[serde(flatten)]
    pub relative: Relative,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Penalty {
    pub pattern: Pattern,
    pub block_size: u32,
    /// `offset`: misaligned offsets of this row against aligned;
    /// `block-size`: aligned IOPS against the next larger block size.
    pub kind: ContrastKind,
    /// The slowest offset (0 for a block-size penalty).
    pub worst_offset: u64,
    /// The slower offsets of the row.
    pub offsets: Vec<u64>,
    /// A block-size penalty's larger block size.
    pub reference_block_size: Option<u32>,
    /// The row's typical penalty in percent, and its 95 % CI.
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub slower_pct: f64,
    #[serde(default, deserialize_with = "crate::probe::serde_figures::pair_or_nan")]
    pub ci95_pct: [f64; 2],
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub p_adjusted: f64,
    /// The unit the slower offsets are not aligned to, when inferred.
    pub not_aligned_to: Option<u64>,
}

/// How far the run pins the internal unit down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confidence {
    /// Between a slower offset and a coarser one that was not.
    Bracketed,
    /// Every probed offset was slower, or only the block-size curve spoke.
    LowerBound,
    /// No misaligned offset was slower.
    NoDifference,
    /// Slower offsets and unaffected ones do not nest.
    Inconsistent,
    /// The best-fitting unit, but the next best candidate is not ruled out
    /// strongly.
    Likely,
    /// No unit, yet some offset's interval still allows a penalty of
    /// `min_effect` or more: the noise was too large to tell.
    Inconclusive,
    /// Fewer than two rounds: nothing to compare with.
    Untested,
}

crate::spelled_as_serde!(Confidence);

/// The noise of one pattern: what the run could have seen.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Noise {
    pub pattern: Pattern,
    /// SD of the paired per-round differences, in percent.
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub paired_sd_pct: f64,
    /// The smallest penalty the plan's most rounds could call slower.
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub detectable_pct: f64,
    /// The window (seconds) these figures are at: the run's last.
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub window_s: f64,
    /// `paired_sd_pct` split: the jitter inside windows (it averages out
    /// as windows grow) and the drift (it does not), each as an SD in
    /// percent (their variances add up to the paired one's).
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub jitter_pct: f64,
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub drift_pct: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Inference {
    /// Smallest offset granularity that performed like aligned (or the
    /// lower bound); null when the run cannot tell or found no difference.
    pub effective_unit_bytes: Option<u64>,
    pub confidence: Confidence,
    /// The sentence about the unit.
    pub statement: String,
    /// The verdict in one line: what misalignment costs here.
    pub summary: String,
    pub penalties: Vec<Penalty>,
    #[serde(default)]
    pub noise: Vec<Noise>,
    /// Advice when the noise is too large for the question.
    pub advice: Option<String>,
    /// Contrasts still open when measuring stopped.
    #[serde(default)]
    pub undecided: usize,
    /// How comparisons are made: `METHOD` when written; read back as the
    /// document has it (a document of another version may say otherwise).
    #[serde(default)]
    pub method: std::borrow::Cow<'static, str>,
    /// Every candidate unit's fit, best first (null with fewer than two
    /// rounds or no offset comparison).
    pub unit_fit: Option<UnitFit>,
    /// What each pattern pays at the fit's unit, all its rows together
    /// (empty when the fit names no unit strongly against no penalty).
    #[serde(default)]
    pub patterns: Vec<PatternPenalty>,
}

impl Inference {
    /// Neither a penalty decided nor one of `min_effect` ruled out (exit
    /// bit 4): an inconclusive verdict, and also a unit named `likely` (or
    /// a bound, or too few rounds) without a single offset decided slower.
    /// Exit 0 says "no penalty of --min-effect or more at any offset", and
    /// only `no-difference` has shown that.
    pub fn leaves_penalty_open(&self) -> bool {
        self.confidence == Confidence::Inconclusive
            || (self.penalties.is_empty() && self.confidence != Confidence::NoDifference)
    }
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else if p < 0.01 {
        "p < 0.01".into()
    } else {
        format!("p = {p:.2}")
    }
}

impl Penalty {
    /// `4 KiB randwrite 48% ± 3% slower at offsets not aligned to 4 KiB
    /// (512 B … 2 KiB) (p < 0.001)`.
    pub fn sentence(&self) -> String {
        let pm = (self.ci95_pct[1] - self.ci95_pct[0]) / 2.0;
        let lo = self.offsets.iter().min().copied().unwrap_or(0);
        let hi = self.offsets.iter().max().copied().unwrap_or(0);
        match (self.kind, self.reference_block_size) {
            (ContrastKind::BlockSize, Some(big)) => format!(
                "aligned {} {} {:.0}% ± {:.0}% fewer IOPS than aligned {} ({}): smaller blocks are read-modify-write",
                human(u64::from(self.block_size)),
                self.pattern.as_str(),
                self.slower_pct,
                pm,
                human(u64::from(big)),
                p_text(self.p_adjusted)
            ),
            _ => format!(
                "{} {} {:.0}% ± {:.0}% slower at offsets {} ({})",
                human(u64::from(self.block_size)),
                self.pattern.as_str(),
                self.slower_pct,
                pm,
                match self.not_aligned_to {
                    Some(u) => format!("not aligned to {} ({})", human(u), span(lo, hi)),
                    None => span(lo, hi),
                },
                p_text(self.p_adjusted)
            ),
        }
    }
}

/// `512 B … 2 KiB` or `512 B`.
pub fn span(lo: u64, hi: u64) -> String {
    if lo == hi {
        human(lo)
    } else {
        format!("{} … {}", human(lo), human(hi))
    }
}

/// What one pattern pays at the unit, all its rows of blocks up to the
/// ladder's together: the fit's δ (every cell of those rows, weighted as
/// the rows' layout gives) as per cent fewer IOPS, with its interval. The
/// interval holds at 95 % over every pattern and every look of the run
/// (level 1 − 0.05 / (patterns × looks)), since the run stops on it. A
/// pattern pays when the fit names it, or when that interval lies above
/// 0: a 2 % read penalty beside 4 % on writes is priced so long before
/// the fit's 1000 : 1 names it, or any one row's interval clears 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PatternPenalty {
    pub pattern: Pattern,
    #[serde(default, deserialize_with = "crate::probe::serde_figures::f64_or_nan")]
    pub slower_pct: f64,
    /// Its interval, simultaneous with every other interval of the run
    /// (level 1 − 0.05 / (family × looks): `Params::per_interval_alpha`),
    /// where a row's `ci95_pct` is a 95 % interval of its own.
    #[serde(default, deserialize_with = "crate::probe::serde_figures::pair_or_nan")]
    pub ci_pct: [f64; 2],
    pub pays: bool,
}

/// The patterns that pay among `patterns`.
pub fn paying(patterns: &[PatternPenalty]) -> Vec<Pattern> {
    patterns
        .iter()
        .filter(|p| p.pays)
        .map(|p| p.pattern)
        .collect()
}

/// The mean penalty of the priced rows, in per cent: what the patterns
/// the fit names pay; NaN without any.
pub fn paid(priced: &[Penalty]) -> f64 {
    priced.iter().map(|r| r.slower_pct).sum::<f64>() / priced.len() as f64
}

/// A pattern that does not pay is shown to pay at most half what the
/// paying ones do (`paid`): the upper end of its interval lies below it.
/// Until then "(randwrite only)" would be a claim without evidence.
pub fn bounded(p: &PatternPenalty, paid: f64) -> bool {
    p.ci_pct[1].is_finite() && p.ci_pct[1] < paid / 2.0
}
