//! Blocking work on a member's raft thread, and the elections it costs: a
//! three-member group run in process, each member's engine on a file
//! system that can hold the creation of every table (`.sst`) back while a
//! gate is closed, or every append to its WAL. With the table gate closed
//! the engine's background thread cannot flush: frozen memtables pile up
//! and the engine makes writers wait, and a flush asked for does not
//! finish; with the WAL gate closed every engine write takes as long as the
//! gate stays closed, as a large entry's does on a busy machine. A
//! leader's raft thread must keep ticking and sending heartbeats through
//! either, so that the followers do not elect another leader.

mod stall_group;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use stall_group::{
    ELECTION_TICKS, Elections, Network, ONE_AT_A_TIME, TICK, assert_catches_up, leader,
    start_group, start_group_with_wal,
};
use strata_engine::WalMode;
use strata_raft::{Command, RaftEventKind};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_engine_write_stall_causes_no_election() {
    // Proves that a leader whose engine stalls writes for many election
    // timeouts keeps its office: its raft thread goes on ticking and
    // sending heartbeats while the committed entries wait for the engine,
    // so the followers hold no election; the writes taken meanwhile are all
    // answered, applied, once the engine takes writes again, and a read
    // taken during the stall is served only once the leader has applied
    // what was committed when it was taken.
    const WRITES: usize = 64;
    const WRITERS: usize = 4;
    const VALUE: usize = 2 << 10;
    const STALL: Duration = Duration::from_secs(3);
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Network::default();
    let members = start_group(dir.path(), &net, |_| {});
    let at = leader(&members).await;
    let leader = members[at].0.handle();
    leader
        .propose(Command::Put {
            key: b"first".to_vec(),
            value: b"1".to_vec(),
        })
        .await
        .expect("a first write commits");
    let mut watch = Elections::watch(&members);

    members[at].1.closed.store(true, Ordering::Release);
    // Writers one after the other, so that they reach the engine in many
    // small batches: each fills the memtable a little more, and one of them
    // finds it full with the frozen one not yet flushed.
    let writes: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let leader = leader.clone();
            tokio::spawn(async move {
                let mut outcomes = Vec::with_capacity(WRITES / WRITERS);
                for i in (writer..WRITES).step_by(WRITERS) {
                    let outcome = leader
                        .propose(Command::Put {
                            key: format!("k{i:04}").into_bytes(),
                            value: vec![b'v'; VALUE],
                        })
                        .await;
                    outcomes.push(outcome);
                }
                outcomes
            })
        })
        .collect();
    // A linearizable read taken during the stall must wait for the leader
    // to apply up to its read index: committed writes are held back, so
    // answering it now could miss them.
    tokio::time::sleep(STALL / 2).await;
    let committed_before_read = leader.status().commit_index;
    let read = tokio::spawn({
        let leader = leader.clone();
        async move { leader.read_index().await }
    });
    tokio::time::sleep(STALL / 2).await;
    let waiting = writes.iter().filter(|w| !w.is_finished()).count();
    let read_waiting = !read.is_finished();
    let status = leader.status();
    members[at].1.closed.store(false, Ordering::Release);
    assert!(
        waiting > 0,
        "every writer was done while the leader's engine could not flush: \
         the engine never stalled"
    );

    let mut outcomes = Vec::with_capacity(WRITES);
    for w in writes {
        let answered: Vec<_> = tokio::time::timeout(Duration::from_secs(20), w)
            .await
            .expect("every write is answered once the engine takes writes")
            .expect("the task ran");
        outcomes.extend(answered);
    }
    let (elections, leader_changes) = watch.settle_and_count().await;
    let timeout = TICK * ELECTION_TICKS as u32;
    eprintln!(
        "leader engine stalled for {STALL:?} ({} election timeouts): {elections} election(s), \
         {leader_changes} leader change(s)",
        STALL.as_millis() / timeout.as_millis()
    );
    assert_eq!(
        (elections, leader_changes),
        (0, 0),
        "{elections} election(s) and {leader_changes} leader change(s) while the leader's \
         engine stalled writes for {STALL:?} ({} election timeouts); {waiting} of {WRITERS} \
         writers were waiting",
        STALL.as_millis() / timeout.as_millis()
    );
    assert_eq!(
        leader.status().leader_id,
        leader.status().id,
        "the leader kept its office"
    );
    for (i, outcome) in outcomes.iter().enumerate() {
        assert!(outcome.is_ok(), "write {i}: {outcome:?}");
    }
    assert!(
        status.applied_index < status.commit_index,
        "the stalled leader applied all it committed: {status:?}"
    );
    assert!(
        read_waiting,
        "a read was answered while committed writes were held back from the engine"
    );
    let read_at = tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("the read is answered once the engine takes writes")
        .expect("the task ran")
        .expect("the read is served");
    assert!(
        read_at >= committed_before_read,
        "the read was served at {read_at}, before the index {committed_before_read} \
         committed when it was taken"
    );
    let held = leader
        .state_machine()
        .scan(b"k", Some(b"l"), WRITES + 1)
        .expect("scan");
    assert_eq!(held.len(), WRITES, "every write is applied on the leader");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_snapshot_install_stall_causes_no_election() {
    // Proves that a follower whose snapshot install takes many election
    // timeouts (its engine cannot flush, and an install makes its data
    // durable before it returns) costs the group no election: the install
    // runs on that follower's raft thread, which stops ticking with it, so
    // the follower never campaigns, and the leader keeps its quorum with
    // the other follower. Once the engine flushes again the install ends
    // and the follower holds every write.
    const WRITES: usize = 200;
    const STALL: Duration = Duration::from_secs(3);
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Network::default();
    let members = start_group(dir.path(), &net, |c| {
        c.compact_log_entries = 40;
        c.compact_keep_entries = 5;
    });
    let at = leader(&members).await;
    let leader = members[at].0.handle();
    let behind = (at + 1) % members.len();
    let follower = members[behind].0.handle();
    net.cut_off.store(follower.status().id, Ordering::Relaxed);
    for i in 0..WRITES {
        leader
            .propose(Command::Put {
                key: format!("k{i:04}").into_bytes(),
                value: vec![b'v'; 64],
            })
            .await
            .expect("writes commit without the cut-off member");
    }
    // The leader compacts its log behind a flush, off its raft thread;
    // give it time, so that only a snapshot can catch the follower up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The member cut off has been pre-voting alone and has no leader; it
    // learns of the leader again when it is reconnected, which is no
    // election. The two others tell whether the group held one.
    let mut watch = Elections::watch(
        members
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != behind)
            .map(|(_, m)| m),
    );
    let mut events = follower.subscribe();

    members[behind].1.closed.store(true, Ordering::Release);
    net.cut_off.store(0, Ordering::Relaxed);
    tokio::time::sleep(STALL).await;
    let installed_during_stall = std::iter::from_fn(|| events.try_recv().ok())
        .any(|e| e.kind == RaftEventKind::SnapshotInstalled);
    let delivered_during_stall = net.snapshots.load(Ordering::Relaxed);
    members[behind].1.closed.store(false, Ordering::Release);

    let commit = leader.status().commit_index;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut installed = false;
    while follower.status().applied_index < commit {
        assert!(
            Instant::now() < deadline,
            "the follower never caught up: {:?}",
            follower.status()
        );
        installed |= std::iter::from_fn(|| events.try_recv().ok())
            .any(|e| e.kind == RaftEventKind::SnapshotInstalled);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    installed |= std::iter::from_fn(|| events.try_recv().ok())
        .any(|e| e.kind == RaftEventKind::SnapshotInstalled);
    let (elections, leader_changes) = watch.settle_and_count().await;
    let timeout = TICK * ELECTION_TICKS as u32;
    eprintln!(
        "follower install stalled for {STALL:?} ({} election timeouts): {elections} election(s), \
         {leader_changes} leader change(s)",
        STALL.as_millis() / timeout.as_millis()
    );
    assert!(
        delivered_during_stall > 0,
        "no snapshot reached the follower while its engine could not flush"
    );
    assert!(
        !installed_during_stall,
        "the install finished while the follower's engine could not flush"
    );
    assert!(installed, "the follower caught up without a snapshot");
    assert_eq!(
        (elections, leader_changes),
        (0, 0),
        "{elections} election(s) and {leader_changes} leader change(s) while a follower's \
         snapshot install stalled for {STALL:?}"
    );
    let held = follower
        .state_machine()
        .scan(b"k", Some(b"l"), WRITES + 1)
        .expect("scan");
    assert_eq!(held.len(), WRITES, "the follower holds every write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_engine_write_stall_causes_no_election() {
    // Proves that when both followers' engines stall writes (a slow disk
    // shared by the machines, say) for many election timeouts, the
    // followers keep acknowledging appends: the leader keeps its quorum
    // and goes on committing, applying and answering writes, no election
    // is held, and the followers apply everything once their engines take
    // writes again.
    const WRITES: usize = 64;
    const WRITERS: usize = 4;
    const VALUE: usize = 2 << 10;
    const STALL: Duration = Duration::from_secs(3);
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Network::default();
    let members = start_group(dir.path(), &net, |_| {});
    let at = leader(&members).await;
    let leader = members[at].0.handle();
    let mut watch = Elections::watch(&members);
    let followers: Vec<usize> = (0..members.len()).filter(|&i| i != at).collect();
    for &f in &followers {
        members[f].1.closed.store(true, Ordering::Release);
    }
    let writes: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let leader = leader.clone();
            tokio::spawn(async move {
                let mut outcomes = Vec::with_capacity(WRITES / WRITERS);
                for i in (writer..WRITES).step_by(WRITERS) {
                    let outcome = leader
                        .propose(Command::Put {
                            key: format!("k{i:04}").into_bytes(),
                            value: vec![b'v'; VALUE],
                        })
                        .await;
                    outcomes.push(outcome);
                }
                outcomes
            })
        })
        .collect();
    tokio::time::sleep(STALL).await;
    let done = writes.iter().filter(|w| w.is_finished()).count();
    let stalled: Vec<u64> = followers
        .iter()
        .map(|&f| members[f].0.handle().state_machine().engine().stats())
        .map(|s| s.immutable_memtables as u64)
        .collect();
    for &f in &followers {
        members[f].1.closed.store(false, Ordering::Release);
    }
    let mut outcomes = Vec::with_capacity(WRITES);
    for w in writes {
        let answered: Vec<_> = tokio::time::timeout(Duration::from_secs(20), w)
            .await
            .expect("every write is answered")
            .expect("the task ran");
        outcomes.extend(answered);
    }
    let (elections, leader_changes) = watch.settle_and_count().await;
    let timeout = TICK * ELECTION_TICKS as u32;
    eprintln!(
        "followers' engines stalled for {STALL:?} ({} election timeouts): {elections} election(s), \
         {leader_changes} leader change(s)",
        STALL.as_millis() / timeout.as_millis()
    );
    assert!(
        stalled.iter().all(|&frozen| frozen > 0),
        "a follower's engine never held a frozen memtable it could not flush: {stalled:?}"
    );
    assert_eq!(
        (elections, leader_changes),
        (0, 0),
        "{elections} election(s) and {leader_changes} leader change(s) while the followers' \
         engines stalled writes for {STALL:?}"
    );
    assert_eq!(
        done, WRITERS,
        "the leader stopped answering writes while only its followers' engines stalled"
    );
    for (i, outcome) in outcomes.iter().enumerate() {
        assert!(outcome.is_ok(), "write {i}: {outcome:?}");
    }
    let commit = leader.status().commit_index;
    for &f in &followers {
        assert_catches_up(
            &members[f].0.handle(),
            commit,
            WRITES,
            Duration::from_secs(20),
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_slow_engine_write_causes_no_election() {
    // Proves that a leader whose engine writes take many election timeouts
    // each (here its WAL appends wait; a large entry on a busy machine does
    // the same), without the engine reporting a stall, keeps its office:
    // committed entries are applied on a thread of their own, so the raft
    // thread goes on ticking and sending heartbeats, and the writes are
    // answered once the engine takes them. A raft thread that applied
    // itself would stop for the whole write.
    const WRITES: usize = 16;
    const WRITERS: usize = 4;
    const STALL: Duration = Duration::from_secs(3);
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Network::default();
    let members = start_group_with_wal(dir.path(), &net, WalMode::NoSync, |_| {});
    let at = leader(&members).await;
    let leader = members[at].0.handle();
    leader
        .propose(Command::Put {
            key: b"first".to_vec(),
            value: b"1".to_vec(),
        })
        .await
        .expect("a first write commits");
    let mut watch = Elections::watch(&members);

    members[at]
        .1
        .wal_appends_closed
        .store(true, Ordering::Release);
    let writes: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let leader = leader.clone();
            tokio::spawn(async move {
                let mut outcomes = Vec::new();
                for i in (writer..WRITES).step_by(WRITERS) {
                    outcomes.push(
                        leader
                            .propose(Command::Put {
                                key: format!("k{i:04}").into_bytes(),
                                value: vec![b'v'; 256],
                            })
                            .await,
                    );
                }
                outcomes
            })
        })
        .collect();
    tokio::time::sleep(STALL).await;
    let waiting = writes.iter().filter(|w| !w.is_finished()).count();
    let status = leader.status();
    members[at]
        .1
        .wal_appends_closed
        .store(false, Ordering::Release);

    let mut outcomes = Vec::new();
    for w in writes {
        let answered: Vec<_> = tokio::time::timeout(Duration::from_secs(20), w)
            .await
            .expect("every write is answered once the engine writes again")
            .expect("the task ran");
        outcomes.extend(answered);
    }
    let (elections, leader_changes) = watch.settle_and_count().await;
    let timeout = TICK * ELECTION_TICKS as u32;
    eprintln!(
        "leader's engine writes held for {STALL:?} ({} election timeouts): {elections} \
         election(s), {leader_changes} leader change(s); {waiting} of {WRITERS} writers waiting",
        STALL.as_millis() / timeout.as_millis()
    );
    assert!(
        waiting > 0 && status.applied_index < status.commit_index,
        "the leader applied everything while its engine could not write: {status:?}"
    );
    assert_eq!(
        (elections, leader_changes),
        (0, 0),
        "{elections} election(s) and {leader_changes} leader change(s) while the leader's \
         engine writes were held for {STALL:?}"
    );
    for (i, outcome) in outcomes.iter().enumerate() {
        assert!(outcome.is_ok(), "write {i}: {outcome:?}");
    }
}
