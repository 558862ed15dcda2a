//! LVM thin pools read from images: the VG text written by lvm2's own
//! vgcfgrestore (it checks thin segments on import; lvcreate cannot make a
//! pool without device-mapper), the pool's metadata by thin-provisioning-
//! tools' thin_restore and checked against its thin_dump, an ext4 by
//! mkfs.ext4 copied chunk by chunk where the metadata maps it.

mod common;

use common::*;
use diskalign::stack::{thin_device_map, thin_superblock};
use serde_json::Value;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

const MIB: u64 = 1 << 20;

fn layer<'a>(v: &'a Value, name: &str) -> &'a Value {
    fn find<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
        match v {
            Value::Object(o) if o.get("name").and_then(Value::as_str) == Some(name) => Some(v),
            Value::Object(o) => o.values().find_map(|x| find(x, name)),
            Value::Array(a) => a.iter().find_map(|x| find(x, name)),
            _ => None,
        }
    }
    find(v, name).unwrap_or_else(|| panic!("no layer {name} in {v:#}"))
}

fn codes_of(l: &Value) -> Vec<String> {
    l["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| f["code"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// (virtual block, data block) pairs of device 1 in a thin_dump document.
fn dumped(xml: &str) -> Vec<(u64, u64)> {
    let attr = |line: &str, key: &str| -> u64 {
        let at = line.find(&format!(" {key}=\"")).unwrap() + key.len() + 3;
        line[at..].split('"').next().unwrap().parse().unwrap()
    };
    let mut out = Vec::new();
    for line in xml.lines().map(str::trim) {
        if line.starts_with("<range_mapping") {
            let (o, d, n) = (
                attr(line, "origin_begin"),
                attr(line, "data_begin"),
                attr(line, "length"),
            );
            out.extend((0..n).map(|i| (o + i, d + i)));
        } else if line.starts_with("<single_mapping") {
            out.push((attr(line, "origin_block"), attr(line, "data_block")));
        }
    }
    out
}

/// A 64 MiB PV of VG vgt: pool_tmeta (4 MiB) at extent 0, pool_tdata
/// (16 MiB) at extent 4, the pool with `chunk` bytes, thin LV thin1
/// (32 MiB, device 1) whose first 8 MiB hold an ext4 made with
/// `ext4_opts`, its two halves swapped in the data LV. Returns the image
/// and the pool's metadata as a file of its own.
fn thin_image(dir: &TempDir, chunk: u64, ext4_opts: &[&str]) -> (PathBuf, PathBuf) {
    for t in ["thin_restore", "thin_dump", "vgcfgrestore", "mkfs.ext4"] {
        require_tool(t);
    }
    let img = image(dir.path(), "thin.img", 64 * MIB);
    let l = LoopDev::attach(&img, None);
    lvm("pvcreate", &l.dev, &[&l.dev]);
    lvm("vgcreate", &l.dev, &["-s", "1M", "vgt", &l.dev]);
    let backup = dir.path().join("vgt.txt");
    lvm(
        "vgcfgbackup",
        &l.dev,
        &["-f", backup.to_str().unwrap(), "vgt"],
    );
    let text = std::fs::read_to_string(&backup).unwrap();
    let lv = |name: &str, flags: &str, seg: &str| {
        let n = ["pool", "thin1", "pool_tmeta", "pool_tdata"]
            .iter()
            .position(|x| *x == name);
        let id = format!("aaaaa{}-aaaa-aaaa-aaaa-aaaa-aaaa-aaaaaa", n.unwrap());
        format!("{name} {{ id = \"{id}\" status = [{flags}] flags = [] creation_time = 1 creation_host = \"t\" segment_count = 1\nsegment1 {{ {seg} }} }}\n")
    };
    let (rw, visible) = ("\"READ\", \"WRITE\"", "\"READ\", \"WRITE\", \"VISIBLE\"");
    let lvs = [
        lv("pool", visible, &format!("start_extent = 0 extent_count = 16 type = \"thin-pool\" metadata = \"pool_tmeta\" pool = \"pool_tdata\" transaction_id = 1 chunk_size = {} discards = \"passdown\" zero_new_blocks = 1", chunk / 512)),
        lv("thin1", visible, "start_extent = 0 extent_count = 32 type = \"thin\" thin_pool = \"pool\" transaction_id = 0 device_id = 1"),
        lv("pool_tmeta", rw, "start_extent = 0 extent_count = 4 type = \"striped\" stripe_count = 1 stripes = [\"pv0\", 0]"),
        lv("pool_tdata", rw, "start_extent = 0 extent_count = 16 type = \"striped\" stripe_count = 1 stripes = [\"pv0\", 4]"),
    ];
    let end = text.rfind('}').unwrap();
    let text = format!(
        "{}logical_volumes {{\n{}}}\n{}",
        &text[..end],
        lvs.concat(),
        &text[end..]
    );
    std::fs::write(&backup, text).unwrap();
    lvm(
        "vgcfgrestore",
        &l.dev,
        &["--force", "-f", backup.to_str().unwrap(), "vgt"],
    );
    let pe_start = common::lvm::pvs_pe_start(&l.dev, &l.dev);
    drop(l);

    // The pool's metadata: the ext4's first half at the data LV's second
    // half and the other way round.
    let blocks = 8 * MIB / chunk;
    let half = blocks / 2;
    let xml = format!(
        "<superblock uuid=\"\" time=\"0\" transaction=\"1\" flags=\"0\" version=\"2\" data_block_size=\"{}\" nr_data_blocks=\"{}\">\n<device dev_id=\"1\" mapped_blocks=\"{blocks}\" transaction=\"0\" creation_time=\"0\" snap_time=\"0\">\n<range_mapping origin_begin=\"0\" data_begin=\"{half}\" length=\"{half}\" time=\"0\"/>\n<range_mapping origin_begin=\"{half}\" data_begin=\"0\" length=\"{half}\" time=\"0\"/>\n</device>\n</superblock>\n",
        chunk / 512,
        16 * MIB / chunk
    );
    let xml_path = dir.path().join("meta.xml");
    std::fs::write(&xml_path, xml).unwrap();
    let meta = image(dir.path(), "tmeta.img", 4 * MIB);
    sh(
        "thin_restore",
        &[
            "-i",
            xml_path.to_str().unwrap(),
            "-o",
            meta.to_str().unwrap(),
        ],
    );
    let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
    f.write_all_at(&std::fs::read(&meta).unwrap(), pe_start)
        .unwrap();

    let fs = image(dir.path(), "fs.img", 8 * MIB);
    let mut args = vec!["-q", "-F", "-b", "4096"];
    args.extend_from_slice(ext4_opts);
    args.push(fs.to_str().unwrap());
    sh("mkfs.ext4", &args);
    let bytes = std::fs::read(&fs).unwrap();
    let data = pe_start + 4 * MIB;
    for v in 0..blocks {
        let d = (v + half) % blocks;
        let c = chunk as usize;
        f.write_all_at(
            &bytes[v as usize * c..(v as usize + 1) * c],
            data + d * chunk,
        )
        .unwrap();
    }
    (img, meta)
}

fn check(img: &Path, topology: &str) -> (Value, i32) {
    run_json(&["check", img.to_str().unwrap(), topology])
}

#[test]
fn a_thin_lv_is_read_through_its_pool_and_its_chunk_judged() {
    let dir = TempDir::new().unwrap();
    // The case: 64 KiB chunks on a 512 KiB x 2 stripe, an ext4
    // whose hints are the stripe's.
    let (img, meta) = thin_image(&dir, 65536, &["-E", "stride=128,stripe_width=256"]);

    // The reader agrees with thin_dump on the metadata thin_restore wrote.
    let xml =
        String::from_utf8_lossy(&sh("thin_dump", &[meta.to_str().unwrap()]).stdout).into_owned();
    let m = std::fs::read(&meta).unwrap();
    let sb = thin_superblock(&m).unwrap();
    assert_eq!(sb.data_block_bytes, 65536);
    assert_eq!(sb.transaction_id, 1);
    let map = thin_device_map(&m, &sb, 1).unwrap().unwrap();
    assert_eq!(map.blocks, dumped(&xml), "{xml}");
    assert!(!map.truncated);
    assert_eq!(thin_device_map(&m, &sb, 2).unwrap(), None);

    let (doc, code) = check(&img, "--topology=min=524288,opt=1048576");
    let pool = layer(&doc, "LV vgt/pool");
    assert_eq!(pool["lv"]["segments"][0]["type"], "thin-pool");
    assert_eq!(pool["lv"]["segments"][0]["thin_pool"]["chunk_bytes"], 65536);
    assert_eq!(
        pool["lv"]["segments"][0]["thin_pool"]["data_lv"],
        "pool_tdata"
    );
    // dm-thin keeps the stripe's sizes: 1 MiB is a multiple of the chunk.
    assert_eq!(pool["exposes"]["minimum_io_size"], 524288);
    assert_eq!(pool["exposes"]["optimal_io_size"], 1048576);
    assert_eq!(codes_of(pool), ["thin-chunk-below-stripe"], "{pool:#}");
    let thin = layer(&doc, "LV vgt/thin1");
    assert_eq!(thin["lv"]["segments"][0]["thin"]["device_id"], 1);
    assert_eq!(thin["lv"]["pool_chunk_bytes"], 65536);
    let fs = thin["children"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "filesystem")
        .unwrap_or_else(|| panic!("{thin:#}"));
    assert_eq!(fs["filesystem"]["type"], "ext4");
    assert_eq!(codes_of(fs), ["thin-fs-hints-chunk"], "{fs:#}");
    assert_eq!(code, 1);
    // The data LV is not walked: the ext4's pieces there are the thin LV's.
    let tdata = layer(&doc, "LV vgt/pool_tdata");
    assert!(tdata["children"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["kind"] == "lvm-leg"));

    let (human, _) = run(&[
        "check",
        img.to_str().unwrap(),
        "--topology=min=524288,opt=1048576",
    ]);
    assert!(human.contains("thin-pool, chunk 64 KiB"), "{human}");
    assert!(
        human.contains("thin in pool pool (device 1, chunk 64 KiB)"),
        "{human}"
    );
}

#[test]
fn a_pool_whose_chunk_is_the_stripe_is_clean_and_damage_is_not_followed() {
    let dir = TempDir::new().unwrap();
    let (img, _) = thin_image(&dir, MIB, &["-E", "stride=128,stripe_width=256"]);
    let (doc, code) = check(&img, "--topology=min=524288,opt=1048576");
    let thin = layer(&doc, "LV vgt/thin1");
    assert!(thin.to_string().contains("\"ext4\""), "{thin:#}");
    assert_eq!(code, 0, "{doc:#}");

    // The pool's superblock torn (the PV's first extent is at 1 MiB): the
    // thin LV says why it was not followed.
    let f = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
    f.write_all_at(&[0xff; 8], MIB + 320).unwrap();
    let (doc, _) = check(&img, "--topology=min=524288,opt=1048576");
    let thin = layer(&doc, "LV vgt/thin1");
    assert_eq!(codes_of(thin), ["layer-not-followed"], "{thin:#}");
    let msg = thin["findings"][0]["message"].as_str().unwrap();
    assert!(msg.contains("dm-thin metadata at byte"), "{msg}");
}

#[test]
fn trees_of_several_levels_agree_with_thin_dump() {
    require_tool("thin_restore");
    let dir = TempDir::new().unwrap();
    // 600 single mappings (a leaf holds 254: internal nodes above leaves)
    // on device 5, and a range on device 9.
    let mut xml = String::from("<superblock uuid=\"\" time=\"2\" transaction=\"7\" flags=\"0\" version=\"2\" data_block_size=\"256\" nr_data_blocks=\"5000\">\n<device dev_id=\"5\" mapped_blocks=\"600\" transaction=\"0\" creation_time=\"0\" snap_time=\"0\">\n");
    for i in 0..600u64 {
        xml.push_str(&format!(
            "<single_mapping origin_block=\"{}\" data_block=\"{}\" time=\"{}\"/>\n",
            i * 3,
            4000 - i,
            i % 3
        ));
    }
    xml.push_str("</device>\n<device dev_id=\"9\" mapped_blocks=\"10\" transaction=\"1\" creation_time=\"1\" snap_time=\"1\">\n<range_mapping origin_begin=\"100\" data_begin=\"10\" length=\"10\" time=\"2\"/>\n</device>\n</superblock>\n");
    let x = dir.path().join("m.xml");
    std::fs::write(&x, &xml).unwrap();
    let meta = image(dir.path(), "m.img", 4 * MIB);
    sh(
        "thin_restore",
        &["-i", x.to_str().unwrap(), "-o", meta.to_str().unwrap()],
    );
    let m = std::fs::read(&meta).unwrap();
    let sb = thin_superblock(&m).unwrap();
    assert_eq!((sb.data_block_bytes, sb.transaction_id), (256 * 512, 7));
    for dev in ["5", "9"] {
        let dump = String::from_utf8_lossy(
            &sh("thin_dump", &["--dev-id", dev, meta.to_str().unwrap()]).stdout,
        )
        .into_owned();
        let map = thin_device_map(&m, &sb, dev.parse().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(map.blocks, dumped(&dump), "device {dev}");
    }
}
