//! The boot-sector fixtures of `fat.rs`, `exfat.rs` and `ntfs.rs`'s tests
//! (made by tests/fixtures/fs/make.sh).

/// A fixture: the volume's first sectors, and what its tool and blkid
/// printed for it.
pub fn fixture(name: &str) -> (Vec<u8>, String) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fs/");
    let bin = std::fs::read(format!("{dir}{name}.bin")).unwrap();
    (
        bin,
        std::fs::read_to_string(format!("{dir}{name}.txt")).unwrap(),
    )
}
