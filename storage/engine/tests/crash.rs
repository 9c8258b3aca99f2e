//! Crash tests on the fault-injecting file system: what survives power loss.

mod common;

use std::path::{Path, PathBuf};

use common::{DIR, dump, key, open, tiny_options, value};
use strata_engine::{EngineError, FaultFs, FileSystem, Options, WalMode, WriteBatch};

/// A batch that writes `n` keys, all tagged with batch number `b`.
fn batch(b: u32, n: u32) -> WriteBatch {
    let mut batch = WriteBatch::new();
    for i in 0..n {
        batch.put(&key(b * 100 + i), &value(b, 0));
    }
    batch
}

/// Which batches are present in full; panics if any batch is partial.
fn surviving_batches(engine: &strata_engine::Engine, batches: u32, n: u32) -> Vec<u32> {
    let mut present = Vec::new();
    for b in 0..batches {
        let found = (0..n)
            .filter(|i| engine.get(&key(b * 100 + i)).expect("get").is_some())
            .count() as u32;
        assert!(
            found == 0 || found == n,
            "batch {b} is torn: {found} of {n} keys"
        );
        if found == n {
            present.push(b);
        }
    }
    present
}

fn wal_files(fs: &FaultFs) -> Vec<PathBuf> {
    let mut names: Vec<_> = fs
        .list_dir(Path::new(DIR))
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(".wal"))
        .map(|n| Path::new(DIR).join(n))
        .collect();
    names.sort();
    names
}

// Proves that in NoSync mode a crash keeps every batch written before the
// last sync_wal, and loses exactly the unsynced suffix.
#[test]
fn crash_after_unsynced_writes_loses_only_unsynced_suffix() {
    let fs = FaultFs::new();
    let opts = Options {
        wal: WalMode::NoSync,
        ..Options::default()
    };
    let engine = open(&fs, opts.clone());
    for b in 0..10 {
        engine.write(&batch(b, 5)).expect("write");
    }
    engine.sync_wal().expect("sync");
    for b in 10..20 {
        engine.write(&batch(b, 5)).expect("write");
    }
    let after = fs.crash();
    drop(engine);
    let engine = open(&after, opts);
    assert_eq!(
        surviving_batches(&engine, 20, 5),
        (0..10).collect::<Vec<_>>()
    );
}

// Proves that when a crash keeps a random part of the unsynced WAL tail, the
// engine recovers a prefix of batches, each complete, including every synced one.
#[test]
fn crash_with_partially_written_tail_recovers_whole_batch_prefix() {
    for keep_fraction in [0.0, 0.1, 0.33, 0.5, 0.77, 0.99, 1.0] {
        let fs = FaultFs::new();
        let opts = Options {
            wal: WalMode::NoSync,
            ..Options::default()
        };
        let engine = open(&fs, opts.clone());
        for b in 0..5 {
            engine.write(&batch(b, 4)).expect("write");
        }
        engine.sync_wal().expect("sync");
        for b in 5..15 {
            engine.write(&batch(b, 4)).expect("write");
        }
        let after = fs.crash_keeping(|_, unsynced| (unsynced as f64 * keep_fraction) as usize);
        drop(engine);
        let engine = open(&after, opts);
        let present = surviving_batches(&engine, 15, 4);
        let n = present.len() as u32;
        assert!(
            n >= 5,
            "synced batches lost at keep {keep_fraction}: {present:?}"
        );
        assert_eq!(
            present,
            (0..n).collect::<Vec<_>>(),
            "not a prefix at keep {keep_fraction}"
        );
        if keep_fraction == 1.0 {
            assert_eq!(n, 15);
        }
    }
}

// Proves that when a crash keeps any subset of the unsynced WAL pages (the
// page cache wrote them back out of order, a lost page reads as zeros), the
// engine opens and recovers a prefix of whole batches with every synced one:
// a lost page is the end of the log even if a later page survived, never a
// gap in it.
#[test]
fn crash_with_wal_pages_written_back_out_of_order_recovers_whole_batch_prefix() {
    for seed in 0..32u64 {
        let fs = FaultFs::new();
        let opts = Options {
            wal: WalMode::NoSync,
            ..Options::default()
        };
        let engine = open(&fs, opts.clone());
        for b in 0..5 {
            engine.write(&batch(b, 4)).expect("write");
        }
        engine.sync_wal().expect("sync");
        for b in 5..40 {
            engine.write(&batch(b, 4)).expect("write");
        }
        // splitmix64: a seeded coin without another dependency.
        let mut state = seed;
        let after = fs.crash_reordered(512, || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        });
        drop(engine);
        let engine =
            strata_engine::Engine::open_with_fs(std::sync::Arc::new(after), Path::new(DIR), opts)
                .unwrap_or_else(|e| panic!("seed {seed}: a legal crash state refused: {e}"));
        let present = surviving_batches(&engine, 40, 4);
        let n = present.len() as u32;
        assert!(n >= 5, "seed {seed}: synced batches lost: {present:?}");
        assert_eq!(
            present,
            (0..n).collect::<Vec<_>>(),
            "seed {seed}: not a prefix"
        );
    }
}

// Proves that a WAL cut at every byte offset of its last record recovers
// exactly the complete records before it (and the last one only when whole).
#[test]
fn wal_cut_at_every_offset_of_last_record_recovers_complete_prefix() {
    let fs = FaultFs::new();
    let engine = open(&fs, tiny_options(WalMode::Sync));
    // Stay below the memtable size so that everything is in one WAL segment.
    for b in 0..3 {
        engine.write(&batch(b, 3)).expect("write");
    }
    let wal = wal_files(&fs).pop().expect("a WAL segment");
    let before_last = fs.contents(&wal).expect("wal").len();
    engine.write(&batch(3, 3)).expect("write");
    let full = fs.contents(&wal).expect("wal");
    assert!(full.len() > before_last);
    let crashed = fs.crash();
    drop(engine);
    for cut in before_last..=full.len() {
        let copy = crashed.durable_copy();
        copy.overwrite(&wal, full[..cut].to_vec());
        let engine = open(&copy, tiny_options(WalMode::Sync));
        let expected: Vec<u32> = if cut == full.len() {
            vec![0, 1, 2, 3]
        } else {
            vec![0, 1, 2]
        };
        assert_eq!(surviving_batches(&engine, 4, 3), expected, "cut at {cut}");
        // The recovered engine keeps working and stays recoverable.
        engine.put(b"after", b"recovery").expect("put");
        drop(engine);
        let engine = open(&copy.crash(), tiny_options(WalMode::Sync));
        assert_eq!(
            engine.get(b"after").expect("get"),
            Some(b"recovery".to_vec())
        );
    }
}

// Proves that damage in the middle of the WAL (an intact record follows) is
// reported as corruption instead of silently dropping acknowledged writes.
#[test]
fn wal_damage_before_intact_records_is_corruption() {
    let fs = FaultFs::new();
    let engine = open(&fs, Options::default());
    for b in 0..5 {
        engine.write(&batch(b, 2)).expect("write");
    }
    let wal = wal_files(&fs).pop().expect("a WAL segment");
    let crashed = fs.crash();
    drop(engine);
    let mut bytes = crashed.contents(&wal).expect("wal");
    bytes[30] ^= 0x04;
    crashed.overwrite(&wal, bytes);
    let result = strata_engine::Engine::open_with_fs(
        std::sync::Arc::new(crashed),
        Path::new(DIR),
        Options::default(),
    );
    assert!(
        matches!(result, Err(EngineError::Corruption { .. })),
        "{result:?}"
    );
}

// Proves that in Sync mode every acknowledged write survives a crash at any
// point, including while background flushes and compactions are running.
#[test]
fn synced_writes_survive_crash_during_background_work() {
    for crash_after in [50u32, 333, 700, 1234] {
        let fs = FaultFs::new();
        let engine = open(&fs, tiny_options(WalMode::Sync));
        for i in 0..crash_after {
            engine
                .put(&key(i % 400), &value(i, crash_after))
                .expect("put");
        }
        let after = fs.crash();
        drop(engine);
        let engine = open(&after, tiny_options(WalMode::Sync));
        let mut model = std::collections::BTreeMap::new();
        for i in 0..crash_after {
            model.insert(key(i % 400), value(i, crash_after));
        }
        assert_eq!(
            dump(&engine),
            model.into_iter().collect::<Vec<_>>(),
            "crash after {crash_after} writes"
        );
    }
}

// Proves that with the WAL disabled, flushed data survives a crash and the
// unflushed memtable is (as documented) lost.
#[test]
fn disabled_wal_keeps_flushed_data_only() {
    let fs = FaultFs::new();
    let opts = Options {
        wal: WalMode::Disabled,
        ..Options::default()
    };
    let engine = open(&fs, opts.clone());
    engine.put(b"flushed", b"1").expect("put");
    engine.flush().expect("flush");
    engine.put(b"memtable", b"2").expect("put");
    let after = fs.crash();
    drop(engine);
    let engine = open(&after, opts);
    assert_eq!(engine.get(b"flushed").expect("get"), Some(b"1".to_vec()));
    assert_eq!(engine.get(b"memtable").expect("get"), None);
    let seq = engine.put(b"next", b"3").expect("put");
    assert!(seq > 1, "sequence numbers continue after the flushed ones");
}

// Proves that a crash that keeps an arbitrary part of every file's unsynced
// tail (manifest edits and compaction outputs included) while leveled
// compactions run, with a read point held, loses no acknowledged write in
// Sync mode and recovers the manifest to its last complete edit.
#[test]
fn crash_with_torn_manifest_and_compaction_outputs_keeps_synced_writes() {
    for (round, keep_fraction) in [0.0, 0.3, 0.5, 0.9, 1.0].into_iter().enumerate() {
        let fs = FaultFs::new();
        let engine = open(&fs, tiny_options(WalMode::Sync));
        let mut model = std::collections::BTreeMap::new();
        let writes = 900 + 250 * round as u32;
        let mut read_point = None;
        for i in 0..writes {
            let k = key(i.wrapping_mul(7919) % 600);
            engine.put(&k, &value(i, round as u32)).expect("put");
            model.insert(k, value(i, round as u32));
            if i == writes / 2 {
                read_point = Some(engine.read_point());
            }
        }
        let after = fs.crash_keeping(|path, unsynced| {
            let _ = path;
            (unsynced as f64 * keep_fraction) as usize
        });
        drop(read_point);
        drop(engine);
        let engine = open(&after, tiny_options(WalMode::Sync));
        assert_eq!(
            dump(&engine),
            model.into_iter().collect::<Vec<_>>(),
            "keep fraction {keep_fraction}"
        );
        let stats = engine.stats();
        assert!(
            stats.levels.iter().map(|l| l.file_count).sum::<usize>() > 0,
            "tables survived: {stats:?}"
        );
    }
}
