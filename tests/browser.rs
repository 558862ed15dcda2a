//! The HTML report in a real browser: the pages of real check, topology,
//! plan, probe (one target and two), fio and compare runs are rendered by
//! headless Chromium. Each screenshot (target/screenshots/) must show
//! something, the DOM must hold the figures with the expected cells,
//! partitions and layers, the page must fetch nothing, and the standard
//! grid's page must stay under 1 MB.

mod common;
use common::browser::{self, assert_not_blank, assert_self_contained, count, Rendered};
use common::*;
use std::path::{Path, PathBuf};

/// The size budget of one run's page.
const BUDGET: u64 = 1 << 20;

/// A short probe grid: enough for every figure, fast enough for CI.
const FAST: &[&str] = &[
    "--bs",
    "4k,64k",
    "--offsets",
    "0,512,4k",
    "--runtime",
    "10ms",
    "--warmup",
    "2ms",
    "--rounds",
    "3",
];

/// Runs diskalign with `args` (exit status 0, 1, or a probe's 4 for
/// inconclusive), saving stdout to `out`.
fn save(dir: &Path, out: &str, args: &[&str]) -> PathBuf {
    let (text, err, code) = run_full(args);
    assert!(code & !5 == 0, "diskalign {args:?} exited {code}: {err}");
    let path = dir.join(out);
    std::fs::write(&path, text).unwrap();
    path
}

/// `diskalign report RUNS --output NAME.html`, then the page in the browser.
fn report(dir: &Path, name: &str, runs: &[&Path], height: u32) -> (PathBuf, Rendered) {
    let page = dir.join(format!("{name}.html"));
    let mut args = vec!["report".to_string()];
    args.extend(runs.iter().map(|p| p.display().to_string()));
    args.extend(["--output".into(), page.display().to_string()]);
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (out, err, code) = run_full(&a);
    assert_eq!(code, 0, "report failed: {err}");
    assert!(out.is_empty(), "report --output printed to stdout: {out}");
    let size = std::fs::metadata(&page).unwrap().len();
    assert!(size < BUDGET, "{name}.html is {size} bytes");
    let r = browser::render(&page, name, 1280, height);
    assert_self_contained(&r);
    assert_not_blank(&r, 0.02);
    (page, r)
}

#[test]
fn the_detectors_catch_a_page_that_fetches() {
    // The checks below are only worth something if they can fail: a page
    // with a remote image and style must show up in both.
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("control.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><p>control</p><img src=\"http://198.51.100.7/x.png\">\
         <link rel=\"stylesheet\" href=\"https://198.51.100.8/a.css\"></body></html>",
    )
    .unwrap();
    let r = browser::render(&page, "control", 400, 300);
    assert!(
        r.requests
            .iter()
            .any(|u| u.starts_with("http://198.51.100.7/")),
        "the net log missed the image: {:?}",
        r.requests
    );
    let caught = std::panic::catch_unwind(|| assert_self_contained(&r));
    assert!(caught.is_err(), "the DOM scan missed the remote resources");
}

/// A 64 MiB image partitioned by sfdisk.
fn sfdisk_image(dir: &Path, name: &str, script: &str) -> PathBuf {
    let img = image(dir, name, 64 << 20);
    sfdisk(&img, script);
    img
}

#[test]
fn check_pages_draw_disks_boundaries_and_stacks() {
    let dir = tempfile::tempdir().unwrap();
    // A partition at sector 63 (the old DOS start) and one at 32 MiB; an
    // image with a striped LV on two PVs (lvcreate, no device-mapper).
    let old = sfdisk_image(dir.path(), "old.img", "start=63,size=50000\nstart=65536\n");
    // An ext4 in partition 1: it inherits the partition's start.
    let o = format!("offset={}", 63 * 512);
    sh(
        "mkfs.ext4",
        &["-q", "-F", "-E", &o, old.to_str().unwrap(), "16M"],
    );
    let lv = common::lvm::striped_image(&dir, 2048 + 24 * 2048 + 7);
    let (o, l) = (old.display().to_string(), lv.display().to_string());
    let saved = save(dir.path(), "check.json", &["check", &o, &l, "--json"]);
    let (_, r) = report(dir.path(), "check", &[&saved], 3000);
    // The old image's map: partition 1 misaligned at byte 32256 (marked),
    // partition 2 aligned at 32 MiB.
    let map = browser::figure(&r.dom, "run1-map-0");
    assert!(map.contains(
        "<g class=\"partition\" data-partition=\"1\" data-start=\"32256\" data-end=\"25632255\" data-status=\"misaligned\""
    ));
    assert!(map.contains("data-partition=\"2\" data-start=\"33554432\""));
    assert!(
        map.contains("data-mark=\"start-misaligned\" data-partition=\"1\" data-offset=\"32256\"")
    );
    // Its start against the grids: 3584 bytes past a 4 KiB line.
    let zoom = browser::figure(&r.dom, "run1-zoom-0-p1-start");
    assert!(zoom.contains("data-grid=\"4k\" data-grain=\"4096\""));
    assert!(zoom.contains("data-below=\"28672\" data-above=\"32768\" data-on=\"false\""));
    // The ext4 above it is drawn as inheriting, and says from what.
    let stack = browser::figure(&r.dom, "run1-stack-0");
    assert!(stack.contains("data-status=\"inherits\" data-inherits-from=\"partition 1\""));
    assert!(r.dom.contains("✗ inherits (the offset of partition 1)"));
    // The LV image's stack: both PVs, the LV and its two legs.
    let stack = browser::figure(&r.dom, "run1-stack-1");
    assert_eq!(count(stack, "data-kind=\"lvm-pv\""), 2);
    assert_eq!(count(&r.dom, "<g class=\"layer\" data-kind=\"lvm-leg\""), 2);
    assert!(r.dom.contains("id=\"run1-tools-0\""));
    assert!(r.dom.contains("id=\"run1-findings-error\""));
    // The next step, as the check printed it: it runs as it stands.
    assert!(
        r.dom.contains(&format!("Next: diskalign plan {o}")),
        "no next step"
    );
    // --html on the command writes the same figures.
    let direct = dir.path().join("direct.html");
    let d = direct.display().to_string();
    let (_, _, code) = run_full(&["check", &o, &l, "--html", &d]);
    assert_eq!(code, 1);
    let page = std::fs::read_to_string(&direct).unwrap();
    assert_eq!(count(&page, "<svg"), count(&r.dom, "<svg"));
}

#[test]
fn plan_pages_draw_each_disk_now_and_after() {
    let dir = tempfile::tempdir().unwrap();
    // Partition 1 at sector 63 (moved to 1 MiB by the plan), partition 2
    // at 32 MiB (kept).
    let old = sfdisk_image(dir.path(), "old.img", "start=63,size=50000\nstart=65536\n");
    let o = old.display().to_string();
    let page = dir.path().join("plan.html");
    let p = page.display().to_string();
    let (_, err, code) = run_full(&["plan", &o, "--html", &p]);
    assert_eq!(code, 1, "a plan with changes: {err}");
    let size = std::fs::metadata(&page).unwrap().len();
    assert!(size < BUDGET, "plan.html is {size} bytes");
    let r = browser::render(&page, "plan", 1280, 1600);
    assert_self_contained(&r);
    assert_not_blank(&r, 0.02);
    // Now: check's own map, partition 1 misaligned and marked.
    let now = browser::figure(&r.dom, "run1-now-0");
    assert!(now.contains(
        "<g class=\"partition\" data-partition=\"1\" data-start=\"32256\" data-end=\"25632255\" data-status=\"misaligned\""
    ));
    assert!(now.contains("data-mark=\"start-misaligned\" data-partition=\"1\""));
    assert!(now.contains("data-partition=\"2\" data-start=\"33554432\""));
    // After: partition 1 at 1 MiB, aligned, no mark; its end on 1 MiB
    // too (sgdisk's alignment, which the move raises to 1 MiB, found it
    // aligned before: the room up to 26 MiB is free); 2 kept.
    let after = browser::figure(&r.dom, "run1-after-0");
    let end = (26u64 << 20) - 1;
    assert!(after.contains(&format!(
        "<g class=\"partition\" data-partition=\"1\" data-start=\"1048576\" data-end=\"{end}\" data-status=\"aligned\""
    )));
    assert!(!after.contains("data-mark="));
    assert!(after.contains("data-partition=\"2\" data-start=\"33554432\""));
    // The numbers under each map, the moves and the steps in order.
    assert!(r.dom.contains("id=\"run1-now-0-table\""));
    assert!(r.dom.contains("id=\"run1-after-0-table\""));
    assert!(r.dom.contains("id=\"run1-moves-0\""));
    let steps = &r.dom[r.dom.find("id=\"run1-steps-0\"").expect("steps table")..];
    let copy = steps
        .find("copy 24.4 MiB from byte 32256 to byte 1048576")
        .unwrap();
    let entry = steps.find("rewrite its entry as start=2048").unwrap();
    assert!(steps.find("back up the table").unwrap() < copy && copy < entry);
    // --format html prints the same page.
    let (printed, _, code) = run_full(&["plan", &o, "--format", "html"]);
    assert_eq!(code, 1);
    let written = std::fs::read_to_string(&page).unwrap();
    assert_eq!(count(&printed, "<svg"), count(&written, "<svg"));
    assert_eq!(count(&written, "<svg"), 2);
}

#[test]
fn topology_pages_show_sysfs_beside_the_ioctls() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/sysfs/usb-bridge"
    );
    let usb = save(
        dir.path(),
        "usb.json",
        &["--sysfs-root", fixture, "topology", "--json"],
    );
    let img = image(dir.path(), "t.img", 16 << 20);
    let l = LoopDev::attach(&img, Some(4096));
    let name = l.dev.trim_start_matches("/dev/");
    let live = save(dir.path(), "live.json", &["topology", name, "--json"]);
    let declared = declared_topology(dir.path());
    // Three runs on one page: their ids must not collide.
    let (_, r) = report(dir.path(), "topology", &[&usb, &live, &declared], 2900);
    assert!(r.dom.contains("id=\"run1\"") && r.dom.contains("id=\"run2\""));
    // The bridge's optimal I/O size is marked; the loop device's 4096-byte
    // sectors are read both ways.
    let usb = browser::figure(&r.dom, "run1-grains-0");
    assert!(usb.contains("data-limit=\"optimal_io_size\" data-source=\"sysfs\" data-value=\"33553920\" data-suspicious=\"true\""));
    let live = browser::figure(&r.dom, "run2-grains-0");
    assert!(live
        .contains("data-limit=\"logical_block_size\" data-source=\"ioctl\" data-value=\"4096\""));
    assert!(r.dom.contains("id=\"run2-limits-0\""));
    // A loop device declares nothing: one line says why, no table.
    assert!(r
        .dom
        .contains("itself declares: nothing read (the kernel makes loop devices itself"));
    assert!(!r.dom.contains("id=\"run2-declared-0\""));
    // What an NVMe namespace declares, tabled beside its grains figure.
    let t = table_of(&r.dom, "run3-declared-0");
    assert!(
        t.contains("NPWA") && t.contains("not read by the kernel"),
        "{t}"
    );
    assert!(t.contains("16384 (16 KiB)"), "{t}");
    assert!(r.dom.contains("LBA formats (index: data size, Relative Performance): 0: 512 B, good; 1: 4 KiB, best (in use)."));
}

/// The `<table id=ID>` of `dom`, up to its end.
fn table_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("<table id=\"{id}\""))
        .unwrap_or_else(|| panic!("no table {id}"));
    let end = dom[at..].find("</table>").map_or(dom.len(), |e| at + e);
    &dom[at..end]
}

/// A topology document of one NVMe disk whose Identify Namespace answer is
/// the synthetic fixture tests/fixtures/identify/nvme-id-ns-optperf.bin,
/// read by the same code as a live disk's, written as `topology --json`.
fn declared_topology(dir: &Path) -> PathBuf {
    use diskalign::iolimits::Topology;
    use diskalign::topology::{self, Answers};
    use diskalign::topology::{Disk, Survey};
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/identify/nvme-id-ns-optperf.bin");
    let answers = Answers {
        nvme: Some(Ok(std::fs::read(fixture).unwrap())),
        ..Answers::default()
    };
    let topology = Topology {
        physical_block_size: 16384,
        minimum_io_size: 16384,
        optimal_io_size: 131072,
        ..Topology::plain(4096)
    };
    let disk = Disk {
        name: "nvme0n1".into(),
        device: "/dev/nvme0n1".into(),
        size_bytes: 1 << 30,
        topology,
        transport: diskalign::topology::Transport::Nvme,
        declared: Some(topology::read_declared(&answers, &topology).unwrap()),
        ..Disk::default()
    };
    let survey = Survey {
        disks: vec![disk],
        errors: vec![],
    };
    let stamp = diskalign::report::Stamp {
        host: "browser".into(),
        started: std::time::SystemTime::now(),
    };
    let path = dir.join("declared.json");
    std::fs::write(&path, diskalign::report::topology_json(&survey, &stamp)).unwrap();
    path
}

/// `diskalign probe ARGS FAST --json`, saved as `out`.
fn probe(dir: &Path, out: &str, targets: &[&str], extra: &[&str]) -> PathBuf {
    let mut a = vec!["probe"];
    a.extend_from_slice(targets);
    a.extend_from_slice(FAST);
    a.extend_from_slice(extra);
    a.push("--json");
    save(dir, out, &a)
}

/// fio's JSON for the job file `probe --emit-fio` writes for `target`.
fn fio(dir: &Path, target: &str) -> PathBuf {
    require_tool("fio");
    // 100 ms per job, not FAST's 10: under load a 10 ms fio job can end
    // before its first I/O completes, and a job with no I/O is no cell
    // (seen once in CI: 5 cells of 6).
    let job = save(dir, "grid.fio", &{
        let mut a = vec!["probe", target, "--emit-fio"];
        a.extend(FAST.iter().map(|&x| if x == "10ms" { "100ms" } else { x }));
        a
    });
    let out = dir.join("fio.json");
    let o = format!("--output={}", out.display());
    let (code, err) = sh_status("fio", &["--output-format=json", &o, job.to_str().unwrap()]);
    assert_eq!(code, 0, "fio failed: {err}");
    out
}

#[test]
fn probe_pages_draw_the_grid_for_one_target_two_and_fio() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "p.img", 64 << 20);
    let l = LoopDev::attach(&img, None);
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let s = scratch.display().to_string();
    let one = probe(dir.path(), "one.json", &[&l.dev], &[]);
    let two = probe(dir.path(), "two.json", &[&l.dev, &s], &["--size", "16M"]);
    let fio = fio(dir.path(), &l.dev);
    // The grid: 2 block sizes x 3 offsets of randread.
    let (_, r) = report(dir.path(), "probe", &[&one], 2400);
    for fig in [
        "run1-heatmap-randread",
        "run1-lines-randread",
        "run1-bs-curve",
    ] {
        assert!(
            r.dom.contains(&format!(
                "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"{fig}\""
            )),
            "no {fig}"
        );
    }
    assert_eq!(count(&r.dom, "<g class=\"cell\""), 6);
    let lines = browser::figure(&r.dom, "run1-lines-randread");
    assert_eq!(count(lines, "<g class=\"line\""), 2);
    let heatmap = browser::figure(&r.dom, "run1-heatmap-randread");
    assert_eq!(count(heatmap, "data-decision=\"aligned\""), 2);
    // Coloured only when decided, on a signed scale centred on 0; the
    // rest hatched, with a legend entry that says so.
    let coloured = count(heatmap, "data-fill=\"coloured\"");
    let hatched = count(heatmap, "data-fill=\"undecided\"");
    assert_eq!(coloured + hatched, 4, "{heatmap}");
    assert_eq!(count(heatmap, "data-decision=\"open\""), hatched);
    assert!(heatmap.contains("data-scale=\"diverging\""));
    assert!(heatmap.contains("IOPS change against"));
    assert!(heatmap.contains("<g class=\"legend-item\" data-legend=\"undecided\">"));
    assert!(r.dom.contains("class=\"band\""), "rounds give intervals");
    // Two targets: each drawn on shared axes, the second against the first.
    let (_, r) = report(dir.path(), "probe-two-targets", &[&two], 3000);
    assert_eq!(count(&r.dom, "<g class=\"cell\" data-target=\"0\""), 6);
    assert!(count(&r.dom, "<g class=\"cell\" data-target=\"1\"") >= 6);
    assert!(r.dom.contains("id=\"run1-versus-randread\""));
    // One fio pass: the same cells, no interval, nothing decided.
    let (_, r) = report(dir.path(), "fio", &[&fio], 2400);
    assert_eq!(count(&r.dom, "<g class=\"cell\""), 6);
    assert!(!r.dom.contains("class=\"band\""), "fio has no replicates");
    assert!(r.dom.contains("data-decision=\"untested\""));
    assert!(!r.dom.contains("data-significant=\"true\""));
    // Untested is not decided: no fio tile is coloured.
    let heatmap = browser::figure(&r.dom, "run1-heatmap-randread");
    assert_eq!(count(heatmap, "data-fill=\"undecided\""), 4);
    assert_eq!(count(heatmap, "data-fill=\"coloured\""), 0);
}

#[test]
fn the_standard_grid_page_stays_under_budget() {
    // The standard preset's grid with its five rounds, on short windows.
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let s = scratch.display().to_string();
    let (text, err, code) = run_full(&[
        "probe",
        &s,
        "--preset",
        "standard",
        "--write",
        "--runtime",
        "10ms",
        "--warmup",
        "2ms",
        "--size",
        "32M",
        "--json",
    ]);
    assert!(code & !5 == 0, "probe failed: {err}");
    let saved = dir.path().join("standard.json");
    std::fs::write(&saved, text).unwrap();
    let (page, _) = report(dir.path(), "probe-standard", &[&saved], 3000);
    let size = std::fs::metadata(page).unwrap().len();
    eprintln!("standard grid page: {size} bytes");
}

#[test]
fn compare_pages_for_probe_fio_and_check_runs() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "c.img", 64 << 20);
    let l = LoopDev::attach(&img, None);
    let a = probe(dir.path(), "a.json", &[&l.dev], &[]);
    let b = probe(dir.path(), "b.json", &[&l.dev], &[]);
    let fio = fio(dir.path(), &l.dev);
    let ab = save(
        dir.path(),
        "ab.json",
        &[
            "compare",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--json",
        ],
    );
    let af = save(
        dir.path(),
        "af.json",
        &[
            "compare",
            a.to_str().unwrap(),
            fio.to_str().unwrap(),
            "--json",
        ],
    );
    // A fix: the partition at sector 63 moved to 1 MiB.
    let old = sfdisk_image(dir.path(), "old.img", "start=63,size=50000\n");
    let new = sfdisk_image(dir.path(), "new.img", "start=2048,size=50000\n");
    let before = save(
        dir.path(),
        "before.json",
        &["check", old.to_str().unwrap(), "--json"],
    );
    let after = save(
        dir.path(),
        "after.json",
        &["check", new.to_str().unwrap(), "--json"],
    );
    let fix = save(
        dir.path(),
        "fix.json",
        &[
            "compare",
            before.to_str().unwrap(),
            after.to_str().unwrap(),
            "--json",
        ],
    );
    // Something changed, for the better: exit 1, and -q says it in its
    // summary line and the outcome line.
    let (out, err, code) = run_full(&[
        "compare",
        before.to_str().unwrap(),
        after.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!((code, out.lines().count()), (1, 2), "{out}{err}");
    assert!(out.contains("MISALIGNED → aligned"), "{out}");
    assert!(
        out.contains("outcome: targets: 1 improved, 0 regressed"),
        "{out}"
    );
    // A run against itself: nothing differs, exit 0.
    let (_, _, code) = run_full(&[
        "compare",
        before.to_str().unwrap(),
        before.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    // Every shared cell a mark; against fio nothing is tested.
    let (_, r) = report(dir.path(), "compare-probe", &[&ab, &af], 3000);
    assert!(r.dom.contains("id=\"run1-ratio-randread-t1\""));
    assert!(r.dom.contains("id=\"run2-ratio-randread-t1\""));
    assert_eq!(count(&r.dom, "<g class=\"ratio\""), 12);
    assert_eq!(count(&r.dom, "data-decision=\"untested\""), 6);
    assert!(r.dom.contains("id=\"run1-environment\""));
    // The answer first, in both: B/A over every cell with its interval
    // (against fio too: the cells are the replicates), then per pattern.
    assert_eq!(
        count(&r.dom, "<p class=\"answer\" data-scope=\"overall\""),
        2
    );
    assert_eq!(count(&r.dom, "data-ci-low=\"\""), 0);
    assert!(r.dom.contains("id=\"run1-patterns\""));
    assert!(r.dom.contains("data-scope=\"randread\" data-direction=\""));
    // A saved comparison whose first interval runs past the forest's
    // axis (1/16): drawn to the edge, with an arrow there.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&ab).unwrap()).unwrap();
    v["cells"][0]["ci95"] = serde_json::json!([0.001, 0.5]);
    v["cells"][0]["ratio"] = serde_json::json!(0.3);
    let wide = dir.path().join("wide.json");
    std::fs::write(&wide, v.to_string()).unwrap();
    let (_, r) = report(dir.path(), "compare-clipped", &[&wide], 3000);
    // (Short noisy windows may clip other cells too: this one must be.)
    let c = &v["cells"][0];
    let mark = format!(
        "data-pattern=\"{}\" data-target=\"0\" data-bs=\"{}\" data-offset=\"{}\" data-decision=\"{}\" data-clipped=\"low\"",
        c["pattern"].as_str().unwrap(),
        c["block_size"],
        c["offset"],
        c["decision"].as_str().unwrap()
    );
    assert!(r.dom.contains(&mark), "no {mark}");
    assert!(r.dom.contains("<polygon class=\"clipped\""));
    // The fix: the start off 4 KiB is gone.
    let (_, r) = report(dir.path(), "compare-check", &[&fix], 1600);
    assert!(r.dom.contains("id=\"run1-severity\""));
    let gone = r
        .dom
        .split("id=\"run1-disappeared\"")
        .nth(1)
        .expect("a table of what disappeared");
    assert!(gone
        .split("</table>")
        .next()
        .unwrap()
        .contains("start-not-4k"));
}

/// The watch page of a recording played over the ao-3584 fixture (a
/// synthetic recording made by tests/fixtures/watch/make.py): one size and one
/// alignment figure per device and direction, each bar with its bucket.
#[test]
fn watch_pages_draw_each_layers_histograms() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let sysfs = format!("{fixtures}/sysfs/ao-3584");
    let recording = format!("{fixtures}/watch/ao-3584.json");
    let run = save(
        dir.path(),
        "watch.json",
        &[
            "--sysfs-root",
            &sysfs,
            "watch",
            "sdb",
            "--replay",
            &recording,
            "--json",
        ],
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
    // Rows that carry data; a flush row has no sizes and no figure.
    let devices = doc["devices"].as_array().unwrap();
    let rows: Vec<usize> = (0..devices.len())
        .filter(|&n| !devices[n]["size_histogram"].as_array().unwrap().is_empty())
        .collect();
    assert!(rows.len() >= 2, "{doc}");
    let (_, r) = report(dir.path(), "watch", &[&run], 2000);
    for n in rows {
        for kind in ["sizes", "alignment"] {
            let f = browser::figure(&r.dom, &format!("run1-{kind}-figure-{n}"));
            assert!(
                f.contains("data-bucket=") && f.contains("data-ios="),
                "{kind} {n}: {f}"
            );
        }
    }
}
