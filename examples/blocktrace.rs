//! Trace the block layer while something else does I/O, and print what
//! was counted as JSON (the `Snapshot` of sys/blocktrace.rs). Used by
//! bench/watch-overhead; `diskalign watch` is the command for people.
//!
//!   blocktrace [--path auto|bpf|bpf-tracefs|perf] DEVICE...
//!
//! Prints one `tracing PATH` line once attached, counts until its
//! standard input closes, then prints the snapshot.

use diskalign::sys::{DevNum, Grains};
use diskalign::sys::{Prefer, Tracer};
use std::io::{Read, Write};
use std::path::Path;

fn attr(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(name))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The device's number and grains from sysfs (a partition's queue is its
/// disk's).
fn grains(node: &str) -> Result<Grains, String> {
    let name = node.trim_start_matches("/dev/");
    let dir = Path::new("/sys/class/block").join(name);
    let dev = attr(&dir, "dev").ok_or_else(|| format!("{node}: not a block device"))?;
    let (ma, mi) = dev
        .split_once(':')
        .ok_or_else(|| format!("{node}: odd dev {dev}"))?;
    let queue = if dir.join("queue").is_dir() {
        dir.join("queue")
    } else {
        dir.join("../queue")
    };
    let num = |n: &str| {
        attr(&queue, n)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(512)
    };
    let physical = num("physical_block_size");
    // A zoned disk's zone size (queue/chunk_sectors, in sectors).
    let zoned = attr(&queue, "zoned").is_some_and(|z| z != "none");
    let zone_sectors = attr(&queue, "chunk_sectors").and_then(|v| v.parse::<u64>().ok());
    Ok(Grains {
        dev: DevNum {
            major: ma.parse().map_err(|_| format!("{node}: odd dev {dev}"))?,
            minor: mi.parse().map_err(|_| format!("{node}: odd dev {dev}"))?,
        },
        grain_bytes: physical.max(num("minimum_io_size")),
        physical_bytes: physical,
        zone_bytes: if zoned {
            zone_sectors.unwrap_or(0) * 512
        } else {
            0
        },
        legs: false,
    })
}

fn main() {
    let mut prefer = Prefer::Auto;
    let mut devs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--path" => {
                prefer = match args.next().as_deref() {
                    Some("bpf") => Prefer::Bpf,
                    Some("bpf-tracefs") => Prefer::BpfTracefs,
                    Some("perf") => Prefer::PerfSamples,
                    Some("auto") => Prefer::Auto,
                    other => fail(&format!(
                        "--path: auto, bpf, bpf-tracefs or perf, not {other:?}"
                    )),
                }
            }
            d => devs.push(grains(d).unwrap_or_else(|e| fail(&e))),
        }
    }
    let t = Tracer::start(&devs, prefer).unwrap_or_else(|e| fail(&e.to_string()));
    match (t.attach(), t.typed_refused()) {
        (Some(a), None) => println!("tracing {} ({a})", t.path()),
        (Some(a), Some(why)) => println!("tracing {} ({a}; BTF not used: {why})", t.path()),
        (None, _) => println!("tracing {}", t.path()),
    }
    std::io::stdout().flush().ok();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    let s = t.snapshot().unwrap_or_else(|e| fail(&e.to_string()));
    println!("{}", serde_json::to_string(&s).unwrap_or_default());
}

fn fail(msg: &str) -> ! {
    eprintln!("blocktrace: {msg}");
    std::process::exit(2)
}
