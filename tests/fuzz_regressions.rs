//! Replays every input of fuzz/corpus/<target>/ and fuzz/regressions/<target>/
//! through the fuzz targets' own entry functions (fuzz/src/entries.rs), so a
//! crash the fuzzer once found stays fixed under plain `cargo test`.

#[path = "../fuzz/src/entries.rs"]
mod entries;

use std::path::Path;

#[test]
fn every_saved_fuzz_input_replays_without_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut failed = Vec::new();
    let mut replayed = 0;
    for (name, entry) in entries::TARGETS {
        for kind in ["corpus", "regressions"] {
            let Ok(dir) = std::fs::read_dir(root.join(kind).join(name)) else {
                continue;
            };
            let mut files: Vec<_> = dir.filter_map(|e| e.ok()).map(|e| e.path()).collect();
            files.sort();
            for file in files.into_iter().filter(|f| f.is_file()) {
                let data = std::fs::read(&file).unwrap();
                replayed += 1;
                if std::panic::catch_unwind(|| entry(&data)).is_err() {
                    failed.push(file.display().to_string());
                }
            }
        }
    }
    entries::cleanup();
    assert!(failed.is_empty(), "fuzz inputs that panic: {failed:#?}");
    // The corpus is committed: an empty replay means the paths are wrong.
    assert!(
        replayed > 0,
        "no fuzz inputs found under {}",
        root.display()
    );
}
