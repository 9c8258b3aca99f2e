//! The memtable: an arena skiplist of internal keys.

use std::sync::Arc;

use strata_arena::{KeyComparator, SkipList, SkipListWriter};

use crate::batch::BatchOp;
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

    /// The newest version of `user_key` with `seq <= read point`.
    pub(crate) fn get(&self, user_key: &[u8], read_seq: SeqNo) -> Option<Lookup> {
        let mut it = self.list.iter();
        it.seek(&lookup_key(user_key, read_seq));
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

    /// Inserts a batch's operations, the i-th as version `first + i`.
    /// They go in in key order, each search starting from where the
    /// previous one ended: neighbouring keys share most of their path, so
    /// a batch costs far fewer cache misses than one full search per key.
    /// Visibility is by sequence number, so the order of inserts is not
    /// observable.
    pub(crate) fn add_batch<'a>(&mut self, first: SeqNo, ops: impl Iterator<Item = BatchOp<'a>>) {
        self.scratch.clear();
        let mut items: Vec<(usize, usize, &'a [u8])> = Vec::with_capacity(ops.size_hint().0);
        for (i, op) in ops.enumerate() {
            let start = self.scratch.len();
            encode_internal_key(&mut self.scratch, op.key, first + i as u64, op.kind);
            items.push((start, self.scratch.len(), op.value));
        }
        let keys = &self.scratch;
        items.sort_unstable_by(|a, b| {
            InternalKeyComparator.compare(&keys[a.0..a.1], &keys[b.0..b.1])
        });
        for &(start, end, value) in &items {
            let inserted = self.writer.insert_near_last(&keys[start..end], value);
            assert!(
                inserted,
                "a sequence number of the batch from {first} was used twice"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that lookups respect the read point and that tombstones shadow values.
    #[test]
    fn get_returns_newest_version_visible_at_read_point() {
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

    // Proves that a batch inserted in key order keeps each operation's own
    // sequence number: the later of two writes to one key wins, whatever
    // the sort did, and every version stays reachable by read point.
    #[test]
    fn batch_versions_keep_their_sequence_numbers() {
        let mut w = MemtableWriter::new(1, 4096);
        w.add(1, ValueKind::Put, b"m", b"old");
        let put = |key: &'static [u8], value: &'static [u8]| BatchOp {
            kind: ValueKind::Put,
            key,
            value,
        };
        let ops = [
            put(b"z", b"z2"),
            put(b"a", b"a2"),
            put(b"m", b"m2"),
            BatchOp {
                kind: ValueKind::Tombstone,
                key: b"a",
                value: b"",
            },
            put(b"m", b"m3"),
        ];
        w.add_batch(2, ops.into_iter());
        let m = w.memtable();
        assert_eq!(m.get(b"z", 2), Some(Lookup::Value(b"z2".to_vec())));
        assert_eq!(m.get(b"a", 3), Some(Lookup::Value(b"a2".to_vec())));
        assert_eq!(m.get(b"a", 5), Some(Lookup::Deleted));
        assert_eq!(m.get(b"m", 1), Some(Lookup::Value(b"old".to_vec())));
        assert_eq!(m.get(b"m", 4), Some(Lookup::Value(b"m2".to_vec())));
        assert_eq!(m.get(b"m", 6), Some(Lookup::Value(b"m3".to_vec())));
        let mut keys = Vec::new();
        let mut it = m.iter();
        it.seek_to_first();
        while it.valid() {
            let parsed = parse_internal_key(it.key()).unwrap();
            keys.push((parsed.user_key.to_vec(), parsed.seq));
            it.next();
        }
        let want: Vec<(Vec<u8>, SeqNo)> = [
            (b"a", 5),
            (b"a", 3),
            (b"m", 6),
            (b"m", 4),
            (b"m", 1),
            (b"z", 2),
        ]
        .iter()
        .map(|(k, s)| (k.to_vec(), *s))
        .collect();
        assert_eq!(keys, want);
    }
}
