//! A disk's grains as bars on a log₂ byte scale: sysfs and the ioctl
//! beside each other per limit, the distrusted ones marked, 4 KiB and
//! 1 MiB drawn for reference.

use super::super::kit;
use super::super::kit::Axis;
use super::super::kit::XAxis;
use super::super::kit::{fit, text_width};
use super::super::kit::{ticks, Room};
use super::super::kit::{KeyBox, Legend};
use super::super::look::{self, Pattern};
use super::super::scale::{category, Linear};
use super::super::svg::{El, Figure};
use super::limits::Row;
use crate::topology::Disk;
use crate::units::human;

const WIDTH: f64 = 900.0;
const PLOT: (f64, f64) = (160.0, 700.0);
const TOP: f64 = 76.0;
const ROW: f64 = 36.0;
const BAR: f64 = 11.0;
/// The outline and marker of a distrusted value (Okabe–Ito vermillion).
const WARN: &str = "#d55e00";

/// The log₂ domain of the bars: from 256 B, so a 512-byte bar has a
/// length, to the power of two at or above the largest value (at least
/// 1 MiB, so the reference lines are always inside).
pub fn domain(values: impl Iterator<Item = i128>) -> (f64, f64) {
    let max = values.filter(|v| *v > 0).max().unwrap_or(1) as f64;
    (8.0, max.log2().ceil().max(20.0))
}

/// The figure `fig` of the grain rows of `d`.
pub fn figure(fig: &str, d: &Disk, rows: &[Row]) -> String {
    let rows: Vec<&Row> = rows.iter().filter(|r| r.grain).collect();
    let values = rows.iter().flat_map(|r| [Some(r.sysfs), r.ioctl]).flatten();
    let x = Linear::new(domain(values), PLOT);
    let bottom = TOP + rows.len() as f64 * ROW;
    let mut f = Figure::new(
        fig,
        WIDTH,
        bottom + 44.0,
        &format!(
            "I/O limits of {}: sysfs beside the ioctl",
            d.device.display()
        ),
    );
    look::defs(&mut f, fig);
    legend(&mut f, fig, d);
    references(&mut f, &x, bottom);
    for (i, r) in rows.iter().enumerate() {
        row(&mut f, fig, d, r, &x, TOP + i as f64 * ROW);
    }
    axis(&mut f, &x, bottom);
    f.finish()
}

fn legend(f: &mut Figure, fig: &str, d: &Disk) {
    let mut legend = Legend::across(8.0, 38.0);
    for (source, l) in [("sysfs", sysfs_look()), ("ioctl", ioctl_look())] {
        let key = |b: KeyBox| look::swatch_els(fig, l, (b.x, b.y, b.w, b.h), El::new("rect"));
        legend.entry(f, (source, &[]), key, &[source]);
    }
    let x = legend.x();
    let warn = "⚠ distrusted: a finding, or sysfs and the ioctl disagree";
    f.add(
        El::new("text")
            .at("x", x)
            .at("y", 38.0)
            .attr("fill", WARN)
            .attr("font-weight", "bold")
            .text(warn),
    );
    if d.ioctl.is_none() {
        let why = d.ioctl_error.as_deref().unwrap_or("no reason given");
        f.add(
            El::new("text")
                .at("x", 8.0)
                .at("y", 54.0)
                .attr("fill", "#555555")
                .text(fit(&format!("ioctl: not read ({why})"), WIDTH - 16.0, 11.0)),
        );
    }
}

fn sysfs_look() -> look::Look {
    look::Look {
        word: "sysfs",
        glyph: "",
        fill: category(0),
        pattern: None,
    }
}

fn ioctl_look() -> look::Look {
    look::Look {
        word: "ioctl",
        glyph: "",
        fill: category(4),
        pattern: Some(Pattern::Hatch),
    }
}

/// Dashed lines at 4 KiB and 1 MiB, labelled above the plot.
fn references(f: &mut Figure, x: &Linear, bottom: f64) {
    for (exp, label) in [(12.0, "4 KiB"), (20.0, "1 MiB")] {
        let px = x.map(exp);
        f.add(
            El::new("line")
                .at("x1", px)
                .at("x2", px)
                .at("y1", TOP - 4.0)
                .at("y2", bottom)
                .attr("stroke", "#555555")
                .attr("stroke-dasharray", "4 3"),
        );
        f.add(
            El::new("text")
                .at("x", px + 3.0)
                .at("y", TOP - 8.0)
                .attr("font-size", 9)
                .attr("fill", "#555555")
                .text(label),
        );
    }
}

/// One limit: its label, then the sysfs bar above the ioctl bar.
fn row(f: &mut Figure, fig: &str, d: &Disk, r: &Row, x: &Linear, y: f64) {
    let mark = if r.suspicious() { "⚠ " } else { "" };
    f.add(
        El::new("text")
            .at("x", PLOT.0 - 8.0)
            .at("y", y + ROW / 2.0 + 3.0)
            .attr("text-anchor", "end")
            .attr(
                "font-weight",
                if r.suspicious() { "bold" } else { "normal" },
            )
            .text(format!("{mark}{}", r.label)),
    );
    let sysfs_warn = !r.findings.is_empty() || r.differs();
    bar(
        f,
        fig,
        d,
        r,
        ("sysfs", Some(r.sysfs), sysfs_look(), sysfs_warn),
        x,
        y + 6.0,
    );
    let ioctl = if r.has_ioctl { r.ioctl } else { None };
    bar(
        f,
        fig,
        d,
        r,
        ("ioctl", ioctl, ioctl_look(), r.differs()),
        x,
        y + 8.0 + BAR,
    );
}

/// One bar, its value written after it; `warn` outlines it and adds ⚠.
fn bar(
    f: &mut Figure,
    fig: &str,
    d: &Disk,
    r: &Row,
    (source, value, lk, warn): (&str, Option<i128>, look::Look, bool),
    x: &Linear,
    y: f64,
) {
    f.group(
        "limit",
        &[
            ("disk", d.name.clone()),
            ("limit", r.key.to_string()),
            ("source", source.to_string()),
            ("value", value.map_or(String::new(), |v| v.to_string())),
            ("suspicious", warn.to_string()),
        ],
    );
    let text = match value {
        None if !r.has_ioctl => "no ioctl reads this".to_string(),
        None => "not read".to_string(),
        Some(v) if v <= 0 => format!("{v}: not reported"),
        Some(v) => format!("{v} ({})", human(v as u64)),
    };
    let end = match value {
        Some(v) if v > 0 => x.map((v as f64).log2()),
        _ => PLOT.0,
    };
    if end > PLOT.0 {
        let mut tip = format!("{} of {}, {source}: {text}", r.label, d.device.display());
        for fd in &r.findings {
            tip.push_str(&format!(
                "\n⚠ {} ({}): {}",
                fd.code, fd.severity, fd.message
            ));
        }
        look::swatch(
            f,
            fig,
            lk,
            (PLOT.0, y, end - PLOT.0, BAR),
            El::new("rect").title(tip),
        );
        if warn {
            f.add(
                El::new("rect")
                    .at("x", PLOT.0 - 1.5)
                    .at("y", y - 1.5)
                    .at("width", end - PLOT.0 + 3.0)
                    .at("height", BAR + 3.0)
                    .attr("fill", "none")
                    .attr("stroke", WARN)
                    .attr("stroke-width", "1.5")
                    .attr("stroke-dasharray", "3 2")
                    .attr("pointer-events", "none"),
            );
        }
    }
    let colour = if warn { WARN } else { "#222222" };
    let label = format!("{}{source}: {text}", if warn { "⚠ " } else { "" });
    f.add(
        El::new("rect")
            .at("x", end + 3.0)
            .at("y", y - 1.0)
            .at("width", text_width(&label, 10.0) + 6.0)
            .at("height", BAR + 2.0)
            .attr("fill", "#ffffff")
            .attr("fill-opacity", "0.85")
            .attr("pointer-events", "none"),
    );
    f.add(
        El::new("text")
            .at("x", end + 6.0)
            .at("y", y + BAR - 2.0)
            .attr("font-size", 10)
            .attr("fill", colour)
            .attr("font-weight", if warn { "bold" } else { "normal" })
            .text(label),
    );
    f.end_group();
}

/// The label of 2^`e` bytes. A limit of u64::MAX (a saved document may
/// say so) puts the axis's end at 2^64, past what u64 shifts to.
fn power_label(e: u32) -> String {
    match 1u64.checked_shl(e) {
        Some(v) => human(v),
        None => "16 EiB".into(),
    }
}

/// Powers of two along the bottom, every one a tick, as many labelled
/// (in binary units) as fit.
fn axis(f: &mut Figure, x: &Linear, y: f64) {
    let (lo, hi) = (x.d0 as u32, x.d1 as u32);
    let room = Room {
        axis: Axis::X,
        size: 10.0,
        gap: 12.0,
    };
    let labelled = ticks(
        kit::every_other(lo, hi),
        |e| x.map(e),
        |e| power_label(e as u32),
        room,
    );
    let minor: Vec<f64> = (lo..=hi).map(|e| x.map(f64::from(e))).collect();
    XAxis {
        from: PLOT.0,
        to: PLOT.1,
        y,
        ticks: &labelled,
        minor: &minor,
        size: room.size,
        title: "bytes, log₂ scale (each tick doubles)",
    }
    .draw(f);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_domain_reaches_the_largest_grain_and_1_mib() {
        assert_eq!(domain([512, 4096, 0].into_iter()), (8.0, 20.0));
        // A bridge's 65535 × 512 lies just under 32 MiB.
        assert_eq!(domain([33553920].into_iter()), (8.0, 25.0));
        assert_eq!(domain(std::iter::empty()), (8.0, 20.0));
    }

    #[test]
    fn the_axis_reaches_2_to_the_64() {
        assert_eq!(domain([u64::MAX.into()].into_iter()), (8.0, 64.0));
        assert_eq!(power_label(12), "4 KiB");
        assert_eq!(power_label(63), "8 EiB");
        assert_eq!(power_label(64), "16 EiB");
    }

    #[test]
    fn labels_are_thinned_to_fit() {
        // 12 powers over 540 px: 45 px each, labelled every other.
        let x = Linear::new((8.0, 20.0), PLOT);
        let mut f = Figure::new("f", WIDTH, 100.0, "t");
        axis(&mut f, &x, 50.0);
        let svg = f.finish();
        assert!(svg.contains(">256 B</text>") && svg.contains(">1 KiB</text>"));
        assert!(!svg.contains(">512 B</text>"), "{svg}");
    }
}
