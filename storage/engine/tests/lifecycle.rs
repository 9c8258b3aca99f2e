//! Read points, leveled compaction, events and stats,
//! through the public API on the in-memory file system.

mod common;

use std::ops::Bound::Unbounded;

use common::{dump, key, open, tiny_options, value};
use strata_engine::{EngineEvent, FaultFs, WalMode};

// Proves that a read point keeps seeing overwritten and deleted keys after
// the newer versions are flushed and compacted, and that dropping it lets
// compaction reclaim them.
#[test]
fn read_point_sees_old_versions_through_flush_and_compaction() {
    let fs = FaultFs::new();
    // Everything stays in L0 and L1, so a manual compaction rewrites it all.
    let opts = strata_engine::Options {
        max_bytes_for_level_base: 1 << 30,
        ..tiny_options(WalMode::NoSync)
    };
    let engine = open(&fs, opts);
    for i in 0..200 {
        engine.put(&key(i), &value(i, 0)).expect("put");
    }
    let snap = engine.read_point();
    for i in 0..200 {
        if i % 2 == 0 {
            engine.delete(&key(i)).expect("delete");
        } else {
            engine.put(&key(i), &value(i, 1)).expect("put");
        }
    }
    engine.compact().expect("compact");
    for i in 0..200 {
        assert_eq!(
            snap.get(&key(i)).expect("get"),
            Some(value(i, 0)),
            "key {i}"
        );
        let now = (i % 2 == 1).then(|| value(i, 1));
        assert_eq!(engine.get(&key(i)).expect("get"), now, "key {i}");
    }
    assert_eq!(
        snap.scan(Unbounded, Unbounded, usize::MAX)
            .expect("scan")
            .len(),
        200
    );
    assert_eq!(dump(&engine).len(), 100);
    let with_read_point: u64 = engine.stats().levels.iter().map(|l| l.size_bytes).sum();
    drop(snap);
    // A new L0 table spanning the whole key range pulls every L1 table
    // into the next compaction.
    engine.put(&key(1), &value(1, 1)).expect("put");
    engine.put(&key(199), &value(199, 1)).expect("put");
    engine.compact().expect("compact");
    let without: u64 = engine.stats().levels.iter().map(|l| l.size_bytes).sum();
    assert!(
        without < with_read_point,
        "old versions are reclaimed once no read point needs them: {without} >= {with_read_point}"
    );
}

// Proves that data flows below L1 once L1 outgrows its target, that every
// level from L1 down stays within reach of every key, and that the stats
// report the work done.
#[test]
fn leveled_compaction_fills_deeper_levels_and_keeps_every_key() {
    let fs = FaultFs::new();
    let engine = open(&fs, tiny_options(WalMode::NoSync));
    let events = engine.subscribe(10_000);
    for round in 0..3 {
        for i in 0..1500 {
            engine.put(&key(i), &value(i, round)).expect("put");
        }
    }
    engine.flush().expect("flush");
    // Let the background thread settle the levels.
    let mut deep = false;
    for _ in 0..200 {
        let stats = engine.stats();
        deep = stats.levels.iter().skip(2).any(|l| l.file_count > 0);
        if deep {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(deep, "no table reached L2: {:?}", engine.stats().levels);
    for i in 0..1500 {
        assert_eq!(
            engine.get(&key(i)).expect("get"),
            Some(value(i, 2)),
            "key {i}"
        );
    }
    let stats = engine.stats();
    assert!(stats.write_amplification() > 1.0, "{stats:?}");
    assert!(stats.compaction_bytes_written > 0);
    assert!(
        stats.gets == 1500 && stats.table_probes >= 1500,
        "{stats:?}"
    );
    let seen: Vec<EngineEvent> = events.try_iter().collect();
    assert!(
        seen.iter()
            .any(|e| matches!(e, EngineEvent::FlushFinished { bytes_out, .. } if *bytes_out > 0))
    );
    assert!(seen.iter().any(|e| matches!(
        e,
        EngineEvent::CompactionFinished { level, files_in, bytes_out, .. }
            if *level >= 1 && *files_in >= 1 && *bytes_out > 0
    )));
    assert!(
        seen.iter()
            .any(|e| matches!(e, EngineEvent::CompactionStarted { level: 0, .. }))
    );
}

// Proves that the bloom filter answers most lookups of absent keys.
#[test]
fn bloom_filter_skips_tables_for_absent_keys() {
    let fs = FaultFs::new();
    let engine = open(&fs, tiny_options(WalMode::NoSync));
    for i in 0..500 {
        engine.put(&key(i), &value(i, 0)).expect("put");
    }
    engine.flush().expect("flush");
    for i in 0..500 {
        let mut absent = key(i);
        absent.push(b'~');
        assert_eq!(engine.get(&absent).expect("get"), None);
    }
    let stats = engine.stats();
    assert!(stats.bloom_useful_ratio() > 0.8, "{stats:?}");
}

// Proves that prefix scans return exactly the keys with the prefix.
#[test]
fn scan_prefix_returns_only_matching_keys() {
    let fs = FaultFs::new();
    let engine = open(&fs, tiny_options(WalMode::NoSync));
    for k in [&b"a"[..], b"ab", b"ab\xff", b"abc", b"ac", b"b"] {
        engine.put(k, k).expect("put");
    }
    engine.flush().expect("flush");
    engine.put(b"abd", b"abd").expect("put");
    let keys: Vec<Vec<u8>> = engine
        .scan_prefix(b"ab", 10)
        .expect("scan")
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        keys,
        vec![
            b"ab".to_vec(),
            b"abc".to_vec(),
            b"abd".to_vec(),
            b"ab\xff".to_vec()
        ]
    );
    assert_eq!(engine.scan_prefix(b"ab", 2).expect("scan").len(), 2);
}
