//! The stack drawn as layers: each root (a partition, the whole device, an
//! assembled md array or volume group) at the bottom, what lives on it
//! stacked above, each box spanning the boxes that sit on it. Each box
//! gives its kind, name, absolute data start and status.

use super::super::kit::Legend;
use super::super::kit::{fit, y_title};
use super::super::look::{self, look, tint};
use super::super::page;
use super::super::svg::{El, Figure};
use super::codes;
use crate::iolimits::Topology;
use crate::report::columns::{self, Column};
use crate::stack::{Layer, LayerKind};

const MIN_LEAF: f64 = 130.0;
const LEFT: f64 = 34.0;
const TOP: f64 = 34.0;
const BOX_H: f64 = 64.0;
const STEP: f64 = 70.0;
/// The most layers drawn as boxes. Real stacks have a handful; a saved
/// document may hold thousands (`{}` is a layer), each a box of a
/// kilobyte on a figure wider than any screen. The table keeps them all.
pub const MAX_BOXES: usize = 256;

/// One layer's box, in leaf units across and levels up.
#[derive(Debug)]
pub struct Cell<'a> {
    pub layer: &'a Layer,
    pub path: String,
    pub depth: usize,
    /// The first leaf column it spans.
    pub x: usize,
    /// How many leaf columns it spans.
    pub w: usize,
}

/// The columns a layer needs: one per layer at the top of its subtree.
fn leaves(l: &Layer) -> usize {
    l.children.iter().map(leaves).sum::<usize>().max(1)
}

/// The icicle layout of `roots`: every box over the columns of what sits
/// on it, roots side by side.
pub fn icicle(roots: &[Layer]) -> Vec<Cell<'_>> {
    let mut out = Vec::new();
    let mut x = 0;
    for r in roots {
        place(r, String::new(), 0, x, &mut out);
        x += leaves(r);
    }
    out
}

fn place<'a>(l: &'a Layer, parent: String, depth: usize, x: usize, out: &mut Vec<Cell<'a>>) {
    // Cut, so that a long chain of long names is not repeated in full by
    // every layer above it.
    let path = if parent.is_empty() {
        page::brief(&l.name).into_owned()
    } else {
        page::brief(&format!("{parent} / {}", l.name)).into_owned()
    };
    out.push(Cell {
        layer: l,
        path: path.clone(),
        depth,
        x,
        w: leaves(l),
    });
    let mut cx = x;
    for c in &l.children {
        place(c, path.clone(), depth + 1, cx, out);
        cx += leaves(c);
    }
}

/// Whether there is anything above the roots worth a figure.
pub fn has_layers(roots: &[Layer]) -> bool {
    roots.iter().any(|r| !r.children.is_empty())
}

/// The figure of `roots` (id `fig`, titled `title`) and its table.
pub fn figure(fig: &str, title: &str, roots: &[Layer]) -> String {
    let cells = icicle(roots);
    if cells.len() > MAX_BOXES {
        let why = format!(
            "{} layers are too many to draw (at most {MAX_BOXES}); the table has every one.",
            cells.len()
        );
        return page::note(&why) + &table(fig, title, &cells);
    }
    let columns: usize = roots.iter().map(leaves).sum::<usize>().max(1);
    let levels = cells.iter().map(|c| c.depth + 1).max().unwrap_or(1);
    let width = (LEFT + 8.0 + columns as f64 * MIN_LEAF).max(720.0);
    let col = (width - LEFT - 8.0) / columns as f64;
    let bottom = TOP + levels as f64 * STEP;
    let mut f = Figure::new(fig, width, bottom + 58.0, title);
    look::defs(&mut f, fig);
    for c in &cells {
        layer_box(
            &mut f,
            fig,
            c,
            (
                LEFT + c.x as f64 * col,
                bottom - (c.depth + 1) as f64 * STEP,
            ),
            c.w as f64 * col,
        );
    }
    axes(&mut f, fig, width, bottom, &cells);
    let mut s = f.finish();
    s.push_str(&table(fig, title, &cells));
    s
}

/// One layer: a light box with a status stripe in the status's look, and
/// four lines of text cut to fit.
fn layer_box(f: &mut Figure, fig: &str, c: &Cell, (x, y): (f64, f64), w: f64) {
    let l = c.layer;
    let lk = look(Some(l.status));
    let mut data = vec![
        ("kind", l.kind.to_string()),
        ("layer", l.name.clone()),
        ("path", c.path.clone()),
        ("status", lk.word.to_string()),
    ];
    if let Some(cause) = &l.inherits_from {
        data.push(("inherits-from", cause.clone()));
    }
    data.push(("device", l.device.clone()));
    data.push((
        "start",
        l.data_start().unwrap_or(l.offset_bytes).to_string(),
    ));
    f.group("layer", &data);
    let (bx, bw) = (x + 2.0, w - 4.0);
    f.add(
        El::new("rect")
            .at("x", bx)
            .at("y", y)
            .at("width", bw)
            .at("height", BOX_H)
            .attr("rx", 3)
            .attr("fill", tint(lk.fill, 0.82).hex())
            .attr("stroke", "#555555")
            .title(tip(c)),
    );
    look::swatch(
        f,
        fig,
        lk,
        (bx, y, 10.0, BOX_H),
        El::new("rect").attr("pointer-events", "none"),
    );
    let lines = [
        (format!("{} {} · {}", lk.glyph, l.kind, lk.word), "bold"),
        (l.name.clone(), "normal"),
        (
            format!("data at byte {}", l.data_start().unwrap_or(l.offset_bytes)),
            "normal",
        ),
        (format!("on {}", l.device), "normal"),
    ];
    for (i, (text, weight)) in lines.into_iter().enumerate() {
        f.add(
            El::new("text")
                .at("x", bx + 15.0)
                .at("y", y + 15.0 + i as f64 * 14.0)
                .attr("font-size", 10.5)
                .attr("font-weight", weight)
                .attr("pointer-events", "none")
                .text(fit(&text, bw - 19.0, 10.5)),
        );
    }
    f.end_group();
}

/// The hover text of a layer: every number.
fn tip(c: &Cell) -> String {
    let l = c.layer;
    let mut s = format!(
        "{} {} on {}: starts at byte {}, {} bytes",
        l.kind, l.name, l.device, l.offset_bytes, l.size_bytes
    );
    if let Some(d) = l.data_offset_bytes {
        s.push_str(&format!(
            "; data {d} bytes in, at byte {}",
            l.data_start().unwrap_or(l.offset_bytes)
        ));
    }
    s.push_str(&format!(
        "; on {}; {}",
        limits(&l.below),
        look(Some(l.status)).word
    ));
    if let Some(cause) = &l.inherits_from {
        s.push_str(&format!(" (the offset of {cause})"));
    }
    if let Some(sig) = l.signature() {
        s.push_str(&format!(
            "; named by its {} signature ({} bytes in), not read: what is inside it is not judged",
            sig.what, sig.magic_offset_bytes
        ));
    }
    for fd in &l.findings {
        s.push_str(&format!("\n{} ({}): {}", fd.code, fd.severity, fd.message));
    }
    s
}

/// The status in words and, for a layer that inherits its misalignment,
/// whose offset it inherits: `✗ inherits (the offset of partition 1)`,
/// as the human report says it.
fn status_words(l: &Layer) -> String {
    let words = look::words(Some(l.status));
    match &l.inherits_from {
        Some(cause) => format!("{words} (the offset of {cause})"),
        None => words,
    }
}

/// The limits of the device below, in one phrase.
fn limits(t: &Topology) -> String {
    format!(
        "logical {} / physical {} / min {} / optimal {} / alignment offset {}",
        t.logical_block_size,
        t.physical_block_size,
        t.minimum_io_size,
        t.optimal_io_size,
        t.alignment_offset
    )
}

/// What the two directions mean, and the legend of the statuses drawn.
fn axes(f: &mut Figure, fig: &str, width: f64, bottom: f64, cells: &[Cell]) {
    y_title(f, 16.0, (TOP + bottom) / 2.0, "layers, from the root up");
    f.add(
        El::new("text")
            .at("x", (LEFT + width) / 2.0)
            .at("y", bottom + 18.0)
            .attr("text-anchor", "middle")
            .attr("fill", "#333333")
            .text("each box spans what sits on it (widths not to scale); data starts in bytes on the device named"),
    );
    let seen = cells.iter().map(|c| Some(c.layer.status));
    look::legend(f, fig, seen, &mut Legend::across(LEFT, bottom + 42.0));
}

/// The layers as drawn, every number written out.
fn table(fig: &str, title: &str, cells: &[Cell]) -> String {
    let cols = layer_columns();
    columns::html(
        &format!("{fig}-table"),
        &format!("{title}: the numbers (bytes)"),
        &cols.iter().collect::<Vec<_>>(),
        &cells.iter().collect::<Vec<_>>(),
    )
}

type L<'a> = Column<Cell<'a>>;

/// A layer's row: its name indented by its depth, where it is, what it
/// sits on and its status.
fn layer_columns<'a>() -> Vec<L<'a>> {
    vec![
        L::html_only("layer", "layer", |c| {
            format!("{}{}", "\u{a0}\u{a0}\u{a0}".repeat(c.depth), c.layer.name)
        }),
        L::html_only("kind", "kind", |c| c.layer.kind.as_str().into()),
        L::html_only("device", "device", |c| c.layer.device.clone()),
        L::html_only("offset_bytes", "starts at", |c| {
            c.layer.offset_bytes.to_string()
        })
        .num(),
        L::html_only("data_offset_bytes", "data offset", |c| {
            c.layer
                .data_offset_bytes
                .map_or("–".into(), |d| d.to_string())
        })
        .num(),
        L::html_only("data_start", "data start", |c| {
            let l = c.layer;
            l.data_start().unwrap_or(l.offset_bytes).to_string()
        })
        .num(),
        L::html_only("size_bytes", "size", |c| c.layer.size_bytes.to_string()).num(),
        L::html_only("grain_below", "grain below", |c| {
            let b = &c.layer.below;
            b.physical_block_size.max(b.minimum_io_size).to_string()
        })
        .num(),
        L::html_only("optimal_below", "optimal below", |c| {
            c.layer.below.optimal_io_size.to_string()
        })
        .num(),
        L::html_only("says", "what it says", |c| match c.layer.kind {
            LayerKind::Partition | LayerKind::Device => "–".into(),
            _ => Some(crate::report::human::layer_detail(c.layer))
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| "–".into()),
        }),
        L::html_only("status", "status", |c| status_words(c.layer))
            .class(|c| Some(look::class(Some(c.layer.status)))),
        L::html_only("findings", "findings", |c| codes(&c.layer.findings)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(kind: &str, name: &str, children: Vec<Layer>) -> Layer {
        Layer {
            kind: serde_json::from_value(kind.into()).expect("a layer kind"),
            name: name.into(),
            children,
            ..Layer::default()
        }
    }

    #[test]
    fn boxes_span_what_sits_on_them() {
        // VG → LV lvl (leg, ext4), LV lvs (leg, leg); and a bare partition.
        let vg = layer(
            "lvm-vg",
            "VG vgh",
            vec![
                layer(
                    "lvm-lv",
                    "LV vgh/lvl",
                    vec![
                        layer("lvm-leg", "l0", vec![]),
                        layer("filesystem", "ext4", vec![]),
                    ],
                ),
                layer(
                    "lvm-lv",
                    "LV vgh/lvs",
                    vec![
                        layer("lvm-leg", "s0", vec![]),
                        layer("lvm-leg", "s1", vec![]),
                    ],
                ),
            ],
        );
        let roots = [vg, layer("partition", "partition 2", vec![])];
        let cells = icicle(&roots);
        let at: Vec<(&str, usize, usize, usize)> = cells
            .iter()
            .map(|c| (c.layer.name.as_str(), c.depth, c.x, c.w))
            .collect();
        assert_eq!(
            at,
            vec![
                ("VG vgh", 0, 0, 4),
                ("LV vgh/lvl", 1, 0, 2),
                ("l0", 2, 0, 1),
                ("ext4", 2, 1, 1),
                ("LV vgh/lvs", 1, 2, 2),
                ("s0", 2, 2, 1),
                ("s1", 2, 3, 1),
                ("partition 2", 0, 4, 1),
            ]
        );
        assert_eq!(cells[6].path, "VG vgh / LV vgh/lvs / s1");
        assert!(has_layers(&roots));
        assert!(!has_layers(&roots[1..]));
    }

    #[test]
    fn a_layer_that_inherits_names_its_cause() {
        let doc = crate::check::CheckDoc::new(
            serde_json::from_str(
                r#"{"targets":[{"path":"a.img","stack":[{"kind":"partition",
              "name":"partition 1","status":"misaligned","children":[
              {"kind":"filesystem","name":"ext4","status":"inherits",
               "inherits_from":"partition 1"}]}]}]}"#,
            )
            .unwrap(),
            "a.json",
        );
        let s = figure("run1-stack-0", "Stack of a.img", &doc.targets[0].stack);
        assert!(s.contains("✗ inherits (the offset of partition 1)"), "{s}");
        assert!(s.contains("data-inherits-from=\"partition 1\""), "{s}");
    }

    #[test]
    fn a_stack_too_large_to_draw_keeps_its_table() {
        let leaves = (0..=MAX_BOXES).map(|i| layer("filesystem", &format!("fs{i}"), vec![]));
        let root = layer("partition", "partition 1", leaves.collect());
        let s = figure("run1-stack-0", "Stack of x", &[root]);
        assert!(!s.contains("<svg"));
        assert!(s.contains("layers are too many to draw"));
        assert!(s.contains("id=\"run1-stack-0-table\""));
        assert!(s.contains(&format!("fs{MAX_BOXES}")));
    }
}
