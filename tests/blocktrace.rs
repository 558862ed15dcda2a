//! The block tracer (sys/trace) on real loop devices, as root: both paths
//! (BPF programs counting in the kernel, and raw perf samples) attach to
//! the block tracepoints while O_DIRECT I/O of known shape runs on a
//! partition that starts one sector past a 4 KiB boundary, and the counts
//! must be exact at each layer: the partition (block_bio_remap's upper
//! device) and the loop disk (block_bio_queue and block_rq_issue).

mod common;

use common::{image, require_root, sfdisk, LoopDev};
use diskalign::sys::blocktrace::{Counters, DevNum, Direction, Grains, Snapshot, Stage, TracePath};
use diskalign::sys::trace::{Prefer, TraceError, Tracer};
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
    }
}

/// The same counts whichever path ran.
fn check_counts(prefer: Prefer, path: TracePath) {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let l = misaligned_partition(dir.path());
    let (disk, part) = (devnum(&l.dev), devnum(&l.part(1)));
    let t = Tracer::start(&[grains(disk), grains(part)], prefer).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(t.path(), path);
    write_partition(&l.part(1));
    let s = t.snapshot().unwrap();
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
    assert_eq!(
        (timed(3, true), timed(0, false)),
        (WRITES_4K, WRITES_512),
        "{:#?}",
        s.latency
    );
    assert_eq!(s.lost_records, 0);
}

#[test]
fn bpf_counts_each_layer_exactly() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    check_counts(Prefer::Bpf, TracePath::Bpf);
}

#[test]
fn perf_samples_count_the_same() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    check_counts(Prefer::PerfSamples, TracePath::PerfSamples);
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
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|t| {
            let t = t.to_string_lossy();
            t.contains("perf_event") || t.contains("bpf")
        })
        .count()
}

#[test]
fn dropping_the_tracer_closes_every_descriptor() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    let before = tracing_fds();
    for prefer in [Prefer::Bpf, Prefer::PerfSamples] {
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
fn check_splits(prefer: Prefer) {
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
    let q = counters(&s, disk, Direction::Write, Stage::Queue).unwrap();
    let i = counters(&s, disk, Direction::Write, Stage::Issue).unwrap();
    assert_eq!((q.ios, q.size_log2[5]), (20, 20), "{prefer:?}: 16 KiB bios");
    assert_eq!(
        (i.ios, i.size_log2[3]),
        (80, 80),
        "{prefer:?}: 4 KiB requests"
    );
    assert_eq!(q.splits, 60, "{prefer:?}: three splits per bio");
}

/// Merges: fio submits 4 KiB sequential writes 16 at a time (one plug), so
/// bios merge into requests; each merged bio is a request fewer.
fn check_merges(prefer: Prefer) {
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
}

#[test]
fn splits_and_merges_on_both_paths() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    for prefer in [Prefer::Bpf, Prefer::PerfSamples] {
        check_splits(prefer);
        check_merges(prefer);
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
