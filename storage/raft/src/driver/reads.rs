//! Linearizable reads. Every reader waiting at one moment shares one
//! ReadIndex request, issued at the start of a round; once raft answers it
//! with a read index and this node has applied up to that index, its
//! readers are answered. A request that goes unanswered for the read
//! timeout, or is in flight when the leader changes, is answered "dropped"
//! so that its readers retry. Requests are named by contexts unique in the
//! group (`read_ids`), so an answer meant for another member, or for an
//! earlier life of this one, answers nothing here.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use raft::ReadState;

use super::Driver;
use super::read_ids::ReadIds;
use crate::error::ProposeError;
use crate::mailbox::ReadTx;

/// Readers from arrival to answer.
pub(super) struct Reads {
    /// Readers not yet covered by a ReadIndex request.
    unissued: Vec<ReadTx>,
    /// ReadIndex requests in flight, by number (see `ReadIds`).
    issued: HashMap<u64, (Instant, Vec<ReadTx>)>,
    /// Readers whose read index is known, waiting for apply to reach it.
    ready: Vec<(u64, Vec<ReadTx>)>,
    ids: ReadIds,
    /// How long a ReadIndex request may wait for its answer.
    timeout: Duration,
}

impl Driver {
    /// Takes a reader; it is covered by the next round's ReadIndex request.
    /// Refused at once if storage failed or no leader is known.
    pub(super) fn read(&mut self, tx: ReadTx) {
        if let Some(refusal) = self.storage_refusal() {
            let _ = tx.send(Err(refusal));
        } else if self.node.raft.leader_id == 0 {
            let _ = tx.send(Err(ProposeError::NotLeader { leader_id: 0 }));
        } else {
            self.reads.unissued.push(tx);
        }
    }
}

impl Reads {
    /// The readers of member `member`.
    pub(super) fn new(member: u64, timeout: Duration) -> Self {
        Reads {
            unissued: Vec::new(),
            issued: HashMap::new(),
            ready: Vec::new(),
            ids: ReadIds::new(member),
            timeout,
        }
    }

    /// Covers every waiting reader with one ReadIndex request; returns the
    /// context to hand to raft, if there were readers.
    pub(super) fn issue(&mut self) -> Option<Vec<u8>> {
        if self.unissued.is_empty() {
            return None;
        }
        let (number, ctx) = self.ids.next();
        let readers = std::mem::take(&mut self.unissued);
        self.issued.insert(number, (Instant::now(), readers));
        Some(ctx)
    }

    /// Gives up on requests older than the timeout (a lost message, a
    /// partition).
    pub(super) fn expire(&mut self, now: Instant) {
        let timeout = self.timeout;
        self.issued.retain(|_, (at, readers)| {
            if now.duration_since(*at) < timeout {
                return true;
            }
            for tx in readers.drain(..) {
                let _ = tx.send(Err(ProposeError::Dropped(
                    "read index request expired".into(),
                )));
            }
            false
        });
    }

    /// Takes raft's answers: each request's readers now wait for apply to
    /// reach its read index. An answer to a request this life did not make
    /// or already gave up on (a late one) is ignored.
    pub(super) fn take_read_states(&mut self, states: Vec<ReadState>) {
        for rs in states {
            let Some(number) = self.ids.ours(&rs.request_ctx) else {
                continue;
            };
            if let Some((_, readers)) = self.issued.remove(&number) {
                self.ready.push((rs.index, readers));
            }
        }
    }

    /// Answers the readers whose read index this node has applied.
    pub(super) fn answer(&mut self, applied: u64) {
        self.ready.retain_mut(|(index, readers)| {
            if *index > applied {
                return true;
            }
            for tx in readers.drain(..) {
                let _ = tx.send(Ok(applied));
            }
            false
        });
    }

    /// ReadIndex requests in flight may have gone to the old leader and will
    /// never be answered: their readers are told to retry.
    pub(super) fn drop_issued(&mut self) {
        for (_, (_, readers)) in self.issued.drain() {
            for tx in readers {
                let _ = tx.send(Err(ProposeError::Dropped("leader changed".into())));
            }
        }
    }

    /// Answers every reader, whatever its stage, with `err`.
    pub(super) fn fail_all(&mut self, err: &ProposeError) {
        for tx in self.unissued.drain(..) {
            let _ = tx.send(Err(err.clone()));
        }
        for (_, (_, readers)) in self.issued.drain() {
            for tx in readers {
                let _ = tx.send(Err(err.clone()));
            }
        }
        for (_, readers) in self.ready.drain(..) {
            for tx in readers {
                let _ = tx.send(Err(err.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot;

    use super::*;

    type ReadRx = oneshot::Receiver<Result<u64, ProposeError>>;

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
        let timeout = Duration::from_secs(2);
        let mut reads = Reads::new(1, timeout);
        let mut expired = reader(&mut reads);
        let old = reads.issue().expect("a request");
        reads.expire(Instant::now() + timeout);
        assert!(matches!(
            expired.try_recv(),
            Ok(Err(ProposeError::Dropped(_)))
        ));
        let mut waiting = reader(&mut reads);
        let new = reads.issue().expect("a request");
        reads.take_read_states(vec![answer_for(&old, 5)]);
        reads.answer(10);
        assert!(waiting.try_recv().is_err(), "answered by the late answer");
        reads.take_read_states(vec![answer_for(&new, 7)]);
        reads.answer(10);
        assert!(matches!(waiting.try_recv(), Ok(Ok(10))));
    }

    // Proves that an answer to a request of an earlier life of this member
    // (same member id, counting from 1 again) answers nothing.
    #[test]
    fn answer_to_an_earlier_life_answers_nothing() {
        let timeout = Duration::from_secs(2);
        let mut before = Reads::new(1, timeout);
        let _gone = reader(&mut before);
        let old = before.issue().expect("a request");
        let mut after = Reads::new(1, timeout);
        let mut waiting = reader(&mut after);
        after.issue().expect("a request");
        after.take_read_states(vec![answer_for(&old, 5)]);
        after.answer(10);
        assert!(
            waiting.try_recv().is_err(),
            "answered by the earlier life's answer"
        );
    }
}
