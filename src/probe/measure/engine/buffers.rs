//! I/O buffers that O_DIRECT accepts: page-aligned, and random-filled for
//! writes.

/// A zeroed, page-aligned buffer (O_DIRECT needs aligned memory). Filled
/// with random bytes for writes, so compressing devices see real data.
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is plain memory owned by this value; it is only
// accessed through &/&mut of the owner or by the kernel during an I/O the
// owner waits for.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    const ALIGN: usize = 4096;

    pub fn new(len: usize, random: bool) -> AlignedBuf {
        let layout =
            std::alloc::Layout::from_size_align(len.max(1), Self::ALIGN).expect("buffer layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        let mut b = AlignedBuf { ptr, len };
        if random {
            let mut rng = fastrand::Rng::with_seed(0x5eed);
            for chunk in b.as_mut_slice().chunks_mut(8) {
                let v = rng.u64(..).to_le_bytes();
                chunk.copy_from_slice(&v[..chunk.len()]);
            }
        }
        b
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is a live allocation of len bytes owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.len.max(1), Self::ALIGN)
            .expect("buffer layout");
        // SAFETY: allocated in new() with this same layout.
        unsafe { std::alloc::dealloc(self.ptr, layout) }
    }
}
