//! `diskalign compare` of two probe runs on real loop devices: the same
//! image with direct I/O off and on (`losetup --direct-io`). The
//! environment must name the difference (sysfs `loop/dio`), the backing
//! file and its filesystem (as findmnt sees it), and the answer, B/A over
//! every cell with its interval, comes first.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;

/// `image` on a loop device with direct I/O `on` or off; detached on drop.
fn attach(image: &Path, dio: &str) -> LoopDev {
    let out = sh(
        "losetup",
        &[
            "-f",
            "--show",
            &format!("--direct-io={dio}"),
            image.to_str().unwrap(),
        ],
    );
    LoopDev {
        dev: String::from_utf8_lossy(&out.stdout).trim().to_string(),
    }
}

/// A short probe of `dev`, saved as JSON in `dir/name`.
fn probe(dir: &Path, name: &str, dev: &str) -> String {
    let args = [
        "probe",
        dev,
        "--bs",
        "4k",
        "--offsets",
        "0,512",
        "--runtime",
        "10ms",
        "--warmup",
        "2ms",
        "--rounds",
        "3",
        "--json",
    ];
    let (out, err, code) = run_full(&args);
    // Bits 1 (a penalty) and 4 (inconclusive) are verdicts; 2 is a failure.
    assert!(code >= 0 && code & 2 == 0, "probe exited {code}: {err}");
    let path = dir.join(name);
    std::fs::write(&path, out).unwrap();
    path.display().to_string()
}

fn field<'v>(c: &'v Value, name: &str) -> &'v Value {
    c["environment"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["field"] == name)
        .unwrap_or_else(|| panic!("no field {name}: {c:#}"))
}

#[test]
fn direct_io_on_and_off_is_named_and_the_answer_comes_first() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "d.img", 64 << 20);
    let (a, b) = {
        let off = attach(&img, "off");
        let a = probe(dir.path(), "a.json", &off.dev);
        drop(off);
        let on = attach(&img, "on");
        let b = probe(dir.path(), "b.json", &on.dev);
        (a, b)
    };
    // What the probe recorded, against the kernel's and findmnt's word.
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&b).unwrap()).unwrap();
    let env = &doc["environment"];
    assert_eq!(env["loop_direct_io"], true, "{env:#}");
    assert_eq!(env["loop_backing_file"], img.to_str().unwrap());
    let fstype = sh(
        "findmnt",
        &["-n", "-o", "FSTYPE", "-T", img.to_str().unwrap()],
    );
    let fstype = String::from_utf8_lossy(&fstype.stdout).trim().to_string();
    assert!(!fstype.is_empty());
    assert_eq!(env["loop_backing_fs"], fstype.as_str());

    let (out, err, _) = run_full(&["compare", &a, &b, "--json"]);
    let c: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    let dio = field(&c, "loop_direct_io");
    assert_eq!(
        (&dio["a"], &dio["b"], &dio["differs"]),
        (&"false".into(), &"true".into(), &true.into())
    );
    assert_eq!(field(&c, "loop_backing_fs")["differs"], false);
    assert!(
        c["summary"].as_str().unwrap().contains("loop_direct_io"),
        "{}",
        c["summary"]
    );
    // The answer: two cells of randread (no --destructive, no writes),
    // the pattern's geometric mean with an interval, and the overall line.
    let overall = &c["overall"];
    assert_eq!(overall["cells"], 2);
    assert!(overall["ci95"].is_array(), "{overall:#}");
    let patterns = c["patterns"].as_array().unwrap();
    assert_eq!(patterns.len(), 1);
    for p in patterns {
        let [lo, g, hi] =
            [&p["ci95"][0], &p["geo_mean"], &p["ci95"][1]].map(|x| x.as_f64().unwrap());
        assert!(lo <= g && g <= hi, "{p:#}");
        assert!(p["sentence"]
            .as_str()
            .unwrap()
            .contains(p["pattern"].as_str().unwrap()));
    }
    // The human report says it first; -q says it and the summary.
    let (out, _, _) = run_full(&["compare", &a, &b]);
    // (Wrapped at 100 columns when piped: the lines before A's.)
    let head: Vec<&str> = out.lines().take_while(|l| !l.starts_with("A: ")).collect();
    assert_eq!(head.join(" "), overall["sentence"].as_str().unwrap());
    // Every cell measured in the same rounds on a side: the rounds' grid
    // means give the interval; else each cell's rounds, pooled.
    let same_rounds = |path: &str| {
        let d: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let n: Vec<usize> = d["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["rounds"].as_array().unwrap().len())
            .collect();
        n.iter().all(|x| *x == n[0])
    };
    let want = if same_rounds(&a) && same_rounds(&b) {
        "rounds"
    } else {
        "pooled"
    };
    assert_eq!(overall["method"], want);
    assert!(out.contains("loop_direct_io"), "{out}");
    let (out, _, _) = run_full(&["compare", &a, &b, "-q"]);
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    // -q: the answer, the summary and the outcome line.
    let o = &c["outcome"];
    let want = format!(
        "{} {} outcome: cells: {} improved, {} regressed, {} unchanged; B is {}worse than A; exit status {}",
        overall["sentence"].as_str().unwrap(),
        c["summary"].as_str().unwrap(),
        o["improved"],
        o["regressed"],
        o["unchanged"],
        if o["regressed"] == 0 { "not " } else { "" },
        o["exit_status"]
    );
    assert_eq!(words(&out), words(&want));
}

/// `check --json` of `target` saved as `dir/name`.
fn checked(dir: &Path, name: &str, target: &str) -> String {
    let (out, _) = run(&["check", target, "--json"]);
    let p = dir.join(name);
    std::fs::write(&p, out).unwrap();
    p.display().to_string()
}

/// Two check runs of one disk, before and after the plan's script fixed
/// it: B improves on A (exit 1, `outcome.improved`); compared the other
/// way, B is worse (exit 1 | 4); a run with itself is the same (0). A
/// disk whose table was made again under the same name is compared with
/// a warning.
#[test]
fn a_fix_and_a_regression_have_their_exit_statuses() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "disk.img", 64 << 20);
    sfdisk(
        &img,
        "label: dos\nstart=63, size=40000, type=83\nstart=43008, type=83\n",
    );
    let p = img.to_str().unwrap();
    let before = checked(dir.path(), "before.json", p);
    let script = dir.path().join("fix.sh");
    let (_, code) = run(&["plan", p, "--script", script.to_str().unwrap()]);
    assert_eq!(code, 1);
    let (code, out) = sh_status("sh", &[script.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    let after = checked(dir.path(), "after.json", p);
    let outcome = |a: &str, b: &str| {
        let (v, code) = run_json(&["compare", a, b]);
        (v["outcome"].clone(), code)
    };
    let (o, code) = outcome(&before, &after);
    assert_eq!(code, 1, "{o}");
    assert_eq!(
        (o["improved"].as_u64(), o["regressed"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(o["exit_status"], 1);
    let (o, code) = outcome(&after, &before);
    assert_eq!(code, 5, "B is worse than A: {o}");
    assert_eq!(
        (o["improved"].as_u64(), o["regressed"].as_u64()),
        (Some(0), Some(1))
    );
    let (o, code) = outcome(&after, &after);
    assert_eq!((code, o["unchanged"].as_u64()), (0, Some(1)));
    let (human, code) = run(&["compare", &after, &before]);
    assert_eq!(code, 5);
    assert!(
        human.contains("B is worse than A; exit status 5"),
        "{human}"
    );

    // The same name, a table made again: a warning, once, and compared.
    sfdisk(&img, "label: dos\nstart=2048, size=40960, type=83\n");
    let relabelled = checked(dir.path(), "relabelled.json", p);
    let (out, err, _) = run_full(&["compare", &after, &relabelled]);
    assert!(out.contains("may not be the same disk (PTUUID"), "{out}");
    assert!(err.is_empty(), "said once, in the report: {err}");
    let (_, err, _) = run_full(&["compare", &after, &relabelled, "--json"]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("may not be the same disk"), "{err}");
}
