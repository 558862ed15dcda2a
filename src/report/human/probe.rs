//! The human probe report: one table per pattern (rows block size, columns
//! offset; aligned IOPS first, then each offset as % of aligned), then the
//! verdict lines.

use crate::probe::Pattern;
use crate::probe::{CellReport, ContrastReport, Inference};
use crate::probe::{ProbeRun, TargetInfo};
use crate::report::columns::{self, Entry};
use crate::report::style::{Style, View};
use crate::report::tables::{self, Iops, Versus};
use crate::units::human;

/// The target line: what was measured, and (O_DIRECT only) the rule
/// offsets and sizes had to follow.
fn target_line(t: &TargetInfo, r: &ProbeRun, st: &Style) -> String {
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

fn engine_line(r: &ProbeRun) -> String {
    let p = &r.plan;
    let e = &r.engine;
    format!(
        "engine {}, queue depth {}, {} job{}, {}{}; {} round{} run (at most {} per comparison, each stopped once decided), {:.2} s or more per cell (+{:.2} s warm-up), random I/O at offset + k x {}; {:.1} s in all{}{}\n",
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
        if r.zoomed { "; zoomed to 1 MiB blocks" } else { "" },
        match p.max_time {
            Some(t) if r.out_of_time => format!("; the --max-time budget ({:.0} s) was spent", t.as_secs_f64()),
            _ => String::new(),
        }
    )
}

/// One grid per pattern: block sizes down, offsets across, each entry
/// from `entry` (None: "-").
fn grids<T: Entry>(
    cells: &[CellReport],
    patterns: &[Pattern],
    title: &str,
    st: &Style,
    entry: &dyn Fn(Pattern, u64, u64) -> Option<T>,
) -> String {
    let mut out = String::new();
    let keys = || {
        cells
            .iter()
            .map(|c| (u64::from(c.cell.block_size), c.cell.offset))
    };
    for &pattern in patterns {
        out.push('\n');
        out.push_str(&format!("{}: {title}\n", st.bold(pattern.as_str())));
        let (cols, rows) = columns::grid(keys(), |bs, o| entry(pattern, bs, o));
        let cols: Vec<_> = cols.iter().collect();
        let rows: Vec<_> = rows.iter().collect();
        out.push_str(&columns::render(&cols, &rows, st, ""));
    }
    out
}

fn tables(cells: &[CellReport], patterns: &[Pattern], st: &Style) -> String {
    grids(
        cells,
        patterns,
        "IOPS at offset 0, then % difference from it at each offset (* decided)",
        st,
        &|pattern, bs, o| {
            cells
                .iter()
                .find(|c| {
                    c.cell.pattern == pattern
                        && u64::from(c.cell.block_size) == bs
                        && c.cell.offset == o
                })
                .map(Iops)
        },
    )
}

/// Each further target's cells against the first target's.
fn versus(r: &ProbeRun, st: &Style) -> String {
    let mut out = String::new();
    let patterns = r.plan.patterns();
    for (i, t) in r.targets.iter().enumerate().skip(1) {
        let title = format!(
            "% difference of {} from {} (* decided)",
            t.target.path.display(),
            r.target.path.display()
        );
        let find = |v: &&ContrastReport, p: Pattern, bs: u64, o: u64| {
            v.target == i && v.pattern == p && u64::from(v.block_size) == bs && v.offset == o
        };
        out.push_str(&grids(&t.cells, &patterns, &title, st, &|p, bs, o| {
            r.versus.iter().find(|v| find(v, p, bs, o)).map(Versus)
        }));
    }
    out
}

fn verdict(inf: &Inference, penalty: bool, rounds: u32, st: &Style) -> String {
    let mut out = String::new();
    let inconclusive = inf.confidence == crate::probe::Confidence::Inconclusive;
    let line = if penalty || inconclusive {
        st.warn(&inf.statement)
    } else {
        st.good(&inf.statement)
    };
    out.push_str(&format!("{line}\n"));
    for pen in &inf.penalties {
        out.push_str(&format!("  {}\n", pen.sentence()));
    }
    out.push_str(&format!("{}\n", inf.summary));
    for n in &inf.noise {
        // A saved document's window may be anything finite: no Duration
        // is made of it (Duration::from_secs_f64 panics past u64 seconds).
        let window = std::time::Duration::try_from_secs_f64(n.window_s).ok();
        let split = if let (true, Some(window)) = (n.jitter_pct.is_finite(), window) {
            format!(
                " at {} windows (±{:.1}% jitter, which longer windows average out; ±{:.1}% drift, which they do not)",
                crate::probe::secs(window),
                n.jitter_pct,
                n.drift_pct
            )
        } else {
            String::new()
        };
        out.push_str(&st.dim(&format!(
            "noise {}: rounds vary by ±{:.1}% against each other{split}; smallest penalty {} rounds can tell: {:.0}%\n",
            n.pattern.as_str(),
            n.paired_sd_pct,
            rounds,
            n.detectable_pct
        )));
    }
    if let Some(a) = &inf.advice {
        out.push_str(&format!("{}\n", st.warn(a)));
    }
    out
}

pub fn render(r: &ProbeRun, st: &Style) -> String {
    if st.view == View::Table {
        return table_only(r, st);
    }
    let mut out = String::new();
    if r.targets.is_empty() {
        out.push_str(&target_line(&r.target, r, st));
    }
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
    if let Some(h) = &env.host {
        out.push_str(&st.dim(&format!("host: {}\n", h.phrase())));
    }
    if r.partial {
        out.push_str(&st.warn(
            "PARTIAL: interrupted; what follows is judged on the rounds measured until then\n",
        ));
    }
    let patterns = r.plan.patterns();
    if r.erase_unit.is_some() {
        out.push_str(&erase_table(r, st));
        out.push_str(&verdict(&r.inference, r.has_penalty(), r.plan.rounds, st));
    } else if r.targets.is_empty() {
        out.push_str(&tables(&r.cells, &patterns, st));
        out.push('\n');
        out.push_str(&verdict(&r.inference, r.has_penalty(), r.plan.rounds, st));
    }
    if !r.pacing.statement.is_empty() {
        out.push_str(&st.dim(&format!("rounds: {}\n", r.pacing.statement)));
    }
    for t in &r.targets {
        out.push('\n');
        out.push_str(&target_line(&t.target, r, st));
        out.push_str(&tables(&t.cells, &patterns, st));
        out.push('\n');
        let penalty = !t.inference.penalties.is_empty();
        out.push_str(&verdict(&t.inference, penalty, r.plan.rounds, st));
    }
    out.push_str(&versus(r, st));
    if st.verbose {
        out.push_str(&st.dim(&format!("method: {}\n", r.inference.method)));
    }
    out
}

/// The erase-unit search: each candidate's reads' median latency ending
/// at, across and starting at its boundaries, and what across costs.
fn erase_table(r: &ProbeRun, st: &Style) -> String {
    let rows = tables::erase_rows(r);
    let rows: Vec<_> = rows.iter().collect();
    let all = tables::erase_columns();
    let cols: Vec<_> = all.iter().collect();
    let read = r.erase_unit.as_ref().map_or(0, |e| e.read_bytes);
    format!(
        "{}\n{}\n",
        st.dim(&format!(
            "{} reads at each boundary: median latency, and how much longer reads across took than those beside",
            human(read)
        )),
        columns::render(&cols, &rows, st, "")
    )
}

/// `probe -o COLUMNS` (and `-n`, `-r`, `-P`): one table of every cell,
/// the CSV's rows, instead of the report; several targets get the
/// target column first, whatever `-o` picked.
fn table_only(r: &ProbeRun, st: &Style) -> String {
    let rows = tables::cell_rows(r);
    let rows: Vec<_> = rows.iter().collect();
    let all = tables::cells();
    let picked = columns::select(&all, st.columns.as_deref(), |c| c.human);
    let cols = columns::naming_rows(&all, picked, "target", r.targets.len());
    columns::render(&cols, &rows, st, "")
}
