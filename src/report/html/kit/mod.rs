//! What every figure draws the same way: text and how wide it is
//! ([`text`]), ticks ([`ticks`]), axes, frames and grid lines ([`axis`]),
//! and legends ([`legend`]). A figure's own marks (a heatmap's tiles, a
//! disk's partitions) stay in its module; everything around them comes
//! from here, so labels are measured once and laid out by one rule.

mod axis;
mod legend;
mod text;
mod ticks;

pub use axis::{
    band_labels, band_labels_height, clip_arrow, clip_name, frame, row_labels, y_grid, XAxis,
};
pub use legend::{swatch, KeyBox, Legend};
pub use text::{caption, fit, label, size_to_fit, text_width, x_title, y_title};
pub use ticks::{binary, every_other, linear, log, ticks, Axis, Room, Tick};

/// Grey of axis lines and tick marks.
pub const AXIS: &str = "#444444";
/// Grey of grid lines across a plot.
pub const GRID: &str = "#e3e3e3";
/// Near-black of labels.
pub const INK: &str = "#222222";
/// Dark grey of captions and axis titles.
pub const MUTED: &str = "#333333";

#[cfg(test)]
mod clear;
#[cfg(test)]
pub use clear::assert_legends_clear;
