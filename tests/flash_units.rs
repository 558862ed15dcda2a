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

/// A field of `dump.f2fs -d 1`'s superblock listing (`name [0x.. : N]`).
fn dump_f2fs(node: &str, field: &str) -> u64 {
    let (_, txt) = sh_status("dump.f2fs", &["-d", "1", node]);
    txt.lines()
        .find(|l| l.split_whitespace().next() == Some(field))
        .and_then(|l| l.rsplit(':').next())
        .and_then(|v| v.trim().trim_end_matches(']').trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in {txt}"))
}

/// An f2fs on a card with a 4 MiB unit, made by mkfs.f2fs on a loop
/// partition: its segments, sections and main area read as dump.f2fs
/// prints them; by default (sections of one 2 MiB segment) its sections
/// are off the unit and the fix names `mkfs.f2fs -s 2`; on a partition
/// at 4 MiB, that command puts segment 0 and every section on the unit.
#[test]
fn an_f2fs_is_judged_at_segment_0_and_by_its_sections() {
    require_root();
    require_tool("mkfs.f2fs");
    require_tool("dump.f2fs");
    let dir = tempfile::tempdir().unwrap();
    let f2fs_layer = |doc: &serde_json::Value| {
        let l = doc["targets"][0]["stack"][0]["children"][0].clone();
        assert_eq!(l["filesystem"]["type"], "f2fs", "{doc:#}");
        l
    };
    let layer_codes = |l: &serde_json::Value| -> Vec<String> {
        l["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["code"].as_str().unwrap().to_string())
            .collect()
    };
    let mut fix = String::new();
    for start in [8192u64, 2048] {
        let card = image(dir.path(), "card.img", (start + 2_097_152) * 512);
        sfdisk(
            &card,
            &format!("label: dos\nstart={start}, size=2097152, type=83\n"),
        );
        let lo = LoopDev::attach(&card, None);
        let node = lo.part(1);
        let check = || run_json(&["check", card.to_str().unwrap(), "--topology", "erase=4M"]).0;
        sh("mkfs.f2fs", &["-q", "-f", &node]);
        sh("sync", &[&node]);
        let doc = check();
        let l = f2fs_layer(&doc);
        let a = &l["filesystem"]["f2fs"];
        let block = 1u64 << dump_f2fs(&node, "log_blocksize");
        let segment = block << dump_f2fs(&node, "log_blocks_per_seg");
        assert_eq!(a["segment_bytes"], segment, "{a:#}");
        assert_eq!(
            a["section_bytes"],
            segment * dump_f2fs(&node, "segs_per_sec")
        );
        assert_eq!(
            a["segment0_offset_bytes"],
            block * dump_f2fs(&node, "segment0_blkaddr")
        );
        assert_eq!(
            a["main_offset_bytes"],
            block * dump_f2fs(&node, "main_blkaddr")
        );
        let codes = layer_codes(&l);
        assert!(
            codes.contains(&"fs-section-not-erase-unit".to_string()),
            "{l:#}"
        );
        let f = l["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["code"] == "fs-section-not-erase-unit")
            .unwrap();
        assert_eq!(f["severity"], "warning");
        fix = f["facts"]["fix"].as_str().unwrap().to_string();
        assert!(fix.starts_with("mkfs.f2fs -s 2 "), "{fix}");
        if start == 8192 {
            sh("mkfs.f2fs", &["-q", "-f", "-s", "2", &node]);
            sh("sync", &[&node]);
            let doc = check();
            let l = f2fs_layer(&doc);
            let seg0 = l["filesystem"]["f2fs"]["segment0_offset_bytes"]
                .as_u64()
                .unwrap();
            assert_eq!((start * 512 + seg0) % (4 << 20), 0, "{l:#}");
            assert!(layer_codes(&l).is_empty(), "{l:#}");
            assert_eq!(l["status"], "aligned", "{l:#}");
        }
        drop(lo);
    }
    assert!(!fix.is_empty());
}

/// A saved `probe --erase-unit` run as `check --probe` evidence: the
/// unit it bracketed becomes the grain of the erase-unit rules on a disk
/// whose kernel declares none (a card behind a USB reader), said in an
/// `erase-unit-measured` note naming the run, and `next:` repeats it.
/// The run is a real search on a file, made to say it bracketed 4 MiB on
/// the card (synthetic evidence, real reading, as json_docs does for the
/// grid's unit); a run that bracketed nothing is said and not used.
#[test]
fn a_measured_erase_unit_is_the_grain_where_the_kernel_declares_none() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stick.raw");
    filled_file(&file, 16 << 20, 1);
    let (mut run, _) = run_json(&[
        "probe",
        "--erase-unit",
        file.to_str().unwrap(),
        "--runtime",
        "20ms",
        "--warmup",
        "5ms",
        "--rounds",
        "3",
    ]);
    let card = image(dir.path(), "card.img", 64 << 20);
    sfdisk(&card, "label: dos\nstart=2048, size=30720, type=c\n");
    let saved = dir.path().join("run.json");
    let save = |run: &serde_json::Value| std::fs::write(&saved, run.to_string()).unwrap();
    run["target"]["path"] = card.display().to_string().into();
    // As searched: whatever the file's timing said, unless bracketed it is
    // not used.
    if run["erase_unit"]["confidence"] != "bracketed" {
        save(&run);
        let (out, err, _) = run_full(&[
            "check",
            card.to_str().unwrap(),
            "--probe",
            saved.to_str().unwrap(),
        ]);
        assert!(err.contains("bracketed no unit"), "{out}\n{err}");
    }
    run["erase_unit"]["confidence"] = "bracketed".into();
    run["erase_unit"]["unit_bytes"] = (4u64 << 20).into();
    save(&run);
    let (doc, code) = run_json(&[
        "check",
        card.to_str().unwrap(),
        "--probe",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{doc:#}");
    let t = &doc["targets"][0];
    assert_eq!(t["topology"]["erase_unit_bytes"], 4u64 << 20, "{t:#}");
    let p1 = partition(&doc, 1);
    let f = p1["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "start-not-erase-unit")
        .unwrap_or_else(|| panic!("{p1:#}"));
    assert_eq!(f["severity"], "warning");
    let text = doc.to_string();
    assert!(text.contains("erase-unit-measured"), "{t:#}");
    assert!(text.contains("run.json"), "{t:#}");
    assert!(
        t["next"].as_str().unwrap_or("").contains("--probe"),
        "{t:#}"
    );
    // Used, so not said to be unused; and plan starts on the unit.
    let args = [
        "check",
        card.to_str().unwrap(),
        "--probe",
        saved.to_str().unwrap(),
    ];
    let (_, err, _) = run_full(&args);
    assert!(!err.contains("not used"), "{err}");
    let (out, _, _) = run_full(&[
        "plan",
        card.to_str().unwrap(),
        "--probe",
        saved.to_str().unwrap(),
    ]);
    assert!(out.contains("allocation unit of 4 MiB"), "{out}");
    assert!(out.contains("new start") && out.contains("8192"), "{out}");
}
