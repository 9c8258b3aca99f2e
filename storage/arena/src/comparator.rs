//! Key ordering used by the skiplist.

use std::cmp::Ordering;

/// A total order over byte-string keys.
///
/// The skiplist is generic over its comparator so the engine can order
/// internal keys (user key ascending, then sequence number descending) without
/// the skiplist knowing about their layout.
pub trait KeyComparator: Send + Sync + 'static {
    /// Compares two keys.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;
}

/// Plain lexicographic byte order.
#[derive(Clone, Copy, Debug, Default)]
pub struct BytewiseComparator;

impl KeyComparator for BytewiseComparator {
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }
}
