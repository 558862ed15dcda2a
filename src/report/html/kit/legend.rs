//! The one legend builder: entries of a key (a swatch, a line, a dot, a
//! mark) and words, laid out across a row or down a column, each entry a
//! `<g class="legend-item" data-legend="NAME">` the tests can find. The
//! words are measured with [`text_width`], so an entry across a row
//! starts where the one before it ends.

use super::super::svg::{El, Figure};
use super::text::{caption, label, text_width};

/// The key's box: 14 × 11 px, its words 4 px after it.
pub const KEY_W: f64 = 14.0;
pub const KEY_H: f64 = 11.0;
const KEY_GAP: f64 = 4.0;
/// Room between entries across a row.
const ENTRY_GAP: f64 = 14.0;
/// One line of words down a column.
const LINE: f64 = 14.0;
/// Room after an entry down a column.
const ENTRY_SPACE: f64 = 6.0;

/// How the entries follow each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    Across,
    Down,
}

/// A legend being drawn; `y` is the baseline of the next entry's first
/// line of words.
pub struct Legend {
    left: f64,
    x: f64,
    y: f64,
    flow: Flow,
    key_w: f64,
}

/// Where an entry's key goes: its box's left, top, width and height.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyBox {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl KeyBox {
    /// The middle of its height.
    pub fn mid_y(&self) -> f64 {
        self.y + self.h / 2.0
    }
}

impl Legend {
    /// A legend of entries side by side from `(x, y)` rightward.
    pub fn across(x: f64, y: f64) -> Legend {
        Legend {
            left: x,
            x,
            y,
            flow: Flow::Across,
            key_w: KEY_W,
        }
    }

    /// A legend of entries one under the other from `(x, y)` down.
    pub fn down(x: f64, y: f64) -> Legend {
        Legend {
            left: x,
            x,
            y,
            flow: Flow::Down,
            key_w: KEY_W,
        }
    }

    /// Keys this wide (a line of a series is wider than a swatch).
    pub fn key_width(mut self, w: f64) -> Legend {
        self.key_w = w;
        self
    }

    /// A bold heading line (down a column).
    pub fn heading(&mut self, f: &mut Figure, text: &str) {
        caption(f, self.left, self.y, text);
        self.next_line(text_width(text, 11.0), 1);
    }

    /// Words without a key, from the legend's left (down a column) or
    /// after the last entry (across).
    pub fn note(&mut self, f: &mut Figure, lines: &[&str]) {
        let x = self.x;
        for (i, l) in lines.iter().enumerate() {
            label(f, x, self.y + LINE * i as f64, l);
        }
        self.next_line(widest(lines), lines.len());
    }

    /// One entry `name`: its key drawn by `key` in the key's box, then
    /// its words, each of `lines` on a line of its own; `data` adds
    /// attributes to the entry's group.
    pub fn entry(
        &mut self,
        f: &mut Figure,
        (name, data): (&str, &[(&str, String)]),
        key: impl FnOnce(KeyBox) -> Vec<El>,
        lines: &[&str],
    ) {
        let mut group = vec![("legend", name.to_string())];
        group.extend(data.iter().cloned());
        f.group("legend-item", &group);
        let b = KeyBox {
            x: self.x,
            y: self.y - 9.0,
            w: self.key_w,
            h: KEY_H,
        };
        for el in key(b) {
            f.add(el);
        }
        let tx = self.x + self.key_w + KEY_GAP;
        for (i, l) in lines.iter().enumerate() {
            label(f, tx, self.y + LINE * i as f64, l);
        }
        f.end_group();
        self.next_line(self.key_w + KEY_GAP + widest(lines), lines.len());
    }

    fn next_line(&mut self, width: f64, lines: usize) {
        match self.flow {
            Flow::Across => self.x += width + ENTRY_GAP,
            Flow::Down => self.y += LINE * lines.max(1) as f64 + ENTRY_SPACE,
        }
    }

    /// Where the next entry across would start.
    pub fn x(&self) -> f64 {
        self.x
    }

    /// The baseline the next entry down would take.
    pub fn y(&self) -> f64 {
        self.y
    }
}

fn widest(lines: &[&str]) -> f64 {
    lines
        .iter()
        .map(|l| text_width(l, 11.0))
        .fold(0.0, f64::max)
}

/// A plain rectangle filling the key's box.
pub fn swatch(b: KeyBox, fill: &str, stroke: &str) -> El {
    El::new("rect")
        .at("x", b.x)
        .at("y", b.y)
        .at("width", b.w)
        .at("height", b.h)
        .attr("fill", fill)
        .attr("stroke", stroke)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_across_start_where_the_words_before_end() {
        let mut f = Figure::new("f", 600.0, 100.0, "t");
        let mut l = Legend::across(10.0, 40.0);
        let rect = |b: KeyBox| vec![swatch(b, "#fff", "#000")];
        l.entry(&mut f, ("sysfs", &[]), rect, &["sysfs"]);
        assert_eq!(l.x(), 10.0 + KEY_W + 4.0 + text_width("sysfs", 11.0) + 14.0);
        l.entry(&mut f, ("ioctl", &[]), rect, &["ioctl"]);
        let svg = f.finish();
        assert!(svg.contains("<g class=\"legend-item\" data-legend=\"sysfs\">"));
        assert!(
            svg.contains("<rect x=\"10\" y=\"31\" width=\"14\" height=\"11\""),
            "{svg}"
        );
    }

    #[test]
    fn entries_down_take_a_line_each() {
        let mut f = Figure::new("f", 600.0, 100.0, "t");
        let mut l = Legend::down(10.0, 40.0);
        l.heading(&mut f, "block size");
        assert_eq!(l.y(), 60.0);
        l.entry(&mut f, ("a", &[]), |_| vec![], &["one", "two"]);
        assert_eq!(l.y(), 60.0 + 28.0 + 6.0);
        l.note(&mut f, &["words"]);
        assert_eq!(l.x(), 10.0);
    }
}
