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

use stall_group::{Network, ONE_AT_A_TIME, assert_catches_up, leader, start_group};
use strata_raft::Command;

const BUDGET: u64 = 2 << 20;
const VALUE_BYTES: usize = 256 << 10;
const WRITES: usize = 48;
const WRITERS: usize = 4;

/// Three members with a budget of `BUDGET` bytes in flight and one entry
/// to an append: after a first write, one follower's log fsync is held
/// while the others commit `WRITES` writes of `VALUE_BYTES`, then for 3 s
/// of heartbeats. With `reported_unreachable` the leader is also told,
/// every 2 s, that the stalled follower is unreachable, as the transport
/// does when a stream has had no room for that long; raft-rs then probes
/// it. Asserts that the bytes of appends the leader sent the stalled
/// follower stay within the budget plus one append (and one more for
/// every five seconds), and that the follower holds every write once its
/// disk syncs again.
async fn a_stalled_follower_is_sent_its_budget(reported_unreachable: bool) {
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
    // The transport's verdict on the stalled stream, every 2 s. The first
    // is taken before any write: raft-rs probes the follower from then on.
    // (A verdict arriving after the leader filled the follower's window
    // would have those appends taken as lost with the stream, and the
    // follower sent up to another budget: see `driver/flow.rs`.)
    let reporting = reported_unreachable.then(|| {
        leader.report_unreachable(slow_id);
        let leader = leader.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(2)).await;
                leader.report_unreachable(slow_id);
            }
        })
    });
    if reported_unreachable {
        // Reports and proposals reach the raft thread on separate
        // channels: let it take the report first.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
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
    if let Some(reporting) = reporting {
        reporting.abort();
    }
    members[slow]
        .1
        .log_syncs_closed
        .store(false, Ordering::Release);
    let written = (WRITES * VALUE_BYTES) as u64;
    let state = if reported_unreachable {
        "in probe"
    } else {
        "replicating"
    };
    eprintln!(
        "sent to the follower {state}, stalled for {stalled_for:?}: {sent} bytes of appends \
         while {written} bytes were committed (budget {BUDGET})"
    );
    // An entry is its value and a few bytes of command around it.
    let append = VALUE_BYTES as u64 + 1024;
    let allowed = BUDGET + append * (1 + stalled_for.as_secs() / 5);
    assert!(
        sent <= allowed,
        "the leader sent {sent} bytes of appends to a follower {state} that acknowledged none \
         of them in {stalled_for:?} (budget {BUDGET}, entries of {VALUE_BYTES} bytes: at most \
         {allowed})"
    );

    let commit = leader.status().commit_index;
    assert_catches_up(&follower, commit, WRITES, Duration::from_secs(30)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_with_a_stalled_disk_is_sent_its_budget_and_no_more() {
    // Proves that the bytes a leader sends a follower that stops
    // acknowledging stay within its budget plus one append while the
    // others commit 12 MiB of writes, for 3 s of heartbeats, and that
    // the follower is sent the rest and holds every write once its disk
    // syncs again.
    a_stalled_follower_is_sent_its_budget(false).await;
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
    a_stalled_follower_is_sent_its_budget(true).await;
}
