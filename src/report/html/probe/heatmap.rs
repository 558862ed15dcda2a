//! The penalty heatmap: rows block sizes, columns offsets. Only decided
//! tiles (slower, faster, fine) are coloured, on a diverging scale of the
//! IOPS change against the reference (offset 0, or the first target)
//! centred on 0: red slower, blue faster. Undecided and untested tiles
//! are a neutral hatch, so "can't tell" never looks like "no
//! difference"; significant tiles are outlined and marked. Several
//! targets are panels stacked on the same columns.

use super::super::scale::{diverging, Rgb};
use super::super::svg::{esc, El, Figure};
use super::draw;
use super::layout::{change, tick_text, Shade, Standing, Tiles, REFERENCE_FILL};
use crate::probe::sequential::Decision;

/// One tile: its place, what it shows, its tooltip and `data-*`.
pub struct Tile {
    pub row: usize,
    pub col: usize,
    pub standing: Standing,
    pub tip: String,
    pub data: Vec<(&'static str, String)>,
}

/// One target's tiles, with the caption naming it (several targets).
pub struct Panel {
    pub caption: Option<String>,
    pub tiles: Vec<Tile>,
}

pub struct Heatmap {
    pub id: String,
    pub title: String,
    pub rows: Vec<String>,
    pub cols: Vec<String>,
    pub panels: Vec<Panel>,
    pub shade: Shade,
    /// What the colour measures against (`offset 0`, `the first target`).
    pub against: String,
    /// One fio pass: nothing was tested, so no tile is marked.
    pub untested: bool,
}

const CELL: (f64, f64) = (64.0, 28.0);
const LEFT: f64 = 100.0;
const TOP: f64 = 44.0;
const CAPTION: f64 = 20.0;
const GAP: f64 = 14.0;
const LEGEND_W: f64 = 230.0;

/// The mark of a significant decision.
fn symbol(s: &Standing) -> &'static str {
    match s {
        Standing::Measured(r) if r.significant => match r.decision {
            Some(Decision::Faster) => "\u{25b2} ",
            _ => "\u{25cf} ",
        },
        _ => "",
    }
}

/// The background of the undecided hatch.
const UNDECIDED_FILL: &str = "#f4f4f4";

/// The id of figure `fig`'s undecided hatch.
fn hatch_id(fig: &str) -> String {
    format!("{fig}-undecided")
}

/// The `<defs>` of the undecided hatch: grey diagonals on a neutral
/// ground, unlike any colour of the scale (whose centre is plain).
fn hatch_defs(f: &mut Figure, fig: &str) {
    f.raw(&format!(
        "<defs><pattern id=\"{}\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\"><rect width=\"6\" height=\"6\" fill=\"{UNDECIDED_FILL}\"/><path d=\"M-1,1 l2,-2 M0,6 l6,-6 M5,7 l2,-2\" stroke=\"#9a9a9a\" stroke-width=\"1\"/></pattern></defs>\n",
        esc(&hatch_id(fig))
    ));
}

/// The tile's fill and its text: the scale's colour only when decided.
fn look(fig: &str, shade: &Shade, s: &Standing) -> (String, &'static str, String) {
    match s {
        Standing::Reference => (REFERENCE_FILL.into(), "#333333", "aligned".into()),
        Standing::Unpaired => ("#ffffff".into(), "#333333", "n/a".into()),
        Standing::Measured(r) if s.decided() => {
            let c = shade.colour(r.penalty());
            (
                c.hex(),
                c.ink(),
                format!("{}{}", symbol(s), change(r.ratio)),
            )
        }
        Standing::Measured(r) => (
            format!("url(#{})", hatch_id(fig)),
            "#333333",
            format!("{}?", change(r.ratio)),
        ),
    }
}

fn tile(f: &mut Figure, fig: &str, grid: &Tiles, shade: &Shade, t: &Tile) {
    let (x, y, w, h) = grid.rect(t.row, t.col);
    let (fill, ink, text) = look(fig, shade, &t.standing);
    f.group("cell", &t.data);
    f.raw(&format!("<title>{}</title>", esc(&t.tip)));
    f.add(
        El::new("rect")
            .at("x", x)
            .at("y", y)
            .at("width", w)
            .at("height", h)
            .attr("fill", fill),
    );
    if t.standing.significant() {
        f.add(
            El::new("rect")
                .at("x", x + 2.0)
                .at("y", y + 2.0)
                .at("width", w - 4.0)
                .at("height", h - 4.0)
                .attr("fill", "none")
                .attr("stroke", ink)
                .attr("stroke-width", 2),
        );
    }
    // Centred 10 px text is set once on the panel's group.
    let label = El::new("text")
        .at("x", x + w / 2.0)
        .at("y", y + h / 2.0 + 4.0);
    let label = if t.standing.significant() {
        label.attr("font-weight", "bold")
    } else {
        label
    };
    f.add(label.attr("fill", ink).text(text));
    f.end_group();
}

/// The colour bar (slower up, faster down, 0 in the middle) with its
/// ticks, from `(x, y)`; returns where the next legend line goes.
fn colour_bar(f: &mut Figure, h: &Heatmap, x: f64, y: f64) -> f64 {
    draw::caption(f, x, y, "IOPS change against");
    draw::caption(f, x, y + 14.0, &h.against);
    draw::label(f, x, y + 28.0, "(decided tiles only)");
    let (top, height) = (y + 40.0, 160.0);
    let ramp = format!("{}-ramp", h.id);
    let stops: String = (0..=8)
        .map(|i| {
            let t = f64::from(i) / 8.0;
            // Offset 0 is the bottom (the most faster), 1 the top.
            let c = diverging(t * 2.0 - 1.0);
            format!("<stop offset=\"{t}\" stop-color=\"{}\"/>", c.hex())
        })
        .collect();
    f.raw(&format!(
        "<defs><linearGradient id=\"{}\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">{stops}</linearGradient></defs>\n",
        esc(&ramp)
    ));
    f.add(
        El::new("rect")
            .at("x", x)
            .at("y", top)
            .at("width", 16.0)
            .at("height", height)
            .attr("fill", format!("url(#{ramp})"))
            .attr("stroke", draw::AXIS)
            .attr("stroke-width", 0.5)
            .attr("data-scale", "diverging")
            .attr("data-max", format!("{}", h.shade.max)),
    );
    for t in h.shade.ticks() {
        let ty = top + height / 2.0 - h.shade.t(t) * height / 2.0;
        f.add(
            El::new("line")
                .at("x1", x + 16.0)
                .at("x2", x + 20.0)
                .at("y1", ty)
                .at("y2", ty)
                .attr("stroke", draw::AXIS),
        );
        draw::label(f, x + 23.0, ty + 4.0, &tick_text(t));
    }
    top + height + 24.0
}

/// What the marks mean.
fn key(f: &mut Figure, h: &Heatmap, x: f64, y: f64) -> f64 {
    let swatch = |f: &mut Figure, y: f64, fill: &str, stroke: Option<Rgb>| {
        let el = El::new("rect")
            .at("x", x)
            .at("y", y - 10.0)
            .at("width", 16.0)
            .at("height", 13.0)
            .attr("fill", fill);
        let el = match stroke {
            Some(c) => el.attr("stroke", c.hex()).attr("stroke-width", 2),
            None => el.attr("stroke", "#bbbbbb"),
        };
        f.add(el);
    };
    let mut y = y;
    if h.untested {
        draw::label(f, x, y, "one fio pass: no interval,");
        draw::label(f, x, y + 14.0, "no test, so no tile is decided");
        y += 32.0;
    } else {
        swatch(f, y, &diverging(0.9).hex(), Some(Rgb(0, 0, 0)));
        draw::label(f, x + 22.0, y, "\u{25cf} slower, \u{25b2} faster:");
        draw::label(f, x + 22.0, y + 14.0, "significant (95 %, outlined)");
        draw::label(f, x + 22.0, y + 28.0, "unmarked colour: fine");
        y += 46.0;
    }
    let hatched = format!("url(#{})", hatch_id(&h.id));
    f.raw("<g data-legend=\"undecided\">");
    swatch(f, y, &hatched, None);
    draw::label(f, x + 22.0, y, "hatched, \u{201c}?\u{201d}: undecided or");
    draw::label(f, x + 22.0, y + 14.0, "untested, so not coloured");
    f.raw("</g>\n");
    y += 32.0;
    if h.panels
        .iter()
        .flat_map(|p| &p.tiles)
        .any(|t| t.standing == Standing::Reference)
    {
        swatch(f, y, REFERENCE_FILL, None);
        draw::label(f, x + 22.0, y, "offset 0: the reference");
        y += 20.0;
    }
    draw::label(f, x, y, "tile text: IOPS change");
    draw::label(f, x, y + 14.0, "hover a tile: IOPS, CI, rounds");
    y + 14.0
}

/// The figure.
pub fn draw(h: &Heatmap) -> String {
    let grid_w = CELL.0 * h.cols.len() as f64;
    let grid_h = CELL.1 * h.rows.len() as f64;
    let caption = if h.panels.iter().any(|p| p.caption.is_some()) {
        CAPTION
    } else {
        0.0
    };
    let panel_h = caption + grid_h + GAP;
    let bottom = TOP + panel_h * h.panels.len() as f64 - GAP;
    // A panel's caption (a long path) may be wider than its tiles: the
    // legend starts after whichever is wider.
    let captions_w = h
        .panels
        .iter()
        .filter_map(|p| p.caption.as_deref())
        .map(|c| super::super::look::text_width(c, 11.0))
        .fold(0.0, f64::max);
    let body_w = grid_w.max(captions_w);
    let mut f = Figure::new(&h.id, LEFT + body_w + 30.0 + LEGEND_W, 0.0, &h.title);
    hatch_defs(&mut f, &h.id);
    let mut last = None;
    for (i, panel) in h.panels.iter().enumerate() {
        let top = TOP + panel_h * i as f64;
        if let Some(c) = &panel.caption {
            draw::caption(&mut f, LEFT, top + 13.0, c);
        }
        let grid = Tiles::new(LEFT, top + caption, CELL, (h.cols.len(), h.rows.len()));
        draw::y_labels(&mut f, &grid.rows, &h.rows, LEFT - 8.0);
        draw::y_title(
            &mut f,
            18.0,
            (grid.rows.r0 + grid.rows.r1) / 2.0,
            "block size",
        );
        f.raw("<g text-anchor=\"middle\" font-size=\"10\">\n");
        for t in &panel.tiles {
            tile(&mut f, &h.id, &grid, &h.shade, t);
        }
        f.raw("</g>\n");
        last = Some(grid);
    }
    let mut height = bottom + 12.0;
    if let Some(grid) = last {
        draw::x_labels(&mut f, &grid.cols, &h.cols, bottom);
        let labels_h = draw::x_labels_height(&grid.cols, &h.cols);
        let title_y = bottom + labels_h + 18.0;
        let mid = (grid.cols.r0 + grid.cols.r1) / 2.0;
        draw::x_title(
            &mut f,
            mid,
            title_y,
            "offset (evenly spaced slots, not to scale)",
        );
        height = title_y + 12.0;
    }
    let legend_x = LEFT + body_w + 30.0;
    let next = colour_bar(&mut f, h, legend_x, TOP + 10.0);
    let end = key(&mut f, h, legend_x, next);
    f.height = height.max(end + 12.0);
    f.finish()
}
