//! Placeholder: the vdi reader (being written).

use super::{Chain, ImageError, Opened};
use crate::stack::map::Source;
use std::path::Path;

/// Open a vdi image.
pub fn open(_src: Source, path: &Path, _chain: &mut Chain) -> Result<Opened, ImageError> {
    Err(ImageError::parse(path, "vdi", 0, "not read yet"))
}
pub const SIGNATURE: u32 = 0xbeda_107f;
