//! Placeholder: the vhdx reader (being written).

use super::{Chain, ImageError, Opened};
use crate::stack::map::Source;
use std::path::Path;

/// Open a vhdx image.
pub fn open(_src: Source, path: &Path, _chain: &mut Chain) -> Result<Opened, ImageError> {
    Err(ImageError::parse(path, "vhdx", 0, "not read yet"))
}
