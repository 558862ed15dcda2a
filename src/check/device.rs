//! The device itself: its topology as the kernel reports it (or the limits
//! given for a what-if), and the table the kernel registered against the
//! table on disk.

use super::outcome::TopologySource;
use crate::findings::{Code, Facts, Finding, Severity};
use crate::inspect::Target;
use crate::layout::{PartKind, Table};
use crate::topology::{self, Disk};

/// `topology-unknown`, only where the topology is the image default:
/// `--topology` gives it, and a container that says its own sector sizes
/// is another source. An image whose table uses 4096-byte sectors is
/// judged as the 4Kn disk it was made for.
fn topology_unknown(t: &Target) -> Option<Finding> {
    if t.source != TopologySource::ImageDefault {
        return None;
    }
    let ss = t.table.sector_size;
    let text = if ss != 512 && t.topology.logical_block_size == ss as u32 {
        format!("the partition table uses {ss}-byte sectors, so this image is judged as a disk with {ss}-byte logical blocks (give --topology to ask what-if)")
    } else if t.host.as_ref().is_some_and(|h| h.judged_on.is_some()) {
        // The host device is known: the guest's own disk (what the
        // hypervisor presents) is what stays unknown. The host device is
        // named by the host findings and the JSON's `host`.
        "image file: the disk the guest is given is the hypervisor's choice, so the default 512/512/512/0 topology is used and every partition is judged against 4 KiB and 1 MiB anyway (give --topology to ask what-if); where the file lies on the host disk is judged apart".into()
    } else {
        "image file: the real device is unknown, so the default 512/512/512/0 topology is used and every partition is judged against 4 KiB and 1 MiB anyway (give --topology to ask what-if)".into()
    };
    Some(Finding::new(Code::TopologyUnknown, text))
}

/// The findings about a target's topology: the kernel's own view, or the
/// limits given for a what-if.
pub fn topology_findings(t: &Target) -> Vec<Finding> {
    let mut out = t.notes.clone();
    out.extend(topology_unknown(t));
    let topo = &t.topology;
    match &t.disk {
        // The kernel's own view, sysfs against ioctls included.
        Some(d) if t.source == TopologySource::Kernel => out.extend(d.findings.iter().cloned()),
        // A what-if topology: judge the limits given, not the device's ioctls.
        Some(d) => out.extend(topology::limit_hints(
            &d.name,
            topo,
            t.size,
            !d.slaves.is_empty(),
            false,
        )),
        None => out.extend(topology::limit_hints(
            "the image",
            topo,
            t.size,
            false,
            false,
        )),
    }
    out.extend(multipath_path(t));
    if let Some(d) = &t.disk {
        let node = d.device.display().to_string();
        out.extend(super::declared::format_advice(d.declared.as_ref(), &node));
    }
    out
}

/// `multipath-path`: the target (a disk, or a partition of one) is a
/// path of a multipath map, named on the command line.
fn multipath_path(t: &Target) -> Option<Finding> {
    let map = t.disk.as_ref()?.path_of.as_ref()?;
    let facts = Facts {
        map_name: Some(map.dm_name.clone()).filter(|n| !n.is_empty()),
        map_node: Some(map.node().display().to_string()),
        map_kernel_name: Some(map.name.clone()),
        ..Facts::default()
    };
    Some(Finding::of(Code::MultipathPath, facts))
}

/// Compare the table on disk with what the kernel registered.
pub fn kernel_table_findings(disk: &Disk, table: &Table) -> Vec<Finding> {
    let ss = table.sector_size;
    let ours: Vec<_> = table
        .partitions
        .iter()
        .filter(|p| p.last_lba >= p.first_lba)
        .collect();
    if disk.partitions.is_empty() {
        if ours.is_empty() {
            return vec![];
        }
        return vec![Finding::new(
            Code::KernelTableDiffers,
            format!(
                "the kernel has registered none of the {} partitions on {} (partition scanning off, or the table changed since: `partx -a {}` or `partprobe` makes it re-read)",
                ours.len(),
                disk.name,
                disk.device.display()
            ),
        )
        .severity(Severity::Info)];
    }
    let mut diffs = Vec::new();
    for p in &ours {
        let start = p.first_lba.saturating_mul(ss);
        let size = (p.last_lba - p.first_lba + 1).saturating_mul(ss);
        match disk.partitions.iter().find(|k| k.number == p.number) {
            None => diffs.push(format!("partition {} is not registered", p.number)),
            Some(k) if k.start_bytes != start => diffs.push(format!(
                "partition {} starts at byte {} for the kernel, {start} on disk",
                p.number, k.start_bytes
            )),
            Some(k) if p.kind != PartKind::Extended && k.size_bytes != size => diffs.push(format!(
                "partition {} is {} bytes for the kernel, {size} on disk",
                p.number, k.size_bytes
            )),
            _ => {}
        }
    }
    for k in &disk.partitions {
        if !ours.iter().any(|p| p.number == k.number) {
            diffs.push(format!(
                "the kernel has partition {} ({}) that the table on disk does not",
                k.number, k.name
            ));
        }
    }
    if diffs.is_empty() {
        return vec![];
    }
    vec![Finding::new(
        Code::KernelTableDiffers,
        format!(
            "{}; run `partx -u {}` or `partprobe` to make the kernel re-read the table",
            diffs.join("; "),
            disk.device.display()
        ),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixture::{disk, part, registered, table};
    use crate::iolimits::Topology;
    use crate::layout::TableKind;
    use crate::units::MIB;

    fn two_partitions() -> Table {
        table(
            TableKind::Mbr,
            vec![
                part(1, PartKind::Primary, 2048, 4095),
                part(2, PartKind::Primary, 4096, 8191),
            ],
        )
    }

    #[test]
    fn the_same_table_registered_says_nothing() {
        let d = disk(
            8 * MIB,
            vec![registered(1, MIB, MIB), registered(2, 2 * MIB, 2 * MIB)],
        );
        assert!(kernel_table_findings(&d, &two_partitions()).is_empty());
    }

    #[test]
    fn none_registered_is_advice() {
        let f = kernel_table_findings(&disk(8 * MIB, vec![]), &two_partitions());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].code, Code::KernelTableDiffers);
        assert_eq!(f[0].severity, Severity::Info);
        assert!(f[0].message.contains("none of the 2 partitions on sda"));
        let empty = table(TableKind::Mbr, vec![]);
        assert!(kernel_table_findings(&disk(8 * MIB, vec![]), &empty).is_empty());
    }

    #[test]
    fn each_difference_is_named() {
        let d = disk(
            8 * MIB,
            vec![registered(1, MIB + 512, MIB), registered(3, 6 * MIB, MIB)],
        );
        let f = kernel_table_findings(&d, &two_partitions());
        assert_eq!(f.len(), 1);
        let m = &f[0].message;
        assert_eq!(f[0].severity, Code::KernelTableDiffers.default_severity());
        assert!(m.contains("partition 1 starts at byte 1049088 for the kernel, 1048576 on disk"));
        assert!(m.contains("partition 2 is not registered"));
        assert!(m.contains("the kernel has partition 3 (sda3)"));
        assert!(
            m.ends_with("`partx -u /dev/sda` or `partprobe` to make the kernel re-read the table")
        );
    }

    #[test]
    fn a_what_if_topology_is_judged_on_its_own_limits() {
        let mut t = crate::check::fixture::image(8 * MIB, Topology::IMAGE_DEFAULT, vec![]);
        assert!(topology_findings(&t).is_empty());
        t.source = TopologySource::ImageDefault;
        let codes: Vec<Code> = topology_findings(&t).iter().map(|f| f.code).collect();
        assert_eq!(codes, [Code::TopologyUnknown]);
    }
}
