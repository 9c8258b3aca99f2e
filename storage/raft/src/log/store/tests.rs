//! Tests of the raft log store: recovery, compaction, snapshots, record splitting.

use raft::{GetEntriesContext, StorageError};
use strata_fs::FaultFs;

use crate::identity::Identity;

use super::*;

const LOG_DIR: &str = "/raft";

fn open_log(
    fs: &FaultFs,
    max_segment_bytes: u64,
    bootstrap_voters: &[u64],
) -> Result<RaftLogStore, LogError> {
    RaftLogStore::open(
        Arc::new(fs.clone()),
        Path::new(LOG_DIR),
        max_segment_bytes,
        bootstrap_voters,
    )
}

fn entry(index: u64, term: u64, data: &[u8]) -> Entry {
    Entry {
        index,
        term,
        data: data.to_vec().into(),
        ..Default::default()
    }
}

#[test]
fn bootstrap_writes_voters_once() {
    let fs = FaultFs::new();
    let store = open_log(&fs, 1 << 20, &[1, 2, 3]).unwrap();
    assert_eq!(store.conf_state().voters, vec![1, 2, 3]);
    drop(store);
    // Reopening with other voters must not rewrite the configuration.
    let store = open_log(&fs, 1 << 20, &[9]).unwrap();
    assert_eq!(store.conf_state().voters, vec![1, 2, 3]);
}

#[test]
fn replay_follows_a_leader_that_replaced_entries_of_the_oldest_segment() {
    // Proves: when the oldest kept segment starts with entries that a
    // later leader replaced from an earlier index (the segment before,
    // which held that index, was deleted by a compaction), the log
    // reopens with the replacing entries instead of calling itself
    // corrupt.
    let fs = FaultFs::new();
    let big = [7u8; 1000];
    let mut store = open_log(&fs, 10_000, &[]).unwrap();
    let run = |from: u64, to: u64, term: u64, data: &[u8]| -> Vec<Entry> {
        (from..=to).map(|i| entry(i, term, data)).collect()
    };
    store.append(&run(1, 3, 1, &big));
    store.persist().unwrap();
    store.compact(1);
    store.persist().unwrap();
    // Rolls: the new segment's header records the base (1), then 4..=11.
    store.append(&run(4, 11, 1, &big));
    store.persist().unwrap();
    // A new leader replaces everything from 3.
    store.append(&run(3, 4, 2, b"new"));
    store.persist().unwrap();
    // The first segment (entries up to 3) is no longer needed.
    store.compact(3);
    store.persist().unwrap();
    assert_eq!(store.current_segment_seq(), 2);
    drop(store);
    let store = open_log(&fs, 10_000, &[]).unwrap();
    assert_eq!((store.first_index(), store.last_index()), (4, 4));
    let got = store
        .entries(4, 5, None, GetEntriesContext::empty(false))
        .unwrap();
    assert_eq!((got[0].term, got[0].data.to_vec()), (2, b"new".to_vec()));
}

#[test]
fn a_commit_index_alone_waits_for_the_next_sync() {
    // Proves: a new commit index costs no sync of its own; a new term or
    // vote does; the deferred commit is written with the next sync,
    // after the entries it covers.
    let fs = FaultFs::new();
    let mut store = open_log(&fs, 1 << 20, &[]).unwrap();
    store.set_hard_state(&HardState {
        term: 2,
        vote: 1,
        commit: 0,
        ..Default::default()
    });
    store.append(&[entry(1, 2, b"a"), entry(2, 2, b"b")]);
    assert!(store.persist().unwrap());
    store.set_commit(2);
    assert!(
        !store.persist().unwrap(),
        "a commit index alone is not synced"
    );
    assert_eq!(store.hard_state().commit, 2);
    drop(store);
    let mut store = open_log(&fs, 1 << 20, &[]).unwrap();
    assert_eq!(
        store.hard_state().commit,
        0,
        "the commit index was never written"
    );
    assert_eq!(store.hard_state().term, 2);
    store.set_commit(2);
    store.append(&[entry(3, 2, b"c")]);
    assert!(store.persist().unwrap());
    drop(store);
    let mut store = open_log(&fs, 1 << 20, &[]).unwrap();
    assert_eq!(
        store.hard_state().commit,
        2,
        "written with the next entries"
    );
    assert_eq!(store.last_index(), 3);
    store.set_hard_state(&HardState {
        term: 3,
        vote: 2,
        commit: 2,
        ..Default::default()
    });
    assert!(store.persist().unwrap(), "a new term is synced at once");
    drop(store);
    let store = open_log(&fs, 1 << 20, &[]).unwrap();
    assert_eq!((store.hard_state().term, store.hard_state().vote), (3, 2));
}

#[test]
fn persisted_entries_and_hard_state_survive_reopen() {
    let fs = FaultFs::new();
    let mut store = open_log(&fs, 1 << 20, &[]).unwrap();
    store.append(&[entry(1, 1, b"a"), entry(2, 1, b"b"), entry(3, 1, b"c")]);
    let hs = HardState {
        term: 1,
        vote: 1,
        commit: 2,
        ..Default::default()
    };
    store.set_hard_state(&hs);
    store.persist().unwrap();
    // Unpersisted records are lost at a crash.
    store.append(&[entry(4, 1, b"d")]);
    drop(store);
    let store = open_log(&fs, 1 << 20, &[]).unwrap();
    assert_eq!(store.last_index(), 3);
    assert_eq!(store.hard_state(), &hs);
    let got = store
        .entries(1, 4, None, GetEntriesContext::empty(false))
        .unwrap();
    assert_eq!(
        got.iter().map(|e| e.data.to_vec()).collect::<Vec<_>>(),
        vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
    );
}

#[test]
fn conflicting_append_replaces_the_suffix_durably() {
    let fs = FaultFs::new();
    let mut store = open_log(&fs, 1 << 20, &[]).unwrap();
    store.append(&[entry(1, 1, b"a"), entry(2, 1, b"b"), entry(3, 1, b"c")]);
    store.persist().unwrap();
    store.append(&[entry(2, 2, b"B")]);
    store.persist().unwrap();
    drop(store);
    let store = open_log(&fs, 1 << 20, &[]).unwrap();
    assert_eq!(store.last_index(), 2);
    assert_eq!(store.term(2).unwrap(), 2);
    assert!(matches!(
        store.term(3),
        Err(raft::Error::Store(StorageError::Unavailable))
    ));
}

#[test]
fn entries_respects_max_size_but_returns_at_least_one() {
    let fs = FaultFs::new();
    let mut store = open_log(&fs, 1 << 20, &[]).unwrap();
    store.append(&[entry(1, 1, &[0; 100]), entry(2, 1, &[0; 100])]);
    let got = store
        .entries(1, 3, 1, GetEntriesContext::empty(false))
        .unwrap();
    assert_eq!(got.len(), 1);
    assert!(matches!(
        store.entries(0, 2, None, GetEntriesContext::empty(false)),
        Err(raft::Error::Store(StorageError::Compacted))
    ));
}

fn segment_files(fs: &FaultFs) -> usize {
    fs.list_dir(Path::new(LOG_DIR)).unwrap().len()
}

#[test]
fn compaction_survives_reopen_and_deletes_dead_segments() {
    let fs = FaultFs::new();
    // Tiny segments: every persist of a few entries rolls.
    let mut store = open_log(&fs, 256, &[]).unwrap();
    for i in 1..=60u64 {
        store.append(&[entry(i, 1, &[7; 40])]);
        store.set_commit(i);
        store.persist().unwrap();
    }
    let before = segment_files(&fs);
    assert!(before > 10, "{before} segments");
    store.compact(50);
    store.persist().unwrap();
    assert_eq!(store.first_index(), 51);
    assert_eq!(store.term(50).unwrap(), 1);
    assert!(matches!(
        store.term(49),
        Err(raft::Error::Store(StorageError::Compacted))
    ));
    let after = segment_files(&fs);
    assert!(after < before / 2, "{before} -> {after} segments");
    drop(store);
    let store = open_log(&fs, 256, &[]).unwrap();
    assert_eq!((store.first_index(), store.last_index()), (51, 60));
    assert_eq!(store.hard_state().commit, 60);
    let got = store
        .entries(51, 61, None, GetEntriesContext::empty(false))
        .unwrap();
    assert_eq!(got.len(), 10);
}

#[test]
fn installed_snapshot_replaces_the_log_durably() {
    let fs = FaultFs::new();
    let mut store = open_log(&fs, 1 << 20, &[1, 2, 3]).unwrap();
    assert_eq!(
        (store.first_index(), store.term(BOOTSTRAP_INDEX).unwrap()),
        (6, BOOTSTRAP_TERM)
    );
    store.append(&[entry(6, 5, b"a"), entry(7, 5, b"b")]);
    store.persist().unwrap();
    let mut meta = SnapshotMetadata {
        index: 100,
        term: 4,
        ..Default::default()
    };
    meta.mut_conf_state().set_voters(vec![1, 2, 3, 4]);
    store.apply_snapshot(&meta);
    store.persist().unwrap();
    store.append(&[entry(101, 4, b"after")]);
    store.persist().unwrap();
    drop(store);
    let store = open_log(&fs, 1 << 20, &[1, 2, 3]).unwrap();
    assert_eq!((store.first_index(), store.last_index()), (101, 101));
    assert_eq!(store.term(100).unwrap(), 4);
    assert_eq!(store.conf_state().voters, vec![1, 2, 3, 4]);
    assert!(store.hard_state().commit >= 100);
}

#[test]
fn snapshot_is_requested_until_one_is_ready() {
    let fs = FaultFs::new();
    let mut store = open_log(&fs, 1 << 20, &[]).unwrap();
    assert!(matches!(
        store.snapshot(0, 2),
        Err(raft::Error::Store(
            StorageError::SnapshotTemporarilyUnavailable
        ))
    ));
    assert!(store.take_snapshot_request());
    assert!(!store.take_snapshot_request());
    let mut snap = Snapshot::default();
    snap.mut_metadata().index = 5;
    snap.mut_metadata().term = 1;
    snap.mut_metadata().mut_conf_state().set_voters(vec![1, 2]);
    store.set_ready_snapshot(snap);
    assert_eq!(store.snapshot(3, 2).unwrap().get_metadata().index, 5);
    // Too old for what is asked: a new one is requested.
    assert!(store.snapshot(9, 2).is_err());
    assert!(store.take_snapshot_request());
}

#[test]
fn entry_bytes_follow_appends_conflicts_and_compaction() {
    // Proves the size the compaction policy weighs stays exact through
    // appends, a conflicting overwrite and a compaction, and that the
    // discard point keeps the newest entries within a budget.
    let fs = FaultFs::new();
    let mut store = open_log(&fs, 1 << 20, &[1]).unwrap();
    let first = store.first_index();
    let entry = |index: u64, term: u64, size: usize| Entry {
        index,
        term,
        data: vec![7u8; size].into(),
        ..Default::default()
    };
    let batch: Vec<Entry> = (0..10).map(|i| entry(first + i, 6, 100)).collect();
    store.append(&batch);
    assert_eq!(store.entries_bytes(), 1000);
    // A new leader overwrites the last four with two bigger entries.
    store.append(&[entry(first + 6, 7, 300), entry(first + 7, 7, 300)]);
    assert_eq!(store.entries_bytes(), 600 + 600);
    store.persist().unwrap();
    // Keeping at most 650 bytes through the last entry: only the two
    // 300-byte ones fit, so everything up to first + 5 goes.
    assert_eq!(store.discard_point_for_bytes(first + 7, 650), first + 5);
    assert_eq!(store.discard_point_for_bytes(first + 7, 700), first + 4);
    assert_eq!(store.discard_point_for_bytes(first + 7, 10_000), first - 1);
    store.compact(first + 5);
    store.persist().unwrap();
    assert_eq!(store.entries_bytes(), 600);
}

#[test]
fn snapshot_from_before_a_member_joined_is_not_offered_to_it() {
    let fs = FaultFs::new();
    let mut store = open_log(&fs, 1 << 20, &[]).unwrap();
    let mut snap = Snapshot::default();
    snap.mut_metadata().index = 5;
    snap.mut_metadata().term = 1;
    snap.mut_metadata()
        .mut_conf_state()
        .set_voters(vec![1, 2, 3]);
    store.set_ready_snapshot(snap);
    assert!(store.snapshot(0, 3).is_ok());
    // Node 4 joined later: raft-rs would ignore this snapshot, so a new
    // one (whose configuration has node 4) is requested.
    assert!(matches!(
        store.snapshot(0, 4),
        Err(raft::Error::Store(
            StorageError::SnapshotTemporarilyUnavailable
        ))
    ));
    assert!(store.take_snapshot_request());
}

#[test]
fn ready_over_the_record_limit_is_written_as_several_records() {
    // Proves that one append whose entries weigh more than a record may
    // hold is written as several records, each within the bound, and
    // that the log reopens with every entry.
    let fs = FaultFs::new();
    let mut store = open_log(&fs, 1 << 20, &[]).unwrap();
    store.set_max_entries_record_bytes(1000);
    let batch: Vec<Entry> = (1..=10).map(|i| entry(i, 1, &[i as u8; 300])).collect();
    store.append(&batch);
    store.persist().unwrap();
    drop(store);
    let bytes = fs
        .contents(&Path::new(LOG_DIR).join(format!("{:020}.rlog", 1)))
        .expect("segment 1");
    // The newest segment: space allocated ahead follows its records.
    let bodies: Vec<usize> = record::reader(&bytes, true)
        .map(|r| record::decode_payload(r.expect("intact").payload).expect("known"))
        .filter(|(kind, _)| *kind == RecordKind::Entries)
        .map(|(_, body)| body.len())
        .collect();
    assert!(bodies.len() >= 4, "{bodies:?}");
    assert!(bodies.iter().all(|&b| b <= 1000), "{bodies:?}");
    let store = open_log(&fs, 1 << 20, &[]).unwrap();
    let got = store
        .entries(1, 11, None, GetEntriesContext::empty(false))
        .unwrap();
    assert_eq!(got, batch);
}

#[test]
fn reopen_after_unsynced_pages_written_back_out_of_order_keeps_a_prefix() {
    // Proves: a crash that keeps any subset of the newest segment's
    // unsynced pages (the page cache wrote them back out of order, a lost
    // one reads as zeros) leaves a log that reopens, holds every synced
    // entry, and holds the unsynced ones only as an unbroken prefix with
    // the bytes that were written: damage there is a torn tail, even when
    // an intact record survived after it.
    use rand::{Rng, SeedableRng};
    let data = |i: u64| vec![u8::try_from(i).unwrap(); 300];
    for seed in 0..64 {
        let fs = FaultFs::new();
        let mut store = open_log(&fs, 1 << 20, &[]).unwrap();
        store.append(&[entry(1, 1, &data(1)), entry(2, 1, &data(2))]);
        store.persist().unwrap();
        // Each persist is one record, synced only once the syncs are
        // released, which the crash comes before.
        fs.hold_syncs();
        for i in 3..=12 {
            store.append(&[entry(i, 1, &data(i))]);
            store.persist().unwrap();
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let after = fs.crash_reordered(512, || rng.random());
        drop(store);
        let store = open_log(&after, 1 << 20, &[])
            .unwrap_or_else(|e| panic!("seed {seed}: a legal crash state refused: {e}"));
        let last = store.last_index();
        assert!(last >= 2, "seed {seed}: synced entries lost (last {last})");
        let got = store
            .entries(1, last + 1, None, GetEntriesContext::empty(false))
            .unwrap();
        for e in got {
            assert_eq!(
                e.data.to_vec(),
                data(e.index),
                "seed {seed}: entry {}",
                e.index
            );
        }
    }
}

#[test]
fn a_requested_proof_is_written_by_the_writer_and_a_failed_one_poisons_it() {
    // Proves that the writer records the member as proven with the write
    // that asks for it, even a write with no records, and that a failed
    // fsync of the identity file fails that write and every later one.
    let fs = FaultFs::new();
    let mut store = open_log(&fs, 1 << 20, &[1]).expect("open");
    let shared: Arc<dyn FileSystem> = Arc::new(fs.clone());
    let identity =
        Identity::open(shared.clone(), Path::new(LOG_DIR), store.opened_empty()).expect("identity");
    assert!(!identity.is_proven());
    let mut writer = store.take_writer().expect("writer");
    writer.set_identity(identity);
    assert!(store.take_write().is_none(), "nothing to write yet");
    store.request_prove();
    let write = store.take_write().expect("a proof alone is a write");
    writer.write(&[write]).expect("written");
    let reread = Identity::open(shared.clone(), Path::new(LOG_DIR), false).expect("reopen");
    assert!(reread.is_proven(), "proven on disk");

    let fs = FaultFs::new();
    let mut store = open_log(&fs, 1 << 20, &[1]).expect("open");
    let shared: Arc<dyn FileSystem> = Arc::new(fs.clone());
    let identity = Identity::open(shared, Path::new(LOG_DIR), true).expect("identity");
    let mut writer = store.take_writer().expect("writer");
    writer.set_identity(identity);
    store.request_prove();
    fs.fail_next_sync(std::io::ErrorKind::Other);
    let failed = writer.write(&[store.take_write().expect("write")]);
    assert!(failed.is_err(), "the identity's fsync failed");
    let next = store.last_index() + 1;
    store.append(&[entry(next, 1, b"x")]);
    let after = writer.write(&[store.take_write().expect("write")]);
    assert!(
        matches!(after, Err(LogError::Poisoned { .. })),
        "every later write fails: {after:?}"
    );
}
