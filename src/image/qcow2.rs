//! Placeholder: the qcow2 reader (being written).

use super::{Chain, ImageError, Opened};
use crate::stack::map::Source;
use std::path::Path;

/// Open a qcow2 image.
pub fn open(_src: Source, path: &Path, _chain: &mut Chain) -> Result<Opened, ImageError> {
    Err(ImageError::parse(path, "qcow2", 0, "not read yet"))
}
