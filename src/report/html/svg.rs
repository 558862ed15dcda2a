//! A small SVG writer: the figures are rectangles, lines, polylines,
//! polygons and text, each optionally with a `<title>` (the browser's own
//! hover tooltip, no script needed) and `data-*` attributes (what the
//! browser tests read back from the DOM). Colours and fonts are
//! presentation attributes, not CSS classes, so a figure cut out of the
//! page (docs/img/) still draws the same.

use std::fmt::Write;

/// Escapes text for an element's content or a quoted attribute. The
/// characters XML 1.0 forbids (control characters other than tab and
/// line breaks, U+FFFE, U+FFFF), which a saved document's strings may
/// hold, become U+FFFD: a figure cut out by `--figures` is an XML file,
/// and one such character would make it unreadable.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            _ => out.push(c),
        }
    }
    out
}

/// A coordinate or length, to 0.1 px: enough on screen and keeps the
/// file small.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "0".into();
    }
    let r = (x * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// One element under construction.
pub struct El {
    name: &'static str,
    attrs: String,
    title: Option<String>,
    text: Option<String>,
}

impl El {
    pub fn new(name: &'static str) -> El {
        El {
            name,
            attrs: String::new(),
            title: None,
            text: None,
        }
    }

    /// A text attribute (escaped). Setting one twice is a mistake: a
    /// figure saved alone (`--figures`) is XML, where it is an error.
    pub fn attr(mut self, key: &str, value: impl std::fmt::Display) -> El {
        debug_assert!(
            !self.attrs.contains(&format!(" {key}=\"")),
            "<{}> gets {key} twice",
            self.name
        );
        let _ = write!(self.attrs, " {key}=\"{}\"", esc(&value.to_string()));
        self
    }

    /// A numeric attribute, rounded to 0.1.
    pub fn at(self, key: &str, value: f64) -> El {
        let v = num(value);
        self.attr(key, v)
    }

    /// The hover text.
    pub fn title(mut self, tip: impl Into<String>) -> El {
        self.title = Some(tip.into());
        self
    }

    /// The text content (for `text`).
    pub fn text(mut self, t: impl Into<String>) -> El {
        self.text = Some(t.into());
        self
    }

    pub fn render(&self) -> String {
        let mut s = format!("<{}{}", self.name, self.attrs);
        if self.title.is_none() && self.text.is_none() {
            s.push_str("/>");
            return s;
        }
        s.push('>');
        if let Some(t) = &self.title {
            let _ = write!(s, "<title>{}</title>", esc(t));
        }
        if let Some(t) = &self.text {
            s.push_str(&esc(t));
        }
        let _ = write!(s, "</{}>", self.name);
        s
    }
}

/// Points of a polyline or polygon.
pub fn points(pts: &[(f64, f64)]) -> String {
    pts.iter()
        .map(|(x, y)| format!("{},{}", num(*x), num(*y)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A figure: a titled SVG of a fixed size, drawn into in order.
pub struct Figure {
    pub width: f64,
    pub height: f64,
    id: String,
    title: String,
    body: String,
}

impl Figure {
    /// `id` names the figure in the page (`figure-probe-heatmap-randread`)
    /// and `title` is its accessible title, also drawn at the top.
    pub fn new(id: &str, width: f64, height: f64, title: &str) -> Figure {
        let mut f = Figure {
            width,
            height,
            id: id.to_string(),
            title: title.to_string(),
            body: String::new(),
        };
        f.add(
            El::new("text")
                .at("x", 8.0)
                .at("y", 18.0)
                .attr("font-size", 14)
                .attr("font-weight", "bold")
                .text(title),
        );
        f
    }

    pub fn add(&mut self, el: El) {
        self.body.push_str(&el.render());
        self.body.push('\n');
    }

    /// Raw markup (a group opened or closed).
    pub fn raw(&mut self, markup: &str) {
        self.body.push_str(markup);
    }

    /// Opens a `<g>` with `data-*` attributes (`[("cell", "4096@512")]`).
    pub fn group(&mut self, class: &str, data: &[(&str, String)]) {
        let mut s = format!("<g class=\"{}\"", esc(class));
        for (k, v) in data {
            let _ = write!(s, " data-{k}=\"{}\"", esc(v));
        }
        s.push('>');
        self.body.push_str(&s);
    }

    pub fn end_group(&mut self) {
        self.body.push_str("</g>\n");
    }

    pub fn finish(self) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{id}\" class=\"figure\" role=\"img\" \
             aria-labelledby=\"{id}-title\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" \
             font-family=\"DejaVu Sans, Verdana, sans-serif\" font-size=\"11\">\
             <title id=\"{id}-title\">{title}</title>\n\
             <rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n{body}</svg>",
            id = esc(&self.id),
            w = num(self.width),
            h = num(self.height),
            title = esc(&self.title),
            body = self.body,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_in_text_and_attributes() {
        let el = El::new("rect").attr("data-x", "a\"<b>").title("1 < 2 & 3");
        let s = el.render();
        assert_eq!(
            s,
            "<rect data-x=\"a&quot;&lt;b&gt;\"><title>1 &lt; 2 &amp; 3</title></rect>"
        );
    }

    #[test]
    fn characters_xml_forbids_are_replaced() {
        assert_eq!(
            esc("a\u{1}b\u{1b}[31m\u{ffff}"),
            "a\u{fffd}b\u{fffd}[31m\u{fffd}"
        );
        assert_eq!(esc("tab\tline\n"), "tab\tline\n");
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(f64::NAN), "0");
        assert_eq!(points(&[(0.0, 1.25), (2.0, 3.0)]), "0,1.3 2,3");
    }

    #[test]
    fn a_figure_is_one_titled_svg() {
        let f = Figure::new("f1", 100.0, 50.0, "IOPS <by> offset");
        let s = f.finish();
        assert!(s.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"f1\""));
        assert!(s.contains("<title id=\"f1-title\">IOPS &lt;by&gt; offset</title>"));
        assert!(s.ends_with("</svg>"));
    }
}
