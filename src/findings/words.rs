//! The small words every finding's sentence is made with: a count that
//! may be missing, a name that may be, how many I/Os were affected and
//! who issued them (`render.rs` and the `render_*.rs` files share them).

use super::facts::Facts;

pub fn n(v: Option<u64>) -> u64 {
    v.unwrap_or(0)
}

pub fn text(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("?")
}

/// "120 of 1000 writes (12.0 %)".
pub fn counted(f: &Facts, what: &str) -> String {
    format!(
        "{} of {} {what} ({:.1} %)",
        n(f.affected_ios),
        n(f.ios),
        f.share.unwrap_or(0.0) * 100.0
    )
}

/// Who submitted most of them, when `watch` counted it:
/// "; most from fio (990) and dd in /test.slice (10)".
pub fn who(f: &Facts) -> String {
    let names: Vec<String> = f
        .submitters
        .iter()
        .map(|s| match s.cgroup.as_deref() {
            Some(c) if c != "/" => format!("{} in {c} ({})", s.name, s.affected_ios),
            _ => format!("{} ({})", s.name, s.affected_ios),
        })
        .collect();
    match names.as_slice() {
        [] => String::new(),
        [one] => format!("; most from {one}"),
        [first @ .., last] => format!("; most from {} and {last}", first.join(", ")),
    }
}
