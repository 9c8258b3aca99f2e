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

// Proves that a compaction that takes a while (rate limited here to 128
// KiB/s over four tables of 64 KiB: about two seconds) does not hold up
// flushes: the memtables filled meanwhile are flushed while it runs, and
// a writer with room for one frozen memtable waits at most for a flush
// (a millisecond or so here), never for the compaction. With one thread
// for both, each flush waited for the compaction and the writer stopped
// until it ended.
#[test]
fn a_long_compaction_does_not_hold_up_flushes() {
    use std::sync::mpsc::RecvTimeoutError;
    use std::time::{Duration, Instant};

    let memtable = 64 << 10;
    let opts = strata_engine::Options {
        memtable_size_bytes: memtable,
        l0_compaction_trigger: 4,
        max_immutable_memtables: 1,
        l0_slowdown_trigger: 100,
        l0_stop_trigger: 100,
        max_bytes_for_level_base: 64 << 20,
        compaction_rate_limit_bytes_per_sec: 128 << 10,
        ..tiny_options(WalMode::Disabled)
    };
    let fs = FaultFs::new();
    let engine = open(&fs, opts);
    let events = engine.subscribe(1 << 16);
    let value = vec![b'v'; 1024];
    let mut next = 0u32;
    let mut write_memtables = |n: usize| {
        for _ in 0..n * memtable / value.len() {
            engine.put(&key(next), &value).unwrap();
            next += 1;
        }
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let next_event = || loop {
        match events.recv_timeout(Duration::from_millis(100)) {
            Ok(event) => return event,
            Err(RecvTimeoutError::Timeout) => {
                assert!(
                    Instant::now() < deadline,
                    "no compaction ran and ended in time"
                )
            }
            Err(RecvTimeoutError::Disconnected) => panic!("the engine stopped"),
        }
    };
    write_memtables(5);
    while !matches!(
        next_event(),
        EngineEvent::CompactionStarted { level: 0, .. }
    ) {}
    // Four memtables more while the compaction runs.
    write_memtables(4);
    let (mut flushed, mut stopped) = (0, Vec::new());
    let compaction = loop {
        match next_event() {
            EngineEvent::FlushFinished { .. } => flushed += 1,
            EngineEvent::WriteStalled {
                stopped: true,
                duration,
            } => stopped.push(duration),
            EngineEvent::CompactionFinished {
                level: 0, duration, ..
            } => break duration,
            _ => {}
        }
    };
    assert!(
        compaction > Duration::from_secs(1),
        "the compaction took {compaction:?}: too short to show anything"
    );
    assert!(
        stopped.iter().all(|d| *d < Duration::from_millis(500)),
        "a writer stopped for {stopped:?} while a compaction ran for {compaction:?}"
    );
    assert!(
        flushed >= 3,
        "only {flushed} memtables were flushed while the compaction ran"
    );
}

// Proves that the engine says it is behind once L0 reaches the slowdown
// trigger while a compaction is slow to drain it (or, on the way, while
// frozen memtables fill their queue), says why, and no longer once the
// background work has caught up.
#[test]
fn the_engine_says_when_its_background_work_is_behind() {
    use std::time::{Duration, Instant};

    let memtable = 16 << 10;
    let opts = strata_engine::Options {
        memtable_size_bytes: memtable,
        l0_compaction_trigger: 2,
        l0_slowdown_trigger: 4,
        l0_stop_trigger: 100,
        max_bytes_for_level_base: 64 << 20,
        compaction_rate_limit_bytes_per_sec: 32 << 10,
        ..tiny_options(WalMode::Disabled)
    };
    let fs = FaultFs::new();
    let engine = open(&fs, opts);
    assert_eq!(
        engine.background_behind(),
        None,
        "an empty engine is not behind"
    );
    let value = vec![b'v'; 1024];
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut next = 0u32;
    let why = loop {
        if let Some(why) = engine.background_behind()
            && why.contains("L0 holds")
        {
            break why;
        }
        assert!(Instant::now() < deadline, "L0 never reached the trigger");
        engine.put(&key(next), &value).unwrap();
        next += 1;
    };
    assert!(why.contains("slow down at 4"), "{why}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while engine.background_behind().is_some() {
        assert!(
            Instant::now() < deadline,
            "still behind after 60 s without writes"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
