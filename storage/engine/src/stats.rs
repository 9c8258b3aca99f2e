//! Counters and sizes reported by [`crate::Engine::stats`].

use std::sync::atomic::{AtomicU64, Ordering};

use crate::key::SeqNo;

/// A picture of the engine's shape and work since open.
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
    /// Key and value bytes written by callers since open.
    pub user_bytes_written: u64,
    /// Bytes of tables written by flushes since open.
    pub flush_bytes_written: u64,
    /// Bytes of input tables read by compactions since open.
    pub compaction_bytes_read: u64,
    /// Bytes of tables written by compactions since open.
    pub compaction_bytes_written: u64,
    /// Point lookups since open.
    pub gets: u64,
    /// Tables consulted by point lookups (each probe asks the bloom filter).
    pub table_probes: u64,
    /// Probes the bloom filter answered "absent" without reading a block.
    pub bloom_useful: u64,
    /// Probes the bloom filter passed but the table did not hold the key.
    pub bloom_false_positives: u64,
    /// Time spent in flushes since open, in microseconds.
    pub flush_micros: u64,
    /// Time spent in compactions since open, in microseconds.
    pub compaction_micros: u64,
    /// Data blocks found in the block cache.
    pub block_cache_hits: u64,
    /// Data blocks read from a table because the cache lacked them (0
    /// when the cache is off).
    pub block_cache_misses: u64,
    /// Total time writers waited on a full stop, in microseconds.
    pub stall_micros: u64,
    /// Total time writers were slowed down, in microseconds.
    pub slowdown_micros: u64,
    /// Events dropped because a subscriber's channel was full.
    pub events_dropped: u64,
}

impl EngineStats {
    /// Bytes written to disk (flushes + compactions) per byte a caller
    /// wrote; the WAL is not counted. 0 before anything was flushed.
    pub fn write_amplification(&self) -> f64 {
        ratio(
            self.flush_bytes_written + self.compaction_bytes_written,
            self.user_bytes_written,
        )
    }

    /// Tables consulted per point lookup (memtables not counted).
    pub fn read_amplification(&self) -> f64 {
        ratio(self.table_probes, self.gets)
    }

    /// Total table bytes over the bytes of the deepest non-empty level, an
    /// estimate of live data once compaction has settled (as RocksDB does).
    pub fn space_amplification(&self) -> f64 {
        let total: u64 = self.levels.iter().map(|l| l.size_bytes).sum();
        let last = self
            .levels
            .iter()
            .rev()
            .find(|l| l.size_bytes > 0)
            .map_or(0, |l| l.size_bytes);
        ratio(total, last)
    }

    /// Share of table probes the bloom filter answered without a block read.
    pub fn bloom_useful_ratio(&self) -> f64 {
        ratio(self.bloom_useful, self.table_probes)
    }
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
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

/// Live counters behind [`EngineStats`].
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) user_bytes_written: AtomicU64,
    pub(crate) flush_bytes_written: AtomicU64,
    pub(crate) compaction_bytes_read: AtomicU64,
    pub(crate) compaction_bytes_written: AtomicU64,
    pub(crate) flush_micros: AtomicU64,
    pub(crate) compaction_micros: AtomicU64,
    pub(crate) gets: AtomicU64,
    pub(crate) table_probes: AtomicU64,
    pub(crate) bloom_useful: AtomicU64,
    pub(crate) bloom_false_positives: AtomicU64,
    pub(crate) stall_micros: AtomicU64,
    pub(crate) slowdown_micros: AtomicU64,
}

impl Counters {
    /// Copies the counters into `stats`.
    pub(crate) fn fill(&self, stats: &mut EngineStats) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        stats.user_bytes_written = get(&self.user_bytes_written);
        stats.flush_bytes_written = get(&self.flush_bytes_written);
        stats.compaction_bytes_read = get(&self.compaction_bytes_read);
        stats.compaction_bytes_written = get(&self.compaction_bytes_written);
        stats.flush_micros = get(&self.flush_micros);
        stats.compaction_micros = get(&self.compaction_micros);
        stats.gets = get(&self.gets);
        stats.table_probes = get(&self.table_probes);
        stats.bloom_useful = get(&self.bloom_useful);
        stats.bloom_false_positives = get(&self.bloom_false_positives);
        stats.stall_micros = get(&self.stall_micros);
        stats.slowdown_micros = get(&self.slowdown_micros);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves the amplification formulas, including the empty case.
    #[test]
    fn amplification_ratios() {
        let mut s = EngineStats::default();
        assert_eq!(s.write_amplification(), 0.0);
        s.user_bytes_written = 100;
        s.flush_bytes_written = 120;
        s.compaction_bytes_written = 180;
        assert_eq!(s.write_amplification(), 3.0);
        s.levels = vec![
            LevelStats {
                level: 0,
                file_count: 1,
                size_bytes: 10,
            },
            LevelStats {
                level: 1,
                file_count: 1,
                size_bytes: 40,
            },
            LevelStats {
                level: 2,
                file_count: 0,
                size_bytes: 0,
            },
        ];
        assert_eq!(s.space_amplification(), 50.0 / 40.0);
        s.gets = 4;
        s.table_probes = 6;
        s.bloom_useful = 3;
        assert_eq!(s.read_amplification(), 1.5);
        assert_eq!(s.bloom_useful_ratio(), 0.5);
    }
}
