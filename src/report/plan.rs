//! `plan` for people: a before/after table per disk, the steps, what to do
//! by hand, what stays. The JSON is `report::json::plan_json`.

use super::columns;
use super::style::{Style, View};
use super::tables::{self, NewPartition, PlanRow};
use crate::plan::NewDisk;
use crate::plan::{DiskPlan, PlanRun, Step};
use crate::units;

/// Every disk's plan. A disk that cannot be planned is said once, on
/// stderr, with the reason (as a target `check` cannot read), not here.
/// `-o`, `-n`, `-r` and `-P` print the table alone.
pub fn human(run: &PlanRun, st: &Style) -> String {
    if st.view == View::Table {
        return table_only(run, st);
    }
    let mut out = String::new();
    for d in run.targets.iter().filter(|d| d.refused.is_empty()) {
        out.push_str(&disk(d, run.throughput_bytes_per_second, st));
        out.push('\n');
    }
    if !run.assembled_leaves.is_empty() {
        out.push_str(&st.bold("assembled from the disks:"));
        out.push('\n');
        for m in &run.assembled_manual {
            out.push_str(&manual(m, &st.warn("by hand:"), st));
        }
        out.push_str(&afterwards(
            &run.assembled_leaves,
            &run.assembled_remains,
            &run.assembled_manual,
            st,
        ));
        out.push('\n');
    }
    out
}

/// What check will still report after the script, which of it the steps
/// by hand clear, and what remains then: "nothing to warn about" only
/// when nothing does.
fn afterwards(
    leaves: &[crate::findings::Finding],
    remains: &[crate::findings::Finding],
    manual: &[crate::plan::Manual],
    st: &Style,
) -> String {
    if leaves.is_empty() {
        return "  Afterwards check finds nothing to warn about.\n".into();
    }
    let mut out = String::from("  Afterwards check will still report:\n");
    for f in leaves {
        out.push_str(&st.finding("    ", "", f));
        if !remains.contains(f) {
            out.push_str("            (cleared by the commands by hand above)\n");
        }
    }
    let by_hand = manual.iter().any(|m| m.clears);
    match (remains.is_empty(), by_hand) {
        (true, _) => out.push_str(
            "  Once the commands by hand above have run too, check finds nothing to warn about.\n",
        ),
        (false, true) => out.push_str(&st.line(
            "  ",
            &format!(
                "Once the commands by hand above have run too, check still reports {}.",
                remains
                    .iter()
                    .map(|f| f.code.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "  ",
        )),
        (false, false) => {}
    }
    out
}

fn disk(d: &DiskPlan, throughput: u64, st: &Style) -> String {
    let table = match d.table {
        crate::layout::TableKind::None => "no partition table".to_string(),
        kind => format!("{kind} table"),
    };
    let head = format!("{}  ", st.bold(&d.path));
    let text = format!(
        "{table}, {}-byte sectors; starts on {}; ends on {}",
        d.sector_size,
        d.start_grain_why,
        units::human(d.end_grain_bytes)
    );
    let mut out = st.line(&head, &text, "  ");
    out.push_str(&parts_table(d, st));
    // What to take offline comes before the steps that need it so.
    for o in &d.offline {
        out.push_str(&st.line("  First: ", o, "    "));
    }
    // An image container's steps run on a raw copy: how to make it (and
    // turn it back) comes first too; it is the plan's first by-hand entry.
    let first = usize::from(d.script_refused.is_some()).min(d.manual.len());
    for m in &d.manual[..first] {
        out.push_str(&manual(m, "First:", st));
    }
    match (d.is_noop(), d.has_work()) {
        (true, false) => out.push_str(&format!("  {}\n", st.good("nothing to move or resize"))),
        (true, true) => out.push_str(&st.line(
            "  ",
            "nothing the script can change yet: do what is below by hand first",
            "  ",
        )),
        _ => out.push_str(&steps(d, throughput, st)),
    }
    for m in &d.manual[first..] {
        out.push_str(&manual(m, &st.warn("by hand:"), st));
    }
    if d.part_of.is_empty() || !d.leaves.is_empty() {
        out.push_str(&afterwards(&d.leaves, &d.remains, &d.manual, st));
    }
    if !d.part_of.is_empty() {
        let own = match d.leaves.is_empty() {
            true => "Afterwards check finds nothing to warn about in this disk's own partitions and layers, but it",
            false => "It also",
        };
        out.push_str(&st.line(
            "  ",
            &format!(
                "{own} holds part of {}, assembled from the disks, which check still warns about: below, once for all of them.",
                d.part_of.join(" and ")
            ),
            "  ",
        ));
    }
    out
}

/// One thing to do by hand: why, then its commands, never wrapped (they
/// are for copying whole).
fn manual(m: &crate::plan::Manual, label: &str, st: &Style) -> String {
    let head = format!("  {label} ");
    let at = m
        .partition
        .map(|n| format!("partition {n}: "))
        .unwrap_or_default();
    let why = match m.why.strip_prefix(&at) {
        Some(_) => m.why.clone(),
        None => format!("{at}{}", m.why),
    };
    let mut out = st.line(&head, &why, "      ");
    for c in &m.commands {
        out.push_str(&format!("      {c}\n"));
    }
    out
}

/// Each partition now and after, fitted to the width as check's table is
/// (the least needed columns hidden first, and named).
fn parts_table(d: &DiskPlan, st: &Style) -> String {
    if d.partitions.is_empty() {
        return String::new();
    }
    let rows = tables::plan_rows(d);
    let rows: Vec<&PlanRow> = rows.iter().collect();
    let all = tables::plan_partitions();
    let picked = columns::select(&all, None, |c| c.human);
    let (cols, hidden) = match st.width {
        Some(w) if st.fit => columns::fit(picked, &rows, st, w.saturating_sub(2)),
        _ => (picked, vec![]),
    };
    let mut out = columns::render(&cols, &rows, st, "  ");
    if !hidden.is_empty() {
        let text = format!(
            "({} hidden to fit the terminal; --json has every number)",
            hidden.join(", ")
        );
        out.push_str(&st.hint("  ", &text, "  "));
    }
    out
}

/// `plan -o COLUMNS` (and `-n`, `-r`, `-P`): one table of every
/// partition of every disk planned, as check's; several disks get the
/// disk column first, whatever `-o` picked.
fn table_only(run: &PlanRun, st: &Style) -> String {
    let planned: Vec<&DiskPlan> = run
        .targets
        .iter()
        .filter(|d| d.refused.is_empty())
        .collect();
    let rows: Vec<PlanRow> = planned.iter().flat_map(|d| tables::plan_rows(d)).collect();
    let rows: Vec<&PlanRow> = rows.iter().collect();
    let all = tables::plan_partitions();
    let picked = columns::select(&all, st.columns.as_deref(), |c| c.human);
    let cols = columns::naming_rows(&all, picked, "disk", planned.len());
    columns::render(&cols, &rows, st, "")
}

/// The steps numbered as the script numbers them (`step N:` in its
/// messages), then what the copies cost.
fn steps(d: &DiskPlan, throughput: u64, st: &Style) -> String {
    let mut out = match d.script_refused {
        Some(_) => String::from("  Steps (the script's on the raw copy, in its order):\n"),
        None => String::from("  Steps (the script's, in its order):\n"),
    };
    for (i, group) in d.script_steps().iter().enumerate() {
        let head = format!("   {:>2}. ", i + 1);
        out.push_str(&st.line(&head, &steps_text(group), "       "));
    }
    if d.bytes_to_move > 0 {
        out.push_str(&st.line(
            "  ",
            &format!(
                "Moves {} of data: about {} at {}/s (each byte goes through a staging file, so it is written twice; --throughput)",
                units::human(d.bytes_to_move),
                duration(d.estimated_seconds),
                units::human(throughput)
            ),
            "  ",
        ));
    }
    out
}

/// One of the script's steps in words: a step, or a partition's copy
/// and the rewrite of its entry (the human plan and the plan page).
pub(crate) fn steps_text(group: &[&Step]) -> String {
    match group {
        [
            Step::Move {
                partition,
                from_bytes,
                to_bytes,
                copy_bytes,
                hidden_sectors,
                ..
            },
            Step::Table { after, .. },
        ] => format!(
            "partition {partition}: copy {} from byte {from_bytes} to byte {to_bytes} (highest chunk first when moving up; resumable), {}then rewrite its entry as start={}, size={} (sfdisk, tried with --no-act before any copy)",
            units::human(*copy_bytes),
            hidden_sectors.as_ref().map_or_else(String::new, boot_start),
            after.start_sector,
            after.sectors
        ),
        _ => group.iter().map(|s| step(s)).collect::<Vec<_>>().join("; "),
    }
}

/// A moved volume's boot sectors in words: what the step writes there.
fn boot_start(h: &crate::plan::HiddenSectors) -> String {
    let both = if h.at_bytes.len() > 1 {
        " and its backup"
    } else {
        ""
    };
    format!(
        "write its new start into its {} boot sector{both} ({} {} -> {}; checked before the copy, written only where it still reads {}), ",
        h.volume,
        h.field_name(),
        h.from,
        h.to,
        h.from
    )
}

/// One step in words (the human plan and the plan page).
pub(crate) fn step(s: &Step) -> String {
    match s {
        Step::Backup {
            table,
            volume_groups,
        } => {
            let mut what = vec!["sfdisk --dump".to_string()];
            if *table == crate::layout::TableKind::Gpt {
                what.push("sgdisk --backup".into());
            }
            what.extend(volume_groups.iter().map(|v| format!("vgcfgbackup {v}")));
            format!("back up the table ({})", what.join(", "))
        }
        Step::RepairGpt { backup_lba, .. } => format!(
            "rebuild the primary GPT from its intact backup at LBA {backup_lba} (sgdisk -e; the damaged sectors are saved first)"
        ),
        Step::Shrink(x) => format!(
            "partition {}: shrink its {} filesystem from {} to {} (e2fsck -f, then resize2fs; the script first asks resize2fs -P whether it can)",
            x.partition,
            x.filesystem,
            units::human(x.from_bytes),
            units::human(x.to_bytes)
        ),
        Step::Move {
            partition,
            from_bytes,
            to_bytes,
            copy_bytes,
            hidden_sectors,
            ..
        } => format!(
            "partition {partition}: copy {} from byte {} to byte {} (highest chunk first when moving up; resumable){}",
            units::human(*copy_bytes),
            from_bytes,
            to_bytes,
            hidden_sectors.as_ref().map_or_else(String::new, |h| format!(", {}", boot_start(h).trim_end_matches(", ")))
        ),
        Step::Table {
            partition, after, ..
        } => format!(
            "partition {partition}: rewrite its entry as start={}, size={} (sfdisk, tried with --no-act before any copy)",
            after.start_sector, after.sectors
        ),
    }
}

fn duration(s: f64) -> String {
    if s < 60.0 {
        format!("{:.0} s", s.max(1.0))
    } else if s < 3600.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// A layout for a new disk.
pub fn human_new(d: &NewDisk, st: &Style) -> String {
    let rows: Vec<NewPartition> = d
        .partitions
        .iter()
        .enumerate()
        .map(|(i, extent)| NewPartition {
            number: i + 1,
            extent,
        })
        .collect();
    let rows: Vec<&NewPartition> = rows.iter().collect();
    let all = tables::new_partitions();
    if st.view == View::Table {
        // A layout refused has no rows (stderr says why).
        let rows = if d.refused.is_empty() { rows } else { vec![] };
        let cols = columns::select(&all, st.columns.as_deref(), |c| c.human);
        return columns::render(&cols, &rows, st, "");
    }
    let mut out = format!(
        "{}  new {} table, {}-byte sectors; starts on {}\n",
        st.bold(&d.path),
        d.label,
        d.sector_size,
        d.start_grain_why
    );
    for a in &d.advice {
        out.push_str(&format!("  {} {}\n", st.warn("advice:"), a.message));
    }
    for r in &d.refused {
        out.push_str(&format!("  {} {r}\n", st.bad("cannot plan:")));
    }
    if !d.refused.is_empty() {
        return out;
    }
    let cols: Vec<_> = all.iter().collect();
    out.push_str(&columns::render(&cols, &rows, st, "  "));
    match &d.script_refused {
        // A container's guest is laid out on a raw copy: sfdisk on the
        // container file would write into its clusters.
        Some(_) => out.push_str("  sfdisk script (for a raw copy of the image, not for the image file: see the note):\n"),
        None => out.push_str(&format!("  sfdisk script (sfdisk {} < FILE):\n", d.path)),
    }
    for l in d.sfdisk_script.lines() {
        out.push_str(&format!("    {l}\n"));
    }
    for n in d.notes.iter().chain(&d.script_refused) {
        out.push_str(&format!("  {} {n}\n", st.warn("note:")));
    }
    out
}
