//! A flash card's allocation unit against what mkfs.fat makes: a FAT32
//! on a partition that starts on the unit has its data area after its
//! FATs, off the unit; check names the `mkfs.fat -R` that puts it on
//! (check::fat32_reserved, following dosfstools' own sizing), and that
//! command, run on the partition's node by the real mkfs.fat, does.

mod common;
use common::*;

fn fsck_data_area(node: &str) -> u64 {
    let (_, txt) = sh_status("fsck.fat", &["-v", "-n", node]);
    let at = txt
        .find("Data area starts at byte")
        .unwrap_or_else(|| panic!("{txt}"));
    txt[at..]
        .split_whitespace()
        .nth(5)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{txt}"))
}

/// The FAT32 layer's finding of `code`, if any, in a check of `card`
/// judged with an allocation unit of `erase`.
fn unit_finding(
    card: &std::path::Path,
    erase: &str,
) -> (Option<serde_json::Value>, serde_json::Value) {
    let (doc, _) = run_json(&[
        "check",
        card.to_str().unwrap(),
        "--topology",
        &format!("erase={erase}"),
    ]);
    let layer = &doc["targets"][0]["stack"][0]["children"][0];
    assert_eq!(layer["name"], "FAT32", "{doc:#}");
    let f = layer["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "layer-start-not-erase-unit")
        .cloned();
    (f, layer.clone())
}

#[test]
fn the_reserved_sectors_check_names_put_a_fat32_on_the_cards_unit() {
    require_root();
    require_tool("mkfs.fat");
    require_tool("fsck.fat");
    let dir = tempfile::tempdir().unwrap();
    // A card with a partition on 4 MiB, three sizes and three units.
    for (sectors, unit, erase) in [
        (2_097_152u64, 4u64 << 20, "4M"),
        (3_000_000, 8 << 20, "8M"),
        (1_572_864, 12 << 20, "12M"),
    ] {
        let start = 24_576u64; // 12 MiB: on all three units
        let card = image(dir.path(), "card.img", (start + sectors) * 512);
        sfdisk(
            &card,
            &format!("label: dos\nstart={start}, size={sectors}, type=c\n"),
        );
        let lo = LoopDev::attach(&card, None);
        let node = lo.part(1);
        sh("mkfs.fat", &["-F", "32", &node]);
        sh("sync", &[&node]);
        let (f, layer) = unit_finding(&card, erase);
        let f = f.unwrap_or_else(|| panic!("{erase}: {layer:#}"));
        assert_eq!(f["severity"], "warning");
        let fix = f["facts"]["fix"]
            .as_str()
            .unwrap_or_else(|| panic!("{f:#}"));
        let cmd = fix.split(" (").next().unwrap();
        assert!(cmd.starts_with("mkfs.fat -F 32 -s "), "{fix}");
        let args: Vec<&str> = cmd.split(' ').skip(1).collect();
        sh("mkfs.fat", &[args.as_slice(), &[node.as_str()]].concat());
        sh("sync", &[&node]);
        let data = start * 512 + fsck_data_area(&node);
        assert_eq!(data % unit, 0, "{erase}: {cmd} put the data area at {data}");
        let (f, layer) = unit_finding(&card, erase);
        assert!(f.is_none(), "{erase}: {cmd}: {layer:#}");
        assert_eq!(
            layer["filesystem"]["volume"]["data_start_bytes"], data,
            "{layer:#}"
        );
        drop(lo);
    }
}
