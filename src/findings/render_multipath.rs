//! The sentence of `multipath-path` (a path device named on the command
//! line): kept apart from `render.rs`, which reads only the facts the
//! same way.

use super::facts::Facts;

fn text(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("?")
}

/// "one path of the multipath map mpatha (/dev/mapper/mpatha, dm-0) ...".
pub fn multipath_path(f: &Facts) -> String {
    format!(
        "one path of the multipath map {} ({}, {}): the same disk, judged as the map (check with no target lists the map, with its paths, and no path); change its table on the map, never on a path",
        text(&f.map_name),
        text(&f.map_node),
        text(&f.map_kernel_name)
    )
}
