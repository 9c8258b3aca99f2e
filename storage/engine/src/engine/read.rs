//! The read path: point lookups and range scans over memtables and tables.

use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Inner, KvPair, ReadView};
use crate::error::{EngineError, Result};
use crate::iter::{InternalIterator, LevelIter, MemtableIter, MergeIterator, VisibleIter};
use crate::key::{SeqNo, ValueKind, lookup_key, parse_internal_key, user_key};
use crate::memtable::Lookup;
use crate::sstable::Table;
use crate::version::find_file;

impl Inner {
    /// Takes a consistent read point. The view is taken before the sequence
    /// number: data only moves from memtables to tables, and the view keeps
    /// its memtables alive, so everything up to the sequence number that
    /// belongs to this view is reachable from it.
    fn latest_view(&self) -> (Arc<ReadView>, SeqNo) {
        let view = self.read_view();
        let read_seq = self.visible_seq.load(Ordering::Acquire);
        (view, read_seq)
    }

    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let (view, read_seq) = self.latest_view();
        self.get_in(&view, key, read_seq)
    }

    /// A read at a registered read point: any view newer than the read point
    /// still holds every version the read point sees (compaction keeps them).
    pub(crate) fn get_at(&self, key: &[u8], read_seq: SeqNo) -> Result<Option<Vec<u8>>> {
        self.get_in(&self.read_view(), key, read_seq)
    }

    fn get_in(&self, view: &ReadView, key: &[u8], read_seq: SeqNo) -> Result<Option<Vec<u8>>> {
        self.counters.gets.fetch_add(1, Ordering::Relaxed);
        let memtables = std::iter::once(&view.mem).chain(view.imms.iter().rev().map(|f| &f.mem));
        for mem in memtables {
            match mem.get(key, read_seq) {
                Some(Lookup::Value(v)) => return Ok(Some(v)),
                Some(Lookup::Deleted) => return Ok(None),
                None => {}
            }
        }
        let lookup = lookup_key(key, read_seq);
        let levels = &view.version.levels;
        for file in &levels[0] {
            if file.meta.overlaps(key, key)
                && let Some(found) = self.table_get(&file.table, key, &lookup)?
            {
                return Ok(found);
            }
        }
        for files in levels.iter().skip(1) {
            let i = find_file(files, &lookup);
            if let Some(file) = files.get(i)
                && user_key(&file.meta.smallest) <= key
                && let Some(found) = self.table_get(&file.table, key, &lookup)?
            {
                return Ok(found);
            }
        }
        Ok(None)
    }

    pub(crate) fn scan(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
        max_bytes: usize,
    ) -> Result<Vec<KvPair>> {
        let (view, read_seq) = self.latest_view();
        scan_in(&view, start, end, limit, max_bytes, read_seq)
    }

    pub(crate) fn scan_at(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
        max_bytes: usize,
        read_seq: SeqNo,
    ) -> Result<Vec<KvPair>> {
        scan_in(&self.read_view(), start, end, limit, max_bytes, read_seq)
    }

    /// Looks `key` up in one table: `Some(Some(v))` found a value,
    /// `Some(None)` found a tombstone, `None` means the table says nothing
    /// about the key.
    fn table_get(
        &self,
        table: &Arc<Table>,
        key: &[u8],
        lookup: &[u8],
    ) -> Result<Option<Option<Vec<u8>>>> {
        self.counters.table_probes.fetch_add(1, Ordering::Relaxed);
        if !table.may_contain(key) {
            self.counters.bloom_useful.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        }
        let Some((ikey, value)) = table.seek_entry(lookup)? else {
            return Ok(None);
        };
        let parsed = parse_internal_key(&ikey).ok_or_else(|| {
            EngineError::corruption(format!("{}: malformed internal key", table.name()))
        })?;
        if parsed.user_key != key {
            self.counters
                .bloom_false_positives
                .fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        }
        Ok(Some(match parsed.kind {
            ValueKind::Put => Some(value),
            ValueKind::Tombstone => None,
        }))
    }
}

/// Up to `limit` pairs, ending with the one that brings the bytes of the
/// keys and values taken to `max_bytes` or past it.
fn scan_in(
    view: &ReadView,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    limit: usize,
    max_bytes: usize,
    read_seq: SeqNo,
) -> Result<Vec<KvPair>> {
    let mut out = Vec::new();
    let mut bytes = 0usize;
    if limit == 0 {
        return Ok(out);
    }
    let mut it = VisibleIter::new(MergeIterator::new(sources(view)), read_seq);
    match start {
        Bound::Included(k) => it.seek(k)?,
        Bound::Excluded(k) => {
            it.seek(k)?;
            if it.valid() && it.key() == k {
                it.next()?;
            }
        }
        Bound::Unbounded => it.seek_to_first()?,
    }
    while it.valid() && out.len() < limit && bytes < max_bytes {
        let past_end = match end {
            Bound::Included(e) => it.key() > e,
            Bound::Excluded(e) => it.key() >= e,
            Bound::Unbounded => false,
        };
        if past_end {
            break;
        }
        bytes = bytes.saturating_add(it.key().len() + it.value().len());
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next()?;
    }
    Ok(out)
}

/// Every source of a view, newest first.
fn sources(view: &ReadView) -> Vec<Box<dyn InternalIterator>> {
    let mut children: Vec<Box<dyn InternalIterator>> =
        vec![Box::new(MemtableIter::new(Arc::clone(&view.mem)))];
    for frozen in view.imms.iter().rev() {
        children.push(Box::new(MemtableIter::new(Arc::clone(&frozen.mem))));
    }
    for file in &view.version.levels[0] {
        children.push(Box::new(file.table.iter()));
    }
    for files in view.version.levels.iter().skip(1).filter(|f| !f.is_empty()) {
        children.push(Box::new(LevelIter::new(files.clone())));
    }
    children
}
