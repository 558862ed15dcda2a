//! The plan for one disk: slots from its table, their new places, and the
//! steps that get them there.

use super::content::{self, Content};
use super::layout::{self, Grid, Placed, Slot};
use super::{
    boot, container, hidden, identity, Action, DiskPlan, Entry, Extent, PartPlan, PlanOptions,
    Shrink, Span, Step,
};
use crate::check::sane_optimal;
use crate::check::{self, ToolView};
use crate::findings::Code;
use crate::findings::Severity;
use crate::inspect::{Target, TargetKind};
use crate::iolimits::Topology;
use crate::layout::{PartKind, Partition, TableKind};
use crate::names::shell_word;
use crate::stack::FsKind;
use crate::units::{human, lcm_not_zero, KIB, MIB};

/// The plan for one target.
pub fn plan_disk(t: &Target, opts: &PlanOptions) -> DiskPlan {
    let ss = t.table.sector_size.max(1);
    let (grain, why) = start_grain(&t.topology);
    let end_grain = (4 * KIB).max(u64::from(t.topology.physical_block_size));
    let mut p = DiskPlan {
        path: t.path.display().to_string(),
        identity: identity::of(t),
        image: t.kind == TargetKind::Image,
        table: t.table.kind,
        sector_size: ss,
        start_grain_bytes: grain,
        start_grain_why: why,
        end_grain_bytes: end_grain,
        partitions: Vec::new(),
        steps: Vec::new(),
        manual: Vec::new(),
        refused: Vec::new(),
        script_refused: None,
        offline: Vec::new(),
        leaves: Vec::new(),
        remains: Vec::new(),
        part_of: Vec::new(),
        after_script: Vec::new(),
        bytes_to_move: 0,
        estimated_seconds: 0.0,
    };
    if let Some(why) = unplannable(t) {
        p.refused.push(why);
        return p;
    }
    if t.table.kind == TableKind::None {
        // Nothing to move: what is on the whole device is fixed by hand
        // (its findings' commands, added with the leaves).
        return p;
    }
    let ao = t.topology.usable_alignment_offset();
    let grid = Grid {
        start: (grain / ss).max(1),
        offset: if ao % ss == 0 { ao / ss } else { 0 },
        end: (end_grain / ss).max(1),
        end_pref: (end_grain / ss).max(1),
    };
    let parts = sorted(&t.table.partitions);
    let contents: Vec<Content> = parts
        .iter()
        .map(|q| content::of(root_of(t, q.number)))
        .collect();
    let none = vec![false; parts.len()];
    let placed = match place_all(t, &parts, &contents, grid, end_grain, &none) {
        Ok(placed) => placed,
        Err(why) => {
            p.refused.push(why);
            return p;
        }
    };
    let placed = keep_sgdisk_ends(t, &parts, &contents, grid, end_grain, placed);
    let disk = boot_disk(t, &p);
    let after_script = fill(&mut p, &parts, &contents, &placed, opts, &disk);
    end_notes(&mut p, t, &contents, &disk);
    if identity::gpt_repairable(t) {
        add_gpt_repair(&mut p, t);
    }
    p.after_script = after_script;
    p
}

/// A container is fixed on a raw copy: its steps come first, also when
/// only a note by hand (run on that copy) has work. The commands that
/// clear a finding on the copy (tune2fs at a layer's byte) run among
/// them, right after the script, with the boot sector's new start.
pub(super) fn raw_copy_first(t: &Target, p: &mut DiskPlan, again: &str) {
    let work = !p.is_noop() || p.manual.iter().any(|m| !m.commands.is_empty());
    let Some(c) = t.container.as_ref().filter(|_| work) else {
        return;
    };
    // The copy is planned and scripted when its layout changes, or may
    // once a note's command (a pvresize) has run on it.
    let replan = !p.is_noop() || p.manual.iter().any(|m| !m.commands.is_empty() && !m.clears);
    let mut after_script = std::mem::take(&mut p.after_script);
    for m in p.manual.iter_mut().filter(|m| m.clears) {
        if !m.commands.is_empty() {
            after_script.append(&mut m.commands);
            m.why.push_str(&format!(
                " (its command is among the steps under \"First:\", right after sh fix.sh: it runs on the raw copy, {})",
                container::raw_copy(&p.path)
            ));
        }
    }
    p.script_refused = Some(container::script_refusal(&p.path, c));
    p.manual
        .insert(0, container::manual(p, c, &after_script, again, replan));
}

/// The disk the commands by hand write to: a live disk's node, a raw
/// image's absolute path (as the script names it), or a container's raw
/// copy.
pub(super) fn boot_disk(t: &Target, p: &DiskPlan) -> boot::Disk {
    match &t.container {
        Some(c) => boot::Disk::Container {
            path: p.path.clone(),
            format: c.format.to_string(),
            raw: container::raw_copy(&p.path),
        },
        None if t.kind == TargetKind::Image => boot::Disk::Image(p.identity.script_path.clone()),
        None => boot::Disk::Live(p.identity.script_path.clone()),
    }
}

/// The primary GPT rebuilt from its backup, right after the backups and
/// before anything else.
fn add_gpt_repair(p: &mut DiskPlan, t: &Target) {
    let ss = t.table.sector_size.max(1);
    if !matches!(p.steps.first(), Some(Step::Backup { .. })) {
        p.steps.insert(
            0,
            Step::Backup {
                table: p.table,
                volume_groups: Vec::new(),
            },
        );
    }
    let first_usable = t.table.usable.map_or(34, |u| u.0);
    p.steps.insert(
        1,
        Step::RepairGpt {
            backup_lba: (t.size / ss).saturating_sub(1),
            primary_bytes: first_usable.saturating_mul(ss),
        },
    );
}

/// Why a table cannot be planned at all.
fn unplannable(t: &Target) -> Option<String> {
    if t.only.is_some() {
        let disk = t.disk.as_ref().map_or_else(
            || "its disk".into(),
            |d| format!("its disk, {}", d.device.display()),
        );
        return Some(format!(
            "it is a partition: plan {disk}, whose table holds it"
        ));
    }
    if t.table.kind == TableKind::Kernel {
        return Some(
            "the partition table could not be read (only the kernel's view of it): nothing can be planned"
                .into(),
        );
    }
    // A damaged primary GPT with a sound backup is repaired by the plan.
    let repairable = identity::gpt_repairable(t);
    t.table
        .findings
        .iter()
        .filter(|f| !(repairable && f.code == Code::GptPrimaryInvalid))
        .find(|f| f.severity == Severity::Error)
        .map(|f| format!("the table itself needs repair first: {}", f.message))
}

/// The start grain: 1 MiB, or the least common multiple of 1 MiB and a
/// sane optimal I/O size (a stripe width) and the kernel's grain.
pub fn start_grain(t: &Topology) -> (u64, String) {
    let mut g = lcm_not_zero(MIB, t.grain());
    let mut why = "1 MiB: aligned under every controller (USB bridge, SATA, 4Kn)".to_string();
    if let Some(opt) = sane_optimal(t) {
        let with = lcm_not_zero(g, opt);
        if with != g && with <= 1024 * MIB {
            why = format!(
                "{}: 1 MiB and the optimal I/O size of {} (a stripe width)",
                human(with),
                human(opt)
            );
            g = with;
        }
    }
    // A flash card's allocation unit (not always a power of two: 12 MiB
    // and 24 MiB are in the SD table): starts on it share no unit.
    let unit = t.erase_unit_bytes;
    if unit > 0 {
        let with = lcm_not_zero(g, unit);
        if with != g && with <= 1024 * MIB {
            why = format!(
                "{}: 1 MiB and the flash card's allocation unit of {}",
                human(with),
                human(unit)
            );
            g = with;
        }
    }
    (g, why)
}

fn sorted(parts: &[Partition]) -> Vec<Partition> {
    let mut v = parts.to_vec();
    v.sort_by_key(|p| (p.first_lba, p.number));
    v
}

fn root_of(t: &Target, number: u32) -> Option<&crate::inspect::Root> {
    t.stack.iter().find(|r| r.partition == Some(number))
}

/// sgdisk's alignment (`sgdisk -v`) lowers to fit the starts, so moving a
/// start from 63 to 1 MiB raises it, and an end that was on it before
/// may no longer be: a caution the plan would add. Place again with the
/// ends that are on it now kept on the raised one where the room is
/// free (`Slot::end_pref`); the first placement stands when that changes
/// nothing or fails.
fn keep_sgdisk_ends(
    t: &Target,
    parts: &[Partition],
    contents: &[Content],
    grid: Grid,
    end_grain: u64,
    placed: Vec<Placed>,
) -> Vec<Placed> {
    let ss = t.table.sector_size.max(1);
    let view = ToolView::new(&t.topology, t.size);
    let lbs = view.lbs.max(1);
    if ss % lbs != 0 {
        return placed;
    }
    let per = ss / lbs;
    let data = |i: &usize| parts[*i].kind != PartKind::Extended;
    let idx: Vec<usize> = (0..parts.len()).filter(data).collect();
    let now: Vec<u64> = idx.iter().map(|&i| parts[i].first_lba * per).collect();
    let after: Vec<u64> = idx.iter().map(|&i| placed[i].start * per).collect();
    let (was, will) = (
        check::sgdisk_alignment(&view, &now),
        check::sgdisk_alignment(&view, &after),
    );
    if will <= was || will % per != 0 {
        return placed;
    }
    let mut keep = vec![false; parts.len()];
    for &i in &idx {
        let q = &parts[i];
        keep[i] = !check::sgdisk_cautions(was, q.first_lba * per, (q.last_lba + 1) * per - 1);
    }
    let pref = Grid {
        end_pref: (will / per).max(grid.end),
        ..grid
    };
    place_all(t, parts, contents, pref, end_grain, &keep).unwrap_or(placed)
}

/// Place the top-level partitions, then the logical ones inside their
/// fixed extended container (`end_pref`: the slots whose ends keep to
/// the grid's preferred end). Returns the places in `parts` order.
fn place_all(
    t: &Target,
    parts: &[Partition],
    contents: &[Content],
    grid: Grid,
    end_grain: u64,
    end_pref: &[bool],
) -> Result<Vec<Placed>, String> {
    let ss = t.table.sector_size.max(1);
    let disk_last = (t.size / ss).saturating_sub(1);
    let (lo, hi) = t.table.usable.unwrap_or((1, disk_last));
    let slot = |i: usize, lo: u64, hi: u64| {
        let q = &parts[i];
        let size = q.last_lba.saturating_sub(q.first_lba).saturating_add(1);
        let needed = contents[i]
            .needed_bytes
            .map_or(size, |b| b.div_ceil(ss).min(size));
        let floor = contents[i]
            .shrink_floor_bytes()
            .map_or(needed, |b| b.div_ceil(ss).min(needed));
        Slot {
            number: q.number,
            start: q.first_lba,
            size,
            fixed: q.kind == PartKind::Extended,
            needed,
            floor,
            lo,
            hi,
            shift: compensated(contents[i].data_offset_bytes, end_grain, ss),
            grow: contents[i].may_grow(),
            end_pref: end_pref[i],
        }
    };
    let mut out = vec![None; parts.len()];
    let top: Vec<usize> = (0..parts.len())
        .filter(|&i| parts[i].kind != PartKind::Logical)
        .collect();
    let slots: Vec<Slot> = top.iter().map(|&i| slot(i, lo, hi)).collect();
    let placed = layout::place(&slots, grid).map_err(|e| no_room(e, parts, contents, ss))?;
    for (&i, p) in top.iter().zip(placed) {
        out[i] = Some(p);
    }
    let logical: Vec<usize> = (0..parts.len())
        .filter(|&i| parts[i].kind == PartKind::Logical)
        .collect();
    let ext_last = parts
        .iter()
        .find(|p| p.kind == PartKind::Extended)
        .map_or(hi, |p| p.last_lba);
    let slots: Vec<Slot> = logical
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let ebr = parts[i]
                .ebr_lba
                .unwrap_or(parts[i].first_lba.saturating_sub(1));
            let next_ebr = logical
                .get(k + 1)
                .and_then(|&j| parts[j].ebr_lba)
                .map_or(ext_last, |e| e.saturating_sub(1));
            slot(i, ebr.saturating_add(1), next_ebr)
        })
        .collect();
    let placed = layout::place(&slots, grid).map_err(|e| no_room(e, parts, contents, ss))?;
    for (&i, p) in logical.iter().zip(placed) {
        out[i] = Some(p);
    }
    Ok(out.into_iter().flatten().collect())
}

/// Sectors to the content's data when that offset is off the end grain:
/// the tool that made the layer (pvcreate, cryptsetup) compensated for
/// the old misaligned start, so the partition start and the data start
/// cannot both be on the grid, and the data is what matters.
pub fn compensated(data_offset: Option<u64>, end_grain: u64, ss: u64) -> u64 {
    match data_offset {
        Some(d) if d % end_grain.max(1) != 0 && d % ss == 0 => d / ss,
        _ => 0,
    }
}

/// The resize2fs step when a partition becomes smaller than its ext4.
fn shrink(number: u32, c: &Content, before: &Extent, after: &Extent) -> Option<Step> {
    let f = c.fs.as_ref().filter(|f| f.kind == FsKind::Ext4)?;
    let bs = u64::from(f.block_size.max(1));
    let to = after.size_bytes / bs * bs;
    (to < f.size_bytes).then_some(Step::Shrink(Shrink {
        partition: number,
        filesystem: f.kind,
        partition_start_bytes: before.start_bytes,
        partition_size_bytes: before.size_bytes,
        block_size: bs,
        from_bytes: f.size_bytes,
        to_bytes: to,
    }))
}

/// Why a partition is planned off 4 KiB, and how to align both.
fn compensated_note(number: u32, c: &Content, grain: u64) -> super::Manual {
    let d = c.data_offset_bytes.unwrap_or_default();
    let commands = if c.vg.is_some() {
        super::recipes::pvmove_to_a_new_pv()
    } else if c.what.starts_with("LUKS") {
        super::recipes::recreate_luks()
    } else {
        vec!["move the data to a layer made on an aligned partition, then remove this one".into()]
    };
    super::Manual {
        partition: Some(number),
        why: format!(
            "the {} in partition {number} hands its data up {d} bytes from the partition's start ({} past 4 KiB: the tool that made it compensated for a misaligned start), so the plan puts that data on {} and leaves the partition's own start off 4 KiB; to align both, the layer must be made again",
            c.what,
            d % (4 * KIB),
            human(grain)
        ),
        commands,
        about: None,
        clears: false,
    }
}

/// A partition's device node, for the commands run by hand: the kernel's
/// on a live disk, else what `losetup -P` makes of the raw image: for a
/// container, of its raw copy (a loop device over the container file
/// shows the container's bytes, not its guest disk).
fn node(t: &Target, number: u32, disk: &boot::Disk) -> String {
    let image = match disk {
        boot::Disk::Container { raw, .. } => raw.clone(),
        _ => t.path.display().to_string(),
    };
    match &t.disk {
        Some(d) => d
            .partitions
            .iter()
            .find(|k| k.number == number)
            .map_or_else(
                || format!("{}{number}", d.device.display()),
                |k| format!("/dev/{}", k.name),
            ),
        None => format!(
            "LOOPp{number} (losetup -P -f --show {})",
            shell_word(&image)
        ),
    }
}

/// What to do by hand about an end the plan leaves off its grid because
/// what lives in the partition needs it (a PV, an XFS, data it does not
/// recognise): the command that makes that content end sooner, and then
/// plan again, which brings the end down.
fn end_notes(p: &mut DiskPlan, t: &Target, contents: &[Content], disk: &boot::Disk) {
    let grain = p.end_grain_bytes.max(1);
    let mut notes = Vec::new();
    for (x, c) in p.partitions.iter().zip(contents) {
        let end = x.after.start_bytes.saturating_add(x.after.size_bytes);
        let shifted = compensated(c.data_offset_bytes, grain, p.sector_size) != 0;
        if end % grain == 0 || shifted || x.kind == PartKind::Extended {
            continue;
        }
        let to = end - end % grain - x.after.start_bytes;
        let mut why = format!(
            "ends at byte {end}, not on a {} boundary, and what lives in it ({}) reaches that end; the end can come down to byte {} once that ends within the first {to} bytes",
            human(grain),
            c.what,
            end - end % grain
        );
        if let boot::Disk::Container { path, format, raw } = disk {
            why.push_str(&format!(
                ". {path} is a {format} image: this is done on its raw copy, {raw}, between the first two steps under \"First:\" (after qemu-img convert makes it, before diskalign plans it); a loop device over {path} itself shows the container's bytes, not its guest disk"
            ));
        }
        notes.push(super::Manual {
            partition: Some(x.number),
            why,
            commands: c.shrink_by_hand(&node(t, x.number, disk), to),
            about: None,
            clears: false,
        });
    }
    p.manual.extend(notes);
}

/// Why there is no room, in the user's terms.
fn no_room(e: layout::NoRoom, parts: &[Partition], contents: &[Content], ss: u64) -> String {
    let short = human(e.short.saturating_mul(ss));
    let fs = parts
        .iter()
        .zip(contents)
        .filter_map(|(_, c)| c.fs.as_ref().map(|f| f.kind))
        .collect::<Vec<_>>();
    let logical = parts
        .iter()
        .any(|p| p.number == e.number && p.kind == PartKind::Logical);
    let hint = if logical {
        " A logical partition stays before the next one's EBR (sfdisk keeps EBRs where they are), so the room must come from its own content."
    } else if fs.contains(&FsKind::Xfs) {
        " XFS cannot shrink, so the room cannot come from it."
    } else if fs.contains(&FsKind::Ext4) {
        " The plan would shrink an ext4 filesystem (resize2fs) to make room, but even down to what it uses plus a margin it cannot give that much: free space in it first, then plan again."
    } else if fs.contains(&FsKind::Btrfs) {
        " btrfs shrinks only while mounted (btrfs filesystem resize); shrink it by that much, then plan again."
    } else {
        ""
    };
    format!(
        "no free space: aligning partition {} needs {short} more than the disk has after it, and nothing before it can give room without losing data.{hint}",
        e.number
    )
}

/// The partitions before and after, the steps, the estimate; returns
/// what a container's raw copy needs right after its script.
fn fill(
    p: &mut DiskPlan,
    parts: &[Partition],
    contents: &[Content],
    placed: &[Placed],
    opts: &PlanOptions,
    disk: &boot::Disk,
) -> Vec<String> {
    let ss = p.sector_size;
    let mut table: Vec<Entry> = parts
        .iter()
        .map(|q| Entry {
            number: q.number,
            start: q.first_lba,
            size: q.last_lba.saturating_sub(q.first_lba).saturating_add(1),
        })
        .collect();
    table.sort_by_key(|e| e.number);
    let mut vgs = Vec::new();
    let mut shrinks = Vec::new();
    let mut zero_tails = Vec::new();
    let mut after_script = Vec::new();
    for ((q, c), n) in parts.iter().zip(contents).zip(placed) {
        let before = Extent::new(
            q.first_lba,
            q.last_lba.saturating_sub(q.first_lba).saturating_add(1),
            ss,
        );
        let after = Extent::new(n.start, n.size, ss);
        let action = match (
            before.start_sector != after.start_sector,
            before.sectors != after.sectors,
        ) {
            (false, false) => Action::Keep,
            (true, false) => Action::Move,
            (false, true) => Action::Resize,
            (true, true) => Action::MoveResize,
        };
        if action != Action::Keep {
            p.offline.extend(
                c.offline
                    .iter()
                    .map(|o| format!("partition {}: {o}", q.number)),
            );
            p.offline.extend(c.holders.iter().map(|h| {
                format!(
                    "partition {}: {h} is built on it and must be stopped",
                    q.number
                )
            }));
            vgs.extend(c.vg.clone());
        }
        shrinks.extend(shrink(q.number, c, &before, &after));
        if c.zero_tail_bytes.is_some() && after.size_bytes < before.size_bytes {
            let cut = Span {
                start_bytes: before.start_bytes.saturating_add(after.size_bytes),
                bytes: before.size_bytes - after.size_bytes,
            };
            zero_tails.push((q.number, cut));
        }
        let read = boot::Read {
            volume: c.boot.as_ref().map(|b| b.volume.name()),
            dos: p.table == TableKind::Mbr,
        };
        p.manual.extend(boot::notes(q, &before, &after, disk, read));
        if let boot::Disk::Container { raw, .. } = disk {
            after_script.extend(boot::after_script(q, &before, &after, raw, read));
        }
        if compensated(c.data_offset_bytes, p.end_grain_bytes, ss) != 0 {
            p.manual
                .push(compensated_note(q.number, c, p.start_grain_bytes));
        }
        p.partitions.push(PartPlan {
            number: q.number,
            kind: q.kind,
            content: c.what.clone(),
            content_bytes: c.needed_bytes,
            before,
            after,
            action,
        });
    }
    let mut steps = Vec::new();
    // Right to left: every move goes forward, into room already vacated.
    let mut order: Vec<&PartPlan> = p
        .partitions
        .iter()
        .filter(|x| x.action != Action::Keep)
        .collect();
    order.sort_by_key(|x| std::cmp::Reverse(x.before.start_sector));
    for x in order {
        if x.before.start_sector != x.after.start_sector {
            let copy = x.before.size_bytes.min(x.after.size_bytes);
            p.bytes_to_move = p.bytes_to_move.saturating_add(copy);
            let boot = parts
                .iter()
                .zip(contents)
                .find(|(q, _)| q.number == x.number)
                .and_then(|(_, c)| c.boot.as_ref());
            steps.push(Step::Move {
                partition: x.number,
                from_bytes: x.before.start_bytes,
                to_bytes: x.after.start_bytes,
                copy_bytes: copy,
                chunk_bytes: opts.chunk,
                hidden_sectors: boot.and_then(|b| {
                    hidden::planned(b, x.before.start_bytes, x.after.start_bytes, copy)
                }),
            });
        }
        let table_before = table.clone();
        if let Some(e) = table.iter_mut().find(|e| e.number == x.number) {
            e.start = x.after.start_sector;
            e.size = x.after.sectors;
        }
        steps.push(Step::Table {
            partition: x.number,
            before: x.before,
            after: x.after,
            table_before,
            table_after: table.clone(),
            zero_tail: zero_tails
                .iter()
                .find(|(n, _)| *n == x.number)
                .map(|(_, cut)| *cut),
        });
    }
    if !steps.is_empty() {
        // Filesystems shrink first, while the table is as it was.
        steps.splice(0..0, shrinks);
        vgs.sort();
        vgs.dedup();
        steps.insert(
            0,
            Step::Backup {
                table: p.table,
                volume_groups: vgs,
            },
        );
    }
    p.steps = steps;
    p.offline.sort();
    p.offline.dedup();
    // Each byte is read and written twice: into the staging file, then to
    // its place.
    p.estimated_seconds = 2.0 * p.bytes_to_move as f64 / opts.throughput.max(1) as f64;
    after_script
}
