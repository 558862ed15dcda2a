//! One lane of a boundary zoom: a grid's lines in the window, the
//! distances from the boundary to the nearest ones (written at the edge
//! when outside the window), and the verdict in words.

use super::super::kit::{size_to_fit, text_width};
use super::super::scale::Linear;
use super::super::svg::{El, Figure};
use super::grid::{self, Grid};
use crate::units::human;

/// Where the lines are drawn, in px across the zoom.
pub const RULER: (f64, f64) = (112.0, 432.0);
const VERDICT_X: f64 = 440.0;
const LANE_H: f64 = 24.0;

/// One grid's lane: its lines in the window (or the nearest ones written
/// out when none falls inside), the distances, and the verdict.
pub fn draw(f: &mut Figure, g: &Grid, at: u64, (lo, hi): (u64, u64), x: &Linear, y: f64) {
    let pos = grid::position(at, g);
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    f.group(
        "grid",
        &[
            ("grid", g.key.to_string()),
            ("grain", g.grain.to_string()),
            ("grid-offset", g.offset.to_string()),
            ("below", opt(pos.below)),
            ("above", opt(pos.above)),
            ("on", pos.on_line().to_string()),
        ],
    );
    lane_label(f, g, y);
    f.add(
        El::new("rect")
            .at("x", RULER.0)
            .at("y", y)
            .at("width", RULER.1 - RULER.0)
            .at("height", LANE_H)
            .attr("fill", "#f5f5f5")
            .title(format!("{} grid: {}", g.label, grid::describe(at, g))),
    );
    let cap = ((RULER.1 - RULER.0) / 4.0) as usize;
    let bx = x.map(at as f64);
    match grid::lines(lo, hi, g, cap) {
        Ok(lines) => {
            for l in lines {
                let near = Some(l) == pos.below || Some(l) == pos.above;
                grid_line(f, g, l, x, y, near);
            }
            if !pos.on_line() {
                let sides = [(pos.below, true), (pos.above, false)];
                for (line, left) in sides {
                    let Some(line) = line else { continue };
                    if (lo..=hi).contains(&line) {
                        distance(f, at, line, x, y);
                    } else {
                        far_line(f, at, line, left, bx, y);
                    }
                }
            }
        }
        Err(n) => dense(f, g, n, bx, y),
    }
    verdict(f, g, at, pos, y);
    f.end_group();
}

fn grid_line(f: &mut Figure, g: &Grid, l: u64, x: &Linear, y: f64, near: bool) {
    let px = x.map(l as f64);
    f.add(
        El::new("line")
            .at("x1", px)
            .at("x2", px)
            .at("y1", y)
            .at("y2", y + LANE_H)
            .attr("stroke", if near { "#0072b2" } else { "#8a8a8a" })
            .attr("stroke-width", if near { "2" } else { "1" })
            .title(format!("{} line at byte {l}", g.label)),
    );
}

/// The bytes between the boundary and a nearest line in the window,
/// written between them where there is room.
fn distance(f: &mut Figure, at: u64, line: u64, x: &Linear, y: f64) {
    let (a, b) = (x.map(line as f64), x.map(at as f64));
    let text = format!("{} B", line.abs_diff(at));
    if (a - b).abs() < text_width(&text, 9.0) + 6.0 {
        return;
    }
    f.add(
        El::new("text")
            .at("x", (a + b) / 2.0)
            .at("y", y + LANE_H / 2.0 + 3.0)
            .attr("text-anchor", "middle")
            .attr("font-size", 9)
            .text(text),
    );
}

/// A nearest line outside the window: where it is, written at the lane's
/// end on its side, in smaller type where the room beside the boundary
/// (at `bx` px) is short.
fn far_line(f: &mut Figure, at: u64, line: u64, left: bool, bx: f64, y: f64) {
    let d = line.abs_diff(at);
    let (text, px, anchor) = if left {
        (format!("◀ {line} (−{d} B)"), RULER.0 + 4.0, "start")
    } else {
        (format!("{line} (+{d} B) ▶"), RULER.1 - 4.0, "end")
    };
    let room = (bx - px).abs() - 6.0;
    let size = size_to_fit(&text, room, (6.5, 9.0));
    f.add(
        El::new("text")
            .at("x", px)
            .at("y", y + LANE_H / 2.0 + 3.0)
            .attr("text-anchor", anchor)
            .at("font-size", size)
            .attr("fill", "#0b5394")
            .text(text),
    );
}

/// The lane's name, and where its grid starts when not at byte 0.
fn lane_label(f: &mut Figure, g: &Grid, y: f64) {
    let shifted = g.offset != 0;
    f.add(
        El::new("text")
            .at("x", RULER.0 - 6.0)
            .at("y", y + LANE_H / 2.0 + if shifted { -1.0 } else { 4.0 })
            .attr("text-anchor", "end")
            .attr("font-size", 10)
            .text(&g.label),
    );
    if shifted {
        f.add(
            El::new("text")
                .at("x", RULER.0 - 6.0)
                .at("y", y + LANE_H / 2.0 + 9.0)
                .attr("text-anchor", "end")
                .attr("font-size", 8.5)
                .attr("fill", "#555555")
                .text(format!("from byte {}", g.offset)),
        );
    }
}

/// More lines than can be drawn apart: a band, and how many, written on
/// the side of the boundary (at `bx` px) with more room.
fn dense(f: &mut Figure, g: &Grid, n: u64, bx: f64, y: f64) {
    f.add(
        El::new("rect")
            .at("x", RULER.0)
            .at("y", y + 4.0)
            .at("width", RULER.1 - RULER.0)
            .at("height", LANE_H - 8.0)
            .attr("fill", "#8a8a8a")
            .attr("fill-opacity", "0.25"),
    );
    let text = format!(
        "a line every {} ({n} here: too dense to draw)",
        human(g.grain)
    );
    let right = bx - RULER.0 < RULER.1 - bx;
    let (px, anchor) = if right {
        (RULER.1 - 4.0, "end")
    } else {
        (RULER.0 + 4.0, "start")
    };
    let room = (bx - px).abs() - 6.0;
    f.add(
        El::new("text")
            .at("x", px)
            .at("y", y + LANE_H / 2.0 + 3.0)
            .attr("text-anchor", anchor)
            .at("font-size", size_to_fit(&text, room, (6.5, 9.0)))
            .text(text),
    );
}

/// The lane's verdict in words: on a line, or how far past one.
fn verdict(f: &mut Figure, g: &Grid, at: u64, pos: grid::Position, y: f64) {
    let hard = matches!(g.key, "4k" | "physical");
    let (text, colour) = match pos.past(at) {
        _ if pos.on_line() => ("✓ on a line".to_string(), "#1b6e20"),
        Some(d) => (
            format!("✗ {d} B past"),
            if hard { "#b00020" } else { "#8a5a00" },
        ),
        None => ("✗ before the grid".to_string(), "#b00020"),
    };
    f.add(
        El::new("text")
            .at("x", VERDICT_X)
            .at("y", y + LANE_H / 2.0 + 4.0)
            .attr("font-weight", "bold")
            .attr("fill", colour)
            .text(text),
    );
}
