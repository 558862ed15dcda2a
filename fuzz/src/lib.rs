//! diskalign's fuzz targets; the entry functions live in `entries.rs` so
//! the main crate's tests/fuzz_regressions.rs can include the same file.
pub mod entries;
