//! The C heap kept for reuse. A check reads each target's headers into
//! buffers of tens of KiB that are freed when the target is done; glibc
//! gives such memory back to the kernel as soon as 128 KiB lie free at
//! the top of the heap and takes the next target's from it again, a page
//! fault for every page touched (mallopt(3), M_TRIM_THRESHOLD and the
//! dynamic M_MMAP_THRESHOLD). Keeping up to 64 MiB cuts that out; the
//! memory a run needs at once stays the same.

/// Keep freed heap memory for the next allocation.
pub fn keep_freed_heap() {
    // SAFETY: mallopt only sets allocator parameters; it is called once,
    // before any thread is started.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}
