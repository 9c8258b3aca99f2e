//! [`InternalIterator`] over a memtable.

use std::sync::Arc;

use super::InternalIterator;
use crate::error::Result;
use crate::key::InternalKeyComparator;
use crate::memtable::Memtable;

/// Iterates a memtable; keeps it alive.
pub(crate) struct MemtableIter {
    _memtable: Arc<Memtable>,
    inner: strata_arena::Iter<InternalKeyComparator>,
}

impl MemtableIter {
    pub(crate) fn new(memtable: Arc<Memtable>) -> MemtableIter {
        let inner = memtable.iter();
        MemtableIter {
            _memtable: memtable,
            inner,
        }
    }
}

impl InternalIterator for MemtableIter {
    fn valid(&self) -> bool {
        self.inner.valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        self.inner.seek_to_first();
        Ok(())
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        self.inner.seek(target);
        Ok(())
    }
    fn next(&mut self) -> Result<()> {
        self.inner.next();
        Ok(())
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
}
