//! Metrics for fleets: `check` and `topology` in the Prometheus text
//! exposition format, for node_exporter's textfile collector
//! (docs/prometheus.md lists every series).
//!
//! Its [`Exporter`](super::Exporter) has `check` and `topology` only; it is
//! a file (`--prometheus FILE`), never standard output. Labels hold only
//! bounded identifiers (target paths, partition numbers, layer paths, layer
//! kinds, severities, statuses, finding codes, disk names, and a disk's
//! model, serial, WWN and table identity), never a sentence. The times are
//! passed in, so the text is a pure function of the run.

use super::Stamp;
use crate::check::CheckRun;
use crate::check::CheckedTarget;
use crate::findings::{Finding, Severity, Status};
use crate::stack::{Layer, LayerKind};
use crate::topology::Survey;
use std::collections::HashMap;
use std::fmt::Write;
use std::time::{SystemTime, UNIX_EPOCH};

/// `--prometheus FILE`: the run finished now.
pub struct Prometheus {
    pub stamp: Stamp,
}

impl super::Exporter for Prometheus {
    fn check(&self, run: &CheckRun) -> Option<String> {
        Some(check(run, &self.stamp))
    }

    fn topology(&self, survey: &Survey) -> Option<String> {
        Some(topology(survey, &self.stamp))
    }

    fn watch(&self, run: &crate::watch::WatchRun) -> Option<String> {
        Some(watch(run, &self.stamp))
    }
}

impl Family {
    /// A counter: summed where a label set repeats.
    fn counter(name: &'static str, help: &'static str) -> Family {
        Family {
            kind: "counter",
            ..Family::gauge(name, help, |a, b| a + b)
        }
    }
}

/// The metrics of a `watch` run started as `stamp` says: the counts of
/// each device and direction over the run (a new run counts from 0
/// again, which Prometheus's rate() takes as a reset).
pub fn watch(run: &crate::watch::WatchRun, stamp: &Stamp) -> String {
    let mut duration = Family::gauge(
        "diskalign_watch_duration_seconds",
        "How long the watch counted.",
        f64::max,
    );
    duration.add(&[], run.duration_s);
    let mut exit = Family::gauge(
        "diskalign_watch_exit_status",
        "The watch's exit status: bit 1 findings of warning or above, bit 2 something could not be watched.",
        f64::max,
    );
    exit.add(&[], f64::from(run.exit_status));
    let mut lost = Family::counter(
        "diskalign_watch_lost_records_total",
        "Trace records the kernel dropped during the watch (0 when BPF counts in the kernel).",
    );
    lost.add(&[], run.lost_records as f64);
    let mut missed = Family::counter(
        "diskalign_watch_missed_events_total",
        "Block events the kernel did not run the BPF programs on during the watch (recursion misses): the counts are short by at most this.",
    );
    missed.add(&[], run.missed_events as f64);
    use crate::watch::DeviceLayer;
    // None: the series is absent for that device and direction.
    type Get = fn(&crate::watch::DeviceSummary) -> Option<u64>;
    let per_device: [(&'static str, &'static str, Get); 12] = [
        ("diskalign_watch_ios_total", "I/Os at the device by direction: requests issued to its driver, else bios queued to it, else bios as addressed to it before a partition or dm moved them down (the JSON's stage says which).", |s| Some(s.ios)),
        ("diskalign_watch_bytes_total", "Bytes of those I/Os.", |s| Some(s.bytes)),
        ("diskalign_watch_straddle_4k_total", "I/Os whose start or end is not on a 4 KiB boundary of the device.", |s| Some(s.straddle_4k)),
        ("diskalign_watch_straddle_grain_total", "I/Os whose start or end is not on the device's grain (max of physical block and minimum I/O, or --unit).", |s| Some(s.straddle_grain)),
        ("diskalign_watch_off_4k_on_disk_total", "I/Os whose start is off 4 KiB on the disk below (a partition's offset added); absent where the offset is unknown.", |s| s.off_4k_on_disk),
        ("diskalign_watch_sub_physical_total", "Writes smaller than the device's physical block (read-modify-write on 512e drives).", |s| Some(s.sub_physical)),
        ("diskalign_watch_splits_total", "I/Os the kernel split before the driver (block_split).", |s| Some(s.splits)),
        ("diskalign_watch_merges_total", "bios merged into a request (block_bio_backmerge, block_bio_frontmerge).", |s| Some(s.merges)),
        ("diskalign_watch_unattributed_total", "I/Os whose submitter was not counted: the tracer's table of submitters was full.", |s| Some(s.unattributed)),
        ("diskalign_watch_untimed_total", "Requests issued whose latency was not recorded: the tracer's table of requests in flight (or of latencies) had no room for it.", |s| Some(s.untimed)),
        ("diskalign_watch_zone_crossing_writes_total", "Writes across a zone boundary of a zoned device, as submitted (the kernel splits each at the boundary); only zoned devices' writes have it.", |s| s.zone_crossing_writes),
        ("diskalign_watch_unmapped_total", "bios a dm or md device remapped onto a device below that no leg counted: the tracer's table of legs was full; only dm and md devices have it.", |s| matches!(s.layer, DeviceLayer::Dm | DeviceLayer::Md).then_some(s.unmapped)),
    ];
    let mut families: Vec<Family> = per_device
        .iter()
        .map(|(name, help, _)| Family::counter(name, help))
        .collect();
    for s in &run.devices {
        let dir = s.direction.map_or("", |d| d.as_str());
        let labels = [
            ("device", s.device.as_str()),
            ("layer", s.layer.as_str()),
            ("direction", dir),
        ];
        for (f, (_, _, get)) in families.iter_mut().zip(per_device.iter()) {
            if let Some(v) = get(s) {
                f.add(&labels, v as f64);
            }
        }
    }
    let mut by_code = Family::gauge(
        "diskalign_watch_findings",
        "Findings of the watch by device, severity and code (docs/findings.md); only codes found are present.",
        f64::max,
    );
    let mut counts: Vec<(String, &'static str, &'static str, f64)> = Vec::new();
    for f in &run.findings {
        let device = f.facts.device.clone().unwrap_or_default();
        match counts
            .iter_mut()
            .find(|(d, s, c, _)| *d == device && *s == f.severity.as_str() && *c == f.code.as_str())
        {
            Some(entry) => entry.3 += 1.0,
            None => counts.push((device, f.severity.as_str(), f.code.as_str(), 1.0)),
        }
    }
    for (d, s, c, n) in &counts {
        by_code.add(
            &[("device", d.as_str()), ("severity", *s), ("code", *c)],
            *n,
        );
    }
    let mut untraced = Family::gauge(
        "diskalign_watch_untraced_devices",
        "Devices watched but not traced: more than the tracer counts at once.",
        f64::max,
    );
    untraced.add(&[], run.limits.untraced_devices.len() as f64);
    let mut all = vec![
        last_run("watch", stamp),
        deprecated_time("watch", stamp),
        duration,
        exit,
        lost,
        missed,
        untraced,
    ];
    all.extend(families);
    all.push(by_code);
    render(&all)
}

const SEVERITIES: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Error];

/// The metrics of a `check` run started as `stamp` says. Every series
/// about a target carries `device`, the kernel's name of its whole disk
/// as node_exporter's `node_disk_*` series spell it (`sda`, `nvme0n1`;
/// empty for an image and what was assembled across targets), so a query
/// joins them on it.
pub fn check(run: &CheckRun, stamp: &Stamp) -> String {
    let mut info = Family::gauge(
        "diskalign_disk_info",
        "1 for each checked target, labelled with its disk's identity: device (the kernel's name), model, serial, wwn, and ptuuid (the partition table's GPT disk GUID or DOS signature); empty when unknown.",
        f64::max,
    );
    let mut target_status = Family::gauge(
        "diskalign_target_status",
        "The target's status, one series per status (label status: aligned, incomplete, untidy, inherits, misaligned, damaged; docs/findings.md): 1 for its status, 0 for every other; all 0 for a target that could not be checked.",
        f64::max,
    );
    let mut partition_status = Family::gauge(
        "diskalign_partition_status",
        "The status of the partition's placement, one series per status (label status: aligned, untidy, misaligned): 1 for its status, 0 for the others.",
        f64::max,
    );
    let mut exit = Family::gauge(
        "diskalign_check_exit_status",
        "The check's exit status: bit 1 findings at or above --fail-on (label fail_on), bit 2 a target could not be checked.",
        f64::max,
    );
    exit.add(
        &[("fail_on", run.summary.fail_on.as_str())],
        f64::from(run.summary.exit_status),
    );
    let mut checked = Family::gauge(
        "diskalign_target_checked",
        "1 if the target was read and checked, 0 if it could not be (the check's stderr says why).",
        f64::min,
    );
    let mut target_aligned = Family::gauge(
        "diskalign_target_aligned",
        "1 if no warning or error was found anywhere in the target (partitions and every layer inside), else 0.",
        f64::min,
    );
    let mut partition_aligned = Family::gauge(
        "diskalign_partition_aligned",
        "1 if no warning or error was found about the partition's placement, else 0.",
        f64::min,
    );
    let mut layer_aligned = Family::gauge(
        "diskalign_layer_aligned",
        "1 if no warning or error was found about the layer (LVM, md, LUKS, bcache, filesystem, holder), else 0; target is empty for md arrays and volume groups assembled across targets.",
        f64::min,
    );
    let mut totals = Family::gauge(
        "diskalign_target_findings",
        "Findings about the target and everything inside it, by severity; every severity is present, 0 included; target is empty for what was assembled across targets.",
        f64::max,
    );
    let mut by_code = Family::gauge(
        "diskalign_findings",
        "Findings by target, severity and code (docs/findings.md); only codes found are present.",
        f64::max,
    );
    let mut amplification = Family::gauge(
        "diskalign_write_amplification",
        "Units one chunk-sized write touches on a striped LV against the ideal count (1 when its legs are aligned); the worst segment.",
        f64::max,
    );
    for t in &run.targets {
        let target = [("target", t.path.as_str()), ("device", device_of(t))];
        checked.add(&target, 1.0);
        info.add(&identity(t), 1.0);
        target_aligned.add(&target, flag(t.aligned));
        states(
            &mut target_status,
            &target,
            &Status::OF_TARGET,
            Some(t.summary.status),
        );
        for p in &t.partitions {
            let number = p.number.to_string();
            let labels = [target[0], target[1], ("partition", number.as_str())];
            partition_aligned.add(&labels, flag(p.aligned));
            states(
                &mut partition_status,
                &labels,
                &Status::OF_PLACEMENT,
                Some(p.status),
            );
        }
        for (path, l) in t.stack.iter().flat_map(layers) {
            let labels = [target[0], target[1], ("layer", path.as_str())];
            layer_series(l, &labels, &mut layer_aligned, &mut amplification);
        }
        // Each finding once (an LV's filesystem shown under each of its
        // PVs), those of the arrays and groups assembled from it included,
        // as the target's summary counts them.
        let made_from_it = crate::check::made_from(t, &run.assembled);
        let found = crate::check::target_findings(t, &made_from_it);
        count_findings(&target, found.into_iter(), &mut totals, &mut by_code);
    }
    for e in &run.errors {
        // The name given, as topology names a disk it could not read.
        let target = [
            ("target", e.path.as_str()),
            ("device", unread_device(&e.path)),
        ];
        checked.add(&target, 0.0);
        states(&mut target_status, &target, &Status::OF_TARGET, None);
    }
    let nobody = [("target", ""), ("device", "")];
    for (path, l) in run.assembled.iter().flat_map(layers) {
        let labels = [nobody[0], nobody[1], ("layer", path.as_str())];
        layer_series(l, &labels, &mut layer_aligned, &mut amplification);
    }
    if !run.assembled.is_empty() {
        let places = run.assembled.iter().flat_map(|r| r.walk());
        let all = crate::findings::distinct(places.map(|l| l.findings.as_slice()));
        count_findings(&nobody, all.into_iter(), &mut totals, &mut by_code);
    }
    render(&[
        last_run("check", stamp),
        deprecated_time("check", stamp),
        exit,
        checked,
        info,
        target_aligned,
        target_status,
        partition_aligned,
        partition_status,
        layer_aligned,
        totals,
        by_code,
        amplification,
    ])
}

/// One series per state in `all`, 1 for `now` and 0 for the others, as
/// node_exporter's `node_systemd_unit_state` exports a unit's: an alert
/// can fire on a state a disk has just left (`changes()`, `== 0`), and a
/// target that could not be checked (`now` None) has them all at 0.
fn states(f: &mut Family, labels: &[(&str, &str)], all: &[Status], now: Option<Status>) {
    for s in all {
        let mut with = labels.to_vec();
        with.push(("status", s.as_str()));
        f.add(&with, flag(now == Some(*s)));
    }
}

/// The `device` label of a target: its whole disk's kernel name, empty
/// for an image.
fn device_of(t: &CheckedTarget) -> &str {
    t.disk.as_deref().unwrap_or("")
}

/// The `device` label of a target that could not be read: the name given
/// without `/dev/` (a path elsewhere, an image, names no disk).
fn unread_device(path: &str) -> &str {
    path.strip_prefix("/dev/")
        .filter(|n| !n.contains('/'))
        .unwrap_or("")
}

/// The timestamp each command wrote before `diskalign_last_run_timestamp_seconds`
/// was the one: kept for the rules and dashboards that read it, with the
/// same value (the run's start), and to be removed (docs/prometheus.md).
fn deprecated_time(command: &'static str, stamp: &Stamp) -> Family {
    let (name, help) = match command {
        "check" => ("diskalign_check_timestamp_seconds", "Deprecated: the same value as diskalign_last_run_timestamp_seconds{command=\"check\"}, which replaces it."),
        "topology" => ("diskalign_topology_timestamp_seconds", "Deprecated: the same value as diskalign_last_run_timestamp_seconds{command=\"topology\"}, which replaces it."),
        _ => ("diskalign_watch_timestamp_seconds", "Deprecated: the same value as diskalign_last_run_timestamp_seconds{command=\"watch\"}, which replaces it."),
    };
    let mut f = Family::gauge(name, help, f64::max);
    f.add(&[], seconds(stamp.started));
    f
}

/// `diskalign_last_run_timestamp_seconds{command}`: when the run started,
/// the `started_at` of its JSON document. The command is a label, so the
/// files of `check` and `topology` never hold the same series.
fn last_run(command: &str, stamp: &Stamp) -> Family {
    let mut f = Family::gauge(
        "diskalign_last_run_timestamp_seconds",
        "Unix time at which the last run of the command (label command) started; the started_at of its JSON document.",
        f64::max,
    );
    f.add(&[("command", command)], seconds(stamp.started));
    f
}

/// The labels of a target's `diskalign_disk_info`, in the style of
/// node_exporter's `node_disk_info`: `device` is the kernel's name of the
/// whole disk (`sda`, no /dev/), empty for an image.
fn identity(t: &CheckedTarget) -> [(&str, &str); 6] {
    fn s(v: &Option<String>) -> &str {
        v.as_deref().unwrap_or("")
    }
    [
        ("target", t.path.as_str()),
        ("device", s(&t.disk)),
        ("model", s(&t.model)),
        ("serial", s(&t.serial)),
        ("wwn", s(&t.wwn)),
        ("ptuuid", s(&t.partition_table.ptuuid)),
    ]
}

/// The metrics of a `topology` survey started as `stamp` says. `device`
/// names each disk as node_exporter's `node_disk_*` series do.
pub fn topology(survey: &Survey, stamp: &Stamp) -> String {
    let time = deprecated_time("topology", stamp);
    let last_run = last_run("topology", stamp);
    let mut read = Family::gauge(
        "diskalign_disk_read",
        "1 if the disk's limits were read, 0 if they could not be (the command's stderr says why).",
        f64::min,
    );
    let limit = |name, help| Family::gauge(name, help, f64::max);
    let mut limits = [
        limit(
            "diskalign_disk_logical_block_bytes",
            "The disk's logical block size (sysfs queue/logical_block_size).",
        ),
        limit(
            "diskalign_disk_physical_block_bytes",
            "The disk's physical block size (sysfs queue/physical_block_size).",
        ),
        limit(
            "diskalign_disk_minimum_io_bytes",
            "The disk's minimum I/O size (sysfs queue/minimum_io_size).",
        ),
        limit(
            "diskalign_disk_optimal_io_bytes",
            "The disk's optimal I/O size, 0 when none (sysfs queue/optimal_io_size).",
        ),
        limit(
            "diskalign_disk_alignment_offset_bytes",
            "The disk's alignment offset (sysfs alignment_offset); -1 is the kernel's own misaligned marker.",
        ),
    ];
    let mut zone_size = limit(
        "diskalign_disk_zone_size_bytes",
        "The disk's zone size, 0 when it is not zoned (sysfs queue/chunk_sectors of a zoned disk).",
    );
    let mut zones = limit(
        "diskalign_disk_zones",
        "The disk's number of zones, 0 when it is not zoned (sysfs queue/nr_zones).",
    );
    let mut conventional = limit(
        "diskalign_disk_conventional_zones",
        "The zoned disk's conventional zones (random writes allowed), counted with BLKREPORTZONE; absent when not read.",
    );
    let mut erase_unit = limit(
        "diskalign_disk_erase_unit_bytes",
        "An SD card's or eMMC's allocation unit (sysfs device/preferred_erase_size); absent for any other disk.",
    );
    let mut totals = Family::gauge(
        "diskalign_disk_findings",
        "Hints about the disk's limits, by severity; every severity is present, 0 included.",
        f64::max,
    );
    let mut by_code = Family::gauge(
        "diskalign_topology_findings",
        "Hints about the disk's limits by disk, severity and code (docs/findings.md); only codes found are present.",
        f64::max,
    );
    for d in &survey.disks {
        let disk = [("device", d.name.as_str())];
        read.add(&disk, 1.0);
        let t = &d.topology;
        let values = [
            f64::from(t.logical_block_size),
            f64::from(t.physical_block_size),
            f64::from(t.minimum_io_size),
            f64::from(t.optimal_io_size),
            t.alignment_offset as f64,
        ];
        for (family, v) in limits.iter_mut().zip(values) {
            family.add(&disk, v);
        }
        zone_size.add(&disk, d.zoned.zone_size_bytes as f64);
        zones.add(&disk, d.zoned.zones as f64);
        if let Some(n) = d.zoned.conventional_zones {
            conventional.add(&disk, n as f64);
        }
        if let Some(f) = &d.flash {
            erase_unit.add(&disk, f.preferred_erase_bytes as f64);
        }
        count_findings(&disk, d.findings.iter(), &mut totals, &mut by_code);
    }
    for e in &survey.errors {
        let disk = e.path.strip_prefix("/dev/").unwrap_or(&e.path);
        read.add(&[("device", disk)], 0.0);
    }
    let [a, b, c, d, e] = limits;
    render(&[
        last_run,
        time,
        read,
        a,
        b,
        c,
        d,
        e,
        zone_size,
        zones,
        conventional,
        erase_unit,
        totals,
        by_code,
    ])
}

/// A layer's series: its verdict (partition roots have theirs in
/// `diskalign_partition_aligned`) and a striped LV's write amplification.
fn layer_series(
    l: &Layer,
    labels: &[(&str, &str); 3],
    aligned: &mut Family,
    amplification: &mut Family,
) {
    if l.kind != LayerKind::Partition {
        let mut with_kind = labels.to_vec();
        with_kind.push(("kind", l.kind.as_str()));
        aligned.add(&with_kind, flag(l.aligned));
    }
    if let Some(a) = write_amplification(l) {
        amplification.add(labels, a);
    }
}

/// The worst amplification a layer's findings carry; 1 for a striped LV
/// whose legs were all found in some striped segment and judged aligned.
fn write_amplification(l: &Layer) -> Option<f64> {
    let worst = l
        .findings
        .iter()
        .filter_map(|f| f.facts.amplification)
        .reduce(f64::max);
    if worst.is_some() {
        return worst;
    }
    let info = l.lv()?;
    let judged = info.segments.iter().enumerate().any(|(si, seg)| {
        seg.stripe_size_bytes.is_some()
            && l.children
                .iter()
                .filter(|c| c.leg().is_some_and(|g| g.segment == si))
                .count()
                >= seg.legs.len()
    });
    judged.then_some(1.0)
}

/// Every layer from `root` up, with its path: the names from the root
/// down joined by " / ", as in the findings' `subject.layer`.
fn layers(root: &Layer) -> Vec<(String, &Layer)> {
    fn visit<'a>(l: &'a Layer, above: &str, out: &mut Vec<(String, &'a Layer)>) {
        let path = if above.is_empty() {
            l.name.clone()
        } else {
            format!("{above} / {}", l.name)
        };
        out.push((path.clone(), l));
        for c in &l.children {
            visit(c, &path, out);
        }
    }
    let mut out = Vec::new();
    visit(root, "", &mut out);
    out
}

/// Per-severity totals (all three, 0 included) and per-code counts (only
/// those found) of one subject's findings.
fn count_findings<'a>(
    subject: &[(&str, &str)],
    findings: impl Iterator<Item = &'a Finding>,
    totals: &mut Family,
    by_code: &mut Family,
) {
    let mut per_code: Vec<((Severity, &str), usize)> = Vec::new();
    let mut per_severity = [0usize; 3];
    // Each cause once: a finding that repeats another's (start-not-4k
    // beside start-misaligned) is counted under the other's code only.
    for f in findings.filter(|f| f.counts()) {
        per_severity[SEVERITIES
            .iter()
            .position(|s| *s == f.severity)
            .unwrap_or(0)] += 1;
        let key = (f.severity, f.code.as_str());
        match per_code.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => per_code.push((key, 1)),
        }
    }
    for (s, n) in SEVERITIES.iter().zip(per_severity) {
        let mut labels = subject.to_vec();
        labels.push(("severity", s.as_str()));
        totals.add(&labels, n as f64);
    }
    per_code.sort_by(|a, b| a.0.cmp(&b.0));
    for ((s, code), n) in per_code {
        let mut labels = subject.to_vec();
        labels.extend([("severity", s.as_str()), ("code", code)]);
        by_code.add(&labels, n as f64);
    }
}

fn flag(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// Unix time in seconds, to the millisecond.
fn seconds(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64 / 1000.0)
}

/// One metric family: its samples in the order added. A label set added
/// twice (a target given twice, two volume groups of the same name) is one
/// sample, merged by `merge` (the worse of the two), because
/// node_exporter refuses a whole file that repeats a series.
struct Family {
    name: &'static str,
    help: &'static str,
    /// `gauge` or `counter`.
    kind: &'static str,
    merge: fn(f64, f64) -> f64,
    samples: Vec<(String, f64)>,
    index: HashMap<String, usize>,
}

impl Family {
    fn gauge(name: &'static str, help: &'static str, merge: fn(f64, f64) -> f64) -> Family {
        Family {
            name,
            help,
            kind: "gauge",
            merge,
            samples: Vec::new(),
            index: HashMap::new(),
        }
    }

    fn add(&mut self, labels: &[(&str, &str)], value: f64) {
        let key = label_set(labels);
        match self.index.get(&key) {
            Some(&i) => {
                let old = self.samples[i].1;
                self.samples[i].1 = (self.merge)(old, value);
            }
            None => {
                self.index.insert(key.clone(), self.samples.len());
                self.samples.push((key, value));
            }
        }
    }
}

/// The families with samples, each under its HELP and TYPE lines.
fn render(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families.iter().filter(|f| !f.samples.is_empty()) {
        let _ = writeln!(out, "# HELP {} {}", f.name, escape_help(f.help));
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        for (labels, v) in &f.samples {
            let _ = writeln!(out, "{}{labels} {}", f.name, value(*v));
        }
    }
    out
}

/// `{a="x",b="y"}`, or nothing without labels.
fn label_set(labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let body: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    format!("{{{}}}", body.join(","))
}

/// A label value as the text format wants it: backslash, double quote and
/// line feed escaped.
fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// HELP text: backslash and line feed escaped (a quote is fine there).
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value: integers without a fraction, NaN and infinities as Go
/// parses them.
fn value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::TargetError;
    use crate::findings::{Code, Facts};
    use crate::iolimits::Topology;
    use crate::stack::{Detail, LegInfo, LvInfo};
    use crate::stack::{Leg, Segment};
    use std::time::Duration;

    fn at(secs: f64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs_f64(secs)
    }

    fn stamp(secs: f64) -> Stamp {
        Stamp {
            host: "db-07".into(),
            started: at(secs),
        }
    }

    /// The samples of `text`, without HELP and TYPE lines.
    fn samples(text: &str) -> Vec<&str> {
        text.lines().filter(|l| !l.starts_with('#')).collect()
    }

    #[test]
    fn label_values_are_escaped_as_the_text_format_says() {
        assert_eq!(escape_label(r#"a\b"c"#), r#"a\\b\"c"#);
        assert_eq!(escape_label("two\nlines"), r"two\nlines");
        assert_eq!(escape_label("/dev/sda"), "/dev/sda");
        assert_eq!(
            label_set(&[("target", "x\"y"), ("severity", "error")]),
            r#"{target="x\"y",severity="error"}"#
        );
        assert_eq!(label_set(&[]), "");
        assert_eq!(escape_help("a\\b\nc \"q\""), "a\\\\b\\nc \"q\"");
    }

    #[test]
    fn values_print_as_go_parses_them() {
        assert_eq!(value(1.0), "1");
        assert_eq!(value(0.0), "0");
        assert_eq!(value(1.5), "1.5");
        assert_eq!(value(33553920.0), "33553920");
        assert_eq!(value(-1.0), "-1");
        assert_eq!(value(f64::NAN), "NaN");
        assert_eq!(value(f64::INFINITY), "+Inf");
        assert_eq!(value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(seconds(at(1_700_000_000.25)), 1_700_000_000.25);
        assert_eq!(seconds(UNIX_EPOCH - Duration::from_secs(5)), 0.0);
    }

    #[test]
    fn a_series_added_twice_is_one_sample_with_the_worse_value() {
        let mut aligned = Family::gauge("x_aligned", "h", f64::min);
        aligned.add(&[("target", "a")], 1.0);
        aligned.add(&[("target", "a")], 0.0);
        aligned.add(&[("target", "a")], 1.0);
        aligned.add(&[("target", "b")], 1.0);
        let mut amp = Family::gauge("x_amp", "h", f64::max);
        amp.add(&[("layer", "l")], 1.5);
        amp.add(&[("layer", "l")], 1.25);
        let empty = Family::gauge("x_none", "h", f64::max);
        assert_eq!(
            render(&[aligned, empty, amp]),
            "# HELP x_aligned h\n# TYPE x_aligned gauge\nx_aligned{target=\"a\"} 0\nx_aligned{target=\"b\"} 1\n\
             # HELP x_amp h\n# TYPE x_amp gauge\nx_amp{layer=\"l\"} 1.5\n"
        );
    }

    /// A VG with one LV striped over two legs, `amplification` on the LV
    /// when a rule found one.
    fn volume_group(amplification: Option<f64>, legs_found: usize) -> Layer {
        let t = Topology::plain(512);
        let mut vg = Layer::new(
            LayerKind::LvmVg,
            "VG vg0 (extent 1 MiB)",
            "lvm:vg0",
            0,
            0,
            t,
        );
        let mut lv = Layer::new(LayerKind::LvmLv, "LV vg0/lv0", "vg0/lv0", 0, 16 << 20, t);
        lv.detail = Some(Detail::Lv(LvInfo {
            segments: vec![Segment {
                start_extent: 0,
                extent_count: 16,
                kind: "striped".into(),
                stripe_size_bytes: Some(8192),
                legs: (0..2)
                    .map(|k| Leg {
                        pv: format!("pv{k}"),
                        start_extent: 0,
                    })
                    .collect(),
                ..Segment::default()
            }],
            ..LvInfo::default()
        }));
        for k in 0..legs_found {
            let mut leg = Layer::new(
                LayerKind::LvmLeg,
                format!("segment 1 stripe {k} on pv{k}"),
                "d",
                1 << 20,
                8 << 20,
                t,
            );
            leg.detail = Some(Detail::Leg(LegInfo {
                segment: 0,
                stripe: k,
                pv: format!("pv{k}"),
                start_extent: 0,
                stripe_size_bytes: Some(8192),
            }));
            lv.children.push(leg);
        }
        if let Some(a) = amplification {
            lv.aligned = false;
            lv.findings.push(Finding::of(
                Code::LvmStripeMisaligned,
                Facts {
                    amplification: Some(a),
                    ..Facts::default()
                },
            ));
        }
        vg.children.push(lv);
        vg
    }

    #[test]
    fn assembled_layers_unchecked_targets_and_the_time() {
        let assembled = vec![volume_group(Some(1.5), 2)];
        let summary = crate::check::summarize_run(&[], &assembled, 2, Default::default());
        let run = CheckRun {
            targets: vec![],
            assembled,
            // A target given twice is one series.
            errors: vec![
                TargetError::new("/dev/sdz", "gone"),
                TargetError::new("/dev/sdz", "gone"),
            ],
            summary,
            run: Default::default(),
        };
        let text = check(&run, &stamp(1_699_999_990.0));
        let vg = "VG vg0 (extent 1 MiB)";
        let lv = format!("{vg} / LV vg0/lv0");
        let unread = |status: &str| {
            format!(
                r#"diskalign_target_status{{target="/dev/sdz",device="sdz",status="{status}"}} 0"#
            )
        };
        let mut want = vec![
            r#"diskalign_last_run_timestamp_seconds{command="check"} 1699999990"#.to_string(),
            "diskalign_check_timestamp_seconds 1699999990".into(),
            r#"diskalign_check_exit_status{fail_on="warning"} 3"#.into(),
            r#"diskalign_target_checked{target="/dev/sdz",device="sdz"} 0"#.into(),
        ];
        want.extend(Status::OF_TARGET.iter().map(|s| unread(s.as_str())));
        want.extend([
            format!(r#"diskalign_layer_aligned{{target="",device="",layer="{vg}",kind="lvm-vg"}} 1"#),
            format!(r#"diskalign_layer_aligned{{target="",device="",layer="{lv}",kind="lvm-lv"}} 0"#),
            format!(
                r#"diskalign_layer_aligned{{target="",device="",layer="{lv} / segment 1 stripe 0 on pv0",kind="lvm-leg"}} 1"#
            ),
            format!(
                r#"diskalign_layer_aligned{{target="",device="",layer="{lv} / segment 1 stripe 1 on pv1",kind="lvm-leg"}} 1"#
            ),
            r#"diskalign_target_findings{target="",device="",severity="info"} 0"#.into(),
            r#"diskalign_target_findings{target="",device="",severity="warning"} 0"#.into(),
            r#"diskalign_target_findings{target="",device="",severity="error"} 1"#.into(),
            r#"diskalign_findings{target="",device="",severity="error",code="lvm-stripe-misaligned"} 1"#
                .into(),
            format!(r#"diskalign_write_amplification{{target="",device="",layer="{lv}"}} 1.5"#),
        ]);
        assert_eq!(samples(&text), want);
        // Every family has its HELP and TYPE once, right before its samples.
        for name in ["diskalign_layer_aligned", "diskalign_write_amplification"] {
            assert_eq!(text.matches(&format!("# TYPE {name} gauge\n")).count(), 1);
            assert_eq!(text.matches(&format!("# HELP {name} ")).count(), 1);
        }
    }

    /// Every state of a target and of a partition is a series, 1 for the
    /// one it is in, as node_systemd_unit_state; each names the disk as
    /// node_exporter's node_disk_* do (`device`).
    #[test]
    fn every_state_is_a_series_and_device_names_the_disk() {
        let mut t = CheckedTarget {
            path: "/dev/sda".into(),
            disk: Some("sda".into()),
            ..CheckedTarget::default()
        };
        t.summary.status = Status::Misaligned;
        t.partitions.push(crate::check::CheckedPartition {
            number: 1,
            status: Status::Untidy,
            ..Default::default()
        });
        let run = CheckRun {
            targets: vec![t],
            ..CheckRun::default()
        };
        let text = check(&run, &stamp(1.0));
        let got = samples(&text);
        for s in Status::OF_TARGET {
            let v = u8::from(s == Status::Misaligned);
            let want = format!(
                r#"diskalign_target_status{{target="/dev/sda",device="sda",status="{s}"}} {v}"#
            );
            assert!(got.contains(&want.as_str()), "{want}\n{text}");
        }
        for s in Status::OF_PLACEMENT {
            let v = u8::from(s == Status::Untidy);
            let want = format!(
                r#"diskalign_partition_status{{target="/dev/sda",device="sda",partition="1",status="{s}"}} {v}"#
            );
            assert!(got.contains(&want.as_str()), "{want}\n{text}");
        }
        // One timestamp: the deprecated name carries the same instant.
        assert!(got.contains(&r#"diskalign_last_run_timestamp_seconds{command="check"} 1"#));
        assert!(got.contains(&"diskalign_check_timestamp_seconds 1"));
    }

    #[test]
    fn a_striped_lv_with_every_leg_found_and_none_off_amplifies_by_one() {
        let amp = |vg: &Layer| write_amplification(&vg.children[0]);
        assert_eq!(amp(&volume_group(None, 2)), Some(1.0));
        // A leg missing: nothing was judged, so no figure.
        assert_eq!(amp(&volume_group(None, 1)), None);
        assert_eq!(amp(&volume_group(Some(1.5), 2)), Some(1.5));
        // Not an LV: nothing.
        assert_eq!(write_amplification(&volume_group(None, 2)), None);
    }

    #[test]
    fn topology_of_a_usb_bridge_has_its_limits_and_the_hint() {
        let root = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/sysfs/usb-bridge"
        );
        let sysfs = crate::topology::Sysfs::new(std::path::Path::new(root));
        let mut survey = crate::topology::survey(&sysfs, &[]);
        survey
            .errors
            .push(TargetError::new("/dev/sdq", "no such disk"));
        let text = topology(&survey, &stamp(1_699_999_999.0));
        let got = samples(&text);
        for want in [
            r#"diskalign_last_run_timestamp_seconds{command="topology"} 1699999999"#,
            "diskalign_topology_timestamp_seconds 1699999999",
            r#"diskalign_disk_read{device="sda"} 1"#,
            r#"diskalign_disk_read{device="sdq"} 0"#,
            r#"diskalign_disk_physical_block_bytes{device="sda"} 4096"#,
            r#"diskalign_disk_optimal_io_bytes{device="sda"} 33553920"#,
            r#"diskalign_disk_findings{device="sda",severity="error"} 0"#,
            r#"diskalign_topology_findings{device="sda",severity="warning",code="optimal-io-suspicious"} 1"#,
        ] {
            assert!(got.contains(&want), "{want} missing from\n{text}");
        }
    }
}
