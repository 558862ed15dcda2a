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
use crate::topology::{Declared, Transport};
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
    /// Why a tool would do otherwise; on a removable disk, the mkfs
    /// options that put a FAT32's or an exFAT's clusters on the grain.
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
    d.notes
        .extend(removable_note(t, grain, d.partitions.first()));
    d
}

/// A card or a stick (the kernel's removable flag, a USB or MMC
/// transport): FAT32 or exFAT is what goes on it, and their mkfs options
/// decide where their clusters start, which the layout alone does not.
fn removable_note(t: &Target, grain: u64, first: Option<&Extent>) -> Option<String> {
    // A live disk only: an image's partitions have no node to name.
    let d = t.disk.as_ref()?;
    let tp = &t.topology;
    let removable = tp.removable_flash
        || d.removable == Some(true)
        || d.usb.is_some()
        || matches!(
            d.transport,
            Transport::Usb | Transport::UsbStorage | Transport::UsbUas | Transport::Mmc
        );
    if !removable {
        return None;
    }
    let dev = d.device.display().to_string();
    let sep = if dev.ends_with(|c: char| c.is_ascii_digit()) {
        "p"
    } else {
        ""
    };
    let node = format!("{dev}{sep}1");
    let [fat, exfat] = removable_mkfs(
        u64::from(tp.logical_block_size),
        u64::from(tp.physical_block_size),
        grain,
        &node,
    );
    Some(format!(
        "a removable disk (a card or a stick): for a FAT32 or an exFAT with its clusters on the grain, make it with {fat} (clusters of at least 4 KiB and the physical block: without -a, mkfs.fat pads its reserved sectors to a whole cluster, so the data area starts a whole number of clusters after the partition's aligned start; -a, -s 1 or a small volume's default of 512 B or 2 KiB clusters leave it off) or {exfat} (the cluster heap on {} of the disk), likewise on the other partitions",
        exact(grain)
    ) + &unit_caveat(tp, first, &node))
}

/// On a flash card, mkfs.fat's data area lands on its cluster grid, not
/// on the card's allocation unit, unless its reserved sectors make up the
/// distance (`check::fat32_reserved`, for partition 1's size and start);
/// mkfs.exfat -b puts the heap there when the unit is a power of two.
fn unit_caveat(tp: &crate::iolimits::Topology, first: Option<&Extent>, node: &str) -> String {
    let u = tp.erase_unit_bytes;
    if u == 0 {
        return String::new();
    }
    let lbs = u64::from(tp.logical_block_size).max(1);
    let most = ((4 * KIB)
        .max(u64::from(tp.physical_block_size))
        .min(32 * KIB)
        / lbs)
        .max(1);
    // The largest cluster up to the usual one that still makes a FAT32
    // (65,525 clusters or more) on partition 1.
    let fat = first
        .and_then(|p| {
            std::iter::successors(Some(most), |s| (*s > 1).then(|| s / 2)).find_map(|spc| {
                check::fat32_reserved(p.size_bytes / lbs, lbs, spc, p.start_bytes, u)
                    .map(|r| (spc, r))
            })
        })
        .map(|(spc, r)| {
            format!(
                "mkfs.fat -F 32 -s {spc} -a -R {r} {} puts the FAT32's data area on a unit (-a: exactly after these reserved sectors and its FATs; the count is for partition 1's size, check names it for another's as the fix of layer-start-not-erase-unit)",
                crate::names::shell_word(node)
            )
        });
    let exfat = if u.is_power_of_two() {
        "mkfs.exfat -b puts the exFAT's heap on one".to_string()
    } else {
        format!(
            "mkfs.exfat -b takes a power of two only, so an exFAT's heap lands on {}",
            exact(u & u.wrapping_neg())
        )
    };
    match fat {
        Some(fat) => format!("; on this card's {} allocation unit, {fat}; {exfat}", exact(u)),
        None => format!(
            "; on this card's {} allocation unit the FAT32 one's data area is on its cluster grid, after its FATs in the unit the partition starts (check says layer-start-not-erase-unit); {exfat}",
            exact(u)
        ),
    }
}

/// The commands that make a FAT32 and an exFAT on `node` (a partition on
/// the start grain of a disk of `lbs`-byte logical and `pbs`-byte
/// physical blocks) whose data area and cluster heap start on the grain
/// check judges them against: `mkfs.fat -s` clusters of 4 KiB or the
/// physical block (at most 32 KiB), without `-a` (dosfstools pads the
/// reserved sectors to a whole cluster, `src/mkfs.fat.c`; what `-a`
/// turns off), and `mkfs.exfat -b` the start grain (exfatprogs aligns the
/// FAT and the heap to it counted from the disk's start, on a partition's
/// node).
pub fn removable_mkfs(lbs: u64, pbs: u64, grain: u64, node: &str) -> [String; 2] {
    let cluster = (4 * KIB).max(pbs).min(32 * KIB);
    let spc = (cluster / lbs.max(1)).clamp(1, 128);
    // mkfs.exfat takes a power of two only: the largest that divides a
    // grain of 12 or 24 MiB (a flash card's unit) is the most it can do.
    let pow2 = grain & grain.wrapping_neg();
    let boundary = if pow2 % (1 << 20) == 0 {
        format!("{}M", pow2 >> 20)
    } else {
        format!("{}K", pow2 / KIB)
    };
    let node = crate::names::shell_word(node);
    [
        format!("mkfs.fat -F 32 -s {spc} {node}"),
        format!("mkfs.exfat -b {boundary} {node}"),
    ]
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

    /// On a flash card the note names the FAT32 command whose reserved
    /// sectors put its data area on the card's unit (for partition 1),
    /// and says mkfs.exfat -b cannot take a unit of 12 MiB.
    #[test]
    fn on_a_flash_card_the_fat32_gets_its_reserved_sectors() {
        let mut tp = Topology::IMAGE_DEFAULT;
        assert_eq!(unit_caveat(&tp, None, "/dev/mmcblk0p1"), "");
        tp.erase_unit_bytes = 4 * MIB;
        let p1 = Extent::new(8192, 4 << 21, 512);
        let c = unit_caveat(&tp, Some(&p1), "/dev/mmcblk0p1");
        let r = check::fat32_reserved(4 << 21, 512, 8, 4 * MIB, 4 * MIB).unwrap();
        assert!(
            c.contains(&format!(
                "mkfs.fat -F 32 -s 8 -a -R {r} /dev/mmcblk0p1 puts"
            )),
            "{c}"
        );
        assert!(
            c.contains("mkfs.exfat -b puts the exFAT's heap on one"),
            "{c}"
        );
        // 256 MiB: too few 4 KiB clusters for a FAT32, 2 KiB ones do.
        let small = Extent::new(8192, 1 << 19, 512);
        let c = unit_caveat(&tp, Some(&small), "/dev/mmcblk0p1");
        assert!(c.contains("mkfs.fat -F 32 -s 4 -a -R"), "{c}");
        tp.erase_unit_bytes = 12 * MIB;
        let c = unit_caveat(&tp, Some(&p1), "/dev/mmcblk0p1");
        assert!(c.contains("heap lands on 4 MiB"), "{c}");
    }

    /// A card or a stick gets the mkfs options that put a FAT32's or an
    /// exFAT's clusters on the grain; a SATA disk and an image do not.
    #[test]
    fn a_removable_disk_gets_its_fat_and_exfat_options() {
        let mut t = image(GIB, Topology::IMAGE_DEFAULT, vec![]);
        let sata = disk(GIB, vec![]);
        t.disk = Some(sata.clone());
        let plain = plan_new_disk(&t, &[Size::Rest], TableKind::Mbr);
        assert!(
            plain.notes.iter().all(|n| !n.contains("mkfs")),
            "{:?}",
            plain.notes
        );
        let mut card = sata;
        card.device = "/dev/mmcblk0".into();
        card.transport = Transport::Mmc;
        t.disk = Some(card);
        let d = plan_new_disk(&t, &[Size::Rest], TableKind::Mbr);
        let note = d.notes.iter().find(|n| n.contains("mkfs")).unwrap();
        assert!(
            note.contains("mkfs.fat -F 32 -s 8 /dev/mmcblk0p1 ("),
            "{note}"
        );
        assert!(note.contains("mkfs.exfat -b 1M /dev/mmcblk0p1 ("), "{note}");
        assert_eq!(
            removable_mkfs(512, 4096, 4 * MIB, "/dev/sdc1"),
            [
                "mkfs.fat -F 32 -s 8 /dev/sdc1",
                "mkfs.exfat -b 4M /dev/sdc1"
            ]
        );
        assert_eq!(
            removable_mkfs(4096, 4096, MIB, "/dev/sdc1")[0],
            "mkfs.fat -F 32 -s 1 /dev/sdc1"
        );
        assert_eq!(
            removable_mkfs(512, 65536, MIB, "/dev/sdc1")[0],
            "mkfs.fat -F 32 -s 64 /dev/sdc1"
        );
    }
}
