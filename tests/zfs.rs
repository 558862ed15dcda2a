//! ZFS vdev labels made by the real tool: Debian's zfs-fuse (pool version
//! 23; OpenZFS's own utilities are not in the archive these machines
//! reach) creates pools with `-o ashift=9`, `12` and `13` on image files
//! and on loop devices, exports them, and `check`'s `zfs` object must say
//! what `zdb -l` says for every field both show. A label copy damaged
//! afterwards is a finding, the other copies still read; all four
//! damaged is no ZFS at all.
//!
//! Needs root, loop devices and zfs-fuse (its daemon is started here when
//! none runs, and stopped again).

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const MIB: u64 = 1 << 20;

/// The tests of this file one at a time: each may start the one zfs-fuse
/// daemon and stops it when it ends, so two at once would start a second
/// (which fails: the socket is taken) or stop it under the other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The zfs-fuse daemon: the one running, or one started here and
/// stopped (by its own pid) on drop.
struct Daemon {
    started: Option<u32>,
}

impl Daemon {
    fn ensure(dir: &Path) -> Daemon {
        require_root();
        for t in ["zfs-fuse", "zpool", "zdb"] {
            require_tool(t);
        }
        assert!(
            Path::new("/dev/fuse").exists(),
            "zfs-fuse needs /dev/fuse (modprobe fuse)"
        );
        if sh_status("zpool", &["list"]).0 == 0 {
            return Daemon { started: None };
        }
        let pidfile = dir.join("zfs-fuse.pid");
        let (code, err) = sh_status("zfs-fuse", &["-p", pidfile.to_str().unwrap()]);
        assert_eq!(code, 0, "zfs-fuse would not start: {err}");
        let pid = (0..100)
            .find_map(|_| {
                let p = std::fs::read_to_string(&pidfile)
                    .ok()
                    .and_then(|s| s.trim().parse::<u32>().ok());
                if p.is_none() || sh_status("zpool", &["list"]).0 != 0 {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    return None;
                }
                p
            })
            .expect("zfs-fuse started but zpool cannot reach it");
        Daemon { started: Some(pid) }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(pid) = self.started {
            let _ = Command::new("kill").arg(pid.to_string()).output();
            // It takes seconds to go; a next run must not meet it going.
            let proc = format!("/proc/{pid}");
            for _ in 0..300 {
                if !Path::new(&proc).exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
}

/// A pool made for a test: destroyed on drop if a failure left it
/// imported.
struct Pool {
    name: String,
}

impl Pool {
    fn create(name: &str, args: &[&str]) -> Pool {
        let mut full: Vec<&str> = Vec::new();
        // `-o` options first, then the name, then the vdevs.
        let (opts, vdevs): (Vec<&str>, Vec<&str>) = {
            let mut opts = Vec::new();
            let mut rest = Vec::new();
            let mut it = args.iter();
            while let Some(&x) = it.next() {
                if x == "-o" {
                    opts.push(x);
                    opts.push(*it.next().unwrap());
                } else {
                    rest.push(x);
                }
            }
            (opts, rest)
        };
        full.push("create");
        full.extend(opts);
        full.push(name);
        full.extend(vdevs);
        let (code, err) = sh_status("zpool", &full);
        assert_eq!(code, 0, "zpool {full:?}: {err}");
        Pool { name: name.into() }
    }

    fn export(&self) {
        let (code, err) = sh_status("zpool", &["export", &self.name]);
        assert_eq!(code, 0, "zpool export {}: {err}", self.name);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if sh_status("zpool", &["list", &self.name]).0 == 0 {
            let _ = sh_status("zpool", &["destroy", "-f", &self.name]);
        }
    }
}

/// `zdb -l`'s labels: for each "LABEL n" section, its `key: value` lines
/// as dotted paths (`vdev_tree.children[1].path`), quotes taken off; a
/// label zdb could not read has none.
fn zdb_labels(target: &str) -> Vec<Vec<(String, String)>> {
    let out = sh("zdb", &["-l", target]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut labels: Vec<Vec<(String, String)>> = Vec::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        if line.starts_with("LABEL ") {
            labels.push(Vec::new());
            path.clear();
            continue;
        }
        let Some(cur) = labels.last_mut() else {
            continue;
        };
        let indent = line.len() - line.trim_start().len();
        let Some((k, v)) = line.trim().split_once(':') else {
            continue;
        };
        if k.contains(' ') {
            continue; // "failed to unpack label 1" and the like
        }
        while path.last().is_some_and(|(i, _)| *i >= indent) {
            path.pop();
        }
        let prefix: Vec<&str> = path.iter().map(|(_, p)| p.as_str()).collect();
        let key = if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{}.{k}", prefix.join("."))
        };
        let v = v.trim();
        if v.is_empty() {
            path.push((indent, k.to_string()));
        } else {
            cur.push((key, v.trim_matches('\'').to_string()));
        }
    }
    labels
}

/// The value our `zfs` object gives for a zdb key, as zdb prints it;
/// None for a key the reader does not take (listed, so a new one zdb
/// shows is noticed).
fn ours(zfs: &Value, key: &str) -> Option<String> {
    const NOT_READ: &[&str] = &["metaslab_array", "metaslab_shift", "create_txg", "DTL"];
    let (dir, last) = key.rsplit_once('.').unwrap_or(("", key));
    if NOT_READ.contains(&last) {
        return None;
    }
    let mut v = zfs;
    for part in dir.split('.').filter(|p| !p.is_empty()) {
        v = match part.split_once('[') {
            Some((name, idx)) => {
                let i: usize = idx.trim_end_matches(']').parse().unwrap();
                &v[name][i]
            }
            None => &v[part],
        };
    }
    let field = match (dir.is_empty(), last) {
        (true, "name") => "pool_name",
        (false, "asize") => "asize_bytes",
        (_, f) => f,
    };
    let x = &v[field];
    Some(match x {
        Value::Bool(b) => u8::from(*b).to_string(),
        Value::String(s) => s.clone(),
        Value::Null => panic!("zdb shows {key} but our zfs object has no {field}: {zfs:#}"),
        x => x.to_string(),
    })
}

/// `check --json` of `target`: its ZFS layer (the first).
fn zfs_layer(target: &str) -> Value {
    let (doc, _) = run_json(&["check", target]);
    zfs_layer_of(&doc, target)
}

/// The ZFS layer of a check document of `target`.
fn zfs_layer_of(doc: &Value, target: &str) -> Value {
    fn find(v: &Value) -> Option<&Value> {
        match v {
            Value::Object(m) if m.get("kind").and_then(Value::as_str) == Some("zfs-member") => {
                Some(v)
            }
            Value::Object(m) => m.values().find_map(find),
            Value::Array(a) => a.iter().find_map(find),
            _ => None,
        }
    }
    find(doc)
        .unwrap_or_else(|| panic!("no zfs-member layer in the check of {target}: {doc:#}"))
        .clone()
}

/// Every field zdb shows for every label it reads is ours too; the label
/// copies zdb reads are the ones we call sound.
fn assert_as_zdb(target: &str) -> Value {
    let layer = zfs_layer(target);
    let zfs = &layer["zfs"];
    let labels = zdb_labels(target);
    assert_eq!(labels.len(), 4, "zdb -l {target} shows 4 labels");
    let mut compared = 0;
    for (i, fields) in labels.iter().enumerate() {
        let sound = zfs["labels"][i]["sound"].as_bool().unwrap();
        assert_eq!(
            sound,
            !fields.is_empty(),
            "label {i} of {target}: zdb read {} fields, ours says sound = {sound}: {zfs:#}",
            fields.len()
        );
        if !sound || zfs["label"].as_u64() != Some(i as u64) {
            continue;
        }
        for (k, v) in fields {
            if let Some(o) = ours(zfs, k) {
                assert_eq!(&o, v, "{target}: {k} is {v} in zdb -l, {o} in ours");
                compared += 1;
            }
        }
    }
    assert!(
        compared >= 15,
        "only {compared} fields compared for {target}"
    );
    layer
}

#[test]
fn zfs_fuse_pools_read_as_zdb_shows_them() {
    let dir = tempfile::tempdir().unwrap();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let _daemon = Daemon::ensure(dir.path());
    let tag = std::process::id();
    let p = |n: &str| dir.path().join(n).display().to_string();

    // Files at ashift 9 and 12, the file's size off the 256 KiB grid for
    // one (its end labels sit before the aligned end).
    let f9 = image(dir.path(), "f9.img", 256 * MIB);
    let f12 = dir.path().join("f12.img");
    std::fs::File::create(&f12)
        .unwrap()
        .set_len(128 * MIB + 100 * 1024)
        .unwrap();
    let pool9 = Pool::create(&format!("da{tag}f9"), &["-o", "ashift=9", &p("f9.img")]);
    let pool12 = Pool::create(&format!("da{tag}f12"), &["-o", "ashift=12", &p("f12.img")]);
    pool9.export();
    pool12.export();
    let l = assert_as_zdb(f9.to_str().unwrap());
    assert_eq!(l["zfs"]["vdev_tree"]["ashift"], 9);
    assert_eq!(l["zfs"]["version"], 23);
    assert_eq!(l["zfs"]["state_name"], "exported");
    assert_eq!(l["findings"].as_array().unwrap().len(), 0, "{l:#}");
    // Judged over a 4096-byte physical block: ashift 9 is an error,
    // ashift 12 fits.
    let (doc, _) = run_json(&["check", f9.to_str().unwrap(), "--topology", "pbs=4096"]);
    assert!(
        doc.to_string().contains("\"zfs-ashift-below-physical\""),
        "{doc:#}"
    );
    // plan moves nothing on a whole-device pool: it names what to do by
    // hand (a new pool at ashift 12, send and receive), exits 1 and writes
    // no script, even when one is asked for.
    let script = dir.path().join("fix.sh");
    let (doc, code) = run_json(&[
        "plan",
        f9.to_str().unwrap(),
        "--topology",
        "pbs=4096",
        "--script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{doc:#}");
    let t = &doc["targets"][0];
    assert_eq!(t["refused"].as_array().unwrap().len(), 0, "{doc:#}");
    assert_eq!(t["steps"].as_array().unwrap().len(), 0, "{doc:#}");
    // Steps in words: a new pool's name and devices are the user's to
    // choose, so they are no command that runs as printed.
    let commands = t["manual"][0]["why"].to_string();
    assert!(
        commands.contains("zpool create -o ashift=12")
            && commands.contains(&format!("zfs send -R da{tag}f9@move"))
            && !commands.contains(" POOL@"),
        "{doc:#}"
    );
    assert!(!script.exists());
    // check names that plan as its next step, and no script for it.
    let (out, _) = run(&["check", f9.to_str().unwrap(), "--topology", "pbs=4096"]);
    let next = format!("next: diskalign plan {} --topology pbs=4096", f9.display());
    assert!(out.contains(&next) && !out.contains("--script"), "{out}");
    let (doc, _) = run_json(&["check", f12.to_str().unwrap(), "--topology", "pbs=4096"]);
    assert!(
        !doc.to_string().contains("\"zfs-ashift-below-physical\""),
        "{doc:#}"
    );
    let l = assert_as_zdb(f12.to_str().unwrap());
    assert_eq!(l["zfs"]["vdev_tree"]["ashift"], 12);
    // An image's device is unknown: ashift 12 is not more than it needs.
    assert_eq!(l["findings"].as_array().unwrap().len(), 0, "{l:#}");
    // Over a device given as 512/512 it is: information, with the space
    // a 512-byte block takes.
    let (doc, code) = run_json(&["check", f12.to_str().unwrap(), "--topology", "pbs=512"]);
    assert_eq!(code, 0, "{doc:#}");
    let above = &zfs_layer_of(&doc, f12.to_str().unwrap())["findings"][0];
    assert_eq!(above["code"], "zfs-ashift-above-physical", "{doc:#}");
    assert_eq!(above["severity"], "info", "{doc:#}");
    assert_eq!(above["facts"]["amplification"], 8.0, "{doc:#}");
    assert_eq!(
        l["zfs"]["labels"][3]["offset_bytes"],
        128 * MIB - 256 * 1024 + 16 * 1024
    );

    // A mirror of two loop devices at ashift 12, and an older pool
    // version (10) at ashift 13 on a third.
    let (a, b, c) = (
        image(dir.path(), "a.img", 128 * MIB),
        image(dir.path(), "b.img", 128 * MIB),
        image(dir.path(), "c.img", 128 * MIB),
    );
    let (la, lb, lc) = (
        LoopDev::attach(&a, None),
        LoopDev::attach(&b, None),
        LoopDev::attach(&c, None),
    );
    let mirror = Pool::create(
        &format!("da{tag}m"),
        &["-o", "ashift=12", "mirror", &la.dev, &lb.dev],
    );
    let old = Pool::create(
        &format!("da{tag}v10"),
        &["-o", "version=10", "-o", "ashift=13", &lc.dev],
    );
    mirror.export();
    old.export();
    let l = assert_as_zdb(&lb.dev);
    let tree = &l["zfs"]["vdev_tree"];
    assert_eq!(
        (tree["type"].as_str(), tree["ashift"].as_u64()),
        (Some("mirror"), Some(12))
    );
    assert_eq!(tree["children"][1]["path"], lb.dev.as_str());
    assert_eq!(l["zfs"]["guid"], tree["children"][1]["guid"]);
    let l = assert_as_zdb(&lc.dev);
    assert_eq!(l["zfs"]["version"], 10);
    assert_eq!(l["zfs"]["vdev_tree"]["ashift"], 13);

    // The same loop devices' images read as files.
    assert_as_zdb(a.to_str().unwrap());

    // A damaged copy (label 1's configuration zeroed): zdb cannot read
    // it, ours says which and still reads the rest, with a finding at
    // that byte.
    let f = std::fs::OpenOptions::new().write(true).open(&f9).unwrap();
    use std::os::unix::fs::FileExt;
    f.write_all_at(&[0u8; 4096], 256 * 1024 + 16 * 1024)
        .unwrap();
    let l = assert_as_zdb(f9.to_str().unwrap());
    assert_eq!(l["zfs"]["labels"][1]["sound"], false);
    assert_eq!(l["status"], "damaged", "{l:#}");
    let finding = &l["findings"][0];
    assert_eq!(finding["code"], "metadata-invalid", "{l:#}");
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("ZFS label 1 at byte"),
        "{finding:#}"
    );
    // All four: no ZFS.
    for at in [
        0,
        256 * 1024,
        256 * MIB - 512 * 1024,
        256 * MIB - 256 * 1024,
    ] {
        f.write_all_at(&[0u8; 4096], at + 16 * 1024).unwrap();
    }
    let (doc, _) = run_json(&["check", f9.to_str().unwrap()]);
    assert!(
        !doc.to_string().contains("zfs-member"),
        "four damaged labels still read as ZFS: {doc:#}"
    );
}

/// A pool on a partition at sector 63 of a 4 KiB-physical disk: its
/// allocations, 4 MiB into the partition, inherit the partition's offset;
/// plan's script moves the partition to 1 MiB and the pool comes through
/// whole: zdb reads its four labels where it now is, as we do, and check
/// finds nothing left to say.
#[test]
fn a_pool_on_a_partition_off_4k_moves_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let _daemon = Daemon::ensure(dir.path());
    let file = image(dir.path(), "pool.img", 128 * MIB);
    let name = format!("da{}mv", std::process::id());
    let pool = Pool::create(&name, &["-o", "ashift=12", file.to_str().unwrap()]);
    pool.export();
    let disk = image(dir.path(), "disk.img", 200 * MIB);
    sfdisk(&disk, "label: dos\nstart=63, size=262144, type=bf\n");
    let copy = Command::new("dd")
        .args([
            &format!("if={}", file.display()),
            &format!("of={}", disk.display()),
            "bs=512",
            "seek=63",
            "conv=notrunc",
            "status=none",
        ])
        .status()
        .unwrap();
    assert!(copy.success());
    let d = disk.to_str().unwrap();
    let (doc, _) = run_json(&["check", d, "--topology", "pbs=4096"]);
    assert!(
        codes(partition(&doc, 1)).contains(&"start-misaligned".to_string()),
        "{doc:#}"
    );
    let zfs = zfs_layer(d);
    assert_eq!(zfs["data_offset_bytes"], 4 * MIB, "{zfs:#}");
    // The start is the partition's to answer; an image's unknown device
    // is not said to need less than ashift 12.
    assert_eq!(zfs["findings"].as_array().unwrap().len(), 0, "{zfs:#}");

    let script = dir.path().join("fix.sh");
    let (_, code) = run(&[
        "plan",
        d,
        "--topology",
        "pbs=4096",
        "--script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    let out = Command::new("sh")
        .arg(&script)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let moved = dir.path().join("moved.img");
    let cut = Command::new("dd")
        .args([
            &format!("if={}", disk.display()),
            &format!("of={}", moved.display()),
            "bs=512",
            "skip=2048",
            "count=262144",
            "status=none",
        ])
        .status()
        .unwrap();
    assert!(cut.success());
    let l = assert_as_zdb(moved.to_str().unwrap());
    assert_eq!(l["zfs"]["pool_name"], name.as_str());
    let (doc, code) = run_json(&["check", d, "--topology", "pbs=4096"]);
    assert_eq!(code, 0, "{doc:#}");
}

/// `check --probe RUN.json`: the unit a probe bracketed on the device is
/// evidence where the device reports less. The run is a real probe of the
/// pool's file whose verdict is then set to "bracketed at 4 KiB" (a
/// regular file has no unit to find: the evidence is synthetic, the
/// reading of it is not). Its sentence says which evidence decided, the
/// next step repeats --probe and runs, and a file that is no probe run is
/// refused in one line.
#[test]
fn a_probe_run_is_evidence_for_the_ashift() {
    let dir = tempfile::tempdir().unwrap();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let _daemon = Daemon::ensure(dir.path());
    let sparse = image(dir.path(), "sparse.img", 128 * MIB);
    let name = format!("da{}pr", std::process::id());
    let pool = Pool::create(&name, &["-o", "ashift=9", sparse.to_str().unwrap()]);
    pool.export();
    // probe refuses a sparse file: read holes never reach a device.
    let file = dir.path().join("pool.img");
    let (code, err) = sh_status(
        "cp",
        &[
            "--sparse=never",
            sparse.to_str().unwrap(),
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let f = file.to_str().unwrap();
    // On its device, not in the page cache (delayed allocation is refused).
    let (code, err) = sh_status("sync", &[f]);
    assert_eq!(code, 0, "{err}");
    let saved_probe = dir.path().join("probe.json");
    let json = format!("--json={}", saved_probe.display());
    let args = [
        "probe",
        f,
        "--bs",
        "4k",
        "--offsets",
        "0,512",
        "--runtime",
        "0.05s",
    ];
    let (_, _, code) = run_full(&[&args[..], &["--rounds", "3", &json]].concat());
    // Whatever it decides on a file (noise can look like a penalty on a
    // busy host): it ran and saved its run; bit 2 would mean it did not.
    assert_eq!(code & 2, 0, "probe exited {code}");
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&saved_probe).unwrap()).unwrap();
    doc["inference"]["confidence"] = "bracketed".into();
    doc["inference"]["effective_unit_bytes"] = 4096.into();
    let measured = dir.path().join("measured.json");
    std::fs::write(&measured, doc.to_string()).unwrap();
    let m = measured.to_str().unwrap();

    // Without it, the 512-byte file gives ashift 9 no fault.
    let (plain, code) = run_json(&["check", f]);
    assert_eq!(code, 0, "{plain:#}");
    let (doc, code) = run_json(&["check", f, "--probe", m]);
    assert_eq!(code, 1, "{doc:#}");
    let zfs = &zfs_layer_of(&doc, f)["findings"][0];
    assert_eq!(zfs["code"], "zfs-ashift-below-physical", "{doc:#}");
    assert_eq!(zfs["facts"]["measured_by"], m);
    assert_eq!(zfs["facts"]["physical_block_bytes"], 4096);
    assert!(zfs["message"]
        .as_str()
        .unwrap()
        .contains("probe bracketed a 4096-byte unit"));
    let next = doc["targets"][0]["next"].as_str().unwrap().to_string();
    assert_eq!(next, format!("diskalign plan {f} --probe {m}"));
    let words: Vec<&str> = next.split(' ').skip(1).collect();
    let (out, code) = run(&words);
    assert_eq!(code, 1, "{out}");
    let unwrapped = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(unwrapped.contains("zpool create -o ashift=12"), "{out}");

    // A saved check run is no probe run: one line, exit 2.
    let saved = dir.path().join("check.json");
    let (_, code) = run(&["check", f, &format!("--json={}", saved.display())]);
    assert_eq!(code, 0);
    let (_, err, code) = run_full(&["check", f, "--probe", saved.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not a probe run"), "{err}");
}
