//! Inferring: from the rounds' samples to what they say. The statistics
//! over rounds ([`stats`]), the sequential procedure that judges each
//! contrast after every round ([`sequential`]), each round's spread and
//! the noise the run meets ([`spread`], [`noise`]), the fit of every
//! candidate unit ([`unitfit`]), the verdict and its sentence
//! ([`verdicts`]), the report's figures built from all of them
//! ([`analyse`]), what the device itself declares ([`declared`]), and the
//! types that hold what a run concludes, as its document writes them
//! ([`results`]).
//!
//! It reads [`super::measure`]'s cells and samples and imports nothing of
//! the steering or the document: the adaptive run asks it, the document
//! holds its results.

mod analyse;
mod declared;
mod noise;
mod results;
mod sequential;
mod spread;
mod stats;
mod unitfit;
mod verdicts;

pub use results::{
    CellReport, Confidence, ContrastReport, Estimate, Inference, Noise, Penalty, Relative,
};
pub use sequential::{contrasts, resolvable, ContrastKind, Decision};
pub use stats::{geo_mean_ci, holm, t_quantile, welch_log};

pub(super) use analyse::{
    cells, contrast_reports, infer, pattern_penalties, priced_rows, Evidence,
};
pub(super) use declared::clause;
pub(super) use noise::{model as noise_model, NoiseModel, RoundNoise};
pub(super) use results::PatternPenalty;
pub(super) use sequential::{
    assess, focus_contrasts, still_needed, wants_zoom, Assessment, Contrast, Params, PRIOR_DF,
};
pub(super) use stats::{moderated_t, pooled_variance};
pub(super) use unitfit::{hidden_penalty, UnitFit, STRONG};
pub(super) use verdicts::{curve, Curve};

#[cfg(test)]
pub(super) use noise::ClassNoise;
#[cfg(test)]
pub(super) use results::Latency;
#[cfg(test)]
pub(super) use sequential::NoiseClass;
#[cfg(test)]
pub(super) use stats::median;
