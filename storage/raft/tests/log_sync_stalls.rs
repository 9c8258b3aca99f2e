//! A member's raft log disk stalling in `fsync`, and what it costs the
//! group. The raft log is written and synced on an I/O thread of its own,
//! and so is the identity file beside it, so the raft thread keeps ticking,
//! sending heartbeats and appends, and taking proposals while a sync takes
//! seconds: a leader with a stalled disk keeps its office, and a follower
//! with one costs the group neither an election nor its writes.

mod stall_group;

use std::sync::atomic::Ordering;
use std::time::Duration;

use stall_group::{
    ELECTION_TICKS, Elections, Network, ONE_AT_A_TIME, TICK, assert_catches_up, leader, start_group,
};
use strata_raft::{Command, PeerHandle, ProposeError, Role};

/// How long a sync stalls: fifteen election timeouts at most.
const STALL: Duration = Duration::from_secs(3);
const WRITES: usize = 40;
const WRITERS: usize = 4;

/// One write's outcome: its index and result.
type Outcome = Result<(u64, strata_raft::ApplyResult), ProposeError>;

/// `WRITERS` writers, each proposing its share of `WRITES` one after the
/// other; each task returns its outcomes.
fn spawn_writers(leader: &PeerHandle) -> Vec<tokio::task::JoinHandle<Vec<Outcome>>> {
    (0..WRITERS)
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
        .collect()
}

fn timeouts(d: Duration) -> u128 {
    d.as_millis() / (TICK * ELECTION_TICKS as u32).as_millis()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_log_fsync_stall_causes_no_election() {
    // Proves that a leader whose raft log fsync stalls for many election
    // timeouts keeps its office: its raft thread does not wait for the
    // disk, so it goes on sending heartbeats and appends. The followers
    // persist the entries, which commits them on their quorum; the leader
    // applies and answers them once its own disk has them, since it
    // applies only entries it holds durably. A raft thread that synced
    // the log itself would send nothing for the whole stall, and the
    // followers would elect another leader.
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

    members[at]
        .1
        .log_syncs_closed
        .store(true, Ordering::Release);
    let writes = spawn_writers(&leader);
    tokio::time::sleep(STALL).await;
    let answered_during_stall = writes.iter().filter(|w| w.is_finished()).count();
    let commit_during_stall = leader.status().commit_index;
    let applied_during_stall = leader.status().applied_index;
    members[at]
        .1
        .log_syncs_closed
        .store(false, Ordering::Release);

    let mut outcomes = Vec::new();
    for w in writes {
        let answered = tokio::time::timeout(Duration::from_secs(20), w)
            .await
            .expect("every write is answered once the leader's disk syncs again")
            .expect("the task ran");
        outcomes.extend(answered);
    }
    let (elections, leader_changes) = watch.settle_and_count().await;
    eprintln!(
        "leader's log fsync stalled for {STALL:?} ({} election timeouts): {elections} \
         election(s), {leader_changes} leader change(s); {answered_during_stall} of {WRITERS} \
         writers done during the stall; commit {commit_during_stall}, applied \
         {applied_during_stall} then",
        timeouts(STALL)
    );
    assert_eq!(
        (elections, leader_changes),
        (0, 0),
        "{elections} election(s) and {leader_changes} leader change(s) while the leader's log \
         fsync stalled for {STALL:?} ({} election timeouts)",
        timeouts(STALL)
    );
    assert_eq!(
        answered_during_stall, 0,
        "a write was answered before the leader's disk held it"
    );
    assert!(
        commit_during_stall > applied_during_stall,
        "the followers' quorum committed the writes during the stall (commit \
         {commit_during_stall}, applied {applied_during_stall})"
    );
    for (i, outcome) in outcomes.iter().enumerate() {
        assert!(outcome.is_ok(), "write {i}: {outcome:?}");
    }
    let held = leader
        .state_machine()
        .scan(b"k", Some(b"l"), WRITES + 1)
        .expect("scan");
    assert_eq!(held.len(), WRITES, "every write is applied on the leader");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_log_fsync_stall_costs_no_write_and_no_election() {
    // Proves that a follower whose raft log fsync stalls for many election
    // timeouts costs the group nothing: the leader and the other follower
    // are a quorum and go on committing and answering writes throughout,
    // the stalled follower keeps hearing the leader and does not campaign,
    // and it holds every write once its disk syncs again.
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Network::default();
    let members = start_group(dir.path(), &net, |_| {});
    let at = leader(&members).await;
    let leader = members[at].0.handle();
    let slow = (at + 1) % members.len();
    let follower = members[slow].0.handle();
    let mut watch = Elections::watch(&members);

    members[slow]
        .1
        .log_syncs_closed
        .store(true, Ordering::Release);
    let writes = spawn_writers(&leader);
    let mut outcomes = Vec::new();
    for w in writes {
        let answered = tokio::time::timeout(STALL, w)
            .await
            .expect("every write is answered while a follower's disk stalls")
            .expect("the task ran");
        outcomes.extend(answered);
    }
    let follower_applied = follower.status().applied_index;
    let commit = leader.status().commit_index;
    members[slow]
        .1
        .log_syncs_closed
        .store(false, Ordering::Release);
    let (elections, leader_changes) = watch.settle_and_count().await;
    eprintln!(
        "a follower's log fsync stalled: {elections} election(s), {leader_changes} leader \
         change(s); the follower had applied {follower_applied} of {commit}"
    );
    for (i, outcome) in outcomes.iter().enumerate() {
        assert!(outcome.is_ok(), "write {i}: {outcome:?}");
    }
    assert!(
        follower_applied < commit,
        "the stalled follower applied everything: its disk never stalled"
    );
    assert_eq!(
        (elections, leader_changes),
        (0, 0),
        "{elections} election(s) and {leader_changes} leader change(s) while a follower's log \
         fsync stalled"
    );
    assert_catches_up(&follower, commit, WRITES, Duration::from_secs(20)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_leader_proving_itself_on_a_stalled_disk_keeps_its_office() {
    // Proves that the fsync which records a member as proven (the first
    // leader of a group proves itself once an entry of its term commits)
    // does not hold the raft thread: with that fsync stalled for many
    // election timeouts on the leader, the group holds no election, and
    // the leader is proven on disk once the sync returns. A raft thread
    // that wrote the identity itself sent no heartbeat meanwhile, and the
    // followers elected another leader.
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Network::default();
    let members = start_group(dir.path(), &net, |_| {});
    // Before the first election (an election timeout away at least).
    for (_, fs) in &members {
        fs.identity_syncs_closed.store(true, Ordering::Release);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let at = loop {
        if let Some(at) = members
            .iter()
            .position(|(p, _)| p.handle().status().role == Role::Leader)
        {
            break at;
        }
        assert!(std::time::Instant::now() < deadline, "no leader elected");
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    // Every member knows the leader before the count starts: a follower
    // that learned of it only after would count as a leader change.
    let leader_id = members[at].0.handle().status().id;
    while members
        .iter()
        .any(|(p, _)| p.handle().status().leader_id != leader_id)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the followers never learned of node {leader_id}'s leadership"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // The followers prove themselves (they voted for the first leader)
    // at once; the leader's own proof stalls.
    for (i, (_, fs)) in members.iter().enumerate() {
        if i != at {
            fs.identity_syncs_closed.store(false, Ordering::Release);
        }
    }
    let mut watch = Elections::watch(&members);
    let leader = members[at].0.handle();
    tokio::time::sleep(STALL).await;
    let led_through = leader.status().role == Role::Leader;
    members[at]
        .1
        .identity_syncs_closed
        .store(false, Ordering::Release);
    let (elections, leader_changes) = watch.settle_and_count().await;
    eprintln!(
        "the leader's identity fsync stalled for {STALL:?} ({} election timeouts): \
         {elections} election(s), {leader_changes} leader change(s)",
        timeouts(STALL)
    );
    assert_eq!(
        (elections, leader_changes, led_through),
        (0, 0, true),
        "{elections} election(s) and {leader_changes} leader change(s) while the first \
         leader's identity fsync stalled for {STALL:?}"
    );
    let identity = std::fs::read_to_string(dir.path().join(format!("raft-{}/identity", at + 1)))
        .expect("identity file");
    assert!(
        identity.contains("proven 1"),
        "the leader is proven on disk once its sync returns: {identity}"
    );
}
