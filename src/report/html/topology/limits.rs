//! A disk's I/O limits as rows, sysfs beside the ioctl, each with the
//! findings that distrust it: the numbers behind the table and the figure.

use crate::findings::Finding;
use crate::topology::Disk;

/// One limit of one disk.
#[derive(Debug)]
pub struct Row<'a> {
    /// The sysfs name (`optimal_io_size`): the `data-limit` attribute.
    pub key: &'static str,
    pub label: &'static str,
    pub sysfs: i128,
    /// The ioctl's value: none when the node was not opened, or when no
    /// ioctl reads this limit (discard).
    pub ioctl: Option<i128>,
    /// Whether an ioctl exists for this limit at all.
    pub has_ioctl: bool,
    /// The findings about this limit.
    pub findings: Vec<&'a Finding>,
    /// A grain (drawn on the log scale), not an offset or a size.
    pub grain: bool,
}

impl Row<'_> {
    /// The ioctl read this limit and disagrees with sysfs.
    pub fn differs(&self) -> bool {
        self.ioctl.is_some_and(|i| i != self.sysfs)
    }

    pub fn suspicious(&self) -> bool {
        !self.findings.is_empty() || self.differs()
    }
}

/// The limits of `d`, in the order the kernel's queue directory lists
/// them, then the size.
pub fn rows(d: &Disk) -> Vec<Row<'_>> {
    let t = &d.topology;
    let io = d.ioctl.as_ref();
    let specs: [(&str, &str, i128, Option<i128>, bool); 8] = [
        (
            "logical_block_size",
            "logical block size",
            t.logical_block_size.into(),
            io.map(|i| i.logical_block_size.into()),
            true,
        ),
        (
            "physical_block_size",
            "physical block size",
            t.physical_block_size.into(),
            io.map(|i| i.physical_block_size.into()),
            true,
        ),
        (
            "minimum_io_size",
            "minimum I/O size",
            t.minimum_io_size.into(),
            io.map(|i| i.minimum_io_size.into()),
            true,
        ),
        (
            "optimal_io_size",
            "optimal I/O size",
            t.optimal_io_size.into(),
            io.map(|i| i.optimal_io_size.into()),
            true,
        ),
        (
            "alignment_offset",
            "alignment offset",
            t.alignment_offset.into(),
            io.map(|i| i.alignment_offset.into()),
            false,
        ),
        (
            "discard_granularity",
            "discard granularity",
            t.discard_granularity.into(),
            None,
            true,
        ),
        (
            "discard_alignment",
            "discard alignment",
            t.discard_alignment.into(),
            None,
            false,
        ),
        (
            "size",
            "size",
            d.size_bytes.into(),
            io.map(|i| i.size_bytes.into()),
            false,
        ),
    ];
    specs
        .into_iter()
        .map(|(key, label, sysfs, ioctl, grain)| Row {
            key,
            label,
            sysfs,
            ioctl,
            has_ioctl: !key.starts_with("discard"),
            findings: d
                .findings
                .iter()
                .filter(|f| about(f) == Some(key))
                .collect(),
            grain,
        })
        .collect()
}

/// The limit a topology finding is about (docs/findings.md), if one.
pub fn about(f: &Finding) -> Option<&'static str> {
    match f.code.as_str() {
        "optimal-io-suspicious" => Some("optimal_io_size"),
        "minimum-io-suspicious" => Some("minimum_io_size"),
        "hidden-4k-suspected" => Some("physical_block_size"),
        "kernel-reports-misaligned" => Some("alignment_offset"),
        "non-power-of-two-io" if f.message.starts_with("minimum_io_size") => {
            Some("minimum_io_size")
        }
        "non-power-of-two-io" => Some("optimal_io_size"),
        "ioctl-sysfs-mismatch" => match f.facts.region.as_deref()? {
            "logical block size" => Some("logical_block_size"),
            "physical block size" => Some("physical_block_size"),
            "minimum I/O size" => Some("minimum_io_size"),
            "optimal I/O size" => Some("optimal_io_size"),
            "alignment offset" => Some("alignment_offset"),
            "size" => Some("size"),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::saved::{Saved, TopologyDoc};

    fn doc(json: &str) -> TopologyDoc {
        match Saved::parse(json, "t.json").unwrap() {
            Saved::Topology(d) => *d,
            _ => panic!("not a topology document"),
        }
    }

    const BRIDGE: &str = r#"{"schema":"diskalign.topology","schema_version":1,"disks":[{
        "name":"sda","device":"/dev/sda","size_bytes":1000204886016,
        "topology":{"logical_block_size":512,"physical_block_size":4096,"minimum_io_size":4096,
                    "optimal_io_size":33553920,"alignment_offset":0,"discard_granularity":0,"discard_alignment":0},
        "ioctl":null,"ioctl_error":"/dev/sda: Permission denied",
        "findings":[{"code":"optimal-io-suspicious","severity":"warning","message":"optimal_io_size 33553920 is 65535 x 512"}]}]}"#;

    #[test]
    fn a_bridges_optimal_io_size_is_marked_and_the_ioctl_is_not_read() {
        let d = doc(BRIDGE);
        let rows = rows(&d.body.disks[0]);
        let opt = rows.iter().find(|r| r.key == "optimal_io_size").unwrap();
        assert_eq!(opt.sysfs, 33553920);
        assert_eq!(opt.ioctl, None);
        assert!(opt.suspicious());
        assert_eq!(opt.findings[0].code.as_str(), "optimal-io-suspicious");
        let marked: Vec<_> = rows
            .iter()
            .filter(|r| r.suspicious())
            .map(|r| r.key)
            .collect();
        assert_eq!(marked, ["optimal_io_size"]);
    }

    #[test]
    fn an_ioctl_that_disagrees_is_marked() {
        let json = BRIDGE
            .replace(
                r#""ioctl":null"#,
                r#""ioctl":{"logical_block_size":512,"physical_block_size":512,"minimum_io_size":4096,
                   "optimal_io_size":33553920,"alignment_offset":0,"size_bytes":1000204886016}"#,
            )
            .replace(
                r#""findings":["#,
                r#""findings":[{"code":"ioctl-sysfs-mismatch","severity":"warning",
                   "message":"physical block size: sysfs says 4096, the ioctl says 512",
                   "facts":{"region":"physical block size","kernel_value":512}},"#,
            );
        let d = doc(&json);
        let rows = rows(&d.body.disks[0]);
        let pbs = &rows[1];
        assert_eq!(
            (pbs.key, pbs.sysfs, pbs.ioctl),
            ("physical_block_size", 4096, Some(512))
        );
        assert!(pbs.differs() && pbs.suspicious());
        assert_eq!(pbs.findings[0].code.as_str(), "ioctl-sysfs-mismatch");
        assert!(!rows[0].suspicious());
        // No ioctl reads the discard limits.
        assert!(!rows[5].has_ioctl && !rows[5].differs());
    }
}
