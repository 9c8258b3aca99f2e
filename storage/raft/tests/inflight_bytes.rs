//! What a leader sends a follower that does not answer its appends: a
//! follower whose raft log fsync stalls still answers heartbeats, and
//! raft-rs frees one message of a full window at every heartbeat answer.
//! Without a bound in bytes, every new entry went to it at once (the
//! window is 256 messages), and with large entries that is gigabytes held
//! in the leader's transport and the follower's inbox. The leader sends
//! it its budget (`max_inflight_bytes`) plus one append, and one more for
//! every five seconds without an answer (an append may have been lost), and
//! the rest once it answers.

mod stall_group;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use stall_group::{Network, ONE_AT_A_TIME, leader, start_group};
use strata_raft::Command;

const BUDGET: u64 = 2 << 20;
const VALUE_BYTES: usize = 256 << 10;
const WRITES: usize = 48;
const WRITERS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_with_a_stalled_disk_is_sent_its_budget_and_no_more() {
    // Proves that the bytes a leader sends a follower that stops
    // acknowledging stay within its budget plus one append while the
    // others commit 12 MiB of writes, for 3 s of heartbeats, and that
    // the follower is sent the rest and holds every write once its disk
    // syncs again.
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Network::default();
    let members = start_group(dir.path(), &net, |c| {
        c.max_inflight_bytes = BUDGET;
        // One entry to an append.
        c.max_size_per_msg_bytes = VALUE_BYTES as u64;
    });
    let at = leader(&members).await;
    let leader = members[at].0.handle();
    leader
        .propose(Command::Put {
            key: b"first".to_vec(),
            value: b"1".to_vec(),
        })
        .await
        .expect("a first write commits");
    let slow = (at + 1) % members.len();
    let slow_id = members[slow].0.handle().status().id;
    let follower = members[slow].0.handle();
    // Every follower is replicating (its window open) before the stall.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = net.append_bytes.read().get(&slow_id).copied().unwrap_or(0);

    members[slow]
        .1
        .log_syncs_closed
        .store(true, Ordering::Release);
    let stalled_at = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let leader = leader.clone();
            tokio::spawn(async move {
                for i in (w..WRITES).step_by(WRITERS) {
                    leader
                        .propose(Command::Put {
                            key: format!("k{i:04}").into_bytes(),
                            value: vec![b'v'; VALUE_BYTES],
                        })
                        .await
                        .expect("the leader and the other follower commit it");
                }
            })
        })
        .collect();
    for w in writers {
        tokio::time::timeout(Duration::from_secs(30), w)
            .await
            .expect("every write is committed without the stalled follower")
            .expect("the writer ran");
    }
    // Heartbeats go on while the disk stalls.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let sent = net.append_bytes.read().get(&slow_id).copied().unwrap_or(0) - before;
    let stalled_for = stalled_at.elapsed();
    members[slow]
        .1
        .log_syncs_closed
        .store(false, Ordering::Release);
    let written = (WRITES * VALUE_BYTES) as u64;
    eprintln!(
        "sent to the follower stalled for {stalled_for:?}: {sent} bytes of appends while \
         {written} bytes were committed (budget {BUDGET})"
    );
    // An entry is its value and a few bytes of command around it.
    let append = VALUE_BYTES as u64 + 1024;
    let allowed = BUDGET + append * (1 + stalled_for.as_secs() / 5);
    assert!(
        sent <= allowed,
        "the leader sent {sent} bytes of appends to a follower that acknowledged none of them \
         in {stalled_for:?} (budget {BUDGET}, entries of {VALUE_BYTES} bytes: at most \
         {allowed})"
    );

    let commit = leader.status().commit_index;
    let deadline = Instant::now() + Duration::from_secs(30);
    while follower.status().applied_index < commit {
        assert!(
            Instant::now() < deadline,
            "the follower never caught up: {:?}",
            follower.status()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let held = follower
        .state_machine()
        .scan(b"k", Some(b"l"), WRITES + 1)
        .expect("scan");
    assert_eq!(held.len(), WRITES, "the follower holds every write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_follower_reported_unreachable_is_sent_its_budget_and_no_more() {
    // Proves the same bound while the follower is being probed. The
    // transport reports a peer unreachable when its stream has had no room
    // for 2 s, which is what a follower that stopped reading does; raft-rs
    // then probes it, and in its Probe state each heartbeat answer lets one
    // more append go, the message window not applying: a follower whose
    // disk stalls but which still answers heartbeats was sent an append
    // every heartbeat.
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Network::default();
    let members = start_group(dir.path(), &net, |c| {
        c.max_inflight_bytes = BUDGET;
        c.max_size_per_msg_bytes = VALUE_BYTES as u64;
    });
    let at = leader(&members).await;
    let leader = members[at].0.handle();
    leader
        .propose(Command::Put {
            key: b"first".to_vec(),
            value: b"1".to_vec(),
        })
        .await
        .expect("a first write commits");
    let slow = (at + 1) % members.len();
    let slow_id = members[slow].0.handle().status().id;
    let follower = members[slow].0.handle();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = net.append_bytes.read().get(&slow_id).copied().unwrap_or(0);

    members[slow]
        .1
        .log_syncs_closed
        .store(true, Ordering::Release);
    let stalled_at = Instant::now();
    // The transport's verdict on the stalled stream, every 2 s.
    let reporting = {
        let leader = leader.clone();
        tokio::spawn(async move {
            loop {
                leader.report_unreachable(slow_id);
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        })
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let leader = leader.clone();
            tokio::spawn(async move {
                for i in (w..WRITES).step_by(WRITERS) {
                    leader
                        .propose(Command::Put {
                            key: format!("k{i:04}").into_bytes(),
                            value: vec![b'v'; VALUE_BYTES],
                        })
                        .await
                        .expect("the leader and the other follower commit it");
                }
            })
        })
        .collect();
    for w in writers {
        tokio::time::timeout(Duration::from_secs(30), w)
            .await
            .expect("every write is committed without the stalled follower")
            .expect("the writer ran");
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let sent = net.append_bytes.read().get(&slow_id).copied().unwrap_or(0) - before;
    let stalled_for = stalled_at.elapsed();
    reporting.abort();
    members[slow]
        .1
        .log_syncs_closed
        .store(false, Ordering::Release);
    eprintln!(
        "sent to the follower in probe, stalled for {stalled_for:?}: {sent} bytes of appends \
         (budget {BUDGET})"
    );
    let append = VALUE_BYTES as u64 + 1024;
    let allowed = BUDGET + append * (1 + stalled_for.as_secs() / 5);
    assert!(
        sent <= allowed,
        "the leader sent {sent} bytes of appends to a follower in probe that acknowledged \
         none of them in {stalled_for:?} (at most {allowed})"
    );

    let commit = leader.status().commit_index;
    let deadline = Instant::now() + Duration::from_secs(30);
    while follower.status().applied_index < commit {
        assert!(
            Instant::now() < deadline,
            "the follower never caught up: {:?}",
            follower.status()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let held = follower
        .state_machine()
        .scan(b"k", Some(b"l"), WRITES + 1)
        .expect("scan");
    assert_eq!(held.len(), WRITES, "the follower holds every write");
}
