//! `plan` for people: a before/after table per disk, the steps, what to do
//! by hand, what stays. The JSON is `report::json::plan`.

use super::style::{table, Style};
use crate::plan::new_disk::NewDisk;
use crate::plan::{Action, DiskPlan, PlanRun, Step};
use crate::units;

/// Every disk's plan.
pub fn human(run: &PlanRun, st: &Style) -> String {
    let mut out = String::new();
    for d in &run.targets {
        out.push_str(&disk(d, run.throughput_bytes_per_second, st));
        out.push('\n');
    }
    out
}

fn disk(d: &DiskPlan, throughput: u64, st: &Style) -> String {
    let table = match d.table {
        crate::layout::TableKind::None => "no partition table".to_string(),
        kind => format!("{kind} table"),
    };
    let mut out = format!(
        "{}  {table}, {}-byte sectors; starts on {}; ends on {}\n",
        st.bold(&d.path),
        d.sector_size,
        d.start_grain_why,
        units::human(d.end_grain_bytes)
    );
    if !d.refused.is_empty() {
        for r in &d.refused {
            out.push_str(&format!("  {} {r}\n", st.bad("cannot plan:")));
        }
        out.push_str("  No script: nothing here can be done without losing data.\n");
        return out;
    }
    out.push_str(&parts_table(d));
    if d.is_noop() {
        out.push_str(&format!("  {}\n", st.good("nothing to move or resize")));
    } else {
        out.push_str(&steps(d, throughput));
    }
    for m in &d.manual {
        let at = m
            .partition
            .map(|n| format!("partition {n}: "))
            .unwrap_or_default();
        out.push_str(&format!("  {} {at}{}\n", st.warn("by hand:"), m.why));
        for c in &m.commands {
            out.push_str(&format!("      {c}\n"));
        }
    }
    if d.leaves.is_empty() {
        out.push_str("  Afterwards check finds nothing to warn about.\n");
    } else {
        out.push_str("  Afterwards check will still report:\n");
        for f in &d.leaves {
            out.push_str(&st.finding("    ", "", f));
        }
    }
    out
}

fn parts_table(d: &DiskPlan) -> String {
    let mut rows = vec![vec![
        "  #".to_string(),
        "content".into(),
        "start".into(),
        "end".into(),
        "new start".into(),
        "new end".into(),
        "change".into(),
    ]];
    for p in &d.partitions {
        let end = |e: &crate::plan::Extent| e.start_sector.saturating_add(e.sectors.max(1) - 1);
        rows.push(vec![
            format!("  {}", p.number),
            p.content.clone(),
            p.before.start_sector.to_string(),
            end(&p.before).to_string(),
            p.after.start_sector.to_string(),
            end(&p.after).to_string(),
            change(p),
        ]);
    }
    table(&rows)
}

/// A partition's change in words: keep, move +1 MiB, size -4 KiB.
pub(crate) fn change(p: &crate::plan::PartPlan) -> String {
    let moved = p.after.start_bytes as i128 - p.before.start_bytes as i128;
    let sized = p.after.size_bytes as i128 - p.before.size_bytes as i128;
    let signed = |b: i128| {
        let s = units::human(b.unsigned_abs() as u64);
        if b < 0 {
            format!("-{s}")
        } else {
            format!("+{s}")
        }
    };
    match p.action {
        Action::Keep => "keep".into(),
        Action::Move => format!("move {}", signed(moved)),
        Action::Resize => format!("size {}", signed(sized)),
        Action::MoveResize => format!("move {}, size {}", signed(moved), signed(sized)),
    }
}

fn steps(d: &DiskPlan, throughput: u64) -> String {
    let mut out = String::from("  Steps:\n");
    for (i, s) in d.steps.iter().enumerate() {
        out.push_str(&format!("   {:>2}. {}\n", i + 1, step(s)));
    }
    for o in &d.offline {
        out.push_str(&format!("  First: {o}\n"));
    }
    if d.bytes_to_move > 0 {
        out.push_str(&format!(
            "  Moves {} of data: about {} at {}/s (each byte goes through a staging file, so it is written twice; --throughput)\n",
            units::human(d.bytes_to_move),
            duration(d.estimated_seconds),
            units::human(throughput)
        ));
    }
    out
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
            ..
        } => format!(
            "partition {partition}: copy {} from byte {} to byte {} (highest chunk first when moving up; resumable)",
            units::human(*copy_bytes),
            from_bytes,
            to_bytes
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
    let mut rows = vec![vec![
        "  #".to_string(),
        "start".into(),
        "end".into(),
        "size".into(),
    ]];
    for (i, p) in d.partitions.iter().enumerate() {
        rows.push(vec![
            format!("  {}", i + 1),
            p.start_sector.to_string(),
            (p.start_sector + p.sectors - 1).to_string(),
            units::human(p.size_bytes),
        ]);
    }
    out.push_str(&table(&rows));
    out.push_str(&format!("  sfdisk script (sfdisk {} < FILE):\n", d.path));
    for l in d.sfdisk_script.lines() {
        out.push_str(&format!("    {l}\n"));
    }
    for n in &d.notes {
        out.push_str(&format!("  {} {n}\n", st.warn("note:")));
    }
    out
}
