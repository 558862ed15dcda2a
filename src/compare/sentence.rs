//! The sentence of a scope's B/A (overall.rs): the size and direction in
//! words a reader uses ("6.1× slower", "12 % slower"), the interval in
//! the same terms, where it holds ("in every cell" only when every cell
//! was decided that way) and how the cells' own decisions split.

use super::probe::{Direction, ScopeRatio};

/// `3.2` below 10, `48` from 10 on.
fn num(x: f64) -> String {
    match x.abs() < 10.0 {
        true => format!("{x:.1}"),
        false => format!("{x:.0}"),
    }
}

/// The ratio `g` and its interval as a size: `6.1× slower`, `[5.4, 6.9]`
/// for factors of 1.5 or more, `12 % slower`, `[8.0, 15] %` below.
pub fn magnitude(g: f64, ci: [f64; 2]) -> (String, String) {
    let (lo, hi) = (ci[0], ci[1]);
    if g < 1.0 && 1.0 / g >= 1.5 {
        let f = 1.0 / g;
        (
            format!("{f:.1}× slower"),
            format!("[{:.1}, {:.1}]", 1.0 / hi, 1.0 / lo),
        )
    } else if g < 1.0 {
        (
            format!("{} % slower", num((1.0 - g) * 100.0)),
            format!(
                "[{}, {}] %",
                num((1.0 - hi) * 100.0),
                num((1.0 - lo) * 100.0)
            ),
        )
    } else if g >= 1.5 {
        (format!("{g:.1}× faster"), format!("[{lo:.1}, {hi:.1}]"))
    } else {
        (
            format!("{} % faster", num((g - 1.0) * 100.0)),
            format!(
                "[{}, {}] %",
                num((lo - 1.0) * 100.0),
                num((hi - 1.0) * 100.0)
            ),
        )
    }
}

/// How the cells' own decisions split: `2 slower, 1 the same`.
fn parts(s: &ScopeRatio) -> Vec<String> {
    let kinds = [
        (s.slower, "slower"),
        (s.faster, "faster"),
        (s.same, "the same"),
        (s.open, "undecided"),
        (s.untested, "untested"),
    ];
    kinds
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{n} {w}"))
        .collect()
}

/// `: of the cells, 12 slower, 6 undecided` (nothing when one kind has
/// them all).
fn split(s: &ScopeRatio) -> String {
    let p = parts(s);
    match p.len() {
        0 | 1 => String::new(),
        _ => format!(": of the cells, {}", p.join(", ")),
    }
}

/// Where: `in every cell` when every cell was decided in the direction
/// of the whole, else `over 18 cells` (or `in the one cell`).
fn place(s: &ScopeRatio) -> String {
    let all = match s.direction {
        Direction::Slower => s.slower,
        Direction::Faster => s.faster,
        Direction::Same => s.same,
        Direction::Undecided => 0,
    };
    match s.cells {
        1 => "in the one cell".into(),
        n if all == n => "in every cell".into(),
        n => format!("over {n} cells"),
    }
}

fn ratio(g: f64, ci: [f64; 2]) -> String {
    format!("B/A {g:.2}, [{:.2}, {:.2}]", ci[0], ci[1])
}

/// The sentence of `s`; `label` names the scope (` for randwrite`, or
/// empty for every cell).
pub fn of(s: &ScopeRatio, min_effect: f64, label: &str) -> String {
    let Some(g) = s.geo_mean else {
        return format!("no cell both runs measured{label}");
    };
    let (place, split) = (place(s), split(s));
    let bound = format!("{:.0} %", min_effect * 100.0);
    let Some(ci) = s.ci95 else {
        let (size, _) = magnitude(g, [g, g]);
        return format!("B is {size} than A{label} {place}, without an interval (no replicates)");
    };
    match s.direction {
        Direction::Slower | Direction::Faster => {
            let (size, range) = magnitude(g, ci);
            format!("B is {size} than A{label} {place}, {range}{split}")
        }
        Direction::Same if s.slower + s.faster > 0 => format!(
            "B is the same as A{label} within ±{bound} on the geometric mean {place}: {}, but not in every cell: of the cells, {}",
            ratio(g, ci),
            parts(s).join(", ")
        ),
        Direction::Same => format!(
            "B is the same as A{label} within ±{bound} {place}: {}{split}",
            ratio(g, ci)
        ),
        Direction::Undecided => format!(
            "B cannot be told from A{label} {place}: {}, which holds both no difference and one of {bound} or more{split}",
            ratio(g, ci)
        ),
    }
}
