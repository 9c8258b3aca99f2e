//! Read points: a place in the write history that reads stay at while writes go on.
//!
//! A read point is a sequence number registered with the engine. Reads at it
//! see exactly the writes with a sequence number at or below it. Compaction
//! reads the registered list when it starts and keeps, for each key, the
//! newest version below every read point, so a read point's view survives
//! flushes and compactions until the read point is dropped.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use parking_lot::Mutex;

use super::{Inner, KvPair};
use crate::error::Result;
use crate::key::SeqNo;
use crate::prefix::prefix_end;

/// Live read points: sequence number → how many handles hold it.
#[derive(Default)]
pub(crate) struct ReadPointList {
    held: Mutex<BTreeMap<SeqNo, usize>>,
}

impl ReadPointList {
    /// Registers a read point at the sequence number `current()` returns. The
    /// number is read under the list's lock, so a compaction that read the
    /// list before cannot hold a table with a newer sequence number than it
    /// (tables only hold sequence numbers that were visible when installed).
    pub(crate) fn acquire(&self, current: impl FnOnce() -> SeqNo) -> SeqNo {
        let mut held = self.held.lock();
        let seq = current();
        *held.entry(seq).or_insert(0) += 1;
        seq
    }

    pub(crate) fn release(&self, seq: SeqNo) {
        let mut held = self.held.lock();
        let count = held
            .get_mut(&seq)
            .expect("a read point is released exactly once");
        *count -= 1;
        if *count == 0 {
            held.remove(&seq);
        }
    }

    /// The live read point sequence numbers, ascending.
    pub(crate) fn sequence_numbers(&self) -> Vec<SeqNo> {
        self.held.lock().keys().copied().collect()
    }
}

/// A consistent, read-only view of the engine at one sequence number.
///
/// Holding a read point keeps older versions of the keys it can see from
/// being compacted away, so drop it when done. It does not keep the engine
/// open: reads after the engine is closed still work on what was open.
pub struct ReadPoint {
    inner: Arc<Inner>,
    seq: SeqNo,
}

impl ReadPoint {
    pub(crate) fn new(inner: &Arc<Inner>) -> ReadPoint {
        let seq = inner
            .read_points
            .acquire(|| inner.visible_seq.load(Ordering::Acquire));
        ReadPoint {
            inner: Arc::clone(inner),
            seq,
        }
    }

    /// The sequence number of the newest write this read point sees.
    pub fn seq(&self) -> SeqNo {
        self.seq
    }

    /// The value of `key` as of this read point.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get_at(key, self.seq)
    }

    /// Up to `limit` pairs with keys in `(start, end)`, ascending, as of
    /// this read point.
    pub fn scan(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
    ) -> Result<Vec<KvPair>> {
        self.inner.scan_at(start, end, limit, usize::MAX, self.seq)
    }

    /// [`scan`](Self::scan), ending with the pair that brings the bytes of
    /// the keys and values returned to `max_bytes` or past it (as
    /// `Engine::scan_bytes`).
    pub fn scan_bytes(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
        max_bytes: usize,
    ) -> Result<Vec<KvPair>> {
        self.inner.scan_at(start, end, limit, max_bytes, self.seq)
    }

    /// Up to `limit` pairs whose keys start with `prefix`, as of this
    /// read point.
    pub fn scan_prefix(&self, prefix: &[u8], limit: usize) -> Result<Vec<KvPair>> {
        let end = prefix_end(prefix);
        let end = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        self.scan(Bound::Included(prefix), end, limit)
    }
}

impl Drop for ReadPoint {
    fn drop(&mut self) {
        self.inner.read_points.release(self.seq);
    }
}

impl std::fmt::Debug for ReadPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadPoint").field("seq", &self.seq).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that the list counts duplicate read points and forgets released ones.
    #[test]
    fn read_point_list_counts_holders() {
        let list = ReadPointList::default();
        assert_eq!(list.acquire(|| 5), 5);
        assert_eq!(list.acquire(|| 5), 5);
        assert_eq!(list.acquire(|| 2), 2);
        assert_eq!(list.sequence_numbers(), vec![2, 5]);
        list.release(5);
        assert_eq!(list.sequence_numbers(), vec![2, 5]);
        list.release(5);
        list.release(2);
        assert!(list.sequence_numbers().is_empty());
    }
}
