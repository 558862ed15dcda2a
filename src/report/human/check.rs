//! The human report of `check`: per target a header, the partition table
//! fitted to the terminal, the verdict and the findings (info ones with
//! `-v`), the stack; then what was assembled across targets and one line
//! for the whole run. `-q` prints the verdicts only. Targets that could
//! not be checked were said on stderr, once; the last line counts them.

use crate::check::CheckRun;
use crate::check::CheckedTarget;
use crate::findings::{Finding, Severity};
use crate::layout::TableKind;
use crate::names::shell_word;
use crate::report::columns;
use crate::report::style::{Style, View, GLUE};
use crate::report::tables::{self, partitions, PartitionRow};
use crate::units::human;
use std::fmt::Write;

/// Render every target, the assembled arrays and volume groups, and the
/// run's summary line; or, for `-o`, `-n`, `-r` and `-P`, the table alone.
pub fn render(run: &CheckRun, st: &Style) -> String {
    if st.view == View::Table {
        return table_only(run, st);
    }
    let mut out = String::new();
    for r in &run.targets {
        if st.quiet {
            let head = format!("{}: ", st.bold(&r.path));
            out.push_str(&st.line(&head, &verdict(r, st), "  "));
        } else {
            target(&mut out, r, st);
            out.push('\n');
        }
    }
    if !run.assembled.is_empty() {
        if st.quiet {
            for l in &run.assembled {
                let head = format!("{} (assembled): ", st.bold(&l.name));
                let status = crate::check::worst(l);
                out.push_str(&st.line(&head, &st.status(status), "  "));
            }
        } else {
            let _ = writeln!(out, "{}", st.bold("assembled from the targets:"));
            super::stack::tree(&mut out, &run.assembled, st, "  ");
            out.push('\n');
        }
    }
    out.push_str(&summary_line(run, st));
    // -q prints the verdicts and the summary line, as --help says.
    if !st.quiet {
        out.push_str(&next_step(run));
    }
    out
}

/// The last lines when a layout change fixes something found: each
/// target's `next` (the `plan` command of its disk with the options the
/// check ran with, set only where that plan has work, so it runs as
/// printed), and the same writing its script, except for an image
/// container, for which `plan --script` writes none (its plan says how
/// to fix a raw copy), and a device with no partition table, which has
/// nothing to move. Commands are never wrapped: they are for copying
/// whole.
fn next_step(run: &CheckRun) -> String {
    let mut steps: Vec<(&str, Option<String>, Option<&str>)> = Vec::new();
    for t in &run.targets {
        if let Some(c) = t
            .next
            .as_deref()
            .filter(|c| !steps.iter().any(|(s, _, _)| s == c))
        {
            // No script either for a device with no partition table:
            // nothing on it moves, its plan is what to do by hand.
            let scripted =
                t.container.is_none() && t.partition_table.kind != crate::layout::TableKind::None;
            steps.push((c, scripted.then(|| script_name(t)), t.next_says.as_deref()));
        }
    }
    let mut out = String::new();
    for (i, (c, _, says)) in steps.iter().enumerate() {
        let head = if i == 0 { "next: " } else { "      " };
        match says {
            Some(s) => out.push_str(&format!("{head}{c}   ({s})\n")),
            None => out.push_str(&format!("{head}{c}\n")),
        }
    }
    for (c, script, _) in &steps {
        if let Some(script) = script {
            out.push_str(&format!(
                "      {c} --script {script}   (writes the fix as a script to read and run)\n"
            ));
        }
    }
    out
}

/// `fix-DISK.sh`, in the current directory: named after the disk the
/// plan is for (a partition target's disk).
fn script_name(t: &CheckedTarget) -> String {
    let disk = match (&t.disk, t.kind) {
        (Some(d), crate::inspect::TargetKind::Partition) => d.as_str(),
        _ => t.path.rsplit('/').next().unwrap_or(&t.path),
    };
    shell_word(&format!("fix-{disk}.sh"))
}

/// "2 targets checked: 1 aligned, 1 MISALIGNED; 3 errors, 1 warning; exit 1 (--fail-on warning)".
fn summary_line(run: &CheckRun, st: &Style) -> String {
    let s = &run.summary;
    let mut text = format!(
        "{} of {} target{} checked",
        s.checked,
        s.targets,
        if s.targets == 1 { "" } else { "s" }
    );
    if s.checked > 0 {
        let _ = write!(text, ", {} aligned", s.aligned);
    }
    if s.incomplete > 0 {
        let _ = write!(text, ", {} incomplete", s.incomplete);
    }
    if s.unchecked > 0 {
        let _ = write!(text, ", {} could not be (said on stderr)", s.unchecked);
    }
    let _ = write!(
        text,
        "; {}; exit status {} (--fail-on {})",
        s.findings.phrase(),
        s.exit_status,
        s.fail_on.as_str()
    );
    let head = match s.status {
        Some(status) => format!("summary: {}; ", st.status(status)),
        None => format!("summary: {}; ", st.bad("nothing checked")),
    };
    st.line(&head, &text, "  ")
}

/// The verdict in the colour of the target's status.
fn verdict(r: &CheckedTarget, st: &Style) -> String {
    let word = r.summary.status.word();
    match r.verdict.strip_prefix(word) {
        Some(rest) => format!("{}{rest}", st.status(r.summary.status)),
        None => r.verdict.clone(),
    }
}

/// "disk, 1 GiB (1073741824 bytes)"; a partition target names its disk
/// and that disk's size.
fn what(r: &CheckedTarget) -> String {
    let size = format!("{} ({} bytes)", human(r.size_bytes), r.size_bytes);
    match (r.kind.as_str(), &r.disk, r.partitions.first()) {
        ("partition", Some(disk), Some(p)) => {
            format!("partition {} of /dev/{disk}, a {size} disk", p.number)
        }
        _ => format!("{}, {size}", r.kind_name()),
    }
}

fn header(out: &mut String, r: &CheckedTarget, st: &Style) {
    let ss = r.partition_table.sector_size;
    let table_desc = match r.partition_table.kind {
        TableKind::Gpt => format!("GPT, {ss}-byte sectors"),
        TableKind::Mbr => format!("MBR, {ss}-byte sectors"),
        TableKind::None => "no partition table".to_string(),
        TableKind::Kernel => "partitions as the kernel registered them".to_string(),
    };
    let _ = writeln!(out, "{}  {}, {table_desc}", st.bold(&r.path), what(r));
    out.push_str(&st.line("  verdict: ", &verdict(r, st), "    "));
    let t = &r.topology;
    let mut text = format!(
        "logical{GLUE}{} physical{GLUE}{} min-io{GLUE}{} opt-io{GLUE}{} alignment-offset{GLUE}{} discard{GLUE}{}",
        t.logical_block_size,
        t.physical_block_size,
        t.minimum_io_size,
        t.optimal_io_size,
        t.alignment_offset,
        t.discard_granularity
    );
    if t.erase_unit_bytes > 0 {
        let what = if t.removable_flash { "flash" } else { "eMMC" };
        text.push_str(&format!(" {what}-unit{GLUE}{}", t.erase_unit_bytes));
    }
    let head = format!("  topology ({}): ", r.topology_source.as_str());
    out.push_str(&st.line(&head, &text, "    "));
    if let Some(c) = &r.container {
        out.push_str(&st.line("  container: ", &c.phrase(), "    "));
    }
    if let Some(text) = identity(r) {
        out.push_str(&st.line("  identity: ", &text, "    "));
    }
    // A multipath map: the disks it reaches its LUN over, which are no
    // targets of their own.
    if !r.paths.is_empty() {
        out.push_str(&st.line("  paths: ", &r.paths.join(", "), "    "));
    }
}

/// What a ticket or an inventory names the disk by: its model, serial
/// and WWN, and the table's PTUUID; None when none is known.
fn identity(r: &CheckedTarget) -> Option<String> {
    let parts: Vec<String> = [
        ("model", &r.model),
        ("serial", &r.serial),
        ("wwn", &r.wwn),
        ("ptuuid", &r.partition_table.ptuuid),
    ]
    .into_iter()
    .filter_map(|(name, v)| v.as_ref().map(|v| format!("{name}{GLUE}{v}")))
    .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

fn partition_table(out: &mut String, r: &CheckedTarget, st: &Style) {
    let rows: Vec<PartitionRow> = PartitionRow::all(r);
    let rows: Vec<&PartitionRow> = rows.iter().collect();
    let all = partitions();
    let picked = columns::select(&all, st.columns.as_deref(), |c| c.human);
    let (cols, hidden) = match (st.width, &st.columns) {
        (Some(w), None) if st.fit => columns::fit(picked, &rows, st, w.saturating_sub(2)),
        _ => (picked, vec![]),
    };
    out.push_str(&columns::render(&cols, &rows, st, "  "));
    if !hidden.is_empty() {
        let text = format!(
            "({} hidden to fit the terminal; -o picks columns, --list-columns explains them)",
            hidden.join(", ")
        );
        out.push_str(&st.hint("  ", &text, "  "));
    }
}

/// Shown without -v: errors, warnings, and the notes that say how the
/// target was read.
fn shown(f: &Finding, st: &Style) -> bool {
    st.verbose || f.severity > Severity::Info || f.code.meaning().how_read
}

/// Errors before warnings before info, each list in its own order.
fn worst_first(findings: &[Finding]) -> Vec<&Finding> {
    let mut v: Vec<&Finding> = findings.iter().collect();
    v.sort_by_key(|f| std::cmp::Reverse(f.severity));
    v
}

/// A ticket: the verdict first, then what it was judged on, then the
/// target's findings and each partition's, errors before warnings.
fn target(out: &mut String, r: &CheckedTarget, st: &Style) {
    header(out, r, st);
    if !r.partitions.is_empty() {
        partition_table(out, r, st);
    }
    // Where the tools would start on an empty disk: advice about a disk
    // that is not this one once it has partitions (-v shows it), and
    // about nothing on one too small for any partition or one nobody
    // partitions (an LV, a dm-crypt mapping, a partition).
    let lbs = u64::from(r.topology.logical_block_size);
    if r.partitionable
        && (r.partitions.is_empty() || st.verbose)
        && r.first_start_bytes.any_fits(r.size_bytes, lbs)
    {
        let f = &r.first_start_bytes;
        let _ = writeln!(
            out,
            "  first start on an empty disk: parted {} | fdisk {} | sgdisk {}",
            f.parted, f.fdisk, f.sgdisk
        );
    }
    let mut hidden = 0;
    // The target's notes (how it was read) come after what is wrong.
    let (notes, problems): (Vec<&Finding>, Vec<&Finding>) = worst_first(&r.findings)
        .into_iter()
        .partition(|f| f.severity == Severity::Info);
    let all = problems
        .into_iter()
        .map(|f| (String::new(), f))
        .chain(r.partitions.iter().flat_map(|p| {
            worst_first(&p.findings)
                .into_iter()
                .map(move |f| (format!("partition {} ", p.number), f))
        }))
        .chain(notes.into_iter().map(|f| (String::new(), f)));
    // A finding that repeats another's cause is printed once, as that one.
    for (prefix, f) in all.filter(|(_, f)| f.counts()) {
        if shown(f, st) {
            out.push_str(&st.finding("  ", &prefix, f));
        } else {
            hidden += 1;
        }
    }
    hidden += super::stack::hidden(&r.stack, st);
    if hidden > 0 {
        let text = format!(
            "({hidden} info finding{} not shown: -v shows every explanation)",
            if hidden == 1 { "" } else { "s" }
        );
        let _ = writeln!(out, "  {}", st.dim(&text));
    }
    if r.stack.iter().any(|l| !l.children.is_empty()) {
        let _ = writeln!(out, "  stack:");
        super::stack::tree(out, &r.stack, st, "  ");
    }
}

/// `check -o COLUMNS` (and `-n`, `-r`, `-P`): one table of every
/// partition of every target, as lsblk prints its own. Several targets
/// get the target column first, whatever `-o` picked, so every row says
/// which disk it is of, as lsblk's rows carry NAME.
fn table_only(run: &CheckRun, st: &Style) -> String {
    let rows = tables::partition_rows(run);
    let rows: Vec<&PartitionRow> = rows.iter().collect();
    let all = partitions();
    let picked = columns::select(&all, st.columns.as_deref(), |c| c.human);
    let cols = columns::naming_rows(&all, picked, "target", run.targets.len());
    columns::render(&cols, &rows, st, "")
}
