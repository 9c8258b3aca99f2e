//! Client proposals taken during one pass over the inbox go to raft together,
//! as one `MsgPropose` with an entry each.
//!
//! raft-rs's leader sends an append to every follower for each proposal it
//! steps, and each follower answers each append. Stepping the pass's
//! proposals together costs one append per follower and one answer back,
//! whatever the number of proposals.
//!
//! A leader holds a bounded number of bytes of uncommitted entries
//! (raft-rs's `max_uncommitted_size`, which refuses a whole message that
//! would pass it), counting with them the committed entries a stalled
//! engine has not taken yet: the driver steps the queued proposals that fit and
//! refuses the rest as retryable, so one large proposal does not cost the
//! small ones beside it their place.

use std::time::Instant;

use raft::StateRole;
use raft::eraftpb::{Entry, Message, MessageType};

use super::Driver;
use crate::error::ProposeError;
use crate::mailbox::ProposeTx;

/// A proposal taken from the inbox, not yet stepped into raft.
pub(super) struct Queued {
    request_id: u64,
    data: Vec<u8>,
    tx: ProposeTx,
}

/// A proposal stepped into raft, waiting for the entry at its index to be
/// applied: handed to the applier with its entry, which answers it.
pub(super) type Pending = crate::applier::Waiter;

impl Queued {
    pub(super) fn fail(self, error: ProposeError) {
        let _ = self.tx.send(Err(error));
    }
}

impl Driver {
    /// Why this peer cannot take a proposal now, if it cannot.
    pub(super) fn refusal(&self) -> Option<ProposeError> {
        if let Some(refusal) = self.storage_refusal() {
            return Some(refusal);
        }
        (self.node.raft.state != StateRole::Leader).then(|| ProposeError::NotLeader {
            leader_id: self.node.raft.leader_id,
        })
    }

    /// Takes a client proposal, `data` its entry; it reaches raft at the
    /// start of the next round. Refused at once if this peer cannot lead it
    /// now, or if its entry would be larger than an entry may be.
    pub(super) fn propose(&mut self, request_id: u64, data: Vec<u8>, tx: ProposeTx) {
        if let Some(refusal) = self.refusal() {
            let _ = tx.send(Err(refusal));
            return;
        }
        if data.len() > self.max_entry_bytes {
            let _ = tx.send(Err(ProposeError::Invalid(format!(
                "the write makes an entry of {} bytes; the limit is {}",
                data.len(),
                self.max_entry_bytes
            ))));
            return;
        }
        self.queued.push(Queued {
            request_id,
            data,
            tx,
        });
    }

    /// Steps the queued proposals that fit the uncommitted budget into
    /// raft as one message, and refuses the rest as retryable; each stepped
    /// one waits for the entry at its index to be applied.
    pub(super) fn propose_queued(&mut self) {
        if self.queued.is_empty() {
            return;
        }
        let mut queued = std::mem::take(&mut self.queued);
        // Leadership may have been lost since the proposals were taken.
        if let Some(refusal) = self.refusal() {
            for q in queued {
                q.fail(refusal.clone());
            }
            return;
        }
        // Entries committed but held back from a stalled engine count too:
        // the budget bounds what the leader holds in memory for its
        // writers, whichever of the two waits it is in.
        let uncommitted = self.node.raft.uncommitted_size() as u64 + self.unapplied.bytes();
        let fitting = fitting(
            queued.iter().map(|q| q.data.len() as u64),
            uncommitted,
            self.max_uncommitted_bytes,
        );
        if fitting < queued.len() {
            let refusal = ProposeError::Dropped(format!(
                "the leader would hold more than its limit of {} bytes of entries \
                 not yet committed or applied (it holds {uncommitted}); retry",
                self.max_uncommitted_bytes
            ));
            for q in queued.drain(fitting..) {
                q.fail(refusal.clone());
            }
        }
        if queued.is_empty() {
            return;
        }
        let mut waiters = Vec::with_capacity(queued.len());
        let mut entries = Vec::with_capacity(queued.len());
        let proposed_at = Instant::now();
        for q in queued {
            entries.push(Entry {
                data: q.data.into(),
                ..Default::default()
            });
            waiters.push(Pending {
                request_id: q.request_id,
                tx: q.tx,
                proposed_at,
            });
        }
        let largest = entries.iter().map(|e| e.data.len() as u64).max();
        self.limit_flow(None, largest.unwrap_or(0));
        let mut m = Message::default();
        m.set_msg_type(MessageType::MsgPropose);
        m.from = self.id;
        m.set_entries(entries.into());
        let before = self.node.raft.raft_log.last_index();
        match self.node.raft.step(m) {
            Ok(()) => {
                let stepped = waiters.len() as u64;
                self.metrics.proposals.inc_by(stepped);
                self.metrics.proposal_batch.observe(stepped as f64);
                let last = self.node.raft.raft_log.last_index();
                debug_assert_eq!(
                    last,
                    before + waiters.len() as u64,
                    "one proposal appends one entry"
                );
                for (index, waiter) in (before + 1..).zip(waiters) {
                    self.proposals.insert(index, waiter);
                }
            }
            Err(e) => {
                let error = ProposeError::Dropped(e.to_string());
                for waiter in waiters {
                    let _ = waiter.tx.send(Err(error.clone()));
                }
            }
        }
    }
}

/// How many of the proposals of `sizes` (their entries' bytes, in order)
/// fit a leader holding `uncommitted` bytes of uncommitted entries with a
/// budget of `budget`. Like raft-rs, a leader holding none takes at least
/// one, however large, so that no single proposal is refused forever.
fn fitting(sizes: impl Iterator<Item = u64>, uncommitted: u64, budget: u64) -> usize {
    let mut total = uncommitted;
    let mut taken = 0;
    for size in sizes {
        let fits = total.saturating_add(size) <= budget || (taken == 0 && uncommitted == 0);
        if !fits {
            break;
        }
        total = total.saturating_add(size);
        taken += 1;
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::fitting;

    // Proves the budget rule: proposals are taken in order while they fit;
    // a leader holding nothing takes at least one, however large; one
    // holding its whole budget takes none.
    #[test]
    fn proposals_are_taken_while_they_fit_the_uncommitted_budget() {
        let sizes = [40u64, 30, 20, 50];
        assert_eq!(fitting(sizes.into_iter(), 0, 100), 3);
        assert_eq!(fitting(sizes.into_iter(), 20, 100), 2);
        assert_eq!(fitting(sizes.into_iter(), 100, 100), 0);
        assert_eq!(fitting([500u64, 1].into_iter(), 0, 100), 1);
        assert_eq!(fitting([500u64].into_iter(), 1, 100), 0);
        assert_eq!(fitting(std::iter::empty(), 0, 100), 0);
    }
}
