//! Byte axes: ticks at round binary values (so their labels read "8 MiB",
//! not "8388608") and the axis drawn under a plot.

use super::super::look::text_width;
use super::super::scale::Linear;
use super::super::svg::{El, Figure};
use crate::units::human;

/// The power of two nearest above `span / n`: about `n` ticks over `span`.
pub fn binary_step(span: u64, n: u64) -> u64 {
    span.div_ceil(n.max(1)).max(1).next_power_of_two()
}

/// The multiples of a binary step in `[lo, hi]`, about `n` of them.
pub fn binary_ticks(lo: u64, hi: u64, n: u64) -> Vec<u64> {
    let step = binary_step(hi.saturating_sub(lo), n);
    let first = lo.div_ceil(step);
    (first..=hi / step).map(|k| k * step).collect()
}

/// How a tick is labelled: in binary units (`8 MiB`), or in bytes
/// (`25632768`) where the units would round the ticks together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Labels {
    Binary,
    Bytes,
}

impl Labels {
    fn text(self, v: u64) -> String {
        match self {
            Labels::Binary => human(v),
            Labels::Bytes => v.to_string(),
        }
    }
}

/// An x axis of bytes at `y`: a line, ticks labelled as `labels` says
/// and `label` centred under them. Ticks are as many as fit with their
/// widest label and some room between.
pub fn draw(f: &mut Figure, x: Linear, (lo, hi): (u64, u64), y: f64, labels: Labels, label: &str) {
    let width = (x.r1 - x.r0).abs();
    let widest = text_width(&labels.text(hi), 10.0).max(text_width("888 MiB", 10.0));
    let n = (width / (widest + 30.0)).floor().max(2.0) as u64;
    f.add(
        El::new("line")
            .at("x1", x.r0)
            .at("x2", x.r1)
            .at("y1", y)
            .at("y2", y)
            .attr("stroke", "#555555"),
    );
    for t in binary_ticks(lo, hi, n) {
        let at = x.map(t as f64);
        f.add(
            El::new("line")
                .at("x1", at)
                .at("x2", at)
                .at("y1", y)
                .at("y2", y + 4.0)
                .attr("stroke", "#555555"),
        );
        f.add(
            El::new("text")
                .at("x", at)
                .at("y", y + 15.0)
                .attr("text-anchor", anchor(at, &labels.text(t), f.width))
                .attr("font-size", 10)
                .text(labels.text(t)),
        );
    }
    f.add(
        El::new("text")
            .at("x", (x.r0 + x.r1) / 2.0)
            .at("y", y + 30.0)
            .attr("text-anchor", "middle")
            .attr("fill", "#333333")
            .text(label),
    );
}

/// A tick label's anchor: centred, unless that would leave the figure
/// (`width` px wide).
fn anchor(at: f64, text: &str, width: f64) -> &'static str {
    let half = text_width(text, 10.0) / 2.0;
    if at - half < 2.0 {
        "start"
    } else if at + half > width - 2.0 {
        "end"
    } else {
        "middle"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{KIB, MIB};

    #[test]
    fn steps_are_powers_of_two() {
        assert_eq!(binary_step(64 * MIB, 8), 8 * MIB);
        assert_eq!(binary_step(64 * MIB, 5), 16 * MIB);
        assert_eq!(binary_step(1_000_204_886_016, 8), 128 << 30);
        assert_eq!(binary_step(0, 8), 1);
    }

    #[test]
    fn ticks_are_multiples_inside_the_range() {
        assert_eq!(
            binary_ticks(0, 64 * MIB, 4),
            vec![0, 16 * MIB, 32 * MIB, 48 * MIB, 64 * MIB]
        );
        // The zoom around byte 32256: ±8 KiB.
        assert_eq!(
            binary_ticks(24064, 40448, 4),
            vec![24 * KIB, 28 * KIB, 32 * KIB, 36 * KIB]
        );
    }
}
