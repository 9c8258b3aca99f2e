//! Linearizable reads. Every reader waiting at one moment shares one
//! ReadIndex request, issued at the start of a round; once raft answers it
//! with a read index and this node has applied up to that index, its
//! readers are answered. Readers still waiting, at any stage, when the
//! read timeout has passed since their request was issued (a lost message,
//! a partition, a member removed from the group that will never apply up
//! to its read index), or whose request is in flight when the leader
//! changes, are answered "dropped" so that they retry. Requests are named by contexts unique in the
//! group (`read_ids`), so an answer meant for another member, or for an
//! earlier life of this one, answers nothing here.
//!
//! In `ReadMode::Lease` a leader holding its lease (`lease`) answers a
//! reader at its commit index on arrival, without a request; a request a
//! leader issues carries the lease round it would grant, and its answer
//! confirms that round.

use std::collections::HashMap;

use raft::ReadState;

use super::Driver;
use super::lease::Round;
use super::read_ids::ReadIds;
use crate::error::ProposeError;
use crate::mailbox::ReadTx;

/// Readers from arrival to answer.
pub(super) struct Reads {
    /// Readers not yet covered by a ReadIndex request; every round issues
    /// one for them, so they wait here for one round at most.
    unissued: Vec<ReadTx>,
    /// ReadIndex requests in flight, by number (see `ReadIds`).
    issued: HashMap<u64, Waiting>,
    /// Readers whose read index is known, waiting for apply to reach it,
    /// with that index.
    ready: Vec<(u64, Waiting)>,
    ids: ReadIds,
    /// Ticks of the driver's logical clock so far.
    ticks: u64,
    /// How many ticks a ReadIndex request may wait for its answer.
    timeout_ticks: u64,
}

/// The readers of one ReadIndex request and the tick it was issued at;
/// for a leader's request, the lease round it grants once answered.
struct Waiting {
    since: u64,
    readers: Vec<ReadTx>,
    round: Option<Round>,
}

impl Waiting {
    fn answer(self, outcome: Result<u64, ProposeError>) {
        for tx in self.readers {
            let _ = tx.send(outcome.clone());
        }
    }
}

impl Driver {
    /// Takes a reader; it is covered by the next round's ReadIndex request.
    /// Refused at once if storage failed or no leader is known.
    pub(super) fn read(&mut self, tx: ReadTx) {
        if let Some(refusal) = self.storage_refusal() {
            let _ = tx.send(Err(refusal));
        } else if self.node.raft.leader_id == 0 {
            let _ = tx.send(Err(ProposeError::NotLeader { leader_id: 0 }));
        } else if let Some(index) = self.lease_read_index() {
            let applied = self.node.raft.raft_log.applied;
            self.reads.serve_at(index, applied, tx);
        } else {
            self.reads.unissued.push(tx);
        }
    }

    /// Issues a ReadIndex request for the readers waiting, or for the
    /// lease's sake alone when it wants renewing; a leader's request
    /// carries the lease round it grants.
    pub(super) fn issue_reads(&mut self) {
        let renew = self
            .lease
            .as_ref()
            .is_some_and(|lease| lease.wants_renewal(self.lease_view(), self.clock.now()));
        if self.reads.unissued.is_empty() && !renew {
            return;
        }
        // raft-rs drops a ReadIndex request a leader takes before it has
        // committed an entry of its own term (the empty one it appends on
        // election), and its readers would wait out the read timeout: they
        // wait here instead, one round or a few while that entry is
        // persisted and acknowledged. A leader that never commits it steps
        // down at its quorum check and issues them as a follower.
        let raft = &self.node.raft;
        if raft.state == raft::StateRole::Leader && !raft.commit_to_current_term() {
            return;
        }
        let view = self.lease_view();
        let now = self.clock.now();
        let round = self.lease.as_mut().and_then(|lease| lease.round(view, now));
        let ctx = self.reads.issue(round);
        self.node.read_index(ctx);
    }

    /// Takes raft's answers to ReadIndex requests; an answer to a leader's
    /// request confirms the lease round it carried.
    pub(super) fn take_read_states(&mut self, states: Vec<ReadState>) {
        for round in self.reads.take_read_states(states) {
            if let Some(lease) = &mut self.lease {
                lease.confirmed(round);
            }
        }
    }
}

impl Reads {
    /// The readers of member `member`, given up on after `timeout_ticks`
    /// ticks of the driver's clock (which the simulation drives too).
    pub(super) fn new(member: u64, timeout_ticks: u64) -> Self {
        Reads {
            unissued: Vec::new(),
            issued: HashMap::new(),
            ready: Vec::new(),
            ids: ReadIds::new(member),
            ticks: 0,
            timeout_ticks: timeout_ticks.max(1),
        }
    }

    /// Covers every waiting reader (perhaps none) with one ReadIndex
    /// request granting lease round `round` once answered; returns the
    /// context to hand to raft.
    fn issue(&mut self, round: Option<Round>) -> Vec<u8> {
        let (number, ctx) = self.ids.next();
        let readers = std::mem::take(&mut self.unissued);
        let since = self.ticks;
        self.issued.insert(
            number,
            Waiting {
                since,
                readers,
                round,
            },
        );
        ctx
    }

    /// Answers a reader at read index `index` (the lease's), at once if
    /// this member has applied up to it, else once it has.
    fn serve_at(&mut self, index: u64, applied: u64, tx: ReadTx) {
        if index <= applied {
            let _ = tx.send(Ok(applied));
        } else {
            let since = self.ticks;
            let readers = vec![tx];
            self.ready.push((
                index,
                Waiting {
                    since,
                    readers,
                    round: None,
                },
            ));
        }
    }

    /// Ticks of the driver's clock since this member started.
    pub(super) fn ticks(&self) -> u64 {
        self.ticks
    }

    /// One tick of the driver's clock: gives up on the readers whose
    /// request was issued the read timeout ago, whether it is still
    /// unanswered or this member has not applied up to its read index.
    pub(super) fn tick(&mut self) {
        self.ticks += 1;
        let (now, timeout) = (self.ticks, self.timeout_ticks);
        let due = |w: &Waiting| now - w.since >= timeout;
        let expired: Vec<u64> = self
            .issued
            .iter()
            .filter(|(_, w)| due(w))
            .map(|(&number, _)| number)
            .collect();
        for number in expired {
            if let Some(w) = self.issued.remove(&number) {
                w.answer(Err(ProposeError::Dropped(
                    "the read index request was not answered in time; retry".into(),
                )));
            }
        }
        let (expired, ready): (Vec<_>, Vec<_>) = std::mem::take(&mut self.ready)
            .into_iter()
            .partition(|(_, w)| due(w));
        self.ready = ready;
        for (index, w) in expired {
            w.answer(Err(ProposeError::Dropped(format!(
                "this node did not apply up to the read index {index} in time; retry"
            ))));
        }
    }

    /// Takes raft's answers: each request's readers now wait for apply to
    /// reach its read index. An answer to a request this life did not make
    /// or already gave up on (a late one) is ignored. Returns the lease
    /// rounds the answered requests carried.
    fn take_read_states(&mut self, states: Vec<ReadState>) -> Vec<Round> {
        let mut rounds = Vec::new();
        for rs in states {
            let Some(number) = self.ids.ours(&rs.request_ctx) else {
                continue;
            };
            if let Some(mut w) = self.issued.remove(&number) {
                rounds.extend(w.round.take());
                self.ready.push((rs.index, w));
            }
        }
        rounds
    }

    /// Answers the readers whose read index this node has applied.
    pub(super) fn answer(&mut self, applied: u64) {
        let (done, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.ready)
            .into_iter()
            .partition(|(index, _)| *index <= applied);
        self.ready = waiting;
        for (_, w) in done {
            w.answer(Ok(applied));
        }
    }

    /// ReadIndex requests in flight may have gone to the old leader and will
    /// never be answered: their readers are told to retry.
    pub(super) fn drop_issued(&mut self) {
        for (_, w) in self.issued.drain() {
            w.answer(Err(ProposeError::Dropped("leader changed".into())));
        }
    }

    /// How many readers wait, at any stage.
    pub(super) fn waiting(&self) -> usize {
        let issued: usize = self.issued.values().map(|w| w.readers.len()).sum();
        let ready: usize = self.ready.iter().map(|(_, w)| w.readers.len()).sum();
        self.unissued.len() + issued + ready
    }

    /// Answers every reader, whatever its stage, with `err`.
    pub(super) fn fail_all(&mut self, err: &ProposeError) {
        for tx in self.unissued.drain(..) {
            let _ = tx.send(Err(err.clone()));
        }
        for (_, w) in self.issued.drain() {
            w.answer(Err(err.clone()));
        }
        for (_, w) in self.ready.drain(..) {
            w.answer(Err(err.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot;

    use super::*;

    type ReadRx = oneshot::Receiver<Result<u64, ProposeError>>;

    const TIMEOUT_TICKS: u64 = 200;

    fn reader(reads: &mut Reads) -> ReadRx {
        let (tx, rx) = oneshot::channel();
        reads.unissued.push(tx);
        rx
    }

    fn answer_for(ctx: &[u8], index: u64) -> ReadState {
        ReadState {
            index,
            request_ctx: ctx.to_vec(),
        }
    }

    // Proves that a late answer to a request given up on answers nothing,
    // not even the request issued after it, while that request's own
    // answer does.
    #[test]
    fn late_answer_to_an_expired_request_answers_no_later_one() {
        let mut reads = Reads::new(1, TIMEOUT_TICKS);
        let mut expired = reader(&mut reads);
        let old = reads.issue(None);
        for _ in 0..TIMEOUT_TICKS {
            reads.tick();
        }
        assert!(matches!(
            expired.try_recv(),
            Ok(Err(ProposeError::Dropped(_)))
        ));
        let mut waiting = reader(&mut reads);
        let new = reads.issue(None);
        reads.take_read_states(vec![answer_for(&old, 5)]);
        reads.answer(10);
        assert!(waiting.try_recv().is_err(), "answered by the late answer");
        reads.take_read_states(vec![answer_for(&new, 7)]);
        reads.answer(10);
        assert!(matches!(waiting.try_recv(), Ok(Ok(10))));
    }

    // Proves that a reader whose read index this member never applies is
    // told to retry once the read timeout has passed since its request was
    // issued, and not a tick before.
    #[test]
    fn reader_waiting_to_apply_its_read_index_expires_with_its_request() {
        let mut reads = Reads::new(1, TIMEOUT_TICKS);
        let mut waiting = reader(&mut reads);
        let ctx = reads.issue(None);
        reads.tick();
        reads.take_read_states(vec![answer_for(&ctx, 50)]);
        reads.answer(40);
        for _ in 1..TIMEOUT_TICKS - 1 {
            reads.tick();
        }
        assert!(waiting.try_recv().is_err(), "answered before the timeout");
        reads.tick();
        assert!(matches!(
            waiting.try_recv(),
            Ok(Err(ProposeError::Dropped(_)))
        ));
    }

    // Proves that the count of waiting readers (what a stopping node waits
    // for) covers every stage: not yet issued, issued, and waiting to
    // apply; answered readers leave it.
    #[test]
    fn waiting_readers_are_counted_at_every_stage() {
        let mut reads = Reads::new(1, TIMEOUT_TICKS);
        let _first = reader(&mut reads);
        let ctx = reads.issue(None);
        let _second = reader(&mut reads);
        let _third = reader(&mut reads);
        reads.issue(None);
        let _fourth = reader(&mut reads);
        assert_eq!(reads.waiting(), 4);
        reads.take_read_states(vec![answer_for(&ctx, 50)]);
        assert_eq!(reads.waiting(), 4, "waiting to apply is still waiting");
        reads.answer(50);
        assert_eq!(reads.waiting(), 3);
    }

    // Proves that an answer to a request of an earlier life of this member
    // (same member id, counting from 1 again) answers nothing.
    #[test]
    fn answer_to_an_earlier_life_answers_nothing() {
        let mut before = Reads::new(1, TIMEOUT_TICKS);
        let _gone = reader(&mut before);
        let old = before.issue(None);
        let mut after = Reads::new(1, TIMEOUT_TICKS);
        let mut waiting = reader(&mut after);
        after.issue(None);
        after.take_read_states(vec![answer_for(&old, 5)]);
        after.answer(10);
        assert!(
            waiting.try_recv().is_err(),
            "answered by the earlier life's answer"
        );
    }
}
