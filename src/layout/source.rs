//! A file or block device as a [`ReadAt`] source.

use crate::bytes::ReadAt;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// A file or block device with its size.
pub struct FileSource {
    pub file: File,
    pub size: u64,
}

impl ReadAt for FileSource {
    fn len(&self) -> u64 {
        self.size
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        FileExt::read_exact_at(&self.file, buf, offset)
    }
}
