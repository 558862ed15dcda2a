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

/// The target line: what was measured, and (O_DIRECT only) the rule
/// offsets and sizes had to follow.
fn target_line(r: &ProbeReport, st: &Style) -> String {
    let t = &r.target;
    let direct = if r.engine.direct {
        format!(
            "; O_DIRECT alignment {} from {}",
            human(u64::from(t.dio_offset_align)),
            t.dio_rule
        )
    } else {
        String::new()
    };
    format!(
        "{} ({}, {}; logical {}, physical {}{direct}{})\n",
        st.bold(&t.path.display().to_string()),
        t.kind.as_str(),
        human(t.size_bytes),
        human(u64::from(t.logical_block_size)),
        human(u64::from(t.physical_block_size)),
        t.node_block_size
            .map(|b| format!("; device node block size {}", human(u64::from(b))))
            .unwrap_or_default()
    )
}

fn engine_line(r: &ProbeReport) -> String {
    let p = &r.plan;
    let e = &r.engine;
    format!(
        "engine {}, queue depth {}, {} job{}, {}{}; {} round{} run (at most {} per comparison, each stopped once decided), {:.2} s or more per cell (+{:.2} s warm-up), random I/O at offset + k x {}; {:.1} s in all{}\n",
        e.name.as_str(),
        e.queue_depth,
        e.jobs,
        if e.jobs == 1 { "" } else { "s" },
        if e.direct { "O_DIRECT" } else { "buffered" },
        if e.fdatasync { " + fdatasync per write" } else { "" },
        r.rounds_run,
        if r.rounds_run == 1 { "" } else { "s" },
        p.rounds,
        p.runtime.as_secs_f64(),
        p.warmup.as_secs_f64(),
        human(p.unit),
        r.elapsed_s,
        if r.zoomed { "; zoomed to 1 MiB blocks" } else { "" }
    )
}

/// A cell's table entry: aligned IOPS, or the % difference from them.
fn entry(c: &crate::probe::analyse::CellReport, st: &Style) -> String {
    let Some(rel) = &c.relative else {
        return si(c.iops.median);
    };
    let pct = (rel.ratio - 1.0) * 100.0;
    let text = format!("{pct:+.0}%{}", if rel.significant { "*" } else { "" });
    if rel.significant && pct < 0.0 {
        st.bad(&text)
    } else if rel.significant {
        st.good(&text)
    } else {
        st.dim(&text)
    }
}

fn tables(r: &ProbeReport, st: &Style) -> String {
    let mut out = String::new();
    let sorted = |mut v: Vec<u64>| {
        v.sort_unstable();
        v.dedup();
        v
    };
    let offsets = sorted(r.cells.iter().map(|c| c.cell.offset).collect());
    let sizes = sorted(
        r.cells
            .iter()
            .map(|c| u64::from(c.cell.block_size))
            .collect(),
    );
    for pattern in r.plan.patterns() {
        out.push('\n');
        out.push_str(&format!(
            "{}: IOPS at offset 0, then % difference from it at each offset (* decided)\n",
            st.bold(pattern.as_str())
        ));
        let mut rows = vec![std::iter::once("bs".to_string())
            .chain(offsets.iter().map(|&o| offset_label(o)))
            .collect::<Vec<_>>()];
        for &bs in &sizes {
            let mut row = vec![human(bs)];
            for &o in &offsets {
                let cell = r.cells.iter().find(|c| {
                    c.cell.pattern == pattern
                        && u64::from(c.cell.block_size) == bs
                        && c.cell.offset == o
                });
                row.push(cell.map_or_else(|| "-".into(), |c| entry(c, st)));
            }
            rows.push(row);
        }
        out.push_str(&table(&rows));
    }
    out
}

pub fn render(r: &ProbeReport, st: &Style) -> String {
    let mut out = target_line(r, st);
    out.push_str(&engine_line(r));
    if let Some(why) = &r.engine.fallback_reason {
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
    out.push_str(&tables(r, st));
    out.push('\n');
    if r.partial {
        out.push_str(&st.warn(
            "PARTIAL: interrupted; what follows is judged on the rounds measured until then\n",
        ));
    }
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
    out.push_str(&format!("{}\n", inf.summary));
    for n in &inf.noise {
        out.push_str(&st.dim(&format!(
            "noise {}: rounds vary by ±{:.1}% against each other; smallest penalty {} rounds can tell: {:.0}%\n",
            n.pattern.as_str(),
            n.paired_sd_pct,
            r.plan.rounds,
            n.detectable_pct
        )));
    }
    if let Some(a) = &inf.advice {
        out.push_str(&format!("{}\n", st.warn(a)));
    }
    if st.verbose {
        out.push_str(&st.dim(&format!("method: {}\n", inf.method)));
    }
    out
}
