//! What lives inside a device: LVM, md, LUKS, filesystems.

pub mod signature;
