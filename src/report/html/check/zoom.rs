//! The boundary zooms: for each partition start and end, a window of a few
//! KiB around the byte, with one lane per grid (4 KiB, 1 MiB, the
//! physical or minimum I/O grain, the optimal I/O size) showing its lines
//! and how far the boundary lies from them.

use super::super::page::{self, Td};
use super::super::scale::Linear;
use super::super::svg::{El, Figure};
use super::axis;
use super::grid::{self, Grid};
use super::layout::{end_mark, start_mark};
use super::look::text_width;
use crate::findings::Status;
use crate::saved::check::{Partition, Target};
use crate::units::human;

const WIDTH: f64 = 560.0;
const RULER: (f64, f64) = (112.0, 432.0);
const VERDICT_X: f64 = 440.0;
const LANES_TOP: f64 = 62.0;
const LANE_H: f64 = 24.0;
const LANE_STEP: f64 = 30.0;
/// Partitions whose zooms are shown open; the rest are folded.
const OPEN: usize = 4;

/// One boundary: a partition's start, or its end (last byte + 1).
pub struct Boundary<'a> {
    pub part: &'a Partition,
    pub end: bool,
}

impl Boundary<'_> {
    pub fn at(&self) -> u64 {
        if self.end {
            self.part.end_bytes.saturating_add(1)
        } else {
            self.part.start_bytes
        }
    }

    fn which(&self) -> &'static str {
        if self.end {
            "end"
        } else {
            "start"
        }
    }
}

/// The zooms of target `t`, ids from `prefix` (`run1-zoom-0`): the
/// partitions that need a look open, the others folded, and the numbers.
pub fn section(prefix: &str, t: &Target) -> String {
    let parts: Vec<&Partition> = t
        .partitions
        .iter()
        .filter(|p| p.kind != "extended")
        .collect();
    if parts.is_empty() {
        return String::new();
    }
    let flagged = |p: &&Partition| {
        start_mark(p).is_some()
            || end_mark(p).is_some()
            || p.status.is_some_and(|s| s != Status::Aligned)
    };
    let mut open: Vec<&Partition> = parts.iter().copied().filter(flagged).take(OPEN).collect();
    if open.is_empty() {
        open.push(parts[0]);
    }
    let rest: Vec<&Partition> = parts
        .iter()
        .copied()
        .filter(|p| !open.iter().any(|o| std::ptr::eq(*o, *p)))
        .collect();
    let grids = grid::grids(&t.topology);
    let mut s = page::note(&format!(
        "Each zoom shows a window around one boundary with a lane per grid: 4 KiB and 1 MiB (judged whatever the device reports), the {} and {}. The black line is the boundary; the distances to the nearest lines are written out.",
        grids.get(2).map_or("physical grain".to_string(), |g| format!("{} grain", g.label)),
        grids.get(3).map_or("no optimal I/O size (0)".to_string(), |g| g.label.clone()),
    ));
    for p in &open {
        s.push_str(&pair(prefix, t, &grids, p));
    }
    if !rest.is_empty() {
        let inner: String = rest.iter().map(|p| pair(prefix, t, &grids, p)).collect();
        let what = match rest.len() {
            1 => "Zooms of the other partition's boundaries".to_string(),
            n => format!("Zooms of the other {n} partitions' boundaries"),
        };
        s.push_str(&page::folded(&what, &inner));
    }
    s.push_str(&page::folded(
        "The zooms' numbers",
        &table(prefix, t, &grids, &parts),
    ));
    s
}

/// A partition's start and end side by side.
fn pair(prefix: &str, t: &Target, grids: &[Grid], p: &Partition) -> String {
    let mut s = String::from("<div style=\"display:flex;flex-wrap:wrap;column-gap:12px\">\n");
    for end in [false, true] {
        let b = Boundary { part: p, end };
        s.push_str(&figure(
            &format!("{prefix}-p{}-{}", p.number, b.which()),
            t,
            grids,
            &b,
        ));
    }
    s.push_str("</div>\n");
    s
}

/// The zoom of one boundary.
pub fn figure(fig: &str, t: &Target, grids: &[Grid], b: &Boundary) -> String {
    let at = b.at();
    let (lo, hi) = grid::window(at, grids, t.size_bytes);
    let x = Linear::new((lo as f64, hi as f64), RULER);
    let axis_y = LANES_TOP + grids.len() as f64 * LANE_STEP + 2.0;
    let title = if b.end {
        format!(
            "Partition {} end (last byte + 1) at byte {at}",
            b.part.number
        )
    } else {
        format!("Partition {} start at byte {at}", b.part.number)
    };
    let mut f = Figure::new(fig, WIDTH, axis_y + 40.0, &title);
    f.group(
        "boundary",
        &[
            ("boundary", b.which().to_string()),
            ("offset", at.to_string()),
            ("partition", b.part.number.to_string()),
        ],
    );
    f.add(
        El::new("text")
            .at("x", 8.0)
            .at("y", 36.0)
            .attr("fill", "#333333")
            .text(format!(
                "window bytes {lo}–{hi}; lines of each grid, nearest ones in blue"
            )),
    );
    for (i, g) in grids.iter().enumerate() {
        lane(
            &mut f,
            g,
            at,
            (lo, hi),
            &x,
            LANES_TOP + i as f64 * LANE_STEP,
        );
    }
    boundary_line(&mut f, at, &x, axis_y);
    axis::draw(
        &mut f,
        x,
        (lo, hi),
        axis_y,
        axis::Labels::Bytes,
        &format!(
            "byte offset on {} (±{} around the boundary)",
            t.path,
            human((hi - lo) / 2)
        ),
    );
    f.end_group();
    f.finish()
}

/// The boundary as a black line over every lane, its byte written above.
fn boundary_line(f: &mut Figure, at: u64, x: &Linear, bottom: f64) {
    let px = x.map(at as f64);
    let label = format!("byte {at}");
    let half = text_width(&label, 10.0) / 2.0;
    let tx = px.clamp(RULER.0 + half, RULER.1 - half);
    f.add(
        El::new("text")
            .at("x", tx)
            .at("y", LANES_TOP - 8.0)
            .attr("text-anchor", "middle")
            .attr("font-size", 10)
            .attr("font-weight", "bold")
            .text(label),
    );
    f.add(
        El::new("line")
            .at("x1", px)
            .at("x2", px)
            .at("y1", LANES_TOP - 5.0)
            .at("y2", bottom)
            .attr("stroke", "#000000")
            .attr("stroke-width", "2")
            .attr("data-mark", "boundary")
            .title(format!("the boundary: byte {at}")),
    );
}

/// One grid's lane: its lines in the window (or the nearest ones written
/// out when none falls inside), the distances, and the verdict.
fn lane(f: &mut Figure, g: &Grid, at: u64, (lo, hi): (u64, u64), x: &Linear, y: f64) {
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
    let size = (room / text_width(&text, 1.0)).clamp(6.5, 9.0);
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
            .at("font-size", (room / text_width(&text, 1.0)).clamp(6.5, 9.0))
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

/// Every boundary against every grid, in words with the bytes.
fn table(prefix: &str, t: &Target, grids: &[Grid], parts: &[&Partition]) -> String {
    let mut headers = vec!["partition", "boundary", "byte"];
    let labels: Vec<String> = grids.iter().map(|g| format!("{} grid", g.label)).collect();
    headers.extend(labels.iter().map(String::as_str));
    let mut rows = Vec::new();
    for p in parts {
        for end in [false, true] {
            let b = Boundary { part: p, end };
            let mut row = vec![
                Td::num(p.number),
                Td::text(if end { "end (last byte + 1)" } else { "start" }),
                Td::num(b.at()),
            ];
            row.extend(grids.iter().map(|g| Td::text(grid::describe(b.at(), g))));
            rows.push(row);
        }
    }
    page::table(
        &format!("{prefix}-table"),
        &format!(
            "Where each boundary of {} falls on each grid (bytes)",
            t.path
        ),
        &headers,
        &rows,
    )
}
