//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use strata_engine::{Engine, FaultFs, Options, WalMode};

pub const DIR: &str = "/db";

/// Options that make flushes and compactions happen after a few writes.
pub fn tiny_options(wal: WalMode) -> Options {
    Options {
        memtable_size_bytes: 2048,
        wal,
        block_size_bytes: 256,
        bloom_bits_per_key: 10,
        l0_compaction_trigger: 2,
        target_file_size_bytes: 2048,
        max_immutable_memtables: 2,
        block_restart_interval: 4,
        l0_slowdown_trigger: 6,
        l0_stop_trigger: 10,
        max_bytes_for_level_base: 8192,
        level_size_multiplier: 4,
        compaction_rate_limit_bytes_per_sec: 0,
        block_cache_bytes: 4096,
    }
}

pub fn open(fs: &FaultFs, opts: Options) -> Engine {
    Engine::open_with_fs(Arc::new(fs.clone()), Path::new(DIR), opts).expect("engine opens")
}

pub fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

pub fn value(i: u32, version: u32) -> Vec<u8> {
    format!("value-{i}-{version}-{}", "v".repeat((i % 13) as usize)).into_bytes()
}

/// Every key-value pair, via a full scan.
pub fn dump(engine: &Engine) -> Vec<(Vec<u8>, Vec<u8>)> {
    use std::ops::Bound::Unbounded;
    engine.scan(Unbounded, Unbounded, usize::MAX).expect("scan")
}
