//! `watch` under real applications' workloads, each on a misaligned and
//! an aligned twin (an ext4 in a partition at sector 2049 and at sector
//! 2048 of a loop disk), with bpftrace counting the same requests in the
//! same run as the second tracer: PostgreSQL's pgbench (its WAL written
//! and fdatasync'd by the backends at every commit, its data files at the
//! checkpoint), and a filesystem's own (tar extracting a tree of small
//! files, then sync: the flusher and the journal write it back).
//!
//! bpftrace counts, on the disk, the write requests issued and those
//! straddling 4 KiB (tally.rs's rule, written out in its language), and
//! the write bios addressed to the partition; `watch`'s counts must equal
//! them. bpftrace's window holds `watch`'s, and the device is quiet in
//! between: each COMMAND ends with its data on the disk (PostgreSQL
//! stopped, or sync) and the ext4 has no lazy initialisation left.

mod common;

use common::{image, require_root, require_tool, sfdisk, sh, LoopDev, Mounted};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A loop disk with an ext4 in one partition at `start`, mounted.
struct Twin {
    mnt: Mounted,
    lo: LoopDev,
}

fn twin(dir: &Path, name: &str, start: u64) -> Twin {
    let img = image(dir, name, 640 << 20);
    sfdisk(
        &img,
        &format!("label: dos\nstart={start}, size=1200000, type=83\n"),
    );
    let lo = LoopDev::attach(&img, None);
    sh(
        "mkfs.ext4",
        &[
            "-q",
            "-b",
            "4096",
            "-E",
            "lazy_itable_init=0,lazy_journal_init=0",
            &lo.part(1),
        ],
    );
    let mnt = Mounted::new(&lo.part(1));
    Twin { mnt, lo }
}

fn kernel_dev(node: &str) -> u32 {
    let name = node.trim_start_matches("/dev/");
    let text = std::fs::read_to_string(format!("/sys/class/block/{name}/dev")).unwrap();
    let (ma, mi) = text.trim().split_once(':').unwrap();
    (ma.parse::<u32>().unwrap() << 20) | mi.parse::<u32>().unwrap()
}

/// The perf events process `pid` holds (bpftrace's attached probes).
fn perf_events(pid: u32) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|t| t.to_string_lossy().contains("perf_event"))
        .count()
}

/// bpftrace counting the twin's writes (tracefs mounted for it in a
/// private mount namespace, never on the host's tree).
struct Bpftrace(Child);

impl Bpftrace {
    fn start(t: &Twin) -> Bpftrace {
        require_tool("bpftrace");
        require_tool("unshare");
        let (disk, part) = (kernel_dev(&t.lo.dev), kernel_dev(&t.lo.part(1)));
        let program = format!(
            "tracepoint:block:block_rq_issue /args->dev == {disk} && strncmp(args->rwbs, \"W\", 1) == 0 && args->nr_sector > 0/ {{ \
               @writes = count(); $r = args->sector % 8; \
               if ($r + args->nr_sector > 8 && ($r != 0 || (args->sector + args->nr_sector) % 8 != 0)) {{ @straddling = count(); }} }} \
             tracepoint:block:block_bio_remap /args->old_dev == {part} && args->nr_sector > 0 && (strncmp(args->rwbs, \"W\", 1) == 0 || strncmp(args->rwbs, \"FW\", 2) == 0)/ {{ @partition = count(); }} \
             END {{ print(@writes); print(@straddling); print(@partition); }}"
        );
        let script =
            format!("mount -t tracefs none /sys/kernel/tracing && exec bpftrace -e '{program}'");
        let mut child = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Attached once it holds a perf event per probe: its "Attaching"
        // line is not a sign to wait on (once, bpftrace 0.17 held all its
        // probes and that line never reached the pipe, and the test hung).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while perf_events(child.id()) < 2 {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("bpftrace ended before it attached: {status}");
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("bpftrace did not attach its 2 probes within 60 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
        Bpftrace(child)
    }

    /// Its counts: (write requests, of those straddling, write bios to
    /// the partition).
    fn stop(mut self) -> (u64, u64, u64) {
        std::thread::sleep(std::time::Duration::from_millis(500));
        // SIGINT, again every 2 s until it exits: once here bpftrace 0.17
        // kept running after the first (the test then read its pipe for
        // 15 minutes), and exited at the second. Killed after 60 s.
        let pid = self.0.id().to_string();
        let started = std::time::Instant::now();
        while self.0.try_wait().unwrap().is_none() {
            if started.elapsed() > std::time::Duration::from_secs(60) {
                let _ = self.0.kill();
                panic!("bpftrace did not stop within 60 s of SIGINT");
            }
            let _ = Command::new("kill").args(["-INT", &pid]).status();
            for _ in 0..20 {
                if self.0.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
        let mut text = String::new();
        use std::io::Read;
        self.0
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        self.0.wait().unwrap();
        let get = |name: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("@{name}: ")))
                .map_or(0, |v| v.trim().parse().unwrap())
        };
        (get("writes"), get("straddling"), get("partition"))
    }
}

/// `watch DISK --json -- sh -c COMMAND` while bpftrace counts; the
/// document and bpftrace's counts.
fn watched(t: &Twin, command: &str) -> (Value, (u64, u64, u64)) {
    let bt = Bpftrace::start(t);
    let (out, _) = common::run(&[
        "watch", &t.lo.dev, "--json", "--for", "120s", "--", "sh", "-c", command,
    ]);
    let counts = bt.stop();
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(doc["command"]["exit_status"], 0, "{command}: {doc}");
    (doc, counts)
}

fn row<'a>(doc: &'a Value, dev: &str) -> &'a Value {
    doc["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device"] == dev.trim_start_matches("/dev/") && d["direction"] == "write")
        .unwrap_or_else(|| panic!("no write row for {dev}: {doc}"))
}

/// watch's counts equal bpftrace's; the misaligned twin's writes straddle
/// and its finding names `who` among their submitters, the aligned
/// twin's do not.
fn agree(t: &Twin, doc: &Value, bt: (u64, u64, u64), misaligned: bool, who: &str) {
    let (disk, part) = (row(doc, &t.lo.dev), row(doc, &t.lo.part(1)));
    eprintln!(
        "{} twin: watch {} writes issued, {} straddling, {} bios to the partition; bpftrace {} {} {}; submitters {}",
        if misaligned { "misaligned" } else { "aligned" },
        disk["ios"],
        disk["straddle_4k"],
        part["ios"],
        bt.0,
        bt.1,
        bt.2,
        disk["submitters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| format!("{} {}", s["name"], s["ios"]))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(disk["stage"], "issue");
    assert_eq!(disk["ios"], bt.0, "write requests issued: watch {disk}");
    assert_eq!(disk["straddle_4k"], bt.1, "straddling: watch {disk}");
    assert_eq!(part["ios"], bt.2, "bios to the partition: watch {part}");
    assert!(bt.0 > 100, "the workload wrote {} requests", bt.0);
    let share = disk["straddle_share"].as_f64().unwrap();
    let names: Vec<&str> = disk["submitters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&who), "{who} not among {names:?}");
    // One misalignment is one finding: the partition's, which accounts
    // for the disk's straddling writes.
    let finding = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "straddling-io" && f["facts"]["device"] == part["device"]);
    if misaligned {
        assert!(share > 0.9, "share {share}: {disk}");
        let f = finding.unwrap_or_else(|| panic!("no straddling-io: {doc}"));
        assert!(
            !f["facts"]["submitters"].as_array().unwrap().is_empty(),
            "{f}"
        );
    } else {
        assert_eq!(disk["straddle_4k"], 0, "{disk}");
        assert!(finding.is_none(), "{doc}");
    }
}

/// PostgreSQL's binaries (Debian's postgresql package).
fn pg_bin() -> PathBuf {
    let found = std::fs::read_dir("/usr/lib/postgresql").ok().and_then(|d| {
        d.filter_map(|e| e.ok())
            .map(|e| e.path().join("bin"))
            .find(|b| b.join("initdb").is_file())
    });
    found.expect("PostgreSQL is missing: run ./tools/test, which installs the postgresql package")
}

/// As the `postgres` user (PostgreSQL refuses root).
fn as_postgres(cmd: &str) -> String {
    format!("runuser -u postgres -- sh -c '{cmd}'")
}

/// A PostgreSQL server, stopped on drop if it still runs (a test that
/// failed halfway), so its filesystem can be unmounted.
struct Server(String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = common::sh_status("sh", &["-c", &as_postgres(&self.0)]);
    }
}

/// A PostgreSQL cluster on the twin's ext4, started, with pgbench's
/// tables; returns the server and the command that runs pgbench and
/// stops the server (its shutdown checkpoint written before the command
/// ends).
fn postgres(t: &Twin) -> (Server, String) {
    require_tool("runuser");
    let bin = pg_bin();
    let root = t.mnt.dir.path();
    let data = root.join("pg");
    std::fs::create_dir(&data).unwrap();
    sh(
        "chown",
        &["-R", "postgres:postgres", &root.display().to_string()],
    );
    let (d, b) = (data.display(), bin.display());
    // No background writes after the command: no autovacuum, no bgwriter,
    // no timed checkpoint; the socket in the data directory, no TCP.
    let opts = "-c listen_addresses= -c autovacuum=off -c bgwriter_lru_maxpages=0 -c checkpoint_timeout=1h -c max_wal_size=4GB";
    let run = |cmd: String| {
        let (code, out) = common::sh_status("sh", &["-c", &as_postgres(&cmd)]);
        assert_eq!(code, 0, "{cmd}: {out}");
    };
    run(format!("{b}/initdb -D {d} >/dev/null"));
    run(format!(
        "{b}/pg_ctl -s -D {d} -l {d}/log -o \"{opts} -k {d} -p 54391\" -w start"
    ));
    let server = Server(format!("{b}/pg_ctl -s -D {d} -m immediate -w stop"));
    run(format!(
        "{b}/pgbench -q -h {d} -p 54391 -i -s 2 postgres >/dev/null 2>&1 && {b}/psql -q -h {d} -p 54391 -c CHECKPOINT postgres"
    ));
    sh("sync", &[]);
    let command = as_postgres(&format!(
        "{b}/pgbench -h {d} -p 54391 -c 4 -j 2 -T 6 postgres >/dev/null 2>&1 && {b}/pg_ctl -s -D {d} -m fast -w stop && sync"
    ));
    (server, command)
}

#[test]
fn pgbench_on_twins_counts_as_bpftrace_does() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    for (start, misaligned) in [(2049, true), (2048, false)] {
        let t = twin(dir.path(), &format!("pg{start}.img"), start);
        let (_server, command) = postgres(&t);
        let (doc, bt) = watched(&t, &command);
        agree(&t, &doc, bt, misaligned, "postgres");
    }
}

/// A tree like a source tree's: 1500 files of 100 bytes to 48 KiB in 30
/// directories, tarred.
fn tarball(dir: &Path) -> PathBuf {
    let src = dir.join("tree");
    let mut seed: u64 = 38;
    for i in 0..1500u64 {
        let d = src.join(format!("d{}", i % 30));
        std::fs::create_dir_all(&d).unwrap();
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let len = 100 + (seed >> 33) as usize % (48 << 10);
        std::fs::write(d.join(format!("f{i}.c")), vec![b'x' ^ (i as u8); len]).unwrap();
    }
    let tar = dir.join("tree.tar");
    sh(
        "tar",
        &[
            "-cf",
            &tar.display().to_string(),
            "-C",
            &dir.display().to_string(),
            "tree",
        ],
    );
    tar
}

#[test]
fn untar_on_twins_counts_as_bpftrace_does() {
    require_root();
    require_tool("tar");
    let dir = tempfile::tempdir().unwrap();
    let tar = tarball(dir.path());
    for (start, misaligned) in [(2049, true), (2048, false)] {
        let t = twin(dir.path(), &format!("fs{start}.img"), start);
        sh("sync", &[]);
        let command = format!(
            "tar -xf {} -C {} && sync",
            tar.display(),
            t.mnt.dir.path().display()
        );
        let (doc, bt) = watched(&t, &command);
        agree(&t, &doc, bt, misaligned, "writeback (kworker)");
    }
}
