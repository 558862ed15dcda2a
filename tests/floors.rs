//! The floors of docs/architecture.md: each module imports only from its
//! own floor or the floors below it. Reads every `crate::X` path in src/
//! and fails on one that points up.

use std::path::Path;

/// Top-level modules, bottom floor first.
const FLOORS: &[&[&str]] = &[
    // 1. vocabulary
    &[
        "units", "names", "errors", "bytes", "findings", "iolimits", "schema",
    ],
    // 2. the live system
    &["sys"],
    // 3. readers
    &["topology", "layout", "stack"],
    // 4. the whole picture, read before any rule
    &["inspect"],
    // 5. rules, measurement
    &["check", "probe", "saved", "compare", "plan"],
    // 6. output
    &["report"],
    // 7. command line
    &["cli"],
];

fn floor_of(module: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&module))
}

fn visit(dir: &Path, out: &mut Vec<String>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            visit(&p, out);
            continue;
        }
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let rel = p
            .strip_prefix(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))
            .unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let own = first.trim_end_matches(".rs").to_string();
        let Some(own_floor) = floor_of(&own) else {
            continue; // lib.rs, main.rs
        };
        let text = std::fs::read_to_string(&p).unwrap();
        for (at, _) in text.match_indices("crate::") {
            for used in used_modules(&text[at + "crate::".len()..]) {
                check(rel, own_floor, &used, out);
            }
        }
    }
}

/// The top-level modules named right after `crate::`: one, or each of a
/// `{a::x, b}` group.
fn used_modules(rest: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    match rest.strip_prefix('{') {
        Some(group) => group
            .split('}')
            .next()
            .unwrap_or_default()
            .split(',')
            .map(ident)
            .filter(|m| !m.is_empty())
            .collect(),
        None => vec![ident(rest)],
    }
}

fn check(rel: &Path, own_floor: usize, used: &str, out: &mut Vec<String>) {
    match floor_of(used) {
        Some(f) if f > own_floor => out.push(format!(
            "{} (floor {}) imports crate::{used} (floor {})",
            rel.display(),
            own_floor + 1,
            f + 1
        )),
        Some(_) => {}
        None if used == "spelled_as_serde" => {}
        None => out.push(format!(
            "{}: crate::{used} is on no floor (add it to tests/floors.rs)",
            rel.display()
        )),
    }
}

#[test]
fn the_scanner_reads_single_and_grouped_paths() {
    assert_eq!(used_modules("export::json::name(&x)"), ["export"]);
    assert_eq!(
        used_modules("{check, topology::Topology};"),
        ["check", "topology"]
    );
    let mut out = Vec::new();
    check(Path::new("stack/walk.rs"), 2, "export", &mut out);
    assert_eq!(out.len(), 1, "a reader importing output is caught");
}

#[test]
fn no_module_imports_from_a_floor_above_its_own() {
    let mut bad = Vec::new();
    visit(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &mut bad,
    );
    bad.sort();
    bad.dedup();
    assert!(bad.is_empty(), "imports that point up:\n{}", bad.join("\n"));
}
