//! No plan claims a clean `check` that `check` then contradicts. For
//! layouts made by the real tools, each plan is applied as printed: its
//! script, then every command by hand that says it clears a finding
//! (`clears`), then, for an image container, its raw-copy steps in order.
//! After the script `check` finds what the plan's `leaves` said it would
//! still report, and after the commands by hand what `remains`: the same
//! findings (code and subject), no more and no fewer.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const MIB: u64 = 1 << 20;

/// A finding as check and plan both name it.
type Named = (String, String);

fn named(f: &Value) -> Named {
    (
        f["code"].as_str().unwrap_or_default().to_string(),
        f["subject"].to_string(),
    )
}

/// The warnings and errors of a check document, each once (a layer shown
/// in several places has one subject).
fn warnings(doc: &Value) -> BTreeSet<Named> {
    every_finding(doc)
        .into_iter()
        .filter(|f| matches!(f["severity"].as_str(), Some("warning" | "error")))
        .filter(|f| f.get("same_cause_as").is_none())
        .map(named)
        .collect()
}

/// `key` of every target of a plan, and `assembled_KEY`, as a set.
fn said(plan: &Value, key: &str) -> BTreeSet<Named> {
    let targets = plan["targets"].as_array().unwrap();
    let mut out: BTreeSet<Named> = targets
        .iter()
        .flat_map(|t| t[key].as_array().unwrap().iter().map(named))
        .collect();
    let assembled = &plan[format!("assembled_{key}").as_str()];
    out.extend(assembled.as_array().unwrap().iter().map(named));
    out
}

/// Run `cmd` with sh in `dir`, as a user pastes it; it must succeed (a
/// `diskalign plan` with changes exits 1, as its --help says).
fn shell(dir: &Path, cmd: &str) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .env(
            "PATH",
            format!(
                "{}:{}:/usr/sbin:/sbin",
                Path::new(bin()).parent().unwrap().display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output()
        .unwrap();
    let planned = cmd.starts_with("diskalign plan ") && out.status.code() == Some(1);
    assert!(
        out.status.success() || planned,
        "{cmd}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The commands by hand of a plan that clear a finding.
fn clearing(plan: &Value) -> Vec<String> {
    let manual = plan["targets"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["manual"].as_array().unwrap().iter())
        .chain(plan["assembled_manual"].as_array().unwrap());
    manual
        .filter(|m| m["clears"] == true)
        .flat_map(|m| m["commands"].as_array().unwrap().iter())
        .map(|c| c.as_str().unwrap().to_string())
        .collect()
}

/// Plan `targets` with `opts`; run each disk's script, then `check`
/// (which must find the plan's `leaves`); run the commands by hand that
/// clear a finding, then `check` again (which must find `remains`).
/// Returns the last check's exit status.
fn applied(dir: &Path, targets: &[&Path], opts: &[&str]) -> i32 {
    let words = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        a.extend(targets.iter().map(|t| t.display().to_string()));
        a.extend(opts.iter().map(|s| s.to_string()));
        a
    };
    let json = |extra: &[&str]| {
        let a = words(extra);
        run_json(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let (plan, _) = json(&["plan"]);
    for (t, d) in targets.iter().zip(plan["targets"].as_array().unwrap()) {
        let steps = d["steps"].as_array().unwrap();
        if steps.iter().any(|s| s["step"] != "backup") {
            let script = dir.join("fix.sh");
            let mut a = vec!["plan".to_string(), t.display().to_string()];
            a.extend(opts.iter().map(|s| s.to_string()));
            a.extend(["--script".to_string(), script.display().to_string()]);
            let (out, code) = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
            assert_eq!(code, 1, "{out}");
            shell(dir, &format!("sh {}", script.display()));
        }
    }
    let (after, _) = json(&["check"]);
    assert_eq!(
        warnings(&after),
        said(&plan, "leaves"),
        "after the script:\n{plan:#}"
    );
    for c in clearing(&plan) {
        shell(dir, &c);
    }
    let (after, code) = json(&["check"]);
    assert_eq!(
        warnings(&after),
        said(&plan, "remains"),
        "after the commands by hand:\n{plan:#}"
    );
    let clean = said(&plan, "remains").is_empty();
    assert_eq!(code == 0, clean, "{after:#}");
    code
}

/// An ext4 of `block`-byte blocks made by mkfs.ext4 at `sector` of a DOS
/// table in a 64 MiB image.
fn ext4_at(dir: &Path, name: &str, sector: u64, block: u32) -> PathBuf {
    let img = image(dir, name, 64 * MIB);
    sfdisk(
        &img,
        &format!("label: dos\nstart={sector}, size=80000, type=83\n"),
    );
    mkfs_ext4(
        &img,
        block,
        &format!("offset={}", sector * 512),
        Some("30M"),
    );
    img
}

/// A FAT32 of 4 KiB clusters made by mkfs.fat at `sector` of a DOS table
/// in a 64 MiB image, its boot sectors recording `hidden` as its start.
fn fat32_at(dir: &Path, name: &str, sector: u64, hidden: u64) -> PathBuf {
    require_tool("mkfs.fat");
    let img = image(dir, name, 64 * MIB);
    sfdisk(
        &img,
        &format!("label: dos\nstart={sector}, size=81920, type=c\n"),
    );
    sh(
        "mkfs.fat",
        &[
            "-F",
            "32",
            "-s",
            "8",
            "-h",
            &hidden.to_string(),
            "--offset",
            &sector.to_string(),
            img.to_str().unwrap(),
            "40960",
        ],
    );
    img
}

/// A FAT32 whose boot sectors record another start than its own (a
/// copied volume): the command by hand writes it into both and clears
/// fs-hidden-sectors; moved from sector 63 too, where the script leaves
/// a start it did not find as the old one, and the command, run after
/// it, writes the new one.
#[test]
fn hidden_sectors_are_written_by_the_command_printed() {
    let dir = tempfile::tempdir().unwrap();
    for (name, sector) in [("copied.img", 2048), ("moved.img", 63)] {
        let img = fat32_at(dir.path(), name, sector, 100);
        let (plan, code) = run_json(&["plan", img.to_str().unwrap()]);
        assert_eq!(code, 1, "{plan:#}");
        assert_eq!(
            plan["targets"][0]["leaves"][0]["code"], "fs-hidden-sectors",
            "{plan:#}"
        );
        assert_eq!(applied(dir.path(), &[&img], &[]), 0, "{name}");
    }
}

/// The partition at sector 63 moves; nothing else is left.
#[test]
fn a_move_alone_ends_clean() {
    let dir = tempfile::tempdir().unwrap();
    let img = ext4_at(dir.path(), "move.img", 63, 4096);
    assert_eq!(applied(dir.path(), &[&img], &[]), 0);
}

/// On a striped device (what-if), the moved ext4 lacks its stripe hints:
/// tune2fs at the image's byte clears them after the script.
#[test]
fn stripe_hints_are_set_by_the_command_printed_after_a_move() {
    let dir = tempfile::tempdir().unwrap();
    let img = ext4_at(dir.path(), "hints.img", 63, 4096);
    let striped = ["--topology", "min=65536,opt=131072"];
    assert_eq!(applied(dir.path(), &[&img], &striped), 0);
}

/// An ext4 block below the physical block: nothing in place changes it,
/// the plan says so in words, and check still reports it.
#[test]
fn a_block_below_the_physical_block_remains_as_said() {
    let dir = tempfile::tempdir().unwrap();
    let img = ext4_at(dir.path(), "block.img", 2048, 1024);
    let (plan, code) = run_json(&["plan", img.to_str().unwrap(), "--topology", "pbs=4096"]);
    assert_eq!(code, 1, "something to do, said in words: {plan:#}");
    assert_eq!(
        plan["targets"][0]["remains"][0]["code"],
        "fs-block-below-physical"
    );
    assert_eq!(applied(dir.path(), &[&img], &["--topology", "pbs=4096"]), 1);
}

/// An ext4 with the wrong stride in a striped LV over two images: said
/// once for the VG, with how to get a device for its command, and check
/// still reports it (the LV is not active here).
#[test]
fn a_layer_assembled_across_images_is_said_once_and_remains() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (
        image(dir.path(), "b1.img", 64 * MIB),
        image(dir.path(), "b2.img", 64 * MIB),
    );
    {
        let (la, lb) = (LoopDev::attach(&a, None), LoopDev::attach(&b, None));
        lvm("pvcreate", "/dev/loop", &[&la.dev, &lb.dev]);
        lvm(
            "vgcreate",
            "/dev/loop",
            &["-s", "4M", "vgb", &la.dev, &lb.dev],
        );
        lvm(
            "lvcreate",
            "/dev/loop",
            &[
                "--driverloaded",
                "n",
                "-an",
                "--zero",
                "n",
                "-i2",
                "-I64k",
                "-L",
                "48M",
                "-n",
                "lv",
                "vgb",
            ],
        );
    }
    // The LV's first chunk is on b1 at pe_start: an ext4 written there.
    mkfs_ext4(
        &a,
        4096,
        "offset=1048576,stride=4,stripe_width=8",
        Some("8M"),
    );
    let (plan, code) = run_json(&["plan", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 1, "{plan:#}");
    assert_eq!(
        plan["assembled_manual"].as_array().unwrap().len(),
        1,
        "{plan:#}"
    );
    assert!(
        plan["targets"][0]["manual"].as_array().unwrap().is_empty(),
        "{plan:#}"
    );
    assert_eq!(plan["targets"][0]["part_of"][0], "VG vgb (extent 4 MiB)");
    let why = plan["assembled_manual"][0]["why"].as_str().unwrap();
    assert!(why.contains("vgchange -ay vgb"), "{why}");
    assert_eq!(applied(dir.path(), &[&a, &b], &[]), 1);
    // check names that plan, of both disks, as its next step.
    let (doc, _) = run_json(&["check", a.to_str().unwrap(), b.to_str().unwrap()]);
    let next = doc["targets"][0]["next"].as_str().unwrap();
    assert!(
        next.ends_with(&format!("plan {} {}", a.display(), b.display())),
        "{next}"
    );
    assert_eq!(
        doc["targets"][0]["next_says"],
        "said in words: fs-stripe-hints-mismatch"
    );
}

/// A GPT whose backup was overwritten: sgdisk -e writes it anew.
#[test]
fn a_damaged_backup_gpt_is_rewritten_by_the_command_printed() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "gpt.img", 64 * MIB);
    sfdisk(&img, "label: gpt\nstart=2048, size=40960\n");
    // The backup header, in the last sector.
    let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
    std::os::unix::fs::FileExt::write_at(&f, &[0u8; 512], 64 * MIB - 512).unwrap();
    assert_eq!(applied(dir.path(), &[&img], &[]), 0);
}

/// A qcow2 of an ext4 at sector 63 on a striped device (what-if): its
/// raw-copy steps, run in order as printed, move it and set its stripe
/// hints on the copy; the image they convert back checks clean.
#[test]
fn a_container_is_fixed_by_its_steps_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let raw = ext4_at(dir.path(), "c.img", 63, 4096);
    let qcow2 = dir.path().join("c.qcow2");
    sh(
        "qemu-img",
        &[
            "convert",
            "-O",
            "qcow2",
            raw.to_str().unwrap(),
            qcow2.to_str().unwrap(),
        ],
    );
    let striped = ["--topology", "min=65536,opt=131072"];
    let (plan, code) = run_json(&["plan", qcow2.to_str().unwrap(), striped[0], striped[1]]);
    assert_eq!(code, 1, "{plan:#}");
    let steps = &plan["targets"][0]["manual"][0]["commands"];
    for c in steps.as_array().unwrap() {
        shell(dir.path(), c.as_str().unwrap());
    }
    let back = dir.path().join("c.qcow2.aligned");
    let (doc, code) = run_json(&["check", back.to_str().unwrap(), striped[0], striped[1]]);
    assert!(warnings(&doc).is_empty(), "{doc:#}");
    assert_eq!(code, 0);
    assert!(said(&plan, "remains").is_empty(), "{plan:#}");
}
