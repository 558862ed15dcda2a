//! The figures of a check run: the disk maps, the boundary zooms, the
//! stack drawn as layers, the tools' verdicts and the findings.
//!
//! Ids, from the run's `id` and each target's index `n`:
//! `{id}-map-{n}` (the disk map), `{id}-zoom-{n}-p{number}-start|end`
//! (the boundary zooms), `{id}-stack-{n}` (its layers), `{id}-assembled`
//! (the md arrays and volume groups of the run), `{id}-tools-{n}`; each
//! figure's numbers are in the table `{figure id}-table`.

mod axis;
mod grid;
mod lane;
mod layout;
mod map;
mod marks;
mod stack;
mod tables;
mod verdicts;
mod zoom;

/// The disk map, which the plan page draws too (now and after).
pub use map::figure as disk_map;

use super::page;
use crate::check::CheckDoc;
use crate::check::CheckedTarget;
use crate::findings::Finding;
use crate::iolimits::Topology;
use crate::units::human;

/// The section of one check run; `id` prefixes every id in it.
pub fn section(id: &str, name: &str, doc: &CheckDoc) -> String {
    let mut s = page::heading(2, id, &format!("check: {name}"));
    s.push_str(&verdicts::summary(id, doc));
    for (n, t) in doc.targets.iter().enumerate() {
        s.push_str(&target(id, n, t));
    }
    if !doc.assembled.is_empty() {
        s.push_str(&page::heading(
            3,
            &format!("{id}-assembled-heading"),
            "Assembled across the targets: md arrays and volume groups",
        ));
        s.push_str(&stack::figure(
            &format!("{id}-assembled"),
            "Layers assembled across the targets",
            &doc.assembled,
        ));
    }
    s.push_str(&verdicts::findings(id, doc));
    s
}

/// One target: its verdict and limits, map, zooms, stack and the tools.
fn target(id: &str, n: usize, t: &CheckedTarget) -> String {
    let mut s = page::heading(
        3,
        &format!("{id}-target-{n}"),
        &format!("{}: {}", t.path, t.verdict),
    );
    s.push_str(&page::note(&format!(
        "{} {}, {} bytes ({}){}{}; partition table {}{}; limits ({}): {}.",
        t.kind_name(),
        t.path,
        t.size_bytes,
        human(t.size_bytes),
        identity(t),
        match &t.container {
            Some(c) => format!("; container {}", c.phrase()),
            None => String::new(),
        },
        t.partition_table.kind,
        match &t.partition_table.ptuuid {
            Some(id) => format!(" (PTUUID {id})"),
            None => String::new(),
        },
        t.topology_source,
        limits(&t.topology)
    )));
    if let Some(next) = &t.next {
        // The command that plans the fix, as check printed it: it runs as
        // it stands, from where the check ran.
        let says = t
            .next_says
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        s.push_str(&page::para(&format!("Next: {next}{says}")));
    }
    let layers = stack::has_layers(&t.stack);
    if t.partitions.is_empty() && !layers {
        s.push_str(&page::para(&format!(
            "{} has no partitions, and nothing was found on it.",
            t.path
        )));
        return s;
    }
    if !t.partitions.is_empty() {
        s.push_str(&map::figure(&format!("{id}-map-{n}"), t));
        s.push_str(&page::heading(
            4,
            &format!("{id}-zooms-{n}"),
            "Boundaries against the grids",
        ));
        s.push_str(&zoom::section(&format!("{id}-zoom-{n}"), t));
    }
    if layers {
        s.push_str(&page::heading(4, &format!("{id}-layers-{n}"), "The stack"));
        s.push_str(&stack::figure(
            &format!("{id}-stack-{n}"),
            &format!("Stack of {}", t.path),
            &t.stack,
        ));
    } else {
        s.push_str(&page::note(&format!(
            "Nothing was found above the partitions of {}.",
            t.path
        )));
    }
    if !t.partitions.is_empty() {
        s.push_str(&page::heading(
            4,
            &format!("{id}-verdicts-{n}"),
            "The tools' verdicts",
        ));
        s.push_str(&verdicts::tools(&format!("{id}-tools-{n}"), t));
    }
    s
}

/// The whole disk's name and identity, as far as known: `, disk sda
/// (model X, serial Y, WWN Z)`, a multipath map's paths first (`paths
/// sdb, sdc`); nothing for an image.
fn identity(t: &CheckedTarget) -> String {
    let paths = (!t.paths.is_empty()).then(|| t.paths.join(", "));
    let known: Vec<String> = [
        ("paths", &paths),
        ("model", &t.model),
        ("serial", &t.serial),
        ("WWN", &t.wwn),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some(format!("{k} {}", v.as_deref().filter(|v| !v.is_empty())?)))
    .collect();
    match (&t.disk, known.is_empty()) {
        (None, true) => String::new(),
        (None, false) => format!(" ({})", known.join(", ")),
        (Some(d), true) => format!(", disk {d}"),
        (Some(d), false) => format!(", disk {d} ({})", known.join(", ")),
    }
}

/// A disk's limits in one phrase.
fn limits(t: &Topology) -> String {
    format!(
        "logical {} B, physical {} B, minimum I/O {} B, optimal I/O {} B, alignment offset {} B",
        t.logical_block_size,
        t.physical_block_size,
        t.minimum_io_size,
        t.optimal_io_size,
        t.alignment_offset
    )
}

/// The codes of some findings, comma-separated.
fn codes(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| f.code.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::saved::Saved;

    /// `sfdisk` of a 64 MiB image with `start=63,size=50000` and
    /// `start=65536`, trimmed, with a PV inside partition 2 and a VG.
    const DOC: &str = r#"{"schema":"diskalign.check","schema_version":1,
      "targets":[{"path":"a.img","kind":"image","size_bytes":67108864,
        "topology":{"logical_block_size":512,"physical_block_size":512,"minimum_io_size":512,"optimal_io_size":0,"alignment_offset":0},
        "partition_table":{"type":"mbr","sector_size":512},
        "partitions":[
          {"number":1,"kind":"primary","type_id":"0x83","start_bytes":32256,"end_bytes":25632255,"size_bytes":25600000,
           "start_alignment":512,"status":"misaligned",
           "tools":{"parted_optimal":false,"parted_minimal":true,"fdisk":true,"sgdisk":true},
           "findings":[
             {"code":"start-not-4k","severity":"error","message":"starts at byte 32256 = 7 x 4 KiB + 3584"},
             {"code":"end-not-4k","severity":"warning","message":"ends at byte 25632256"}]},
          {"number":2,"kind":"primary","type_id":"0x83","start_bytes":33554432,"end_bytes":67108863,"size_bytes":33554432,
           "start_alignment":1048576,"status":"aligned",
           "tools":{"parted_optimal":true,"parted_minimal":true,"fdisk":true,"sgdisk":true}}],
        "stack":[{"kind":"partition","name":"partition 2","device":"a.img","offset_bytes":33554432,"status":"aligned",
          "children":[{"kind":"lvm-pv","name":"PV x","device":"a.img","offset_bytes":33554432,"data_offset_bytes":1048576,"status":"aligned"}]}],
        "verdict":"MISALIGNED"}],
      "assembled":[{"kind":"lvm-vg","name":"VG vg","device":"lvm:vg","status":"aligned",
        "children":[{"kind":"lvm-lv","name":"LV vg/lv","device":"vg/lv","status":"aligned"}]}],
      "errors":[{"path":"/dev/nosuch","message":"cannot open"}],
      "summary":{"status":"misaligned","targets":2,"checked":1,"errors":1,"warnings":1,"info":0,"exit_status":3}}"#;

    fn page() -> String {
        let Ok(Saved::Check(doc)) = Saved::parse(DOC, "a.json") else {
            panic!("not a check document");
        };
        section("run1", "a.json", &doc)
    }

    /// The map's and the stack's legends: every entry clear of the others
    /// and inside its figure.
    #[test]
    fn the_legends_keep_clear() {
        assert!(super::super::kit::assert_legends_clear(&page()) >= 6);
    }

    /// The target names its disk and table, each partition its name and
    /// PARTUUID.
    #[test]
    fn the_target_and_its_partitions_say_who_they_are() {
        let doc = r#"{"schema":"diskalign.check","targets":[{"path":"/dev/sda","kind":"disk",
          "disk":"sda","serial":"S3Z9NB0K","wwn":"naa.5002538e40a1b2c3","model":"Samsung SSD 860",
          "size_bytes":1073741824,"partition_table":{"type":"gpt","sector_size":512,"ptuuid":"0b1e2c7a-8d1f-4a47-9d4e-2b6c1f0e9a11"},
          "partitions":[{"number":1,"kind":"gpt","type_id":"T","name":"boot","partuuid":"5f3c-1","start_bytes":1048576,"end_bytes":2097151,"size_bytes":1048576}]}]}"#;
        let Ok(Saved::Check(doc)) = Saved::parse(doc, "a.json") else {
            panic!("not a check document");
        };
        let s = section("run1", "a.json", &doc);
        assert!(s.contains(
            "disk sda (model Samsung SSD 860, serial S3Z9NB0K, WWN naa.5002538e40a1b2c3); partition table gpt (PTUUID 0b1e2c7a-8d1f-4a47-9d4e-2b6c1f0e9a11)"
        ), "{s}");
        assert!(s.contains("<th>name</th>") && s.contains("<th>PARTUUID</th>"));
        assert!(
            s.contains("<td>T</td>") && s.contains("<td>boot</td>"),
            "{s}"
        );
        assert!(s.contains("<td>5f3c-1</td>"), "{s}");
    }

    /// A multipath map names its paths beside its disk.
    #[test]
    fn a_multipath_map_names_its_paths() {
        let doc = r#"{"schema":"diskalign.check","targets":[{"path":"/dev/dm-0","kind":"disk",
          "disk":"dm-0","paths":["sdb","sdc"],"size_bytes":1073741824,
          "partition_table":{"type":"none","sector_size":512}}]}"#;
        let Ok(Saved::Check(doc)) = Saved::parse(doc, "a.json") else {
            panic!("not a check document");
        };
        let s = section("run1", "a.json", &doc);
        assert!(s.contains("disk dm-0 (paths sdb, sdc)"), "{s}");
    }

    /// An image read through a container names its format and the
    /// container's unit.
    #[test]
    fn a_container_image_names_its_format() {
        let doc = r#"{"schema":"diskalign.check","targets":[{"path":"vm.qcow2","kind":"image",
          "size_bytes":1073741824,"container":{"format":"qcow2","version":"3","unit_bytes":65536,
          "virtual_size":1073741824,"backing":[{"name":"base.raw","path":"base.raw","format":"raw"}]},
          "partition_table":{"type":"gpt","sector_size":512}}]}"#;
        let Ok(Saved::Check(doc)) = Saved::parse(doc, "a.json") else {
            panic!("not a check document");
        };
        let s = section("run1", "a.json", &doc);
        assert!(
            s.contains("image (qcow2) vm.qcow2, 1073741824 bytes (1 GiB); container qcow2 3, 64 KiB clusters, backing base.raw (raw); partition table gpt"),
            "{s}"
        );
    }

    #[test]
    fn the_map_marks_partitions_and_misaligned_boundaries() {
        let s = page();
        assert!(s.contains("id=\"run1-map-0\""));
        assert!(s.contains(
            "data-partition=\"1\" data-start=\"32256\" data-end=\"25632255\" data-status=\"misaligned\""
        ));
        assert!(s.contains(
            "data-partition=\"2\" data-start=\"33554432\" data-end=\"67108863\" data-status=\"aligned\""
        ));
        assert!(
            s.contains("data-mark=\"start-misaligned\" data-partition=\"1\" data-offset=\"32256\"")
        );
        assert!(s.contains(
            "data-mark=\"end-misaligned\" data-partition=\"1\" data-offset=\"25632256\""
        ));
        assert!(!s.contains("data-mark=\"start-misaligned\" data-partition=\"2\""));
        assert!(s.contains("id=\"run1-map-0-table\""));
    }

    #[test]
    fn a_table_of_thousands_of_partitions_is_not_drawn_as_a_map() {
        let parts: Vec<String> = (1..=map::MAX_DRAWN + 1)
            .map(|n| format!("{{\"number\":{n},\"start_bytes\":{}}}", n * 4096))
            .collect();
        let doc = format!(
            "{{\"schema\":\"diskalign.check\",\"targets\":[{{\"path\":\"a.img\",\"size_bytes\":1099511627776,\"partitions\":[{}]}}]}}",
            parts.join(",")
        );
        let Ok(Saved::Check(doc)) = Saved::parse(&doc, "a.json") else {
            panic!("not a check document");
        };
        let s = section("run1", "a.json", &doc);
        assert!(!s.contains("id=\"run1-map-0\""));
        assert!(s.contains("257 partitions are too many to draw"));
        assert!(s.contains("id=\"run1-map-0-table\""));
        // Its row in the partitions, the zooms' numbers (start and end)
        // and the tools' verdicts.
        assert_eq!(s.matches("<tr><td class=\"num\">257</td>").count(), 4);
    }

    #[test]
    fn each_boundary_has_a_zoom_with_its_grids() {
        let s = page();
        assert!(s.contains("id=\"run1-zoom-0-p1-start\""));
        assert!(s.contains("id=\"run1-zoom-0-p2-end\""));
        assert!(s.contains("data-boundary=\"start\" data-offset=\"32256\" data-partition=\"1\""));
        assert!(s.contains("data-boundary=\"end\" data-offset=\"67108864\" data-partition=\"2\""));
        assert!(s.contains(
            "data-grid=\"4k\" data-grain=\"4096\" data-grid-offset=\"0\" data-below=\"28672\" data-above=\"32768\" data-on=\"false\""
        ));
        assert!(s.contains("3584 bytes past the line at 28672, 512 bytes short of 32768"));
        assert!(s.contains("id=\"run1-zoom-0-table\""));
    }

    #[test]
    fn the_stack_the_tools_and_the_findings_are_drawn() {
        let s = page();
        assert!(s.contains("id=\"run1-stack-0\""));
        assert!(s.contains(
            "data-kind=\"lvm-pv\" data-layer=\"PV x\" data-path=\"partition 2 / PV x\" data-status=\"aligned\" data-device=\"a.img\" data-start=\"34603008\""
        ));
        assert!(s.contains("id=\"run1-assembled\""));
        assert!(s.contains("data-kind=\"lvm-vg\""));
        assert!(s.contains("id=\"run1-tools-0\""));
        assert!(s.contains("<td class=\"status-misaligned\">✗ not aligned</td>"));
        assert!(s.contains("id=\"run1-findings-error\""));
        assert!(s.contains("id=\"run1-findings-warning\""));
        assert!(s.contains("id=\"run1-summary\""));
        assert!(s.contains("id=\"run1-errors\""));
    }
}
