//! Client proposals taken during one pass over the inbox go to raft together,
//! as one `MsgPropose` with an entry each.
//!
//! raft-rs's leader sends an append to every follower for each proposal it
//! steps, and each follower answers each append. Stepping the pass's
//! proposals together costs one append per follower and one answer back,
//! whatever the number of proposals.

use raft::StateRole;
use raft::eraftpb::{Entry, Message, MessageType};

use super::Driver;
use crate::command::{Command, Proposal};
use crate::error::ProposeError;
use crate::mailbox::ProposeTx;

/// A proposal taken from the inbox, not yet stepped into raft.
pub(super) struct Queued {
    request_id: u64,
    data: Vec<u8>,
    tx: ProposeTx,
}

/// A proposal stepped into raft, waiting for the entry at its index to be
/// applied; it is recognised there by its request id.
pub(super) struct Pending {
    pub(super) request_id: u64,
    pub(super) tx: ProposeTx,
}

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

    /// Takes a client proposal; it reaches raft at the start of the next
    /// round. Refused at once if this peer cannot lead it now.
    pub(super) fn propose(&mut self, request_id: u64, command: Command, tx: ProposeTx) {
        if let Some(refusal) = self.refusal() {
            let _ = tx.send(Err(refusal));
            return;
        }
        let data = Proposal {
            request_id,
            command,
        }
        .encode();
        self.queued.push(Queued {
            request_id,
            data,
            tx,
        });
    }

    /// Steps every queued proposal into raft as one message; each waits for
    /// the entry at its index to be applied.
    pub(super) fn propose_queued(&mut self) {
        if self.queued.is_empty() {
            return;
        }
        let queued = std::mem::take(&mut self.queued);
        // Leadership may have been lost since the proposals were taken.
        if let Some(refusal) = self.refusal() {
            for q in queued {
                q.fail(refusal.clone());
            }
            return;
        }
        let mut waiters = Vec::with_capacity(queued.len());
        let mut entries = Vec::with_capacity(queued.len());
        for q in queued {
            entries.push(Entry {
                data: q.data.into(),
                ..Default::default()
            });
            waiters.push(Pending {
                request_id: q.request_id,
                tx: q.tx,
            });
        }
        let mut m = Message::default();
        m.set_msg_type(MessageType::MsgPropose);
        m.from = self.id;
        m.set_entries(entries.into());
        let before = self.node.raft.raft_log.last_index();
        match self.node.raft.step(m) {
            Ok(()) => {
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
