//! Counters and sizes reported by [`crate::Engine::stats`].

use crate::key::SeqNo;

/// A snapshot of the engine's shape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// One entry per level, L0 first.
    pub levels: Vec<LevelStats>,
    /// Arena bytes used by the active memtable.
    pub memtable_bytes: u64,
    /// Frozen memtables waiting to be flushed.
    pub immutable_memtables: usize,
    /// Arena bytes used by frozen memtables.
    pub immutable_memtable_bytes: u64,
    /// Memtable flushes since open.
    pub flush_count: u64,
    /// Compactions since open.
    pub compaction_count: u64,
    /// Highest sequence number visible to readers.
    pub last_seq: SeqNo,
}

/// Files in one level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Level number (0 = freshly flushed tables).
    pub level: usize,
    /// Number of table files.
    pub file_count: usize,
    /// Total size of those files.
    pub size_bytes: u64,
}
