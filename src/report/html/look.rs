//! How a status looks in the figures: a colour from the Okabe–Ito palette
//! and, so that colour is never the only cue, a fill pattern, a glyph and
//! the status word itself.

use super::kit::{KeyBox, Legend};
use super::scale::{category, Rgb};
use super::svg::{esc, El, Figure};
use crate::findings::Status;

/// The drawing of one status (or of none: a partition nobody judged, such
/// as an MBR extended container).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Look {
    pub word: &'static str,
    pub glyph: &'static str,
    pub fill: Rgb,
    /// The pattern laid over the fill (`None`: plain).
    pub pattern: Option<Pattern>,
}

/// The fill patterns, one per status that needs attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Diagonal hatch: misaligned.
    Hatch,
    /// Cross hatch: damaged.
    Cross,
    /// Dots: untidy.
    Dots,
    /// Vertical lines: incomplete.
    Bars,
}

impl Pattern {
    const ALL: [Pattern; 4] = [Pattern::Hatch, Pattern::Cross, Pattern::Dots, Pattern::Bars];

    fn name(self) -> &'static str {
        match self {
            Pattern::Hatch => "hatch",
            Pattern::Cross => "cross",
            Pattern::Dots => "dots",
            Pattern::Bars => "bars",
        }
    }

    /// The pattern's id in figure `fig` (ids are page-wide).
    pub fn id(self, fig: &str) -> String {
        format!("{fig}-{}", self.name())
    }

    /// The strokes of one 6 × 6 tile.
    fn tile(self) -> &'static str {
        match self {
            Pattern::Hatch => "<path d=\"M-1,1 l2,-2 M0,6 l6,-6 M5,7 l2,-2\" stroke=\"#000\" stroke-width=\"1.2\" stroke-opacity=\"0.45\"/>",
            Pattern::Cross => "<path d=\"M0,0 l6,6 M6,0 l-6,6\" stroke=\"#000\" stroke-width=\"1\" stroke-opacity=\"0.45\"/>",
            Pattern::Dots => "<circle cx=\"3\" cy=\"3\" r=\"1.1\" fill=\"#000\" fill-opacity=\"0.45\"/>",
            Pattern::Bars => "<path d=\"M3,0 v6\" stroke=\"#000\" stroke-width=\"1\" stroke-opacity=\"0.4\"/>",
        }
    }
}

/// The look of `status`; `None` is "not judged".
pub fn look(status: Option<Status>) -> Look {
    let (word, glyph, fill, pattern) = match status {
        Some(Status::Aligned) => ("aligned", "✓", category(2), None),
        Some(Status::Incomplete) => ("incomplete", "?", category(4), Some(Pattern::Bars)),
        Some(Status::Untidy) => ("untidy", "!", category(1), Some(Pattern::Dots)),
        // Drawn as misaligned (its hatch and glyph, the colour a shade
        // lighter): it pays for every I/O as a misaligned layer does.
        Some(Status::Inherits) => (
            "inherits",
            "✗",
            tint(category(5), 0.35),
            Some(Pattern::Hatch),
        ),
        Some(Status::Damaged) => ("damaged", "✗", category(3), Some(Pattern::Cross)),
        Some(Status::Misaligned) => ("misaligned", "✗", category(5), Some(Pattern::Hatch)),
        None => ("not judged", "–", Rgb(190, 190, 190), None),
    };
    Look {
        word,
        glyph,
        fill,
        pattern,
    }
}

/// The page's CSS class of a status (`status-misaligned`; the page styles
/// each of them).
pub fn class(status: Option<Status>) -> String {
    match status {
        Some(s) => format!("status-{s}"),
        None => "status-none".into(),
    }
}

/// The status as a table cell's words: `✗ misaligned`.
pub fn words(status: Option<Status>) -> String {
    let l = look(status);
    format!("{} {}", l.glyph, l.word)
}

/// A colour mixed toward white by `t` (0: itself, 1: white), for the
/// light background of a box whose text must stay black.
pub fn tint(c: Rgb, t: f64) -> Rgb {
    let m = |v: u8| (f64::from(v) + (255.0 - f64::from(v)) * t).round() as u8;
    Rgb(m(c.0), m(c.1), m(c.2))
}

/// The `<defs>` with every pattern of figure `fig`.
pub fn defs(f: &mut Figure, fig: &str) {
    let mut s = String::from("<defs>");
    for p in Pattern::ALL {
        s.push_str(&format!(
            "<pattern id=\"{}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">{}</pattern>",
            esc(&p.id(fig)),
            p.tile()
        ));
    }
    s.push_str("</defs>\n");
    f.raw(&s);
}

/// A rectangle filled in the status's look: the colour, then its pattern
/// on top (which lets the pointer through to the titled rectangle below).
pub fn swatch(f: &mut Figure, fig: &str, l: Look, rect: (f64, f64, f64, f64), base: El) {
    for el in swatch_els(fig, l, rect, base) {
        f.add(el);
    }
}

/// The marks of [`swatch`].
pub fn swatch_els(fig: &str, l: Look, (x, y, w, h): (f64, f64, f64, f64), base: El) -> Vec<El> {
    let mut els = vec![base
        .at("x", x)
        .at("y", y)
        .at("width", w)
        .at("height", h)
        .attr("fill", l.fill.hex())
        .attr("stroke", "#333333")
        .attr("stroke-width", "0.6")];
    if let Some(p) = l.pattern {
        els.push(
            El::new("rect")
                .at("x", x)
                .at("y", y)
                .at("width", w)
                .at("height", h)
                .attr("fill", format!("url(#{})", p.id(fig)))
                .attr("pointer-events", "none"),
        );
    }
    els
}

/// Every look a figure can show, in the order legends list them
/// (`None`: not judged).
pub const ALL: [Option<Status>; 7] = [
    Some(Status::Aligned),
    Some(Status::Untidy),
    Some(Status::Incomplete),
    Some(Status::Damaged),
    Some(Status::Misaligned),
    Some(Status::Inherits),
    None,
];

/// A legend of the statuses `seen` (each once, in the order of [`ALL`]):
/// swatch, glyph, word, as entries of `legend`.
pub fn legend(
    f: &mut Figure,
    fig: &str,
    seen: impl IntoIterator<Item = Option<Status>>,
    legend: &mut Legend,
) {
    let seen: Vec<Option<Status>> = seen.into_iter().collect();
    for s in ALL.into_iter().filter(|s| seen.contains(s)) {
        let l = look(s);
        let text = format!("{} {}", l.glyph, l.word);
        let data = [("status", l.word.to_string())];
        let key = |b: KeyBox| swatch_els(fig, l, (b.x, b.y, b.w, b.h), El::new("rect"));
        legend.entry(f, (l.word, &data), key, &[&text]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_its_own_colour_glyph_and_pattern() {
        let all = ALL;
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                let (la, lb) = (look(*a), look(*b));
                assert_ne!(la.fill, lb.fill);
                assert_ne!(la.word, lb.word);
                // Told apart without colour: by pattern, or by glyph;
                // except that a layer inheriting a misalignment is drawn
                // as misaligned on purpose, and told apart by its word.
                let inherits = [a, b].contains(&&Some(Status::Inherits))
                    && [a, b].contains(&&Some(Status::Misaligned));
                assert!(inherits || la.pattern != lb.pattern || la.glyph != lb.glyph);
            }
        }
        assert_eq!(words(Some(Status::Misaligned)), "✗ misaligned");
        assert_eq!(words(Some(Status::Inherits)), "✗ inherits");
        assert_eq!(look(Some(Status::Inherits)).pattern, Some(Pattern::Hatch));
        assert_eq!(class(Some(Status::Untidy)), "status-untidy");
    }

    #[test]
    fn a_tint_runs_to_white() {
        assert_eq!(tint(Rgb(0, 100, 200), 1.0), Rgb(255, 255, 255));
        assert_eq!(tint(Rgb(0, 100, 200), 0.0), Rgb(0, 100, 200));
    }
}
