//! The floors of docs/architecture.md: each module imports only from its
//! own floor or the floors below it. Reads every `crate::X` path in src/
//! and fails on one that points up. System calls are the second floor's
//! alone: a `libc::`, `rustix::` or `nix::` path outside `sys/` and the
//! probe's I/O engines fails too.

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
    &["image", "topology", "layout", "stack", "identify"],
    // 4. the whole picture, read before any rule
    &["inspect"],
    // 5. rules, measurement
    &["check", "probe", "saved", "compare", "plan", "watch"],
    // 6. output
    &["report"],
    // 7. command line
    &["cli"],
];

fn floor_of(module: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&module))
}

/// Every .rs file under `dir`, at any depth.
fn rs_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rs_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

fn visit(dir: &Path, out: &mut Vec<String>) {
    for p in rs_files(dir) {
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
    assert_eq!(used_modules("report::name(&x)"), ["report"]);
    assert_eq!(
        used_modules("{check, topology::Topology};"),
        ["check", "topology"]
    );
    let mut out = Vec::new();
    check(Path::new("stack/walk.rs"), 2, "report", &mut out);
    assert_eq!(out.len(), 1, "a reader importing output is caught");
    assert!(out[0].contains("(floor 3) imports crate::report (floor 6)"));
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

/// The crates that call the kernel directly.
const SYSCALL_CRATES: &[&str] = &["libc::", "rustix::", "nix::"];

/// Where direct system calls are allowed. `sys/` is the floor for them.
/// The I/O engines (`probe/measure/engine/`) are exempt because their system calls
/// are the measurement itself: pread/pwrite and io_uring submissions in
/// the timed loop, over buffers and iovecs the engine owns, and a wrapper
/// floor between the clock and the call would be timed with it.
fn may_call_the_kernel(rel: &Path) -> bool {
    rel.starts_with("sys") || rel.starts_with("probe/measure/engine")
}

/// Each `libc::`/`rustix::`/`nix::` path in `text` that is not part of a
/// longer name (`my_libc::` is not one), as "file:line: path".
fn syscall_uses(rel: &Path, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        for krate in SYSCALL_CRATES {
            for (at, _) in code.match_indices(krate) {
                let before = code[..at].chars().next_back();
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    continue;
                }
                out.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    out
}

fn visit_syscalls(dir: &Path, out: &mut Vec<String>) {
    let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    for p in rs_files(dir) {
        let rel = p.strip_prefix(src).unwrap();
        if !may_call_the_kernel(rel) {
            out.extend(syscall_uses(rel, &std::fs::read_to_string(&p).unwrap()));
        }
    }
}

#[test]
fn the_syscall_scanner_finds_paths_and_use_lines() {
    let rel = Path::new("probe/target.rs");
    let text = "use rustix::fs::statx;\nlet f = libc::O_DIRECT;\nnix::unistd::sync();\nmy_libc::x(); // libc::y\n";
    assert_eq!(syscall_uses(rel, text).len(), 3);
    assert!(may_call_the_kernel(Path::new("sys/file.rs")));
    assert!(may_call_the_kernel(Path::new(
        "probe/measure/engine/uring.rs"
    )));
    assert!(!may_call_the_kernel(Path::new("probe/target.rs")));
}

#[test]
fn only_sys_and_the_io_engines_call_the_kernel() {
    let mut bad = Vec::new();
    visit_syscalls(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")),
        &mut bad,
    );
    assert!(
        bad.is_empty(),
        "system calls outside sys/ (move them behind a function there):\n{}",
        bad.join("\n")
    );
}

/// Arrows within a floor that run one way only: (module, what it must not
/// import). `saved` reads a file, tells its kind by `schema` and reads a
/// saved comparison back into `compare::Comparison`, so it imports
/// `compare`; `compare` takes each kind's own document from its command
/// (`check::document`, `probe::document`). Were `compare` to import
/// `saved` too, the two would be one module in two files, and a new
/// document kind would have to be taught to both. `plan` imports `check`
/// (its rules judge the layout after a move), so the one run of `check`
/// with its next steps (`plan::check_run`, which the `check` command and
/// `watch` both call) is `plan`'s, and `check` never imports `plan`;
/// `watch` asks both what places a device, and neither imports it.
const ONE_WAY: &[(&str, &str)] = &[
    ("compare", "saved"),
    ("check", "plan"),
    ("check", "watch"),
    ("plan", "watch"),
];

/// Each `crate::` path under src/`module` that names `forbidden`.
fn imports_of(module: &str, forbidden: &str) -> Vec<String> {
    fn walk(dir: &Path, forbidden: &str, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, forbidden, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                for (at, _) in text.match_indices("crate::") {
                    if used_modules(&text[at + "crate::".len()..]).contains(&forbidden.to_string())
                    {
                        out.push(p.display().to_string());
                    }
                }
            }
        }
    }
    let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    let mut out = Vec::new();
    let file = src.join(format!("{module}.rs"));
    if file.is_file() {
        let text = std::fs::read_to_string(&file).unwrap();
        if text.contains(&format!("crate::{forbidden}")) {
            out.push(file.display().to_string());
        }
    }
    if src.join(module).is_dir() {
        walk(&src.join(module), forbidden, &mut out);
    }
    out.dedup();
    out
}

#[test]
fn arrows_within_a_floor_run_one_way() {
    for (module, forbidden) in ONE_WAY {
        let bad = imports_of(module, forbidden);
        assert!(
            bad.is_empty(),
            "{module} imports crate::{forbidden}, which imports {module}:\n{}",
            bad.join("\n")
        );
    }
    // The scanner sees the arrow that is allowed.
    assert!(!imports_of("saved", "compare").is_empty());
}

/// Every integration test binary (a file of tests/, or a folder with a
/// main.rs) has its row in tests/README.md's table, so the index says
/// what each one holds and needs.
#[test]
fn every_test_binary_is_in_the_tests_readme() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let mut missing = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let name = match p.extension() {
            Some(x) if x == "rs" => p.file_stem(),
            None if p.join("main.rs").is_file() => p.file_name(),
            _ => None,
        };
        let Some(name) = name.and_then(|n| n.to_str()) else {
            continue;
        };
        if !readme.contains(&format!("| `{name}`")) {
            missing.push(name.to_string());
        }
    }
    missing.sort();
    assert!(
        missing.is_empty(),
        "test binaries without a row in tests/README.md: {missing:?}"
    );
}

/// Every module file of src/ by its module path (`stack::lvm` for
/// src/stack/lvm/mod.rs), with its text before the unit tests, comments
/// left out.
fn module_texts() -> Vec<(Vec<String>, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    rs_files(&src)
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&src).unwrap().with_extension("");
            let mut module: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            let code: String = code
                .lines()
                .map(|l| l.split("//").next().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n");
            (module, code)
        })
        .collect()
}

/// The module paths a `crate::`/`super::` path at the start of `rest`
/// names (each item of a `{...}` group), from module `own`.
fn named_paths(own: &[String], base: &str, rest: &str) -> Vec<Vec<String>> {
    // `super` of `a::b` (src/a/b.rs or src/a/b/mod.rs) is `a`.
    let mut start: Vec<String> = match base {
        "crate" => Vec::new(),
        _ => own[..own.len().saturating_sub(1)].to_vec(),
    };
    let idents = |s: &str| -> Vec<String> {
        s.split("::")
            .map(|p| {
                p.trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|p| !p.is_empty())
            .collect()
    };
    let head_end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(rest.len());
    let head = &rest[..head_end];
    let mut segs = idents(head);
    while segs.first().is_some_and(|s| s == "super") {
        segs.remove(0);
        start.pop();
    }
    start.extend(segs);
    let mut out = vec![start.clone()];
    if let Some(group) = rest[head_end..].strip_prefix('{') {
        for item in group.split('}').next().unwrap_or_default().split(',') {
            let mut p = start.clone();
            p.extend(idents(item));
            out.push(p);
        }
    }
    out
}

/// The module file that defines what `path` names in module `m`: a name
/// `m`'s door re-exports (`pub use pv::{read, PvFound};` in
/// stack/lvm/mod.rs) is `m`'s inner module's (`stack::lvm::pv`), since
/// the door only passes it on; anything else is `m`'s own.
fn through_door(modules: &[(Vec<String>, String)], m: &[String], path: &[String]) -> Vec<String> {
    let Some(name) = path.get(m.len()).filter(|_| path.len() == m.len() + 1) else {
        return m.to_vec();
    };
    let Some((_, door)) = modules.iter().find(|(own, _)| own[..] == m[..]) else {
        return m.to_vec();
    };
    let word = |text: &str| {
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w == name)
    };
    for export in door.split("pub use ").skip(1) {
        let export = export.split(';').next().unwrap_or_default();
        let inner = export.split("::").next().unwrap_or_default().trim();
        let mut defined = m.to_vec();
        defined.push(inner.to_string());
        let is_module = modules.iter().any(|(own, _)| own[..] == defined[..]);
        if is_module && word(export) {
            return defined;
        }
    }
    m.to_vec()
}

/// Circles of imports between `modules` (file A names something of B
/// and B of A, directly or through others), as sets of module paths.
fn import_circles(modules: &[(Vec<String>, String)]) -> Vec<Vec<String>> {
    let known: std::collections::HashSet<Vec<String>> =
        modules.iter().map(|(m, _)| m.clone()).collect();
    let resolve = |p: &[String]| -> Option<Vec<String>> {
        (1..=p.len())
            .rev()
            .map(|n| p[..n].to_vec())
            .find(|m| known.contains(m))
    };
    let mut edges: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for (own, code) in modules {
        let entry = edges.entry(own.join("::")).or_default();
        for base in ["crate", "super"] {
            for (at, _) in code.match_indices(&format!("{base}::")) {
                let before = code[..at].chars().last();
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let rest = &code[at + base.len() + 2..];
                for p in named_paths(own, base, rest) {
                    let Some(m) = resolve(&p) else { continue };
                    let m = through_door(modules, &m, &p);
                    // Not itself, nor a module it sits in.
                    if m.len() <= own.len() && own[..m.len()] == m[..] {
                        continue;
                    }
                    entry.insert(m.join("::"));
                }
            }
        }
    }
    let reach = |from: &str, to: &str| -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(n) = stack.pop() {
            if n == to {
                return true;
            }
            if seen.insert(n.clone()) {
                stack.extend(edges.get(&n).into_iter().flatten().cloned());
            }
        }
        false
    };
    let mut circles: Vec<Vec<String>> = Vec::new();
    for a in edges.keys() {
        if circles.iter().any(|c| c.contains(a)) {
            continue;
        }
        let mut circle: Vec<String> = edges
            .keys()
            .filter(|b| *b != a && reach(a, b) && reach(b, a))
            .cloned()
            .collect();
        if !circle.is_empty() {
            circle.push(a.clone());
            circle.sort();
            circles.push(circle);
        }
    }
    circles
}

/// No two module files import each other, through others or directly:
/// a file's job reads in one direction. The stack's layer formats take
/// their descriptor types from `stack::format` and their region from
/// `stack::region`; `registry` lists them, `walk` runs their probes and
/// queues what they return for `assemble`, and no format imports any of
/// those three.
#[test]
fn no_module_files_import_each_other() {
    let found = import_circles(&module_texts());
    assert!(
        found.is_empty(),
        "module files that import each other: {found:?}"
    );
}

#[test]
fn the_circle_scanner_finds_a_circle() {
    let module = |path: &str, code: &str| {
        let path = path.split("::").map(String::from).collect();
        (path, code.to_string())
    };
    let modules = [
        module("stack", "pub mod a; pub mod b; pub mod c;"),
        module("stack::a", "use super::b::X;"),
        module("stack::b", "use crate::stack::{c, Layer};"),
        module("stack::c", "use super::a::Y;"),
        module("check", "use crate::stack::a::Y;"),
    ];
    assert_eq!(
        import_circles(&modules),
        [["stack::a", "stack::b", "stack::c"]]
    );
    assert!(import_circles(&modules[..3]).is_empty());
    // A name a door passes on is its inner module's: no circle through
    // the door (stack::b uses what stack::a's door re-exports from
    // stack::a::inner, which uses nothing of stack::b).
    let doors = [
        module("stack", "mod a; mod b;"),
        module(
            "stack::a",
            "mod inner; pub use inner::{X, Y}; use super::b::Z;",
        ),
        module("stack::a::inner", "pub struct X;"),
        module("stack::b", "use super::a::X;"),
    ];
    assert!(import_circles(&doors).is_empty());
}

/// Every table is drawn by the column model (docs/architecture.md, "How
/// to add a column"): outside src/report/columns/mod.rs no code builds a
/// table's rows by hand, with the terminal's `style::table` or the
/// page's `page::table` and its `Td` cells.
#[test]
fn tables_are_drawn_only_by_the_column_model() {
    let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    let engine = [
        "report/columns/mod.rs",
        "report/html/page.rs",
        "report/style.rs",
    ];
    let mut found = Vec::new();
    for p in rs_files(src) {
        let rel = p.strip_prefix(src).unwrap().to_string_lossy().to_string();
        if engine.contains(&rel.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (n, line) in text.lines().enumerate() {
            // A door passing the engine's cells on builds no table.
            let re_export = line.trim_start().starts_with("pub use ");
            let grouped = !re_export && (line.contains("style::{") || line.contains("page::{"));
            let by_hand = line.contains("page::table(")
                || line.contains("style::table(")
                || line.contains("Td::")
                || (grouped
                    && (line.contains(" table") || line.contains("{table") || line.contains("Td")));
            if by_hand {
                found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "tables built by hand, not from a column list:\n{}",
        found.join("\n")
    );
}

// ---------------------------------------------------------------------------
// Doors: each module's inner modules are private, and what others use is
// re-exported by its `mod.rs`. rustc keeps a private module private; these
// rules keep a module from being made public again, and catch a path that
// names another module's inner module (tests, fuzz targets and benchmarks
// included, which reach the crate from outside).

/// The source files declared only for tests (`#[cfg(test)] mod x;`):
/// fixtures that other modules' tests share may be reached past a door.
fn test_files(src: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for p in rs_files(src) {
        let text = std::fs::read_to_string(&p).unwrap();
        let dir = match p.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs") | Some("lib.rs") => p.parent().unwrap().to_path_buf(),
            _ => p.with_extension(""),
        };
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for w in lines.windows(2) {
            if w[0] != "#[cfg(test)]" {
                continue;
            }
            if let Some(name) = declared_module(w[1]) {
                out.push(dir.join(format!("{name}.rs")));
                out.push(dir.join(name).join("mod.rs"));
            }
        }
    }
    out
}

/// The name of the module a `mod x;` line (of any visibility) declares.
fn declared_module(line: &str) -> Option<&str> {
    let Some(rest) = line.strip_prefix("pub") else {
        return declared_private(line);
    };
    let rest = rest.trim_start();
    match rest.strip_prefix('(') {
        Some(r) => declared_private(r.split_once(')')?.1.trim_start()),
        None => declared_private(rest),
    }
}

fn declared_private(line: &str) -> Option<&str> {
    let name = line.strip_prefix("mod ")?.strip_suffix(';')?;
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then_some(name)
}

/// A top-level module's inner modules: its files and folders, but those
/// its door declares for tests only.
fn inner_modules(src: &Path, top: &str, tests_only: &[std::path::PathBuf]) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(src.join(top)) else {
        return Vec::new(); // a module of one file has no inner modules
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        let for_tests = tests_only.contains(&p) || tests_only.contains(&p.join("mod.rs"));
        if name != "mod" && !for_tests && (p.is_dir() || p.extension().is_some_and(|x| x == "rs")) {
            out.push(name);
        }
    }
    out
}

/// Each path in `text` (a file of module `own`, None outside src/) that
/// names another top-level module's inner module: `crate::probe::noise::X`,
/// `diskalign::probe::noise::X`, or `crate::probe::{noise::X, Y}`, as
/// "line: crate::probe::noise".
fn past_doors(text: &str, own: Option<&str>, inner: &dyn Fn(&str) -> Vec<String>) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        for root in ["crate::", "diskalign::"] {
            for (at, _) in code.match_indices(root) {
                let before = code[..at].chars().next_back();
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let rest = &code[at + root.len()..];
                let top = ident(rest);
                if Some(top.as_str()) == own {
                    continue;
                }
                let Some(after) = rest[top.len()..].strip_prefix("::") else {
                    continue;
                };
                let items: Vec<&str> = match after.strip_prefix('{') {
                    Some(group) => group.split(['}', ',']).collect(),
                    None => vec![after],
                };
                let inner_of_top = inner(&top);
                for item in items {
                    let first = ident(item);
                    let names_a_module = item.trim_start()[first.len()..].starts_with("::");
                    if names_a_module && inner_of_top.contains(&first) {
                        out.push(format!("{}: {root}{top}::{first}", n + 1));
                    }
                }
            }
        }
    }
    out
}

/// The glob imports (`use x::*;`) of `text`, outside inline test modules.
fn glob_imports(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut test_until: Option<String> = None; // the closing line of a test module
    let mut cfg_test = false;
    for (n, line) in text.lines().enumerate() {
        if let Some(end) = &test_until {
            if line == end {
                test_until = None;
            }
            continue;
        }
        let t = line.trim_start();
        if cfg_test && t.contains("mod ") && t.ends_with('{') {
            let indent = &line[..line.len() - t.len()];
            test_until = Some(format!("{indent}}}"));
        }
        cfg_test = t == "#[cfg(test)]";
        // `use Code::*;` brings an enum's variants, a module's names no.
        let glob = t
            .strip_prefix("use ")
            .and_then(|u| u.trim_end().strip_suffix("::*;"));
        let of_enum = glob
            .and_then(|g| g.rsplit("::").next())
            .is_some_and(|last| last.starts_with(|c: char| c.is_ascii_uppercase()));
        if glob.is_some() && !of_enum {
            out.push(format!("{}: {}", n + 1, t.trim_end()));
        }
    }
    out
}

/// Every .rs file that reaches the crate: src/ and, from outside, the
/// tests, the fuzz targets, the benchmarks and the examples.
fn crate_users() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() && p.file_name().is_some_and(|n| n != "target") {
                walk(&p, out);
            } else if kind.is_file() && p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    for d in [
        "src",
        "tests",
        "fuzz/src",
        "fuzz/fuzz_targets",
        "bench",
        "examples",
    ] {
        walk(&root.join(d), &mut files);
    }
    files
}

#[test]
fn no_path_reaches_past_another_modules_door() {
    let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    let tests_only = test_files(src);
    let inner = |top: &str| inner_modules(src, top, &tests_only);
    let mut bad = Vec::new();
    for p in crate_users() {
        if p.ends_with("tests/floors.rs") {
            continue; // its scanners' tests name paths past doors
        }
        let own = p.strip_prefix(src).ok().map(|rel| {
            let first = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            first.trim_end_matches(".rs").to_string()
        });
        let text = std::fs::read_to_string(&p).unwrap();
        for hit in past_doors(&text, own.as_deref(), &inner) {
            bad.push(format!("{}:{hit}", p.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "paths past a module's door (re-export the name in its mod.rs):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_door_scanner_finds_a_path_past_a_door() {
    let inner = |top: &str| match top {
        "probe" => vec!["noise".to_string(), "grid".to_string()],
        _ => Vec::new(),
    };
    let text = "use crate::probe::noise::Noise;\n\
                use crate::probe::{Grid, grid::Cell};\n\
                use diskalign::probe::noise;\n\
                use crate::probe::ProbeRun; // crate::probe::noise::X\n\
                let x = my_crate::probe::noise::X;\n";
    assert_eq!(
        past_doors(text, Some("report"), &inner),
        ["1: crate::probe::noise", "2: crate::probe::grid",],
        "`diskalign::probe::noise;` names the module itself, which is private: rustc refuses it"
    );
    assert!(
        past_doors(text, Some("probe"), &inner).is_empty(),
        "a module's own paths pass"
    );
    let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    let tests_only = test_files(src);
    assert!(inner_modules(src, "probe", &tests_only).contains(&"infer".to_string()));
    assert!(
        !inner_modules(src, "check", &tests_only).contains(&"fixture".to_string()),
        "a module declared for tests only is no inner module"
    );
}

#[test]
fn no_inner_module_is_public() {
    let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    let mut bad = Vec::new();
    for p in rs_files(src) {
        if p.ends_with("lib.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (n, line) in lines.iter().enumerate() {
            let public = line.starts_with("pub mod ") || line.starts_with("pub(");
            let for_tests = n > 0 && lines[n - 1] == "#[cfg(test)]";
            if public && declared_module(line).is_some() && !for_tests {
                bad.push(format!("{}:{}: {line}", p.display(), n + 1));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "public inner modules (make them private; re-export what others use):\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_glob_imports_outside_tests() {
    let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    let tests_only = test_files(src);
    let mut bad = Vec::new();
    for p in rs_files(src) {
        // A test module's file, or a file of the folder of one.
        let for_tests = tests_only
            .iter()
            .any(|t| *t == p || p.starts_with(t.with_extension("")));
        if for_tests {
            continue;
        }
        for hit in glob_imports(&std::fs::read_to_string(&p).unwrap()) {
            bad.push(format!("{}:{hit}", p.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "glob imports outside tests:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_glob_scanner_skips_test_modules() {
    let text = "use a::b;\nuse super::*;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\nuse c::*;\n    use Code::*;\n";
    assert_eq!(glob_imports(text), ["2: use super::*;", "7: use c::*;"]);
}

/// The part of a file before its tests (`#[cfg(test)]`).
fn before_tests(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or_default()
}

/// Every path starting `crate::` or `super::` in `text`, as written
/// (`crate::units::human`, `super::style::{`).
fn relative_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        for (at, _) in text.match_indices(start) {
            let rest = &text[at..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            out.push(rest[..end].to_string());
        }
    }
    out
}

/// The column engine (src/report/columns/) knows no command: it names
/// nothing but the units, the style and the page's table cells, so every
/// command's rows and column lists are handed to it (report/tables/).
/// And report/ imports no module by glob outside its tests: each file
/// names what it uses.
#[test]
fn the_column_engine_knows_no_command() {
    let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    let allowed = [
        "crate::units::",
        "crate::report::style::",
        "crate::report::columns::",
        "crate::report::html::",
        "super::style::",
        "super::html::",
        "super::Column",
        "super::super::",
    ];
    let mut found = Vec::new();
    for p in rs_files(&src.join("report/columns")) {
        let rel = p.strip_prefix(src).unwrap().display().to_string();
        let text = std::fs::read_to_string(&p).unwrap();
        for path in relative_paths(before_tests(&text)) {
            if !allowed.iter().any(|a| path.starts_with(a)) {
                found.push(format!("{rel}: {path}"));
            }
        }
    }
    for p in rs_files(&src.join("report")) {
        let rel = p.strip_prefix(src).unwrap().display().to_string();
        let text = std::fs::read_to_string(&p).unwrap();
        let glob = |l: &str| {
            let l = l.trim();
            (l.starts_with("use super::") || l.starts_with("use crate::")) && l.ends_with("::*;")
        };
        if before_tests(&text).lines().any(glob) {
            found.push(format!("{rel}: a glob import"));
        }
    }
    assert!(
        found.is_empty(),
        "the column engine names a command's type, or report/ imports by glob:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_path_scanner_reads_crate_and_super_paths() {
    let text = "use super::style::{Style, TableMode};\nx = crate::units::human(1);\n";
    assert_eq!(
        relative_paths(text),
        ["crate::units::human", "super::style::"]
    );
    assert_eq!(before_tests("a\n#[cfg(test)]\nb"), "a\n");
}
