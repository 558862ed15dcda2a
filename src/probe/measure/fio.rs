//! `--emit-fio`: the fio job file that reproduces each cell of a plan, so
//! users can cross-check a result with the tool they already trust.

use super::engine::{EngineKind, Pattern};
use super::grid::Grid;
use std::fmt::Write;
use std::path::PathBuf;

fn fio_rw(p: Pattern) -> &'static str {
    match p {
        Pattern::Randread => "randread",
        Pattern::Randwrite => "randwrite",
        Pattern::Seqread => "read",
        Pattern::Seqwrite => "write",
    }
}

fn ms(d: std::time::Duration) -> String {
    format!("{}ms", d.as_millis())
}

/// Section name of a cell: `randread-4096-at-512`.
pub fn section(pattern: Pattern, bs: u32, offset: u64) -> String {
    format!("{}-{bs}-at-{offset}", pattern.as_str())
}

/// A file the job file runs on: a target, or a scratch file fio creates
/// itself (`create_size`) in a directory target.
pub struct File {
    pub path: PathBuf,
    pub create_size: Option<u64>,
}

/// A job file with a `[global]` part and one stonewalled section per cell
/// (and per file, with several: `t2-randread-4096-at-512`). `size` is the
/// bytes every file has.
pub fn job_file(plan: &Grid, files: &[File], size: u64, engine: EngineKind) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "; diskalign {} probe grid as fio jobs, one section per cell, run in turn.",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(
        s,
        "; Random I/O lands at offset + k x blockalign, as diskalign does."
    );
    let _ = writeln!(
        s,
        "; One cell only: fio --section=randread-4096-at-512 THIS_FILE"
    );
    let _ = writeln!(
        s,
        "; diskalign runs up to {} rounds in random order, stopping each comparison once decided; fio runs each section once.",
        plan.rounds
    );
    let _ = writeln!(s, "[global]");
    if let [one] = files {
        global_file(&mut s, one);
    }
    let engine = super::engine::descriptor(engine);
    let _ = writeln!(s, "{}", engine.fio);
    let _ = writeln!(s, "direct={}", u8::from(plan.direct));
    if engine.depth_is_threads {
        // psync's queue depth is its thread count.
        let _ = writeln!(s, "numjobs={}", plan.qd * plan.jobs);
    } else {
        let _ = writeln!(s, "iodepth={}\nnumjobs={}", plan.qd, plan.jobs);
    }
    if plan.fdatasync {
        let _ = writeln!(s, "fdatasync=1");
    }
    let _ = writeln!(
        s,
        "time_based=1\nruntime={}\nramp_time={}\nrandrepeat=0\nnorandommap=1\ngroup_reporting=1",
        ms(plan.runtime),
        ms(plan.warmup)
    );
    for (i, f) in files.iter().enumerate() {
        let prefix = if files.len() > 1 {
            format!("t{}-", i + 1)
        } else {
            String::new()
        };
        for c in plan.all_cells() {
            cell_section(&mut s, plan, c, size, &prefix);
            if files.len() > 1 {
                global_file(&mut s, f);
            }
        }
    }
    s
}

/// `filename=` (and `filesize=` for a file fio creates).
fn global_file(s: &mut String, f: &File) {
    let _ = writeln!(s, "filename={}", f.path.display());
    if let Some(fs) = f.create_size {
        let _ = writeln!(s, "filesize={fs}");
    }
}

fn cell_section(s: &mut String, plan: &Grid, c: &super::grid::Cell, size: u64, prefix: &str) {
    let bs = u64::from(c.block_size);
    let _ = writeln!(
        s,
        "\n[{prefix}{}]\nstonewall\nrw={}\nbs={bs}\noffset={}",
        section(c.pattern, c.block_size, c.offset),
        fio_rw(c.pattern),
        c.offset
    );
    if c.pattern.is_random() {
        let slots = (size - c.offset - bs) / plan.unit + 1;
        let _ = writeln!(
            s,
            "blockalign={}\nsize={}",
            plan.unit,
            (slots - 1) * plan.unit + bs
        );
    } else {
        let _ = writeln!(s, "size={}", (size - c.offset) / bs * bs);
    }
}
