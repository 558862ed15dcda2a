//! Golden tests of what people read: the human and CSV output of
//! `topology` on every fixture tree and of `check` on images built by
//! sfdisk and sgdisk, so no change to the report code changes it unseen.
//! `DISKALIGN_BLESS=1 cargo test --test golden` rewrites the files after
//! an intended change (review the diff).

mod common;
use common::*;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compare `got` with tests/golden/NAME, or write it when blessing.
fn golden(name: &str, got: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("DISKALIGN_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (DISKALIGN_BLESS=1 writes it)", path.display()));
    if want != got {
        let diff: Vec<String> = want
            .lines()
            .zip(got.lines())
            .enumerate()
            .filter(|(_, (w, g))| w != g)
            .take(5)
            .map(|(i, (w, g))| format!("line {}:\n  want: {w}\n  got:  {g}", i + 1))
            .collect();
        panic!(
            "{name} differs ({} lines wanted, {} got):\n{}\n(DISKALIGN_BLESS=1 rewrites it after an intended change)",
            want.lines().count(),
            got.lines().count(),
            diff.join("\n")
        );
    }
}

/// The fixture trees' directory and their names.
fn fixtures() -> (PathBuf, Vec<String>) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs");
    let mut names: Vec<String> = std::fs::read_dir(&fixtures)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 8, "{names:?}");
    (fixtures, names)
}

/// `diskalign --sysfs-root TREE --color never COMMAND...` on every fixture
/// tree: (name, stdout, stderr, status). The trees are reached through a
/// link named `<fixtures>` in a temporary directory that is the command's
/// working directory, so the paths in the output, and so where a piped
/// report wraps, are the same wherever the checkout is.
fn on_every_fixture(command: &[&str]) -> Vec<(String, String, String, i32)> {
    let (fixtures, names) = fixtures();
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&fixtures, dir.path().join("<fixtures>")).unwrap();
    names
        .into_iter()
        .map(|name| {
            let root = format!("<fixtures>/{name}");
            let args = ["--sysfs-root", root.as_str(), "--color", "never"];
            let mut cmd = std::process::Command::new(bin());
            cmd.args([&args[..], command].concat())
                .env_remove("COLUMNS")
                .current_dir(dir.path());
            let (out, err, code) = output_of(&mut cmd);
            (name, out, err, code)
        })
        .collect()
}

/// `check` works on every fixture tree: the partitions are judged from
/// the kernel's view (the nodes are not opened), stderr included.
#[test]
fn check_of_every_fixture() {
    for (name, out, err, code) in on_every_fixture(&["check"]) {
        let text = format!("{out}stderr: {err}exit {code}\n");
        golden(&format!("check-fixture-{name}.txt"), &text);
        // The table was not read (a fixture's nodes are not opened), so
        // plan could not plan it: no `next:` that would exit 2.
        assert!(next_commands(&out).is_empty(), "{out}");
    }
}

/// The details of each disk (`-v`).
#[test]
fn topology_of_every_fixture() {
    for (name, out, _, code) in on_every_fixture(&["topology", "-v"]) {
        golden(
            &format!("topology-{name}.txt"),
            &format!("{out}exit {code}\n"),
        );
    }
}

/// `topology` without a disk named: one row per disk, as lsblk -t. Piped,
/// the table is alone on stdout, and the hint is on no terminal here
/// (stderr is captured too), so nowhere.
#[test]
fn topology_table_of_every_fixture() {
    for (name, out, err, code) in on_every_fixture(&["topology"]) {
        golden(
            &format!("topology-table-{name}.txt"),
            &format!("{out}stderr: {err}exit {code}\n"),
        );
    }
}

/// The table's forms on one fixture, as lsblk's: raw, pairs, no header,
/// bytes, columns picked, and the table before the details (-v -o).
#[test]
fn topology_views() {
    let (fixtures, _) = fixtures();
    let view = |name: &str, extra: &[&str]| {
        let mut cmd = std::process::Command::new(bin());
        cmd.current_dir(&fixtures)
            .args(["--sysfs-root", "usb-bridge", "--color", "never", "topology"])
            .args(extra)
            .env_remove("COLUMNS");
        let (out, err, code) = output_of(&mut cmd);
        let text = format!("{out}stderr: {err}exit {code}\n");
        golden(&format!("topology-view-{name}.txt"), &text);
    };
    view("raw", &["-r"]);
    view("pairs-bytes", &["-P", "-b"]);
    // Keys are titles, so a size read by people sits under SIZE; -o
    // takes titles and ids in any case, as lsblk's -o does.
    view(
        "pairs-titles",
        &["-P", "-o", "NAME,size,phy-sec,Optimal_IO_Size"],
    );
    view(
        "noheadings",
        &["-n", "-o", "name,model,optimal_io_size,problems"],
    );
    view("verbose-output", &["-v", "-o", "name,size_bytes,problems"]);
    view("80-columns", &["--width", "80"]);
    view("list-columns", &["--list-columns", "--width", "80"]);
}

/// `check` of an image, run where the image is (so its path is its name),
/// and every `next:` command it prints run there as printed.
fn check_image(name: &str, script: Option<&str>, sgdisk: Option<&[&str]>, extra: &[&str]) {
    check_image_made(name, script, sgdisk, extra, |_| {});
}

/// [`check_image`], with `make` run on the image after its table is written
/// (a filesystem put in a partition).
fn check_image_made(
    name: &str,
    script: Option<&str>,
    sgdisk: Option<&[&str]>,
    extra: &[&str],
    make: impl Fn(&Path),
) {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), &format!("{name}.img"), 256 * MIB);
    if let Some(s) = script {
        sfdisk(&img, s);
    }
    if let Some(args) = sgdisk {
        let mut a = args.to_vec();
        let p = img.display().to_string();
        a.push(&p);
        sh("sgdisk", &a);
    }
    make(&img);
    fix_disk_id(&img);
    let p = format!("{name}.img");
    let mut cmd = std::process::Command::new(bin());
    cmd.current_dir(dir.path())
        .args(["--color", "never", "check", p.as_str()])
        .args(extra)
        .env_remove("COLUMNS");
    let (out, _, code) = output_of(&mut cmd);
    golden(&format!("check-{name}.txt"), &format!("{out}exit {code}\n"));
    next_steps_run(&out, dir.path());
}

/// The commands of the `next:` lines of a report, as printed (the
/// line's note in parentheses left out).
fn next_commands(report: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for l in report.lines() {
        let command = match l.strip_prefix("next: ") {
            Some(c) => Some(c),
            None if inside => l
                .strip_prefix("      ")
                .filter(|c| c.starts_with("diskalign ")),
            None => None,
        };
        inside = command.is_some();
        if let Some(c) = command {
            out.push(c.split("   (").next().unwrap().trim().to_string());
        }
    }
    out
}

/// Every `next:` command of `report` runs as printed from `cwd` (the
/// shell reads it, as from a copy and paste) and exits 0 or 1: a plan
/// made, with or without changes, never a refusal.
fn next_steps_run(report: &str, cwd: &Path) {
    let bin_dir = Path::new(bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for c in next_commands(report) {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", &c]).current_dir(cwd).env("PATH", &path);
        let (out, err, code) = output_of(&mut cmd);
        assert!(code == 0 || code == 1, "`{c}` exited {code}:\n{out}{err}");
    }
}

#[test]
fn csv_of_check_and_topology() {
    let dir = tempfile::tempdir().unwrap();
    let img = image(dir.path(), "csv.img", 256 * MIB);
    sfdisk(
        &img,
        // A fixed disk signature: the ptuuid and partuuid columns hold it.
        "label: dos\nlabel-id: 0x2d5a1f3c\nstart=63, size=20417, type=83\nstart=20480, size=40960, type=83\n",
    );
    let p = img.display().to_string();
    // Every target has a row: one without partitions, one not checked.
    let blank = image(dir.path(), "blank.img", 16 * MIB)
        .display()
        .to_string();
    let missing = dir.path().join("missing.img").display().to_string();
    let (out, _, code) = run_full(&["check", &p, &blank, &missing, "--format", "csv"]);
    let out = out.replace(&format!("{}/", dir.path().display()), "");
    golden("check-csv.csv", &format!("{out}exit {code}\n"));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs");
    let root = fixtures.join("usb-bridge");
    let (out, _, code) = run_full(&[
        "--sysfs-root",
        root.to_str().unwrap(),
        "topology",
        "--format",
        "csv",
    ]);
    golden("topology-csv.csv", &format!("{out}exit {code}\n"));
}

/// `--json` is `--format json`; asking for both is a usage error.
#[test]
fn json_is_format_json() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/md-raid5");
    let root = fixtures.to_str().unwrap();
    let a = run_full(&["--sysfs-root", root, "topology", "--json"]);
    let b = run_full(&["--sysfs-root", root, "topology", "--format", "json"]);
    // The two runs started at different times; that is all that differs.
    let same = |(out, err, code): (String, String, i32)| (without_start(&out), err, code);
    let (a, b) = (same(a), same(b));
    assert_eq!(a, b);
    assert!(a.0.contains("\"started_at\": \"<start>\""), "{}", a.0);
    let (out, err, code) = run_full(&[
        "--sysfs-root",
        root,
        "topology",
        "--json",
        "--format",
        "csv",
    ]);
    assert_eq!((out.as_str(), code), ("", 2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn check_of_images() {
    check_image("legacy-dos", Some("label: dos\nstart=63, size=20417, type=83\nstart=20480, size=40960, type=83\nstart=61440, type=5\nsize=8192, type=83\n"), None, &[]);
    check_image(
        "usb-bridge",
        Some("label: gpt\nstart=65535, size=200001\n"),
        None,
        &["--topology", "lbs=512,pbs=4096,min=4096,opt=33553920"],
    );
    check_image(
        "clean-gpt",
        None,
        Some(&["-n", "1:2048:+64M", "-n", "2:0:+64M"]),
        &["--topology", "pbs=4096"],
    );
    check_image(
        "ao-3584",
        Some("label: dos\nstart=63, size=1985\nstart=2048, size=65536\n"),
        None,
        &["--topology", "pbs=4096,ao=3584"],
    );
    check_image("empty", None, None, &[]);
    // A Ceph BlueStore OSD (ceph-osd's label, tests/fixtures/bluestore) in
    // a GPT partition at 1 MiB, on a 16 KiB physical block: its 4 KiB unit
    // is below it, and plan runs with it as the partition's content.
    check_image_made(
        "bluestore-16k",
        None,
        Some(&["-n", "1:2048:+64M"]),
        &["--topology", "pbs=16384"],
        |img| {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
            let label =
                std::fs::read(dir.join("tests/fixtures/bluestore/osd0-alloc4096.label")).unwrap();
            let f = std::fs::OpenOptions::new().write(true).open(img).unwrap();
            std::os::unix::fs::FileExt::write_all_at(&f, &label, MIB).unwrap();
        },
    );
    // A FAT (mkfs.fat) in a DOS partition at sector 63: no layer reads
    // it, the signature names it, and it inherits the partition's offset.
    check_image_made(
        "fat-at-63",
        Some("label: dos\nstart=63, size=40897, type=c\n"),
        None,
        &[],
        |img| {
            let p = img.display().to_string();
            sh(
                "mkfs.fat",
                &["-i", "1234abcd", "--offset", "63", &p, "20448"],
            );
        },
    );
}

/// The views of one report: fitted to an 80-column terminal (COLUMNS),
/// verdicts only (-q), every explanation (-v), columns picked (-o), and
/// the column list.
#[test]
fn check_views() {
    let (fixtures, _) = fixtures();
    // A relative root: wrapped lines must not depend on where the checkout is.
    let view = |name: &str, columns: Option<&str>, extra: &[&str]| {
        let mut cmd = std::process::Command::new(bin());
        cmd.current_dir(&fixtures)
            .args(["--sysfs-root", "usb-bridge", "--color", "never", "check"])
            .args(extra)
            .env_remove("COLUMNS");
        if let Some(c) = columns {
            cmd.env("COLUMNS", c);
        }
        let (out, err, code) = output_of(&mut cmd);
        let text = format!("{out}stderr: {err}exit {code}\n");
        golden(&format!("check-view-{name}.txt"), &text);
        next_steps_run(&out, &fixtures);
    };
    view("80-columns", Some("80"), &[]);
    view("quiet", None, &["-q"]);
    view("verbose", Some("100"), &["-v"]);
    view(
        "output",
        None,
        &["-o", "number,start_bytes,kernel_offset,aligned"],
    );
    view("output-plus", None, &["-o", "+problems"]);
    view("list-columns", Some("80"), &["--list-columns"]);
    view(
        "output-verbose",
        None,
        &["-v", "-o", "number,start_bytes,aligned"],
    );
    view("raw", None, &["-r"]);
    view(
        "pairs-bytes",
        None,
        &["-P", "-b", "-o", "number,start_bytes,size_bytes,status"],
    );
    view("noheadings-bytes", None, &["-n", "-b"]);
    view("width-60", None, &["--width", "60"]);
    view("width-0", None, &["--width", "0"]);
}

/// Give the image's table a fixed identity (its PTUUID is in the report),
/// with sfdisk --disk-id, as the tools made it random.
fn fix_disk_id(img: &Path) {
    let p = img.display().to_string();
    // blkid exits 2 when it finds no table (the empty image).
    let (_, kind) = sh_status("blkid", &["-p", "-o", "value", "-s", "PTTYPE", &p]);
    let id = match kind.trim() {
        "dos" => "0x1234abcd",
        "gpt" => "6E0A5E3C-1D2B-4C5A-9E8F-0123456789AB",
        _ => return,
    };
    sh("sfdisk", &["--disk-id", &p, id]);
}

/// `check -o` over several images: one table, the target column first
/// when no columns were named; and the raw form escaping a space in a
/// file name as lsblk does.
#[test]
fn check_table_of_several_targets() {
    let dir = tempfile::tempdir().unwrap();
    let a = image(dir.path(), "a disk.img", 256 * MIB);
    sfdisk(
        &a,
        "label: dos\nstart=63, size=20417, type=83\nstart=20480, size=40960, type=83\n",
    );
    let b = image(dir.path(), "b.img", 256 * MIB);
    sfdisk(&b, "label: gpt\nstart=2048, size=40960\n");
    let mut text = String::new();
    // Every row names its disk, whatever -o picked.
    for extra in [
        &["-n"][..],
        &["-r", "-b"],
        &["-o", "number,status"],
        &["-P", "-o", "start_bytes,size"],
    ] {
        let mut cmd = std::process::Command::new(bin());
        cmd.current_dir(dir.path())
            .args(["--color", "never", "check", "a disk.img", "b.img"])
            .args(extra);
        let (out, err, code) = output_of(&mut cmd);
        text.push_str(&format!(
            "$ check {extra:?}\n{out}stderr: {err}exit {code}\n"
        ));
    }
    golden("check-table-several.txt", &text);
    // topology's rows name their disk too: the three disks of a fixture,
    // sizes and ROTA as lsblk's -r and -P write them.
    let (fixtures, _) = fixtures();
    let mut text = String::new();
    for extra in [&["-r", "-o", "size,rota"][..], &["-P", "-o", "size"]] {
        let mut cmd = std::process::Command::new(bin());
        cmd.current_dir(&fixtures)
            .args([
                "--sysfs-root",
                "stack-holders",
                "--color",
                "never",
                "topology",
            ])
            .args(extra);
        let (out, err, code) = output_of(&mut cmd);
        text.push_str(&format!(
            "$ topology {extra:?}\n{out}stderr: {err}exit {code}\n"
        ));
    }
    golden("topology-table-several.txt", &text);
}

/// `watch` of the fixture tree NAME playing a synthetic recording
/// (tests/fixtures/watch/NAME.json, made up by make.py there, not
/// traced): the human summary, the CSV and the JSON (its host, start and
/// version fixed), as tests/golden/watch-NAME.*; the JSON is returned.
fn watch_golden(name: &str) -> serde_json::Value {
    let (fixtures, _) = fixtures();
    let run = |extra: &[&str]| {
        let mut cmd = std::process::Command::new(bin());
        cmd.current_dir(&fixtures)
            .args(["--sysfs-root", name, "--color", "never", "watch", "sdb"])
            .args(["--replay", &format!("../watch/{name}.json")])
            .args(extra)
            .env_remove("COLUMNS");
        output_of(&mut cmd)
    };
    let (out, err, code) = run(&[]);
    golden(
        &format!("watch-{name}.txt"),
        &format!("{out}stderr: {err}exit {code}\n"),
    );
    let (out, _, code) = run(&["--format", "csv"]);
    golden(&format!("watch-{name}.csv"), &format!("{out}exit {code}\n"));
    let (out, _, _) = run(&["--format", "json"]);
    let mut doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    doc["host"] = "HOST".into();
    doc["started_at"] = "STARTED".into();
    doc["diskalign_version"] = "VERSION".into();
    golden(
        &format!("watch-{name}.json"),
        &(serde_json::to_string_pretty(&doc).unwrap() + "\n"),
    );
    doc
}

/// The ao-3584 tree (sdb, 4 KiB physical; sdb1 at sector 63, sdb2 at
/// 2048): 4 KiB random writes to both partitions. No device is zoned,
/// so the table has no X-ZONE.
#[test]
fn watch_of_a_recording() {
    watch_golden("ao-3584");
}

/// The zoned-hm tree (sdb host-managed in 4 MiB zones): 600 writes, 60
/// across a zone boundary, split in two before they were issued. X-ZONE
/// counts them, the CSV's last column and the JSON too, and
/// zone-crossing-writes is an error; `compare` of the run with itself
/// shows their share in A and B.
#[test]
fn watch_of_a_zoned_recording() {
    let doc = watch_golden("zoned-hm");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("zoned.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let f = file.to_str().unwrap();
    let (out, err, code) = output_of(
        std::process::Command::new(bin())
            .args(["--color", "never", "compare", f, f])
            .env_remove("COLUMNS"),
    );
    let out = out.replace(f, "zoned.json");
    golden(
        "compare-watch-zoned-hm.txt",
        &format!("{out}stderr: {err}exit {code}\n"),
    );
}

/// `diskalign --color never ARGS...` run in `cwd` (no COLUMNS: piped,
/// nothing hidden): the command line as typed, its stdout, and, where
/// `outcome` says, its stderr and exit status.
fn typed(cwd: &Path, args: &[&str], outcome: bool) -> String {
    let mut cmd = std::process::Command::new(bin());
    cmd.current_dir(cwd)
        .args(["--color", "never"])
        .args(args)
        .env_remove("COLUMNS");
    let (out, err, code) = output_of(&mut cmd);
    match outcome {
        true => format!("$ {args:?}\n{out}stderr: {err}exit {code}\n"),
        false => {
            // A measurement's verdict (exit 1, 4) is not the table's.
            assert_eq!(code & 2, 0, "{args:?} exited {code}: {err}");
            format!("$ {args:?}\n{out}")
        }
    }
}

/// `probe -o`, `-r`, `-P`, `-n` and its CSV: the table of cells instead
/// of the grids, of the columns that do not depend on what was measured
/// (the cells, the targets, the seed); two targets' rows name their
/// target, a space in its name escaped by `-r` as lsblk does.
#[test]
fn probe_table_forms() {
    // Not /tmp, which may be a tmpfs without O_DIRECT.
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    filled_file(&dir.path().join("a.img"), 8 << 20, 7);
    filled_file(&dir.path().join("b file.img"), 8 << 20, 7);
    let grid = [
        "--bs",
        "4k",
        "--offsets",
        "0,512",
        "--runtime",
        "10ms",
        "--warmup",
        "2ms",
        "--rounds",
        "2",
        "--seed",
        "7",
    ];
    let mut text = String::new();
    for extra in [
        &["-o", "pattern,bs,offset,seed"][..],
        &["-r", "-o", "pattern,block_size,offset"],
        &["-P", "-b", "-o", "pattern,BS,offset"],
        &["-n", "-o", "offset,pattern"],
        &[
            "--format",
            "csv",
            "-n",
            "-o",
            "pattern,block_size,offset,seed",
        ],
    ] {
        let args = [&["probe", "a.img"][..], &grid, extra].concat();
        text.push_str(&typed(dir.path(), &args, false));
    }
    let args = [
        &["probe", "a.img", "b file.img"][..],
        &grid,
        &["-r", "-o", "offset"],
    ]
    .concat();
    text.push_str(&typed(dir.path(), &args, false));
    golden("probe-table.txt", &text);
    let list = typed(
        dir.path(),
        &["probe", "--list-columns", "--width", "80"],
        true,
    );
    golden("probe-view-list-columns.txt", &list);
}

/// `compare -o` and its forms: the findings two check runs changed (an
/// image whose table was made aligned in between), two watch runs (the
/// recordings of `watch_of_a_recording`), two probe runs (one compared
/// with itself: B/A is 1); and its CSV of the columns picked.
#[test]
fn compare_table_forms() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let img = image(dir.path(), "disk.img", 256 * MIB);
    sfdisk(
        &img,
        "label: dos\nlabel-id: 0x1234abcd\nstart=63, size=20417, type=83\nstart=20480, size=40960, type=83\n",
    );
    let saved = |args: &[&str], name: &str| {
        let mut cmd = std::process::Command::new(bin());
        cmd.current_dir(dir.path()).args(args);
        let (out, err, code) = output_of(&mut cmd);
        assert_eq!(code & 2, 0, "{args:?}: {err}");
        std::fs::write(dir.path().join(name), out).unwrap();
    };
    saved(&["check", "disk.img", "--json"], "a.json");
    sfdisk(
        &img,
        "label: dos\nlabel-id: 0x1234abcd\nstart=2048, size=18432, type=83\nstart=20480, size=40960, type=83\n",
    );
    saved(&["check", "disk.img", "--json"], "b.json");
    let (fixtures, _) = fixtures();
    for name in ["ao-3584", "zoned-hm"] {
        let root = fixtures.join(name).display().to_string();
        let replay = fixtures
            .join(format!("../watch/{name}.json"))
            .display()
            .to_string();
        let args = ["--sysfs-root", &root, "watch", "sdb", "--replay", &replay];
        saved(&[&args[..], &["--json"]].concat(), &format!("{name}.json"));
    }
    filled_file(&dir.path().join("p.img"), 8 << 20, 7);
    saved(
        &[
            "probe",
            "p.img",
            "--bs",
            "4k",
            "--offsets",
            "0,512",
            "--runtime",
            "10ms",
            "--warmup",
            "2ms",
            "--rounds",
            "2",
            "--seed",
            "7",
            "--json",
        ],
        "p.json",
    );
    let mut text = String::new();
    for args in [
        &["compare", "a.json", "b.json", "-o", "change,where,code,a,b"][..],
        &["compare", "a.json", "b.json", "-r"],
        &[
            "compare",
            "a.json",
            "b.json",
            "-P",
            "-o",
            "code,severity_a,message_a",
        ],
        &["compare", "a.json", "b.json", "-n", "-o", "change,code"],
        &[
            "compare",
            "a.json",
            "b.json",
            "--format",
            "csv",
            "-o",
            "code,change",
        ],
        &[
            "compare",
            "ao-3584.json",
            "zoned-hm.json",
            "-o",
            "change,where,code,a,b",
        ],
        &["compare", "a.json", "b.json", "-o", "ratio"],
    ] {
        text.push_str(&typed(dir.path(), args, true));
    }
    for args in [
        &[
            "compare",
            "p.json",
            "p.json",
            "-o",
            "pattern,bs,offset,ratio,b/a",
        ][..],
        &[
            "compare",
            "p.json",
            "p.json",
            "-P",
            "-b",
            "-o",
            "bs,offset,ratio",
        ],
    ] {
        text.push_str(&typed(dir.path(), args, false));
    }
    golden("compare-table.txt", &text);
    let list = typed(
        dir.path(),
        &["compare", "--list-columns", "--width", "80"],
        true,
    );
    golden("compare-view-list-columns.txt", &list);
}

/// `plan -o` and its forms: every partition of every disk planned in
/// one table, the disk named first when there are several (a space in
/// its name escaped by `-r`); `plan --new -o` the layout's.
#[test]
fn plan_table_forms() {
    let dir = tempfile::tempdir().unwrap();
    let a = image(dir.path(), "a.img", 256 * MIB);
    sfdisk(
        &a,
        "label: dos\nstart=63, size=20417, type=83\nstart=20480, size=40960, type=83\n",
    );
    let b = image(dir.path(), "b disk.img", 256 * MIB);
    sfdisk(
        &b,
        "label: gpt\nstart=2048, size=40960\nstart=43008, size=8191\n",
    );
    image(dir.path(), "new.img", 256 * MIB);
    let mut text = String::new();
    for args in [
        &["plan", "a.img", "-o", "number,start,new_start,change"][..],
        &["plan", "a.img", "-r"],
        &[
            "plan",
            "a.img",
            "-P",
            "-b",
            "-o",
            "number,size_bytes,new_size_bytes",
        ],
        &["plan", "a.img", "-n"],
        &["plan", "a.img", "b disk.img", "-r", "-o", "number,change"],
        // -b alone: the report, its table's sizes in bytes.
        &["plan", "--new", "new.img", "--sizes", "16M,rest", "-b"],
        &[
            "plan",
            "--new",
            "new.img",
            "--sizes",
            "16M,rest",
            "-b",
            "-o",
            "#,start,size",
        ],
        &["plan", "a.img", "-o", "new_size"],
    ] {
        text.push_str(&typed(dir.path(), args, true));
    }
    golden("plan-table.txt", &text);
    let list = typed(
        dir.path(),
        &["plan", "--list-columns", "--width", "80"],
        true,
    );
    golden("plan-view-list-columns.txt", &list);
}
