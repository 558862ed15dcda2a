//! Small saved runs for the tests of `compare` and of its renderings:
//! JSON built here and read by each kind's own reader, as `saved` reads
//! files (which tells the kinds apart; its tests compare through it).

use super::{check, Comparison};
use crate::check::CheckDoc;
use crate::probe::FioDoc;
use crate::probe::ProbeDoc;
use serde_json::{json, Value};

/// Five rounds around `iops`, spread ±2 %.
pub fn rounds(iops: f64) -> Vec<f64> {
    [-2.0, 1.0, 0.0, -1.0, 2.0]
        .iter()
        .map(|d| iops * (1.0 + d / 100.0))
        .collect()
}

pub fn cell(pattern: &str, bs: u64, offset: u64, rounds: Vec<f64>) -> Value {
    let mib_s = rounds[0] * bs as f64 / 1048576.0;
    json!({ "pattern": pattern, "block_size": bs, "offset": offset,
            "iops": { "median": rounds[0], "geo_mean": rounds[0] },
            "mib_s": { "median": mib_s, "geo_mean": mib_s },
            "lat_us": { "p50": 100.0, "p99": 200.0, "p999": 300.0, "max": 400.0 },
            "rounds": rounds })
}

/// A target as the probe document records it.
pub fn target_info(path: &str) -> Value {
    json!({ "path": path, "kind": "disk", "size_bytes": 1u64 << 30, "logical_block_size": 512,
            "physical_block_size": 4096, "dio_offset_align": 512,
            "dio_rule": "logical block size" })
}

/// What the inference of a run of a few cells says.
pub fn inference() -> Value {
    json!({ "effective_unit_bytes": null, "confidence": "untested", "statement": "",
            "summary": "", "penalties": [] })
}

/// One target's part of a run over several.
pub fn part(path: &str, cells: Vec<Value>) -> Value {
    json!({ "target": target_info(path),
            "environment": { "diskalign_version": "0.1.0", "kernel": "6.1.0 #1 SMP",
                             "arch": "x86_64", "cpus": 2 },
            "cells": cells, "contrasts": [], "inference": inference() })
}

pub fn probe_doc(kernel: &str, transport: &str, cells: Vec<Value>) -> Value {
    json!({
        "schema": "diskalign.probe", "schema_version": 1, "diskalign_version": "0.1.0",
        "target": target_info("/dev/sdb"),
        "engine": { "name": "io_uring", "queue_depth": 32, "jobs": 1, "direct": true,
                    "fdatasync": false },
        "environment": { "diskalign_version": "0.1.0", "kernel": format!("{kernel} #1 SMP"),
                         "arch": "x86_64", "cpus": 2, "transport": transport,
                         "model": "Disk 1", "scheduler": "none" },
        "plan": { "preset": "standard", "cells": [], "unit": 1048576, "rounds": 5,
                  "runtime": 0.15, "min_effect": 0.1, "qd": 32, "jobs": 1, "direct": true,
                  "fdatasync": false, "seed": 1 },
        "rounds_run": 5, "partial": false, "started_unix": 1_795_000_000u64,
        "cells": cells, "contrasts": [], "inference": inference(),
    })
}

/// A probe document, or fio's JSON (it has a `fio version`) as one.
pub fn probe_run(v: &Value, name: &str) -> ProbeDoc {
    match v.get("fio version") {
        Some(_) => FioDoc::read(v, name).expect("reads"),
        None => ProbeDoc::read(v, name).expect("reads"),
    }
}

pub fn check_run(v: &Value, name: &str) -> CheckDoc {
    CheckDoc::read(v, name).expect("reads")
}

/// randwrite at 0 and 512, randread at 0; `write` scales randwrite.
pub fn grid(kernel: &str, write: f64) -> Value {
    probe_doc(
        kernel,
        "sata",
        vec![
            cell("randwrite", 4096, 0, rounds(1000.0 * write)),
            cell("randwrite", 4096, 512, rounds(800.0 * write)),
            cell("randread", 4096, 0, rounds(5000.0)),
        ],
    )
}

pub fn fio_doc() -> Value {
    let job = |name: &str, iops: f64| {
        json!({ "jobname": name, "error": 0,
                "job options": { "filename": "/dev/sdb" },
                "read": { "iops": 0.0, "total_ios": 0 },
                "write": { "iops": iops, "bw_bytes": iops * 4096.0, "total_ios": 5000 } })
    };
    json!({ "fio version": "fio-3.36", "timestamp": 1_795_000_100u64,
            "global options": {},
            "jobs": [ job("randwrite-4096-at-0", 500.0), job("randwrite-4096-at-512", 400.0) ] })
}

pub fn finding(code: &str, severity: &str, message: &str) -> Value {
    json!({ "code": code, "severity": severity, "message": message,
            "facts": { "offset_bytes": 32256 } })
}

pub fn target(path: &str, status: &str, p1: Vec<Value>) -> Value {
    json!({ "path": path, "kind": "image",
            "partitions": [ { "number": 1, "start_bytes": 32256, "findings": p1 } ],
            "findings": [ finding("layout-not-portable", "info", "not portable") ],
            "summary": { "status": status } })
}

pub fn check_doc(targets: Vec<Value>) -> Value {
    json!({ "schema": "diskalign.check", "schema_version": 1, "targets": targets })
}

/// A probe run against the same run with randwrite at half the speed.
pub fn slower() -> Comparison {
    Comparison::Probe(super::overall::compare_probes(
        &probe_run(&grid("6.1.0", 1.0), "a.json"),
        &probe_run(&grid("6.8.0", 0.5), "b.json"),
    ))
}

/// A check run against one where the partition was fixed and a target added.
pub fn fixed() -> Comparison {
    let bad = vec![finding("start-not-4k", "warning", "starts at 32256")];
    let a = check_doc(vec![target("disk.img", "untidy", bad)]);
    let b = check_doc(vec![
        target("disk.img", "aligned", vec![]),
        target("new.img", "aligned", vec![]),
    ]);
    Comparison::Check(check::compare_checks(
        &check_run(&a, "before.json"),
        &check_run(&b, "after.json"),
    ))
}
