//! `plan` of a guest disk in every container format prints commands that
//! harm nothing: the guest is a DOS table with an NTFS at sector 63
//! (mkntfs, a file in it put there by ntfscp) and an EFI system partition
//! (mkfs.fat) off 1 MiB, made once and converted by `qemu-img` to qcow2,
//! VMDK, VHDX, VDI and VHD. For each, the commands are taken from the
//! JSON's `manual` (and found, each on its own line, in the human plan):
//!
//! - every command by hand, each run alone as printed (`sh -c`) in a
//!   directory holding only a copy of the image, leaves the container's
//!   guest as `qemu-img compare` finds it: the raw-copy steps but their
//!   first (which only reads the image), out of their order;
//! - the raw-copy steps run as printed in their order end with `check`
//!   exiting 0, and the image they make holds the NTFS and the FAT, byte
//!   for byte, at their new starts, but for the start their boot sectors
//!   record (hidden sectors, in the boot sector and its backup), which
//!   the script of the raw copy writes and which reads the new start;
//!   ntfs-3g's tools read the NTFS and the file, fsck.fat finds the FAT
//!   clean.
//!
//! The same guest as a raw image: no command by hand, its script writes
//! the new starts itself. And a PV reaching an end off 4 KiB in a
//! qcow2: its pvresize note names a loop device over the raw copy, and
//! done there between the first two steps, the steps end clean.

use super::common::{self, bin, sh, sh_status, LoopDev};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use tempfile::TempDir;

const MIB: u64 = 1 << 20;
/// The NTFS: 32 MiB at sector 63; the ESP: 8 MiB at sector 65600.
const NTFS: (u64, u64) = (63, 65536);
const ESP: (u64, u64) = (65600, 16384);

/// The raw guest disk, its file's bytes and the directory holding both.
struct Guest {
    dir: TempDir,
    raw: PathBuf,
    file: Vec<u8>,
}

/// Bytes that tell a copy from zeros or a shifted read.
fn pattern(len: usize) -> Vec<u8> {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 32) as u8
        })
        .collect()
}

/// 64 MiB: DOS, an NTFS at 63 with `file.bin` in it, an ESP off 1 MiB.
fn ntfs_guest() -> Guest {
    common::require_root();
    for t in [
        "qemu-img", "mkntfs", "ntfscp", "ntfscat", "ntfsinfo", "mkfs.fat",
    ] {
        common::require_tool(t);
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let raw = common::image(dir.path(), "guest.img", 64 * MIB);
    common::sfdisk(
        &raw,
        &format!(
            "label: dos\nstart={}, size={}, type=7\nstart={}, size={}, type=ef\n",
            NTFS.0, NTFS.1, ESP.0, ESP.1
        ),
    );
    let file = pattern(300_000);
    let src = dir.path().join("file.bin");
    std::fs::write(&src, &file).unwrap();
    {
        let l = LoopDev::attach(&raw, None);
        // -p/-H/-S: the boot sector as Windows XP would write it for a
        // partition at sector 63 (hidden sectors 63).
        sh(
            "mkntfs",
            &["-Q", "-q", "-p", "63", "-H", "255", "-S", "63", &l.part(1)],
        );
        sh("ntfscp", &[&l.part(1), src.to_str().unwrap(), "file.bin"]);
        // -s 8: clusters of 4 KiB, so its data area lands on 4 KiB once
        // the partition is on 1 MiB (mkfs.fat's default here, FAT12 of
        // 2 KiB clusters, puts it 2 KiB off).
        sh("mkfs.fat", &["-s", "8", &l.part(2)]);
    }
    std::fs::remove_file(&src).unwrap();
    assert_eq!(hidden_sectors(&std::fs::read(&raw).unwrap(), NTFS.0), 63);
    Guest { dir, raw, file }
}

/// The hidden-sectors field of the boot sector at `sector` of a disk.
fn hidden_sectors(disk: &[u8], sector: u64) -> u32 {
    let at = (sector * 512 + 0x1c) as usize;
    u32::from_le_bytes(disk[at..at + 4].try_into().unwrap())
}

/// `sh -c CMD` in `dir`, with this build first in PATH as `diskalign`:
/// exit status, stdout and stderr.
fn run_in(dir: &Path, cmd: &str) -> (i32, String, String) {
    let bin_dir = Path::new(bin()).parent().unwrap().display().to_string();
    let path = format!("{bin_dir}:{}", std::env::var("PATH").unwrap());
    let out = Command::new("sh")
        .args(["-c", cmd])
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("COLUMNS")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `run_in`: exit status and all it printed.
fn in_dir(dir: &Path, cmd: &str) -> (i32, String) {
    let (code, out, err) = run_in(dir, cmd);
    (code, out + &err)
}

/// The plan of `name` in `dir`: its JSON target and every by-hand entry's
/// commands, which the human plan prints too, each as a line of its own.
fn planned(dir: &Path, name: &str) -> (Value, Vec<Vec<String>>) {
    let (code, human, err) = run_in(dir, &format!("diskalign plan {name}"));
    assert_eq!(code, 1, "{human}{err}");
    let (code, json, err) = run_in(dir, &format!("diskalign plan {name} --json"));
    assert_eq!(code, 1, "{json}{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    let t = v["targets"][0].clone();
    let manual: Vec<Vec<String>> = t["manual"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["commands"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    let lines: Vec<&str> = human.lines().map(str::trim).collect();
    for c in manual.iter().flatten() {
        assert!(lines.contains(&c.as_str()), "{c}\nnot in:\n{human}");
    }
    (t, manual)
}

/// The note of partition `n`, which says `says` and prints no command.
fn commandless_note(t: &Value, n: u64, says: &str) {
    let m = t["manual"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["partition"] == n)
        .unwrap_or_else(|| panic!("no note for partition {n}: {t:#}"));
    assert!(m["why"].as_str().unwrap().contains(says), "{m:#}");
    assert_eq!(m["commands"], serde_json::json!([]), "{m:#}");
}

/// `qemu-img compare A B`: 0 when their guests are the same.
fn same_guest(a: &Path, b: &Path) -> (i32, String) {
    sh_status(
        "qemu-img",
        &["compare", a.to_str().unwrap(), b.to_str().unwrap()],
    )
}

/// The files of `dir` other than `keep`, removed: what a command run
/// alone left behind.
fn clear_but(dir: &Path, keep: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p != keep {
            if p.is_dir() {
                std::fs::remove_dir_all(&p).unwrap();
            } else {
                std::fs::remove_file(&p).unwrap();
            }
        }
    }
}

/// The NTFS and the FAT of a raw disk that the route moved to 1 MiB and
/// 33 MiB (sector 65600 rounded up to 1 MiB): their bytes are the
/// original's but the start their boot sectors record (each boot sector
/// and its backup: the NTFS's in its partition's last sector), which
/// reads the new start; ntfs-3g reads the volume and the file, and
/// fsck.fat finds the FAT clean.
fn assert_moved_intact(g: &Guest, fixed: &Path, name: &str) {
    let old = std::fs::read(&g.raw).unwrap();
    let new = std::fs::read(fixed).unwrap();
    let (doc, _) = common::run_json(&["check", fixed.to_str().unwrap()]);
    let starts: Vec<&Value> = doc["targets"][0]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["start_bytes"])
        .collect();
    assert_eq!(starts, [MIB, 33 * MIB], "{name}: {doc:#}");
    // Where each boot sector is, from the partition's start: the NTFS's
    // backup in the sector after its volume, the partition's last; the
    // FAT (FAT12, at 8 MiB) keeps none.
    for (what, (from, len), to, copies) in [
        ("NTFS", NTFS, 2048, vec![0, (NTFS.1 - 1) * 512]),
        ("FAT", ESP, 33 * 2048, vec![0]),
    ] {
        let (from_b, to_b) = ((from * 512) as usize, (to * 512) as usize);
        let field = |i: usize| {
            copies
                .iter()
                .any(|&c| (c as usize + 0x1c..c as usize + 0x20).contains(&i))
        };
        let differ = (0..(len * 512) as usize)
            .filter(|&i| old[from_b + i] != new[to_b + i])
            .find(|&i| !field(i));
        assert_eq!(
            differ, None,
            "{name}: a {what} byte differs from the original"
        );
        for c in &copies {
            assert_eq!(
                hidden_sectors(&new[to_b + *c as usize..], 0),
                to as u32,
                "{name}: the {what} boot sector {c} bytes in"
            );
        }
    }
    let l = LoopDev::attach(fixed, None);
    let (code, out) = sh_status("ntfsinfo", &["-m", &l.part(1)]);
    assert_eq!(code, 0, "{name}: ntfsinfo -m: {out}");
    let cat = Command::new("ntfscat")
        .args([&l.part(1), "file.bin"])
        .output()
        .unwrap();
    assert!(cat.status.success(), "{name}: ntfscat");
    assert!(cat.stdout == g.file, "{name}: the file read back differs");
    let (code, out) = sh_status("fsck.fat", &["-n", &l.part(2)]);
    assert_eq!(code, 0, "{name}: fsck.fat -n: {out}");
}

/// One container format: `qemu-img`'s name for it, the file's extension.
fn one_format(g: &Guest, format: &str, ext: &str) {
    let work = g.dir.path().join(format);
    std::fs::create_dir(&work).unwrap();
    let name = format!("xp.{ext}");
    let img = common::qemu_img_convert(&g.raw, &work.join(&name), format, &[]);
    let before = g.dir.path().join(&name);
    std::fs::copy(&img, &before).unwrap();
    let (t, manual) = planned(&work, &name);
    assert!(t["script_refused"].is_string(), "{t:#}");
    let route = &manual[0];
    assert!(t["manual"][0].get("partition").is_none(), "{t:#}");
    assert!(route[0].starts_with("qemu-img convert"), "{route:?}");
    commandless_note(&t, 1, "HKLM\\SYSTEM\\MountedDevices");
    commandless_note(&t, 2, "a VM's UEFI variables");
    assert!(
        !route.iter().any(|c| c.contains("dd of=")),
        "the copy's script writes the boot sectors: {route:?}"
    );
    // Alone, out of their order: the notes' commands, and the route's
    // but its first.
    let alone: Vec<&String> = manual[1..]
        .iter()
        .flatten()
        .chain(route.iter().skip(1))
        .collect();
    for c in alone {
        let _ = in_dir(&work, c);
        let (code, out) = same_guest(&before, &img);
        assert_eq!(code, 0, "{format}: after {c}: {out}");
        clear_but(&work, &img);
    }
    // In order, as printed.
    for c in route {
        let (code, out) = in_dir(&work, c);
        let want = if c.starts_with("diskalign plan") {
            1
        } else {
            0
        };
        assert_eq!(code, want, "{format}: {c}:\n{out}");
    }
    let (code, out) = same_guest(&before, &img);
    assert_eq!(code, 0, "{format}: the route changed the image: {out}");
    let aligned = work.join(format!("{name}.aligned"));
    let fixed = work.join("fixed.raw");
    common::qemu_img_convert(&aligned, &fixed, "raw", &[]);
    assert_moved_intact(g, &fixed, format);
    std::fs::remove_dir_all(&work).unwrap();
    std::fs::remove_file(&before).unwrap();
}

#[test]
fn every_container_format_s_printed_commands_leave_its_guest_and_fix_a_copy() {
    let g = ntfs_guest();
    for (format, ext) in [
        ("qcow2", "qcow2"),
        ("vmdk", "vmdk"),
        ("vhdx", "vhdx"),
        ("vdi", "vdi"),
        ("vpc", "vhd"),
    ] {
        one_format(&g, format, ext);
    }
}

/// The raw image: no command by hand (the NTFS's and the ESP's notes
/// say what the move means and print none); its script writes the new
/// starts into the boot sectors itself.
#[test]
fn a_raw_image_s_script_writes_the_new_starts_itself() {
    let g = ntfs_guest();
    let work = g.dir.path();
    let img = work.join("xp.img");
    std::fs::copy(&g.raw, &img).unwrap();
    let (t, manual) = planned(work, "xp.img");
    assert!(t.get("script_refused").is_none(), "{t:#}");
    commandless_note(&t, 1, "HKLM\\SYSTEM\\MountedDevices");
    commandless_note(&t, 2, "a VM's UEFI variables");
    assert!(manual.iter().all(Vec::is_empty), "{manual:?}");
    let (code, out) = in_dir(work, "diskalign plan xp.img --script fix.sh");
    assert_eq!(code, 1, "{out}");
    let (code, out) = in_dir(work, "sh fix.sh");
    assert_eq!(code, 0, "{out}");
    let (code, out) = in_dir(work, "diskalign check xp.img");
    assert_eq!(code, 0, "{out}");
    assert_moved_intact(&g, &img, "raw");
}

/// A note made "then plan again" for a container (a PV reaching an end
/// off 4 KiB) names a loop device over the raw copy, not over the
/// container: run alone as printed it harms nothing; done on the copy
/// between the first two steps (the placeholder node replaced by the
/// loop device's), the steps end with `check` exiting 0.
#[test]
fn a_pv_s_note_in_a_qcow2_works_on_the_raw_copy_between_the_first_steps() {
    common::require_root();
    common::require_tool("qemu-img");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let raw = common::image(dir.path(), "pv.img", 64 * MIB);
    sh(
        "sgdisk",
        &["-o", "-n1:0:+20M", "-n2:0:0", raw.to_str().unwrap()],
    );
    {
        let l = LoopDev::attach(&raw, None);
        common::lvm("pvcreate", &format!("{}p", l.dev), &[&l.part(2)]);
    }
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let img = common::qemu_img_convert(&raw, &work.join("pv.qcow2"), "qcow2", &[]);
    let before = dir.path().join("before.qcow2");
    std::fs::copy(&img, &before).unwrap();
    let (t, manual) = planned(&work, "pv.qcow2");
    let route = &manual[0];
    let note = t["manual"][1]["commands"][0].as_str().unwrap().to_string();
    assert!(
        note.starts_with(
            "pvresize --setphysicalvolumesize 45068288b LOOPp2 (losetup -P -f --show pv.qcow2.raw)"
        ),
        "{t:#}"
    );
    assert!(t["manual"][1]["why"]
        .as_str()
        .unwrap()
        .contains("between the first two steps"));
    for c in manual[1..].iter().flatten().chain(route.iter().skip(1)) {
        let _ = in_dir(&work, c);
        let (code, out) = same_guest(&before, &img);
        assert_eq!(code, 0, "after {c}: {out}");
        clear_but(&work, &img);
    }
    let (code, out) = in_dir(&work, &route[0]);
    assert_eq!(code, 0, "{out}");
    {
        let l = LoopDev::attach(&work.join("pv.qcow2.raw"), None);
        let cmd = note.replace("LOOPp2 (losetup -P -f --show pv.qcow2.raw)", &l.part(2));
        let args: Vec<&str> = cmd
            .split("   #")
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(args[0], "pvresize", "{cmd}");
        common::lvm(
            "pvresize",
            &format!("{}p", l.dev),
            &[&["-y"], &args[1..]].concat(),
        );
    }
    for c in &route[1..] {
        let (code, out) = in_dir(&work, c);
        let want = if c.starts_with("diskalign plan") {
            1
        } else {
            0
        };
        assert_eq!(code, want, "{c}:\n{out}");
    }
    let (code, out) = same_guest(&before, &img);
    assert_eq!(code, 0, "the steps changed the image: {out}");
}

/// `plan --new` of an empty container proposes the layout for its guest
/// disk but writes no script (its sfdisk would write the table into the
/// container file: over a preallocated qcow2's header and into its
/// clusters); the note says how to lay out a raw copy instead.
#[test]
fn plan_new_writes_no_script_for_a_container() {
    common::require_tool("qemu-img");
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("e.qcow2");
    sh(
        "qemu-img",
        &[
            "create",
            "-q",
            "-f",
            "qcow2",
            "-o",
            "preallocation=full",
            img.to_str().unwrap(),
            "64M",
        ],
    );
    let before = dir.path().join("before.qcow2");
    std::fs::copy(&img, &before).unwrap();
    let (code, out, err) = run_in(
        dir.path(),
        "diskalign plan --new e.qcow2 --sizes 10M,rest --script new.sh",
    );
    assert_eq!(code, 3, "{out}{err}");
    assert!(!dir.path().join("new.sh").exists());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no script written: e.qcow2 is a qcow2 image")
            && err.contains("qemu-img convert -p -f qcow2 -O raw e.qcow2 e.qcow2.raw"),
        "{err}"
    );
    assert!(!out.contains("sfdisk e.qcow2 "), "{out}");
    assert!(out.contains("note: e.qcow2 is a qcow2 image"), "{out}");
    let (code, out) = same_guest(&before, &img);
    assert_eq!(code, 0, "{out}");
    let (v, code) = common::run_json(&[
        "plan",
        "--new",
        img.to_str().unwrap(),
        "--sizes",
        "10M,rest",
    ]);
    assert_eq!(code, 1, "{v:#}");
    assert!(v["script_refused"].is_string(), "{v:#}");
    assert_eq!(v["partitions"][0]["start_bytes"], MIB);
}
