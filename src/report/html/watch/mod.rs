//! A `watch` run's section: what was watched and how, the table of
//! devices sorted by the straddling share, who submitted their I/O, each
//! device's request sizes and start alignments, the latency comparison
//! and the findings.

mod bars;

use super::page;
use crate::report::columns;
use crate::report::tables;
use crate::units::human;
use crate::watch::{WatchDocument, WatchRun};

/// The section of one watch document.
pub fn section(id: &str, name: &str, doc: &WatchDocument) -> String {
    let run = &doc.body;
    let mut s = page::heading(2, id, &format!("watch: {name}"));
    let l = &run.limits;
    s.push_str(&page::note(&format!(
        "{} device(s) watched for {:.1} s; trace: {}, {}; lost records: {}; missed events: {}; limits: {} requests not timed (of {} at once), {} I/Os not attributed (of {} submitters), {} I/Os not placed below (of {} legs), {} device(s) not traced (of {}){}; latency timed on 1 in {} requests, chosen by their sector",
        run.stack.len(),
        run.duration_s,
        run.trace.path,
        run.trace.cost,
        run.lost_records,
        run.missed_events,
        l.untimed,
        l.max_inflight,
        l.unattributed,
        l.max_submitters,
        l.unmapped,
        l.max_legs,
        l.untraced_devices.len(),
        l.max_devices,
        if l.untraced_devices.is_empty() {
            String::new()
        } else {
            format!(": {}", l.untraced_devices.join(", "))
        },
        l.latency_one_in,
    )));
    if let Some(read) = run.read_before_bytes {
        s.push_str(&page::note(&format!(
            "Before counting, watch read {} from the disks (their partition tables and layer headers, to name causes); none of it is counted, and it issues no I/O while it counts.",
            human(read)
        )));
    }
    s.push_str(&devices(id, run));
    s.push_str(&submitters(id, run));
    s.push_str(&legs(id, run));
    s.push_str(&histograms(id, run));
    s.push_str(&latency(id, run));
    s.push_str(&findings(id, run));
    s.push_str(&super::findings::errors_html(
        &format!("{id}-errors"),
        "Targets not watched",
        "target",
        &run.errors,
    ));
    s
}

fn devices(id: &str, run: &WatchRun) -> String {
    if run.devices.is_empty() {
        return page::para("No I/O reached the watched devices.");
    }
    let notes: String = run
        .by_share()
        .iter()
        .filter_map(|d| {
            let dir = d.direction.map_or("", |x| x.as_str());
            d.diskstats_note
                .as_ref()
                .map(|n| page::note(&format!("{} {dir}: {n}", d.device)))
        })
        .collect();
    let all = tables::watch_devices();
    let rows = run.by_share();
    let cols = tables::unless_zoned(columns::select(&all, None, |c| c.html), &rows);
    let table = columns::html(
        &format!("{id}-devices"),
        "Each device and direction, the largest straddling share first",
        &cols,
        &rows,
    );
    table + &notes
}

/// Who submitted each device's I/O, where each bio was submitted.
fn submitters(id: &str, run: &WatchRun) -> String {
    table(
        &format!("{id}-submitters"),
        "Who submitted the I/O, counted where each bio was submitted: the top submitters by the I/Os they misaligned, the rest as other",
        &tables::watch_submitters(),
        &tables::submitter_rows(run),
    )
}

/// Where each dm or md device's I/O landed on the devices below it.
fn legs(id: &str, run: &WatchRun) -> String {
    table(
        &format!("{id}-legs"),
        "Where each dm or md device's I/O landed: the kernel's remap of each bio onto a device below, judged at the sectors it landed on there",
        &tables::watch_legs(),
        &tables::leg_rows(run),
    )
}

/// One table of the page's columns; nothing without rows.
fn table<R>(id: &str, caption: &str, all: &[columns::Column<R>], rows: &[R]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let cols = columns::select(all, None, |c| c.html);
    columns::html(id, caption, &cols, &rows.iter().collect::<Vec<_>>())
}

/// Each device's request sizes and start alignments, as tables under
/// one fold per device and direction.
fn histograms(id: &str, run: &WatchRun) -> String {
    let mut s = String::new();
    // A row without data (flushes) has no sizes or starts to show; the
    // figures keep the row's index in `devices`.
    let with_data = run.devices.iter().enumerate();
    for (n, d) in with_data.filter(|(_, d)| !d.size_histogram.is_empty()) {
        let dir = d.direction.map_or("", |x| x.as_str());
        let table = |id: String, caption: &str, what, b: &[crate::watch::Bucket]| {
            let cols = tables::histogram(what);
            columns::html(
                &id,
                caption,
                &cols.iter().collect::<Vec<_>>(),
                &b.iter().collect::<Vec<_>>(),
            )
        };
        let title = format!("{} {dir}", d.device);
        let mut inner = bars::figure(
            &bars::Bars {
                id: &format!("{id}-sizes-figure-{n}"),
                title: &format!("{title}: request sizes"),
                axis: "request size (from it up to twice it)",
                below: "below the physical block",
                plain: "a physical block or more",
            },
            &bars::slots(&d.size_histogram, d.physical_block_bytes),
        );
        inner.push_str(&bars::figure(
            &bars::Bars {
                id: &format!("{id}-alignment-figure-{n}"),
                title: &format!("{title}: where the requests start"),
                axis: "start aligned to (a multiple of it, not of twice it)",
                below: "off 4 KiB: straddles",
                plain: "on 4 KiB",
            },
            &bars::slots(&d.alignment_histogram, 4096),
        ));
        inner.push_str(&table(
            format!("{id}-sizes-{n}"),
            "Request sizes (from this size to twice it)",
            "size",
            &d.size_histogram,
        ));
        inner.push_str(&table(
            format!("{id}-alignment-{n}"),
            "Start alignment (a multiple of this, not of twice it)",
            "aligned to",
            &d.alignment_histogram,
        ));
        s.push_str(&page::folded(
            &format!("{} {dir}: sizes and alignment", d.device),
            &inner,
        ));
    }
    s
}

fn latency(id: &str, run: &WatchRun) -> String {
    if run.latency.is_empty() {
        return String::new();
    }
    let cols = tables::watch_latency();
    columns::html(
        &format!("{id}-latency"),
        "Latency of aligned against straddling requests: medians known to their log2 bucket, decided on 95 % intervals from bucket bounds",
        &cols.iter().collect::<Vec<_>>(),
        &run.latency.iter().collect::<Vec<_>>(),
    )
}

fn findings(id: &str, run: &WatchRun) -> String {
    if run.findings.is_empty() {
        return page::para("No straddling, sub-physical or split I/O found.");
    }
    let cols = super::findings::findings();
    columns::html(
        &format!("{id}-findings"),
        "Findings",
        &cols.iter().collect::<Vec<_>>(),
        &run.findings.iter().collect::<Vec<_>>(),
    )
}
