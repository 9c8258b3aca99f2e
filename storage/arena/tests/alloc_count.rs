//! Proves that inserting into the skiplist performs no heap allocation once
//! the arena has a block with room. Lives in its own test binary because it
//! installs a counting global allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use strata_arena::{BytewiseComparator, SkipListWriter};

struct CountingAllocator;

thread_local! {
    // Per thread, so allocations made by the test harness on other threads
    // do not disturb the count. `const` initialisation never allocates.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every method forwards to `System` with the same arguments; counting
// touches only a thread-local `Cell`, which neither allocates nor unwinds.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; `ptr` came from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged; `ptr` came from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn insert_performs_zero_heap_allocations_once_block_exists() {
    let mut writer = SkipListWriter::new(BytewiseComparator, 1 << 20);
    let reader = writer.reader();
    // The first insert may allocate the first data block.
    writer.insert(b"warm-up", b"value");
    let mut key = [0u8; 16];
    let value = [42u8; 100];
    let before = allocations();
    for i in 0..3_000u64 {
        key[..8].copy_from_slice(&i.to_be_bytes());
        key[15] = 0;
        assert!(writer.insert(&key, &value));
        key[15] = 1;
        assert!(writer.insert_near_last(&key, &value));
    }
    let after = allocations();
    assert_eq!(after - before, 0, "inserts allocated on the heap");
    // Guard against a vacuous pass: the counter does see real allocations.
    let boxed = std::hint::black_box(Box::new(1u8));
    assert_eq!(allocations(), after + 1);
    drop(boxed);
    assert_eq!(reader.len(), 6_001);
}
