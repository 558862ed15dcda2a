//! The recipes of docs/architecture.md ("How to add...") name files,
//! functions and types that exist, so a rename cannot leave a recipe
//! pointing at nothing; and the lists a new fuzz target or I/O engine
//! must join agree with each other.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The part of `doc` from the heading `heading` to the next `## `.
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc.find(heading).unwrap_or_else(|| panic!("no {heading}"));
    let rest = &doc[start..];
    let end = rest[heading.len()..]
        .find("\n## ")
        .map_or(rest.len(), |e| e + heading.len());
    &rest[..end]
}

/// The text of each `code span`, its line breaks read as spaces.
fn spans(text: &str) -> Vec<String> {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    joined
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// Every file and folder under the tree's top folders, as paths from the
/// root with `/` (the fuzz corpus and build output left out).
fn tree() -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            if ["fuzz/corpus", "fuzz/regressions", "fuzz/target"].contains(&rel.as_str()) {
                continue;
            }
            out.push(rel);
            // A symlink is named, never followed: the sysfs fixtures link
            // back up their own tree.
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&p, base, out);
            }
        }
    }
    let base = root();
    let mut out = Vec::new();
    for top in ["src", "tests", "fuzz", "docs", "tools"] {
        out.push(top.to_string());
        walk(&base.join(top), &base, &mut out);
    }
    out
}

/// A span that names a file or folder: `check/stack.rs`, `src/image/`,
/// `tests/containers/`, `registry.rs`.
fn is_path(span: &str) -> bool {
    !span.contains(' ')
        && (span.ends_with('/') || [".rs", ".md", ".toml"].iter().any(|x| span.ends_with(x)))
}

/// Whether `span` names an entry of `tree`: from the root, from src/, or
/// as the end of a longer path (`html/svg.rs` is src/report/html/svg.rs).
fn path_exists(span: &str, tree: &[String]) -> bool {
    let p = span.trim_end_matches('/');
    tree.iter().any(|e| e == p || e.ends_with(&format!("/{p}")))
}

/// The names Rust code defines under src/, tests/ and fuzz/src/: items
/// (fn, struct, enum, trait, type, const, static, mod, macro_rules),
/// enum variants (a line that starts with a capitalised name and `,`,
/// `(`, ` {` or ` =`), and the module files and folders.
fn definitions(tree: &[String]) -> BTreeSet<String> {
    const ITEMS: &[&str] = &[
        "fn",
        "struct",
        "enum",
        "trait",
        "type",
        "const",
        "static",
        "mod",
        "macro_rules",
    ];
    let mut defs = BTreeSet::new();
    for rel in tree {
        let p = Path::new(rel);
        let in_code =
            rel.starts_with("src") || rel.starts_with("tests") || rel.starts_with("fuzz/src");
        if !in_code {
            continue;
        }
        if let Some(stem) = p.file_stem() {
            defs.insert(stem.to_string_lossy().into_owned());
        }
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        for line in read(rel).lines() {
            let words: Vec<&str> = line
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty())
                .collect();
            for w in words.windows(2) {
                if ITEMS.contains(&w[0]) {
                    defs.insert(w[1].to_string());
                }
            }
            let t = line.trim_start();
            let lead: String = t
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let after = &t[lead.len()..];
            if lead.starts_with(|c: char| c.is_ascii_uppercase())
                && (after.is_empty() || [",", "(", " {", " ="].iter().any(|s| after.starts_with(s)))
            {
                defs.insert(lead);
            }
        }
    }
    defs
}

/// Names that are not ours: the standard library's, serde's, clap's.
const FOREIGN: &[&str] = &[
    "Vec",
    "Option",
    "String",
    "Box",
    "Result",
    "Some",
    "None",
    "vec",
    "Serialize",
    "Deserialize",
    "mut_arg",
];

/// Words that stand for the name of what is added.
fn placeholder(name: &str) -> bool {
    name.contains("NAME") || name == "ThatType"
}

fn is_ident(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The Rust names a span holds that must be defined: each segment of a
/// path (`Chain::open_as`), a call or macro (`sentence`, `open(src, ...)`,
/// `detail_accessors!`), a type or variant (`LayerKind`), a constant
/// (`ENGINES`) or a snake_case name (`by_name`). A single lower-case word
/// without a call (`build`, `kind`) is prose as often as code, and is not
/// held.
fn names(span: &str) -> Vec<String> {
    let mut out = Vec::new();
    if span.split_whitespace().any(|w| w.starts_with('-')) {
        return out; // a command line: `--csv FILE`, `qemu-img convert -O raw`
    }
    for word in span.split_whitespace() {
        let called = word.contains('(') || word.contains('!');
        let code = word
            .split(['(', '<', '[', '{'])
            .next()
            .unwrap_or_default()
            .trim_start_matches('&')
            .trim_end_matches([':', ';', ',', '!']);
        if ["pub", "use", "static", "type", "mod", "fn", "const"].contains(&code) {
            continue;
        }
        let segments: Vec<&str> = code.split("::").collect();
        if segments.iter().any(|s| !s.is_empty() && !is_ident(s)) {
            continue; // `data-*`, `qemu-img`, `engine.name`
        }
        let segments: Vec<&str> = segments
            .into_iter()
            .filter(|s| !s.is_empty() && !["crate", "super", "self"].contains(s))
            .collect();
        let held = |s: &str| {
            segments.len() > 1
                || called
                || s.contains('_')
                || s.starts_with(|c: char| c.is_ascii_uppercase())
        };
        for s in &segments {
            if held(s) && !placeholder(s) && !FOREIGN.contains(s) {
                out.push(s.to_string());
            }
        }
    }
    out
}

#[test]
fn the_name_reader_takes_code_and_leaves_prose() {
    assert_eq!(names("Chain::open_as"), ["Chain", "open_as"]);
    assert_eq!(names("Finding::of(code, facts)"), ["Finding", "of"]);
    assert_eq!(
        names("pub static ENGINE: Descriptor"),
        ["ENGINE", "Descriptor"]
    );
    assert_eq!(names("&NAME::FORMAT"), ["FORMAT"]);
    assert_eq!(names("detail_accessors!"), ["detail_accessors"]);
    assert_eq!(
        names("document(\"diskalign.NAME\", &run, stamp)"),
        ["document"]
    );
    assert_eq!(names("schema::Document<ThatType>"), ["schema", "Document"]);
    assert!(names("build").is_empty());
    assert!(names("qemu-img convert -O raw").is_empty());
    assert!(names("Vec<Finding>").is_empty());
    assert!(names("#[value(skip)]").is_empty());
    assert!(is_path("check/stack.rs") && is_path("tests/containers/"));
    assert!(!is_path("Chain::open_as"));
}

/// What `text` names in backticks that is not there.
fn missing_in(text: &str, tree: &[String], defs: &BTreeSet<String>) -> Vec<String> {
    let mut missing = Vec::new();
    for span in spans(text) {
        if is_path(&span) {
            if !span.contains("NAME") && !path_exists(&span, tree) {
                missing.push(format!("the file {span}"));
            }
            continue;
        }
        for n in names(&span) {
            if !defs.contains(&n) {
                missing.push(format!("{n} (in `{span}`)"));
            }
        }
    }
    missing.dedup();
    missing
}

/// Every file, folder, function, type and constant the recipes name in
/// backticks exists (the engine recipe once named functions that were
/// gone).
#[test]
fn recipes_name_what_exists() {
    let doc = read("docs/architecture.md");
    let tree = tree();
    let defs = definitions(&tree);
    let mut missing = Vec::new();
    for heading in ["## How to add...", "## Tests that hold the shape"] {
        missing.extend(missing_in(section(&doc, heading), &tree, &defs));
    }
    assert!(
        missing.is_empty(),
        "docs/architecture.md's recipes name what does not exist:\n{}",
        missing.join("\n")
    );
    // The check sees what is gone, and what is there.
    let gone = "Add a line to `ENGINES` and `probe::start_all`, \
                in `probe/engine/gone.rs`, `GoneKind`, `gone_fn!`.";
    assert_eq!(
        missing_in(gone, &tree, &defs),
        [
            "start_all (in `probe::start_all`)",
            "the file probe/engine/gone.rs",
            "GoneKind (in `GoneKind`)",
            "gone_fn (in `gone_fn!`)",
        ]
    );
}

/// The fuzz targets, as each of the five places that list them says.
#[test]
fn every_fuzz_target_is_in_each_list() {
    let dir: BTreeSet<String> = std::fs::read_dir(root().join("fuzz/fuzz_targets"))
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            (p.extension()? == "rs").then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    let cargo = read("fuzz/Cargo.toml");
    let bins: BTreeSet<String> = cargo
        .split("[[bin]]")
        .skip(1)
        .filter_map(|b| {
            let line = b.lines().find(|l| l.trim_start().starts_with("name"))?;
            Some(line.split('"').nth(1)?.to_string())
        })
        .collect();
    let entries = read("fuzz/src/entries.rs");
    let table = entries
        .split("pub const TARGETS")
        .nth(1)
        .and_then(|t| t.split("];").next())
        .unwrap_or_default();
    let rows: BTreeSet<String> = table
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("(\"")?.split('"').next())
        .map(str::to_string)
        .collect();
    let campaign = read("tools/fuzz-campaign");
    let all_targets: BTreeSet<String> = campaign
        .lines()
        .find_map(|l| l.strip_prefix("all_targets=("))
        .unwrap_or_default()
        .trim_end_matches(')')
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let fuzzing = read("docs/fuzzing.md");
    let documented: BTreeSet<String> = section(&fuzzing, "## Targets")
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .map(str::to_string)
        .collect();
    assert!(dir.len() > 10, "{dir:?}");
    for (place, names) in [
        ("fuzz/Cargo.toml's [[bin]]s", &bins),
        ("TARGETS in fuzz/src/entries.rs", &rows),
        ("all_targets in tools/fuzz-campaign", &all_targets),
        ("docs/fuzzing.md's Targets", &documented),
    ] {
        assert_eq!(
            names, &dir,
            "{place} against fuzz/fuzz_targets/: each target is in every list (docs/architecture.md, A fuzz target)"
        );
    }
}

/// Every registered I/O engine is in docs/probe.md: in the `--engine`
/// row of the options and under Engines.
#[test]
fn every_engine_is_documented() {
    let doc = read("docs/probe.md");
    let row = doc
        .lines()
        .find(|l| l.starts_with("| `--engine "))
        .expect("docs/probe.md has the --engine row");
    let engines = section(&doc, "## Engines");
    for d in diskalign::probe::ENGINES {
        let name = d.kind.as_str();
        assert!(
            row.contains(&format!("|{name}")) || row.contains(&format!(" {name}")),
            "docs/probe.md's --engine row lacks {name}: {row}"
        );
        assert!(
            engines.contains(&format!("- `{name}`:")),
            "docs/probe.md's Engines lacks {name}"
        );
    }
}

/// The source files docs/architecture.md must mention, as paths from
/// src/: every .rs file but lib.rs, main.rs and what only tests compile
/// (a module declared under `#[cfg(test)]`, with all under its folder,
/// and files named tests.rs, test_support.rs, fixture.rs or fixtures.rs).
fn source_files() -> Vec<String> {
    let src = root().join("src");
    let all: Vec<String> = tree()
        .into_iter()
        .filter_map(|p| Some(p.strip_prefix("src/")?.to_string()))
        .filter(|p| p.ends_with(".rs"))
        .collect();
    let mut test_only = Vec::new();
    for rel in &all {
        let dir = match rel.rsplit_once('/') {
            Some((d, "mod.rs")) => format!("{d}/"),
            _ if rel == "lib.rs" => String::new(),
            _ => format!("{}/", rel.trim_end_matches(".rs")),
        };
        let text = std::fs::read_to_string(src.join(rel)).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for w in lines.windows(2) {
            let name = w[1]
                .trim_start_matches("pub(crate) ")
                .strip_prefix("mod ")
                .and_then(|r| r.strip_suffix(';'));
            if let (true, Some(name)) = (w[0] == "#[cfg(test)]", name) {
                test_only.push(format!("{dir}{name}.rs"));
                test_only.push(format!("{dir}{name}/"));
            }
        }
    }
    const TEST_NAMES: &[&str] = &["tests.rs", "test_support.rs", "fixture.rs", "fixtures.rs"];
    all.into_iter()
        .filter(|p| p != "lib.rs" && p != "main.rs")
        .filter(|p| !TEST_NAMES.contains(&p.rsplit('/').next().unwrap_or(p)))
        .filter(|p| {
            !test_only
                .iter()
                .any(|t| p == t || (t.ends_with('/') && p.starts_with(t)))
        })
        .collect()
}

/// The files of `files` (paths from src/) that `doc` does not mention. A
/// file is mentioned when a code span holds its path from src/
/// (`check/declared.rs`, or `src/check/declared.rs`), or when a paragraph
/// (text between blank lines; a bullet list and its lead-in are one) that
/// names its top folder in a code span (`check/`) holds the end of its
/// path after a `/` (`declared.rs`; `bpf/typed.rs` for
/// sys/trace/bpf/typed.rs). A folder's `mod.rs` is mentioned by its
/// folder: `stack/lvm/`, or `lvm/` in the `stack/` paragraph.
fn unmentioned(doc: &str, files: &[String]) -> Vec<String> {
    let paragraphs: Vec<Vec<String>> = doc
        .split("\n\n")
        .map(|p| {
            spans(p)
                .into_iter()
                .map(|s| s.trim_start_matches("src/").to_string())
                .collect()
        })
        .collect();
    let named = |file: &str| {
        let target = file.strip_suffix("mod.rs").unwrap_or(file);
        let top = format!("{}/", file.split('/').next().unwrap_or_default());
        paragraphs.iter().any(|spans| {
            spans.iter().any(|s| s == target)
                || (spans.contains(&top)
                    && spans.iter().any(|s| target.ends_with(&format!("/{s}"))))
        })
    };
    files.iter().filter(|f| !named(f)).cloned().collect()
}

#[test]
fn the_mention_reader_finds_a_missing_file() {
    let doc = "**Check** (`check/`): `mod.rs` drives.\n\
               - `start.rs`: the start rule.\n\
               - `bpf/typed.rs` is said here, but the live system's folder is not.\n\
               \n\
               `stack/lvm/` reads LVM; `zones.rs` is in no `check/` paragraph,\n\
               \n\
               Plan's `remedy.rs`, and `src/plan/after.rs` from the root.";
    let files: Vec<String> = [
        "check/mod.rs",
        "check/start.rs",
        "check/zones.rs",
        "stack/lvm/mod.rs",
        "sys/trace/bpf/typed.rs",
        "plan/remedy.rs",
        "plan/after.rs",
        "units.rs",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(
        unmentioned(doc, &files),
        ["sys/trace/bpf/typed.rs", "plan/remedy.rs", "units.rs"]
    );
}

/// docs/architecture.md names every source file (issue 49): a new file
/// gets its words in the paragraph of its module, or the test names it.
#[test]
fn every_source_file_is_in_the_architecture() {
    let files = source_files();
    assert!(files.len() > 100, "{files:?}");
    assert!(!files
        .iter()
        .any(|f| f.ends_with("test_support.rs") || f == "main.rs"));
    let missing = unmentioned(&read("docs/architecture.md"), &files);
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not mention these files of src/ \
         (say what each holds in its module's paragraph):\n{}",
        missing.join("\n")
    );
}
