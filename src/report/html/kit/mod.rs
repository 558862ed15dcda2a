//! What every figure draws the same way: text and how wide it is
//! ([`text`]), ticks ([`ticks`]), axes, frames and grid lines ([`axis`]),
//! and legends ([`legend`]). A figure's own marks (a heatmap's tiles, a
//! disk's partitions) stay in its module; everything around them comes
//! from here, so labels are measured once and laid out by one rule.

pub mod axis;
pub mod legend;
pub mod text;
pub mod ticks;

/// Grey of axis lines and tick marks.
pub const AXIS: &str = "#444444";
/// Grey of grid lines across a plot.
pub const GRID: &str = "#e3e3e3";
/// Near-black of labels.
pub const INK: &str = "#222222";
/// Dark grey of captions and axis titles.
pub const MUTED: &str = "#333333";

#[cfg(test)]
pub mod clear;
