//! A test of drawn figures: no two legend entries overlap and each lies
//! inside its figure, judged by the same text measure that laid them out.

use super::text::text_width;

/// A box: left, top, right, bottom.
type Box4 = (f64, f64, f64, f64);

fn attr(tag: &str, name: &str) -> Option<f64> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = tag[start..].find('"')?;
    tag[start..start + len].parse().ok()
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The box of one element (`tag` is its opening tag, `rest` what follows).
fn element(tag: &str, rest: &str) -> Option<Box4> {
    let name = tag[1..].split([' ', '>', '/']).next()?;
    let a = |n| attr(tag, n);
    match name {
        "rect" => {
            let (x, y) = (a("x")?, a("y")?);
            Some((x, y, x + a("width")?, y + a("height")?))
        }
        "line" => {
            let (x1, x2, y1, y2) = (a("x1")?, a("x2")?, a("y1")?, a("y2")?);
            Some((x1.min(x2), y1.min(y2), x1.max(x2), y1.max(y2)))
        }
        "circle" => {
            let (x, y, r) = (a("cx")?, a("cy")?, a("r")?);
            Some((x - r, y - r, x + r, y + r))
        }
        "polygon" => {
            let start = tag.find(" points=\"")? + 9;
            let len = tag[start..].find('"')?;
            let nums: Vec<f64> = tag[start..start + len]
                .split([' ', ','])
                .filter_map(|n| n.parse().ok())
                .collect();
            let xs = nums.iter().step_by(2);
            let ys = nums.iter().skip(1).step_by(2);
            let (x0, x1) = xs.fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
            let (y0, y1) = ys.fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
            Some((x0, y0, x1, y1))
        }
        "text" => {
            let text = unescape(&rest[..rest.find("</text>")?]);
            let size = a("font-size").unwrap_or(11.0);
            let w = text_width(&text, size);
            let x = a("x")?;
            let x0 = if tag.contains("text-anchor=\"middle\"") {
                x - w / 2.0
            } else if tag.contains("text-anchor=\"end\"") {
                x - w
            } else {
                x
            };
            let y = a("y")?;
            Some((x0, y - size * 0.8, x0 + w, y + size * 0.2))
        }
        _ => None,
    }
}

/// The box around each legend entry of one figure's markup.
fn legend_boxes(svg: &str) -> Vec<(String, Box4)> {
    let mut boxes = Vec::new();
    let mut from = 0;
    while let Some(i) = svg[from..].find("<g class=\"legend-item\"") {
        let start = from + i;
        let end = start + svg[start..].find("</g>").expect("the entry ends");
        let entry = &svg[start..end];
        let name = entry.split('"').nth(3).unwrap_or("").to_string();
        let mut b: Option<Box4> = None;
        for (k, _) in entry.match_indices('<').skip(1) {
            let close = k + entry[k..].find('>').expect("the tag ends");
            let tag = &entry[k..=close];
            if let Some(e) = element(tag, &entry[close + 1..]) {
                b = Some(b.map_or(e, |b| {
                    (b.0.min(e.0), b.1.min(e.1), b.2.max(e.2), b.3.max(e.3))
                }));
            }
        }
        boxes.extend(b.map(|b| (name, b)));
        from = end;
    }
    boxes
}

/// Fails when, in any figure of `page`, two legend entries overlap or one
/// reaches past the figure's left or right edge. Returns how many
/// entries it looked at.
pub fn assert_legends_clear(page: &str) -> usize {
    let mut seen = 0;
    for svg in page.split("<svg").skip(1) {
        let svg = &svg[..svg.find("</svg>").unwrap_or(svg.len())];
        let width = attr(svg, "width").expect("a figure has a width");
        let boxes = legend_boxes(svg);
        for (i, (a, ab)) in boxes.iter().enumerate() {
            assert!(
                ab.0 >= 0.0 && ab.2 <= width,
                "legend entry {a} {ab:?} leaves the figure (0 to {width})"
            );
            for (b, bb) in &boxes[i + 1..] {
                let apart = ab.2 <= bb.0 + 0.5
                    || bb.2 <= ab.0 + 0.5
                    || ab.3 <= bb.1 + 0.5
                    || bb.3 <= ab.1 + 0.5;
                assert!(apart, "legend entries {a} {ab:?} and {b} {bb:?} overlap");
            }
        }
        seen += boxes.len();
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::super::legend::{swatch, KeyBox, Legend};
    use super::*;
    use crate::report::html::svg::Figure;

    #[test]
    fn the_check_catches_overlapping_and_escaping_entries() {
        let rect = |b: KeyBox| vec![swatch(b, "#fff", "#000")];
        let mut f = Figure::new("f", 300.0, 100.0, "t");
        let mut l = Legend::across(10.0, 40.0);
        l.entry(&mut f, ("a", &[]), rect, &["first"]);
        l.entry(&mut f, ("b", &[]), rect, &["second"]);
        assert_eq!(assert_legends_clear(&f.finish()), 2);
        // Two legends drawn over each other.
        let mut f = Figure::new("f", 300.0, 100.0, "t");
        Legend::across(10.0, 40.0).entry(&mut f, ("a", &[]), rect, &["first"]);
        Legend::across(30.0, 40.0).entry(&mut f, ("b", &[]), rect, &["second"]);
        let page = f.finish();
        let overlap = std::panic::catch_unwind(|| assert_legends_clear(&page));
        assert!(overlap.is_err());
        // An entry past the right edge.
        let mut f = Figure::new("f", 60.0, 100.0, "t");
        Legend::across(10.0, 40.0).entry(&mut f, ("a", &[]), rect, &["a long entry"]);
        let page = f.finish();
        assert!(std::panic::catch_unwind(|| assert_legends_clear(&page)).is_err());
    }
}
