//! Comparisons of synthetic saved runs, each read by its kind's own
//! reader (`fixtures`).

use super::fixtures::*;
use super::probe::Decision;
use super::*;
use crate::probe::NO_REPLICATES;
use serde_json::{json, Value};

fn probe(a: &Value, b: &Value) -> ProbeComparison {
    super::overall::compare_probes(&probe_run(a, "a.json"), &probe_run(b, "b.json"))
}

#[test]
fn a_twofold_slowdown_is_slower_and_significant() {
    let c = probe(&grid("6.1.0", 1.0), &grid("6.1.0", 0.5));
    assert_eq!(c.cells.len(), 3);
    assert_eq!(c.tested, 3);
    assert!(c.replicates);
    let w = &c.cells[0];
    assert_eq!(w.key.pattern, crate::probe::Pattern::Randwrite);
    assert!((w.ratio.unwrap() - 0.5).abs() < 1e-9, "{w:?}");
    assert!(w.significant);
    assert_eq!(w.decision, Decision::Slower);
    let ci = w.ci95.unwrap();
    assert!(ci[0] < 0.5 && 0.5 < ci[1] && ci[1] < 1.0, "{ci:?}");
    assert_eq!(c.cells[1].decision, Decision::Slower);
    assert_eq!(c.cells[2].decision, Decision::Same);
    assert!(!c.cells[2].significant);
    assert!(c.differs());
    assert!(
        c.summary
            .starts_with("B is slower in 2 of 3 cells (up to 50 % slower"),
        "{}",
        c.summary
    );
    assert!(c.summary.contains("1 the same"), "{}", c.summary);
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    assert!(c.only_a.is_empty() && c.only_b.is_empty());
    // Two cells slower: B is worse (exit 1 | 4); the reverse is better.
    let o = c.outcome;
    assert_eq!(
        (o.improved, o.regressed, o.unchanged, o.exit_status),
        (0, 2, 1, 1 | WORSE)
    );
    let back = probe(&grid("6.1.0", 0.5), &grid("6.1.0", 1.0)).outcome;
    assert_eq!((back.improved, back.regressed, back.exit_status), (2, 0, 1));
}

#[test]
fn identical_runs_are_never_significant() {
    let c = probe(&grid("6.1.0", 1.0), &grid("6.1.0", 1.0));
    for x in &c.cells {
        assert!(!x.significant, "{x:?}");
        assert!(matches!(x.decision, Decision::Same | Decision::Open));
        assert!((x.ratio.unwrap() - 1.0).abs() < 1e-12);
    }
    assert!(!c.differs());
    assert_eq!((c.outcome.unchanged, c.outcome.exit_status), (3, 0));
    assert!(c.environment.iter().all(|f| !f.differs));
    assert_eq!(c.summary, "all 3 cells the same");
}

#[test]
fn the_interval_never_contradicts_significance() {
    let mut rng = fastrand::Rng::with_seed(5);
    let noisy = |rng: &mut fastrand::Rng, iops: f64| -> Vec<f64> {
        (0..4)
            .map(|_| iops * (1.0 + (rng.f64() - 0.5) * 0.2))
            .collect()
    };
    for _ in 0..20 {
        let (mut xa, mut xb) = (Vec::new(), Vec::new());
        for o in 0..30u64 {
            let effect = [1.0, 0.97, 0.9, 0.8][(o % 4) as usize];
            xa.push(cell("randwrite", 4096, o * 512, noisy(&mut rng, 1000.0)));
            xb.push(cell(
                "randwrite",
                4096,
                o * 512,
                noisy(&mut rng, 1000.0 * effect),
            ));
        }
        let c = probe(
            &probe_doc("6.1.0", "sata", xa),
            &probe_doc("6.1.0", "sata", xb),
        );
        for x in &c.cells {
            let [lo, hi] = x.ci95.unwrap();
            let excludes = hi < 1.0 || lo > 1.0;
            assert_eq!(x.significant, excludes, "{x:?}");
            assert_eq!(x.significant, x.p_adjusted.unwrap() < 0.05, "{x:?}");
            assert!(x.ci_level.unwrap() >= 0.95);
            assert!(lo <= x.ratio.unwrap() && x.ratio.unwrap() <= hi);
        }
    }
}

#[test]
fn when_nothing_is_significant_the_intervals_are_bonferronis() {
    let c = probe(&grid("6.1.0", 1.0), &grid("6.1.0", 1.0));
    for x in &c.cells {
        assert!((x.ci_level.unwrap() - (1.0 - 0.05 / 3.0)).abs() < 1e-12);
    }
}

#[test]
fn fio_against_a_probe_is_untested_and_says_why() {
    let c = probe(&grid("6.1.0", 1.0), &fio_doc());
    assert_eq!(c.b.source, "fio");
    assert_eq!(c.a.source, "probe");
    assert_eq!(c.tested, 0);
    assert!(!c.replicates);
    assert_eq!(c.cells.len(), 2);
    for x in &c.cells {
        assert_eq!(x.decision, Decision::Untested);
        assert_eq!((x.ci95, x.p_value, x.significant), (None, None, false));
        assert_eq!(x.b_rounds, 1);
        assert!((x.ratio.unwrap() - 0.5).abs() < 0.01, "{x:?}");
    }
    assert!(!c.differs());
    assert!(
        c.notes.iter().any(|n| n.contains(NO_REPLICATES)),
        "{:?}",
        c.notes
    );
    // The randread cell is fio's missing pattern, not a missing cell.
    assert_eq!(c.only_a.patterns.len(), 1);
    assert!(c.only_a.cells.is_empty());
    // fio records no environment: its nulls are not differences.
    let kernel = c.environment.iter().find(|f| f.field == "kernel").unwrap();
    assert!(!kernel.differs && kernel.b.is_none());
    let engine = c.environment.iter().find(|f| f.field == "engine").unwrap();
    assert!(engine.differs);
    assert!(c.summary.contains("untested"), "{}", c.summary);
}

#[test]
fn cells_and_patterns_in_one_run_only_are_named() {
    let mut a = grid("6.1.0", 1.0);
    let mut b = grid("6.1.0", 1.0);
    a["cells"]
        .as_array_mut()
        .unwrap()
        .push(cell("randwrite", 4096, 1024, rounds(900.0)));
    b["cells"]
        .as_array_mut()
        .unwrap()
        .push(cell("seqread", 1 << 20, 0, rounds(90.0)));
    let c = probe(&a, &b);
    assert_eq!(c.cells.len(), 3);
    assert_eq!(c.only_a.cells.len(), 1);
    assert_eq!(c.only_a.cells[0].offset, 1024);
    assert!(c.only_a.patterns.is_empty());
    assert_eq!(c.only_b.patterns.len(), 1);
    assert!(c.only_b.cells.is_empty());
    assert!(c.summary.contains("1 cell only in A"), "{}", c.summary);
    assert!(c.summary.contains("1 pattern only in B"), "{}", c.summary);
}

#[test]
fn environment_differences_come_first() {
    let a = grid("6.1.0", 1.0);
    let mut b = probe_doc(
        "6.8.0",
        "usb-uas",
        vec![cell("randwrite", 4096, 0, rounds(1000.0))],
    );
    b["environment"]["usb_bridge"] = json!("152d:0578 JMS578");
    let c = probe(&a, &b);
    let names: Vec<&str> = c.environment.iter().map(|f| f.field.as_str()).collect();
    assert_eq!(&names[..3], &["kernel", "transport", "bridge"]);
    let differing = environment::differing(&c.environment);
    assert_eq!(differing, ["kernel", "transport", "bridge"]);
    assert_eq!(c.environment[0].a.as_deref(), Some("6.1.0"));
    assert_eq!(c.environment[0].b.as_deref(), Some("6.8.0"));
    assert!(
        c.summary
            .contains("environment differs in kernel, transport and bridge"),
        "{}",
        c.summary
    );
}

#[test]
fn multi_target_runs_match_parts_in_order() {
    let part = |path: &str, iops: f64| part(path, vec![cell("randread", 4096, 0, rounds(iops))]);
    let mut a = grid("6.1.0", 1.0);
    a["targets"] = json!([part("/dev/sdb", 1000.0), part("/dev/sdc", 2000.0)]);
    let mut b = grid("6.1.0", 1.0);
    b["targets"] = json!([part("/dev/sdb", 500.0)]);
    let c = probe(&a, &b);
    assert_eq!(c.cells.len(), 1);
    assert_eq!(c.cells[0].decision, Decision::Slower);
    assert_eq!(c.only_a.targets.len(), 1);
    assert_eq!(c.only_a.targets[0].path, "/dev/sdc");
    assert!(c.notes.iter().any(|n| n.contains("2 targets")));
}

#[test]
fn a_probe_comparison_survives_serde() {
    let c = Comparison::Probe(probe(&grid("6.1.0", 1.0), &fio_doc()));
    let text = serde_json::to_string(&c).unwrap();
    let back: Comparison = serde_json::from_str(&text).unwrap();
    let (Comparison::Probe(x), Comparison::Probe(y)) = (&c, &back) else {
        panic!("kind lost: {text}");
    };
    // serde_json reads floats to within an ulp or so, not always exactly.
    assert_eq!(x.cells.len(), y.cells.len());
    for (p, q) in x.cells.iter().zip(&y.cells) {
        assert_eq!((p.key, p.decision, p.ci95), (q.key, q.decision, q.ci95));
        assert!((p.a_iops - q.a_iops).abs() < 1e-9 * p.a_iops);
    }
    assert_eq!(x.environment, y.environment);
    assert_eq!(x.summary, y.summary);
    assert!(text.contains(r#""kind":"probe""#));
    assert!(text.contains(r#""decision":"untested""#));
}

// ---- check runs ----

fn check(a: &Value, b: &Value) -> CheckComparison {
    check::compare_checks(&check_run(a, "before.json"), &check_run(b, "after.json"))
}

#[test]
fn a_fixed_partition_loses_its_finding_and_a_new_target_appears() {
    let Comparison::Check(c) = fixed() else {
        panic!("a probe comparison");
    };
    assert_eq!(c.a.file, "before.json");
    assert_eq!(c.a.source, "check");
    assert_eq!(c.changes.len(), 2, "{:?}", c.changes);
    let gone = &c.changes[0];
    assert_eq!(gone.change, check::Change::Disappeared);
    assert_eq!(gone.code, "start-not-4k");
    assert_eq!(gone.target.as_deref(), Some("disk.img"));
    assert_eq!(gone.partition, Some(1));
    assert_eq!(gone.severity_a, Some(crate::findings::Severity::Warning));
    assert_eq!(gone.severity_b, None);
    let new = &c.changes[1];
    assert_eq!(new.change, check::Change::Appeared);
    assert_eq!(
        (new.target.as_deref(), new.code.as_str()),
        (Some("new.img"), "layout-not-portable")
    );
    assert_eq!(c.targets.len(), 2);
    assert!(c.targets[1].in_b && !c.targets[1].in_a);
    assert!(c.differs());
    assert_eq!(
        c.summary,
        "1 finding disappeared and 1 appeared; disk.img: untidy → aligned; new.img checked only in B"
    );
}

#[test]
fn a_changed_severity_is_a_change_and_identical_runs_are_none() {
    let a = check_doc(vec![target(
        "d.img",
        "untidy",
        vec![finding("end-not-4k", "warning", "ends at x")],
    )]);
    let b = check_doc(vec![target(
        "d.img",
        "misaligned",
        vec![finding("end-not-4k", "error", "ends at x")],
    )]);
    let c = check(&a, &b);
    assert_eq!(c.changes.len(), 1);
    assert_eq!(c.changes[0].change, check::Change::Changed);
    let same = check(&a, &a);
    assert!(!same.differs());
    assert_eq!(same.summary, "no finding appeared, disappeared or changed");
}

#[test]
fn one_target_each_under_two_names_is_the_same_disk() {
    let f = || vec![finding("start-not-4k", "warning", "starts at 32256")];
    let a = check_doc(vec![target("/dev/sdb", "untidy", f())]);
    let b = check_doc(vec![target("/dev/sda", "untidy", f())]);
    let c = check(&a, &b);
    assert!(!c.differs(), "{:?}", c.changes);
    assert_eq!(c.targets.len(), 1);
    assert_eq!(c.targets[0].path_b.as_deref(), Some("/dev/sda"));
}

#[test]
fn a_target_that_could_not_be_checked_says_why() {
    let a = check_doc(vec![target("d.img", "aligned", vec![])]);
    let mut b = check_doc(vec![]);
    b["errors"] = json!([{ "path": "d.img", "message": "cannot open" }]);
    let c = check(&a, &b);
    let t = &c.targets[0];
    assert!(t.in_a && !t.in_b);
    assert_eq!(t.error_b.as_deref(), Some("cannot open"));
    assert_eq!(t.path_b, None);
    assert!(
        c.summary.ends_with("d.img checked only in A"),
        "{}",
        c.summary
    );
}

/// A fix is an improvement (exit 1), its reverse a regression (exit 1 |
/// 4, B worse), the same run nothing (0); a target B could not check is
/// a regression too.
#[test]
fn a_fix_improves_and_its_reverse_regresses() {
    let before = check_doc(vec![target(
        "d.img",
        "misaligned",
        vec![finding("start-not-4k", "error", "starts at 32256")],
    )]);
    let after = check_doc(vec![target("d.img", "aligned", vec![])]);
    let fix = check(&before, &after).outcome;
    assert_eq!(
        (fix.improved, fix.regressed, fix.unchanged, fix.exit_status),
        (1, 0, 0, 1)
    );
    let worse = check(&after, &before).outcome;
    assert_eq!(
        (worse.improved, worse.regressed, worse.exit_status),
        (0, 1, 1 | WORSE)
    );
    let same = check(&before, &before).outcome;
    assert_eq!((same.unchanged, same.exit_status), (1, 0));
    let mut gone = check_doc(vec![]);
    gone["errors"] = json!([{ "path": "d.img", "message": "cannot open" }]);
    assert_eq!(check(&after, &gone).outcome.exit_status, 1 | WORSE);
    // The same status, a new warning: worse too.
    let untidy = |f: Vec<Value>| check_doc(vec![target("d.img", "untidy", f)]);
    let one = untidy(vec![finding("end-not-4k", "warning", "ends at x")]);
    let two = untidy(vec![
        finding("end-not-4k", "warning", "ends at x"),
        finding("size-not-4k", "warning", "size x"),
    ]);
    assert_eq!(check(&one, &two).outcome.regressed, 1);
    assert_eq!(check(&two, &one).outcome.improved, 1);
}

/// Two runs whose disk under one name has another serial, or another
/// table (PTUUID), are compared with a warning saying so.
#[test]
fn another_disk_under_the_same_name_is_said() {
    let disk = |serial: &str, ptuuid: &str| {
        let mut t = target("/dev/sdb", "aligned", vec![]);
        t["serial"] = json!(serial);
        t["partition_table"] = json!({"type": "gpt", "sector_size": 512, "ptuuid": ptuuid});
        check_doc(vec![t])
    };
    let same = check(&disk("S1", "p1"), &disk("S1", "p1"));
    assert_eq!(same.targets[0].different_disk, None);
    let other = check(&disk("S1", "p1"), &disk("S2", "p1"));
    assert_eq!(
        other.targets[0].different_disk.as_deref(),
        Some("serial S1 in A, S2 in B")
    );
    let relabelled = check(&disk("S1", "p1"), &disk("S1", "p2"));
    assert_eq!(
        relabelled.targets[0].different_disk.as_deref(),
        Some("PTUUID p1 in A, p2 in B")
    );
}
