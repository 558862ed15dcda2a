//! Steering: the adaptive run, round by round ([`adaptive`]). Its steps
//! are named there: the time budget, the focus on the cells that can
//! see the unit the fit points at ([`focus`]), the zoom to the finer
//! offsets, the stop rule ([`settle`]: when measuring may stop) and the
//! pacing of each round's window ([`pacing`]).
//!
//! It asks [`super::infer`] what the rounds so far say and
//! [`super::measure`]'s grid for cells; the rounds themselves are the
//! caller's ([`Rounds`]). `simulated` (tests only) runs it on a device
//! model.

mod adaptive;
mod focus;
mod pacing;
mod settle;

pub use pacing::secs;

pub(super) use adaptive::{drive, Rounds};
pub(super) use pacing::Pacing;

#[cfg(test)]
mod simulated;
#[cfg(test)]
pub(crate) use simulated::auto_plan;
