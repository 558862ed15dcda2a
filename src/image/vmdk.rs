//! Placeholder: the vmdk reader (being written).

use super::{Chain, ImageError, Opened};
use crate::stack::map::Source;
use std::path::Path;

/// Open a vmdk image.
pub fn open(_src: Source, path: &Path, _chain: &mut Chain) -> Result<Opened, ImageError> {
    Err(ImageError::parse(path, "vmdk", 0, "not read yet"))
}
