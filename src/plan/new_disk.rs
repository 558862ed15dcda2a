//! `plan --new DISK --sizes 512M,100G,rest`: a layout for an empty disk,
//! as an sfdisk script, aligned under every controller the disk may sit
//! behind, and why it differs from what parted, fdisk and sgdisk would do
//! on this disk as it presents itself now.

use super::layout::Grid;
use super::Extent;
use crate::check;
use crate::check::{first_starts, FirstStarts, ToolView};
use crate::findings::Finding;
use crate::inspect::Target;
use crate::layout::TableKind;
use crate::topology::Declared;
use crate::units::{exact, gcd, human, KIB};
use serde::Serialize;

/// One requested size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    Bytes(u64),
    /// Whatever is left (last only).
    Rest,
}

/// Parse `512M,100G,rest`: sizes as `parse_size` reads them, `rest` last.
pub fn parse_sizes(s: &str) -> Result<Vec<Size>, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let mut out = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if p.eq_ignore_ascii_case("rest") {
            if i + 1 != parts.len() {
                return Err("only the last size can be \"rest\"".into());
            }
            out.push(Size::Rest);
            continue;
        }
        match crate::units::parse_size(p) {
            Some(b) if b > 0 => out.push(Size::Bytes(b)),
            _ => return Err(format!("\"{p}\" is not a size (512M, 100G, 1T or rest)")),
        }
    }
    if out.len() > 128 {
        return Err("more than 128 partitions".into());
    }
    Ok(out)
}

/// The proposed layout of an empty disk.
#[derive(Clone, Debug, Serialize)]
pub struct NewDisk {
    pub path: String,
    pub label: TableKind,
    pub sector_size: u64,
    pub start_grain_bytes: u64,
    pub start_grain_why: String,
    pub partitions: Vec<Extent>,
    /// The layout as `sfdisk DISK < script` reads it.
    pub sfdisk_script: String,
    /// Where parted -a optimal, fdisk and sgdisk would start partition 1
    /// on this disk as it presents itself, in bytes.
    pub tools_first_start_bytes: FirstStarts,
    /// Why a tool would do otherwise.
    pub notes: Vec<String>,
    /// Why it cannot be done (the disk is not empty, the sizes do not fit).
    pub refused: Vec<String>,
    /// What the disk's own identify data advises before it is laid out:
    /// `nvme-format-4k-available` (never run).
    pub advice: Vec<Finding>,
    /// Why `--script` writes nothing although the layout fits: the target
    /// is an image container, whose guest disk is laid out on a raw copy
    /// (sfdisk on the container file would write into its clusters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub script_refused: Option<String>,
}

/// Lay out `sizes` on the empty disk `t`.
pub fn plan_new_disk(t: &Target, sizes: &[Size], label: TableKind) -> NewDisk {
    let lbs = u64::from(t.topology.logical_block_size).max(512);
    let says = t.disk.as_ref().and_then(|d| d.declared.as_ref());
    let (grain, why) = declared_grain(super::disk::start_grain(&t.topology), says);
    let view = ToolView::new(&t.topology, t.size);
    let tools = first_starts(&view, label == TableKind::Mbr);
    let mut d = NewDisk {
        path: t.path.display().to_string(),
        label,
        sector_size: lbs,
        start_grain_bytes: grain,
        start_grain_why: why,
        partitions: Vec::new(),
        sfdisk_script: String::new(),
        tools_first_start_bytes: tools,
        notes: notes(&tools, grain, &t.topology),
        refused: Vec::new(),
        advice: t
            .disk
            .as_ref()
            .and_then(|d| check::format_advice(says, &d.device.display().to_string()))
            .into_iter()
            .collect(),
        script_refused: None,
    };
    d.script_refused = t
        .container
        .as_ref()
        .map(|c| super::container::new_disk_refusal(&d.path, c));
    if let Some(why) = not_empty(t) {
        d.refused.push(why);
        return d;
    }
    match layout(t, sizes, label, grain, lbs) {
        Ok(parts) => {
            d.sfdisk_script = script(&parts, label);
            d.partitions = parts;
        }
        Err(why) => d.refused.push(why),
    }
    d
}

/// The start grain, widened to the NVMe namespace's declared preferred
/// write unit (NPWA, NPWG) when the grain is not already a multiple of it.
fn declared_grain((grain, why): (u64, String), says: Option<&Declared>) -> (u64, String) {
    match check::write_unit(says) {
        Some(u) if grain % u.bytes() != 0 => {
            let unit = u.bytes();
            let g = (grain / gcd(grain, unit)).saturating_mul(unit);
            (
                g,
                format!(
                    "{why}, widened to {} for the namespace's declared preferred write unit of {} (NPWG {}, NPWA {})",
                    exact(g),
                    exact(unit),
                    exact(u.npwg_bytes),
                    exact(u.npwa_bytes)
                ),
            )
        }
        _ => (grain, why),
    }
}

fn not_empty(t: &Target) -> Option<String> {
    let what = if !t.table.partitions.is_empty() {
        Some(format!("a {} partition table", t.table.kind))
    } else {
        t.stack
            .iter()
            .flat_map(|r| r.layer.children.iter())
            .next()
            .map(|l| format!("{} ({})", l.name, l.kind))
    };
    what.map(|w| {
        format!(
            "{} is not empty: it holds {w}. --new lays out empty disks only (wipefs -a clears one, and its data)",
            t.path.display()
        )
    })
}

fn layout(
    t: &Target,
    sizes: &[Size],
    label: TableKind,
    grain: u64,
    lbs: u64,
) -> Result<Vec<Extent>, String> {
    let total = t.size / lbs;
    let gpt = label == TableKind::Gpt;
    if !gpt && sizes.len() > 4 {
        return Err("a DOS label holds 4 primary partitions; use --label gpt".into());
    }
    if !gpt && total > u64::from(u32::MAX) {
        return Err("a DOS label cannot address past 2^32 sectors; use --label gpt".into());
    }
    // GPT: the backup entries (16 KiB) and header at the end.
    let last = if gpt {
        total.saturating_sub(2 + (16 * KIB / lbs).max(1))
    } else {
        total.saturating_sub(1)
    };
    let grid = Grid {
        start: (grain / lbs).max(1),
        offset: 0,
        end: (4 * KIB / lbs).max(1),
        end_pref: (4 * KIB / lbs).max(1),
    };
    let mut out = Vec::new();
    let mut from = 1;
    for (i, s) in sizes.iter().enumerate() {
        let start = grid.start_at(from);
        let end_excl = match *s {
            Size::Bytes(b) => start.saturating_add(grid.end_up(b.div_ceil(lbs))),
            Size::Rest => grid.end_down(last + 1),
        };
        if end_excl <= start || end_excl - 1 > last {
            return Err(format!(
                "partition {} does not fit: the disk has {} after {}",
                i + 1,
                human(
                    last.saturating_add(1)
                        .saturating_sub(start)
                        .saturating_mul(lbs)
                ),
                exact(start.saturating_mul(lbs))
            ));
        }
        out.push(Extent::new(start, end_excl - start, lbs));
        from = end_excl;
    }
    Ok(out)
}

fn script(parts: &[Extent], label: TableKind) -> String {
    let mut s = format!(
        "label: {}\nunit: sectors\n\n",
        if label == TableKind::Gpt {
            "gpt"
        } else {
            "dos"
        }
    );
    for p in parts {
        s.push_str(&format!("start={}, size={}\n", p.start_sector, p.sectors));
    }
    s
}

/// Why the tools' first starts differ from ours.
fn notes(tools: &FirstStarts, grain: u64, t: &crate::iolimits::Topology) -> Vec<String> {
    let opt = u64::from(t.optimal_io_size);
    let mut out = Vec::new();
    if tools.parted % grain != 0 {
        out.push(format!(
            "parted -a optimal would start partition 1 at byte {} ({}), because it aligns to the optimal I/O size of {} bytes this disk reports{}: that start is off 1 MiB, so the layout breaks when the disk is attached without this controller",
            tools.parted,
            human(tools.parted),
            opt,
            if crate::units::is_bridge_opt(opt, u64::from(t.logical_block_size)) {
                " (a USB bridge's 65535-sector maximum transfer, not a property of the disk)"
            } else {
                ""
            }
        ));
    }
    for (tool, at) in [("fdisk", tools.fdisk), ("sgdisk", tools.sgdisk)] {
        if at % grain != 0 {
            out.push(format!(
                "{tool} would start partition 1 at byte {at} ({}), off the {} grain used here",
                human(at),
                human(grain)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixture::{disk, image};
    use crate::check::{namespace, says};
    use crate::iolimits::Topology;
    use crate::units::MIB;
    const GIB: u64 = 1024 * MIB;

    /// A disk whose (synthetic) Declared declares `ns`.
    fn nvme_target(ns: crate::identify::Namespace) -> Target {
        let mut t = image(GIB, Topology::IMAGE_DEFAULT, vec![]);
        let mut d = disk(GIB, vec![]);
        d.device = "/dev/nvme0n1".into();
        d.declared = Some(says(ns, 512));
        t.disk = Some(d);
        t
    }

    #[test]
    fn the_format_advice_comes_with_the_plan_and_nothing_for_images() {
        let sizes = [Size::Rest];
        let d = plan_new_disk(&nvme_target(namespace(0x00, 0, 0)), &sizes, TableKind::Gpt);
        assert_eq!(d.advice.len(), 1);
        assert_eq!(
            d.advice[0].facts.fix.as_deref(),
            Some("nvme format --lbaf=1 /dev/nvme0n1")
        );
        assert!(d.advice[0].message.contains("erases the whole namespace"));
        assert_eq!(d.start_grain_bytes, MIB);
        let img = image(GIB, Topology::IMAGE_DEFAULT, vec![]);
        assert!(plan_new_disk(&img, &sizes, TableKind::Gpt)
            .advice
            .is_empty());
    }

    #[test]
    fn a_declared_unit_off_the_grain_widens_it() {
        // NPWG 3 MiB (6144 blocks of 512, 0's based 6143), NPWA 512.
        let d = plan_new_disk(
            &nvme_target(namespace(0x10, 6143, 0)),
            &[Size::Rest],
            TableKind::Gpt,
        );
        assert_eq!(d.start_grain_bytes, 3 * MIB);
        assert!(
            d.start_grain_why.contains("widened to 3 MiB"),
            "{}",
            d.start_grain_why
        );
        assert_eq!(d.partitions[0].start_sector * 512 % (3 * MIB), 0);
        // 16 KiB divides 1 MiB: the grain stays.
        let d = plan_new_disk(
            &nvme_target(namespace(0x10, 31, 31)),
            &[Size::Rest],
            TableKind::Gpt,
        );
        assert_eq!(d.start_grain_bytes, MIB);
    }
}
