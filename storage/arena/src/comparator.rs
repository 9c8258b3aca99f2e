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

    /// A summary of `key` that orders like it: whenever
    /// `compare(a, b) == Less`, `prefix(a) <= prefix(b)`. The skiplist keeps
    /// it in each node and compares keys only when the prefixes tie, which
    /// spares most key reads and comparator calls. The default (0 for every
    /// key) is always correct and saves nothing.
    fn prefix(&self, key: &[u8]) -> u64 {
        let _ = key;
        0
    }
}

/// The first 8 bytes of `bytes` as a big-endian integer, zero-padded: an
/// order-preserving (`<=`) summary of lexicographic byte order.
pub fn bytewise_prefix(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = bytes.len().min(8);
    b[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(b)
}

/// Plain lexicographic byte order.
#[derive(Clone, Copy, Debug, Default)]
pub struct BytewiseComparator;

impl KeyComparator for BytewiseComparator {
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }

    fn prefix(&self, key: &[u8]) -> u64 {
        bytewise_prefix(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytewise_prefixes_never_contradict_the_order() {
        let keys: [&[u8]; 9] = [
            b"",
            b"\0",
            b"a",
            b"a\0",
            b"a\0\0\0\0\0\0\0\x01",
            b"ab",
            b"abcdefgh",
            b"abcdefghi",
            b"b",
        ];
        for a in keys {
            for b in keys {
                if a < b {
                    assert!(bytewise_prefix(a) <= bytewise_prefix(b), "{a:?} < {b:?}");
                }
            }
        }
        assert!(bytewise_prefix(b"ab") < bytewise_prefix(b"b"));
    }
}
