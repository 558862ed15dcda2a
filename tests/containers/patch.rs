//! Broken images made from real ones: a copy with fields patched to lie,
//! and the error `image::open` gives for it, which must come quickly.

use super::open_error;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A copy of `image` named `name` (in the same directory) with each
/// `(offset, bytes)` written over it.
pub fn copy_with(image: &Path, name: &str, patches: &[(u64, &[u8])]) -> PathBuf {
    let copy = image.with_file_name(name);
    std::fs::copy(image, &copy).unwrap();
    for (at, bytes) in patches {
        write(&copy, *at, bytes);
    }
    copy
}

/// Write `bytes` at `at` of the file `path`.
pub fn write(path: &Path, at: u64, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, at).unwrap();
}

/// `len` bytes at `at` of the file `path`.
pub fn read(path: &Path, at: u64, len: usize) -> Vec<u8> {
    let f = std::fs::File::open(path).unwrap();
    let mut b = vec![0u8; len];
    f.read_exact_at(&mut b, at).unwrap();
    b
}

/// The error opening `image` gives, within a second: a hostile image
/// fails fast.
pub fn quick_error(image: &Path) -> String {
    let t = Instant::now();
    let e = open_error(image);
    let took = t.elapsed();
    assert!(took < Duration::from_secs(1), "{e}: took {took:?}");
    e
}
