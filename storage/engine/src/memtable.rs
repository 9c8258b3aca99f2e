//! The memtable: an arena skiplist of internal keys.

use std::sync::Arc;

use strata_arena::{SkipList, SkipListWriter};

use crate::key::{
    InternalKeyComparator, SeqNo, ValueKind, encode_internal_key, lookup_key, parse_internal_key,
};

/// The read side of a memtable, shared by readers and frozen-memtable queues.
pub(crate) struct Memtable {
    list: SkipList<InternalKeyComparator>,
    /// WAL segment that holds this memtable's writes.
    wal_number: u64,
}

/// What a point lookup found for a user key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    Value(Vec<u8>),
    Deleted,
}

impl Memtable {
    pub(crate) fn wal_number(&self) -> u64 {
        self.wal_number
    }

    pub(crate) fn memory_usage_bytes(&self) -> usize {
        self.list.memory_usage_bytes()
    }

    /// The newest version of `user_key` with `seq <= snapshot`.
    pub(crate) fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Option<Lookup> {
        let mut it = self.list.iter();
        it.seek(&lookup_key(user_key, snapshot));
        if !it.valid() {
            return None;
        }
        let parsed = parse_internal_key(it.key()).expect("memtable keys are built by the engine");
        if parsed.user_key != user_key {
            return None;
        }
        Some(match parsed.kind {
            ValueKind::Put => Lookup::Value(it.value().to_vec()),
            ValueKind::Tombstone => Lookup::Deleted,
        })
    }

    pub(crate) fn iter(&self) -> strata_arena::Iter<InternalKeyComparator> {
        self.list.iter()
    }
}

/// The single write handle of the active memtable.
pub(crate) struct MemtableWriter {
    writer: SkipListWriter<InternalKeyComparator>,
    memtable: Arc<Memtable>,
    scratch: Vec<u8>,
}

impl MemtableWriter {
    pub(crate) fn new(wal_number: u64, arena_block_size_bytes: usize) -> MemtableWriter {
        let writer = SkipListWriter::new(InternalKeyComparator, arena_block_size_bytes);
        let memtable = Arc::new(Memtable {
            list: writer.reader(),
            wal_number,
        });
        MemtableWriter {
            writer,
            memtable,
            scratch: Vec::new(),
        }
    }

    pub(crate) fn memtable(&self) -> &Arc<Memtable> {
        &self.memtable
    }

    pub(crate) fn memory_usage_bytes(&self) -> usize {
        self.writer.memory_usage_bytes()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.writer.is_empty()
    }

    /// Inserts one version. Sequence numbers are unique, so a duplicate
    /// internal key means the engine assigned a sequence number twice.
    pub(crate) fn add(&mut self, seq: SeqNo, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        self.scratch.clear();
        encode_internal_key(&mut self.scratch, user_key, seq, kind);
        let inserted = self.writer.insert(&self.scratch, value);
        assert!(inserted, "sequence number {seq} was used twice");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that lookups respect the snapshot and that tombstones shadow values.
    #[test]
    fn get_returns_newest_version_visible_at_snapshot() {
        let mut w = MemtableWriter::new(1, 4096);
        w.add(1, ValueKind::Put, b"k", b"v1");
        w.add(2, ValueKind::Tombstone, b"k", b"");
        w.add(3, ValueKind::Put, b"k", b"v3");
        w.add(4, ValueKind::Put, b"k2", b"x");
        let m = w.memtable();
        assert_eq!(m.get(b"k", 1), Some(Lookup::Value(b"v1".to_vec())));
        assert_eq!(m.get(b"k", 2), Some(Lookup::Deleted));
        assert_eq!(m.get(b"k", 10), Some(Lookup::Value(b"v3".to_vec())));
        assert_eq!(m.get(b"k", 0), None);
        assert_eq!(m.get(b"j", 10), None);
        assert_eq!(m.get(b"k1", 10), None);
    }
}
