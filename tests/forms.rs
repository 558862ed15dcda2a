//! Every output tells the same truth. One `check` of a layered stack
//! (a striped LV whose ext4 has the wrong stride, an md RAID0 whose ext4
//! has 1 KiB blocks and no stripe hints, a ZFS member at ashift 9, each
//! made by the real tools or from their real labels, judged as on a
//! 4 KiB-physical disk) writes the human report, JSON, CSV, HTML and
//! Prometheus at once; `-q` is the same check again. Each form gives each
//! target the same status word, and each finding counts once: the
//! summary's counts are the distinct findings of the document, and the
//! layer findings are in the CSV's `problems`.

mod common;
use common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

const MIB: u64 = 1 << 20;

/// The stack's images: the striped LV's disk, two md members, a ZFS member.
fn stack(tmp: &tempfile::TempDir) -> Vec<PathBuf> {
    let dir = tmp.path();
    let lv = common::lvm::striped_image(tmp, 53248);
    // The LV's first chunk is on leg 0 (partition 1 + pe_start).
    let leg0 = format!("offset={},stride=4,stripe_width=8", 2048 * 512 + MIB);
    mkfs_ext4(&lv, 4096, &leg0, Some("8M"));
    let fs = image(dir, "fs.img", 32 * MIB);
    mkfs_ext4(&fs, 1024, "stride=0,stripe_width=0", None);
    let members =
        common::md::raid0_members(dir, "1.2", &[2048, 2048], &std::fs::read(&fs).unwrap());
    let phys = common::zfs::fixture_phys("file-ashift9-v23.label0");
    let zfs = common::zfs::image_with(dir, "z9.img", 64 * MIB, &phys, &[0, 1, 2, 3]);
    let mut all = vec![lv];
    all.extend(members);
    all.push(zfs);
    all
}

/// Each target's status word in the JSON document.
fn json_status(doc: &Value) -> BTreeMap<String, String> {
    doc["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let status = t["summary"]["status"].as_str().unwrap().to_string();
            (t["path"].as_str().unwrap().to_string(), status)
        })
        .collect()
}

/// The first word of the verdict after `PATH: ` (`-q`) or `verdict: `
/// (the human report, under the target's header), lower case.
fn word_after(line: &str, prefix: &str) -> Option<String> {
    let rest = line.strip_prefix(prefix)?;
    Some(rest.split([':', ' ']).next()?.to_lowercase())
}

fn quiet_status(text: &str, paths: &[String]) -> BTreeMap<String, String> {
    paths
        .iter()
        .filter_map(|p| {
            let w = text
                .lines()
                .find_map(|l| word_after(l, &format!("{p}: ")))?;
            Some((p.clone(), w))
        })
        .collect()
}

fn human_status(text: &str, paths: &[String]) -> BTreeMap<String, String> {
    let lines: Vec<&str> = text.lines().collect();
    paths
        .iter()
        .filter_map(|p| {
            let at = lines
                .iter()
                .position(|l| l.starts_with(&format!("{p}  ")))?;
            let w = lines[at..]
                .iter()
                .find_map(|l| word_after(l, "  verdict: "))?;
            Some((p.clone(), w))
        })
        .collect()
}

/// The CSV's `target_status` and `problems` of each target, its rows
/// merged (a target without partitions has one).
fn csv_of(text: &str) -> BTreeMap<String, (String, BTreeSet<String>)> {
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (target, status, problems) = (col("target"), col("target_status"), col("problems"));
    let mut out: BTreeMap<String, (String, BTreeSet<String>)> = BTreeMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        let e = out.entry(f[target].to_string()).or_default();
        e.0 = f[status].to_string();
        e.1.extend(
            f[problems]
                .split(' ')
                .filter(|c| !c.is_empty())
                .map(str::to_string),
        );
    }
    out
}

/// The status whose `diskalign_target_status` series is 1, per target.
fn prometheus_status(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for l in text
        .lines()
        .filter(|l| l.starts_with("diskalign_target_status{"))
    {
        if !l.ends_with("} 1") {
            continue;
        }
        let label = |k: &str| {
            let from = l.find(&format!("{k}=\"")).unwrap() + k.len() + 2;
            l[from..].split('"').next().unwrap().to_string()
        };
        out.insert(label("target"), label("status"));
    }
    out
}

/// Every finding of a document once, by severity, code and subject.
fn distinct(doc: &Value) -> BTreeSet<(String, String, String)> {
    every_finding(doc)
        .into_iter()
        .filter(|f| f.get("same_cause_as").is_none())
        .map(|f| {
            let text = |k: &str| f[k].as_str().unwrap_or_default().to_string();
            (text("severity"), text("code"), f["subject"].to_string())
        })
        .collect()
}

#[test]
fn every_form_gives_each_target_one_status_and_counts_each_finding_once() {
    let dir = tempfile::tempdir().unwrap();
    let targets = stack(&dir);
    let out = |n: &str| dir.path().join(n);
    let mut args: Vec<String> = vec!["check".into()];
    args.extend(targets.iter().map(|t| t.display().to_string()));
    args.extend(["--topology".into(), "pbs=4096".into()]);
    let mut all = args.clone();
    all.push(format!("--json={}", out("c.json").display()));
    for (flag, file) in [
        ("--csv", "c.csv"),
        ("--html", "c.html"),
        ("--prometheus", "c.prom"),
    ] {
        all.extend([flag.to_string(), out(file).display().to_string()]);
    }
    let (human, code) = run(&all.iter().map(String::as_str).collect::<Vec<_>>());
    args.push("-q".into());
    let (quiet, quiet_code) = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let read = |n: &str| std::fs::read_to_string(out(n)).unwrap();
    let doc: Value = serde_json::from_str(&read("c.json")).unwrap();

    let by_json = json_status(&doc);
    let paths: Vec<String> = by_json.keys().cloned().collect();
    assert_eq!(paths.len(), 4, "{doc:#}");
    // Every target holds a problem: the LV's and the array's layers make
    // their disks' status, the ZFS member its own.
    for (p, s) in &by_json {
        assert_ne!(s, "aligned", "{p}: {doc:#}");
    }
    assert_eq!(quiet_status(&quiet, &paths), by_json, "-q:\n{quiet}");
    assert_eq!(human_status(&human, &paths), by_json, "human:\n{human}");
    assert_eq!(prometheus_status(&read("c.prom")), by_json);
    let csv = csv_of(&read("c.csv"));
    let csv_status: BTreeMap<String, String> = csv
        .iter()
        .map(|(p, (s, _))| (p.clone(), s.clone()))
        .collect();
    assert_eq!(csv_status, by_json, "{}", read("c.csv"));
    let html = read("c.html");
    for (p, s) in &by_json {
        assert!(
            html.contains(&format!("{p}: {s}"))
                || html.contains(&format!("{p}: {}", s.to_uppercase())),
            "{p} {s} not in the page"
        );
    }
    assert_eq!((code, quiet_code), (1, 1));

    // Each finding once: the summary's counts are the document's distinct
    // findings, and the human summary line says the same counts.
    let found = distinct(&doc);
    let count = |sev: &str| found.iter().filter(|(s, _, _)| s == sev).count();
    let summary = &doc["summary"];
    assert_eq!(summary["warnings"], count("warning"), "{found:#?}");
    assert_eq!(summary["errors"], count("error"), "{found:#?}");
    let codes: BTreeSet<&str> = found.iter().map(|(_, c, _)| c.as_str()).collect();
    for c in [
        "fs-stripe-hints-mismatch",
        "fs-block-below-physical",
        "fs-stripe-hints-missing",
        "zfs-ashift-below-physical",
    ] {
        assert!(codes.contains(c), "{c}: {codes:?}");
    }
    let line = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("summary: "))
            .unwrap()
            .to_string()
    };
    assert_eq!(line(&human), line(&quiet));
    let phrase = format!("{} warning", count("warning"));
    assert!(human.contains(&phrase), "{}", line(&human));
    // The layers' findings are in the CSV's problems of the rows that
    // hold them: the array's on both members', the LV's on its disk's.
    for (p, (_, problems)) in &csv {
        if p.ends_with("m0.img") || p.ends_with("m1.img") {
            assert!(
                problems.contains("fs-block-below-physical"),
                "{p}: {problems:?}"
            );
        }
        if p.ends_with("lv.img") {
            assert!(
                problems.contains("fs-stripe-hints-mismatch"),
                "{p}: {problems:?}"
            );
        }
    }
    // Prometheus counts each finding of a target once, those assembled
    // from it included.
    let prom = read("c.prom");
    for t in doc["targets"].as_array().unwrap() {
        let p = t["path"].as_str().unwrap();
        let series = format!(
            "diskalign_target_findings{{target=\"{p}\",device=\"\",severity=\"warning\"}} {}",
            t["summary"]["warnings"]
        );
        assert!(prom.contains(&series), "{series}\n{prom}");
    }
}
