//! Injected I/O failures in the raft log: after any failed write, fsync,
//! roll, segment removal or repair the log refuses further writes until it
//! is reopened, the error reaches the caller (the peer stops acknowledging),
//! ENOSPC is told apart, and what is durable is exactly what was synced.

mod common;

use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{DIR, entries, hard_state, open, segments, view};
use strata_engine::{Engine, FaultFs, Options, WalMode};
use strata_raft::log::RaftLogStore;
use strata_raft::{
    Command, LogError, Message, Peer, PeerConfig, PeerHandle, PeerStatus, ProposeError,
    StateMachine, StorageFailureKind, Transport,
};

/// A log holding entries 1..=3 of term 1, synced.
fn synced_log(fs: &FaultFs, max_segment_bytes: u64) -> RaftLogStore {
    let mut store = open(fs, max_segment_bytes).expect("open");
    store.set_hard_state(&hard_state(1, 1, 0));
    store.append(&entries(1, 3, 1));
    store.persist().expect("persist");
    store
}

/// Every write path of the log refuses with `Poisoned`.
fn assert_poisoned(store: &mut RaftLogStore) {
    store.append(&entries(store.last_index() + 1, store.last_index() + 1, 1));
    assert!(
        matches!(store.persist(), Err(LogError::Poisoned { .. })),
        "persist after a failure"
    );
    let last = store.last_index();
    store.compact(last);
    assert!(
        matches!(store.persist(), Err(LogError::Poisoned { .. })),
        "compaction after a failure"
    );
}

// Proves that a failed fsync fails that persist with the I/O error, poisons
// every later write, and that after a crash the log holds exactly what was
// synced before; a reopened log writes again.
#[test]
fn failed_fsync_poisons_log_until_reopen() {
    let fs = FaultFs::new();
    let mut store = synced_log(&fs, 1 << 20);
    fs.fail_next_sync(ErrorKind::Other);
    store.append(&entries(4, 5, 1));
    let err = store.persist().expect_err("fsync fails");
    assert!(matches!(err, LogError::Io { .. }), "{err}");
    assert!(!err.is_no_space());
    assert_poisoned(&mut store);
    drop(store);

    let after = fs.crash();
    let mut store = open(&after, 1 << 20).expect("reopen");
    assert_eq!(store.last_index(), 3, "only the synced entries");
    store.append(&entries(4, 4, 1));
    store.persist().expect("writes work after reopen");
    drop(store);
    assert_eq!(
        open(&after.crash(), 1 << 20).expect("reopen").last_index(),
        4
    );
}

// Proves that a failed append poisons the log, and that a crash after it
// keeps the synced prefix.
#[test]
fn failed_append_poisons_log() {
    let fs = FaultFs::new();
    let mut store = synced_log(&fs, 1 << 20);
    fs.fail_next_write(ErrorKind::Other);
    store.append(&entries(4, 4, 1));
    assert!(matches!(store.persist(), Err(LogError::Io { .. })));
    assert_poisoned(&mut store);
    assert_eq!(
        view(&open(&fs.crash(), 1 << 20).expect("reopen")).last_index,
        3
    );
}

// Proves that a full device is classified as such (is_no_space), poisons
// the log like any write failure, and that the log works again once space
// is back and it is reopened.
#[test]
fn no_space_is_classified_as_full() {
    let fs = FaultFs::new();
    let mut store = synced_log(&fs, 1 << 20);
    fs.set_no_space(true);
    store.append(&entries(4, 4, 1));
    let err = store.persist().expect_err("disk full");
    assert!(err.is_no_space(), "{err}");
    assert!(
        err.to_string().contains("no space"),
        "the message says why: {err}"
    );
    assert_poisoned(&mut store);
    drop(store);
    fs.set_no_space(false);
    let mut store = open(&fs, 1 << 20).expect("reopen");
    store.append(&entries(store.last_index() + 1, store.last_index() + 1, 1));
    store.persist().expect("space is back");
}

// Proves that a failure while starting a new segment, at the old segment's
// fsync or at the directory fsync that makes the new one durable, poisons
// the log, and that a crash then keeps exactly the synced entries.
#[test]
fn failed_roll_poisons_log() {
    // The roll syncs the old segment, creates the new one and syncs the
    // directory: fail the first or the second of those syncs.
    for skip in [0, 1] {
        let fs = FaultFs::new();
        let mut store = synced_log(&fs, 150);
        let before = segments(&fs).len();
        fs.fail_sync_after(skip, ErrorKind::Other);
        store.append(&entries(4, 9, 1));
        let err = store.persist().expect_err("roll fails");
        assert!(matches!(err, LogError::Io { .. }), "skip {skip}: {err}");
        assert_poisoned(&mut store);
        drop(store);
        let after = fs.crash();
        assert!(segments(&after).len() <= before + 1);
        let store = open(&after, 150).expect("reopen");
        assert_eq!(store.last_index(), 3, "skip {skip}");
    }
}

// Proves that a failure while deleting compacted segments (the directory
// fsync after the removal) reaches the caller and poisons the log, and
// that the compaction record, synced before, survives a crash.
#[test]
fn failed_segment_removal_poisons_log() {
    let fs = FaultFs::new();
    let mut store = open(&fs, 150).expect("open");
    for i in 1..=12u64 {
        store.append(&entries(i, i, 1));
        store.set_hard_state(&hard_state(1, i, i));
        store.persist().expect("persist");
    }
    let before = segments(&fs).len();
    assert!(before > 3, "{before} segments");
    // The compaction's persist syncs once; the removal's directory sync fails.
    fs.fail_sync_after(1, ErrorKind::Other);
    store.compact(10);
    let err = store.persist().expect_err("directory sync fails");
    assert!(matches!(err, LogError::Io { .. }), "{err}");
    assert_poisoned(&mut store);
    drop(store);
    let after = fs.crash();
    assert_eq!(
        segments(&after).len(),
        before,
        "the removal was not durable: the old segments are back"
    );
    let store = open(&after, 150).expect("reopen");
    assert_eq!((store.first_index(), store.last_index()), (11, 12));
}

// Proves that a torn tail whose repair fails (the cut or its fsync) makes
// open fail rather than run on an unrepaired log, and that a later open
// repairs it.
#[test]
fn failed_torn_tail_repair_fails_open() {
    let fs = FaultFs::new();
    drop(synced_log(&fs, 1 << 20));
    let (name, mut bytes) = segments(&fs).pop_last().expect("a segment");
    bytes.extend_from_slice(&[0xab; 7]);
    let path = Path::new(DIR).join(&name);
    fs.overwrite(&path, bytes.clone());
    fs.fail_next_write(ErrorKind::Other);
    assert!(matches!(open(&fs, 1 << 20), Err(LogError::Io { .. })));
    // Opening syncs the log directory's parent first, then the repair.
    fs.fail_sync_after(1, ErrorKind::Other);
    assert!(matches!(open(&fs, 1 << 20), Err(LogError::Io { .. })));
    let crashed = fs.crash();
    assert_eq!(
        crashed.contents(&path).map(|b| b.len()),
        Some(bytes.len()),
        "an unsynced repair does not count"
    );
    let store = open(&crashed, 1 << 20).expect("repairs");
    assert_eq!(store.last_index(), 3);
    drop(store);
    assert_eq!(
        crashed.crash().contents(&path).map(|b| b.len()),
        Some(bytes.len() - 7)
    );
}

/// A group of one sends nothing.
struct NoNetwork;

impl Transport for NoNetwork {
    fn send(&self, _: Vec<Message>) {}
}

/// A single-member peer whose engine and raft log are both on `fs`, once
/// it leads.
async fn start_leader(fs: &FaultFs, snapshots: &Path) -> (Peer, PeerHandle) {
    let engine = Engine::open_with_fs(
        Arc::new(fs.clone()),
        Path::new("/engine"),
        Options {
            wal: WalMode::NoSync,
            ..Options::default()
        },
    )
    .expect("engine");
    let sm = Arc::new(StateMachine::new(Arc::new(engine), 1));
    let mut config = PeerConfig::new(1, 1, vec![1], DIR.into());
    config.log_fs = Arc::new(fs.clone());
    config.snapshot_root = snapshots.to_path_buf();
    config.tick = Duration::from_millis(5);
    let peer = Peer::start(config, sm, NoNetwork).expect("peer starts");
    let h = peer.handle();
    status_when(&h, "no leader", |s| s.leader_id == 1).await;
    (peer, h)
}

/// The peer's status once `holds` is true of it (the driver publishes its
/// status after each round, e.g. a moment after answering the waiters of
/// a round that failed); panics with `never` after 5 s.
async fn status_when(
    h: &PeerHandle,
    never: &str,
    holds: impl Fn(&PeerStatus) -> bool,
) -> PeerStatus {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let status = h.status();
        if holds(&status) {
            return status;
        }
        assert!(Instant::now() < deadline, "{never}: {status:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The peer's status once it reports a failure.
async fn failed_status(h: &PeerHandle) -> PeerStatus {
    status_when(h, "never failed", |s| s.failure.is_some()).await
}

fn put(key: &str) -> Command {
    Command::Put {
        key: key.into(),
        value: "v".into(),
    }
}

// Proves that a raft log fsync failure reaches the proposer as an error
// (the write is not acknowledged), marks the peer failed, and that the
// write is not durable: after a crash and restart it is absent while the
// acknowledged one before it is there.
#[tokio::test]
async fn raft_log_fsync_failure_fails_the_proposal_and_the_peer() {
    let fs = FaultFs::new();
    let snapshots = tempfile::tempdir().expect("tempdir");
    let (peer, h) = start_leader(&fs, snapshots.path()).await;
    h.propose(put("acked")).await.expect("acknowledged");
    fs.fail_next_sync(ErrorKind::Other);
    let err = h
        .propose(put("failed"))
        .await
        .expect_err("not acknowledged");
    assert!(matches!(err, ProposeError::Storage(_)), "{err}");
    let status = failed_status(&h).await;
    assert!(!status.disk_full(), "{status:?}");
    assert!(
        h.propose(put("later")).await.is_err(),
        "a failed peer refuses"
    );

    let after = fs.crash();
    drop(peer);
    let (_peer, h) = start_leader(&after, snapshots.path()).await;
    h.read_index().await.expect("read index");
    let sm = h.state_machine();
    assert_eq!(sm.get(b"acked").expect("get"), Some(b"v".to_vec()));
    assert_eq!(sm.get(b"failed").expect("get"), None);
}

// Proves that a full device during a raft log write marks the peer failed
// with disk_full (what the node's restart-when-space-is-back relies on)
// and fails the proposal.
#[tokio::test]
async fn raft_log_no_space_marks_the_peer_disk_full() {
    let fs = FaultFs::new();
    let snapshots = tempfile::tempdir().expect("tempdir");
    let (_peer, h) = start_leader(&fs, snapshots.path()).await;
    fs.set_no_space(true);
    let err = h.propose(put("k")).await.expect_err("disk full");
    assert!(
        matches!(&err, ProposeError::Storage(f) if f.kind == StorageFailureKind::Full),
        "{err}"
    );
    let status = failed_status(&h).await;
    assert!(status.disk_full(), "{status:?}");
    let later = h.propose(put("k2")).await.expect_err("still failed");
    assert!(
        matches!(&later, ProposeError::Storage(f) if f.kind == StorageFailureKind::Full),
        "a later write is refused as full too: {later}"
    );
}
