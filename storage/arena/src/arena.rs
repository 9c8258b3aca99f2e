//! A bump-pointer arena: hands out aligned byte ranges from large blocks and
//! frees everything at once when dropped.

use std::ptr::NonNull;

/// Block size used when the caller has no better idea.
pub const DEFAULT_BLOCK_SIZE_BYTES: usize = 1 << 20;

/// Largest alignment the arena can honour; blocks are allocated as `u64`s.
const MAX_ALIGN: usize = std::mem::align_of::<u64>();

/// How many block pointers to reserve up front, so that recording a new block
/// does not usually reallocate the block list.
const INITIAL_BLOCK_SLOTS: usize = 64;

/// One heap block owned by the arena, remembered as the raw parts of a
/// `Box<[u64]>` so that pointers handed out from it keep their provenance
/// (moving a `Box` would invalidate them under Stacked Borrows).
struct Block {
    ptr: NonNull<u64>,
    words: usize,
}

/// A bump-pointer allocator.
///
/// Allocation needs `&mut self`; memory is zero-initialised, never moves, and
/// is released only when the arena is dropped. Requests larger than a quarter
/// of a block get a block of their own so that big values do not waste the
/// tail of the current block.
pub struct Arena {
    block_size_bytes: usize,
    blocks: Vec<Block>,
    /// Base of the block small allocations are carved from (null before the
    /// first allocation).
    current: *mut u8,
    /// Bytes of `current` already handed out.
    offset: usize,
    /// Capacity of `current` in bytes.
    capacity: usize,
    /// Sum of the sizes of all blocks.
    reserved_bytes: usize,
    /// Sum of the sizes of all allocations, including alignment padding.
    used_bytes: usize,
}

// SAFETY: the arena exclusively owns its blocks (no other handle to them
// exists besides the pointers it hands out, whose use is the caller's
// responsibility), so moving it to another thread is sound.
unsafe impl Send for Arena {}
// SAFETY: every method taking `&self` only reads plain counters; memory is
// only handed out through `&mut self`.
unsafe impl Sync for Arena {}

impl Arena {
    /// Creates an empty arena; no memory is allocated until the first request.
    ///
    /// # Panics
    /// If `block_size_bytes` is zero.
    pub fn new(block_size_bytes: usize) -> Arena {
        assert!(block_size_bytes > 0, "arena block size must be positive");
        Arena {
            block_size_bytes: block_size_bytes.next_multiple_of(MAX_ALIGN),
            blocks: Vec::new(),
            current: std::ptr::null_mut(),
            offset: 0,
            capacity: 0,
            reserved_bytes: 0,
            used_bytes: 0,
        }
    }

    /// Returns a pointer to `size_bytes` zeroed bytes aligned to `align`.
    ///
    /// The memory stays valid and never moves until the arena is dropped.
    ///
    /// # Panics
    /// If `align` is not a power of two or is larger than 8.
    pub fn allocate(&mut self, size_bytes: usize, align: usize) -> NonNull<u8> {
        assert!(
            align.is_power_of_two() && align <= MAX_ALIGN,
            "unsupported alignment {align}"
        );
        let aligned = self.offset.next_multiple_of(align);
        if !self.current.is_null() && aligned + size_bytes <= self.capacity {
            self.used_bytes += aligned - self.offset + size_bytes;
            self.offset = aligned + size_bytes;
            // SAFETY: `aligned + size_bytes <= capacity`, so the offset stays
            // inside the current block, which is live while the arena is.
            let ptr = unsafe { self.current.add(aligned) };
            // SAFETY: derived from a non-null block pointer by an in-bounds
            // offset, so it is non-null.
            return unsafe { NonNull::new_unchecked(ptr) };
        }
        if size_bytes > self.block_size_bytes / 4 {
            // A dedicated block keeps the current block's tail usable.
            self.used_bytes += size_bytes;
            return self.new_block(size_bytes.max(1));
        }
        let base = self.new_block(self.block_size_bytes);
        self.current = base.as_ptr();
        self.capacity = self.block_size_bytes;
        self.offset = size_bytes;
        self.used_bytes += size_bytes;
        base
    }

    /// Bytes handed out so far, including alignment padding.
    pub fn used_bytes(&self) -> usize {
        self.used_bytes
    }

    /// Bytes held in blocks (what the arena costs in memory).
    pub fn reserved_bytes(&self) -> usize {
        self.reserved_bytes
    }

    fn new_block(&mut self, size_bytes: usize) -> NonNull<u8> {
        let words = size_bytes.div_ceil(MAX_ALIGN);
        let boxed: Box<[u64]> = vec![0u64; words].into_boxed_slice();
        let raw: *mut [u64] = Box::into_raw(boxed);
        // SAFETY: `Box::into_raw` never returns null.
        let ptr = unsafe { NonNull::new_unchecked(raw.cast::<u64>()) };
        if self.blocks.capacity() == 0 {
            self.blocks.reserve(INITIAL_BLOCK_SLOTS);
        }
        self.blocks.push(Block { ptr, words });
        self.reserved_bytes += words * MAX_ALIGN;
        ptr.cast::<u8>()
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for block in self.blocks.drain(..) {
            let slice = std::ptr::slice_from_raw_parts_mut(block.ptr.as_ptr(), block.words);
            // SAFETY: `slice` is exactly the pointer and length produced by
            // `Box::into_raw` in `new_block`, and each block is freed once.
            drop(unsafe { Box::from_raw(slice) });
        }
    }
}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Arena")
            .field("block_size_bytes", &self.block_size_bytes)
            .field("blocks", &self.blocks.len())
            .field("used_bytes", &self.used_bytes)
            .field("reserved_bytes", &self.reserved_bytes)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that allocations honour alignment, do not overlap and are zeroed.
    #[test]
    fn allocations_are_aligned_disjoint_and_zeroed() {
        let mut arena = Arena::new(256);
        let mut ranges = Vec::new();
        for i in 0..200usize {
            let size = i % 37;
            let align = 1 << (i % 4);
            let ptr = arena.allocate(size, align);
            assert_eq!(ptr.as_ptr() as usize % align, 0);
            // SAFETY: the arena handed out `size` bytes at `ptr`.
            let bytes = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), size) };
            assert!(bytes.iter().all(|b| *b == 0));
            bytes.fill(i as u8);
            ranges.push((ptr.as_ptr() as usize, size, i as u8));
        }
        for &(start, size, fill) in &ranges {
            // SAFETY: the range is still owned by the live arena.
            let bytes = unsafe { std::slice::from_raw_parts(start as *const u8, size) };
            assert!(
                bytes.iter().all(|b| *b == fill),
                "allocation was overwritten"
            );
        }
    }

    // Proves that big requests get their own block and leave the current one usable.
    #[test]
    fn large_allocation_gets_dedicated_block() {
        let mut arena = Arena::new(1024);
        let small = arena.allocate(8, 8);
        let big = arena.allocate(4096, 8);
        let next = arena.allocate(8, 8);
        assert_eq!(next.as_ptr() as usize, small.as_ptr() as usize + 8);
        assert_ne!(big.as_ptr(), next.as_ptr());
        assert_eq!(arena.reserved_bytes(), 1024 + 4096);
        assert_eq!(arena.used_bytes(), 8 + 4096 + 8);
    }

    // Proves that a full block makes the arena move on to a fresh one.
    #[test]
    fn full_block_starts_new_block() {
        let mut arena = Arena::new(64);
        for _ in 0..8 {
            arena.allocate(16, 8);
        }
        assert_eq!(arena.reserved_bytes(), 64 * 2);
    }
}
