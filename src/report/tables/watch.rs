//! `watch`'s columns: devices, submitters, the legs below dm and md
//! devices, the CSV's request-size buckets, and the page's histograms
//! and latency.

use crate::report::columns::Column;
use crate::units::human;
use crate::watch::Bucket;
use crate::watch::Leg;
use crate::watch::Submitter;
use crate::watch::{DeviceSummary, WatchRun};
use crate::watch::{LatencyComparison, Span};

type WD = Column<DeviceSummary>;

fn dir_of(s: &DeviceSummary) -> String {
    s.direction
        .map(|d| d.as_str().to_string())
        .unwrap_or_default()
}

/// `watch`'s table, like iostat -x: one row per device and direction.
pub fn watch_devices() -> Vec<WD> {
    vec![
        WD::both("device", "DEVICE", |s| s.device.clone()).long("device"),
        WD::both("layer", "LAYER", |s| s.layer.as_str().into())
            .drop(3)
            .long("layer"),
        WD::both("direction", "DIR", dir_of).long("direction"),
        WD::both("ios", "IOS", |s| s.ios.to_string())
            .num()
            .long("I/Os"),
        WD::both("bytes", "BYTES", |s| s.bytes.to_string())
            .shown_as(|s, _| human(s.bytes))
            .size()
            .drop(2)
            .long("bytes"),
        WD::human_only("average", "AVG", |s| {
            s.bytes.checked_div(s.ios).map_or("-".into(), human)
        })
        .drop(1)
        .num()
        .long("average size"),
        WD::both("straddling", "STRADDLING", |s| s.straddling.to_string())
            .help("the I/Os straddling here or, at a partition, starting off 4 KiB on its disk: the larger of X-4K, X-GRAIN and OFF-4K-DISK, which STRADDLE is the share of")
            .num()
            .long("straddling (I/Os)"),
        WD::human_only("share", "STRADDLE", |s| {
            if s.ios == 0 {
                "-".into()
            } else {
                format!("{:.1}%", 100.0 * s.straddle_share)
            }
        })
        .num()
        .long("straddling (share)"),
        WD::both("straddle_4k", "X-4K", |s| s.straddle_4k.to_string())
            .num()
            .long("across 4 KiB"),
        WD::both("straddle_grain", "X-GRAIN", |s| {
            s.straddle_grain.to_string()
        })
        .drop(2)
        .num()
        .long("across the grain"),
        WD::human_only("off_4k_on_disk", "OFF-4K-DISK", |s| {
            s.off_4k_on_disk.map_or("-".into(), |n| n.to_string())
        })
        .num()
        .long("off 4 KiB on the disk"),
        WD::both("sub_physical", "SUB-PHYS", |s| s.sub_physical.to_string())
            .num()
            .long("below the physical block"),
        WD::both(ZONE_CROSSING, "X-ZONE", |s| {
            s.zone_crossing_writes
                .map_or("-".into(), |n| n.to_string())
        })
        .help("writes across a zone boundary of a zoned device, as they were submitted (the kernel splits each at the boundary before it issues it); - where none are counted: a device that is not zoned, other directions")
        .num()
        .long("writes across a zone boundary"),
        WD::both("splits", "SPLITS", |s| s.splits.to_string())
            .drop(1)
            .num()
            .long("splits"),
        WD::both("merges", "MERGES", |s| s.merges.to_string())
            .drop(1)
            .num()
            .long("merges"),
        WD::both("grain_bytes", "GRAIN", |s| s.grain_bytes.to_string())
            .shown_as(|s, _| human(s.grain_bytes))
            .size()
            .drop(3)
            .long("grain"),
        WD::human_only("diskstats_ios", "IOSTAT", |s| match s.diskstats {
            Some(k) if k.ios != s.ios => k.ios.to_string(),
            Some(_) => "=".into(),
            None => "-".into(),
        })
        .help("I/Os as the kernel's statistics count them (/proc/diskstats, iostat), where they differ from IOS (the summary says why); = where they agree")
        .num()
        .long("as iostat counts"),
        WD::human_only("top_submitter", "TOP SUBMITTER", |s| {
            s.submitters
                .iter()
                .find(|x| x.is_task())
                .map_or("-".into(), |x| x.name.clone())
        })
        .drop(2)
        .long("top submitter"),
    ]
}

/// X-ZONE's id: shown by default only in a run with a zoned device.
const ZONE_CROSSING: &str = "zone_crossing_writes";

/// The device columns `cols` of a table of `rows`, X-ZONE left out where
/// no row is of a zoned device, so the table of a run without one is as
/// it was.
pub fn unless_zoned<'c>(cols: Vec<&'c WD>, rows: &[&DeviceSummary]) -> Vec<&'c WD> {
    let zoned = rows.iter().any(|s| s.zone_crossing_writes.is_some());
    cols.into_iter()
        .filter(|c| zoned || c.id != ZONE_CROSSING)
        .collect()
}

/// One submitter of one device and direction (`watch`'s table of who
/// submitted the I/O).
pub struct SubmitterRow<'a> {
    pub summary: &'a DeviceSummary,
    pub submitter: &'a Submitter,
}

/// Every submitter row of a watch run, in the document's order.
pub fn submitter_rows(run: &WatchRun) -> Vec<SubmitterRow<'_>> {
    run.devices
        .iter()
        .flat_map(|s| {
            s.submitters.iter().map(move |x| SubmitterRow {
                summary: s,
                submitter: x,
            })
        })
        .collect()
}

type SR<'a> = Column<SubmitterRow<'a>>;

fn count_share(n: u64, ios: u64) -> String {
    if ios == 0 {
        "-".into()
    } else {
        format!("{n} ({:.1}%)", 100.0 * n as f64 / ios as f64)
    }
}

/// `watch`'s table of submitters, one row per device, direction and
/// submitter.
pub fn watch_submitters<'a>() -> Vec<SR<'a>> {
    vec![
        SR::human_only("device", "DEVICE", |r| r.summary.device.clone()).long("device"),
        SR::human_only("direction", "DIR", |r| dir_of(r.summary)).long("direction"),
        SR::human_only("submitter", "SUBMITTER", |r| r.submitter.name.clone())
            .long("submitter"),
        SR::html_only("kind", "KIND", |r| r.submitter.kind.as_str().into())
            .help("process, kernel-thread, other (the device's submitters beyond --top, summed) or unattributed (the kernel's table of submitters was full)")
            .long("kind"),
        SR::human_only("cgroup", "CGROUP", |r| {
            r.submitter.cgroup.clone().unwrap_or_else(|| "-".into())
        })
        .long("cgroup"),
        SR::human_only("ios", "IOS", |r| r.submitter.ios.to_string())
            .num()
            .long("I/Os"),
        SR::human_only("straddling", "STRADDLING", |r| {
            count_share(r.submitter.straddling, r.submitter.ios)
        })
        .num()
        .long("straddling"),
        SR::human_only("sub_physical", "SUB-PHYS", |r| {
            count_share(r.submitter.sub_physical, r.submitter.ios)
        })
        .num()
        .long("below the physical block"),
        SR::human_only("splits", "SPLITS", |r| r.submitter.splits.to_string())
            .num()
            .long("splits"),
    ]
}

/// One device and direction's I/O on one device below it (`watch`'s
/// table of legs).
pub struct LegRow<'a> {
    pub summary: &'a DeviceSummary,
    pub leg: &'a Leg,
}

/// Every leg row of a watch run, in the document's order.
pub fn leg_rows(run: &WatchRun) -> Vec<LegRow<'_>> {
    run.devices
        .iter()
        .flat_map(|s| s.legs.iter().map(move |l| LegRow { summary: s, leg: l }))
        .collect()
}

type LR<'a> = Column<LegRow<'a>>;

/// `watch`'s table of legs: where a dm or md device's I/O landed, one
/// row per device, direction and device below.
pub fn watch_legs<'a>() -> Vec<LR<'a>> {
    vec![
        LR::human_only("device", "DEVICE", |r| r.summary.device.clone()).long("device"),
        LR::human_only("direction", "DIR", |r| dir_of(r.summary)).long("direction"),
        LR::human_only("below", "BELOW", |r| r.leg.device.clone()).long("device below"),
        LR::human_only("ios", "IOS", |r| r.leg.ios.to_string())
            .num()
            .long("I/Os"),
        LR::human_only("straddle_4k", "STRADDLING 4K", |r| {
            count_share(r.leg.straddle_4k, r.leg.ios)
        })
        .num()
        .help("crossing a 4 KiB boundary of the device below, where they landed on it")
        .long("straddling 4 KiB there"),
        LR::human_only("off_4k", "OFF 4K", |r| count_share(r.leg.off_4k, r.leg.ios))
            .num()
            .help("starts not a multiple of 4 KiB on the device below")
            .long("starts off 4 KiB there"),
        LR::human_only("off_4k_on_disk", "OFF 4K ON DISK", |r| {
            r.leg
                .off_4k_on_disk
                .map_or_else(|| "-".into(), |n| count_share(n, r.leg.ios))
        })
        .num()
        .help("starts not a multiple of 4 KiB on the disk, the device below's start on it added; - where that start is not known (an md device or a dm table other than one linear segment below)")
        .long("starts off 4 KiB on the disk"),
    ]
}

/// One device, direction and request-size bucket (`watch --format
/// csv`); a summary without sizes (only splits or merges) is one row
/// with the size columns empty. Each submitter of the device and
/// direction is a row of its own, its size columns empty.
pub struct WatchRow<'a> {
    pub summary: &'a DeviceSummary,
    pub bucket: Option<&'a Bucket>,
    pub submitter: Option<&'a Submitter>,
    pub leg: Option<&'a Leg>,
}

/// Every row of a watch run's CSV, in the document's order.
pub fn watch_rows(run: &WatchRun) -> Vec<WatchRow<'_>> {
    let mut out = Vec::new();
    for s in &run.devices {
        if s.size_histogram.is_empty() {
            out.push(WatchRow {
                summary: s,
                bucket: None,
                submitter: None,
                leg: None,
            });
        }
        out.extend(s.size_histogram.iter().map(|b| WatchRow {
            summary: s,
            bucket: Some(b),
            submitter: None,
            leg: None,
        }));
        out.extend(s.submitters.iter().map(|x| WatchRow {
            summary: s,
            bucket: None,
            submitter: Some(x),
            leg: None,
        }));
        out.extend(s.legs.iter().map(|l| WatchRow {
            summary: s,
            bucket: None,
            submitter: None,
            leg: Some(l),
        }));
    }
    out
}

/// A submitter's number in a CSV row (empty in the other rows).
fn sub_num(r: &WatchRow, f: fn(&Submitter) -> u64) -> String {
    opt_num(r.submitter.map(f))
}

type WR<'a> = Column<WatchRow<'a>>;

fn opt_num(v: Option<u64>) -> String {
    v.map(|n| n.to_string()).unwrap_or_default()
}

/// The CSV columns of `watch`.
pub fn watch_buckets<'a>() -> Vec<WR<'a>> {
    vec![
        WR::csv_only("device", |r| r.summary.device.clone()),
        WR::csv_only("layer", |r| r.summary.layer.as_str().into()),
        WR::csv_only("direction", |r| dir_of(r.summary)),
        WR::csv_only("stage", |r| {
            r.summary
                .stage
                .map(|s| s.as_str().to_string())
                .unwrap_or_default()
        }),
        WR::csv_only("size_from_bytes", |r| {
            opt_num(r.bucket.map(|b| b.from_bytes))
        }),
        WR::csv_only("size_ios", |r| opt_num(r.bucket.map(|b| b.ios))),
        WR::csv_only("ios", |r| r.summary.ios.to_string()),
        WR::csv_only("bytes", |r| r.summary.bytes.to_string()),
        WR::csv_only("straddle_4k", |r| r.summary.straddle_4k.to_string()),
        WR::csv_only("straddle_grain", |r| r.summary.straddle_grain.to_string()),
        WR::csv_only("sub_physical", |r| r.summary.sub_physical.to_string()),
        WR::csv_only("splits", |r| r.summary.splits.to_string()),
        WR::csv_only("merges", |r| r.summary.merges.to_string()),
        WR::csv_only("off_4k", |r| r.summary.off_4k.to_string()),
        WR::csv_only("off_4k_on_disk", |r| opt_num(r.summary.off_4k_on_disk)),
        WR::csv_only("grain_bytes", |r| r.summary.grain_bytes.to_string()),
        WR::csv_only("physical_block_bytes", |r| {
            r.summary.physical_block_bytes.to_string()
        }),
        WR::csv_only("straddling", |r| r.summary.straddling.to_string()),
        WR::csv_only("unattributed", |r| r.summary.unattributed.to_string()),
        WR::csv_only("untimed", |r| r.summary.untimed.to_string()),
        WR::csv_only("submitter", |r| {
            r.submitter.map(|x| x.name.clone()).unwrap_or_default()
        }),
        WR::csv_only("submitter_kind", |r| {
            r.submitter
                .map(|x| x.kind.as_str().to_string())
                .unwrap_or_default()
        }),
        WR::csv_only("comm", |r| {
            r.submitter.map(|x| x.comm.clone()).unwrap_or_default()
        }),
        WR::csv_only("cgroup", |r| {
            r.submitter
                .and_then(|x| x.cgroup.clone())
                .unwrap_or_default()
        }),
        WR::csv_only("submitter_ios", |r| sub_num(r, |x| x.ios)),
        WR::csv_only("submitter_bytes", |r| sub_num(r, |x| x.bytes)),
        WR::csv_only("submitter_straddle_4k", |r| sub_num(r, |x| x.straddle_4k)),
        WR::csv_only("submitter_straddle_grain", |r| {
            sub_num(r, |x| x.straddle_grain)
        }),
        WR::csv_only("submitter_off_4k_on_disk", |r| {
            opt_num(r.submitter.and_then(|x| x.off_4k_on_disk))
        }),
        WR::csv_only("submitter_sub_physical", |r| sub_num(r, |x| x.sub_physical)),
        WR::csv_only("submitter_splits", |r| sub_num(r, |x| x.splits)),
        WR::csv_only("diskstats_ios", |r| {
            opt_num(r.summary.diskstats.map(|k| k.ios))
        }),
        WR::csv_only("diskstats_merges", |r| {
            opt_num(r.summary.diskstats.map(|k| k.merges))
        }),
        WR::csv_only("diskstats_bytes", |r| {
            opt_num(r.summary.diskstats.map(|k| k.bytes))
        }),
        WR::csv_only(ZONE_CROSSING, |r| opt_num(r.summary.zone_crossing_writes)),
        WR::csv_only("leg", |r| {
            r.leg.map(|l| l.device.clone()).unwrap_or_default()
        }),
        WR::csv_only("leg_ios", |r| opt_num(r.leg.map(|l| l.ios))),
        WR::csv_only("leg_bytes", |r| opt_num(r.leg.map(|l| l.bytes))),
        WR::csv_only("leg_straddle_4k", |r| opt_num(r.leg.map(|l| l.straddle_4k))),
        WR::csv_only("leg_off_4k", |r| opt_num(r.leg.map(|l| l.off_4k))),
        WR::csv_only("leg_off_4k_on_disk", |r| {
            opt_num(r.leg.and_then(|l| l.off_4k_on_disk))
        }),
        WR::csv_only("unmapped", |r| r.summary.unmapped.to_string()),
    ]
}

type BC = Column<Bucket>;

/// A histogram's buckets on the page: where each starts (`what`: a size,
/// an alignment) and its I/Os.
pub fn histogram(what: &'static str) -> Vec<BC> {
    vec![
        BC::html_only("from_bytes", what, |b| human(b.from_bytes)).num(),
        BC::html_only("ios", "I/Os", |b| b.ios.to_string()).num(),
    ]
}

type LC = Column<LatencyComparison>;

/// The latency of aligned against straddling requests of one size and
/// direction on a device: each side's count and median, and the decision.
pub fn watch_latency() -> Vec<LC> {
    vec![
        LC::html_only("device", "device", |c| c.device.clone()),
        LC::html_only("direction", "direction", |c| {
            c.direction.map_or(String::new(), |x| x.as_str().into())
        }),
        LC::html_only("size_from_bytes", "size", |c| human(c.size_from_bytes)).num(),
        LC::html_only("aligned_ios", "aligned", |c| c.aligned.ios.to_string()).num(),
        LC::html_only("aligned_median", "median", |c| span(c.aligned.median_us)).num(),
        LC::html_only("straddling_ios", "straddling", |c| {
            c.straddling.ios.to_string()
        })
        .num(),
        LC::html_only("straddling_median", "median", |c| {
            span(c.straddling.median_us)
        })
        .num(),
        LC::html_only("decision", "decision", |c| c.decision.as_str().into()),
    ]
}

/// A median known to its log2 bucket: `64–128 µs`, `≥1048576 µs`.
pub fn span(s: Span) -> String {
    match s.to_us {
        Some(to) => format!("{}–{} µs", s.from_us, to),
        None => format!("≥{} µs", s.from_us),
    }
}
