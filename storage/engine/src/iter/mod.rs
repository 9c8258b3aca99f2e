//! Iterators over internal keys and their composition.
//!
//! Every source (memtable, block, table, level) implements
//! [`InternalIterator`]; [`MergeIterator`] merges any of them, and
//! [`VisibleIter`] turns the merged stream of versions into the user view
//! (newest visible version per key, tombstones hidden).

mod level;
mod memtable;
mod merge;
mod visible;

pub(crate) use level::LevelIter;
pub(crate) use memtable::MemtableIter;
pub(crate) use merge::MergeIterator;
pub(crate) use visible::VisibleIter;

use crate::error::Result;

/// A cursor over internal-key/value entries in internal-key order.
///
/// After an error the iterator is invalid. `key` and `value` may only be
/// called while `valid()`.
pub(crate) trait InternalIterator: Send {
    fn valid(&self) -> bool;
    fn seek_to_first(&mut self) -> Result<()>;
    /// Moves to the first entry with key `>= target` (an internal key).
    fn seek(&mut self, target: &[u8]) -> Result<()>;
    fn next(&mut self) -> Result<()>;
    fn key(&self) -> &[u8];
    fn value(&self) -> &[u8];
}

impl<I: InternalIterator + ?Sized> InternalIterator for Box<I> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) -> Result<()> {
        (**self).seek_to_first()
    }
    fn seek(&mut self, target: &[u8]) -> Result<()> {
        (**self).seek(target)
    }
    fn next(&mut self) -> Result<()> {
        (**self).next()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
}
