//! Iterates a sorted, non-overlapping level as one sequence, opening one
//! table at a time.

use std::sync::Arc;

use super::InternalIterator;
use crate::error::Result;
use crate::sstable::TableIter;
use crate::version::{TableFile, find_file};

/// Concatenates the tables of one level (L1 and deeper).
pub(crate) struct LevelIter {
    files: Vec<Arc<TableFile>>,
    index: usize,
    current: Option<TableIter>,
}

impl LevelIter {
    pub(crate) fn new(files: Vec<Arc<TableFile>>) -> LevelIter {
        LevelIter {
            files,
            index: 0,
            current: None,
        }
    }

    fn open(&mut self, index: usize) {
        self.index = index;
        self.current = self.files.get(index).map(|f| f.table.iter());
    }

    /// Moves to following files while the current one is exhausted.
    fn skip_exhausted(&mut self) -> Result<()> {
        while self.current.as_ref().is_some_and(|c| !c.valid()) {
            self.open(self.index + 1);
            if let Some(c) = &mut self.current {
                c.seek_to_first()?;
            }
        }
        Ok(())
    }
}

impl InternalIterator for LevelIter {
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }

    fn seek_to_first(&mut self) -> Result<()> {
        self.open(0);
        if let Some(c) = &mut self.current {
            c.seek_to_first()?;
        }
        self.skip_exhausted()
    }

    fn seek(&mut self, target: &[u8]) -> Result<()> {
        let index = find_file(&self.files, target);
        self.open(index);
        if let Some(c) = &mut self.current {
            c.seek(target)?;
        }
        self.skip_exhausted()
    }

    fn next(&mut self) -> Result<()> {
        if let Some(c) = &mut self.current {
            c.next()?;
        }
        self.skip_exhausted()
    }

    fn key(&self) -> &[u8] {
        self.current
            .as_ref()
            .expect("key() on an invalid level iterator")
            .key()
    }

    fn value(&self) -> &[u8] {
        self.current
            .as_ref()
            .expect("value() on an invalid level iterator")
            .value()
    }
}
