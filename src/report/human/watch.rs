//! `watch` for people: the table of devices (like `iostat -x`, sorted by
//! the share of straddling I/O), then each device's histograms, the
//! latency of aligned against straddling requests, and the findings.

use crate::report::columns;
use crate::report::style::Style;
use crate::report::tables::{self, span, watch_devices};
use crate::units::human;
use crate::watch::Bucket;
use crate::watch::{DeviceSummary, WatchRun};
use crate::watch::{LatencyComparison, LatencyDecision};
use std::fmt::Write;

/// The summary printed when the run ends.
pub fn render(run: &WatchRun, st: &Style) -> String {
    let mut out = header(run, st);
    out.push_str(&table(run, st));
    out.push_str(&accounting(run, st));
    if !st.quiet {
        out.push_str(&submitters(run, st));
        out.push_str(&legs(run, st));
        out.push_str(&histograms(run, st));
        out.push_str(&latency(&run.latency, st));
    }
    out.push_str(&findings(run, st));
    if let Some(c) = &run.command {
        let how = match (c.exit_status, c.signal) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(sig)) => format!("was ended by signal {sig}"),
            (None, None) => "was still running".into(),
        };
        out.push_str(&st.line("", &format!("command `{}` {how}", c.argv.join(" ")), "  "));
    }
    out.push_str(&crate::report::style::errors(
        &run.errors,
        st,
        "not watched",
    ));
    out
}

/// The live view: this interval's table only.
pub fn live(run: &WatchRun, st: &Style) -> String {
    let mut out = st.line(
        "",
        &format!(
            "diskalign watch: the last {:.1} s (Ctrl-C ends it and prints the summary)",
            run.duration_s
        ),
        "",
    );
    out.push_str(&table(run, st));
    out
}

fn header(run: &WatchRun, st: &Style) -> String {
    let watched: Vec<&str> = run.stack.iter().map(|w| w.device.as_str()).collect();
    let mut s = st.line(
        "",
        &format!(
            "watched {} for {:.1} s: {}",
            plural(watched.len(), "device"),
            run.duration_s,
            watched.join(", ")
        ),
        "  ",
    );
    let attach = match run.trace.attach {
        Some(a) => format!(" on {}s", a.as_str().replace('-', " ")),
        None => String::new(),
    };
    s.push_str(&st.line(
        "",
        &format!("trace: {}{attach}, {}", run.trace.path, run.trace.cost),
        "  ",
    ));
    if let Some(read) = run.read_before_bytes {
        s.push_str(&st.line(
            "",
            &format!(
                "read before counting: {} from the disks (their partition tables and layer headers, to name causes), none of it counted; watch issues no I/O while it counts",
                crate::units::human(read)
            ),
            "  ",
        ));
    }
    if let Some(n) = &run.trace.note {
        s.push_str(&st.line("", &format!("note: {n}"), "  "));
    }
    let lost = format!(
        "lost records: {}, missed events: {}",
        run.lost_records, run.missed_events
    );
    s.push_str(&st.line(
        "",
        &if run.lost_records > 0 || run.missed_events > 0 {
            st.warn(&lost)
        } else {
            lost
        },
        "",
    ));
    let l = limits(run);
    s.push_str(&st.line(
        "",
        &if run.limits.dropped() { st.warn(&l) } else { l },
        "  ",
    ));
    s.push('\n');
    s
}

/// "3 at sdb, 3 at sdb2 write": a count per device and direction.
fn per_device(run: &WatchRun, of: fn(&DeviceSummary) -> u64) -> String {
    let v: Vec<String> = run
        .devices
        .iter()
        .filter(|s| of(s) > 0)
        .map(|s| {
            let dir = s.direction.map_or("", |d| d.as_str());
            format!("{} at {} {dir}", of(s), s.device)
        })
        .collect();
    v.join(", ")
}

/// What the tracer's limits dropped, or that nothing was.
fn limits(run: &WatchRun) -> String {
    let l = &run.limits;
    let mut parts = Vec::new();
    if l.untimed > 0 {
        parts.push(format!(
            "requests not timed (more than {} in flight at once): {}",
            l.max_inflight,
            per_device(run, |s| s.untimed)
        ));
    }
    if l.unattributed > 0 {
        parts.push(format!(
            "I/Os not attributed to a submitter (more than {} submitters): {}",
            l.max_submitters,
            per_device(run, |s| s.unattributed)
        ));
    }
    if l.unmapped > 0 {
        parts.push(format!(
            "I/Os not placed on a device below (more than {} legs): {}",
            l.max_legs,
            per_device(run, |s| s.unmapped)
        ));
    }
    if !l.untraced_devices.is_empty() {
        parts.push(format!(
            "{} devices not traced (more than {}): {}",
            l.untraced_devices.len(),
            l.max_devices,
            l.untraced_devices.join(", ")
        ));
    }
    let sample = format!(
        "latency timed on 1 in {} requests, chosen by their sector",
        l.latency_one_in
    );
    if parts.is_empty() {
        format!(
            "limits: nothing dropped ({} requests timed at once, {} submitters, {} legs, {} devices); {sample}",
            l.max_inflight, l.max_submitters, l.max_legs, l.max_devices
        )
    } else {
        format!("limits: {}; {sample}", parts.join("; "))
    }
}

/// Where the kernel's statistics count otherwise, and why.
fn accounting(run: &WatchRun, st: &Style) -> String {
    let mut out = String::new();
    for s in run.by_share() {
        if let Some(n) = &s.diskstats_note {
            let dir = s.direction.map_or("", |d| d.as_str());
            out.push_str(&st.line("", &format!("{} {dir}: {n}", s.device), "  "));
        }
    }
    out
}

/// Who submitted each device's I/O, where each bio was submitted.
fn submitters(run: &WatchRun, st: &Style) -> String {
    titled(
        "submitters, counted where each bio was submitted (a disk's bios queued, a partition's before its disk):",
        &tables::watch_submitters(),
        &tables::submitter_rows(run),
        st,
    )
}

/// Where each dm or md device's I/O landed on the devices below it.
fn legs(run: &WatchRun, st: &Style) -> String {
    titled(
        "legs: each dm or md device's I/O where the kernel remapped it onto the devices below, judged at the sectors it landed on there:",
        &tables::watch_legs(),
        &tables::leg_rows(run),
        st,
    )
}

/// A table of its own under a title line, after a blank line; nothing
/// without rows.
fn titled<R>(title: &str, all: &[columns::Column<R>], rows: &[R], st: &Style) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let cols: Vec<_> = all.iter().filter(|c| c.human).collect();
    let mut out = String::from("\n");
    out.push_str(&st.line("", title, ""));
    out.push_str(&columns::render(
        &cols,
        &rows.iter().collect::<Vec<_>>(),
        st,
        "  ",
    ));
    out
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// One row per device and direction, the largest straddling share first.
fn table(run: &WatchRun, st: &Style) -> String {
    if run.devices.is_empty() {
        return st.line("", "no I/O reached the watched devices", "");
    }
    let all = watch_devices();
    let rows: Vec<&DeviceSummary> = run.by_share();
    let picked = tables::unless_zoned(
        columns::select(&all, st.columns.as_deref(), |c| c.human),
        &rows,
    );
    let (cols, _) = match (st.width, &st.columns) {
        (Some(w), None) if st.fit => columns::fit(picked, &rows, st, w),
        _ => (picked, vec![]),
    };
    columns::render(&cols, &rows, st, "")
}

/// The alignment histogram: its open last bucket holds offset 0 and
/// starts aligned to 1 TiB or more (`sys::Counters`).
fn alignments(b: &[Bucket]) -> String {
    let last = 512u64 << (crate::sys::LOG2_BUCKETS - 1);
    buckets(b).replace(
        &format!("{}\u{a0}×", human(last)),
        "0 or ≥1\u{a0}TiB\u{a0}×",
    )
}

fn buckets(b: &[Bucket]) -> String {
    let parts: Vec<String> = b
        .iter()
        .map(|b| format!("{}\u{a0}×{}", human(b.from_bytes), b.ios))
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

/// Each device's sizes and alignments, and where its starts land.
fn histograms(run: &WatchRun, st: &Style) -> String {
    let mut out = String::from("\n");
    // A row without data (flushes) has no sizes or starts to show.
    for s in run.devices.iter().filter(|s| !s.size_histogram.is_empty()) {
        let dir = s.direction.map_or("", |d| d.as_str());
        out.push_str(&st.line("", &st.bold(&format!("{} {dir}", s.device)), ""));
        out.push_str(&st.line(
            "  sizes:      ",
            &buckets(&s.size_histogram),
            "              ",
        ));
        out.push_str(&st.line(
            "  aligned to: ",
            &alignments(&s.alignment_histogram),
            "              ",
        ));
        let mut starts = format!("{} of {} off 4 KiB on {}", s.off_4k, s.ios, s.device);
        if let (Some(n), Some(w)) = (
            s.off_4k_on_disk,
            run.stack.iter().find(|w| w.device == s.device),
        ) {
            if w.disk.as_deref() != Some(s.device.as_str()) {
                let disk = w.disk.as_deref().unwrap_or("the disk");
                let _ = write!(starts, ", {n} on {disk}");
            }
        }
        out.push_str(&st.line("  starts:     ", &starts, "              "));
    }
    out
}

fn bound(v: Option<f64>) -> String {
    v.map_or("?".into(), |x| format!("{x:.2}"))
}

/// Aligned against straddling requests of the same size and direction.
fn latency(cmp: &[LatencyComparison], st: &Style) -> String {
    if cmp.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n");
    out.push_str(&st.line(
        "",
        "latency, aligned against straddling requests (medians known to their log2 bucket; 95 % intervals from bucket bounds):",
        "",
    ));
    for c in cmp {
        let dir = c.direction.map_or("", |d| d.as_str());
        let verdict = match c.decision {
            LatencyDecision::Slower => st.bad("straddling slower"),
            LatencyDecision::Faster => "straddling faster".into(),
            LatencyDecision::Undecided => "no difference the buckets can show".into(),
            LatencyDecision::TooFew => st.dim("too few requests to say"),
        };
        let text = format!(
            "{} {dir} {}: aligned {} (n={}), straddling {} (n={}); ratio {}–{}: {verdict}",
            c.device,
            human(c.size_from_bytes),
            span(c.aligned.median_us),
            c.aligned.ios,
            span(c.straddling.median_us),
            c.straddling.ios,
            bound(c.ratio_bounds[0]),
            bound(c.ratio_bounds[1]),
        );
        out.push_str(&st.line("  ", &text, "    "));
    }
    out
}

fn findings(run: &WatchRun, st: &Style) -> String {
    let mut out = String::from("\n");
    if run.findings.is_empty() {
        out.push_str(&st.line(
            "",
            &st.good("no straddling, sub-physical or split I/O found"),
            "",
        ));
        return out;
    }
    for f in &run.findings {
        out.push_str(&st.finding("", "", f));
    }
    out
}
