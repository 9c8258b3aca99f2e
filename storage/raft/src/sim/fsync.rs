//! Slow fsyncs against the network: what a member sends about entries
//! must not leave before the entries are durable, although its raft thread
//! goes on while its log write is being synced.

use super::disk::Disk;
use super::{PendingWrite, Sim};

/// How long the scenario waits for the leader to commit, in simulated
/// milliseconds: many times the network's and the leader's fsync delays.
const WAIT_MS: u64 = 50;
/// How long the two survivors run without the old leader.
const WITHOUT_LEADER_MS: u64 = 1_000;

// Proves: a follower that crashes while its fsync of new entries is still
// under way has not acknowledged them, so a leader whose only reachable
// follower it is cannot commit them, and no write a client was told of is
// lost when the follower and the third member go on without that leader.
// A driver that sent the follower's acknowledgement before its write was
// reported durable would let the leader commit and answer the write, which
// the crash then takes back: this scenario fails then
// (docs/reliability.md).
#[test]
fn follower_crashing_inside_its_fsync_had_not_acknowledged_the_entries() {
    for seed in 1..=2 {
        follower_crash_inside_fsync(seed).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
}

fn follower_crash_inside_fsync(seed: u64) -> Result<(), String> {
    let mut sim = Sim::settled(seed);
    let [l] = sim.leaders()[..] else {
        return Err("no single leader after settling".into());
    };
    let others: Vec<usize> = (0..sim.nodes.len()).filter(|&i| i != l).collect();
    let (f, cut) = (others[0], others[1]);
    let id = |i: usize| sim.nodes[i].id;
    let (lid, fid, cid) = (id(l), id(f), id(cut));
    // The third member is cut off: the follower is the leader's quorum.
    sim.net.partition(lid, cid);
    sim.net.partition(fid, cid);
    // Every fsync takes a millisecond, so a write is being synced for a
    // step after it starts.
    sim.disk = Disk {
        slow_fsync: 1.0,
        max_fsync_ms: 1,
        stall: 0.0,
        page_bytes: 512,
    };
    let last_index = |sim: &Sim, i: usize| {
        sim.nodes[i]
            .live
            .as_ref()
            .map_or(0, |live| live.driver.raw().raft.raft_log.last_index())
    };
    let index = last_index(&sim, l) + 1;
    let ack = sim.write(l, "at-risk");
    sim.pending.push(PendingWrite {
        key: "at-risk".into(),
        value: "v".into(),
        node: lid,
        generation: sim.nodes[l].generation,
        ack,
    });
    // The follower takes the entry and starts to sync it; that fsync then
    // never finishes, while the follower's raft thread goes on.
    let mut stuck = false;
    for _ in 0..WAIT_MS {
        sim.step(false, false)?;
        if sim.nodes[f].syncing() && last_index(&sim, f) >= index {
            if let Some(live) = &sim.nodes[f].live {
                live.io.0.lock().hang();
            }
            stuck = true;
            break;
        }
    }
    if !stuck {
        return Err(format!("node {fid} never synced entry {index}"));
    }
    for _ in 0..WAIT_MS {
        sim.step(false, false)?;
    }
    if sim.acked.contains_key("at-risk") {
        return Err(format!(
            "leader {lid} committed entry {index} while its only reachable follower {fid} was \
             still syncing it"
        ));
    }
    // The follower loses the entry; the leader goes down; the two others
    // elect a leader of their own and take writes.
    sim.note(("crash inside fsync", fid));
    sim.nodes[f].crash();
    sim.nodes[l].crash();
    sim.nodes[f].start();
    sim.net.heal();
    sim.disk = Disk::instant();
    for _ in 0..WITHOUT_LEADER_MS {
        sim.step(false, true)?;
    }
    // Heals, restarts the old leader, settles, and checks that every member
    // holds every acknowledged write.
    sim.finish()?;
    Ok(())
}
