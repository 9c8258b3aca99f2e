//! Engine configuration.

/// How the engine's own write-ahead log is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalMode {
    /// Every write is fsynced before it returns; concurrent writers share
    /// fsyncs (group commit).
    Sync,
    /// Writes reach the OS before they return; the log is fsynced at flush,
    /// close and [`crate::Engine::sync_wal`].
    NoSync,
    /// No log: the memtable is lost on crash. For callers that keep their own
    /// log (the raft layer).
    Disabled,
}

/// Tuning knobs. Construct with `Options { field: x, ..Options::default() }`.
#[derive(Clone, Debug)]
pub struct Options {
    /// Size at which the active memtable is frozen and flushed.
    pub memtable_size_bytes: usize,
    /// Write-ahead log mode.
    pub wal: WalMode,
    /// Target uncompressed size of an SSTable data block.
    pub block_size_bytes: usize,
    /// Bloom filter bits per key; 0 disables the filter.
    pub bloom_bits_per_key: u32,
    /// Number of L0 tables above which L0 is compacted into L1.
    pub l0_compaction_trigger: usize,
    /// Size at which a compaction output table is cut.
    pub target_file_size_bytes: u64,
    /// Frozen memtables allowed to wait for flushing before writes stall.
    pub max_immutable_memtables: usize,
    /// Keys between full (not prefix-compressed) keys in a block.
    pub block_restart_interval: usize,
    /// L0 table count at which each write is delayed a little (1 ms), so
    /// that compaction can catch up before writes must stop.
    pub l0_slowdown_trigger: usize,
    /// L0 table count at which writes wait for compaction.
    pub l0_stop_trigger: usize,
    /// Target size of L1; L2 and deeper may each hold
    /// `level_size_multiplier` times more than the level above.
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels from L1 down.
    pub level_size_multiplier: u64,
    /// Average rate at which compactions may write, in bytes per second;
    /// 0 means unlimited.
    pub compaction_rate_limit_bytes_per_sec: u64,
    /// Bytes of data blocks kept in the shared block cache; 0 disables it.
    pub block_cache_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            memtable_size_bytes: 64 << 20,
            wal: WalMode::Sync,
            block_size_bytes: 4096,
            bloom_bits_per_key: 10,
            l0_compaction_trigger: 4,
            target_file_size_bytes: 8 << 20,
            max_immutable_memtables: 2,
            block_restart_interval: 16,
            l0_slowdown_trigger: 8,
            l0_stop_trigger: 12,
            max_bytes_for_level_base: 64 << 20,
            level_size_multiplier: 10,
            compaction_rate_limit_bytes_per_sec: 256 << 20,
            block_cache_bytes: 32 << 20,
        }
    }
}

impl Options {
    /// Rejects settings the engine cannot work with.
    pub(crate) fn validate(&self) -> crate::Result<()> {
        let fail = |m: &str| Err(crate::EngineError::InvalidArgument(m.to_string()));
        if self.memtable_size_bytes == 0 {
            return fail("memtable_size_bytes must be positive");
        }
        if self.block_size_bytes == 0 {
            return fail("block_size_bytes must be positive");
        }
        if self.block_restart_interval == 0 {
            return fail("block_restart_interval must be positive");
        }
        if self.l0_compaction_trigger == 0 {
            return fail("l0_compaction_trigger must be positive");
        }
        if self.max_immutable_memtables == 0 {
            return fail("max_immutable_memtables must be positive");
        }
        if self.l0_slowdown_trigger <= self.l0_compaction_trigger
            || self.l0_stop_trigger < self.l0_slowdown_trigger
        {
            return fail("need l0_compaction_trigger < l0_slowdown_trigger <= l0_stop_trigger");
        }
        if self.max_bytes_for_level_base == 0 || self.level_size_multiplier < 2 {
            return fail("need max_bytes_for_level_base > 0 and level_size_multiplier >= 2");
        }
        if self.target_file_size_bytes == 0 {
            return fail("target_file_size_bytes must be positive");
        }
        Ok(())
    }

    /// Arena block size for memtables: small memtables get small blocks so
    /// that tests with tiny memtables do not reserve a MiB each.
    pub(crate) fn arena_block_size_bytes(&self) -> usize {
        (self.memtable_size_bytes / 4).clamp(4096, strata_arena::DEFAULT_BLOCK_SIZE_BYTES)
    }
}

impl Options {
    /// The level limits compaction picking works with.
    pub(crate) fn level_limits(&self) -> crate::compaction::LevelLimits {
        crate::compaction::LevelLimits {
            l0_trigger: self.l0_compaction_trigger,
            level_base_bytes: self.max_bytes_for_level_base,
            multiplier: self.level_size_multiplier,
        }
    }
}
