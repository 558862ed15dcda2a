//! Axes: the frame of a plot, grid lines with their tick labels, a
//! labelled x axis, category labels under and beside a band, and the
//! arrow that marks an interval cut off at an axis's end.

use super::super::scale::{Band, Clip};
use super::super::svg::{num, points, El, Figure};
use super::text::text_width;
use super::ticks::{Axis, Tick};
use super::{AXIS, GRID, INK, MUTED};

/// The two axis lines of a plot's frame (left and bottom).
pub fn frame(f: &mut Figure, x0: f64, y0: f64, x1: f64, y1: f64) {
    let path = format!("M{},{}V{}H{}", num(x0), num(y0), num(y1), num(x1));
    f.add(
        El::new("path")
            .attr("d", path)
            .attr("fill", "none")
            .attr("stroke", AXIS),
    );
}

/// A value axis up the left: tick labels left of `x0`, with grid lines
/// across the plot to `x1`.
pub fn y_grid(f: &mut Figure, ticks: &[Tick], x0: f64, x1: f64) {
    for t in ticks {
        f.add(
            El::new("line")
                .at("x1", x0)
                .at("x2", x1)
                .at("y1", t.at)
                .at("y2", t.at)
                .attr("stroke", GRID),
        );
        f.add(
            El::new("text")
                .at("x", x0 - 6.0)
                .at("y", t.at + 4.0)
                .attr("text-anchor", "end")
                .attr("fill", INK)
                .text(&t.label),
        );
    }
}

/// An x axis drawn under a plot.
pub struct XAxis<'a> {
    /// Where the line runs, px.
    pub from: f64,
    pub to: f64,
    /// The line's height.
    pub y: f64,
    /// The labelled ticks.
    pub ticks: &'a [Tick],
    /// Short unlabelled ticks between them, px.
    pub minor: &'a [f64],
    /// The labels' font size.
    pub size: f64,
    /// What the axis measures, centred under the labels.
    pub title: &'a str,
}

impl XAxis<'_> {
    /// Draws the line, the ticks and their labels (each kept inside the
    /// figure: one that would stick out at an edge is anchored there) and
    /// the title.
    pub fn draw(&self, f: &mut Figure) {
        let line = |x1: f64, x2: f64, y1: f64, y2: f64| {
            El::new("line")
                .at("x1", x1)
                .at("x2", x2)
                .at("y1", y1)
                .at("y2", y2)
                .attr("stroke", AXIS)
        };
        f.add(line(self.from, self.to, self.y, self.y));
        for &px in self.minor {
            f.add(line(px, px, self.y, self.y + 2.0));
        }
        for t in self.ticks {
            f.add(line(t.at, t.at, self.y, self.y + 4.0));
            f.add(
                El::new("text")
                    .at("x", t.at)
                    .at("y", self.y + 4.0 + self.size)
                    .attr("text-anchor", anchor(t.at, &t.label, self.size, f.width))
                    .attr("font-size", self.size)
                    .text(&t.label),
            );
        }
        f.add(
            El::new("text")
                .at("x", (self.from + self.to) / 2.0)
                .at("y", self.y + 2.0 * self.size + 12.0)
                .attr("text-anchor", "middle")
                .attr("fill", MUTED)
                .text(self.title),
        );
    }
}

/// A label's anchor at `at`: centred, unless that would leave the figure
/// (`width` px wide), then its start or end at the edge side.
pub fn anchor(at: f64, text: &str, size: f64, width: f64) -> &'static str {
    let half = text_width(text, size) / 2.0;
    if at - half < 2.0 {
        "start"
    } else if at + half > width - 2.0 {
        "end"
    } else {
        "middle"
    }
}

/// A category label on one or two lines: `1 MiB - 512 B` breaks before
/// its minus.
fn lines_of(label: &str) -> Vec<String> {
    match label.split_once(" - ") {
        Some((a, b)) => vec![a.to_string(), format!("- {b}")],
        None => vec![label.to_string()],
    }
}

/// The widest line of `labels` as `split` breaks them, px at 11 px.
fn widest(labels: &[String], split: impl Fn(&str) -> Vec<String>) -> f64 {
    let lines = labels.iter().flat_map(|l| split(l));
    lines.map(|l| text_width(&l, 11.0)).fold(0.0, f64::max)
}

/// Whether a band's labels must be turned to fit (level ones may take
/// two lines).
fn turned(band: &Band, labels: &[String]) -> bool {
    widest(labels, lines_of) > band.width() - 6.0
}

/// How tall the labels under a band axis are (turned or not).
pub fn band_labels_height(band: &Band, labels: &[String]) -> f64 {
    if turned(band, labels) {
        // Turned by 40°: sin 40° of the width, plus the text's own height.
        widest(labels, |l| vec![l.to_string()]) * 0.643 + 18.0
    } else if labels.iter().any(|l| lines_of(l).len() > 1) {
        32.0
    } else {
        19.0
    }
}

/// The category labels under a band axis whose line is at `y`: level
/// (on two lines if need be) when they fit, else turned 40° and ending
/// under their slot.
pub fn band_labels(f: &mut Figure, band: &Band, labels: &[String], y: f64) {
    let turn = turned(band, labels);
    for (i, label) in labels.iter().enumerate() {
        let x = band.mid(i);
        f.add(
            El::new("line")
                .at("x1", x)
                .at("x2", x)
                .at("y1", y)
                .at("y2", y + 4.0)
                .attr("stroke", AXIS),
        );
        if turn {
            let (tx, ty) = (x + 4.0, y + 15.0);
            f.add(
                El::new("text")
                    .at("x", tx)
                    .at("y", ty)
                    .attr("text-anchor", "end")
                    .attr("transform", format!("rotate(-40 {} {})", num(tx), num(ty)))
                    .attr("fill", INK)
                    .text(label),
            );
            continue;
        }
        for (k, line) in lines_of(label).iter().enumerate() {
            f.add(
                El::new("text")
                    .at("x", x)
                    .at("y", y + 15.0 + 13.0 * k as f64)
                    .attr("text-anchor", "middle")
                    .attr("fill", INK)
                    .text(line),
            );
        }
    }
}

/// The labels of rows (a band down the left of a heatmap), right-aligned
/// at `x`.
pub fn row_labels(f: &mut Figure, band: &Band, labels: &[String], x: f64) {
    for (i, label) in labels.iter().enumerate() {
        f.add(
            El::new("text")
                .at("x", x)
                .at("y", band.mid(i) + 4.0)
                .attr("text-anchor", "end")
                .attr("fill", INK)
                .text(label),
        );
    }
}

/// The three corners of the arrow that marks an interval cut off at an
/// axis edge: a 5 px chevron with its tip at `(x, y)`, pointing off the
/// `clip` end of `axis`.
pub fn clip_arrow_points(x: f64, y: f64, axis: Axis, clip: Clip) -> [(f64, f64); 3] {
    let s = 5.0;
    match (axis, clip) {
        (Axis::X, Clip::Low) => [(x, y), (x + s, y - s), (x + s, y + s)],
        (Axis::X, Clip::High) => [(x, y), (x - s, y - s), (x - s, y + s)],
        (Axis::Y, Clip::Low) => [(x, y), (x - s, y - s), (x + s, y - s)],
        (Axis::Y, Clip::High) => [(x, y), (x - s, y + s), (x + s, y + s)],
    }
}

/// The arrow as an SVG polygon, with `data-clipped` saying which end.
pub fn clip_arrow(x: f64, y: f64, axis: Axis, clip: Clip, ink: &str) -> El {
    let pts = clip_arrow_points(x, y, axis, clip);
    El::new("polygon")
        .attr("class", "clipped")
        .attr("points", points(&pts))
        .attr("fill", ink)
        .attr("data-clipped", clip.as_str())
        .title(format!(
            "the interval goes on past the axis's {} end",
            clip.as_str()
        ))
}

/// `low`, `high` or `both`: what `data-clipped` of a mark says.
pub fn clip_name(low: bool, high: bool) -> Option<&'static str> {
    match (low, high) {
        (true, true) => Some("both"),
        (true, false) => Some("low"),
        (false, true) => Some("high"),
        (false, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_at_an_edge_is_anchored_inside() {
        assert_eq!(anchor(300.0, "8 MiB", 10.0, 600.0), "middle");
        assert_eq!(anchor(1.0, "8 MiB", 10.0, 600.0), "start");
        assert_eq!(anchor(599.0, "8 MiB", 10.0, 600.0), "end");
    }

    #[test]
    fn long_category_labels_turn_or_break() {
        let band = Band {
            n: 4,
            r0: 0.0,
            r1: 400.0,
        };
        let short: Vec<String> = vec!["512 B".into(), "4 KiB".into()];
        assert_eq!(band_labels_height(&band, &short), 19.0);
        let two: Vec<String> = vec!["1 MiB - 512 B".into()];
        assert_eq!(band_labels_height(&band, &two), 32.0);
        let long: Vec<String> = vec!["a very long offset label".into()];
        assert!(band_labels_height(&band, &long) > 32.0);
        assert_eq!(clip_name(true, false), Some("low"));
        assert_eq!(
            clip_arrow_points(100.0, 50.0, Axis::X, Clip::Low),
            [(100.0, 50.0), (105.0, 45.0), (105.0, 55.0)]
        );
    }
}
