//! The marks every probe figure shares: axis labels and titles, tick
//! labels with grid lines, legend lines.

use super::super::scale::Band;
use super::super::svg::{El, Figure};

/// Grey of axes and grid lines.
pub const AXIS: &str = "#444444";
pub const GRID: &str = "#e3e3e3";

/// About how wide a label of `chars` characters is at 11 px.
pub fn text_width(chars: usize) -> f64 {
    chars as f64 * 6.2
}

/// A category label on one or two lines: `1 MiB - 512 B` breaks before
/// its minus.
fn lines_of(label: &str) -> Vec<String> {
    match label.split_once(" - ") {
        Some((a, b)) => vec![a.to_string(), format!("- {b}")],
        None => vec![label.to_string()],
    }
}

fn widest(labels: &[String], f: impl Fn(&str) -> Vec<String>) -> usize {
    let lines = labels.iter().flat_map(|l| f(l));
    lines.map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Whether a band's labels must be turned to fit (level ones may take
/// two lines).
fn turned(band: &Band, labels: &[String]) -> bool {
    text_width(widest(labels, lines_of)) > band.width() - 6.0
}

/// How tall the labels under a band axis are (turned or not).
pub fn x_labels_height(band: &Band, labels: &[String]) -> f64 {
    if turned(band, labels) {
        // Turned by 40°: sin 40° of the width, plus the text's own height.
        text_width(widest(labels, |l| vec![l.to_string()])) * 0.643 + 18.0
    } else {
        let two = labels.iter().any(|l| lines_of(l).len() > 1);
        if two {
            32.0
        } else {
            19.0
        }
    }
}

/// The category labels under a band axis whose line is at `y`: level
/// (on two lines if need be) when they fit, else turned 40° and ending
/// under their slot.
pub fn x_labels(f: &mut Figure, band: &Band, labels: &[String], y: f64) {
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
            f.add(
                El::new("text")
                    .at("x", x + 4.0)
                    .at("y", y + 15.0)
                    .attr("text-anchor", "end")
                    .attr(
                        "transform",
                        format!("rotate(-40 {} {})", fmt(x + 4.0), fmt(y + 15.0)),
                    )
                    .attr("fill", "#222222")
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
                    .attr("fill", "#222222")
                    .text(line),
            );
        }
    }
}

fn fmt(x: f64) -> String {
    super::super::svg::num(x)
}

/// The labels of rows (a band down the left of a heatmap), right-aligned
/// at `x`.
pub fn y_labels(f: &mut Figure, band: &Band, labels: &[String], x: f64) {
    for (i, label) in labels.iter().enumerate() {
        f.add(
            El::new("text")
                .at("x", x)
                .at("y", band.mid(i) + 4.0)
                .attr("text-anchor", "end")
                .attr("fill", "#222222")
                .text(label),
        );
    }
}

/// A value axis: tick labels left of `x0` at pixel heights `ys`, with
/// grid lines across the plot to `x1`.
pub fn y_ticks(f: &mut Figure, ticks: &[(f64, String)], x0: f64, x1: f64) {
    for (y, label) in ticks {
        f.add(
            El::new("line")
                .at("x1", x0)
                .at("x2", x1)
                .at("y1", *y)
                .at("y2", *y)
                .attr("stroke", GRID),
        );
        f.add(
            El::new("text")
                .at("x", x0 - 6.0)
                .at("y", y + 4.0)
                .attr("text-anchor", "end")
                .attr("fill", "#222222")
                .text(label),
        );
    }
}

/// The two axis lines of a plot's frame (left and bottom).
pub fn frame(f: &mut Figure, x0: f64, y0: f64, x1: f64, y1: f64) {
    let path = format!("M{},{}V{}H{}", fmt(x0), fmt(y0), fmt(y1), fmt(x1));
    f.add(
        El::new("path")
            .attr("d", path)
            .attr("fill", "none")
            .attr("stroke", AXIS),
    );
}

/// An axis title centred on `x` at `y`.
pub fn x_title(f: &mut Figure, x: f64, y: f64, text: &str) {
    f.add(
        El::new("text")
            .at("x", x)
            .at("y", y)
            .attr("text-anchor", "middle")
            .attr("font-weight", "bold")
            .text(text),
    );
}

/// An axis title turned to read upwards, centred on `y`.
pub fn y_title(f: &mut Figure, x: f64, y: f64, text: &str) {
    f.add(
        El::new("text")
            .at("x", x)
            .at("y", y)
            .attr("text-anchor", "middle")
            .attr("font-weight", "bold")
            .attr("transform", format!("rotate(-90 {} {})", fmt(x), fmt(y)))
            .text(text),
    );
}

/// A line of plain text, left-aligned at `x`.
pub fn label(f: &mut Figure, x: f64, y: f64, text: &str) {
    f.add(
        El::new("text")
            .at("x", x)
            .at("y", y)
            .attr("fill", "#222222")
            .text(text),
    );
}

/// A panel's caption (the target it shows), bold and left-aligned.
pub fn caption(f: &mut Figure, x: f64, y: f64, text: &str) {
    f.add(
        El::new("text")
            .at("x", x)
            .at("y", y)
            .attr("font-weight", "bold")
            .attr("fill", "#333333")
            .text(text),
    );
}
