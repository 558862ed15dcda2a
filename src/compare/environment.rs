//! What two probe runs were measured with and on, field by field: the
//! differences often explain everything, so the comparison lists them
//! first.

use crate::probe::ProbeDoc;
use crate::probe::ProbedTarget;
use serde::{Deserialize, Serialize};

/// One setting or property of the two runs.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct EnvField {
    /// `kernel`, `transport`, `bridge`, `queue_depth` ... (docs/json.md).
    pub field: String,
    /// None for the whole run (kernel, engine, plan); the target's index
    /// for what belongs to one target (model, transport, scheduler ...).
    pub target: Option<usize>,
    /// The value in A and in B, as text; null when not recorded.
    pub a: Option<String>,
    pub b: Option<String>,
    /// The values differ: both recorded and unequal, or recorded on one
    /// side and absent from a diskalign run on the other (fio records no
    /// environment, so its nulls are never a difference).
    pub differs: bool,
}

/// The fields the reader looks at first, in this order; the rest follow
/// in the order they are recorded.
const FIRST: &[&str] = &[
    "kernel",
    "loop_direct_io",
    "loop_backing_fs",
    "transport",
    "bridge",
    "scheduler",
    "firmware",
    "model",
    "engine",
    "queue_depth",
    "preset",
];

type Values = Vec<(&'static str, Option<String>)>;

fn text(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

fn count<N: Into<u64>>(n: N) -> Option<String> {
    let n = n.into();
    (n > 0).then(|| n.to_string())
}

/// What the run as a whole was measured with. A fio document records
/// only its engine, so the rest is unknown, not false or zero.
fn run_values(d: &ProbeDoc) -> Values {
    let (e, g, p) = (&d.environment, &d.engine, &d.plan);
    let ours = |v: Option<String>| v.filter(|_| !d.fio());
    vec![
        ("kernel", e.kernel.split_whitespace().next().and_then(text)),
        ("engine", text(g.name.as_str())),
        ("queue_depth", count(g.queue_depth)),
        ("jobs", count(g.jobs)),
        ("direct", ours(Some(g.direct.to_string()))),
        ("fdatasync", ours(Some(g.fdatasync.to_string()))),
        ("preset", ours(Some(p.preset.to_string()))),
        ("rounds", count(p.rounds)),
        (
            "runtime",
            (!p.runtime.is_zero()).then(|| format!("{} s", p.runtime.as_secs_f64())),
        ),
        (
            "min_effect",
            (p.min_effect > 0.0).then(|| p.min_effect.to_string()),
        ),
        ("arch", text(&e.arch)),
        ("cpu_model", e.cpu_model.clone()),
        ("cpus", count(e.cpus as u64)),
        ("cpu_governor", e.cpu_governor.clone()),
        ("diskalign_version", text(&d.header.diskalign_version)),
    ]
}

/// What one target was and sat behind (of a fio run, only its file).
fn target_values(t: &ProbedTarget, fio: bool) -> Values {
    let (e, x) = (&t.environment, &t.target);
    vec![
        ("target", text(&x.path.to_string_lossy())),
        ("kind", (!fio).then(|| x.kind.to_string())),
        ("size_bytes", count(x.size_bytes)),
        ("logical_block_size", count(x.logical_block_size)),
        ("physical_block_size", count(x.physical_block_size)),
        ("disk", e.disk.clone()),
        ("model", e.model.clone()),
        ("firmware", e.firmware.clone()),
        ("transport", e.transport.map(|t| t.to_string())),
        ("bridge", e.usb_bridge.clone()),
        ("rotational", e.rotational.map(|r| r.to_string())),
        ("scheduler", e.scheduler.clone()),
        ("node_block_size", e.node_block_size.and_then(count)),
        ("loop_direct_io", e.loop_direct_io.map(|d| d.to_string())),
        ("loop_backing_file", e.loop_backing_file.clone()),
        ("loop_backing_fs", e.loop_backing_fs.clone()),
        (
            "filesystem",
            e.filesystem
                .as_ref()
                .map(|f| format!("{} on {}", f.fs_type, f.mount_point)),
        ),
    ]
}

fn differs(a: &Option<String>, b: &Option<String>, fio: [bool; 2]) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => x != y,
        (Some(_), None) => !fio[1],
        (None, Some(_)) => !fio[0],
        (None, None) => false,
    }
}

fn pair(target: Option<usize>, a: Values, b: Values, fio: [bool; 2]) -> Vec<EnvField> {
    a.into_iter()
        .zip(b)
        .filter(|((_, x), (_, y))| x.is_some() || y.is_some())
        .map(|((field, x), (_, y))| EnvField {
            field: field.to_string(),
            target,
            differs: differs(&x, &y, fio),
            a: x,
            b: y,
        })
        .collect()
}

/// Every field recorded by either run: the run's own, then each target
/// both runs have (part i of A against part i of B), the fields read
/// first at the front. Fields neither run recorded are left out.
pub fn fields(a: &ProbeDoc, b: &ProbeDoc) -> Vec<EnvField> {
    let fio = [a.fio(), b.fio()];
    let mut out = pair(None, run_values(a), run_values(b), fio);
    for (i, (x, y)) in a.parts().iter().zip(b.parts().iter()).enumerate() {
        let (x, y) = (target_values(x, fio[0]), target_values(y, fio[1]));
        out.extend(pair(Some(i), x, y, fio));
    }
    let rank = |f: &EnvField| {
        FIRST
            .iter()
            .position(|n| *n == f.field)
            .unwrap_or(FIRST.len())
    };
    out.sort_by_key(|f| (rank(f), f.target));
    out
}

/// The names of the fields that differ, each once, in the order listed.
pub fn differing(fields: &[EnvField]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for f in fields.iter().filter(|f| f.differs) {
        if !names.contains(&f.field.as_str()) {
            names.push(&f.field);
        }
    }
    names
}
