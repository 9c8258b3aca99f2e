//! Lease reads on the simulated network and clock: a leader answers reads
//! on arrival while its lease holds, and a leader cut off from its group,
//! one whose driver stops for a while and resumes, and one whose follower
//! restarts, must not answer a read from its lease once the others may
//! have elected a new leader. Then random runs in lease mode with pauses
//! beside the usual faults.

use rand::Rng;
use tokio::sync::oneshot;

use super::read_check::READ_TIMEOUT_MS;
use super::{FAULTY_MS, INITIAL_VOTERS, Sim, Stats, TICK_MS};
use crate::config::ReadMode;
use crate::error::ProposeError;
use crate::mailbox::Input;

type ReadRx = oneshot::Receiver<Result<u64, ProposeError>>;

/// The chance, each simulated millisecond of a random run, that a running
/// member pauses.
const PAUSE_PROBABILITY: f64 = 0.002;

impl Sim {
    /// Writes `key` on node `i` and steps until the write is acknowledged;
    /// records it as acknowledged for the read checker. Returns its index.
    fn acknowledged_write(&mut self, i: usize, key: &str) -> u64 {
        let mut ack = self.write(i, key);
        let mut index = 0;
        self.step_until(500, "the write is acknowledged", |_| match ack.try_recv() {
            Ok(Ok((at, _))) => {
                index = at;
                true
            }
            Err(oneshot::error::TryRecvError::Empty) => false,
            other => panic!("the write on node {i} failed: {other:?}"),
        });
        self.acked.insert(key.to_string(), "v".to_string());
        self.acked_index = self.acked_index.max(index);
        index
    }

    /// Submits a read on node `i` and returns its answer channel.
    fn lease_read(&mut self, i: usize) -> ReadRx {
        let (tx, rx) = oneshot::channel();
        let live = self.nodes[i].live.as_mut().expect("the node runs");
        live.driver.handle(Input::Read { tx });
        rx
    }

    /// Reads on node `i` and steps until the read is answered `Ok`.
    fn read_answered(&mut self, i: usize) {
        let mut rx = self.lease_read(i);
        self.step_until(200, "the read is answered", |_| match rx.try_recv() {
            Ok(Ok(_)) => true,
            Err(oneshot::error::TryRecvError::Empty) => false,
            other => panic!("the read on node {i}: {other:?}"),
        });
    }

    /// Cuts node `i` off from every other member.
    pub(super) fn isolate(&mut self, i: usize) {
        let id = self.nodes[i].id;
        for j in 0..self.nodes.len() {
            if j != i {
                let other = self.nodes[j].id;
                self.net.partition(id, other);
            }
        }
    }

    /// Issues a checked read on node `i` and steps through the read
    /// timeout, failing on a stale answer; the read must get an answer.
    fn read_is_never_stale(&mut self, i: usize) {
        let id = self.nodes[i].id;
        self.issue_read_on(i);
        for _ in 0..READ_TIMEOUT_MS + 2 * TICK_MS {
            self.step(false, false)
                .unwrap_or_else(|e| panic!("node {id}: {e}"));
        }
        assert!(self.reads.is_empty(), "the read on node {id} was answered");
    }

    /// Whether node `i` runs and believes it leads.
    fn believes_it_leads(&self, i: usize) -> bool {
        self.nodes[i]
            .live
            .as_ref()
            .is_some_and(|l| l.driver.raw().raft.state == raft::StateRole::Leader)
    }

    /// Steps until node `i`, leading, has just run its quorum check and
    /// has since heard its followers acknowledge a heartbeat round: the
    /// moment after which it keeps leading longest without them.
    fn just_after_quorum_check(&mut self, i: usize) {
        let elapsed = |s: &Sim| {
            s.nodes[i]
                .live
                .as_ref()
                .map_or(0, |l| l.driver.raw().raft.election_elapsed)
        };
        self.step_until(200, "the leader runs its quorum check", |s| elapsed(s) == 0);
        self.step_until(50, "a heartbeat round after the check", |s| elapsed(s) == 3);
    }
}

// Proves that a leader cut off from the rest of its group does not answer
// a read from its lease once the others have elected a new leader and
// acknowledged a write: the read checker flags any answer that misses the
// write. The leader is cut off right after its quorum check passed, so it
// keeps believing it leads for most of two election timeouts, while the
// others elect a new leader after one.
#[test]
fn cut_off_lease_leader_serves_no_read_missing_a_newer_leaders_write() {
    let mut sim = Sim::settled_in(21, crate::config::ReadMode::Lease);
    let old = sim.leaders()[0];
    let old_id = sim.nodes[old].id;
    sim.just_after_quorum_check(old);
    for i in 0..sim.nodes.len() {
        if i != old {
            let other = sim.nodes[i].id;
            sim.net.partition(old_id, other);
        }
    }
    let old_term = sim.term_of(old);
    sim.step_until(400, "the others elect a new leader", |s| {
        (0..s.nodes.len()).any(|i| i != old && s.believes_it_leads(i) && s.term_of(i) > old_term)
    });
    let new = (0..sim.nodes.len())
        .find(|&i| i != old && sim.believes_it_leads(i))
        .expect("a new leader");
    let written_at = sim.acknowledged_write(new, "written-by-the-new-leader");
    assert!(
        sim.believes_it_leads(old),
        "the cut-off leader stepped down before the write at {written_at} was acknowledged: \
         the scenario needs it still leading"
    );
    sim.read_is_never_stale(old);
}

// Proves that a leader in lease mode answers a read on arrival, with no
// round, once a round of its own was acknowledged, and that the lease
// lapses: a read a lease later, with nothing read in between, waits for a
// round again.
#[test]
fn lease_leader_answers_reads_on_arrival_while_its_lease_holds() {
    let mut sim = Sim::settled_in(23, ReadMode::Lease);
    let l = sim.leaders()[0];
    let mut first = sim.lease_read(l);
    assert!(
        matches!(first.try_recv(), Err(oneshot::error::TryRecvError::Empty)),
        "answered before any round was acknowledged"
    );
    sim.step_until(100, "the first read is answered", |_| {
        matches!(first.try_recv(), Ok(Ok(_)))
    });
    let mut second = sim.lease_read(l);
    assert!(
        matches!(second.try_recv(), Ok(Ok(_))),
        "the read within the lease was not answered on arrival"
    );
    for _ in 0..300 {
        sim.step(false, false).expect("the invariants hold");
    }
    let mut later = sim.lease_read(l);
    assert!(
        matches!(later.try_recv(), Err(oneshot::error::TryRecvError::Empty)),
        "answered from a lease that should have lapsed"
    );
}

// Proves that a leader whose driver stops for longer than an election
// timeout (blocked on its disk, or its process paused) does not answer
// from its lease when it resumes, although raft-rs, which counts only
// ticks, still believes it leads: the lease is measured on the clock,
// which ran on. Meanwhile the others elected a new leader and
// acknowledged a write; the paused leader's links are cut, so it learns
// nothing of that before the read.
#[test]
fn paused_lease_leader_serves_no_read_missing_a_newer_leaders_write() {
    let mut sim = Sim::settled_in(25, ReadMode::Lease);
    let old = sim.leaders()[0];
    sim.read_answered(old);
    sim.read_answered(old);
    let resume_at = sim.now + 400;
    sim.nodes[old].paused_until = Some(resume_at);
    sim.isolate(old);
    let old_term = sim.term_of(old);
    sim.step_until(400, "the others elect a new leader", |s| {
        (0..s.nodes.len()).any(|i| i != old && s.believes_it_leads(i) && s.term_of(i) > old_term)
    });
    let new = (0..sim.nodes.len())
        .find(|&i| i != old && sim.believes_it_leads(i))
        .expect("a new leader");
    let written_at = sim.acknowledged_write(new, "written-while-the-leader-was-paused");
    while sim.now + 1 < resume_at {
        sim.step(false, false).expect("the invariants hold");
    }
    assert!(
        sim.believes_it_leads(old),
        "the paused leader no longer believes it leads: the scenario needs it to"
    );
    assert!(sim.acked_index >= written_at);
    sim.read_is_never_stale(old);
}

// Proves that a follower that restarts does not help elect a new leader
// while a lease it acknowledged before the restart may still hold: it
// forgot its acknowledgement, so it ignores vote requests for its first
// election timeout. Here a follower acknowledges the leader's round, the
// other follower is cut off from the leader, the first restarts at once
// (its links to the leader cut too) and the second campaigns; a write is
// then acknowledged by whoever leads, and a read on the old leader must
// see it or get no answer.
#[test]
fn restarted_follower_does_not_elect_a_leader_within_the_lease_it_acknowledged() {
    let mut sim = Sim::settled_in(27, ReadMode::Lease);
    let l = sim.leaders()[0];
    let mut followers = (0..sim.nodes.len()).filter(|&i| i != l);
    let (a, b) = (
        followers.next().expect("a follower"),
        followers.next().expect("another follower"),
    );
    sim.isolate(l);
    sim.net.heal();
    let (lid, aid, bid) = (sim.nodes[l].id, sim.nodes[a].id, sim.nodes[b].id);
    sim.net.partition(lid, bid);
    sim.read_answered(l);
    sim.net.partition(lid, aid);
    sim.nodes[a].crash();
    sim.nodes[a].start();
    let old_term = sim.term_of(l);
    let live = sim.nodes[b].live.as_mut().expect("the follower runs");
    live.driver.raw_mut().campaign().expect("a campaign starts");
    sim.step_until(500, "a new leader is elected", |s| {
        s.believes_it_leads(b) || s.believes_it_leads(a)
    });
    let new = if sim.believes_it_leads(b) { b } else { a };
    assert!(sim.term_of(new) > old_term);
    sim.acknowledged_write(new, "written-by-the-new-leader");
    sim.read_is_never_stale(l);
}

/// Runs one seed of random faults in lease mode, pauses included.
fn run_lease(seed: u64) -> Result<Stats, String> {
    let mut sim = Sim::with_read_mode(seed, &INITIAL_VOTERS, ReadMode::Lease);
    for _ in 0..FAULTY_MS {
        if sim.rng.random_bool(PAUSE_PROBABILITY) {
            let i = sim.rng.random_range(0..sim.nodes.len());
            let ms = sim.rng.random_range(10..400);
            if sim.nodes[i].is_up() {
                let id = sim.nodes[i].id;
                sim.note(("pause", id, ms));
                sim.nodes[i].paused_until = Some(sim.now + ms);
            }
        }
        sim.step(true, true)?;
    }
    sim.finish()?;
    sim.stats.acked = sim.acked.len() as u64;
    Ok(sim.stats)
}

// Proves, over random seeds, that lease reads stay linearizable under
// crashes, partitions, membership changes, a lossy network and members
// that pause for up to 400 ms (twice the longest election timeout): the
// read checker flags any read that misses a write acknowledged before it.
#[test]
fn simulated_lease_clusters_with_pauses_serve_no_stale_read() {
    let seeds = super::seeds(2);
    let mut reads = 0;
    for &seed in &seeds {
        let outcome = std::panic::catch_unwind(|| run_lease(seed))
            .unwrap_or_else(|_| Err("panicked (message above)".to_string()));
        match outcome {
            Ok(stats) => reads += stats.reads,
            Err(e) => panic!("lease seed {seed} failed: {e}"),
        }
    }
    eprintln!("{} lease seeds passed: {reads} reads checked", seeds.len());
    assert!(reads > 0, "no read was answered");
}
