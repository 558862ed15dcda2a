//! The human probe report: one table per pattern (rows block size, columns
//! offset; aligned IOPS first, then each offset as % of aligned), then the
//! verdict lines.

use crate::probe::report::ProbeReport;
use crate::report::style::{table, Style};
use crate::units::human;

/// `512`, `3584`, `4608`, `63.5K`, `1023.5K`.
fn offset_label(o: u64) -> String {
    if o < 10_000 {
        o.to_string()
    } else {
        let k = o as f64 / 1024.0;
        if k.fract() == 0.0 {
            format!("{k:.0}K")
        } else {
            format!("{k:.1}K")
        }
    }
}

fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

pub fn render(r: &ProbeReport, st: &Style) -> String {
    let mut out = String::new();
    let t = &r.target;
    out.push_str(&format!(
        "{} ({}, {}; logical {}, physical {}; O_DIRECT alignment {} from {}{})\n",
        st.bold(&t.path.display().to_string()),
        t.kind.as_str(),
        human(t.size_bytes),
        human(u64::from(t.logical_block_size)),
        human(u64::from(t.physical_block_size)),
        human(u64::from(t.dio_offset_align)),
        t.dio_rule,
        t.node_block_size
            .map(|b| format!("; device node block size {}", human(u64::from(b))))
            .unwrap_or_default()
    ));
    let p = &r.plan;
    let e = &r.engine;
    out.push_str(&format!(
        "engine {}, queue depth {}, {} job{}, {}{}; {} round{} x {:.2} s per cell (+{:.2} s warm-up), random I/O at offset + k x {}\n",
        e.name.as_str(),
        e.queue_depth,
        e.jobs,
        if e.jobs == 1 { "" } else { "s" },
        if e.direct { "O_DIRECT" } else { "buffered" },
        if e.fdatasync { " + fdatasync per write" } else { "" },
        p.rounds,
        if p.rounds == 1 { "" } else { "s" },
        p.runtime.as_secs_f64(),
        p.warmup.as_secs_f64(),
        human(p.unit)
    ));
    if let Some(why) = &e.fallback_reason {
        out.push_str(&format!("{}\n", st.warn(why)));
    }
    let env = &r.environment;
    out.push_str(&st.dim(&format!(
        "kernel {}; scheduler {}; governor {}{}\n",
        env.kernel.split(' ').next().unwrap_or("?"),
        env.scheduler.as_deref().unwrap_or("-"),
        env.cpu_governor.as_deref().unwrap_or("-"),
        env.filesystem
            .as_ref()
            .map(|f| format!("; {} on {} ({})", f.fs_type, f.mount_point, f.source))
            .unwrap_or_default()
    )));
    let offsets = p.offsets();
    for pattern in p.patterns() {
        out.push('\n');
        out.push_str(&format!(
            "{}: IOPS at offset 0, then % difference from it at each offset (* significant)\n",
            st.bold(pattern.as_str())
        ));
        let mut rows = vec![std::iter::once("bs".to_string())
            .chain(offsets.iter().map(|&o| offset_label(o)))
            .collect::<Vec<_>>()];
        for bs in p.block_sizes() {
            let mut row = vec![human(u64::from(bs))];
            for &o in &offsets {
                let cell = r.cells.iter().find(|c| {
                    c.cell.pattern == pattern && c.cell.block_size == bs && c.cell.offset == o
                });
                row.push(match cell {
                    None => "-".into(),
                    Some(c) => match &c.relative {
                        None => si(c.iops.median),
                        Some(rel) => {
                            let pct = (rel.ratio - 1.0) * 100.0;
                            let text =
                                format!("{pct:+.0}%{}", if rel.significant { "*" } else { "" });
                            if rel.significant && pct < 0.0 {
                                st.bad(&text)
                            } else if rel.significant {
                                st.good(&text)
                            } else {
                                st.dim(&text)
                            }
                        }
                    },
                });
            }
            rows.push(row);
        }
        out.push_str(&table(&rows));
    }
    out.push('\n');
    let inf = &r.inference;
    let verdict = if r.has_penalty() {
        st.warn(&inf.statement)
    } else {
        st.good(&inf.statement)
    };
    out.push_str(&format!("{verdict}\n"));
    for pen in &inf.penalties {
        out.push_str(&format!("  {}\n", pen.sentence()));
    }
    out.push_str(&st.dim(&format!("method: {}\n", inf.method)));
    out
}
