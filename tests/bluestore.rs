//! Ceph BlueStore OSDs made offline by the real tool: Debian's ceph-osd
//! (`ceph-osd --mkfs --no-mon-config`, no monitor, no network) on sparse
//! files, with the default allocation unit and with 16 and 64 KiB. Check's
//! `bluestore` object must say what `ceph-bluestore-tool show-label`
//! says, field for field; the unit is judged against a physical block of
//! 16 KiB; a label inside a partition or on a striped LV is found there
//! too, and a damaged one is a damaged layer.
//!
//! Needs ceph-osd (package ceph-osd, which also ships
//! ceph-bluestore-tool); the striped LV needs root and loop devices.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

const GIB: u64 = 1 << 30;

/// One OSD being made: `dir/block`, a sparse file of 1 GiB.
struct Osd {
    block: PathBuf,
    mkfs: Child,
}

/// Start `ceph-osd --mkfs` for osd.`id` in `dir/osdID` with the
/// allocation unit `unit` (None: the default). A sparse file counts as
/// rotational, so `_hdd` decides; both are given so that the test does
/// not depend on that.
fn start_osd(dir: &Path, id: u32, unit: Option<u64>) -> Osd {
    require_tool("ceph-osd");
    let conf = dir.join("ceph.conf");
    std::fs::write(
        &conf,
        "[global]\nfsid = 11111111-2222-3333-4444-555555555555\n",
    )
    .unwrap();
    let data = dir.join(format!("osd{id}"));
    std::fs::create_dir(&data).unwrap();
    let block = image(&data, "block", GIB);
    let mut cmd = Command::new("ceph-osd");
    cmd.args(["--mkfs", "--no-mon-config", "-c"])
        .arg(&conf)
        .args(["-i", &id.to_string(), "--osd-data"])
        .arg(&data)
        .args(["--osd-objectstore", "bluestore", "--osd-uuid"])
        .arg(format!("6b1f7a6e-0000-4000-8000-00000000000{id}"))
        // Its log goes to stderr; the run dir and admin socket stay in
        // the test's directory.
        .args(["--log-file", "/dev/null", "--run-dir"])
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    if let Some(u) = unit {
        cmd.arg(format!("--bluestore_min_alloc_size_hdd={u}"))
            .arg(format!("--bluestore_min_alloc_size_ssd={u}"));
    }
    let mkfs = cmd.spawn().expect("run ceph-osd");
    Osd { block, mkfs }
}

impl Osd {
    fn wait(self) -> PathBuf {
        let out = self.mkfs.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "ceph-osd --mkfs failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.block
    }
}

/// What `ceph-bluestore-tool show-label` prints for `block`, times in UTC.
fn show_label(block: &Path) -> serde_json::Map<String, Value> {
    require_tool("ceph-bluestore-tool");
    let out = Command::new("ceph-bluestore-tool")
        .args(["show-label", "--dev"])
        .arg(block)
        .env("TZ", "UTC")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = block.to_str().unwrap();
    v[key].as_object().unwrap().clone()
}

/// Every layer of the first target's stack, then of the devices
/// assembled across targets (a VG's LVs), depth first.
fn layers(doc: &Value) -> Vec<Value> {
    fn visit(l: &Value, out: &mut Vec<Value>) {
        out.push(l.clone());
        for c in l["children"].as_array().into_iter().flatten() {
            visit(c, out);
        }
    }
    let mut out = Vec::new();
    let assembled = doc["assembled"].as_array().into_iter().flatten();
    for root in doc["targets"][0]["stack"]
        .as_array()
        .unwrap()
        .iter()
        .chain(assembled)
    {
        visit(root, &mut out);
    }
    out
}

fn bluestore_layer(doc: &Value) -> Value {
    layers(doc)
        .into_iter()
        .find(|l| l["kind"] == "bluestore")
        .unwrap_or_else(|| panic!("no bluestore layer: {doc:#}"))
}

fn layer_codes(l: &Value) -> Vec<String> {
    l["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

/// Three OSDs made at once (4 KiB by default, 16 and 64 KiB asked for):
/// each label reads as show-label prints it, every key; against a 16 KiB
/// physical block only the 4 KiB one is below it.
#[test]
fn osds_made_by_ceph_osd_read_as_show_label_says_and_are_judged() {
    let dir = tempfile::tempdir().unwrap();
    let made: Vec<Osd> = [(0, None), (1, Some(16384)), (2, Some(65536))]
        .into_iter()
        .map(|(id, unit)| start_osd(dir.path(), id, unit))
        .collect();
    let blocks: Vec<PathBuf> = made.into_iter().map(Osd::wait).collect();
    for (block, unit) in blocks.iter().zip([4096u64, 16384, 65536]) {
        let path = block.to_str().unwrap();
        let label = show_label(block);
        let (doc, _) = run_json(&["check", path]);
        let l = bluestore_layer(&doc);
        let b = &l["bluestore"];
        assert_eq!(b["osd_uuid"], label["osd_uuid"]);
        assert_eq!(b["size_bytes"], label["size"]);
        assert_eq!(b["btime"], label["btime"]);
        assert_eq!(b["description"], label["description"]);
        let meta = b["meta"].as_object().unwrap();
        let keys: Vec<&String> = label
            .keys()
            .filter(|k| !["osd_uuid", "size", "btime", "description"].contains(&k.as_str()))
            .collect();
        assert_eq!(meta.len(), keys.len(), "{meta:?} against {label:?}");
        for k in keys {
            assert_eq!(meta.get(k), label.get(k), "meta key {k}");
        }
        assert_eq!(label["bfm_bytes_per_block"], unit.to_string());
        assert_eq!(b["min_alloc_size_bytes"], unit);
        assert_eq!(
            l["name"],
            format!(
                "BlueStore main device of osd.{}",
                meta["whoami"].as_str().unwrap()
            )
        );
        assert!(layer_codes(&l).is_empty(), "{l:#}");
        // The human tree says the unit.
        let (text, _) = run(&["check", path]);
        let said = format!("min_alloc_size {} KiB (bfm_bytes_per_block)", unit / 1024);
        assert!(text.contains(&said), "{text}");
        let (doc, code) = run_json(&["check", path, "--topology", "pbs=16384"]);
        let l = bluestore_layer(&doc);
        let below = unit < 16384;
        assert_eq!(
            layer_codes(&l).contains(&"bluestore-alloc-below-grain".to_string()),
            below,
            "{l:#}"
        );
        assert_eq!(code, i32::from(below), "{doc:#}");
        if below {
            let f = &l["findings"][0]["facts"];
            assert_eq!(f["block_size_bytes"], 4096);
            assert_eq!(f["grain_bytes"], 16384);
            assert_eq!(f["grain_source"], "physical-block");
            assert!(f["fix"]
                .as_str()
                .unwrap()
                .contains("bluestore_min_alloc_size_ssd 16384"));
        }
    }
}

/// A real label (tests/fixtures/bluestore, made by ceph-osd 16.2.15).
fn fixture(name: &str) -> Vec<u8> {
    let dir = env!("CARGO_MANIFEST_DIR");
    std::fs::read(format!("{dir}/tests/fixtures/bluestore/{name}")).unwrap()
}

fn write_at(path: &Path, at: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, at).unwrap();
}

/// An OSD in a partition is found there: at 1 MiB it is sound; in a
/// partition that starts 512 bytes off 4 KiB it says the partition's
/// start is the cause.
#[test]
fn an_osd_in_a_partition_is_read_and_inherits_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "disk.img", 64 << 20);
    sfdisk(
        &img,
        "label: gpt\nstart=2048, size=32768\nstart=36865, size=32768\n",
    );
    write_at(&img, 2048 * 512, &fixture("osd0-alloc4096.label"));
    write_at(&img, 36865 * 512, &fixture("osd1-alloc65536.label"));
    let (doc, _) = run_json(&["check", img.to_str().unwrap()]);
    let osds: Vec<Value> = layers(&doc)
        .into_iter()
        .filter(|l| l["kind"] == "bluestore")
        .collect();
    assert_eq!(osds.len(), 2, "{doc:#}");
    let at = |offset: u64| {
        osds.iter()
            .find(|l| l["offset_bytes"] == offset)
            .unwrap_or_else(|| panic!("no OSD at {offset}: {doc:#}"))
    };
    let sound = at(2048 * 512);
    assert_eq!(sound["bluestore"]["min_alloc_size_bytes"], 4096);
    assert_eq!(sound["status"], "aligned", "{sound:#}");
    let off = at(36865 * 512);
    assert_eq!(off["bluestore"]["min_alloc_size_bytes"], 65536);
    assert_eq!(off["inherits_from"], "partition 2", "{off:#}");
}

/// One flipped byte in the label: still a BlueStore layer, damaged, with
/// the checksum's byte named.
#[test]
fn a_label_whose_checksum_fails_is_a_damaged_bluestore_layer() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "osd.img", 16 << 20);
    let mut label = fixture("osd0-alloc4096.label");
    label[0xbd] ^= 0x01;
    write_at(&img, 0, &label);
    let (doc, code) = run_json(&["check", img.to_str().unwrap()]);
    let l = bluestore_layer(&doc);
    assert_eq!(l["name"], "BlueStore label (damaged)");
    assert_eq!(l["status"], "damaged");
    assert_eq!(layer_codes(&l), ["metadata-invalid"]);
    let m = l["findings"][0]["message"].as_str().unwrap();
    assert!(m.contains("checksum") && m.contains("at byte 557"), "{m}");
    assert_eq!(code, 1);
}

/// Every output says the same of an OSD whose unit is below the block:
/// the human tree (the unit and the finding), `-q`, JSON, CSV, HTML and
/// Prometheus (the layer's series at 0, the code counted).
#[test]
fn every_form_shows_the_osd_and_its_finding() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "osd.img", 16 << 20);
    write_at(&img, 0, &fixture("osd0-alloc4096.label"));
    let p = img.to_str().unwrap();
    let out = |n: &str| dir.path().join(n).display().to_string();
    let (human, code) = run(&[
        "check",
        p,
        "--topology",
        "pbs=16384",
        &format!("--json={}", out("c.json")),
        "--csv",
        &out("c.csv"),
        "--html",
        &out("c.html"),
        "--prometheus",
        &out("c.prom"),
    ]);
    assert_eq!(code, 1, "{human}");
    let layer = "BlueStore main device of osd.0";
    let code_name = "bluestore-alloc-below-grain";
    for needle in [layer, "min_alloc_size 4 KiB", code_name, "untidy"] {
        assert!(human.contains(needle), "{needle}: {human}");
    }
    let (quiet, _) = run(&["check", p, "--topology", "pbs=16384", "-q"]);
    assert!(quiet.contains("untidy"), "{quiet}");
    let read = |n: &str| std::fs::read_to_string(out(n)).unwrap();
    let doc: Value = serde_json::from_str(&read("c.json")).unwrap();
    assert_eq!(doc["targets"][0]["summary"]["status"], "untidy");
    assert_eq!(layer_codes(&bluestore_layer(&doc)), [code_name]);
    let csv = read("c.csv");
    assert!(csv.contains(code_name) && csv.contains("untidy"), "{csv}");
    let html = read("c.html");
    for needle in [layer, "min_alloc_size 4 KiB", code_name] {
        assert!(html.contains(needle), "{needle} not in the page");
    }
    let prom = read("c.prom");
    let series = format!("layer=\"whole device / {layer}\",kind=\"bluestore\"}} 0");
    assert!(prom.contains(&series), "{series}\n{prom}");
    assert!(
        prom.contains(&format!("code=\"{code_name}\"}} 1")),
        "{prom}"
    );
}

/// An OSD on a striped LV, as ceph-volume puts OSDs on LVs: the label at
/// the LV's byte 0 (its first 8 KiB chunk is on leg 0, the first PV's
/// first extent) is found through the LV, and its 4 KiB unit is below the
/// LV's 8 KiB stripe, the minimum I/O size the LV gives: an info.
#[test]
fn an_osd_on_a_striped_lv_is_judged_against_the_stripe() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let img = common::lvm::striped_image(&dir, 2048 + 24 * 2048);
    write_at(
        &img,
        2048 * 512 + (1 << 20),
        &fixture("osd0-alloc4096.label"),
    );
    let (doc, _) = run_json(&["check", img.to_str().unwrap(), "--topology", "pbs=4096"]);
    let l = bluestore_layer(&doc);
    assert_eq!(l["below"]["minimum_io_size"], 8192, "{l:#}");
    assert_eq!(layer_codes(&l), ["bluestore-alloc-below-grain"], "{l:#}");
    let f = &l["findings"][0];
    assert_eq!(f["severity"], "info");
    assert_eq!(f["facts"]["grain_source"], "minimum-io");
    assert_eq!(f["facts"]["grain_bytes"], 8192);
}
