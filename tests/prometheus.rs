//! `--prometheus` with the real parts: images made by sfdisk, mkfs.ext4 and
//! LVM, the file checked by `promtool check metrics`, served by Debian's
//! `prometheus-node-exporter` from its textfile collector on a loopback
//! port and scraped over HTTP; the alerting rules checked and unit-tested
//! by promtool, the systemd units by `systemd-analyze verify`. A missing
//! tool fails the test (./tools/test installs them).

mod common;

use common::lvm::striped_image;
use common::*;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tempfile::TempDir;

const MIB: u64 = 1 << 20;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// One sample of the text format.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// The samples of a text-format document. Label values are unescaped;
/// empty ones are dropped, as PromQL sees them.
fn parse(text: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|e| panic!("{line}: {e}")),
        };
        let (name, mut rest) = match series.split_once('{') {
            Some((n, r)) => (n, r.strip_suffix('}').unwrap()),
            None => (series, ""),
        };
        let mut labels = BTreeMap::new();
        while !rest.is_empty() {
            let (key, after) = rest.split_once("=\"").unwrap();
            let mut v = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                match chars.next().unwrap() {
                    (_, '\\') => match chars.next().unwrap().1 {
                        'n' => v.push('\n'),
                        c => v.push(c),
                    },
                    (i, '"') => break i,
                    (_, c) => v.push(c),
                }
            };
            if !v.is_empty() {
                labels.insert(key.to_string(), v);
            }
            rest = after[end + 1..].trim_start_matches(',');
        }
        out.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    out
}

/// The value of the one sample named `name` with exactly these labels
/// (an empty value is the label's absence).
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    let want: BTreeMap<String, String> = labels
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let found: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.name == name && s.labels == want)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{name}{want:?}: {} samples among\n{:#?}",
        found.len(),
        samples
            .iter()
            .filter(|s| s.name == name)
            .collect::<Vec<_>>()
    );
    found[0].value
}

/// Every sample named `name`.
fn named<'a>(samples: &'a [Sample], name: &str) -> Vec<&'a Sample> {
    samples.iter().filter(|s| s.name == name).collect()
}

/// `promtool check metrics` on a file: valid and without lint problems.
fn promtool_check_metrics(file: &Path) {
    require_tool("promtool");
    let out = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(file).unwrap())
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && text.trim().is_empty(),
        "promtool check metrics {}: {text}\n{}",
        file.display(),
        std::fs::read_to_string(file).unwrap()
    );
}

/// The names in a directory, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Debian's node_exporter with only its textfile collector, reading `dir`,
/// on a loopback port. Killed on drop, also after a panic.
struct NodeExporter {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl NodeExporter {
    fn start(dir: &Path, log: PathBuf) -> NodeExporter {
        NodeExporter::start_with(dir, log, &[])
    }

    /// With the collectors `extra` enables beside the textfile one.
    fn start_with(dir: &Path, log: PathBuf, extra: &[&str]) -> NodeExporter {
        require_tool("prometheus-node-exporter");
        // A port another process takes between our probe and its bind
        // makes node_exporter exit: try another one.
        for _ in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let child = Command::new("prometheus-node-exporter")
                .args([
                    "--collector.disable-defaults".to_string(),
                    "--collector.textfile".into(),
                    format!("--collector.textfile.directory={}", dir.display()),
                    format!("--web.listen-address=127.0.0.1:{port}"),
                ])
                .args(extra)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .expect("start prometheus-node-exporter");
            let mut ne = NodeExporter {
                child,
                port,
                log: log.clone(),
            };
            if ne.wait_until_it_answers() {
                return ne;
            }
            assert!(
                ne.log_text().contains("address already in use"),
                "prometheus-node-exporter exited:\n{}",
                ne.log_text()
            );
        }
        panic!("prometheus-node-exporter found no free port in 3 tries");
    }

    /// True once this node_exporter listens on its port (its log says so,
    /// and the port answers); false if it exited (the port was taken).
    fn wait_until_it_answers(&mut self) -> bool {
        let listening = format!("address=127.0.0.1:{}", self.port);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if self.child.try_wait().unwrap().is_some() {
                return false;
            }
            let log = self.log_text();
            if log
                .lines()
                .any(|l| l.contains("Listening on") && l.contains(&listening))
                && TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            {
                return true;
            }
            assert!(
                Instant::now() < deadline,
                "prometheus-node-exporter did not answer on port {} within 30 s:\n{log}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// GET /metrics over loopback (HTTP/1.0: the server closes the
    /// connection after the body).
    fn scrape(&self) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        let mut response = String::new();
        s.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.0 200"), "{head}");
        body.to_string()
    }

    /// The scrape, checked the way node_exporter reports trouble with a
    /// textfile: its error gauge and its log (a repeated series is only
    /// logged, and drops the family).
    fn scrape_clean(&self) -> (String, Vec<Sample>) {
        let body = self.scrape();
        let samples = parse(&body);
        assert_eq!(
            value(&samples, "node_textfile_scrape_error", &[]),
            0.0,
            "{body}"
        );
        let errors: Vec<String> = self
            .log_text()
            .lines()
            .filter(|l| l.contains("level=error"))
            .map(str::to_string)
            .collect();
        assert!(errors.is_empty(), "node_exporter logged:\n{errors:#?}");
        (body, samples)
    }
}

impl Drop for NodeExporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A 64 MiB GPT image: partition 1 on 1 MiB with ext4 (4 KiB blocks)
/// inside, partition 2 at sector 43015, 3584 bytes past a 4 KiB boundary.
fn two_partitions(dir: &Path) -> PathBuf {
    let img = image(dir, "fleet.img", 64 * MIB);
    sfdisk(
        &img,
        "label: gpt\nstart=2048, size=40960\nstart=43015, size=20480\n",
    );
    let p = img.display().to_string();
    sh(
        "mkfs.ext4",
        &["-q", "-F", "-b", "4096", "-E", "offset=1048576", &p, "16M"],
    );
    img
}

#[test]
fn check_metrics_as_node_exporter_serves_them() {
    let dir = TempDir::new().unwrap();
    let textfiles = dir.path().join("textfile");
    std::fs::create_dir(&textfiles).unwrap();
    let img = two_partitions(dir.path());
    let target = img.to_str().unwrap();
    let ne = NodeExporter::start(&textfiles, dir.path().join("node-exporter.log"));

    let file = textfiles.join("diskalign.prom");
    let before = now();
    let (out, err, code) = run_full(&[
        "check",
        target,
        "--topology",
        "pbs=4096",
        "--prometheus",
        file.to_str().unwrap(),
    ]);
    let after = now();
    assert_eq!((code, err.as_str()), (1, ""), "{out}");
    assert!(
        out.contains("partition"),
        "the report still goes to stdout: {out}"
    );
    // The temporary file was renamed, not left beside it.
    assert_eq!(listing(&textfiles), ["diskalign.prom"]);
    promtool_check_metrics(&file);

    let (body, s) = ne.scrape_clean();
    assert!(
        body.contains("# TYPE diskalign_partition_aligned gauge"),
        "{body}"
    );
    let t = ("target", target);
    // One timestamp, the run's start; the deprecated name says the same.
    let at = value(
        &s,
        "diskalign_last_run_timestamp_seconds",
        &[("command", "check")],
    );
    assert!(
        before - 0.001 <= at && at <= after + 0.001,
        "{before} {at} {after}"
    );
    assert_eq!(value(&s, "diskalign_check_timestamp_seconds", &[]), at);
    assert_eq!(value(&s, "diskalign_target_checked", &[t]), 1.0);
    let exit = value(&s, "diskalign_check_exit_status", &[("fail_on", "warning")]);
    assert_eq!(exit, 1.0);
    assert_eq!(value(&s, "diskalign_target_aligned", &[t]), 0.0);
    let partition = |n| value(&s, "diskalign_partition_aligned", &[t, ("partition", n)]);
    assert_eq!((partition("1"), partition("2")), (1.0, 0.0));
    let ext4 = [t, ("layer", "partition 1 / ext4"), ("kind", "filesystem")];
    assert_eq!(value(&s, "diskalign_layer_aligned", &ext4), 1.0);
    // Partition roots are in diskalign_partition_aligned only.
    assert!(named(&s, "diskalign_layer_aligned")
        .iter()
        .all(|x| x.labels["kind"] != "partition"));
    let misaligned = [t, ("severity", "error"), ("code", "start-misaligned")];
    assert_eq!(value(&s, "diskalign_findings", &misaligned), 1.0);
    let totals: Vec<f64> = ["info", "warning", "error"]
        .iter()
        .map(|sev| value(&s, "diskalign_target_findings", &[t, ("severity", sev)]))
        .collect();
    assert!(totals[2] >= 1.0, "{totals:?}");
    // The per-severity totals are the per-code counts summed.
    for (sev, total) in ["info", "warning", "error"].iter().zip(&totals) {
        let sum: f64 = named(&s, "diskalign_findings")
            .iter()
            .filter(|x| x.labels["severity"] == *sev)
            .map(|x| x.value)
            .sum();
        assert_eq!(sum, *total, "{sev}");
    }

    // A second run replaces the file under the running exporter.
    let (_, err, code) = run_full(&["check", target, "--prometheus", file.to_str().unwrap()]);
    assert_eq!((code, err.as_str()), (1, ""));
    assert_eq!(listing(&textfiles), ["diskalign.prom"]);
    let (_, s) = ne.scrape_clean();
    // Without --topology the image is judged 512/512: partition 2 is off
    // 4 KiB (a warning), no longer off the kernel's rule.
    assert!(named(&s, "diskalign_findings")
        .iter()
        .all(|x| x.labels["code"] != "start-misaligned"));
    assert_eq!(
        value(&s, "diskalign_partition_aligned", &[t, ("partition", "2")]),
        0.0
    );
    assert!(
        value(
            &s,
            "diskalign_last_run_timestamp_seconds",
            &[("command", "check")]
        ) >= at
    );
}

#[test]
fn topology_hints_as_node_exporter_serves_them() {
    let dir = TempDir::new().unwrap();
    let textfiles = dir.path().join("textfile");
    std::fs::create_dir(&textfiles).unwrap();
    let ne = NodeExporter::start(&textfiles, dir.path().join("node-exporter.log"));
    let file = textfiles.join("diskalign-topology.prom");
    let root = repo("tests/fixtures/sysfs/usb-bridge");
    let (_, err, code) = run_full(&[
        "--sysfs-root",
        root.to_str().unwrap(),
        "topology",
        "--prometheus",
        file.to_str().unwrap(),
    ]);
    assert_eq!((code, err.as_str()), (1, ""));
    assert_eq!(listing(&textfiles), ["diskalign-topology.prom"]);
    promtool_check_metrics(&file);
    let (_, s) = ne.scrape_clean();
    // `device`, as node_exporter's node_disk_* series name a disk.
    let sda = ("device", "sda");
    assert_eq!(value(&s, "diskalign_disk_read", &[sda]), 1.0);
    let at = value(
        &s,
        "diskalign_last_run_timestamp_seconds",
        &[("command", "topology")],
    );
    assert!(at > 1.6e9);
    assert_eq!(value(&s, "diskalign_topology_timestamp_seconds", &[]), at);
    assert_eq!(
        value(&s, "diskalign_disk_logical_block_bytes", &[sda]),
        512.0
    );
    assert_eq!(
        value(&s, "diskalign_disk_physical_block_bytes", &[sda]),
        4096.0
    );
    assert_eq!(value(&s, "diskalign_disk_minimum_io_bytes", &[sda]), 4096.0);
    assert_eq!(
        value(&s, "diskalign_disk_optimal_io_bytes", &[sda]),
        33553920.0
    );
    assert_eq!(
        value(&s, "diskalign_disk_alignment_offset_bytes", &[sda]),
        0.0
    );
    // Not zoned: zone size and count 0, no conventional zones series.
    assert_eq!(value(&s, "diskalign_disk_zone_size_bytes", &[sda]), 0.0);
    assert_eq!(value(&s, "diskalign_disk_zones", &[sda]), 0.0);
    assert!(!s
        .iter()
        .any(|x| x.name == "diskalign_disk_conventional_zones"));
    let hint = [
        sda,
        ("severity", "warning"),
        ("code", "optimal-io-suspicious"),
    ];
    assert_eq!(value(&s, "diskalign_topology_findings", &hint), 1.0);
    let warnings = [sda, ("severity", "warning")];
    assert_eq!(value(&s, "diskalign_disk_findings", &warnings), 1.0);
}

#[test]
fn striped_lv_write_amplification() {
    require_root();
    for (p2_start, amplification, aligned) in [(53251, 1.5, 0.0), (53248, 1.0, 1.0)] {
        let dir = TempDir::new().unwrap();
        let img = striped_image(&dir, p2_start);
        let file = dir.path().join("lv.prom");
        let (_, err, _) = run_full(&[
            "check",
            img.to_str().unwrap(),
            "--prometheus",
            file.to_str().unwrap(),
        ]);
        assert_eq!(err, "");
        promtool_check_metrics(&file);
        let s = parse(&std::fs::read_to_string(&file).unwrap());
        // The VG is assembled across targets: no target label.
        let lv = named(&s, "diskalign_layer_aligned")
            .into_iter()
            .find(|x| x.labels["kind"] == "lvm-lv")
            .expect("an LV layer");
        let layer = lv.labels["layer"].clone();
        assert!(
            layer.ends_with(" / LV vg0/lv0") && !lv.labels.contains_key("target"),
            "{lv:?}"
        );
        assert_eq!(lv.value, aligned, "{layer}");
        assert_eq!(
            value(&s, "diskalign_write_amplification", &[("layer", &layer)]),
            amplification,
            "partition 2 at sector {p2_start}"
        );
    }
}

/// A tmpfs of one page mounted on `dir`, unmounted when dropped (also
/// when the test fails).
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &Path) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        sh(
            "mount",
            &[
                "-t",
                "tmpfs",
                "-o",
                "size=4k",
                "tmpfs",
                dir.to_str().unwrap(),
            ],
        );
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn an_unwritable_file_is_one_line_and_status_bit_2() {
    let dir = TempDir::new().unwrap();
    let img = two_partitions(dir.path());
    let target = img.to_str().unwrap();
    // A missing directory, or a directory where the file should go, is
    // refused before the check: one line, exit 2, no report.
    let missing = dir.path().join("no/such/dir/diskalign.prom");
    let (out, err, code) = run_full(&["check", target, "--prometheus", missing.to_str().unwrap()]);
    assert_eq!(
        (out.as_str(), code),
        ("", 2),
        "refused before the run: {err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "diskalign: error: --prometheus {}: cannot write there: ",
            missing.display()
        )),
        "{err}"
    );
    let textfiles = dir.path().join("textfile");
    std::fs::create_dir_all(textfiles.join("busy.prom/inside")).unwrap();
    let busy = textfiles.join("busy.prom");
    let (_, err, code) = run_full(&["check", target, "--prometheus", busy.to_str().unwrap()]);
    assert_eq!((code, err.lines().count()), (2, 1), "{err}");
    assert!(err.contains("a directory"), "{err}");
    assert_eq!(listing(&textfiles), ["busy.prom"]);
    // topology too.
    let root = repo("tests/fixtures/sysfs/nvme-4kn");
    let (_, err, code) = run_full(&[
        "--sysfs-root",
        root.to_str().unwrap(),
        "topology",
        "--prometheus",
        missing.to_str().unwrap(),
    ]);
    assert_eq!((code, err.lines().count()), (2, 1), "{err}");
    // A file that can be made but not filled (a full filesystem): the
    // report is still printed, one line names the file, the status gets
    // bit 2 beside the findings' 1, and no temporary file is left.
    let full = dir.path().join("full");
    let _tmpfs = Tmpfs::mount(&full);
    let filler = format!("of={}", full.join("filler").display());
    let _ = Command::new("dd")
        .args(["if=/dev/zero", &filler, "bs=4096", "count=2", "status=none"])
        .status();
    let prom = full.join("diskalign.prom");
    let (out, err, code) = run_full(&["check", target, "--prometheus", prom.to_str().unwrap()]);
    assert_eq!(code, 1 | 2, "findings and the unwritten file: {err}");
    assert!(!out.is_empty(), "the report is still printed");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("diskalign: cannot write {}: ", prom.display())),
        "{err}"
    );
    assert_eq!(listing(&full), ["filler"]);
}

#[test]
fn alerting_rules_are_valid_and_fire_as_their_tests_say() {
    let rules = repo("contrib/prometheus/diskalign-alerts.yml");
    let (code, out) = sh_status("promtool", &["check", "rules", rules.to_str().unwrap()]);
    assert!(code == 0 && out.contains("SUCCESS: 8 rules found"), "{out}");
    let tests = repo("contrib/prometheus/diskalign-alerts.test.yml");
    let (code, out) = sh_status("promtool", &["test", "rules", tests.to_str().unwrap()]);
    assert!(code == 0 && out.contains("SUCCESS"), "{out}");
}

/// The command lines of the systemd service and the cron job.
fn contrib_commands() -> Vec<String> {
    let service = std::fs::read_to_string(repo("contrib/systemd/diskalign.service")).unwrap();
    let cron = std::fs::read_to_string(repo("contrib/cron/diskalign")).unwrap();
    let mut out: Vec<String> = service
        .lines()
        .filter_map(|l| l.strip_prefix("ExecStart="))
        .map(str::to_string)
        .collect();
    let job = cron
        .lines()
        .find(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap();
    // Minute, hour, day, month, weekday, user, then the commands.
    let commands = job.split_whitespace().skip(6).collect::<Vec<_>>().join(" ");
    out.extend(
        commands
            .split(';')
            .map(|c| c.trim().trim_end_matches(">/dev/null").trim().to_string()),
    );
    out
}

#[test]
fn the_systemd_units_verify_and_every_contrib_command_parses() {
    let commands = contrib_commands();
    assert_eq!(commands.len(), 4, "{commands:?}");
    for c in &commands {
        assert!(
            c.contains("--prometheus /var/lib/prometheus/node-exporter/"),
            "{c}"
        );
        let args: Vec<&str> = c.split_whitespace().collect();
        assert_eq!(args[0], "diskalign", "{c}");
        if let Err(e) = <diskalign::cli::Cli as clap::Parser>::try_parse_from(&args) {
            panic!("{c}: {e}");
        }
    }
    // systemd-analyze checks that ExecStart is executable: point it at
    // this build.
    let dir = TempDir::new().unwrap();
    let service = std::fs::read_to_string(repo("contrib/systemd/diskalign.service"))
        .unwrap()
        .replace("ExecStart=diskalign ", &format!("ExecStart={} ", bin()));
    std::fs::write(dir.path().join("diskalign.service"), service).unwrap();
    std::fs::copy(
        repo("contrib/systemd/diskalign.timer"),
        dir.path().join("diskalign.timer"),
    )
    .unwrap();
    let unit = |n: &str| dir.path().join(n).display().to_string();
    let (code, out) = sh_status(
        "systemd-analyze",
        &[
            "verify",
            "--recursive-errors=no",
            &unit("diskalign.service"),
            &unit("diskalign.timer"),
        ],
    );
    // Only these units, not the machine's own they pull in, are judged;
    // an unknown key is then an error, and any remark a failure.
    assert!(
        code == 0 && out.trim().is_empty(),
        "systemd-analyze verify: {out}"
    );
}

/// The labels node_exporter's scrape adds to every series of a textfile.
const INSTANCE: &str = "db-07:9100";
const JOB: &str = "node";

/// A label value as PromQL's series notation wants it.
fn promql_escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The samples of real textfiles as promtool's `input_series`, `hours`
/// hourly values each: with the labels the scrape adds, and every
/// `*_timestamp_seconds` moved to the test's clock (promtool's starts at
/// 0), so the run happened at its time 0.
fn input_series(samples: &[Sample], hours: u32) -> Vec<serde_json::Value> {
    samples
        .iter()
        .map(|s| {
            let mut labels: Vec<String> = s
                .labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", promql_escape(v)))
                .collect();
            labels.push(format!("instance=\"{INSTANCE}\""));
            labels.push(format!("job=\"{JOB}\""));
            let v = if s.name.ends_with("_timestamp_seconds") {
                0.0
            } else {
                s.value
            };
            serde_json::json!({
                "series": format!("{}{{{}}}", s.name, labels.join(",")),
                "values": format!("{v}x{hours}"),
            })
        })
        .collect()
}

/// An expected alert: the rule's severity, the scrape's labels and
/// `labels`, the annotations (each an exact string).
fn alert(
    severity: &str,
    labels: &[(&str, &str)],
    annotations: &[(&str, String)],
) -> serde_json::Value {
    let mut l = serde_json::Map::new();
    l.insert("severity".into(), severity.into());
    l.insert("instance".into(), INSTANCE.into());
    l.insert("job".into(), JOB.into());
    for (k, v) in labels.iter().filter(|(_, v)| !v.is_empty()) {
        l.insert(k.to_string(), (*v).into());
    }
    let a: serde_json::Map<String, serde_json::Value> = annotations
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone().into()))
        .collect();
    serde_json::json!({ "exp_labels": l, "exp_annotations": a })
}

/// The `identity` annotation of the target alerts.
fn identity(device: &str, ptuuid: &str) -> String {
    format!("device={device} model= serial= wwn= ptuuid={ptuuid}")
}

/// The alerting rules, on the series of real runs: `check` of a loop
/// device (partition 2 off 4 KiB) beside an image whose partition leaves
/// the disk and a target that does not exist, and `topology` of the USB
/// bridge fixture. promtool runs the rules over those series: the alerts
/// that should fire do, with the disk's identity joined in, the others
/// stay silent, and two days later both runs are stale.
#[test]
fn alerting_rules_fire_on_the_series_of_a_real_run() {
    require_tool("promtool");
    let dir = TempDir::new().unwrap();
    let img = two_partitions(dir.path());
    let lo = LoopDev::attach(&img, None);
    let device = lo.dev.trim_start_matches("/dev/").to_string();
    let damaged = image(dir.path(), "damaged.img", 64 * MIB);
    sfdisk(
        &damaged,
        "label: dos\nlabel-id: 0x11223344\nstart=2048, type=83\n",
    );
    std::fs::OpenOptions::new()
        .write(true)
        .open(&damaged)
        .unwrap()
        .set_len(32 * MIB)
        .unwrap();
    let (damaged, missing) = (damaged.to_str().unwrap(), "/nonexistent/disk.img");
    let check_file = dir.path().join("diskalign.prom");
    let (out, err, code) = run_full(&[
        "check",
        &lo.dev,
        damaged,
        missing,
        "--topology",
        "pbs=4096",
        "--prometheus",
        check_file.to_str().unwrap(),
    ]);
    assert_eq!(code, 3, "{out}{err}");
    let topo_file = dir.path().join("diskalign-topology.prom");
    let root = repo("tests/fixtures/sysfs/usb-bridge");
    let (_, err, code) = run_full(&[
        "--sysfs-root",
        root.to_str().unwrap(),
        "topology",
        "--prometheus",
        topo_file.to_str().unwrap(),
    ]);
    assert_eq!((code, err.as_str()), (1, ""));
    promtool_check_metrics(&check_file);
    promtool_check_metrics(&topo_file);
    let checked = parse(&std::fs::read_to_string(&check_file).unwrap());
    let topo = parse(&std::fs::read_to_string(&topo_file).unwrap());

    // The identity the alerts carry is the disk's own: blkid's PTUUID.
    let ptuuid = sh("blkid", &["-p", "-s", "PTUUID", "-o", "value", &lo.dev]);
    let ptuuid = String::from_utf8_lossy(&ptuuid.stdout).trim().to_string();
    assert_eq!(ptuuid.len(), 36, "{ptuuid}");
    let info = [
        ("target", lo.dev.as_str()),
        ("device", device.as_str()),
        ("ptuuid", ptuuid.as_str()),
    ];
    assert_eq!(value(&checked, "diskalign_disk_info", &info), 1.0);
    let errors = value(
        &checked,
        "diskalign_target_findings",
        &[
            ("target", &lo.dev),
            ("device", &device),
            ("severity", "error"),
        ],
    );
    assert!(errors >= 1.0, "{errors}");

    let series: Vec<serde_json::Value> = input_series(&checked, 50)
        .into_iter()
        .chain(input_series(&topo, 50))
        .collect();
    let t = lo.dev.as_str();
    let fix = |t: &str| {
        format!("diskalign check found a warning or error about where the partition starts, ends or how large it is; run `diskalign check {t}` on the host for the findings and `diskalign plan {t}` for the fix.")
    };
    let at_1h = |name: &str, alerts: Vec<serde_json::Value>| serde_json::json!({ "eval_time": "1h", "alertname": name, "exp_alerts": alerts });
    let stale = |command: &str| {
        alert(
            "warning",
            &[("command", command)],
            &[
                ("summary", format!("diskalign {command} has not run on {INSTANCE} for 2d 1h 0m 0s")),
                ("description", "The metrics file is older than two days: the timer or cron job stopped running, or fails before writing (systemctl status diskalign.service).".into()),
            ],
        )
    };
    let tests = serde_json::json!({
        "rule_files": [repo("contrib/prometheus/diskalign-alerts.yml")],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1h",
            "input_series": series,
            "alert_rule_test": [
                // Partition 1 is on 1 MiB; the damaged image's partition
                // is placed well, its table is what is wrong.
                at_1h("DiskalignPartitionMisaligned", vec![alert(
                    "warning",
                    &[("target", t), ("partition", "2"), ("device", &device), ("ptuuid", &ptuuid)],
                    &[
                        ("summary", format!("Partition 2 of {t} on {INSTANCE} is misaligned")),
                        ("description", fix(t)),
                        ("identity", identity(&device, &ptuuid)),
                    ],
                )]),
                at_1h("DiskalignLayerMisaligned", vec![]),
                at_1h("DiskalignStripeWriteAmplification", vec![]),
                at_1h("DiskalignErrorFindings", [(t, device.as_str(), errors), (damaged, "", 1.0)].iter().map(|(target, dev, n)| alert(
                    "warning",
                    &[("target", target), ("device", dev)],
                    &[
                        ("summary", format!("diskalign found {n} error(s) on {target} on {INSTANCE}")),
                        ("description", "An error finding: a misaligned start, a damaged partition table or metadata, a table for another sector size. `diskalign_findings{severity=\"error\"}` names the codes (docs/findings.md).".into()),
                    ],
                )).collect()),
                at_1h("DiskalignTableDamaged", vec![alert(
                    "critical",
                    &[("target", damaged), ("status", "damaged"), ("ptuuid", "11223344")],
                    &[
                        ("summary", format!("Damaged partition table or metadata on {damaged} on {INSTANCE}")),
                        ("description", format!("diskalign check judged the target damaged: metadata that does not read back, or partitions that overlap or leave the disk. Back up before writing to it; `diskalign check {damaged}` names what, `diskalign plan {damaged}` what can be repaired.")),
                        ("identity", identity("", "11223344")),
                    ],
                )]),
                at_1h("DiskalignTargetNotChecked", vec![alert(
                    "warning",
                    &[("target", missing), ("device", "")],
                    &[
                        ("summary", format!("diskalign could not check {missing} on {INSTANCE}")),
                        ("description", "The target could not be read or checked; the reason is on diskalign's stderr (the journal of diskalign.service, or cron's mail).".into()),
                    ],
                )]),
                at_1h("DiskalignTopologyHint", vec![alert(
                    "info",
                    &[("device", "sda")],
                    &[
                        ("summary", format!("Suspicious I/O limits on sda on {INSTANCE}")),
                        ("description", "diskalign topology flagged the limits the disk reports as not to be trusted (an optimal I/O size a USB bridge made up, a hidden 4K disk, ...); `diskalign_topology_findings` names the codes, `diskalign topology sda` explains them.".into()),
                    ],
                )]),
                at_1h("DiskalignRunStale", vec![]),
                { "eval_time": "47h", "alertname": "DiskalignRunStale", "exp_alerts": [] },
                { "eval_time": "49h", "alertname": "DiskalignRunStale",
                  "exp_alerts": [stale("check"), stale("topology")] },
            ],
        }],
    });
    // JSON is YAML: promtool reads the file as it is.
    let file = dir.path().join("real-run.test.yml");
    std::fs::write(&file, serde_json::to_string_pretty(&tests).unwrap()).unwrap();
    let (code, out) = sh_status("promtool", &["test", "rules", file.to_str().unwrap()]);
    assert!(code == 0 && out.contains("SUCCESS"), "{out}");
}

/// Every metric name a PromQL expression mentions.
fn metric_names(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(i) = rest.find("diskalign_") {
        let name: String = rest[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[i + name.len()..];
        out.push(name);
    }
    out
}

/// The Grafana dashboard parses, every query is valid PromQL (promtool
/// checks each as a recording rule, `$instance` as `.*`), and it asks only
/// for metrics diskalign writes: the families of real check runs (one of
/// them a striped LV) and of topology.
#[test]
fn the_dashboard_asks_only_for_metrics_diskalign_writes() {
    require_root();
    let text = std::fs::read_to_string(repo("contrib/grafana/diskalign-dashboard.json")).unwrap();
    let dash: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let exprs: Vec<String> = dash["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().iter())
        .map(|t| t["expr"].as_str().unwrap().to_string())
        .collect();
    assert!(exprs.len() >= 8, "{exprs:?}");

    // The families diskalign writes, from real runs.
    let dir = TempDir::new().unwrap();
    let mut written = std::collections::BTreeSet::new();
    let mut families = |args: &[&str], file: &Path| {
        let (_, err, _) = run_full(args);
        assert!(file.exists(), "{args:?}: {err}");
        for l in std::fs::read_to_string(file).unwrap().lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                written.insert(rest.split(' ').next().unwrap().to_string());
            }
        }
    };
    let img = two_partitions(dir.path());
    let prom = dir.path().join("a.prom");
    families(
        &[
            "check",
            img.to_str().unwrap(),
            "/nonexistent",
            "--prometheus",
            prom.to_str().unwrap(),
        ],
        &prom,
    );
    let lv = striped_image(&dir, 53251);
    let prom = dir.path().join("lv.prom");
    families(
        &[
            "check",
            lv.to_str().unwrap(),
            "--prometheus",
            prom.to_str().unwrap(),
        ],
        &prom,
    );
    let root = repo("tests/fixtures/sysfs/usb-bridge");
    let prom = dir.path().join("topology.prom");
    families(
        &[
            "--sysfs-root",
            root.to_str().unwrap(),
            "topology",
            "--prometheus",
            prom.to_str().unwrap(),
        ],
        &prom,
    );
    for e in &exprs {
        let names = metric_names(e);
        assert!(!names.is_empty(), "{e}");
        for n in names {
            assert!(
                written.contains(&n),
                "the dashboard asks for {n}, which diskalign does not write ({written:?})"
            );
        }
    }
    // The variable's query too.
    let var = dash["templating"]["list"][0]["query"]["query"]
        .as_str()
        .unwrap();
    for n in metric_names(var) {
        assert!(written.contains(&n), "{n}");
    }

    // Each query is PromQL promtool accepts.
    let rules: Vec<serde_json::Value> = exprs
        .iter()
        .enumerate()
        .map(|(i, e)| serde_json::json!({ "record": format!("dashboard:query_{i}"), "expr": e.replace("$instance", ".*") }))
        .collect();
    let file = dir.path().join("dashboard-queries.yml");
    let doc = serde_json::json!({ "groups": [{ "name": "dashboard", "rules": rules }] });
    std::fs::write(&file, doc.to_string()).unwrap();
    let (code, out) = sh_status("promtool", &["check", "rules", file.to_str().unwrap()]);
    assert!(code == 0 && out.contains("SUCCESS"), "{out}");
}

/// `watch --prometheus` of a synthetic recording (tests/fixtures/watch,
/// made up, not traced) over the ao-3584 fixture tree: counters that
/// promtool accepts, served by node_exporter, with the recording's counts.
#[test]
fn watch_counters_as_node_exporter_serves_them() {
    let dir = TempDir::new().unwrap();
    let textfiles = dir.path().join("textfile");
    std::fs::create_dir(&textfiles).unwrap();
    let ne = NodeExporter::start(&textfiles, dir.path().join("node-exporter.log"));
    let file = textfiles.join("diskalign-watch.prom");
    let root = repo("tests/fixtures/sysfs/ao-3584");
    let rec = repo("tests/fixtures/watch/ao-3584.json");
    let (_, err, code) = run_full(&[
        "--sysfs-root",
        root.to_str().unwrap(),
        "watch",
        "sdb",
        "--replay",
        rec.to_str().unwrap(),
        "--prometheus",
        file.to_str().unwrap(),
    ]);
    assert_eq!((code, err.as_str()), (1, ""));
    promtool_check_metrics(&file);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("# TYPE diskalign_watch_ios_total counter\n"),
        "{text}"
    );
    let (_, s) = ne.scrape_clean();
    let write = |device: &'static str, layer: &'static str| {
        [("device", device), ("layer", layer), ("direction", "write")]
    };
    assert_eq!(
        value(&s, "diskalign_watch_ios_total", &write("sdb1", "partition")),
        1000.0
    );
    assert_eq!(
        value(
            &s,
            "diskalign_watch_off_4k_on_disk_total",
            &write("sdb1", "partition")
        ),
        1000.0
    );
    assert_eq!(
        value(
            &s,
            "diskalign_watch_off_4k_on_disk_total",
            &write("sdb2", "partition")
        ),
        0.0
    );
    assert_eq!(
        value(
            &s,
            "diskalign_watch_straddle_4k_total",
            &write("sdb", "disk")
        ),
        1000.0
    );
    assert_eq!(value(&s, "diskalign_watch_duration_seconds", &[]), 2.0);
    assert_eq!(value(&s, "diskalign_watch_lost_records_total", &[]), 0.0);
    assert_eq!(value(&s, "diskalign_watch_missed_events_total", &[]), 0.0);
    let found = [
        ("device", "sdb1"),
        ("severity", "error"),
        ("code", "straddling-io"),
    ];
    assert_eq!(value(&s, "diskalign_watch_findings", &found), 1.0);
    assert!(
        value(
            &s,
            "diskalign_last_run_timestamp_seconds",
            &[("command", "watch")]
        ) > 1.6e9
    );
    assert!(
        named(&s, "diskalign_watch_zone_crossing_writes_total").is_empty(),
        "no zoned device, no series"
    );
}

/// `watch --prometheus` of the zoned recording (tests/fixtures/watch,
/// made up, not traced) over the zoned-hm tree: the writes across a zone
/// boundary are a counter of the zoned disk's writes, which promtool
/// accepts, and the finding is there by its code.
#[test]
fn watch_counts_zone_crossing_writes_as_a_counter() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("diskalign-watch.prom");
    let (_, err, code) = run_full(&[
        "--sysfs-root",
        repo("tests/fixtures/sysfs/zoned-hm").to_str().unwrap(),
        "watch",
        "sdb",
        "--replay",
        repo("tests/fixtures/watch/zoned-hm.json").to_str().unwrap(),
        "--prometheus",
        file.to_str().unwrap(),
    ]);
    assert_eq!((code, err.as_str()), (1, ""));
    promtool_check_metrics(&file);
    let s = parse(&std::fs::read_to_string(&file).unwrap());
    let write = [("device", "sdb"), ("layer", "disk"), ("direction", "write")];
    assert_eq!(
        value(&s, "diskalign_watch_zone_crossing_writes_total", &write),
        60.0
    );
    assert_eq!(
        named(&s, "diskalign_watch_zone_crossing_writes_total").len(),
        1
    );
    let found = [
        ("device", "sdb"),
        ("severity", "error"),
        ("code", "zone-crossing-writes"),
    ];
    assert_eq!(value(&s, "diskalign_watch_findings", &found), 1.0);
}

/// A series as promtool's `exp_samples` writes it: the name (none for a
/// result without one) and every label, the scrape's included.
fn exp_labels(name: &str, labels: &[(&str, &str)]) -> String {
    let mut all: Vec<(String, String)> = labels
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.to_string(), promql_escape(v)))
        .collect();
    all.push(("instance".into(), INSTANCE.into()));
    all.push(("job".into(), JOB.into()));
    all.sort();
    let body: Vec<String> = all.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    format!("{name}{{{}}}", body.join(","))
}

/// `device` names a disk as node_exporter's `node_disk_*` series do: the
/// check of a loop device and the diskstats of a real node_exporter (its
/// exclusion of loop devices lifted), scraped together, join on
/// (instance, device) in promtool: the misaligned partition with the
/// disk's I/O, and diskalign's identity with node_exporter's.
#[test]
fn device_joins_node_exporters_disk_series() {
    require_tool("promtool");
    let dir = TempDir::new().unwrap();
    let textfiles = dir.path().join("textfile");
    std::fs::create_dir(&textfiles).unwrap();
    let img = two_partitions(dir.path());
    let lo = LoopDev::attach(&img, None);
    let device = lo.dev.trim_start_matches("/dev/").to_string();
    let file = textfiles.join("diskalign.prom");
    let (out, err, code) = run_full(&[
        "check",
        &lo.dev,
        "--topology",
        "pbs=4096",
        "--prometheus",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}{err}");
    // The udev database it reads disk properties from, empty (a
    // container may have none: it would log an error and go on).
    let udev = dir.path().join("udev-data");
    std::fs::create_dir(&udev).unwrap();
    let udev_flag = format!("--path.udev.data={}", udev.display());
    let ne = NodeExporter::start_with(
        &textfiles,
        dir.path().join("node-exporter.log"),
        &[
            "--collector.diskstats",
            "--collector.diskstats.device-exclude=^(z?ram|fd)[0-9]+$",
            &udev_flag,
        ],
    );
    let (_, s) = ne.scrape_clean();
    let io = value(
        &s,
        "node_disk_reads_completed_total",
        &[("device", &device)],
    );
    assert!(io >= 1.0, "check read the disk: {io}");
    // Both sets of series, as one Prometheus would hold them.
    let ours: Vec<Sample> = s
        .into_iter()
        .filter(|x| {
            x.name.starts_with("diskalign_")
                || (x.name.starts_with("node_disk_") && x.labels.get("device") == Some(&device))
        })
        .collect();
    let node_info = ours
        .iter()
        .find(|x| x.name == "node_disk_info")
        .expect("node_disk_info of the loop device");
    let (major, minor) = (
        node_info.labels["major"].clone(),
        node_info.labels["minor"].clone(),
    );
    let t = lo.dev.as_str();
    let ptuuid = ours
        .iter()
        .find(|x| x.name == "diskalign_disk_info")
        .map(|x| x.labels["ptuuid"].clone())
        .unwrap();
    let tests = serde_json::json!({
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1h",
            "input_series": input_series(&ours, 3),
            "promql_expr_test": [
                {
                    // The misaligned partitions of disks node_exporter sees.
                    "expr": "(diskalign_partition_aligned == 0) and on (instance, device) node_disk_reads_completed_total",
                    "eval_time": "1h",
                    "exp_samples": [{
                        "labels": exp_labels("diskalign_partition_aligned", &[("target", t), ("device", &device), ("partition", "2")]),
                        "value": 0,
                    }],
                },
                {
                    // diskalign's identity beside node_exporter's.
                    "expr": "diskalign_disk_info * on (instance, device) group_left (major, minor) node_disk_info",
                    "eval_time": "1h",
                    "exp_samples": [{
                        "labels": exp_labels("", &[("target", t), ("device", &device), ("ptuuid", &ptuuid), ("major", &major), ("minor", &minor)]),
                        "value": 1,
                    }],
                },
            ],
        }],
    });
    let test_file = dir.path().join("join.test.yml");
    std::fs::write(&test_file, serde_json::to_string_pretty(&tests).unwrap()).unwrap();
    let (code, out) = sh_status("promtool", &["test", "rules", test_file.to_str().unwrap()]);
    assert!(code == 0 && out.contains("SUCCESS"), "{out}");
}
