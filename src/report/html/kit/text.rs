//! Text in figures: the one estimate of how wide a label is, labels cut
//! to fit, and the text marks (labels, captions, axis titles).
//!
//! The figures are laid out before any browser sees them, so a label's
//! width is estimated, not measured: each character by its class, at the
//! advance widths of DejaVu Sans (the figures' first font; its `hmtx`
//! table, in 2048ths of an em), rounded up a little so labels rather
//! keep their distance than touch. A flat 0.6 em a character would put
//! "16 MiB" (0.65 em a character) too narrow and "1 il" too wide.

use super::super::svg::{num, El, Figure};
use super::{INK, MUTED};

/// The width of `c` in em, by class.
fn em(c: char) -> f64 {
    match c {
        // i j l (569), . , (651), : ; | (690), ' (563), ! (821), I (604)
        'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '|' | '\'' | '!' | 'I' => 0.32,
        // space (651), f (721), - (739), t (803), r (842), ( ) (799), / (690)
        ' ' | 'f' | '-' | 't' | 'r' | '(' | ')' | '[' | ']' | '/' => 0.42,
        // digits (1303), + = (1716), − (1716)
        '0'..='9' | '+' | '=' | '\u{2212}' | '<' | '>' => 0.66,
        // m (1995), w (1675), M (1767), W (2025), % (1946), @ (2048), … (2048)
        'm' | 'w' | 'M' | 'W' | '%' | '@' | '\u{2026}' => 1.0,
        // A–Z: 1141 (L) to 1612 (O)
        'A'..='Z' => 0.74,
        // a–z: 1067 (s) to 1300 (b d g p q u)
        'a'..='z' => 0.64,
        // Other ASCII punctuation.
        _ if c.is_ascii() => 0.6,
        // Arrows, ticks, crosses, warning and other symbols.
        _ => 0.84,
    }
}

/// About how wide `text` is at `size` px.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().map(em).sum::<f64>() * size
}

/// The font size (from `lo` to `hi` px) at which `text` fills `room` px.
pub fn size_to_fit(text: &str, room: f64, (lo, hi): (f64, f64)) -> f64 {
    (room / text_width(text, 1.0)).clamp(lo, hi)
}

/// `text` cut to fit `width` px at `size` px, with an ellipsis when cut.
pub fn fit(text: &str, width: f64, size: f64) -> String {
    if text_width(text, size) <= width {
        return text.to_string();
    }
    let room = width - text_width("\u{2026}", size);
    let mut used = 0.0;
    let mut s = String::new();
    for c in text.chars() {
        used += em(c) * size;
        if used > room {
            break;
        }
        s.push(c);
    }
    if s.is_empty() {
        return String::new();
    }
    s.push('\u{2026}');
    s
}

/// A line of plain text, left-aligned at `x`.
pub fn label(f: &mut Figure, x: f64, y: f64, text: &str) {
    f.add(
        El::new("text")
            .at("x", x)
            .at("y", y)
            .attr("fill", INK)
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
            .attr("fill", MUTED)
            .text(text),
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
            .attr("transform", format!("rotate(-90 {} {})", num(x), num(y)))
            .text(text),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_measured_by_its_size_and_cut_to_fit() {
        assert!((text_width("4096", 10.0) - 26.4).abs() < 1e-9);
        assert_eq!(text_width("4096", 11.0), 2.0 * text_width("4096", 5.5));
        // Wide letters take more room than narrow ones.
        assert!(text_width("MiB", 10.0) > text_width("lit", 10.0) * 1.5);
        assert_eq!(fit("partition 1", 200.0, 10.0), "partition 1");
        assert_eq!(fit("partition 1", 40.0, 10.0), "partit…");
        assert_eq!(fit("partition 1", 5.0, 10.0), "");
        // What `fit` keeps, `text_width` says fits.
        let cut = fit("a long partition name", 80.0, 10.0);
        assert!(text_width(&cut, 10.0) <= 80.0);
        assert_eq!(size_to_fit("4 KiB", 15.0, (6.5, 9.0)), 6.5);
        assert_eq!(
            size_to_fit("4 KiB", 20.0, (1.0, 9.0)),
            20.0 / text_width("4 KiB", 1.0)
        );
        assert_eq!(size_to_fit("4 KiB", 300.0, (6.5, 9.0)), 9.0);
    }
}
