//! Merges several sorted iterators into one sorted stream.

use std::cmp::Ordering;

use super::InternalIterator;
use crate::error::Result;
use crate::key::compare_internal_keys;

/// Yields the union of its children in internal-key order. Children are
/// given newest source first; internal keys are unique across sources
/// (sequence numbers are), so ties only arise for the same entry and the
/// earlier child wins.
///
/// The valid children sit in a binary min-heap of child indices ordered by
/// (current key, index): `next` costs O(log n) comparisons, which matters
/// when a compaction merges many L0 tables.
pub(crate) struct MergeIterator {
    children: Vec<Box<dyn InternalIterator>>,
    /// Indices of valid children; `heap[0]` is the current one.
    heap: Vec<usize>,
}

impl MergeIterator {
    pub(crate) fn new(children: Vec<Box<dyn InternalIterator>>) -> MergeIterator {
        MergeIterator {
            heap: Vec::with_capacity(children.len()),
            children,
        }
    }

    fn less(&self, a: usize, b: usize) -> bool {
        match compare_internal_keys(self.children[a].key(), self.children[b].key()) {
            Ordering::Less => true,
            Ordering::Equal => a < b,
            Ordering::Greater => false,
        }
    }

    fn sift_down(&mut self, mut pos: usize) {
        let len = self.heap.len();
        loop {
            let left = 2 * pos + 1;
            if left >= len {
                return;
            }
            let right = left + 1;
            let child = if right < len && self.less(self.heap[right], self.heap[left]) {
                right
            } else {
                left
            };
            if !self.less(self.heap[child], self.heap[pos]) {
                return;
            }
            self.heap.swap(pos, child);
            pos = child;
        }
    }

    fn rebuild(&mut self) {
        self.heap.clear();
        self.heap
            .extend((0..self.children.len()).filter(|&i| self.children[i].valid()));
        for pos in (0..self.heap.len() / 2).rev() {
            self.sift_down(pos);
        }
    }

    fn on_error<T>(&mut self, r: Result<T>) -> Result<T> {
        if r.is_err() {
            self.heap.clear();
        }
        r
    }

    fn current(&self) -> usize {
        *self
            .heap
            .first()
            .expect("key(), value() or next() on an invalid merge iterator")
    }
}

impl InternalIterator for MergeIterator {
    fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        for i in 0..self.children.len() {
            let r = self.children[i].seek_to_first();
            self.on_error(r)?;
        }
        self.rebuild();
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        for i in 0..self.children.len() {
            let r = self.children[i].seek(target);
            self.on_error(r)?;
        }
        self.rebuild();
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let i = self.current();
        let r = self.children[i].next();
        self.on_error(r)?;
        if !self.children[i].valid() {
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
        }
        self.sift_down(0);
        Ok(())
    }

    fn key(&self) -> &[u8] {
        self.children[self.current()].key()
    }

    fn value(&self) -> &[u8] {
        self.children[self.current()].value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, internal_key};

    /// A child over a fixed list of entries.
    struct VecIter {
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        pos: usize,
    }

    impl InternalIterator for VecIter {
        fn valid(&self) -> bool {
            self.pos < self.entries.len()
        }
        fn seek_to_first(&mut self) -> Result<()> {
            self.pos = 0;
            Ok(())
        }
        fn seek(&mut self, target: &[u8]) -> Result<()> {
            self.pos = self
                .entries
                .partition_point(|(k, _)| compare_internal_keys(k, target) == Ordering::Less);
            Ok(())
        }
        fn next(&mut self) -> Result<()> {
            self.pos += 1;
            Ok(())
        }
        fn key(&self) -> &[u8] {
            &self.entries[self.pos].0
        }
        fn value(&self) -> &[u8] {
            &self.entries[self.pos].1
        }
    }

    // Proves that many interleaved children merge into one sorted stream,
    // from the start and from a seek, with every entry exactly once.
    #[test]
    fn merges_many_children_in_order() {
        let children: Vec<Box<dyn InternalIterator>> = (0..9u64)
            .map(|c| {
                let entries = (0..50u64)
                    .filter(|k| k % 9 == c || k % 4 == 0)
                    .map(|k| {
                        let seq = 100 - c;
                        let key = internal_key(format!("{k:03}").as_bytes(), seq, ValueKind::Put);
                        (key, vec![c as u8])
                    })
                    .collect();
                Box::new(VecIter { entries, pos: 0 }) as Box<dyn InternalIterator>
            })
            .collect();
        let mut all: Vec<Vec<u8>> = Vec::new();
        let mut merged = MergeIterator::new(children);
        merged.seek_to_first().expect("seek");
        while merged.valid() {
            all.push(merged.key().to_vec());
            merged.next().expect("next");
        }
        let mut sorted = all.clone();
        sorted.sort_by(|a, b| compare_internal_keys(a, b));
        sorted.dedup();
        assert_eq!(all, sorted, "sorted and without duplicates");
        // Keys 0, 4, ... appear in all 9 children; others in one.
        let expected: usize = (0..50).map(|k| if k % 4 == 0 { 9 } else { 1 }).sum();
        assert_eq!(all.len(), expected);
        merged
            .seek(&internal_key(b"040", u64::MAX >> 8, ValueKind::Put))
            .expect("seek");
        assert_eq!(&merged.key()[..3], b"040");
        assert_eq!(merged.value(), &[0], "the newest source comes first");
    }
}
