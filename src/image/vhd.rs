//! Placeholder: the vhd reader (being written).

use super::{Chain, ImageError, Opened};
use crate::stack::map::Source;
use std::path::Path;

/// Open a vhd image.
pub fn open(_src: Source, path: &Path, _chain: &mut Chain) -> Result<Opened, ImageError> {
    Err(ImageError::parse(path, "vhd", 0, "not read yet"))
}
