//! One million keys through several flushes and compactions on the real
//! file system, every key checked afterwards. Optimized builds only (about
//! 10 s): `just test-engine-long`; ignored in debug builds.

use std::ops::Bound::Unbounded;

use strata_engine::{Engine, EngineEvent, Options, WalMode};

const KEYS: u64 = 1_000_000;

fn key(i: u64) -> [u8; 16] {
    // A scrambled order, so writes land all over the key space.
    let k = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&k.to_be_bytes());
    out[8..].copy_from_slice(&i.to_be_bytes());
    out
}

fn value(i: u64, round: u64) -> Vec<u8> {
    let mut v = format!("{i:020}-{round}-").into_bytes();
    v.resize(100, b'v');
    v
}

// Proves that a million keys written in random order, a tenth of them
// overwritten and a tenth deleted, survive flushes, leveled compactions
// into L2 and a reopen, each with its newest value.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "slow unoptimized; run `just test-engine-long`"
)]
fn million_keys_survive_compactions_and_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        wal: WalMode::NoSync,
        memtable_size_bytes: 4 << 20,
        target_file_size_bytes: 2 << 20,
        max_bytes_for_level_base: 16 << 20,
        compaction_rate_limit_bytes_per_sec: 0,
        ..Options::default()
    };
    let engine = Engine::open(dir.path(), opts.clone()).expect("open");
    let events = engine.subscribe(100_000);
    for i in 0..KEYS {
        engine.put(&key(i), &value(i, 0)).expect("put");
    }
    for i in (0..KEYS).step_by(10) {
        engine.put(&key(i), &value(i, 1)).expect("overwrite");
        engine.delete(&key(i + 5)).expect("delete");
    }
    engine.flush().expect("flush");
    let stats = engine.stats();
    let compactions = events
        .try_iter()
        .filter(|e| matches!(e, EngineEvent::CompactionFinished { .. }))
        .count();
    assert!(
        compactions >= 3,
        "only {compactions} compactions: {stats:?}"
    );
    assert!(
        stats.levels[2..].iter().any(|l| l.file_count > 0),
        "nothing below L1: {:?}",
        stats.levels
    );
    engine.close().expect("close");

    let engine = Engine::open(dir.path(), opts).expect("reopen");
    for i in 0..KEYS {
        let want = match i % 10 {
            0 => Some(value(i, 1)),
            5 => None,
            _ => Some(value(i, 0)),
        };
        assert_eq!(engine.get(&key(i)).expect("get"), want, "key {i}");
    }
    let all = engine.scan(Unbounded, Unbounded, usize::MAX).expect("scan");
    assert_eq!(all.len() as u64, KEYS - KEYS / 10);
    assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "scan is sorted");
}
