//! The block tracer (sys/trace) on real loop devices, as root: both paths
//! (BPF programs counting in the kernel, and raw perf samples) attach to
//! the block tracepoints while O_DIRECT I/O of known shape runs on a
//! partition that starts one sector past a 4 KiB boundary, and the counts
//! must be exact at each layer: the partition (block_bio_remap's upper
//! device) and the loop disk (block_bio_queue and block_rq_issue).

mod common;

use common::{image, require_root, sfdisk, LoopDev};
use diskalign::sys::sampled;
use diskalign::sys::{BpfAttach, Counters, DevNum, Direction, Grains, Snapshot, Stage, TracePath};
use diskalign::sys::{Capacity, Prefer, TraceError, Tracer};
use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::Mutex;

/// One test at a time: the fd census and the tracepoints are per process.
static SERIAL: Mutex<()> = Mutex::new(());

const START: u64 = 2049;
const WRITES_4K: u64 = 100;
const WRITES_512: u64 = 10;

fn devnum(node: &str) -> DevNum {
    let name = node.trim_start_matches("/dev/");
    let text = std::fs::read_to_string(format!("/sys/class/block/{name}/dev")).unwrap();
    let (ma, mi) = text.trim().split_once(':').unwrap();
    DevNum {
        major: ma.parse().unwrap(),
        minor: mi.parse().unwrap(),
    }
}

/// A loop disk with one partition at sector 2049 (4 KiB-misaligned).
fn misaligned_partition(dir: &std::path::Path) -> LoopDev {
    let img = image(dir, "disk.img", 64 << 20);
    sfdisk(
        &img,
        &format!("label: dos\nstart={START}, size=32768, type=83\n"),
    );
    let l = LoopDev::attach(&img, None);
    assert!(
        std::path::Path::new(&l.part(1)).exists(),
        "no {} after partx",
        l.part(1)
    );
    l
}

/// A page-aligned buffer of `len` bytes inside `v`.
fn aligned(v: &mut [u8], len: usize) -> &mut [u8] {
    let off = v.as_ptr().align_offset(4096);
    &mut v[off..off + len]
}

/// 100 writes of 4 KiB and 10 of 512 bytes, O_DIRECT, each at a 4 KiB
/// multiple of the partition (so at 512 bytes past one on the disk).
fn write_partition(node: &str) {
    let f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(node)
        .unwrap();
    let mut v = vec![0x5au8; 3 * 4096];
    for i in 0..WRITES_4K {
        f.write_all_at(aligned(&mut v, 4096), i * 65536).unwrap();
    }
    for i in 0..WRITES_512 {
        f.write_all_at(aligned(&mut v, 512), (8 << 20) + i * 65536)
            .unwrap();
    }
}

fn counters(s: &Snapshot, dev: DevNum, dir: Direction, stage: Stage) -> Option<&Counters> {
    s.counters
        .iter()
        .find(|(k, _)| *k == (dev, dir, stage))
        .map(|(_, c)| c)
}

fn grains(dev: DevNum) -> Grains {
    Grains {
        dev,
        grain_bytes: 4096,
        physical_bytes: 4096,
        zone_bytes: 0,
        legs: false,
    }
}

/// Whether the kernel ran the programs on every event of `s`. It skips a
/// BPF program when its tracepoint fires in an interrupt taken while a
/// tracing program runs on that CPU (a block completion in the softirq
/// at an interrupt's end), and counts it (`missed_events`): such a run
/// is short by those events, so it is not checked exactly but run again.
fn unskipped(s: &Snapshot) -> bool {
    if s.missed_events > 0 {
        eprintln!(
            "the kernel skipped the programs on {} events: running again",
            s.missed_events
        );
    }
    s.missed_events == 0
}

/// Runs `check` (a workload traced and checked exactly; false when the
/// kernel skipped events in it) until a run without skips, three at most.
fn until_unskipped(check: impl Fn() -> bool) {
    assert!(
        (0..3).any(|_| check()),
        "the kernel skipped events in 3 runs in a row"
    );
}

/// The same counts whichever path ran.
fn check_counts(prefer: Prefer, path: TracePath) -> bool {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let l = misaligned_partition(dir.path());
    let (disk, part) = (devnum(&l.dev), devnum(&l.part(1)));
    let t = Tracer::start(&[grains(disk), grains(part)], prefer).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.path(), path);
    assert_eq!(
        t.attach(),
        expected_attach(prefer),
        "{:?}",
        t.typed_refused()
    );
    write_partition(&l.part(1));
    let s = t.snapshot().unwrap();
    if !unskipped(&s) {
        return false;
    }
    drop(t);
    let ios = WRITES_4K + WRITES_512;
    let bytes = WRITES_4K * 4096 + WRITES_512 * 512;
    for stage in [Stage::Queue, Stage::Issue] {
        let c = counters(&s, disk, Direction::Write, stage)
            .unwrap_or_else(|| panic!("no {stage} writes at the disk: {s:#?}"));
        assert_eq!((c.ios, c.bytes), (ios, bytes), "{stage} at the disk");
        assert_eq!(
            c.straddle_4k, WRITES_4K,
            "every 4 KiB write straddles on the disk"
        );
        assert_eq!(c.straddle_grain, WRITES_4K);
        assert_eq!(c.sub_physical, WRITES_512);
        assert_eq!((c.size_log2[3], c.size_log2[0]), (WRITES_4K, WRITES_512));
        assert_eq!(c.start_mod_4k[1], ios, "sector 2049 + 8k is 1 mod 8");
    }
    // Linux hands the partition's bio to the disk with block_bio_remap
    // (blk_partition_remap), old_dev the partition; block_bio_queue
    // names the disk (bio_dev is the whole disk's dev_t since 5.12).
    let c = counters(&s, part, Direction::Write, Stage::RemapFrom)
        .unwrap_or_else(|| panic!("no remap from the partition: {s:#?}"));
    assert_eq!((c.ios, c.bytes), (ios, bytes));
    assert_eq!(
        (c.straddle_4k, c.straddle_grain),
        (0, 0),
        "aligned inside the partition"
    );
    assert_eq!(c.start_mod_4k[0], ios);
    assert_eq!(c.sub_physical, WRITES_512);
    assert!(counters(&s, part, Direction::Write, Stage::Queue).is_none());
    // Nobody asked for the partition's legs: its remap is not counted twice.
    assert!(s.legs.is_empty(), "{:#?}", s.legs);
    let timed = |size: u8, straddles: bool| -> u64 {
        s.latency
            .iter()
            .filter(|l| {
                (l.dev, l.direction, l.size_bucket, l.straddles)
                    == (disk, Direction::Write, size, straddles)
            })
            .map(|l| l.micros_log2.iter().sum::<u64>())
            .sum()
    };
    // One request in 8 is timed, chosen by its sector on the disk.
    let bits = Capacity::DEFAULT.sample_bits();
    let in_sample =
        |first: u64, n: u64| (0..n).filter(|i| sampled(first + i * 128, bits)).count() as u64;
    let (want_4k, want_512) = (
        in_sample(START, WRITES_4K),
        in_sample(START + (8 << 20) / 512, WRITES_512),
    );
    assert!(want_4k > 0, "the sample holds some of the 4 KiB writes");
    assert_eq!(
        (timed(3, true), timed(0, false)),
        (want_4k, want_512),
        "{:#?}",
        s.latency
    );
    assert_eq!(s.lost_records, 0);
    true
}

/// The three ways of reading the events: typed raw tracepoints (this
/// kernel has BTF), BPF on perf events reading the tracefs records, and
/// raw perf samples.
const PATHS: [Prefer; 3] = [Prefer::Bpf, Prefer::BpfTracefs, Prefer::PerfSamples];

/// How `prefer` must attach here: the typed raw tracepoints wherever the
/// kernel has BTF, which the machines this runs on have.
fn expected_attach(prefer: Prefer) -> Option<BpfAttach> {
    assert!(
        std::path::Path::new("/sys/kernel/btf/vmlinux").exists(),
        "this kernel has no BTF (/sys/kernel/btf/vmlinux): the typed raw tracepoints cannot be tested"
    );
    match prefer {
        Prefer::Bpf | Prefer::Auto => Some(BpfAttach::RawTracepoint),
        Prefer::BpfTracefs => Some(BpfAttach::PerfEvent),
        Prefer::PerfSamples => None,
    }
}

#[test]
fn bpf_counts_each_layer_exactly() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    until_unskipped(|| check_counts(Prefer::Bpf, TracePath::Bpf));
    until_unskipped(|| check_counts(Prefer::BpfTracefs, TracePath::Bpf));
}

#[test]
fn perf_samples_count_the_same() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    until_unskipped(|| check_counts(Prefer::PerfSamples, TracePath::PerfSamples));
}

#[test]
fn auto_takes_bpf_where_the_kernel_allows_it() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    let t = Tracer::start(&[], Prefer::Auto).unwrap();
    assert_eq!((t.path(), t.bpf_refused()), (TracePath::Bpf, None));
}

/// This process's perf events, BPF programs and maps.
fn tracing_fds() -> usize {
    fds_of("self", &["perf_event", "bpf"])
}

/// The descriptors process `pid` holds whose target names one of
/// `kinds` (0 when it is gone).
fn fds_of(pid: &str, kinds: &[&str]) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| {
        d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|t| {
                let t = t.to_string_lossy();
                kinds.iter().any(|k| t.contains(k))
            })
            .count()
    })
}

#[test]
fn dropping_the_tracer_closes_every_descriptor() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    let before = tracing_fds();
    for prefer in PATHS {
        let t = Tracer::start(&[], prefer).unwrap();
        assert!(
            tracing_fds() > before,
            "{prefer:?} holds no perf or BPF descriptor"
        );
        drop(t);
        assert_eq!(tracing_fds(), before, "{prefer:?} left descriptors open");
    }
}

/// capset(2) on this thread only: no effective capability left.
fn drop_effective_capabilities() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let h = Header {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    };
    let mut d = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capget/capset with a v3 header and two data structs.
    unsafe {
        assert_eq!(
            libc::syscall(libc::SYS_capget, &h as *const Header, d.as_mut_ptr()),
            0
        );
        d[0].effective = 0;
        d[1].effective = 0;
        assert_eq!(
            libc::syscall(libc::SYS_capset, &h as *const Header, d.as_ptr()),
            0
        );
    }
}

#[test]
fn without_privilege_one_line_says_what_is_missing() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        paranoid >= 0,
        "kernel.perf_event_paranoid is {paranoid}: anyone may trace, nothing to test"
    );
    let r = std::thread::spawn(|| {
        drop_effective_capabilities();
        Tracer::start(&[], Prefer::Auto).map(|_| ())
    })
    .join()
    .unwrap();
    let e = r.expect_err("traced without capabilities");
    assert!(matches!(e, TraceError::NotPermitted(_)), "{e:?}");
    let msg = e.to_string();
    assert!(!msg.contains('\n') && msg.contains("CAP_PERFMON"), "{msg}");
    assert!(
        msg.contains(&format!("perf_event_paranoid is {paranoid}")),
        "{msg}"
    );
}

/// A bare loop disk with its queue set up: no I/O scheduler, and at most
/// `max_kb` KiB per request.
fn plain_disk(dir: &std::path::Path, max_kb: u32) -> LoopDev {
    let img = image(dir, "plain.img", 64 << 20);
    let l = LoopDev::attach(&img, None);
    let q = format!("/sys/block/{}/queue", l.dev.trim_start_matches("/dev/"));
    std::fs::write(format!("{q}/scheduler"), "none").unwrap();
    std::fs::write(format!("{q}/max_sectors_kb"), max_kb.to_string()).unwrap();
    l
}

/// Splits: 20 writes of 16 KiB through requests of at most 4 KiB. Each
/// split cuts one more piece off a bio, so the requests issued are the
/// bios queued plus the splits.
fn check_splits(prefer: Prefer) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let l = plain_disk(dir.path(), 4);
    let disk = devnum(&l.dev);
    let t = Tracer::start(&[grains(disk)], prefer).unwrap();
    let f = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&l.dev)
        .unwrap();
    let mut v = vec![0x11u8; 6 * 4096];
    for i in 0..20u64 {
        f.write_all_at(aligned(&mut v, 16384), i * 65536).unwrap();
    }
    let s = t.snapshot().unwrap();
    if !unskipped(&s) {
        return false;
    }
    let q = counters(&s, disk, Direction::Write, Stage::Queue).unwrap();
    let i = counters(&s, disk, Direction::Write, Stage::Issue).unwrap();
    assert_eq!((q.ios, q.size_log2[5]), (20, 20), "{prefer:?}: 16 KiB bios");
    assert_eq!(
        (i.ios, i.size_log2[3]),
        (80, 80),
        "{prefer:?}: 4 KiB requests"
    );
    assert_eq!(q.splits, 60, "{prefer:?}: three splits per bio");
    true
}

/// Merges: fio submits 4 KiB sequential writes 16 at a time (one plug), so
/// bios merge into requests; each merged bio is a request fewer.
fn check_merges(prefer: Prefer) -> bool {
    common::require_tool("fio");
    let dir = tempfile::tempdir().unwrap();
    let l = plain_disk(dir.path(), 1024);
    let disk = devnum(&l.dev);
    let t = Tracer::start(&[grains(disk)], prefer).unwrap();
    common::sh(
        "fio",
        &[
            "--name=merge",
            &format!("--filename={}", l.dev),
            "--rw=write",
            "--bs=4k",
            "--size=8M",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=16",
            "--iodepth_batch_submit=16",
            "--iodepth_batch_complete_min=16",
        ],
    );
    let s = t.snapshot().unwrap();
    if !unskipped(&s) {
        return false;
    }
    let q = counters(&s, disk, Direction::Write, Stage::Queue).unwrap();
    let i = counters(&s, disk, Direction::Write, Stage::Issue).unwrap();
    assert_eq!(q.ios, 2048, "{prefer:?}: fio's 8 MiB in 4 KiB bios");
    assert!(q.merges > 0, "{prefer:?}: no merge counted");
    assert_eq!(
        i.ios + q.merges,
        q.ios,
        "{prefer:?}: a merged bio is a request fewer"
    );
    assert_eq!(i.bytes, q.bytes);
    true
}

#[test]
fn splits_and_merges_on_both_paths() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    for prefer in PATHS {
        until_unskipped(|| check_splits(prefer));
        until_unskipped(|| check_merges(prefer));
    }
}

/// The zone size handed to the tracer in `check_zone_crossings`.
const ZONE: u64 = 65536;

/// O_DIRECT writes to `node`: 30 of 8 KiB across a zone boundary, 5 of
/// two whole zones (from a boundary, so across the one between them), 20
/// of 4 KiB inside a zone and 10 ending on a boundary; and 10 reads of
/// 8 KiB across a boundary.
fn write_across_zones(node: &str) {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(node)
        .unwrap();
    let mut v = vec![0x22u8; 2 * ZONE as usize + 4096];
    for i in 0..30 {
        f.write_all_at(aligned(&mut v, 8192), (i + 1) * ZONE - 4096)
            .unwrap();
    }
    for i in 0..5 {
        f.write_all_at(aligned(&mut v, 2 * ZONE as usize), 2 * i * ZONE)
            .unwrap();
    }
    for i in 0..20 {
        f.write_all_at(aligned(&mut v, 4096), i * ZONE + 8192)
            .unwrap();
    }
    for i in 0..10 {
        f.write_all_at(aligned(&mut v, 4096), (i + 1) * ZONE - 4096)
            .unwrap();
    }
    for i in 0..10 {
        f.read_exact_at(aligned(&mut v, 8192), (i + 1) * ZONE - 4096)
            .unwrap();
    }
}

/// Writes across a zone boundary, counted against the zone size the
/// tracer is handed. No zoned disk here: a plain loop disk is handed
/// 64 KiB zones, and since its queue knows of no zones (no
/// chunk_sectors), nothing splits the writes at them, so the requests
/// issued cross as the bios queued do. The same writes to a disk handed
/// no zone size count none.
fn check_zone_crossings(prefer: Prefer) -> bool {
    let (zoned_dir, plain_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (zl, pl) = (
        plain_disk(zoned_dir.path(), 1024),
        plain_disk(plain_dir.path(), 1024),
    );
    let (zoned, plain) = (devnum(&zl.dev), devnum(&pl.dev));
    let g = Grains {
        zone_bytes: ZONE,
        ..grains(zoned)
    };
    let t = Tracer::start(&[g, grains(plain)], prefer).unwrap_or_else(|e| panic!("{e}"));
    write_across_zones(&zl.dev);
    write_across_zones(&pl.dev);
    let s = t.snapshot().unwrap();
    if !unskipped(&s) {
        return false;
    }
    drop(t);
    for stage in [Stage::Queue, Stage::Issue] {
        let c = counters(&s, zoned, Direction::Write, stage)
            .unwrap_or_else(|| panic!("{prefer:?}: no {stage} writes: {s:#?}"));
        assert_eq!(c.ios, 65, "{prefer:?} {stage}: every write, unsplit");
        assert_eq!(c.zone_crossing_writes, 35, "{prefer:?} {stage}");
        let r = counters(&s, zoned, Direction::Read, stage).unwrap();
        assert_eq!(
            (r.ios, r.zone_crossing_writes),
            (10, 0),
            "{prefer:?} {stage}"
        );
        let p = counters(&s, plain, Direction::Write, stage).unwrap();
        assert_eq!(
            (p.ios, p.zone_crossing_writes),
            (65, 0),
            "{prefer:?} {stage}: a disk handed no zone size"
        );
    }
    true
}

#[test]
fn zone_crossing_writes_are_counted_on_every_path() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    for prefer in PATHS {
        until_unskipped(|| check_zone_crossings(prefer));
    }
}

/// The `watch` command with the kernel's tracer, end to end: a command
/// writing 4 KiB O_DIRECT blocks (dd) to a partition one sector past a
/// 4 KiB boundary. Every write is counted at the partition (aligned inside
/// it, off 4 KiB on the disk) and at the loop disk, and watch finds them
/// straddling and names the partition's start as the cause.
#[test]
fn watch_counts_a_commands_writes_at_each_layer() {
    require_root();
    common::require_tool("dd");
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let lo = misaligned_partition(dir.path());
    let part = lo.part(1);
    let of = format!("of={part}");
    let (out, status) = common::run(&[
        "watch",
        &part,
        "--json",
        "--for",
        "20s",
        "--",
        "dd",
        "if=/dev/zero",
        &of,
        "bs=4096",
        "count=200",
        "oflag=direct",
        "status=none",
    ]);
    let doc: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(status, 1, "{doc}");
    assert_eq!(doc["trace"]["path"], "bpf", "{doc}");
    assert_eq!(doc["command"]["exit_status"], 0, "{doc}");
    let name = part.trim_start_matches("/dev/");
    let row = |dev: &str| {
        doc["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["device"] == dev && d["direction"] == "write")
            .unwrap_or_else(|| panic!("no write row for {dev}: {doc}"))
            .clone()
    };
    let p = row(name);
    assert_eq!(p["layer"], "partition");
    assert_eq!(p["ios"], 200, "{p}");
    assert_eq!(p["straddle_4k"], 0, "{p}");
    assert_eq!(p["off_4k_on_disk"], 200, "{p}");
    let disk = lo.dev.trim_start_matches("/dev/").to_string();
    let d = row(&disk);
    assert_eq!(d["ios"], 200, "{d}");
    assert_eq!(d["straddle_4k"], 200, "{d}");
    let codes = common::codes(&doc);
    assert!(codes.iter().any(|c| c == "straddling-io"), "{codes:?}");
    // One misalignment, one finding: the disk's straddling writes are the
    // partition's, found at the partition.
    let straddling: Vec<&serde_json::Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "straddling-io")
        .collect();
    assert_eq!(straddling.len(), 1, "{straddling:#?}");
    assert_eq!(straddling[0]["facts"]["device"], name);
    // Its fix is the disk's plan command, and it runs as printed.
    let fix = straddling[0]["facts"]["fix"].as_str().expect("a fix");
    assert_eq!(fix, format!("diskalign plan {}", lo.dev));
    let bin_dir = std::path::Path::new(common::bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (_, err, code) = common::output_of(
        std::process::Command::new("sh")
            .args(["-c", fix])
            .env("PATH", path),
    );
    assert_eq!(code, 1, "`{fix}` plans the fix: {err}");
    // What it read to name the cause was read before counting: said,
    // and not in the counts (the disk's writes are the command's alone).
    assert!(doc["read_before_bytes"].is_u64(), "{doc}");
}

/// `watch` without the privileges to trace: one line saying what is
/// missing, exit 2 (run as `nobody` through setpriv).
#[test]
fn watch_without_privileges_says_what_is_missing() {
    require_root();
    common::require_tool("setpriv");
    let dir = tempfile::tempdir().unwrap();
    let lo = misaligned_partition(dir.path());
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(common::bin())
        .args(["watch", &lo.dev, "--for", "1s"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("needs root, or CAP_PERFMON"), "{err}");
    assert!(out.stdout.is_empty());
}

/// `DISKALIGN_WATCH_TRACE` picks the way events are read; a value it does
/// not know is one line and exit 2, nothing on stdout.
#[test]
fn watch_takes_the_trace_path_it_is_asked_for() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let lo = misaligned_partition(dir.path());
    let run = |value: &str| {
        std::process::Command::new(common::bin())
            .env("DISKALIGN_WATCH_TRACE", value)
            .args(["watch", &lo.dev, "--for", "1s", "--json"])
            .output()
            .unwrap()
    };
    let out = run("nonsense");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("DISKALIGN_WATCH_TRACE=nonsense"), "{err}");
    assert!(out.stdout.is_empty());
    for (value, path, attach) in [
        ("perf-samples", "perf-samples", serde_json::Value::Null),
        ("bpf-tracefs", "bpf", "perf-event".into()),
    ] {
        let out = run(value);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{value}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(doc["trace"]["path"], path, "{value}");
        assert_eq!(doc["trace"]["attach"], attach, "{value}");
    }
}

/// A cgroup made by the test under the cgroup2 mount; removed on drop.
struct Cgroup {
    dir: std::path::PathBuf,
    /// Its path as the tracer names it, relative to the mount.
    path: String,
}

impl Cgroup {
    fn new(name: &str) -> Cgroup {
        let root = diskalign::sys::mount_point()
            .expect("no cgroup2 filesystem is mounted: the attribution tests need one");
        let leaf = format!("{name}-{}", std::process::id());
        let dir = root.join(&leaf);
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        Cgroup {
            dir,
            path: format!("/{leaf}"),
        }
    }

    /// Its cgroup v2 id: the directory's inode number.
    fn id(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&self.dir).unwrap().ino()
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Its last task may still be exiting: try for a second.
        for _ in 0..20 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

const STRADDLING: u64 = 120;
const ALIGNED: u64 = 80;

/// Two named writers at once, as a shell script: `da-straddle` (4 KiB
/// O_DIRECT writes at 4 KiB offsets of the partition at sector 2049, so
/// every one is off 4 KiB on the disk) and `da-aligned` (4 KiB writes at
/// 4 KiB offsets of the disk past the partition), the latter inside the
/// cgroup `cg`. Both are dd under another name (a symlink in `dir`): a
/// task's `comm` is the name of what it executed.
fn two_writers(dir: &std::path::Path, lo: &LoopDev, cg: &Cgroup) -> String {
    common::require_tool("dd");
    let dd = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("dd"))
        .find(|p| p.is_file())
        .unwrap();
    for name in ["da-straddle", "da-aligned"] {
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(std::fs::canonicalize(&dd).unwrap(), &link).unwrap();
    }
    let d = dir.display();
    format!(
        "{d}/da-straddle if=/dev/zero of={part} bs=4096 count={STRADDLING} oflag=direct status=none & \
         sh -c 'echo $$ > {cg}/cgroup.procs && exec {d}/da-aligned if=/dev/zero of={disk} bs=4096 count={ALIGNED} seek=5000 oflag=direct status=none' && wait",
        part = lo.part(1),
        disk = lo.dev,
        cg = cg.dir.display(),
    )
}

fn submitter<'a>(
    s: &'a Snapshot,
    dev: DevNum,
    stage: Stage,
    comm: &str,
) -> &'a (diskalign::sys::SubmitterKey, Counters) {
    s.submitters
        .iter()
        .find(|(k, _)| {
            (k.dev, k.direction, k.stage, k.comm.as_str()) == (dev, Direction::Write, stage, comm)
        })
        .unwrap_or_else(|| panic!("no {comm} at {dev:?} {stage}: {:#?}", s.submitters))
}

/// Each writer is named with its own I/O at the disk (where its bios are
/// queued) and at the partition, and the one in the test's cgroup with
/// that cgroup, on both paths.
fn check_attribution(prefer: Prefer) -> bool {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let l = misaligned_partition(dir.path());
    let (disk, part) = (devnum(&l.dev), devnum(&l.part(1)));
    let cg = Cgroup::new("diskalign-who");
    let script = two_writers(dir.path(), &l, &cg);
    let t = Tracer::start(&[grains(disk), grains(part)], prefer).unwrap();
    common::sh("sh", &["-c", &script]);
    let s = t.snapshot().unwrap();
    if !unskipped(&s) {
        return false;
    }
    drop(t);
    let (k, c) = submitter(&s, disk, Stage::Queue, "da-straddle");
    assert_eq!(
        (c.ios, c.straddle_4k),
        (STRADDLING, STRADDLING),
        "{prefer:?} {k:?}"
    );
    assert_eq!(c.bytes, STRADDLING * 4096);
    let (k, c) = submitter(&s, disk, Stage::Queue, "da-aligned");
    assert_eq!((c.ios, c.straddle_4k), (ALIGNED, 0), "{prefer:?} {k:?}");
    assert_eq!(k.cgroup_id, cg.id(), "{prefer:?}: the test's cgroup");
    let path = s.cgroups.iter().find(|(id, _)| *id == cg.id());
    assert_eq!(path.map(|(_, p)| p.as_str()), Some(cg.path.as_str()));
    let (_, c) = submitter(&s, part, Stage::RemapFrom, "da-straddle");
    assert_eq!(
        (c.ios, c.straddle_4k, c.start_mod_4k[0]),
        (STRADDLING, 0, STRADDLING),
        "{prefer:?}: aligned inside the partition"
    );
    assert!(
        !s.submitters
            .iter()
            .any(|(k, _)| k.dev == part && k.comm == "da-aligned"),
        "{prefer:?}: da-aligned never wrote to the partition"
    );
    for ((dev, dir, stage), c) in &s.counters {
        assert_eq!(c.unattributed, 0, "{prefer:?} {dev:?} {dir} {stage}");
    }
    true
}

#[test]
fn every_path_names_who_submitted_each_io() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for prefer in PATHS {
        until_unskipped(|| check_attribution(prefer));
    }
}

/// `watch` end to end: the two writers at once, as its COMMAND. The
/// submitters of the disk and the partition name each right, with the
/// test's cgroup, and the straddling finding names da-straddle.
#[test]
fn watch_names_the_process_that_misaligns() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let lo = misaligned_partition(dir.path());
    let cg = Cgroup::new("diskalign-watch-who");
    let script = two_writers(dir.path(), &lo, &cg);
    let (out, status) = common::run(&[
        "watch", &lo.dev, "--json", "--for", "30s", "--", "sh", "-c", &script,
    ]);
    assert_eq!(status, 1, "{out}");
    let doc: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(doc["command"]["exit_status"], 0, "{doc}");
    let row = |dev: &str| {
        doc["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["device"] == dev && d["direction"] == "write")
            .unwrap_or_else(|| panic!("no write row for {dev}: {doc}"))
            .clone()
    };
    let disk = row(lo.dev.trim_start_matches("/dev/"));
    assert_eq!(disk["submitters_stage"], "queue");
    let subs = disk["submitters"].as_array().unwrap();
    let by = |name: &str| {
        subs.iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {disk}"))
    };
    assert_eq!(by("da-straddle")["straddling"], STRADDLING, "{disk}");
    assert_eq!(by("da-aligned")["straddling"], 0, "{disk}");
    assert_eq!(by("da-aligned")["ios"], ALIGNED, "{disk}");
    assert_eq!(by("da-aligned")["cgroup"], cg.path.as_str(), "{disk}");
    assert_eq!(
        subs[0]["name"], "da-straddle",
        "the one that misaligned first"
    );
    let part = row(lo.part(1).trim_start_matches("/dev/"));
    assert_eq!(part["submitters_stage"], "remap-from");
    assert_eq!(part["submitters"][0]["name"], "da-straddle", "{part}");
    assert_eq!(
        part["submitters"][0]["off_4k_on_disk"], STRADDLING,
        "{part}"
    );
    // One misalignment is one finding: the disk's straddling writes are
    // the partition's, which accounts for them (at sector 2049).
    let found = doc["findings"].as_array().unwrap();
    let straddling = found
        .iter()
        .find(|f| f["code"] == "straddling-io" && f["facts"]["device"] == part["device"])
        .unwrap_or_else(|| panic!("no straddling-io at the partition: {doc}"));
    assert_eq!(
        straddling["facts"]["submitters"][0]["name"], "da-straddle",
        "{straddling}"
    );
    assert!(
        straddling["message"]
            .as_str()
            .unwrap()
            .contains("most from da-straddle (120)"),
        "{straddling}"
    );
}

/// bpf(2) with an attribute of one u32 (`id` or `start_id`) and, for the
/// GET_NEXT_ID commands, the next id written at byte 4.
fn bpf_id_call(cmd: i64, id: u32) -> (i64, u32) {
    let mut attr = [0u8; 16];
    attr[0..4].copy_from_slice(&id.to_ne_bytes());
    // SAFETY: the kernel reads and writes within the 16 bytes given.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len()) };
    (r, u32::from_ne_bytes(attr[4..8].try_into().unwrap()))
}

const PROG_GET_NEXT_ID: i64 = 11;
const MAP_GET_NEXT_ID: i64 = 12;
const PROG_GET_FD_BY_ID: i64 = 13;
const MAP_GET_FD_BY_ID: i64 = 14;
const LINK_GET_FD_BY_ID: i64 = 30;

/// Every BPF program (or map) id in the system.
fn bpf_objects(next: i64) -> Vec<u32> {
    let mut ids = Vec::new();
    let mut id = 0;
    loop {
        let (r, n) = bpf_id_call(next, id);
        if r != 0 {
            return ids;
        }
        ids.push(n);
        id = n;
    }
}

/// Whether the program or map `id` still exists (its fd closed at once).
fn bpf_alive(get_fd: i64, id: u32) -> bool {
    let (fd, _) = bpf_id_call(get_fd, id);
    if fd >= 0 {
        // SAFETY: a descriptor the kernel just gave us.
        unsafe { libc::close(fd as i32) };
    }
    fd >= 0
}

/// What process `pid` holds of BPF: program, map and link ids, from the
/// `prog_id`, `map_id` and `link_id` lines of its descriptors' fdinfo
/// (a link's names its program too), and how many attachments (`bpf_link`s
/// and perf events).
fn held_by(pid: u32) -> (Vec<u32>, Vec<u32>, Vec<u32>, usize) {
    let (mut progs, mut maps, mut links, mut attached) = (Vec::new(), Vec::new(), Vec::new(), 0);
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return (progs, maps, links, attached);
    };
    for fd in fds.flatten() {
        let target = std::fs::read_link(fd.path()).unwrap_or_default();
        let target = target.to_string_lossy();
        attached += usize::from(target.contains("perf_event") || target.contains("bpf_link"));
        let info = format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy());
        for line in std::fs::read_to_string(info).unwrap_or_default().lines() {
            let id = |v: &str| v.trim().parse::<u32>().ok();
            if let Some(v) = line.strip_prefix("prog_id:").and_then(id) {
                progs.push(v);
            } else if let Some(v) = line.strip_prefix("map_id:").and_then(id) {
                maps.push(v);
            } else if let Some(v) = line.strip_prefix("link_id:").and_then(id) {
                links.push(v);
            }
        }
    }
    progs.sort_unstable();
    progs.dedup();
    (progs, maps, links, attached)
}

/// `kill -9` during a watch leaves nothing behind: the system's BPF
/// programs and maps before and after the watch are compared, and every
/// one the watch held is gone, with the links that attached the programs
/// to their raw tracepoints (the kernel frees them when the process's
/// descriptors go; a perf event or link holds its program, so a program
/// gone means its attachment is too). No tracefs mount is left either.
#[test]
fn kill_9_during_a_watch_leaves_no_bpf_object_behind() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let lo = misaligned_partition(dir.path());
    let tracefs_mounts = || common_mounts("tracefs");
    let (progs0, maps0, mounts0) = (
        bpf_objects(PROG_GET_NEXT_ID),
        bpf_objects(MAP_GET_NEXT_ID),
        tracefs_mounts(),
    );
    let mut child = std::process::Command::new(common::bin())
        .args(["watch", &lo.dev, "--for", "60s", "-q"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut held = (Vec::new(), Vec::new(), Vec::new(), 0);
    for _ in 0..200 {
        held = held_by(pid);
        if held.0.len() >= 7 && held.3 >= 7 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (progs, maps, links, attached) = held;
    assert!(
        progs.len() >= 7 && maps.len() >= 5 && attached >= 7,
        "the watch never attached: {progs:?} {maps:?} {attached} links and perf events"
    );
    assert!(progs.iter().all(|p| !progs0.contains(p)), "new programs");
    child.kill().unwrap();
    child.wait().unwrap();
    // The kernel frees maps from a workqueue: allow it a few seconds.
    let alive = || -> Vec<String> {
        let p = progs.iter().filter(|&&id| bpf_alive(PROG_GET_FD_BY_ID, id));
        let m = maps.iter().filter(|&&id| bpf_alive(MAP_GET_FD_BY_ID, id));
        let l = links.iter().filter(|&&id| bpf_alive(LINK_GET_FD_BY_ID, id));
        p.map(|id| format!("program {id}"))
            .chain(m.map(|id| format!("map {id}")))
            .chain(l.map(|id| format!("link {id}")))
            .collect()
    };
    let mut left = alive();
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        left = alive();
    }
    assert!(left.is_empty(), "left behind after kill -9: {left:?}");
    let (progs1, maps1) = (bpf_objects(PROG_GET_NEXT_ID), bpf_objects(MAP_GET_NEXT_ID));
    assert!(
        progs.iter().all(|p| !progs1.contains(p)) && maps.iter().all(|m| !maps1.contains(m)),
        "the system still lists the watch's objects: {progs1:?} {maps1:?}"
    );
    // Others' objects may come and go meanwhile (the machine is shared);
    // none of the watch's is among those left.
    let _ = (maps0, progs0);
    assert_eq!(tracefs_mounts(), mounts0, "a tracefs mount was left");
}

/// How many mounts of `fs_type` this process sees.
fn common_mounts(fs_type: &str) -> usize {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| {
            l.split(" - ")
                .nth(1)
                .is_some_and(|r| r.starts_with(fs_type))
        })
        .count()
}

/// fio's 8 MiB of 4 KiB O_DIRECT reads of `node` at queue depth 32: the
/// reads it issued (2048).
fn fio_reads(node: &str) -> u64 {
    common::sh(
        "fio",
        &[
            "--name=reads",
            &format!("--filename={node}"),
            "--rw=read",
            "--bs=4k",
            "--size=8M",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=32",
        ],
    );
    2048
}

/// The reads of `disk` whose latency was timed.
fn timed_reads(s: &Snapshot, disk: DevNum) -> u64 {
    s.latency
        .iter()
        .filter(|x| (x.dev, x.direction) == (disk, Direction::Read))
        .map(|x| x.micros_log2.iter().sum::<u64>())
        .sum()
}

/// A full table is counted, never silent, on both paths: with room for
/// one device, four requests in flight and one submitter, the partition
/// is named as not traced, every read request fio issues at queue depth
/// 32 is either timed or counted untimed, and every bio is either
/// attributed to the one submitter or counted unattributed.
fn check_full_tables(prefer: Prefer) -> bool {
    common::require_tool("fio");
    let dir = tempfile::tempdir().unwrap();
    let l = misaligned_partition(dir.path());
    let (disk, part) = (devnum(&l.dev), devnum(&l.part(1)));
    let cg = Cgroup::new("diskalign-full");
    let script = two_writers(dir.path(), &l, &cg);
    let cap = Capacity {
        devices: 1,
        inflight: 4,
        submitters: 1,
        legs: 4096,
        latency_one_in: 1,
    };
    let t = Tracer::start_with(&[grains(disk), grains(part)], prefer, cap).unwrap();
    fio_reads(&l.dev);
    common::sh("sh", &["-c", &script]);
    let s = t.snapshot().unwrap();
    if !unskipped(&s) {
        return false;
    }
    drop(t);
    assert_eq!(s.untraced_devices, [part], "{prefer:?}");
    let issued = counters(&s, disk, Direction::Read, Stage::Issue).unwrap();
    let timed = timed_reads(&s, disk);
    assert!(issued.untimed > 0, "{prefer:?}: 32 in flight, room for 4");
    assert_eq!(timed + issued.untimed, issued.ios, "{prefer:?}");
    assert_eq!(s.submitters.len(), 1, "{prefer:?}: {:#?}", s.submitters);
    let mut unattributed = 0;
    for dir in [Direction::Read, Direction::Write] {
        let q = counters(&s, disk, dir, Stage::Queue).unwrap();
        let attributed: u64 = s
            .submitters
            .iter()
            .filter(|(k, _)| (k.dev, k.direction, k.stage) == (disk, dir, Stage::Queue))
            .map(|(_, c)| c.ios)
            .sum();
        assert_eq!(attributed + q.unattributed, q.ios, "{prefer:?} {dir}");
        unattributed += q.unattributed;
    }
    assert!(unattributed > 0, "{prefer:?}");
    true
}

#[test]
fn full_tables_are_counted_on_every_path() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    for prefer in PATHS {
        until_unskipped(|| check_full_tables(prefer));
    }
}

/// 20 O_DIRECT reads of 4 KiB from the partition, at 4 KiB multiples of it.
fn read_partition(node: &str) {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(node)
        .unwrap();
    let mut v = vec![0u8; 2 * 4096];
    for i in 0..20u64 {
        f.read_exact_at(aligned(&mut v, 4096), i * 65536).unwrap();
    }
}

/// The partition's bios where they landed on the disk (its one leg, as
/// block_bio_remap hands them down), with room for one leg only: the
/// writes are counted there, at the disk's sectors (every 4 KiB write
/// straddles; each start is 1 mod 8), and the reads, which would be a
/// second leg, are counted as unmapped on the partition.
fn check_legs(prefer: Prefer) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let l = misaligned_partition(dir.path());
    let (disk, part) = (devnum(&l.dev), devnum(&l.part(1)));
    let cap = Capacity {
        legs: 1,
        ..Capacity::DEFAULT
    };
    // watch asks for the legs of dm and md devices only; this host has
    // neither, so the partition asks here (scenario 26 has the others).
    let part_legs = Grains {
        legs: true,
        ..grains(part)
    };
    let t = Tracer::start_with(&[grains(disk), part_legs], prefer, cap).unwrap();
    write_partition(&l.part(1));
    read_partition(&l.part(1));
    let s = t.snapshot().unwrap();
    if !unskipped(&s) {
        return false;
    }
    drop(t);
    let ios = WRITES_4K + WRITES_512;
    assert_eq!(s.legs.len(), 1, "{prefer:?}: {:#?}", s.legs);
    let (k, c) = &s.legs[0];
    assert_eq!(
        (k.upper, k.lower, k.direction),
        (part, disk, Direction::Write),
        "{prefer:?}"
    );
    assert_eq!(
        (c.ios, c.bytes),
        (ios, WRITES_4K * 4096 + WRITES_512 * 512),
        "{prefer:?}"
    );
    assert_eq!(c.straddle_4k, WRITES_4K, "{prefer:?}");
    assert_eq!(c.start_mod_4k[1], ios, "{prefer:?}: {c:?}");
    let reads = counters(&s, part, Direction::Read, Stage::RemapFrom).unwrap();
    assert_eq!((reads.ios, reads.unmapped), (20, 20), "{prefer:?}");
    let writes = counters(&s, part, Direction::Write, Stage::RemapFrom).unwrap();
    assert_eq!(writes.unmapped, 0, "{prefer:?}");
    true
}

#[test]
fn legs_are_counted_where_the_bios_land_on_every_path() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    for prefer in PATHS {
        until_unskipped(|| check_legs(prefer));
    }
}

/// /proc/diskstats' line of `dev`: (reads, writes, discards) as
/// (completed, merged, sectors), and flushes completed.
fn diskstats_of(dev: DevNum) -> ([u64; 3], [u64; 3], [u64; 3], u64) {
    let text = std::fs::read_to_string("/proc/diskstats").unwrap();
    let line = text
        .lines()
        .find(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.len() > 2 && f[0] == dev.major.to_string() && f[1] == dev.minor.to_string()
        })
        .unwrap_or_else(|| panic!("no line of {dev:?} in /proc/diskstats"));
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(3)
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(
        f.len() >= 17,
        "a kernel without discard and flush fields: {line}"
    );
    (
        [f[0], f[1], f[2]],
        [f[4], f[5], f[6]],
        [f[11], f[12], f[13]],
        f[15],
    )
}

fn minus(a: [u64; 3], b: [u64; 3]) -> [u64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// What iostat counts, as a shell script on `disk`: 100 direct reads,
/// 300 buffered 4 KiB writes each followed by fdatasync (each an empty
/// write with REQ_PREFLUSH that becomes a flush), 50 plain direct writes,
/// 2 MiB of sequential writes submitted 16 at a time (bios merge into
/// requests) and a discard of 4 MiB.
fn iostat_workload(disk: &str) -> String {
    format!(
        "dd if={disk} of=/dev/null bs=4096 count=100 iflag=direct status=none && \\
         fio --name=sync --filename={disk} --rw=randwrite --bs=4k --size=16M --number_ios=300 --fdatasync=1 --ioengine=sync --output=/dev/null && \\
         fio --name=plain --filename={disk} --rw=randwrite --bs=4k --size=16M --number_ios=50 --direct=1 --ioengine=sync --output=/dev/null && \\
         fio --name=merge --filename={disk} --offset=32M --rw=write --bs=4k --size=2M --direct=1 --ioengine=libaio --iodepth=16 --iodepth_batch_submit=16 --iodepth_batch_complete_min=16 --output=/dev/null && \\
         blkdiscard -o 48M -l 4M {disk}"
    )
}

/// The kernel's statistics of a loop disk read with every snapshot agree
/// with /proc/diskstats read by the test around the same window, and the
/// traced counts explain them exactly: reads, discards and flushes as
/// issued, writes as issued plus the empty writes that carried a flush,
/// merges as the bio merges counted.
fn check_iostat(prefer: Prefer) -> bool {
    common::require_tool("fio");
    common::require_tool("blkdiscard");
    let dir = tempfile::tempdir().unwrap();
    let l = plain_disk(dir.path(), 1024);
    let disk = devnum(&l.dev);
    let t = Tracer::start(&[grains(disk)], prefer).unwrap();
    let d0 = diskstats_of(disk);
    let s0 = t.snapshot().unwrap();
    common::sh("sh", &["-c", &iostat_workload(&l.dev)]);
    let s1 = t.snapshot().unwrap();
    if !unskipped(&s1) {
        return false;
    }
    let d1 = diskstats_of(disk);
    drop(t);
    let (reads, writes, discards, flushes) = (
        minus(d1.0, d0.0),
        minus(d1.1, d0.1),
        minus(d1.2, d0.2),
        d1.3 - d0.3,
    );
    let kernel = |s: &Snapshot, d: Direction| {
        s.diskstats
            .iter()
            .find(|(k, _)| *k == (disk, d))
            .map(|(_, a)| [a.ios, a.merges, a.sectors])
            .unwrap()
    };
    let tracer_saw = |d| minus(kernel(&s1, d), kernel(&s0, d));
    assert_eq!(tracer_saw(Direction::Read), reads, "{prefer:?}");
    assert_eq!(tracer_saw(Direction::Write), writes, "{prefer:?}");
    assert_eq!(tracer_saw(Direction::Discard), discards, "{prefer:?}");
    assert_eq!(tracer_saw(Direction::Flush)[0], flushes, "{prefer:?}");
    let at = |d: Direction, stage: Stage| {
        let get = |s: &Snapshot| counters(s, disk, d, stage).cloned().unwrap_or_default();
        let (a, b) = (get(&s1), get(&s0));
        (
            a.ios - b.ios,
            a.bytes - b.bytes,
            a.merges - b.merges,
            a.preflush_writes - b.preflush_writes,
        )
    };
    let issued = |d| at(d, Stage::Issue);
    assert!(
        flushes >= 250,
        "{prefer:?}: fdatasync sent {flushes} flushes"
    );
    assert!(
        writes[1] > 0 && discards[0] > 0,
        "{prefer:?}: {writes:?} {discards:?}"
    );
    assert_eq!(issued(Direction::Read).0, reads[0], "{prefer:?}: reads");
    assert_eq!(issued(Direction::Read).1, reads[2] * 512, "{prefer:?}");
    let preflush = at(Direction::Flush, Stage::Queue).3;
    assert_eq!(preflush, flushes, "{prefer:?}: one empty write per flush");
    assert_eq!(
        issued(Direction::Write).0 + preflush,
        writes[0],
        "{prefer:?}: writes as the kernel counts them"
    );
    assert_eq!(issued(Direction::Write).1, writes[2] * 512, "{prefer:?}");
    assert_eq!(
        at(Direction::Write, Stage::Queue).2,
        writes[1],
        "{prefer:?}: merged bios"
    );
    assert_eq!(issued(Direction::Flush).0, flushes, "{prefer:?}: flushes");
    assert_eq!(
        issued(Direction::Discard).0,
        discards[0],
        "{prefer:?}: discards"
    );
    assert_eq!(
        issued(Direction::Discard).1,
        discards[2] * 512,
        "{prefer:?}"
    );
    true
}

#[test]
fn iostat_counts_agree_with_proc_diskstats_on_every_path() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    for prefer in PATHS {
        until_unskipped(|| check_iostat(prefer));
    }
}

/// `watch` shows the kernel's count of writes beside the issued ones and
/// says why they differ; its `diskstats` equal /proc/diskstats' deltas
/// read by the test around the watch.
#[test]
fn watch_shows_what_iostat_counts_and_why() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let l = plain_disk(dir.path(), 1024);
    let disk = devnum(&l.dev);
    let d0 = diskstats_of(disk);
    let script = iostat_workload(&l.dev);
    let (out, _) = common::run(&[
        "watch", &l.dev, "--json", "--for", "60s", "--", "sh", "-c", &script,
    ]);
    let d1 = diskstats_of(disk);
    let doc: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(doc["command"]["exit_status"], 0, "{doc}");
    let row = |dir: &str| {
        doc["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["direction"] == dir)
            .unwrap_or_else(|| panic!("no {dir} row: {doc}"))
            .clone()
    };
    let w = row("write");
    assert_eq!(w["diskstats"]["ios"], d1.1[0] - d0.1[0], "{w}");
    assert_eq!(w["diskstats"]["merges"], d1.1[1] - d0.1[1], "{w}");
    let f = row("flush");
    assert_eq!(f["diskstats"]["ios"], d1.3 - d0.3, "{f}");
    assert_eq!(f["diskstats_note"], serde_json::Value::Null, "{f}");
    let note = w["diskstats_note"]
        .as_str()
        .unwrap_or_else(|| panic!("{w}"));
    let expect = format!(
        "count {} writes: the {} issued and the {} empty writes that carried a flush",
        d1.1[0] - d0.1[0],
        w["ios"],
        f["ios"]
    );
    assert!(note.contains(&expect), "{note}\nexpected: {expect}");
    let r = row("read");
    assert_eq!(r["diskstats"]["ios"], r["ios"], "{r}");
    assert_eq!(r["diskstats_note"], serde_json::Value::Null);
}

/// Another tracer's busy BPF program, and two threads calling the
/// syscall it runs on without pause: while it runs, an interrupt's end
/// that completes a block request finds a tracing program running on
/// its CPU. Stopped on drop.
struct BusyTracer {
    bpftrace: std::process::Child,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    spinners: Vec<std::thread::JoinHandle<()>>,
}

impl BusyTracer {
    fn start() -> BusyTracer {
        common::require_tool("bpftrace");
        common::require_tool("unshare");
        // tracefs mounted for bpftrace in a mount namespace of its own.
        let script = "mount -t tracefs none /sys/kernel/tracing && exec bpftrace -e \
            'tracepoint:syscalls:sys_enter_getppid { $i = (uint64)0; \
            unroll(100) { $i = $i + 1; @x[$i % 7] = $i; } }'";
        let mut bpftrace = std::process::Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", script])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Attached once it holds its perf event.
        let pid = bpftrace.id().to_string();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while fds_of(&pid, &["perf_event"]) == 0 {
            assert!(
                bpftrace.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline,
                "bpftrace did not attach"
            );
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinners = (0..2)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        // SAFETY: getppid has no preconditions.
                        unsafe { libc::getppid() };
                    }
                })
            })
            .collect();
        BusyTracer {
            bpftrace,
            stop,
            spinners,
        }
    }
}

impl Drop for BusyTracer {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for s in self.spinners.drain(..) {
            let _ = s.join();
        }
        let _ = self.bpftrace.kill();
        let _ = self.bpftrace.wait();
    }
}

/// Events the kernel skips are counted, and the counts are short by at
/// most them: beside a busy bpftrace program (`BusyTracer`), the
/// perf-event path's programs are skipped now and then (the kernel runs
/// one tracing program at a time on a CPU there); fio's 4 KiB reads, 2048
/// a run, each timed, are read again after each run until
/// `missed_events` is not 0 (here after 1 to 23 runs, a few seconds; at
/// most 120 s).
#[test]
fn skipped_events_are_counted_and_bound_the_counts() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    common::require_tool("fio");
    let dir = tempfile::tempdir().unwrap();
    let l = plain_disk(dir.path(), 1024);
    let disk = devnum(&l.dev);
    let busy = BusyTracer::start();
    let every = Capacity {
        latency_one_in: 1,
        ..Capacity::DEFAULT
    };
    let t = Tracer::start_with(&[grains(disk)], Prefer::BpfTracefs, every).unwrap();
    let mut reads = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while std::time::Instant::now() < deadline {
        reads += fio_reads(&l.dev);
        let s = t.snapshot().unwrap();
        let issued = counters(&s, disk, Direction::Read, Stage::Issue).unwrap();
        let timed = timed_reads(&s, disk);
        let missed = s.missed_events;
        assert!(
            issued.ios <= reads && issued.ios + missed >= reads,
            "{} reads issued, {} counted, {missed} missed",
            reads,
            issued.ios
        );
        let known = timed + issued.untimed;
        assert!(
            known <= issued.ios && known + missed >= issued.ios,
            "{} counted, {known} timed or untimed, {missed} missed",
            issued.ios
        );
        if missed > 0 {
            eprintln!(
                "{reads} reads: {} counted, {missed} events missed",
                issued.ios
            );
            drop(busy);
            return;
        }
    }
    panic!("the kernel skipped no program in {reads} reads (120 s) beside a busy bpftrace");
}
