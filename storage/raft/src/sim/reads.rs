//! ReadIndex scenarios on the simulated network: reads issued at once on
//! several members, and late answers that arrive after their reader is
//! gone.

use raft::eraftpb::{ConfChangeSingle, ConfChangeType, ConfChangeV2, MessageType};
use tokio::sync::oneshot;

use super::net::Weather;
use super::{Ack, QUIET_MS, Sim};
use crate::command::Command;
use crate::error::ProposeError;
use crate::mailbox::Input;

type ReadRx = oneshot::Receiver<Result<u64, ProposeError>>;

impl Sim {
    /// A group on a perfect network that took some writes and then had
    /// time to settle: one leader, every follower caught up.
    pub(super) fn settled(seed: u64) -> Sim {
        Sim::settled_in(seed, crate::config::ReadMode::Safe)
    }

    /// A settled group whose reads confirm leadership as `read_mode` says.
    pub(super) fn settled_in(seed: u64, read_mode: crate::config::ReadMode) -> Sim {
        let mut sim = Sim::with_read_mode(seed, &super::INITIAL_VOTERS, read_mode);
        sim.weather = Weather {
            drop: 0.0,
            duplicate: 0.0,
            max_delay_ms: 0,
        };
        for i in 0..QUIET_MS {
            sim.step(false, i < QUIET_MS / 4)
                .expect("a quiet group keeps the invariants");
        }
        assert_eq!(sim.leaders().len(), 1, "one leader after a quiet period");
        sim
    }

    /// Submits a read on node `i`, as `PeerHandle::read_index` does.
    fn read(&mut self, i: usize) -> ReadRx {
        let (tx, rx) = oneshot::channel();
        let live = self.nodes[i].live.as_mut().expect("the node runs");
        live.driver.handle(Input::Read { tx });
        rx
    }

    /// Proposes a write on node `i`.
    pub(super) fn write(&mut self, i: usize, key: &str) -> Ack {
        let (tx, rx) = oneshot::channel();
        self.next_key += 1;
        let live = self.nodes[i].live.as_mut().expect("the node runs");
        live.driver.handle(Input::propose(
            self.next_key,
            Command::Put {
                key: key.as_bytes().to_vec(),
                value: b"v".to_vec(),
            },
            None,
            tx,
        ));
        rx
    }

    /// Steps until `done` holds, for at most `ms` simulated milliseconds.
    pub(super) fn step_until(
        &mut self,
        ms: u64,
        what: &str,
        mut done: impl FnMut(&mut Sim) -> bool,
    ) {
        for _ in 0..ms {
            if done(self) {
                return;
            }
            self.step(false, false).expect("the invariants hold");
        }
        assert!(done(self), "{what} within {ms} ms");
    }
}

// Proves that ReadIndex requests issued at the same moment on every
// member, the leader included, are all answered. raft-rs's leader keeps
// one pending request per context and drops a second one with the same
// context, so the contexts must be unique across the group.
#[test]
fn reads_issued_at_once_on_every_member_are_all_answered() {
    let mut sim = Sim::settled(5);
    let mut reads: Vec<(u64, ReadRx)> = (0..sim.nodes.len())
        .map(|i| (sim.nodes[i].id, sim.read(i)))
        .collect();
    for _ in 0..200 {
        sim.step(false, false).expect("the invariants hold");
    }
    let leader = sim.nodes[sim.leaders()[0]].id;
    let unanswered: Vec<String> = reads
        .iter_mut()
        .filter_map(|(id, rx)| match rx.try_recv() {
            Ok(Ok(_)) => None,
            other => Some(format!("node {id}: {other:?}")),
        })
        .collect();
    assert!(
        unanswered.is_empty(),
        "reads not answered after 200 ms (node {leader} leads): {unanswered:?}"
    );
}

// Proves that the answer to a read a member issued before it restarted
// does not answer a read it issues after the restart. The late answer
// carries the read index of its time; a write acknowledged since then must
// be visible to the new read, so taking the old answer for the new read
// would be a stale read.
#[test]
fn late_answer_from_before_a_restart_does_not_answer_a_new_read() {
    let mut sim = Sim::settled(7);
    let l = sim.leaders()[0];
    let f = (0..sim.nodes.len()).find(|&i| i != l).expect("a follower");
    let (lid, fid) = (sim.nodes[l].id, sim.nodes[f].id);
    // Everything but heartbeats from the leader to the follower is held
    // back: the follower keeps knowing its leader but learns nothing else.
    sim.net.hold(Some(Box::new(move |m| {
        m.from == lid && m.to == fid && m.get_msg_type() != MessageType::MsgHeartbeat
    })));
    let is_read_answer =
        |m: &raft::eraftpb::Message| m.get_msg_type() == MessageType::MsgReadIndexResp;
    let _before_restart = sim.read(f);
    sim.step_until(100, "the leader answers the first read", |s| {
        s.net.held().any(is_read_answer)
    });
    sim.nodes[f].crash();
    let mut ack = sim.write(l, "written-while-down");
    let mut written_at = 0;
    sim.step_until(100, "the write is acknowledged", |_| match ack.try_recv() {
        Ok(Ok((index, _))) => {
            written_at = index;
            true
        }
        Err(oneshot::error::TryRecvError::Empty) => false,
        Ok(Err(e)) => panic!("the write failed: {e}"),
        Err(e) => panic!("the write was dropped: {e}"),
    });
    sim.nodes[f].start();
    sim.step_until(200, "the restarted follower hears its leader", |s| {
        s.nodes[f]
            .live
            .as_ref()
            .is_some_and(|live| live.driver.raw().raft.leader_id == lid)
    });
    let mut after_restart = sim.read(f);
    sim.step(false, false).expect("the invariants hold");
    // The new read is on its way to the leader; the old answer arrives now.
    let next = sim.now + 1;
    sim.net.release(next, is_read_answer);
    let mut answered = None;
    for _ in 0..100 {
        sim.step(false, false).expect("the invariants hold");
        if let Ok(outcome) = after_restart.try_recv() {
            answered = Some(outcome);
            break;
        }
    }
    if answered.is_none() {
        // Let everything through: the new read must now be answered.
        sim.net.hold(None);
        let next = sim.now + 1;
        sim.net.release(next, |_| true);
        sim.step_until(300, "the read after the restart is answered", |_| {
            if let Ok(outcome) = after_restart.try_recv() {
                answered = Some(outcome);
            }
            answered.is_some()
        });
    }
    match answered {
        Some(Ok(applied)) => assert!(
            applied >= written_at,
            "stale read: answered at applied index {applied}, but the write at \
             {written_at} was acknowledged before the read was issued"
        ),
        other => panic!("the read after the restart: {other:?}"),
    }
}

/// Ticks a read may wait: the peer's default read timeout on the
/// simulation's clock.
const READ_TIMEOUT_MS: u64 = 2_000;

/// Steps for the read timeout and one tick more, and says which of
/// `reads` got no answer by then, and which were answered `Ok`.
fn unanswered_after_the_read_timeout(sim: &mut Sim, reads: &mut [(&str, ReadRx)]) -> Vec<String> {
    let mut outcomes: Vec<Option<Result<u64, ProposeError>>> = vec![None; reads.len()];
    for _ in 0..READ_TIMEOUT_MS + super::TICK_MS {
        sim.step(false, false).expect("the invariants hold");
        for (outcome, (_, rx)) in outcomes.iter_mut().zip(reads.iter_mut()) {
            if outcome.is_none() {
                *outcome = rx.try_recv().ok();
            }
        }
    }
    reads
        .iter()
        .zip(outcomes)
        .filter_map(|((what, _), outcome)| match outcome {
            None => Some(format!("{what}: no answer")),
            Some(Ok(applied)) => Some(format!("{what}: answered Ok({applied}) though cut off")),
            Some(Err(_)) => None,
        })
        .collect()
}

// Proves that every read waiting on a member cut off from the group is
// answered within the read timeout, told to retry, at every stage: the
// one whose request never reached the leader, and the one that learned
// its read index but was cut off before applying up to it.
#[test]
fn reads_on_a_cut_off_member_are_answered_within_the_read_timeout() {
    let mut sim = Sim::settled(11);
    let l = sim.leaders()[0];
    let f = (0..sim.nodes.len()).find(|&i| i != l).expect("a follower");
    let (lid, fid) = (sim.nodes[l].id, sim.nodes[f].id);
    // The follower hears its leader but gets no new entries: it learns a
    // read index it has not applied.
    sim.net.hold(Some(Box::new(move |m| {
        m.from == lid && m.to == fid && m.get_msg_type() == MessageType::MsgAppend
    })));
    let mut ack = sim.write(l, "committed-without-the-follower");
    sim.step_until(100, "the write is acknowledged", |_| {
        !matches!(ack.try_recv(), Err(oneshot::error::TryRecvError::Empty))
    });
    let mut waiting_for_apply = sim.read(f);
    for _ in 0..100 {
        sim.step(false, false).expect("the invariants hold");
    }
    assert!(
        matches!(
            waiting_for_apply.try_recv(),
            Err(oneshot::error::TryRecvError::Empty)
        ),
        "the follower cannot have applied its read index"
    );
    for i in 0..sim.nodes.len() {
        if i != f {
            let other = sim.nodes[i].id;
            sim.net.partition(fid, other);
        }
    }
    let never_reaching_the_leader = sim.read(f);
    let unanswered = unanswered_after_the_read_timeout(
        &mut sim,
        &mut [
            (
                "the read waiting to apply its read index",
                waiting_for_apply,
            ),
            ("the read whose request was lost", never_reaching_the_leader),
        ],
    );
    assert!(unanswered.is_empty(), "{unanswered:?}");
}

// Proves that a read on a member removed from the group, which still
// believes in its old leader, is answered within the read timeout. The
// leader still answers its ReadIndex request, with a read index the
// member never reaches: the leader sends it no more entries.
#[test]
fn read_on_a_removed_member_is_answered_within_the_read_timeout() {
    let mut sim = Sim::settled(13);
    let l = sim.leaders()[0];
    let f = (0..sim.nodes.len()).find(|&i| i != l).expect("a follower");
    let fid = sim.nodes[f].id;
    sim.nodes[f].kept_after_removal = true;
    let (tx, mut removed) = oneshot::channel();
    let mut change = ConfChangeV2::default();
    let mut single = ConfChangeSingle::default();
    single.set_change_type(ConfChangeType::RemoveNode);
    single.node_id = fid;
    change.set_changes(vec![single].into());
    let live = sim.nodes[l].live.as_mut().expect("the leader runs");
    live.driver.handle(Input::ChangeMembers { change, tx });
    sim.step_until(200, "the removal is applied on the leader", |_| {
        !matches!(removed.try_recv(), Err(oneshot::error::TryRecvError::Empty))
    });
    let mut ack = sim.write(l, "committed-after-the-removal");
    sim.step_until(100, "the write is acknowledged", |_| {
        !matches!(ack.try_recv(), Err(oneshot::error::TryRecvError::Empty))
    });
    let removed_member = sim.read(f);
    let unanswered = unanswered_after_the_read_timeout(
        &mut sim,
        &mut [("the read on the removed member", removed_member)],
    );
    assert!(unanswered.is_empty(), "{unanswered:?}");
}

// Proves that a read a new leader takes before it has committed an entry
// of its own term is answered, not dropped. raft-rs drops a ReadIndex
// request in that window without a word, and with the raft log written off
// the raft thread the window lasts a write and an acknowledgement: the
// reader then waited out the read timeout and was told to retry. The
// driver now holds such readers until the leader has committed in its
// term.
#[test]
fn read_on_a_leader_that_has_not_yet_committed_in_its_term_is_answered() {
    for seed in 1..=4 {
        let mut sim = Sim::settled(seed);
        // Every fsync takes a few milliseconds: the new leader's first
        // entry is durable, and committed, only some time after it leads.
        sim.disk = super::disk::Disk {
            slow_fsync: 1.0,
            max_fsync_ms: 5,
            stall: 0.0,
            page_bytes: 4096,
        };
        let old = sim.leaders()[0];
        let old_term = sim.term_of(old);
        sim.nodes[old].crash();
        let mut new = None;
        sim.step_until(3_000, "a new leader", |sim| {
            new = sim
                .leaders()
                .into_iter()
                .find(|&i| sim.term_of(i) > old_term);
            new.is_some()
        });
        let new = new.expect("a new leader");
        let raft = &sim.nodes[new].live.as_ref().expect("it runs").driver;
        assert!(
            !raft.raw().raft.commit_to_current_term(),
            "seed {seed}: the new leader committed in its term at once; the window is not tested"
        );
        let mut rx = sim.read(new);
        let mut answer = None;
        sim.step_until(1_000, "the read's answer", |_| {
            answer = rx.try_recv().ok();
            answer.is_some()
        });
        assert!(
            matches!(answer, Some(Ok(_))),
            "seed {seed}: the read on the new leader was answered {answer:?}"
        );
    }
}
