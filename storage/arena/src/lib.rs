//! Bump-pointer arena and the skiplist that lives in it.
//!
//! This is the only crate in the workspace that contains `unsafe` code. The
//! [`Arena`] hands out byte ranges from large blocks and frees them all at
//! once; the [`SkipList`] stores its nodes, keys and values in an arena so that
//! an insert performs no heap allocation once the current block has room.
//! [`LargestAllocation`] is a test allocator that notes each thread's
//! largest allocation, kept here so that the tests using it need no
//! `unsafe` of their own.
//!
//! Concurrency model: exactly one [`SkipListWriter`] inserts while any number
//! of [`SkipList`] handles (cheap clones) read concurrently. The writer is not
//! `Clone`, so "one writer" is enforced by the type system rather than by a
//! comment.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod arena;
mod comparator;
mod largest_alloc;
mod skiplist;

pub use arena::{Arena, DEFAULT_BLOCK_SIZE_BYTES};
pub use comparator::{BytewiseComparator, KeyComparator, bytewise_prefix};
pub use largest_alloc::{LargestAllocation, largest_allocation};
pub use skiplist::{Iter, MAX_HEIGHT, SkipList, SkipListWriter};
