//! The answer first: B/A over every cell as a sentence, then a table of
//! each pattern's geometric mean of B/A with its 95 % interval. The
//! numbers are in `data-*` attributes for tests and scripts.

use crate::compare::ProbeComparison;
use crate::compare::ScopeRatio;
use crate::report::columns::{self, Column};
use crate::report::html::svg::esc;
use std::fmt::Write;

fn num(x: Option<f64>) -> String {
    x.map_or(String::new(), |v| format!("{v:.4}"))
}

/// `<p class="answer" data-scope="overall" ...>sentence</p>` (`class`
/// `answer note` for a pattern's, in smaller type).
fn sentence(class: &str, scope: &str, s: &ScopeRatio) -> String {
    let ci = s.ci95;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<p class=\"{class}\" data-scope=\"{}\" data-direction=\"{}\" data-cells=\"{}\" data-geo-mean=\"{}\" data-ci-low=\"{}\" data-ci-high=\"{}\"><strong>{}</strong></p>",
        esc(scope),
        s.direction,
        s.cells,
        num(s.geo_mean),
        num(ci.map(|c| c[0])),
        num(ci.map(|c| c[1])),
        esc(&s.sentence)
    );
    out
}

/// The overall sentence, and the per-pattern table when there are several.
pub fn section(id: &str, p: &ProbeComparison) -> String {
    if p.overall.sentence.is_empty() {
        return String::new();
    }
    let mut s = sentence("answer", "overall", &p.overall);
    for x in &p.patterns {
        let scope = x.pattern.map_or("all".into(), |q| q.to_string());
        s.push_str(&sentence("answer note", &scope, x));
    }
    let cols = pattern_columns();
    s.push_str(&columns::html(
        &format!("{id}-patterns"),
        "B/A per pattern: the geometric mean over the cells both runs measured, 95 % t interval over the cells",
        &cols.iter().collect::<Vec<_>>(),
        &p.patterns.iter().collect::<Vec<_>>(),
    ));
    s
}

/// A ratio with three decimals, `-` when there is none.
fn three(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}

/// Each pattern's B/A: the cells, their geometric mean, its interval and
/// the direction it says.
fn pattern_columns() -> Vec<Column<ScopeRatio>> {
    type P = Column<ScopeRatio>;
    vec![
        P::html_only("pattern", "pattern", |x| {
            x.pattern.map_or("all".into(), |q| q.to_string())
        }),
        P::html_only("cells", "cells", |x| x.cells.to_string()).num(),
        P::html_only("b_over_a", "B/A", |x| three(x.geo_mean)).num(),
        P::html_only("ci95", "95 % interval", |x| match x.ci95 {
            Some([lo, hi]) => format!("{lo:.3}–{hi:.3}"),
            None => "-".into(),
        })
        .num(),
        P::html_only("direction", "direction", |x| x.direction.to_string()),
    ]
}

#[cfg(test)]
mod tests {
    use crate::compare::{fixtures, Comparison};

    #[test]
    fn the_answer_comes_with_its_numbers() {
        let Comparison::Probe(p) = fixtures::slower() else {
            unreachable!()
        };
        let s = super::section("run1", &p);
        assert!(s.starts_with(
            "<p class=\"answer\" data-scope=\"overall\" data-direction=\"slower\" data-cells=\"3\" data-geo-mean=\"0.6300\""
        ), "{s}");
        assert!(s.contains("<p class=\"answer note\" data-scope=\"randwrite\" data-direction=\"slower\" data-cells=\"2\" data-geo-mean=\"0.5000\""), "{s}");
        assert!(s.contains("id=\"run1-patterns\""));
        assert!(s.contains("<strong>B is 2.0× slower than A for randwrite in every cell, ["));
    }
}
