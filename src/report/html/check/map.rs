//! The disk map: one bar per disk, to scale, with its partitions coloured
//! and patterned by status, the free space between them, and marks on the
//! starts and ends that are off their grain.

use super::super::kit::text_width;
use super::super::kit::{KeyBox, Legend};
use super::super::look::{self, look};
use super::super::page;
use super::super::scale::Linear;
use super::super::svg::{El, Figure};
use super::layout::{
    self, inside_label, status, tip, Slot, BAR_H, BAR_TOP, LABEL_Y, LEFT, MARK, RIGHT, WIDTH,
};
use super::marks::{self, down, up};
use super::{axis, tables};
use crate::check::{CheckedPartition, CheckedTarget};
use crate::units::human;

const AXIS_Y: f64 = LABEL_Y + 12.0;
const HEIGHT: f64 = AXIS_Y + 42.0;

/// The most partitions a map draws: the kernel's own limit per disk
/// (DISK_MAX_PARTS). An image's table may list more, and a saved document
/// anything (`{}` is a partition); past it the map would be a smear of
/// kilobyte marks, so the page says so and keeps the tables.
pub const MAX_DRAWN: usize = 256;

/// The map of target `t` (figure `fig`) and the tables of its numbers.
pub fn figure(fig: &str, t: &CheckedTarget) -> String {
    if t.partitions.len() > MAX_DRAWN {
        let mut s = page::note(&format!(
            "{} partitions are too many to draw on one map (at most {MAX_DRAWN}); the table has every one.",
            t.partitions.len()
        ));
        s.push_str(&tables::partitions(fig, t));
        s.push_str(&tables::free(fig, t));
        return s;
    }
    let end = layout::extent(t.size_bytes, &t.partitions);
    let x = Linear::new((0.0, end as f64), (LEFT, RIGHT));
    let mut f = Figure::new(
        fig,
        WIDTH,
        HEIGHT,
        &format!(
            "Disk map of {}: {} on {}, to scale",
            t.path,
            count(t.partitions.len()),
            human(t.size_bytes)
        ),
    );
    look::defs(&mut f, fig);
    legend(&mut f, fig, t);
    disk(&mut f, t, end, &x);
    for (s, e) in layout::gaps(t.size_bytes, &t.partitions) {
        gap(&mut f, s, e, &x);
    }
    let order = drawing_order(&t.partitions);
    for &i in &order {
        partition(&mut f, fig, &t.partitions[i], &x);
    }
    for &i in &order {
        marks::marks(&mut f, &t.partitions[i], &x);
    }
    marks::outside_labels(&mut f, &t.partitions, &x);
    axis::draw(
        &mut f,
        x,
        (0, end),
        AXIS_Y,
        axis::Labels::Binary,
        &format!(
            "byte offset on {} (binary units: 1 MiB = 1048576 bytes)",
            t.path
        ),
    );
    let mut s = f.finish();
    s.push_str(&tables::partitions(fig, t));
    s.push_str(&tables::free(fig, t));
    s
}

fn count(n: usize) -> String {
    match n {
        1 => "1 partition".into(),
        n => format!("{n} partitions"),
    }
}

/// Extended containers first, so the logical partitions lie on top.
fn drawing_order(parts: &[CheckedPartition]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| {
        (
            parts[i].kind != crate::layout::PartKind::Extended,
            parts[i].start_bytes,
        )
    });
    order
}

/// The statuses present, in a fixed order, and the two marks.
fn legend(f: &mut Figure, fig: &str, t: &CheckedTarget) {
    let seen = t
        .partitions
        .iter()
        .filter(|p| p.kind != crate::layout::PartKind::Extended)
        .map(status);
    let mut legend = Legend::across(LEFT, 40.0);
    look::legend(f, fig, seen, &mut legend);
    if t.partitions
        .iter()
        .any(|p| p.kind == crate::layout::PartKind::Extended)
    {
        let key = |b: KeyBox| vec![extended_box(b.x, b.y, b.w, b.h)];
        legend.entry(f, ("extended", &[]), key, &["extended container"]);
    }
    for (name, shape, words) in [
        (
            "start-off",
            down as fn(f64, f64) -> String,
            "start off its grain",
        ),
        ("end-off", up, "end off its grain"),
    ] {
        let key = |b: KeyBox| {
            vec![El::new("polygon")
                .attr("points", shape(b.x + b.w / 2.0, b.y))
                .attr("fill", MARK)
                .attr("stroke", "#000000")
                .attr("stroke-width", "0.5")]
        };
        legend.entry(f, (name, &[]), key, &[words]);
    }
}

/// The dashed outline an extended container is drawn as.
fn extended_box(x: f64, y: f64, w: f64, h: f64) -> El {
    El::new("rect")
        .at("x", x)
        .at("y", y)
        .at("width", w)
        .at("height", h)
        .attr("fill", "none")
        .attr("stroke", "#555555")
        .attr("stroke-dasharray", "4 2")
}

/// The whole disk as the bar's background, and its end when partitions
/// run past it.
fn disk(f: &mut Figure, t: &CheckedTarget, end: u64, x: &Linear) {
    f.add(
        El::new("rect")
            .at("x", LEFT)
            .at("y", BAR_TOP)
            .at("width", x.map(t.size_bytes as f64) - LEFT)
            .at("height", BAR_H)
            .attr("fill", "#f2f2f2")
            .attr("stroke", "#777777")
            .title(format!(
                "{}: {} bytes ({})",
                t.path,
                t.size_bytes,
                human(t.size_bytes)
            )),
    );
    if end > t.size_bytes {
        let at = x.map(t.size_bytes as f64);
        f.add(
            El::new("line")
                .at("x1", at)
                .at("x2", at)
                .at("y1", BAR_TOP - 8.0)
                .at("y2", BAR_TOP + BAR_H + 8.0)
                .attr("stroke", "#000000")
                .attr("stroke-dasharray", "3 2")
                .title(format!("end of the disk: byte {}", t.size_bytes)),
        );
    }
}

fn gap(f: &mut Figure, start: u64, end: u64, x: &Linear) {
    let s = Slot {
        x: x.map(start as f64),
        w: x.map(end as f64) - x.map(start as f64),
    };
    f.group(
        "gap",
        &[("start", start.to_string()), ("end", (end - 1).to_string())],
    );
    f.add(
        El::new("rect")
            .at("x", s.x)
            .at("y", BAR_TOP + 1.0)
            .at("width", s.w)
            .at("height", BAR_H - 2.0)
            .attr("fill", "#f2f2f2")
            .title(format!(
                "free: bytes {start}–{} ({} bytes, {})",
                end - 1,
                end - start,
                human(end - start)
            )),
    );
    f.end_group();
}

/// One partition: its rectangle in its status's look, titled with the
/// exact numbers, and its label inside when it fits.
fn partition(f: &mut Figure, fig: &str, p: &CheckedPartition, x: &Linear) {
    let s = layout::slot(p.start_bytes, p.end_bytes.saturating_add(1), x);
    let l = look(status(p));
    f.group(
        "partition",
        &[
            ("partition", p.number.to_string()),
            ("start", p.start_bytes.to_string()),
            ("end", p.end_bytes.to_string()),
            ("status", l.word.to_string()),
        ],
    );
    let extended = p.kind == crate::layout::PartKind::Extended;
    let (y, h) = if extended {
        (BAR_TOP - 4.0, BAR_H + 8.0)
    } else {
        (BAR_TOP + 6.0, BAR_H - 12.0)
    };
    let base = El::new("rect").title(tip(p));
    if extended {
        f.add(extended_box(s.x, y, s.w, h).title(tip(p)));
    } else {
        look::swatch(f, fig, l, (s.x, y, s.w, h), base);
    }
    if let Some(text) = inside_label(p, s.w) {
        let w = text_width(&text, 10.0) + 6.0;
        let cx = s.x + s.w / 2.0;
        let ty = if extended { BAR_TOP + 4.0 } else { y + h / 2.0 };
        f.add(
            El::new("rect")
                .at("x", cx - w / 2.0)
                .at("y", ty - 7.0)
                .at("width", w)
                .at("height", 14.0)
                .attr("rx", 3)
                .attr("fill", "#ffffff")
                .attr("fill-opacity", "0.9")
                .attr("pointer-events", "none"),
        );
        f.add(
            El::new("text")
                .at("x", cx)
                .at("y", ty + 3.5)
                .attr("text-anchor", "middle")
                .attr("font-size", 10)
                .attr("pointer-events", "none")
                .text(text),
        );
    }
    f.end_group();
}
