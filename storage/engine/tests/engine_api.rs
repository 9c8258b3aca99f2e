//! The public API end to end: reads, writes, batches, scans, reopen,
//! compaction, checkpoints and concurrency.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included, Unbounded};
use std::path::Path;
use std::sync::Arc;

use common::{DIR, dump, key, open, tiny_options, value};
use strata_engine::{Engine, EngineError, FaultFs, Options, WalMode, WriteBatch};

// Proves basic put/get/delete semantics and increasing sequence numbers on
// the real file system.
#[test]
fn put_get_delete_round_trip_on_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Engine::open(dir.path(), Options::default()).expect("open");
    let s1 = engine.put(b"a", b"1").expect("put");
    let s2 = engine.put(b"a", b"2").expect("put");
    assert!(s2 > s1);
    assert_eq!(engine.get(b"a").expect("get"), Some(b"2".to_vec()));
    let s3 = engine.delete(b"a").expect("delete");
    assert!(s3 > s2);
    assert_eq!(engine.get(b"a").expect("get"), None);
    assert_eq!(engine.get(b"never").expect("get"), None);
    engine.close().expect("close");
}

// Proves that empty keys and values are stored like any other bytes.
#[test]
fn empty_key_and_value_are_allowed() {
    let fs = FaultFs::new();
    let engine = open(&fs, tiny_options(WalMode::Sync));
    engine.put(b"", b"").expect("put");
    engine.put(b"\0", b"zero").expect("put");
    assert_eq!(engine.get(b"").expect("get"), Some(vec![]));
    engine.flush().expect("flush");
    assert_eq!(engine.get(b"").expect("get"), Some(vec![]));
    assert_eq!(
        dump(&engine),
        vec![(vec![], vec![]), (b"\0".to_vec(), b"zero".to_vec())]
    );
}

// Proves that a byte-bounded scan ends with the pair that reaches its
// bytes, returns one pair even when that pair alone passes them, and still
// honours the key limit.
#[test]
fn scan_bytes_stops_at_the_pair_that_reaches_its_bytes() {
    let fs = FaultFs::new();
    let engine = open(&fs, tiny_options(WalMode::NoSync));
    // Keys of 4 bytes and values of 96: 100 bytes a pair.
    for i in 0..10u32 {
        engine.put(&i.to_be_bytes(), &[b'v'; 96]).expect("put");
    }
    let count = |limit, max_bytes| {
        engine
            .scan_bytes(Unbounded, Unbounded, limit, max_bytes)
            .expect("scan")
            .len()
    };
    assert_eq!(count(100, 300), 3, "300 bytes: exactly three pairs");
    assert_eq!(count(100, 301), 4, "the pair that passes 301 is the last");
    assert_eq!(count(100, 1), 1, "a pair larger than the bound still comes");
    assert_eq!(count(2, 10_000), 2, "the key limit holds");
    assert_eq!(count(100, usize::MAX), 10);
}

// Proves that scans honour every bound kind and the limit.
#[test]
fn scan_respects_bounds_and_limit() {
    let fs = FaultFs::new();
    let engine = open(&fs, tiny_options(WalMode::NoSync));
    for i in 0..10 {
        engine.put(&key(i), &value(i, 0)).expect("put");
    }
    engine.delete(&key(5)).expect("delete");
    let keys = |v: Vec<(Vec<u8>, Vec<u8>)>| v.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    let k = |i| key(i);
    assert_eq!(
        keys(
            engine
                .scan(Included(&k(3)), Excluded(&k(7)), 100)
                .expect("scan")
        ),
        vec![k(3), k(4), k(6)]
    );
    assert_eq!(
        keys(
            engine
                .scan(Excluded(&k(3)), Included(&k(7)), 100)
                .expect("scan")
        ),
        vec![k(4), k(6), k(7)]
    );
    assert_eq!(
        keys(engine.scan(Unbounded, Unbounded, 2).expect("scan")),
        vec![k(0), k(1)]
    );
    assert_eq!(engine.scan(Unbounded, Unbounded, 0).expect("scan"), vec![]);
    assert_eq!(
        engine
            .scan(Included(&k(8)), Excluded(&k(2)), 10)
            .expect("scan"),
        vec![]
    );
}

// Proves that a batch is applied as a unit and returns its last sequence number.
#[test]
fn write_batch_applies_all_operations() {
    let fs = FaultFs::new();
    let engine = open(&fs, tiny_options(WalMode::Sync));
    engine.put(b"gone", b"x").expect("put");
    let mut batch = WriteBatch::default();
    batch.put(b"a", b"1");
    batch.put(b"b", b"2");
    batch.delete(b"gone");
    assert_eq!(batch.len(), 3);
    assert!(batch.approximate_size_bytes() > 0);
    let before = engine.stats().last_seq;
    let seq = engine.write(&batch).expect("write");
    assert_eq!(seq, before + 3);
    assert_eq!(
        dump(&engine),
        vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"b".to_vec(), b"2".to_vec())
        ]
    );
    assert_eq!(engine.write(&WriteBatch::new()).expect("empty batch"), seq);
}

/// Writes overwrites and deletes across many flushes; returns the model.
fn churn(engine: &Engine, rounds: u32) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    for round in 0..rounds {
        for i in 0..200 {
            let i = (i * 7 + round * 13) % 300;
            if (i + round) % 5 == 0 {
                engine.delete(&key(i)).expect("delete");
                model.remove(&key(i));
            } else {
                engine.put(&key(i), &value(i, round)).expect("put");
                model.insert(key(i), value(i, round));
            }
        }
    }
    model
}

// Proves that data in the memtable, in several L0 tables and in compacted L1
// tables all survives a reopen, and that compaction really ran.
#[test]
fn data_survives_reopen_with_memtable_tables_and_compaction() {
    let fs = FaultFs::new();
    let engine = open(&fs, tiny_options(WalMode::Sync));
    let mut model = churn(&engine, 6);
    engine.compact().expect("compact");
    let stats = engine.stats();
    assert!(stats.compaction_count > 0, "{stats:?}");
    assert!(
        stats.compaction_micros > 0 && stats.flush_micros > 0,
        "the time flushes and compactions took is counted: {stats:?}"
    );
    assert!(
        stats.compaction_bytes_read > 0 && stats.compaction_bytes_written > 0,
        "{stats:?}"
    );
    assert_eq!(stats.levels[0].file_count, 0);
    assert!(stats.levels[1].file_count > 1, "{stats:?}");
    // More writes land in fresh L0 tables and the memtable.
    for i in 0..40 {
        engine.put(&key(i), b"late").expect("put");
        model.insert(key(i), b"late".to_vec());
    }
    let expected: Vec<_> = model.clone().into_iter().collect();
    assert_eq!(dump(&engine), expected);
    engine.close().expect("close");

    let engine = open(&fs, tiny_options(WalMode::Sync));
    assert_eq!(dump(&engine), expected);
    for (k, v) in &model {
        assert_eq!(engine.get(k).expect("get").as_ref(), Some(v));
    }
    assert_eq!(
        engine.get(&key(5)).expect("get"),
        model.get(&key(5)).cloned()
    );
}

// Proves that compaction at the bottom level drops tombstones and shadowed
// versions, so deleted data stops taking space.
#[test]
fn compaction_drops_shadowed_versions_and_tombstones() {
    let fs = FaultFs::new();
    let engine = open(&fs, tiny_options(WalMode::NoSync));
    for round in 0..5 {
        for i in 0..100 {
            engine.put(&key(i), &value(i, round)).expect("put");
        }
    }
    engine.compact().expect("compact");
    let full = engine.stats().levels[1].size_bytes;
    for i in 0..100 {
        engine.delete(&key(i)).expect("delete");
    }
    engine.compact().expect("compact");
    let stats = engine.stats();
    assert_eq!(dump(&engine), vec![]);
    assert!(stats.levels[1].size_bytes < full / 4, "{full} -> {stats:?}");
}

// Proves that a checkpoint is an independent, openable copy as of the call.
#[test]
fn checkpoint_opens_with_data_as_of_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        memtable_size_bytes: 4096,
        l0_compaction_trigger: 2,
        ..Options::default()
    };
    let engine = Engine::open(dir.path().join("db"), opts.clone()).expect("open");
    for i in 0..300 {
        engine.put(&key(i), &value(i, 0)).expect("put");
    }
    engine.delete(&key(7)).expect("delete");
    let expected = dump(&engine);
    let target = dir.path().join("checkpoint");
    engine.checkpoint(&target).expect("checkpoint");
    engine.put(b"after", b"checkpoint").expect("put");
    for i in 0..300 {
        engine.delete(&key(i)).expect("delete");
    }
    engine.compact().expect("compact");
    assert!(matches!(
        engine.checkpoint(&target),
        Err(EngineError::InvalidArgument(_))
    ));

    let copy = Engine::open(&target, opts).expect("checkpoint opens");
    assert_eq!(dump(&copy), expected);
    copy.put(b"independent", b"yes")
        .expect("checkpoint is writable");
    assert_eq!(engine.get(b"independent").expect("get"), None);
}

// Proves that a directory cannot be opened twice at once, and can after close.
#[test]
fn second_open_of_same_directory_fails_until_closed() {
    let fs = FaultFs::new();
    let engine = open(&fs, tiny_options(WalMode::Sync));
    let second = Engine::open_with_fs(
        Arc::new(fs.clone()),
        Path::new(DIR),
        tiny_options(WalMode::Sync),
    );
    assert!(second.is_err());
    engine.close().expect("close");
    open(&fs, tiny_options(WalMode::Sync));
}

// Proves that invalid options are rejected up front.
#[test]
fn invalid_options_are_rejected() {
    let fs = FaultFs::new();
    let opts = Options {
        memtable_size_bytes: 0,
        ..Options::default()
    };
    let result = Engine::open_with_fs(Arc::new(fs), Path::new(DIR), opts);
    assert!(matches!(result, Err(EngineError::InvalidArgument(_))));
}

// Proves that concurrent synced writers lose nothing, and that readers never
// observe half of a batch (two keys written together always agree).
#[test]
fn concurrent_writers_and_readers_see_whole_batches() {
    let fs = FaultFs::new();
    let engine = Arc::new(open(&fs, tiny_options(WalMode::Sync)));
    let writers: Vec<_> = (0..4u32)
        .map(|t| {
            let engine = Arc::clone(&engine);
            std::thread::spawn(move || {
                for i in 0..150u32 {
                    let mut batch = WriteBatch::new();
                    let v = format!("{t}-{i}");
                    batch.put(format!("left{t}").as_bytes(), v.as_bytes());
                    batch.put(format!("right{t}").as_bytes(), v.as_bytes());
                    batch.put(&key(t * 1000 + i), v.as_bytes());
                    engine.write(&batch).expect("write");
                }
            })
        })
        .collect();
    let reader = {
        let engine = Arc::clone(&engine);
        std::thread::spawn(move || {
            for _ in 0..200 {
                let all = dump(&engine);
                let get = |k: String| {
                    all.iter()
                        .find(|(key, _)| key == k.as_bytes())
                        .map(|(_, v)| v.clone())
                };
                for t in 0..4 {
                    assert_eq!(
                        get(format!("left{t}")),
                        get(format!("right{t}")),
                        "half a batch is visible"
                    );
                }
            }
        })
    };
    for w in writers {
        w.join().expect("writer");
    }
    reader.join().expect("reader");
    for t in 0..4 {
        for i in 0..150 {
            assert!(engine.get(&key(t * 1000 + i)).expect("get").is_some());
        }
    }
    let stats = engine.stats();
    assert!(stats.flush_count > 0, "{stats:?}");
}

// Proves at compile time that the engine can be shared across threads.
#[test]
fn engine_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Engine>();
    assert_send_sync::<Arc<Engine>>();
}
