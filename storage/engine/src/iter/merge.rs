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
/// The smallest child is found by a linear scan: the engine merges a handful
/// of sources, where a scan beats a heap.
pub(crate) struct MergeIterator {
    children: Vec<Box<dyn InternalIterator>>,
    current: Option<usize>,
}

impl MergeIterator {
    pub(crate) fn new(children: Vec<Box<dyn InternalIterator>>) -> MergeIterator {
        MergeIterator {
            children,
            current: None,
        }
    }

    fn find_smallest(&mut self) {
        let mut best: Option<usize> = None;
        for (i, child) in self.children.iter().enumerate() {
            if !child.valid() {
                continue;
            }
            match best {
                Some(b)
                    if compare_internal_keys(child.key(), self.children[b].key())
                        != Ordering::Less => {}
                _ => best = Some(i),
            }
        }
        self.current = best;
    }

    fn on_error<T>(&mut self, r: Result<T>) -> Result<T> {
        if r.is_err() {
            self.current = None;
        }
        r
    }
}

impl InternalIterator for MergeIterator {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    fn seek_to_first(&mut self) -> Result<()> {
        for i in 0..self.children.len() {
            let r = self.children[i].seek_to_first();
            self.on_error(r)?;
        }
        self.find_smallest();
        Ok(())
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        for i in 0..self.children.len() {
            let r = self.children[i].seek(target);
            self.on_error(r)?;
        }
        self.find_smallest();
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        let i = self.current.expect("next() on an invalid merge iterator");
        let r = self.children[i].next();
        self.on_error(r)?;
        self.find_smallest();
        Ok(())
    }

    fn key(&self) -> &[u8] {
        self.children[self.current.expect("key() on an invalid merge iterator")].key()
    }

    fn value(&self) -> &[u8] {
        self.children[self.current.expect("value() on an invalid merge iterator")].value()
    }
}
