//! Kernel-in-the-loop tests: each scenario in tests/vm/scenarios boots a
//! real Linux kernel under qemu with the disks it names, prepares them
//! with the guest's own tools, captures diskalign's JSON next to the
//! guest kernel's sysfs values and the guest's parted/fdisk/sgdisk, and
//! checks the expectations here on the host. tests/vm/README.md describes
//! the scenario language; tests/vm/prepare builds the kernel, the release
//! binary and the initramfs (cached under target/vm/).
//!
//! `DISKALIGN_VM_SCENARIOS=usb,dm` runs only the scenarios whose file name
//! contains one of the words; `DISKALIGN_VM_JOBS` sets how many guests run
//! at once (default 2, one per core). The generated differential
//! (differential.rs, scenarios 11 and 12) takes `DISKALIGN_VM_SEED`
//! (a number or `random`; the seed is printed) and `DISKALIGN_VM_LAYOUTS`
//! (layouts per topology). `DISKALIGN_VM_SCENARIO_DIR` runs the scenario
//! files of another folder instead (bench/time-to-verdict does, and
//! tests/vm/pending holds scenarios the current code does not pass yet).

mod differential;
mod scenario;

use scenario::{Backing, Boot, Bus, Captured, Kernel, Scenario, Step};
use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs tests/vm/prepare once; its last stdout line is target/vm.
fn vm_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = Command::new(repo().join("tests/vm/prepare"))
            .stderr(Stdio::inherit())
            .output()
            .expect("run tests/vm/prepare");
        assert!(
            out.status.success(),
            "tests/vm/prepare failed ({}): the kernel-in-the-loop tests need qemu, the guest kernel and a release build",
            out.status
        );
        let text = String::from_utf8_lossy(&out.stdout);
        PathBuf::from(text.lines().last().expect("prepare prints target/vm").trim())
    })
}

/// The differentials' seed, chosen once per run and printed.
fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        let s = differential::run_seed();
        // Straight to stderr: the test harness keeps eprintln! output of a
        // passing test, and the seed matters most when a run was random.
        let _ = writeln!(
            std::io::stderr(),
            "vm differential seed {s:#x} (DISKALIGN_VM_SEED={s:#x} reproduces this run)"
        );
        s
    })
}

/// How long a boot may take: its `timeout` plus 4 s per generated layout
/// (about 1 s each under TCG on an idle core).
fn boot_timeout(boot: &Boot) -> u64 {
    let layouts: usize = boot
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Differential(d) => Some(differential::layouts(d, seed()).len()),
            _ => None,
        })
        .sum();
    boot.timeout_s + 4 * layouts as u64
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The guest's /scenario.sh for one boot: find each disk by its serial,
/// then one `run`/`capture` call per step (tests/vm/lib.sh).
fn guest_script(boot: &Boot) -> String {
    let mut s = String::new();
    for d in &boot.disks {
        let find = match d.bus {
            // An SD card has no serial: the one mmc disk of the boot.
            Bus::Sd => "disk_by_mmc",
            _ => "disk_by_serial",
        };
        s.push_str(&format!("{0}=$({find} {0}); export {0}\n", d.name));
    }
    for step in &boot.steps {
        match step {
            Step::Run(cmd) => s.push_str(&format!("run {}\n", quote(cmd))),
            Step::Capture(key, cmd) => s.push_str(&format!("capture {key} {}\n", quote(cmd))),
            Step::Set(var, cmd) => s.push_str(&format!("setvar {var} {}\n", quote(cmd))),
            Step::Differential(d) => s.push_str(&differential::guest_lines(
                d,
                &differential::layouts(d, seed()),
                quote,
            )),
        }
    }
    s
}

fn qemu_args(vm: &Path, boot: &Boot, work: &Path, initrd: &Path) -> Vec<String> {
    let mut a: Vec<String> = [
        "-accel",
        "tcg",
        "-machine",
        "q35",
        "-cpu",
        "max",
        "-smp",
        "1",
        "-m",
        "1024",
        "-nographic",
        "-nodefaults",
        "-serial",
        "stdio",
        "-no-reboot",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.push("-kernel".into());
    a.push(
        vm.join(match boot.kernel {
            Kernel::Cloud => "vmlinuz",
            Kernel::Generic => "vmlinuz-generic",
        })
        .display()
        .to_string(),
    );
    a.push("-initrd".into());
    a.push(initrd.display().to_string());
    a.push("-append".into());
    // no_timer_check: under TCG on a loaded host the kernel's early check
    // that the 8254 timer ticks through the IO-APIC can miss its ticks and
    // panic ("IO-APIC + timer doesn't work"), seen once in a full run at
    // load 8 on 2 cores; the check is for broken hardware, not for qemu.
    a.push("console=ttyS0 panic=-1 quiet no_timer_check".into());
    if boot.disks.iter().any(|d| d.bus == Bus::Scsi) {
        a.push("-device".into());
        a.push("virtio-scsi-pci,id=scsi".into());
    }
    for d in &boot.disks {
        match &d.backing {
            Backing::Image => {
                let img = work.join(format!("{}.img", d.name));
                a.push("-drive".into());
                a.push(format!(
                    "if=none,id=d_{},file={},format=raw,cache=unsafe",
                    d.name,
                    img.display()
                ));
            }
            Backing::Null { null, blkdebug } => {
                // Two nodes: null-co at the bottom, blkdebug above it (its
                // `align` is the request alignment the block layer pads
                // to), and the device on blkdebug.
                let mut n = format!(
                    "driver=null-co,node-name=n_{},size={},read-zeroes=on",
                    d.name, d.size
                );
                let mut b = format!("driver=blkdebug,node-name=d_{0},image=n_{0}", d.name);
                for p in null {
                    n.push(',');
                    n.push_str(p);
                }
                for p in blkdebug {
                    b.push(',');
                    b.push_str(p);
                }
                a.extend(["-blockdev".into(), n, "-blockdev".into(), b]);
            }
            Backing::Nbd(_) => {
                // qemu's NBD client on the Unix socket of the nbdkit
                // server start_nbd started for this disk; no network.
                a.push("-blockdev".into());
                a.push(format!(
                    "driver=nbd,node-name=d_{},server.type=unix,server.path={}",
                    d.name,
                    nbd_socket(work, &d.name).display()
                ));
            }
        }
        let dev = match d.bus {
            Bus::Virtio => "virtio-blk-pci".to_string(),
            Bus::Scsi => "scsi-hd,bus=scsi.0".to_string(),
            Bus::Nvme => "nvme".to_string(),
            // The q35 machine's own AHCI controller has ports ide.0 to
            // ide.5.
            Bus::Ahci => {
                let port = boot
                    .disks
                    .iter()
                    .filter(|x| x.bus == Bus::Ahci)
                    .position(|x| x.name == d.name)
                    .unwrap_or(0);
                // libata shows no serial in sysfs; the model is found
                // (lib.sh `_has_serial`).
                format!("ide-hd,bus=ide.{port},model={}", d.name)
            }
            // A controller of its own (the serial the guest finds it by),
            // and the image as its zoned namespace 1, which takes the
            // properties.
            Bus::Zns => {
                a.push("-device".into());
                a.push(format!("nvme,id=zc_{0},serial={0}", d.name));
                format!("nvme-ns,bus=zc_{0},nsid=1,zoned=on", d.name)
            }
            // An SDHCI controller, the card on its bus (qemu names every
            // SDHCI's bus `sd-bus`: one card per boot).
            Bus::Sd => {
                a.push("-device".into());
                a.push("sdhci-pci".into());
                "sd-card".to_string()
            }
        };
        let mut spec = if matches!(d.bus, Bus::Zns | Bus::Sd) {
            format!("{dev},drive=d_{0}", d.name)
        } else {
            format!("{dev},drive=d_{0},serial={0}", d.name)
        };
        for p in &d.props {
            spec.push(',');
            spec.push_str(p);
        }
        a.push("-device".into());
        a.push(spec);
    }
    a
}

fn nbd_socket(work: &Path, name: &str) -> PathBuf {
    work.join(format!("{name}.nbd"))
}

/// The nbdkit servers of one boot's `nbddisk`s; dropping it stops them
/// (also when the boot failed or the guest hung).
struct NbdServers(Vec<std::process::Child>);

impl Drop for NbdServers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts one nbdkit server per `nbddisk` of the boot (tests/vm/costdisk.py
/// with the disk's cost model, on a Unix socket in `work`, its log in
/// `out_dir`) and waits until each listens.
fn start_nbd(boot: &Boot, work: &Path, out_dir: &Path, n: usize) -> Result<NbdServers, String> {
    let mut servers = NbdServers(Vec::new());
    for d in &boot.disks {
        let Backing::Nbd(c) = &d.backing else {
            continue;
        };
        let sock = nbd_socket(work, &d.name);
        let _ = fs::remove_file(&sock);
        let log_path = out_dir.join(format!("boot{n}.{}.nbdkit.log", d.name));
        let log = fs::File::create(&log_path).map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        // -f: stay a child of this process; --exit-with-parent: go when it
        // dies; 32 threads: qemu's NBD client keeps up to 16 requests in
        // flight, each sleeping in a thread of its own.
        let child = Command::new("nbdkit")
            .args(["-f", "--exit-with-parent", "-t", "32", "-U"])
            .arg(&sock)
            .arg("python")
            .arg(repo().join("tests/vm/costdisk.py"))
            .arg(format!("size={}", d.size))
            .args(c.args())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| {
                format!("cannot start nbdkit ({e}): nbddisk needs the Debian packages nbdkit and nbdkit-plugin-python")
            })?;
        servers.0.push(child);
        let t = std::time::Instant::now();
        while !sock.exists() {
            let child = servers.0.last_mut().expect("just pushed");
            let gone = child.try_wait().map_err(|e| e.to_string())?;
            if gone.is_some() || t.elapsed().as_secs() >= 20 {
                return Err(format!(
                    "nbdkit for {} did not start ({}): {}",
                    d.name,
                    gone.map_or("no socket after 20 s".into(), |s| s.to_string()),
                    fs::read_to_string(&log_path).unwrap_or_default().trim()
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    Ok(servers)
}

/// What the serial console of one boot said.
struct Serial {
    captures: BTreeMap<String, Captured>,
    done: bool,
    failed: Option<String>,
}

fn parse_serial(log: &str) -> Serial {
    let mut s = Serial {
        captures: BTreeMap::new(),
        done: false,
        failed: None,
    };
    let mut cur: Option<(String, String)> = None;
    for line in log.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(key) = line.strip_prefix("@@vm begin ") {
            cur = Some((key.trim().to_string(), String::new()));
        } else if let Some(rest) = line.strip_prefix("@@vm end ") {
            let mut it = rest.split_whitespace();
            if let (Some((key, out)), Some(end_key), Some(st)) = (cur.take(), it.next(), it.next())
            {
                if key != end_key {
                    // A marker line was lost: drop both rather than mix them.
                    continue;
                }
                s.captures.insert(
                    key,
                    Captured {
                        stdout: out,
                        status: st.parse().unwrap_or(-1),
                    },
                );
            }
        } else if let Some((_, out)) = cur.as_mut() {
            out.push_str(line);
            out.push('\n');
        } else if line == "@@vm done" {
            s.done = true;
        } else if let Some(m) = line.strip_prefix("@@vm failed ") {
            s.failed = Some(m.to_string());
        }
    }
    s
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A `host` step: `sh -c CMD` in the scenario's work folder, with `$REPO`
/// the repository (for its tests/vm scripts); a failure stops the
/// scenario with the command's output.
fn run_on_host(cmd: &str, work: &Path) -> Result<(), String> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(work)
        .env("REPO", env!("CARGO_MANIFEST_DIR"))
        .output()
        .map_err(|e| format!("host `{cmd}`: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "host `{cmd}` failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// Boots one guest; Err carries the reason and the serial log's tail.
fn run_boot(
    vm: &Path,
    boot: &Boot,
    work: &Path,
    out_dir: &Path,
    n: usize,
) -> Result<BTreeMap<String, Captured>, String> {
    for cmd in &boot.host {
        run_on_host(cmd, work)?;
    }
    for d in boot.disks.iter().filter(|d| d.backing == Backing::Image) {
        let img = work.join(format!("{}.img", d.name));
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&img)
            .map_err(|e| format!("{}: {e}", img.display()))?;
        let len = f.metadata().map_err(|e| e.to_string())?.len();
        if len == 0 {
            f.set_len(d.size).map_err(|e| e.to_string())?;
        } else if len != d.size {
            return Err(format!(
                "disk {} is {len} bytes from an earlier boot, this boot says {}",
                d.name, d.size
            ));
        }
    }
    // The initramfs: the cached base, fio's archive when a step calls fio
    // (it makes the boot about 3.5 s longer), and a last cpio with
    // /scenario.sh (the kernel unpacks concatenated archives in order).
    let stage = work.join(format!("stage{n}"));
    fs::create_dir_all(&stage).map_err(|e| e.to_string())?;
    fs::write(stage.join("scenario.sh"), guest_script(boot)).map_err(|e| e.to_string())?;
    let initrd = work.join(format!("initrd{n}"));
    let mut archives = vec![vm.join("base.cpio.gz")];
    if boot.calls("fio") {
        archives.push(vm.join("fio.cpio.gz"));
    }
    let archives: Vec<String> = archives
        .iter()
        .map(|p| quote(&p.display().to_string()))
        .collect();
    let sh = format!(
        "cd {} && find scenario.sh | cpio -o -H newc --quiet | gzip -1 | cat {} - > {}",
        quote(&stage.display().to_string()),
        archives.join(" "),
        quote(&initrd.display().to_string())
    );
    let st = Command::new("sh")
        .args(["-c", &sh])
        .status()
        .map_err(|e| e.to_string())?;
    if !st.success() {
        return Err(format!("packing the initramfs failed: {st}"));
    }
    let timeout_s = boot_timeout(boot);
    let _servers = start_nbd(boot, work, out_dir, n)?;
    let out = Command::new("timeout")
        .args([
            "--kill-after=5",
            &timeout_s.to_string(),
            "qemu-system-x86_64",
        ])
        .args(qemu_args(vm, boot, work, &initrd))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start qemu: {e}"))?;
    let mut log = String::from_utf8_lossy(&out.stdout).into_owned();
    log.push_str(&String::from_utf8_lossy(&out.stderr));
    let log_path = out_dir.join(format!("boot{n}.serial.log"));
    fs::write(&log_path, &log).map_err(|e| e.to_string())?;
    let serial = parse_serial(&log);
    for (k, c) in &serial.captures {
        let _ = fs::write(out_dir.join(format!("{k}.out")), &c.stdout);
    }
    let why = if out.status.code() == Some(124) || out.status.code() == Some(137) {
        Some(format!("the guest hung: killed after {timeout_s} s"))
    } else if let Some(f) = &serial.failed {
        Some(format!("a step failed (status {f})"))
    } else if !serial.done {
        Some(format!("the guest stopped before the end ({})", out.status))
    } else {
        None
    };
    match why {
        None => Ok(serial.captures),
        Some(why) => Err(format!(
            "boot {n}: {why}; serial log {}:\n{}",
            log_path.display(),
            tail(&log, 60)
        )),
    }
}

fn run_scenario(vm: &Path, s: &Scenario) -> Result<usize, String> {
    let out_dir = vm.join("out").join(&s.name);
    let _ = fs::remove_dir_all(&out_dir);
    fs::create_dir_all(&out_dir).map_err(|e| e.to_string())?;
    let work = tempfile::Builder::new()
        .prefix("diskalign-vm-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let mut caps = BTreeMap::new();
    for (i, boot) in s.boots.iter().enumerate() {
        caps.extend(run_boot(vm, boot, work.path(), &out_dir, i + 1)?);
    }
    let diff = check_differentials(s, &caps, &out_dir);
    let failed: Vec<String> = s
        .expects
        .iter()
        .filter_map(|e| {
            scenario::evaluate(e, &caps)
                .err()
                .map(|why| format!("  line {}: expect {}\n      {why}", e.line, e.text))
        })
        .collect();
    if failed.is_empty() && diff.is_empty() {
        return Ok(s.expects.len());
    }
    let mut m = String::new();
    if !failed.is_empty() {
        m = format!(
            "{} of {} expectations failed (captures in {}):\n{}",
            failed.len(),
            s.expects.len(),
            out_dir.display(),
            failed.join("\n")
        );
    }
    if !diff.is_empty() {
        if !m.is_empty() {
            m.push('\n');
        }
        m.push_str(&format!(
            "the differential disagrees with the real tools (captures in {}):\n{}",
            out_dir.display(),
            diff.join("\n")
        ));
    }
    Err(m)
}

/// Compares the scenario's differentials; writes the agreement table and
/// every disagreement to `out_dir/differential.txt`, prints the table, and
/// returns one failure per differential that did not agree fully (the
/// first disagreements of each comparison listed).
fn check_differentials(
    s: &Scenario,
    caps: &BTreeMap<String, Captured>,
    out_dir: &Path,
) -> Vec<String> {
    let diffs: Vec<&scenario::Differential> = s
        .boots
        .iter()
        .flat_map(|b| &b.steps)
        .filter_map(|st| match st {
            Step::Differential(d) => Some(d),
            _ => None,
        })
        .collect();
    if diffs.is_empty() {
        return Vec::new();
    }
    let outcomes: Vec<(String, differential::Outcome)> = diffs
        .iter()
        .map(|d| {
            let layouts = differential::layouts(d, seed());
            let o = differential::compare(d, &layouts, |k| caps.get(k).map(|c| c.stdout.clone()));
            (d.key.clone(), o)
        })
        .collect();
    let rows: Vec<(String, &differential::Outcome)> =
        outcomes.iter().map(|(k, o)| (k.clone(), o)).collect();
    let table = differential::report(seed(), &rows);
    let mut full = table.clone();
    for (_, o) in &outcomes {
        for b in &o.broken {
            full.push_str(&format!("BROKEN {b}\n"));
        }
        for x in &o.disagreements {
            full.push_str(&format!("DISAGREE {}: {}\n", x.comparison, x.text));
        }
    }
    let path = out_dir.join("differential.txt");
    let _ = fs::write(&path, &full);
    let _ = writeln!(std::io::stderr(), "vm scenario {}:\n{table}", s.name);
    let mut failed: Vec<String> = outcomes
        .iter()
        .filter(|(_, o)| o.failed())
        .map(|(key, o)| {
            let mut m = format!(
                "  differential {key}: {} disagreements, {} broken layouts (all in {}):\n",
                o.disagreements.len(),
                o.broken.len(),
                path.display()
            );
            for b in o.broken.iter().take(5) {
                m.push_str(&format!("      broken: {b}\n"));
            }
            let mut per: BTreeMap<&str, usize> = BTreeMap::new();
            for x in &o.disagreements {
                let seen = per.entry(x.comparison).or_default();
                *seen += 1;
                if *seen <= 10 {
                    m.push_str(&format!("      {}: {}\n", x.comparison, x.text));
                }
            }
            for (c, n) in per.iter().filter(|(_, n)| **n > 10) {
                m.push_str(&format!("      {c}: ... {} more\n", n - 10));
            }
            m
        })
        .collect();
    if !failed.is_empty() {
        failed.insert(
            0,
            format!("  differential agreement (agreed/compared):\n{table}"),
        );
    }
    failed
}

/// The scenario files, those `DISKALIGN_VM_SCENARIOS` selects when
/// `selected`; then `DISKALIGN_VM_SCENARIO_DIR` (relative to the
/// repository or absolute) names another folder of them, such as a
/// benchmark's (bench/time-to-verdict).
fn scenarios(selected: bool) -> Vec<Scenario> {
    let dir = match std::env::var_os("DISKALIGN_VM_SCENARIO_DIR").filter(|_| selected) {
        Some(d) => repo().join(d),
        None => repo().join("tests/vm/scenarios"),
    };
    let only: Vec<String> = std::env::var("DISKALIGN_VM_SCENARIOS")
        .ok()
        .filter(|_| selected)
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "scn"))
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|p| {
            let name = p.file_stem()?.to_string_lossy().into_owned();
            if !only.is_empty() && !only.iter().any(|w| name.contains(w.as_str())) {
                return None;
            }
            let text = fs::read_to_string(p).expect("read scenario");
            Some(scenario::parse(&name, &text).unwrap_or_else(|e| panic!("{e}")))
        })
        .collect()
}

#[test]
fn every_scenario_file_parses() {
    assert!(
        scenarios(false).len() >= 8,
        "tests/vm/scenarios holds the issue's 8 cases"
    );
    // The pending scenarios (not run by default) must parse too; the
    // folder is there only while some scenario waits in it.
    let dir = repo().join("tests/vm/pending");
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => panic!("{}: {e}", dir.display()),
    };
    for e in entries {
        let p = e.expect("dir entry").path();
        if p.extension().is_some_and(|e| e == "scn") {
            let name = p.file_stem().expect("a file name").to_string_lossy();
            let text = fs::read_to_string(&p).expect("read scenario");
            scenario::parse(&name, &text).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// The order the scenarios start in: the `alone` ones first (no guest
/// runs yet, so none waits for a neighbour to end while a core idles),
/// then the longest first, so that no long scenario starts near the end
/// and runs on while the other core idles. A scenario's length is known
/// only once it ran; the sum of its boots' timeouts (which grow with its
/// generated layouts) stands for it.
fn start_order(all: &[Scenario]) -> Vec<&Scenario> {
    let mut order: Vec<&Scenario> = all.iter().collect();
    order.sort_by_key(|s| {
        let budget: u64 = s.boots.iter().map(boot_timeout).sum();
        (!s.alone, std::cmp::Reverse(budget))
    });
    order
}

#[test]
fn kernel_in_the_loop() {
    let all = scenarios(true);
    assert!(!all.is_empty(), "no scenario selected");
    let vm = vm_dir();
    let jobs: usize = std::env::var("DISKALIGN_VM_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2)
        .max(1);
    // Popped from the end: the first to start last.
    let mut queue = start_order(&all);
    queue.reverse();
    let queue = Mutex::new(queue);
    let results = Mutex::new(Vec::new());
    // An `alone` scenario holds the machine to itself; the others share it.
    let machine = std::sync::RwLock::new(());
    std::thread::scope(|sc| {
        for _ in 0..jobs {
            sc.spawn(|| loop {
                let Some(s) = queue.lock().unwrap().pop() else {
                    break;
                };
                let (_shared, _whole) = if s.alone {
                    (None, Some(machine.write().unwrap()))
                } else {
                    (Some(machine.read().unwrap()), None)
                };
                let t = std::time::Instant::now();
                let mut r = run_scenario(vm, s);
                // A timing scenario may run again; each failed attempt is
                // printed whole, so none passes unseen.
                for attempt in 1..s.attempts {
                    let Err(e) = &r else { break };
                    eprintln!(
                        "vm scenario {}: attempt {attempt} of {} FAILED in {:.0} s, running it again:\n{e}",
                        s.name,
                        s.attempts,
                        t.elapsed().as_secs_f64()
                    );
                    r = run_scenario(vm, s);
                }
                eprintln!(
                    "vm scenario {}: {} in {:.0} s",
                    s.name,
                    if r.is_ok() { "ok" } else { "FAILED" },
                    t.elapsed().as_secs_f64()
                );
                results.lock().unwrap().push((s.name.clone(), r));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let failures: Vec<String> = results
        .iter()
        .filter_map(|(n, r)| r.as_ref().err().map(|e| format!("scenario {n}: {e}")))
        .collect();
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}
