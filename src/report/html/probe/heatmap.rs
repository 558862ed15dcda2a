//! The penalty heatmap: rows block sizes, columns offsets. Only decided
//! tiles (slower, faster, fine) are coloured, on a diverging scale of the
//! IOPS change against the reference (offset 0, or the first target)
//! centred on 0: red slower, blue faster. Undecided and untested tiles
//! are a neutral hatch, so "can't tell" never looks like "no
//! difference"; significant tiles are outlined and marked. Several
//! targets are panels stacked on the same columns.

use super::super::kit;
use super::super::kit::{KeyBox, Legend};
use super::super::scale::{diverging, Rgb};
use super::super::svg::{esc, El, Figure};
use super::layout::{change, tick_text, Shade, Standing, Tiles, REFERENCE_FILL};
use crate::probe::Decision;

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
/// What the columns are.
const X_TITLE: &str = "offset (evenly spaced slots, not to scale)";

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
    kit::caption(f, x, y, "IOPS change against");
    kit::caption(f, x, y + 14.0, &h.against);
    kit::label(f, x, y + 28.0, "(decided tiles only)");
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
            .attr("stroke", kit::AXIS)
            .attr("stroke-width", 0.5)
            .attr("data-scale", "diverging")
            .attr("data-max", format!("{}", h.shade.max)),
    );
    for t in h.shade.ticks(height) {
        let ty = top + height / 2.0 - h.shade.t(t) * height / 2.0;
        f.add(
            El::new("line")
                .at("x1", x + 16.0)
                .at("x2", x + 20.0)
                .at("y1", ty)
                .at("y2", ty)
                .attr("stroke", kit::AXIS),
        );
        kit::label(f, x + 23.0, ty + 4.0, &tick_text(t));
    }
    top + height + 24.0
}

/// What the marks mean, down a column from `(x, y)`.
fn key(f: &mut Figure, h: &Heatmap, x: f64, y: f64) -> f64 {
    let swatch = |fill: String, stroke: Option<Rgb>| {
        move |b: KeyBox| {
            let b = KeyBox {
                w: 16.0,
                h: 13.0,
                ..b
            };
            vec![match stroke {
                Some(c) => kit::swatch(b, &fill, &c.hex()).attr("stroke-width", 2),
                None => kit::swatch(b, &fill, "#bbbbbb"),
            }]
        }
    };
    let mut l = Legend::down(x, y).key_width(18.0);
    if h.untested {
        l.note(
            f,
            &[
                "one fio pass: no interval,",
                "no test, so no tile is decided",
            ],
        );
    } else {
        l.entry(
            f,
            ("significant", &[]),
            swatch(diverging(0.9).hex(), Some(Rgb(0, 0, 0))),
            &[
                "\u{25cf} slower, \u{25b2} faster:",
                "significant (95 %, outlined)",
                "unmarked colour: fine",
            ],
        );
    }
    l.entry(
        f,
        ("undecided", &[]),
        swatch(format!("url(#{})", hatch_id(&h.id)), None),
        &[
            "hatched, \u{201c}?\u{201d}: undecided or",
            "untested, so not coloured",
        ],
    );
    if h.panels
        .iter()
        .flat_map(|p| &p.tiles)
        .any(|t| t.standing == Standing::Reference)
    {
        let reference = swatch(REFERENCE_FILL.to_string(), None);
        l.entry(
            f,
            ("reference", &[]),
            reference,
            &["offset 0: the reference"],
        );
    }
    l.note(
        f,
        &["tile text: IOPS change", "hover a tile: IOPS, CI, rounds"],
    );
    l.y()
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
        .map(|c| kit::text_width(c, 11.0))
        .fold(0.0, f64::max);
    // So is the x axis's title, centred under the tiles.
    let title_w = kit::text_width(X_TITLE, 11.0);
    let body_w = grid_w.max(captions_w).max((grid_w + title_w) / 2.0);
    let mut f = Figure::new(&h.id, LEFT + body_w + 30.0 + LEGEND_W, 0.0, &h.title);
    hatch_defs(&mut f, &h.id);
    let mut last = None;
    for (i, panel) in h.panels.iter().enumerate() {
        let top = TOP + panel_h * i as f64;
        if let Some(c) = &panel.caption {
            kit::caption(&mut f, LEFT, top + 13.0, c);
        }
        let grid = Tiles::new(LEFT, top + caption, CELL, (h.cols.len(), h.rows.len()));
        kit::row_labels(&mut f, &grid.rows, &h.rows, LEFT - 8.0);
        kit::y_title(
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
        kit::band_labels(&mut f, &grid.cols, &h.cols, bottom);
        let labels_h = kit::band_labels_height(&grid.cols, &h.cols);
        let title_y = bottom + labels_h + 18.0;
        let mid = (grid.cols.r0 + grid.cols.r1) / 2.0;
        kit::x_title(&mut f, mid, title_y, X_TITLE);
        height = title_y + 12.0;
    }
    let legend_x = LEFT + body_w + 30.0;
    let next = colour_bar(&mut f, h, legend_x, TOP + 10.0);
    let end = key(&mut f, h, legend_x, next);
    f.height = height.max(end + 12.0);
    f.finish()
}
