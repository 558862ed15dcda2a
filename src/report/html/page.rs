//! The HTML page around the figures: one self-contained file. Its CSS is
//! inline, its figures are inline SVG, and its Content-Security-Policy
//! forbids every request (no fonts, images, scripts or styles from
//! anywhere), so it opens offline and tells no host it was opened.

use super::svg::esc;
use std::borrow::Cow;
use std::fmt::Write;

/// The most characters of a name (a path, a layer's path) repeated in
/// every mark and row about it. Real names are far shorter, but a saved
/// document may hold a 50 KB path, which written into each of thousands
/// of marks would make the page quadratic in its input. The full name is
/// written where its target is introduced (its heading, the environment
/// table).
pub const NAME_MAX: usize = 256;

/// `name` as repeated in marks and rows: whole up to `NAME_MAX`
/// characters, else its start and its end around an ellipsis.
pub fn brief(name: &str) -> Cow<'_, str> {
    let n = name.chars().count();
    if n <= NAME_MAX {
        return Cow::Borrowed(name);
    }
    let head: String = name.chars().take(NAME_MAX / 2 - 1).collect();
    let tail: String = name.chars().skip(n - NAME_MAX / 2).collect();
    Cow::Owned(format!("{head}…{tail}"))
}

/// Forbids loading anything: only the page's own inline style.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const CSS: &str = "\
body{font-family:'DejaVu Sans',Verdana,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#111;background:#fff}\
h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}h3{font-size:1.05em;margin-top:1.5em}\
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}\
th{background:#f2f2f2}td.num{text-align:right;font-variant-numeric:tabular-nums}\
.figure{display:block;margin:.8em 0;max-width:100%;height:auto;border:1px solid #e4e4e4}\
.sev-error{color:#b00020;font-weight:bold}.sev-warning{color:#8a5a00;font-weight:bold}.sev-info{color:#0b5394}\
.status-misaligned,.status-inherits,.status-damaged{color:#b00020;font-weight:bold}.status-untidy{color:#8a5a00;font-weight:bold}.status-aligned{color:#1b6e20;font-weight:bold}.status-incomplete,.status-none{color:#555;font-weight:bold}\
.note{color:#444;font-size:.9em}details{margin:.5em 0}summary{cursor:pointer;color:#0b5394}\
footer{margin-top:3em;color:#666;font-size:.8em}";

/// A table cell: text, or a number (right-aligned).
pub enum Td {
    Text(String),
    Num(String),
    /// Text with a CSS class (`sev-error`, `status-aligned`).
    Class(String, String),
}

impl Td {
    pub fn text(s: impl Into<String>) -> Td {
        Td::Text(s.into())
    }

    pub fn num(s: impl ToString) -> Td {
        Td::Num(s.to_string())
    }
}

/// A table with a caption, for the numbers behind a figure.
pub fn table(id: &str, caption: &str, headers: &[&str], rows: &[Vec<Td>]) -> String {
    let mut s = format!(
        "<table id=\"{}\"><caption>{}</caption><thead><tr>",
        esc(id),
        esc(caption)
    );
    for h in headers {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr></thead><tbody>\n");
    for row in rows {
        s.push_str("<tr>");
        for td in row {
            let _ = match td {
                Td::Text(t) => write!(s, "<td>{}</td>", esc(t)),
                Td::Num(t) => write!(s, "<td class=\"num\">{}</td>", esc(t)),
                Td::Class(c, t) => write!(s, "<td class=\"{}\">{}</td>", esc(c), esc(t)),
            };
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table>\n");
    s
}

/// A table folded away under a summary line (long tables of numbers).
pub fn folded(summary: &str, inner: &str) -> String {
    format!(
        "<details><summary>{}</summary>\n{inner}</details>\n",
        esc(summary)
    )
}

/// A paragraph of text.
pub fn para(text: &str) -> String {
    format!("<p>{}</p>\n", esc(text))
}

/// A note in smaller type.
pub fn note(text: &str) -> String {
    format!("<p class=\"note\">{}</p>\n", esc(text))
}

/// A heading (`level` 2 or 3) with an id for links.
pub fn heading(level: u8, id: &str, text: &str) -> String {
    let level = level.clamp(2, 4);
    format!("<h{level} id=\"{}\">{}</h{level}>\n", esc(id), esc(text))
}

/// The whole document: `title`, then the sections in order.
pub fn document(title: &str, sources: &[String], sections: &[String]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"generator\" content=\"diskalign {v}\">\
         <title>{t}</title><style>{CSS}</style></head>\n<body>\n<h1>{t}</h1>\n",
        v = env!("CARGO_PKG_VERSION"),
        t = esc(title),
    );
    for section in sections {
        s.push_str("<section>\n");
        s.push_str(section);
        s.push_str("</section>\n");
    }
    let _ = write!(
        s,
        "<footer>Made by diskalign {} from {}. Every figure's numbers are also in a table under it. \
         This file loads nothing from anywhere.</footer>\n</body></html>\n",
        env!("CARGO_PKG_VERSION"),
        esc(&sources.join(", "))
    );
    s
}

/// What a finding is about, each part shortened as `brief` does:
/// `/dev/loop1, partition 1, PV abc` (`Subject::parts`).
pub fn subject(s: &crate::findings::Subject) -> String {
    let parts: Vec<String> = s.parts().iter().map(|p| brief(p).into_owned()).collect();
    parts.join(crate::findings::SUBJECT_SEPARATOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_forbids_every_request_and_escapes_its_title() {
        let d = document("a <b>", &["x.json".into()], &["<p>hi</p>".into()]);
        assert!(d.contains("Content-Security-Policy\" content=\"default-src 'none'"));
        assert!(d.contains("<title>a &lt;b&gt;</title>"));
        assert!(d.contains("<section>\n<p>hi</p></section>"));
        assert!(!d.contains("<script"));
        assert!(!d.contains("<link"));
    }

    #[test]
    fn long_names_keep_their_ends() {
        assert_eq!(brief("/dev/sdb"), "/dev/sdb");
        let long = format!("/dev/{}end", "x".repeat(1000));
        let b = brief(&long);
        assert_eq!(b.chars().count(), NAME_MAX);
        assert!(b.starts_with("/dev/xx"));
        assert!(b.ends_with("xxend") && b.contains('…'));
        let wide = "é".repeat(NAME_MAX + 1);
        assert_eq!(brief(&wide).chars().count(), NAME_MAX);
    }

    #[test]
    fn tables_escape_and_align_numbers() {
        let t = table(
            "t",
            "cap",
            &["a", "b"],
            &[vec![Td::text("<x>"), Td::num(12)]],
        );
        assert!(t.contains("<td>&lt;x&gt;</td><td class=\"num\">12</td>"));
    }
}
