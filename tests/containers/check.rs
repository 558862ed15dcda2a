//! `check` reads a guest disk through its container exactly as it reads
//! the raw disk: for images of every format made by `qemu-img` from raw
//! disks laid out by sfdisk, sgdisk, parted, pvcreate and mkfs, `check
//! --json` equals `check --json` of `qemu-img convert -O raw` of the same
//! image in partitions, layers, statuses, codes and exit status (the
//! container's own findings, `image-*`, aside).

use super::common::{self, lvm, sh, LoopDev};
use serde_json::Value;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// The raw disks every format is made from: name and path.
struct Layouts {
    _dir: TempDir,
    disks: Vec<(&'static str, PathBuf)>,
}

/// A DOS table from sfdisk with the first partition at sector 63 (ext4
/// in it, made by mkfs.ext4 through a loop device) and a second at 1 MiB
/// multiples; sgdisk's own default layout; and a parted GPT with a 1 KiB-block ext4 in its first partition and whose second
/// partition is an LVM PV (pvcreate, vgcreate, lvcreate) with ext4 on
/// the LV's place.
fn layouts() -> Layouts {
    common::require_root();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dos = common::image(dir.path(), "dos63.img", 64 << 20);
    common::sfdisk(&dos, "label: dos\n63,40000,83\n45056,,83\n");
    {
        let l = LoopDev::attach(&dos, None);
        sh("mkfs.ext4", &["-q", "-F", &l.part(1)]);
    }
    let sg = common::image(dir.path(), "sgdisk.img", 64 << 20);
    sh(
        "sgdisk",
        &["-o", "-n1:0:+20M", "-n2:0:0", sg.to_str().unwrap()],
    );
    let lv = common::image(dir.path(), "parted-lvm.img", 128 << 20);
    sh(
        "parted",
        &[
            "-s",
            lv.to_str().unwrap(),
            "mklabel",
            "gpt",
            "mkpart",
            "a",
            "1MiB",
            "21MiB",
            "mkpart",
            "b",
            "21MiB",
            "127MiB",
        ],
    );
    {
        let l = LoopDev::attach(&lv, None);
        let prefix = format!("{}p", l.dev);
        let p2 = l.part(2);
        sh("mkfs.ext4", &["-q", "-F", "-b", "1024", &l.part(1)]);
        lvm("pvcreate", &prefix, &["--dataalignment", "192k", &p2]);
        lvm("vgcreate", &prefix, &["-s", "4M", "vgc", &p2]);
        lvm(
            "lvcreate",
            &prefix,
            &[
                "--driverloaded",
                "n",
                "-an",
                "--zero",
                "n",
                "-L",
                "32M",
                "-n",
                "lv0",
                "vgc",
            ],
        );
    }
    Layouts {
        disks: vec![("dos63", dos), ("sgdisk", sg), ("parted-lvm", lv)],
        _dir: dir,
    }
}

/// What must be the same: every partition's place, status and codes,
/// every layer's kind, name, place, status and codes (recursively), the
/// target's status and codes, the run's status and exit status. The
/// container's own findings (`image-*`) and its file's host (`host-*`)
/// are left out, and the image's
/// path is written as `IMG` wherever a layer names it.
fn essence(doc: &Value, path: &Path) -> Value {
    let t = &doc["targets"][0];
    let p = path.display().to_string();
    let codes = |fs: &Value| -> Vec<String> {
        let mut c: Vec<String> = fs
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| f["code"].as_str().unwrap().to_string())
            // Where each file lies on the host (`host-*`) is the file's,
            // not the guest's: a container and its raw conversion differ.
            .filter(|c| !c.starts_with("image-") && !c.starts_with("host-"))
            .collect();
        c.sort();
        c
    };
    fn layer(l: &Value, p: &str, codes: &dyn Fn(&Value) -> Vec<String>) -> Value {
        serde_json::json!({
            "kind": l["kind"], "name": l["name"],
            "device": l["device"].as_str().map(|d| d.replace(p, "IMG")),
            "offset": l["offset_bytes"], "size": l["size_bytes"],
            "data": l["data_offset_bytes"], "status": l["status"],
            "codes": codes(&l["findings"]),
            "children": l["children"].as_array().into_iter().flatten()
                .map(|c| layer(c, p, codes)).collect::<Vec<_>>(),
        })
    }
    serde_json::json!({
        "size": t["size_bytes"],
        "table": t["partition_table"],
        "partitions": t["partitions"].as_array().unwrap().iter().map(|q| serde_json::json!({
            "n": q["number"], "start": q["start_bytes"], "end": q["end_bytes"],
            "status": q["status"], "codes": codes(&q["findings"]), "tools": q["tools"],
        })).collect::<Vec<_>>(),
        "stack": t["stack"].as_array().unwrap().iter().map(|l| layer(l, &p, &codes)).collect::<Vec<_>>(),
        "codes": codes(&t["findings"]),
        "status": t["summary"]["status"],
        "run_status": doc["summary"]["status"],
        "exit": doc["summary"]["exit_status"],
        "errors": doc["errors"],
    })
}

/// `check --json` of a file (with `--topology` when given) and its exit code.
fn check(path: &Path, topology: Option<&str>) -> (Value, i32) {
    let mut args = vec!["check", path.to_str().unwrap()];
    if let Some(t) = topology {
        args.extend(["--topology", t]);
    }
    common::run_json(&args)
}

/// The image checks as its raw conversion does; returns its document.
fn assert_checks_as_raw(image: &Path, qemu_format: &str) -> Value {
    let raw = image.with_extension("as-raw");
    sh(
        "qemu-img",
        &[
            "convert",
            "-f",
            qemu_format,
            "-O",
            "raw",
            image.to_str().unwrap(),
            raw.to_str().unwrap(),
        ],
    );
    let (doc, code) = check(image, None);
    // A container that declares its topology (VHDX) is compared with the
    // raw disk judged under that topology.
    let topo = &doc["targets"][0]["topology"];
    let given = (doc["targets"][0]["topology_source"] == "container").then(|| {
        format!(
            "lbs={},pbs={}",
            topo["logical_block_size"], topo["physical_block_size"]
        )
    });
    let (raw_doc, raw_code) = check(&raw, given.as_deref());
    assert_eq!(code, raw_code, "{}: exit status", image.display());
    assert_eq!(
        essence(&doc, image),
        essence(&raw_doc, &raw),
        "{}: check differs from its raw conversion's",
        image.display()
    );
    std::fs::remove_file(&raw).unwrap();
    doc
}

/// Every layout in one format (qemu-img's `-O` name and options); the
/// container's JSON says the format.
fn every_layout(format: &str, options: &[&str], json_format: &str) {
    let l = layouts();
    for (name, raw) in &l.disks {
        let img = raw.with_file_name(format!("{name}.{format}"));
        common::qemu_img_convert(raw, &img, format, options);
        let doc = assert_checks_as_raw(&img, format);
        // The comparison has layers to compare: ext4 in the DOS and the
        // parted layouts, the PV there too.
        let text = doc.to_string();
        match *name {
            "dos63" => assert!(text.contains(r#""kind":"filesystem""#), "{text}"),
            "parted-lvm" => assert!(text.contains(r#""kind":"lvm-pv""#), "{text}"),
            _ => {}
        }
        assert_eq!(
            doc["targets"][0]["container"]["format"],
            json_format,
            "{}",
            img.display()
        );
        std::fs::remove_file(&img).unwrap();
    }
}

#[test]
fn qcow2_checks_as_its_raw_disk() {
    every_layout("qcow2", &[], "qcow2");
}

#[test]
fn compressed_and_2m_cluster_and_extended_l2_qcow2_check_as_raw() {
    every_layout("qcow2", &["-c"], "qcow2");
    every_layout("qcow2", &["-o", "cluster_size=2M"], "qcow2");
    every_layout(
        "qcow2",
        &["-o", "extended_l2=on,cluster_size=128k"],
        "qcow2",
    );
}

#[test]
fn vmdk_checks_as_its_raw_disk() {
    every_layout("vmdk", &[], "vmdk");
    every_layout("vmdk", &["-o", "subformat=streamOptimized"], "vmdk");
}

#[test]
fn vhdx_vdi_and_vhd_check_as_their_raw_disks() {
    every_layout("vhdx", &[], "vhdx");
    every_layout("vdi", &[], "vdi");
    every_layout("vpc", &[], "vhd");
}

/// Overlays: a qcow2 over the raw disk, and a qcow2 over a qcow2 of it,
/// with a write in the overlay; checked as their conversions.
#[test]
fn overlays_on_raw_and_on_qcow2_check_as_raw() {
    let l = layouts();
    let (_, raw) = &l.disks[2];
    let base_q = raw.with_file_name("base.qcow2");
    common::qemu_img_convert(raw, &base_q, "qcow2", &[]);
    for (base, fmt) in [(raw.clone(), "raw"), (base_q.clone(), "qcow2")] {
        let top = raw.with_file_name(format!("over-{fmt}.qcow2"));
        let base_name = base.file_name().unwrap().to_str().unwrap();
        sh(
            "qemu-img",
            &[
                "create",
                "-q",
                "-f",
                "qcow2",
                "-b",
                base_name,
                "-F",
                fmt,
                top.to_str().unwrap(),
            ],
        );
        // A write inside partition 2's PV data area, past its metadata.
        super::qemu_io(&top, "qcow2", "write -P 0x5a 20M 64k");
        let doc = assert_checks_as_raw(&top, "qcow2");
        let backing = &doc["targets"][0]["container"]["backing"];
        assert_eq!(backing[0]["format"], fmt, "{backing}");
    }
}

/// A VHDX says its own topology: it is taken (`topology_source:
/// "container"`), so an aligned layout passes `--fail-on info` (no
/// `topology-unknown`, which every raw image carries).
#[test]
fn a_vhdx_says_its_topology_and_passes_fail_on_info() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let raw = common::image(dir.path(), "a.img", 64 << 20);
    sh("sgdisk", &["-n1:2048:+20M", raw.to_str().unwrap()]);
    let vhdx = common::qemu_img_convert(&raw, &dir.path().join("a.vhdx"), "vhdx", &[]);
    let (doc, code) = common::run_json(&["check", vhdx.to_str().unwrap(), "--fail-on", "info"]);
    assert_eq!(code, 0, "{doc}");
    let t = &doc["targets"][0];
    assert_eq!(t["topology_source"], "container");
    assert_eq!(t["container"]["logical_sector_bytes"], 512);
    let (_, raw_code) = common::run_json(&["check", raw.to_str().unwrap(), "--fail-on", "info"]);
    assert_eq!(raw_code, 1, "the raw image carries topology-unknown");
}

/// An encrypted qcow2 is described and left unread: one info finding,
/// its facts in the JSON, no table.
#[test]
fn an_encrypted_qcow2_is_described_not_read() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let img = dir.path().join("secret.qcow2");
    common::qemu_img_luks(&[
        "create",
        "-q",
        "-f",
        "qcow2",
        "--object",
        "secret,id=s0,data=abc",
        "-o",
        "encrypt.format=luks,encrypt.key-secret=s0",
        img.to_str().unwrap(),
        "64M",
    ]);
    let (doc, code) = common::run_json(&["check", img.to_str().unwrap()]);
    assert_eq!(code, 0, "{doc}");
    let t = &doc["targets"][0];
    assert_eq!(t["container"]["encrypted"], true);
    assert_eq!(t["size_bytes"], 64u64 << 20);
    assert_eq!(t["partition_table"]["type"], "none");
    assert_eq!(t["findings"][0]["code"], "image-encrypted", "{doc}");
    // What is inside is unknown: never "aligned".
    assert_eq!(t["summary"]["status"], "incomplete", "{doc}");
}
