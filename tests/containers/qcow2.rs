//! qcow2 images made by qemu-img, read as qemu reads them (being written).
