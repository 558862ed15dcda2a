//! Line plots over categories (offsets, block sizes): one line per
//! series, its 95 % interval as a band, a marker per point with its
//! tooltip. Several panels (targets, or IOPS beside MiB/s) share one
//! legend; the caller gives each panel its y range, so targets can share
//! one.

use super::super::kit;
use super::super::kit::Axis;
use super::super::kit::MUTED;
use super::super::kit::{clip_arrow, clip_name};
use super::super::kit::{ticks, Room};
use super::super::kit::{KeyBox, Legend};
use super::super::scale::Log;
use super::super::scale::{Band, Clip, Rgb};
use super::super::svg::{points, El, Figure};
use super::layout::{band_outline, band_runs, short, Point};

pub struct Marker {
    pub point: Point,
    /// Filled: significantly different from its reference.
    pub filled: bool,
    pub tip: String,
    pub data: Vec<(&'static str, String)>,
}

pub struct Series {
    /// The legend's text for it.
    pub label: String,
    pub colour: Rgb,
    /// A `stroke-dasharray` (several targets), `None` for solid.
    pub dash: Option<&'static str>,
    pub markers: Vec<Marker>,
    pub data: Vec<(&'static str, String)>,
}

pub struct Panel {
    pub caption: Option<String>,
    pub y_title: String,
    pub y: (f64, f64),
    pub series: Vec<Series>,
}

pub struct Plot {
    pub id: String,
    pub title: String,
    pub x_labels: Vec<String>,
    pub x_title: String,
    pub panels: Vec<Panel>,
    pub per_row: usize,
    pub legend_title: String,
    /// Lines under the legend (what the band and filled markers mean).
    pub notes: Vec<String>,
}

/// The plot area's height, its least width and the least width of a slot.
const PLOT_H: f64 = 260.0;
const PLOT_W: f64 = 420.0;
const SLOT_W: f64 = 50.0;
/// The widest figure that still reads on the page (scaled by at most 5 %).
const PAGE_W: f64 = 1240.0;
const LEFT: f64 = 72.0;
const TOP: f64 = 48.0;
const RIGHT: f64 = 24.0;
const LEGEND_W: f64 = 190.0;
/// The IOPS labels up a panel: a line each, 14 px apart at least.
const Y_ROOM: Room = Room {
    axis: Axis::Y,
    size: 11.0,
    gap: 14.0,
};

/// One series in its panel: band, line, markers.
fn series(f: &mut Figure, s: &Series, x: &Band, y: &Log) {
    f.group("line", &s.data);
    let xs = |slot: usize| x.mid(slot);
    let pts: Vec<Point> = s.markers.iter().map(|m| m.point).collect();
    for run in band_runs(&pts) {
        let el = if run.len() == 1 {
            let (slot, lo, hi) = run[0];
            El::new("line")
                .at("x1", xs(slot))
                .at("x2", xs(slot))
                .at("y1", y.map_within(lo))
                .at("y2", y.map_within(hi))
                .attr("stroke", s.colour.hex())
                .attr("stroke-opacity", 0.4)
                .attr("stroke-width", 6)
        } else {
            let outline = band_outline(&run, xs, |v| y.map_within(v));
            El::new("polygon")
                .attr("points", points(&outline))
                .attr("fill", s.colour.hex())
                .attr("fill-opacity", 0.12)
        };
        f.add(el.attr("class", "band"));
    }
    let line: Vec<(f64, f64)> = pts
        .iter()
        .map(|p| (xs(p.slot), y.map_within(p.y)))
        .collect();
    let mut el = El::new("polyline")
        .attr("points", points(&line))
        .attr("fill", "none")
        .attr("stroke", s.colour.hex())
        .attr("stroke-width", 2);
    if let Some(d) = s.dash {
        el = el.attr("stroke-dasharray", d);
    }
    f.add(el);
    // The markers' stroke and hollow fill are set once on their group.
    f.raw(&format!(
        "<g fill=\"#ffffff\" stroke=\"{}\" stroke-width=\"1.5\">\n",
        s.colour.hex()
    ));
    for m in &s.markers {
        let (low, high) = clipped(y, &m.point);
        let edge = |v: f64| y.map_within(v);
        if low {
            f.add(clip_arrow(
                xs(m.point.slot),
                edge(0.0),
                Axis::Y,
                Clip::Low,
                &s.colour.hex(),
            ));
        }
        if high {
            let top = edge(f64::MAX);
            f.add(clip_arrow(
                xs(m.point.slot),
                top,
                Axis::Y,
                Clip::High,
                &s.colour.hex(),
            ));
        }
        let mut el = El::new("circle")
            .attr("class", "point")
            .at("cx", xs(m.point.slot))
            .at("cy", y.map_within(m.point.y))
            .at("r", 3.5);
        if let Some(n) = clip_name(low, high) {
            el = el.attr("data-clipped", n);
        }
        if m.filled {
            el = el.attr("fill", s.colour.hex());
        }
        el = el.title(m.tip.clone());
        for (k, v) in &m.data {
            el = el.attr(&format!("data-{k}"), v);
        }
        f.add(el);
    }
    f.raw("</g>\n");
    f.end_group();
}

/// Which ends of a point's interval (or the point) lie past the axis:
/// they are drawn at the edge, with an arrow.
pub fn clipped(y: &Log, p: &Point) -> (bool, bool) {
    let ci = p.ci.map_or(vec![], |c| c.to_vec());
    ci.into_iter()
        .chain([p.y])
        .fold((false, false), |(lo, hi), v| match y.clipped(v) {
            Some(Clip::Low) => (true, hi),
            Some(Clip::High) => (lo, true),
            None => (lo, hi),
        })
}

/// Whether any point of the plot is drawn at an axis edge.
fn any_clipped(plot: &Plot) -> bool {
    plot.panels.iter().any(|p| {
        let y = Log::new(p.y, (1.0, 0.0));
        p.series
            .iter()
            .flat_map(|s| &s.markers)
            .any(|m| clipped(&y, &m.point) != (false, false))
    })
}

/// One panel at `(ox, oy)`: axes, grid, the series.
fn panel(f: &mut Figure, p: &Panel, plot: &Plot, at: (f64, f64), plot_w: f64, last_row: bool) {
    let (x0, y0) = (at.0 + LEFT, at.1 + TOP);
    let (x1, y1) = (x0 + plot_w, y0 + PLOT_H);
    if let Some(c) = &p.caption {
        kit::caption(f, x0, y0 - 10.0, c);
    }
    let y = Log::new(p.y, (y1, y0));
    let ticks = ticks(kit::log(y.lo, y.hi), |v| y.map(v), short, Y_ROOM);
    kit::y_grid(f, &ticks, x0, x1);
    kit::y_title(f, at.0 + 16.0, (y0 + y1) / 2.0, &p.y_title);
    let x = Band {
        n: plot.x_labels.len(),
        r0: x0,
        r1: x1,
    };
    kit::frame(f, x0, y0, x1, y1);
    kit::band_labels(f, &x, &plot.x_labels, y1);
    if last_row {
        let h = kit::band_labels_height(&x, &plot.x_labels);
        kit::x_title(f, (x0 + x1) / 2.0, y1 + h + 14.0, &plot.x_title);
    }
    for s in &p.series {
        series(f, s, &x, &y);
    }
}

/// The legend: one line per distinct series label, then the notes.
fn legend(f: &mut Figure, plot: &Plot, x: f64, y: f64) -> f64 {
    let mut l = Legend::down(x, y).key_width(26.0);
    l.heading(f, &plot.legend_title);
    let mut seen: Vec<&str> = Vec::new();
    for s in plot.panels.iter().flat_map(|p| &p.series) {
        if seen.contains(&s.label.as_str()) {
            continue;
        }
        seen.push(&s.label);
        let key = |b: KeyBox| {
            let el = El::new("line")
                .at("x1", b.x)
                .at("x2", b.x + b.w)
                .at("y1", b.mid_y())
                .at("y2", b.mid_y())
                .attr("stroke", s.colour.hex())
                .attr("stroke-width", 2.5);
            vec![match s.dash {
                Some(d) => el.attr("stroke-dasharray", d),
                None => el,
            }]
        };
        l.entry(f, (&s.label, &[]), key, &[&s.label]);
    }
    let notes: Vec<&str> = plot.notes.iter().map(String::as_str).collect();
    if !notes.is_empty() {
        l.note(f, &notes);
    }
    if any_clipped(plot) {
        let key = |b: KeyBox| vec![clip_arrow(b.x + 5.0, b.y + 1.0, Axis::Y, Clip::High, MUTED)];
        let lines = ["at an edge: the interval", "goes on past the axis"];
        l.entry(f, ("clipped", &[]), key, &lines);
    }
    l.y()
}

/// How wide a panel's plot area is: wider with more slots.
pub fn plot_width(slots: usize) -> f64 {
    (SLOT_W * slots as f64).max(PLOT_W)
}

/// Panels a row: side by side while they fit on the page, else stacked.
pub fn per_row(wanted: usize, panels: usize, panel_w: f64) -> usize {
    let fit = ((PAGE_W - LEGEND_W) / panel_w).floor().max(1.0) as usize;
    wanted.min(fit).clamp(1, panels.max(1))
}

/// The figure.
pub fn draw(plot: &Plot) -> String {
    let plot_w = plot_width(plot.x_labels.len());
    let slots = Band {
        n: plot.x_labels.len(),
        r0: 0.0,
        r1: plot_w,
    };
    let below = kit::band_labels_height(&slots, &plot.x_labels) + 24.0;
    let size = (LEFT + plot_w + RIGHT, TOP + PLOT_H + below);
    let n = plot.panels.len().max(1);
    let per_row = per_row(plot.per_row, n, size.0);
    let rows = n.div_ceil(per_row);
    let width = size.0 * per_row as f64 + LEGEND_W;
    let mut f = Figure::new(&plot.id, width, size.1 * rows as f64, &plot.title);
    for (i, p) in plot.panels.iter().enumerate() {
        let at = super::layout::panel_origin(i, per_row, size);
        panel(&mut f, p, plot, at, plot_w, i / per_row == rows - 1);
    }
    let end = legend(&mut f, plot, size.0 * per_row as f64 + 4.0, TOP);
    f.height = f.height.max(end + 10.0);
    f.finish()
}

/// The legend's dash of the `i`th target (solid for the first).
pub fn dash(i: usize) -> Option<&'static str> {
    [None, Some("7 4"), Some("2 3"), Some("9 3 2 3")][i % 4]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_widen_with_slots_and_stack_when_too_wide() {
        assert_eq!(plot_width(6), PLOT_W);
        assert_eq!(plot_width(12), 600.0);
        // Two 516 px panels fit beside the legend; two 696 px ones do not.
        assert_eq!(per_row(2, 2, 516.0), 2);
        assert_eq!(per_row(2, 2, 696.0), 1);
        assert_eq!(per_row(2, 1, 516.0), 1);
    }

    #[test]
    fn an_interval_past_the_axis_is_clipped_and_marked() {
        let y = Log::new((100.0, 1000.0), (260.0, 0.0));
        let p = |v: f64, ci: Option<[f64; 2]>| Point { slot: 0, y: v, ci };
        assert_eq!(clipped(&y, &p(500.0, Some([400.0, 600.0]))), (false, false));
        assert_eq!(clipped(&y, &p(500.0, Some([0.0, 600.0]))), (true, false));
        assert_eq!(clipped(&y, &p(500.0, Some([50.0, 5000.0]))), (true, true));
        assert_eq!(clipped(&y, &p(500.0, None)), (false, false));
        let series = Series {
            label: "4 KiB".into(),
            colour: Rgb(0, 0, 0),
            dash: None,
            markers: vec![Marker {
                point: p(500.0, Some([50.0, 600.0])),
                filled: false,
                tip: "t".into(),
                data: vec![],
            }],
            data: vec![],
        };
        let plot = Plot {
            id: "p".into(),
            title: "t".into(),
            x_labels: vec!["0".into()],
            x_title: "offset".into(),
            panels: vec![Panel {
                caption: None,
                y_title: "IOPS".into(),
                y: (100.0, 1000.0),
                series: vec![series],
            }],
            per_row: 1,
            legend_title: "bs".into(),
            notes: vec![],
        };
        let svg = draw(&plot);
        assert!(svg.contains("data-clipped=\"low\""), "{svg}");
        // The arrow's tip sits on the bottom edge (y 48 + 260), pointing down.
        assert!(svg.contains("<polygon class=\"clipped\""), "{svg}");
        assert!(svg.contains("data-legend=\"clipped\""));
        assert!(!svg.contains("data-clipped=\"high\" "), "{svg}");
    }
}
