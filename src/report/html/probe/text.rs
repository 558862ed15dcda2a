//! The words of a probe section: what the run is, its verdict per target
//! (statement, penalties, noise, advice) and its setup.

use super::super::page;
use super::super::svg::esc;
use super::layout::{bs_label, offset_label};
use super::Run;
use crate::probe::ContrastKind;
use crate::probe::Environment;
use crate::probe::ProbedTarget;
use crate::probe::NO_REPLICATES;
use crate::probe::{Inference, Noise, Penalty};
use crate::report::columns::{self, Column};
use crate::units::human;
use crate::units::utc;

/// What the run measured, and whether its numbers have intervals.
pub fn overview(run: &Run) -> String {
    let cells: usize = run.parts.iter().map(|p| p.cells.len()).sum();
    let patterns: Vec<String> = run.patterns.iter().map(|p| p.to_string()).collect();
    let mut s = page::para(&format!(
        "{cells} cells ({}; {} block sizes × {} offsets) on {} target{}.",
        patterns.join(", "),
        run.sizes.len(),
        run.offsets.len(),
        run.parts.len(),
        if run.parts.len() == 1 { "" } else { "s" }
    ));
    if run.fio() {
        s.push_str(&page::note(&format!(
            "fio's results for the grid of probe --emit-fio: {NO_REPLICATES}. \
             Ratios against offset 0 are of the single figures."
        )));
    }
    if run.doc.partial {
        s.push_str(&page::note(
            "Ctrl-C ended this run early: it is judged on what was measured.",
        ));
    }
    s
}

/// What a penalty was measured against.
fn against(kind: ContrastKind) -> String {
    match kind {
        ContrastKind::Offset => "offset 0".into(),
        ContrastKind::BlockSize => "the next larger block size".into(),
        ContrastKind::Target => "the first target".into(),
    }
}

/// A penalty: its row, what it was measured against, where it is worst,
/// and how much IOPS it costs.
fn penalty_columns() -> Vec<Column<Penalty>> {
    type P = Column<Penalty>;
    vec![
        P::html_only("pattern", "pattern", |p| p.pattern.to_string()),
        P::html_only("block_size", "block size", |p| {
            bs_label(p.block_size.into())
        }),
        P::html_only("against", "against", |p| against(p.kind)),
        P::html_only("worst_offset", "worst offset", |p| {
            offset_label(p.worst_offset)
        }),
        P::html_only("offsets", "slower offsets", |p| {
            let offsets: Vec<String> = p.offsets.iter().map(|o| offset_label(*o)).collect();
            offsets.join(", ")
        }),
        P::html_only("slower", "IOPS lost", |p| format!("{:.1} %", p.slower_pct)).num(),
        P::html_only("ci95", "95 % CI", |p| {
            format!("{:.1}–{:.1} %", p.ci95_pct[0], p.ci95_pct[1])
        })
        .num(),
    ]
}

fn penalties(id: &str, inf: &Inference) -> String {
    if inf.penalties.is_empty() {
        return String::new();
    }
    let cols = penalty_columns();
    columns::html(
        &format!("{id}-penalties"),
        "Penalties found: IOPS lost (the row's typical penalty and its 95 % CI)",
        &cols.iter().collect::<Vec<_>>(),
        &inf.penalties.iter().collect::<Vec<_>>(),
    )
}

/// A pattern's noise: how much its rounds vary, and what that lets the
/// plan detect.
fn noise_columns() -> Vec<Column<Noise>> {
    type N = Column<Noise>;
    vec![
        N::html_only("pattern", "pattern", |n| n.pattern.to_string()),
        N::html_only("paired_sd", "paired round-to-round SD", |n| {
            format!("±{:.1} %", n.paired_sd_pct)
        })
        .num(),
        N::html_only("detectable", "smallest detectable penalty", |n| {
            format!("{:.1} %", n.detectable_pct)
        })
        .num(),
    ]
}

fn noise(id: &str, inf: &Inference) -> String {
    if inf.noise.is_empty() {
        return String::new();
    }
    let cols = noise_columns();
    columns::html(
        &format!("{id}-noise"),
        "Noise: how much rounds vary, and the smallest penalty the plan could detect",
        &cols.iter().collect::<Vec<_>>(),
        &inf.noise.iter().collect::<Vec<_>>(),
    )
}

/// One target's inference.
fn verdict(run: &Run, t: usize, part: &ProbedTarget) -> String {
    let inf = &part.inference;
    let id = format!("{}{}", run.id, run.target_id(t));
    let mut s = String::new();
    if run.multi() {
        s.push_str(&page::heading(
            4,
            &format!("{id}-verdict"),
            &run.target_name(t),
        ));
    }
    if !inf.statement.is_empty() {
        s.push_str(&format!(
            "<p><strong>{}</strong></p>\n",
            esc(&inf.statement)
        ));
    }
    if !inf.summary.is_empty() {
        s.push_str(&page::para(&inf.summary));
    }
    // One fio pass has no verdict of its own.
    if !run.fio() {
        let unit = inf
            .effective_unit_bytes
            .map(|u| format!("; effective internal unit {}", human(u)))
            .unwrap_or_default();
        s.push_str(&page::note(&format!(
            "confidence: {}{unit}",
            inf.confidence
        )));
    }
    s.push_str(&penalties(&id, inf));
    s.push_str(&noise(&id, inf));
    if let Some(a) = &inf.advice {
        s.push_str(&page::note(&format!("advice: {a}")));
    }
    if inf.undecided > 0 {
        s.push_str(&page::note(&format!(
            "{} comparison(s) were still undecided when measuring stopped.",
            inf.undecided
        )));
    }
    s
}

/// The verdict of every target.
pub fn verdicts(run: &Run) -> String {
    let mut s = page::heading(3, &format!("{}-verdict", run.id), "Verdict");
    for (t, part) in run.parts.iter().enumerate() {
        s.push_str(&verdict(run, t, part));
    }
    s
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

/// How the run was measured: engine and plan.
pub fn plan(run: &Run) -> String {
    let d = run.doc;
    let (e, p) = (&d.engine, &d.plan);
    let io = format!(
        "{}{}",
        if e.direct { "O_DIRECT" } else { "buffered" },
        if e.fdatasync {
            ", fdatasync after each write"
        } else {
            ""
        }
    );
    let mut rows: Vec<(&str, String)> = vec![
        (
            "source",
            if run.fio() {
                "fio".into()
            } else {
                format!("diskalign {}", d.header.diskalign_version)
            },
        ),
        ("engine", e.name.to_string()),
    ];
    if !run.fio() {
        rows.extend([
            ("queue depth", e.queue_depth.to_string()),
            ("jobs", e.jobs.to_string()),
            ("I/O", io),
            ("preset", p.preset.to_string()),
            (
                "rounds run",
                format!("{} (at most {} per comparison)", d.rounds_run, p.rounds),
            ),
            (
                "window per cell and round",
                format!("{:.2} s or more", p.runtime.as_secs_f64()),
            ),
            (
                "smallest penalty sought",
                format!("{:.0} %", p.min_effect * 100.0),
            ),
            ("seed", p.seed.to_string()),
            ("elapsed", format!("{:.1} s", d.elapsed_s)),
            ("partial (Ctrl-C)", yes_no(d.partial)),
        ]);
    }
    if d.started_unix > 0 {
        rows.push(("started", utc(d.started_unix)));
    }
    let cols = plan_columns();
    columns::html(
        &format!("{}-plan", run.id),
        "How it was measured",
        &cols.iter().collect::<Vec<_>>(),
        &rows.iter().collect::<Vec<_>>(),
    )
}

/// A row of a table of settings: what, and its value.
type Setting = (&'static str, String);

/// The plan's settings: a heading column and their values.
fn plan_columns() -> Vec<Column<Setting>> {
    vec![
        Column::html_only("setting", "", |r: &Setting| r.0.to_string()),
        Column::html_only("value", "value", |r: &Setting| r.1.clone()),
    ]
}

/// The rows of the environment table: a label and one value per target.
/// Of a fio run only the targets' files are known.
fn env_rows(parts: &[ProbedTarget], fio: bool) -> Vec<(&'static str, Vec<String>)> {
    let per = |f: &dyn Fn(&ProbedTarget) -> String| parts.iter().map(f).collect::<Vec<_>>();
    let env =
        |f: fn(&Environment) -> Option<String>| per(&|p| f(&p.environment).unwrap_or_default());
    let topo = |f: fn(&crate::iolimits::Topology) -> String| {
        per(&|p| p.environment.topology.as_ref().map(f).unwrap_or_default())
    };
    let size = |b: u64| if b == 0 { String::new() } else { human(b) };
    vec![
        ("target", per(&|p| p.target.path.display().to_string())),
        (
            "kind",
            per(&|p| match fio {
                true => String::new(),
                false => p.target.kind.to_string(),
            }),
        ),
        ("size", per(&|p| size(p.target.size_bytes))),
        (
            "logical block",
            per(&|p| size(p.target.logical_block_size.into())),
        ),
        (
            "physical block",
            per(&|p| size(p.target.physical_block_size.into())),
        ),
        ("disk", env(|e| e.disk.clone())),
        ("model", env(|e| e.model.clone())),
        ("firmware", env(|e| e.firmware.clone())),
        ("transport", env(|e| e.transport.map(|t| t.to_string()))),
        ("USB bridge", env(|e| e.usb_bridge.clone())),
        ("rotational", env(|e| e.rotational.map(yes_no))),
        ("scheduler", env(|e| e.scheduler.clone())),
        (
            "minimum I/O size",
            topo(|l| human(l.minimum_io_size.into())),
        ),
        (
            "optimal I/O size",
            topo(|l| human(l.optimal_io_size.into())),
        ),
        (
            "alignment offset",
            topo(|l| format!("{} bytes", l.alignment_offset)),
        ),
        (
            "filesystem",
            env(|e| {
                e.filesystem
                    .as_ref()
                    .map(|f| format!("{} on {} ({})", f.fs_type, f.mount_point, f.source))
            }),
        ),
        ("host", env(|e| e.host.as_ref().map(|h| h.phrase()))),
        ("kernel", env(|e| Some(e.kernel.clone()))),
        ("arch", env(|e| Some(e.arch.clone()))),
        ("CPU", env(|e| e.cpu_model.clone())),
        ("CPUs", env(|e| (e.cpus > 0).then(|| e.cpus.to_string()))),
        ("CPU governor", env(|e| e.cpu_governor.clone())),
    ]
}

/// A row of the environment table: what, and its value per target.
type EnvLine = (&'static str, Vec<String>);

/// A heading column, then one column per target (`value` when there is
/// only one).
fn environment_columns(run: &Run) -> Vec<Column<EnvLine>> {
    let mut cols = vec![Column::html_only("field", "", |r: &EnvLine| {
        r.0.to_string()
    })];
    cols.extend((0..run.parts.len()).map(|t| {
        let title = match run.multi() {
            true => crate::report::target_label(t),
            false => "value".into(),
        };
        Column::entry(
            format!("t{t}"),
            title,
            t,
            |r: &EnvLine, at| r.1[at].clone(),
            |r: &EnvLine, at, _| r.1[at].clone(),
        )
    }));
    cols
}

/// The machine and each target, one column per target.
pub fn environment(run: &Run) -> String {
    let rows: Vec<EnvLine> = env_rows(&run.parts, run.fio())
        .into_iter()
        .filter(|(_, v)| v.iter().any(|x| !x.is_empty()))
        .collect();
    let cols = environment_columns(run);
    columns::html(
        &format!("{}-environment", run.id),
        "The machine and the target as recorded",
        &cols.iter().collect::<Vec<_>>(),
        &rows.iter().collect::<Vec<_>>(),
    )
}
