//! [`LargestAllocation`]: the system allocator, recording the largest
//! single allocation each thread made. Installed as the global allocator of
//! a test binary, it lets a test bound what one step of work holds at once
//! (a copy made in pieces must not be made whole). It lives here, with the
//! workspace's other `unsafe` code, so that a test declaring it needs none.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, noting each thread's largest allocation. Declare
/// it with `#[global_allocator]` and read it with [`largest_allocation`].
pub struct LargestAllocation;

thread_local! {
    // `const` initialisation never allocates, so reading it inside the
    // allocator cannot recurse.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // `try_with`: a thread being torn down has no slot left; skip it.
    let _ = LARGEST.try_with(|largest| largest.set(largest.get().max(size)));
}

// SAFETY: every method forwards to `System` with the same arguments; noting
// the size touches only a thread-local `Cell`, which neither allocates nor
// unwinds.
unsafe impl GlobalAlloc for LargestAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; `ptr` came from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: forwarded unchanged; `ptr` came from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The largest single allocation (or reallocation) the calling thread made
/// since the last call, in bytes; 0 for a thread that allocated nothing
/// since. Meaningful only where [`LargestAllocation`] is the global
/// allocator.
pub fn largest_allocation() -> usize {
    LARGEST.with(|largest| largest.replace(0))
}
