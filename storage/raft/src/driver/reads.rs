//! Linearizable reads. Every reader waiting at one moment shares one
//! ReadIndex request, issued at the start of a round; once raft answers it
//! with a read index and this node has applied up to that index, its
//! readers are answered. A request that goes unanswered for the read
//! timeout, or is in flight when the leader changes, is answered "dropped"
//! so that its readers retry.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use raft::{RawNode, ReadState};

use super::Driver;
use crate::error::ProposeError;
use crate::log::RaftLogStore;
use crate::mailbox::ReadTx;

/// Readers from arrival to answer.
pub(super) struct Reads {
    /// Readers not yet covered by a ReadIndex request.
    unissued: Vec<ReadTx>,
    /// ReadIndex requests in flight, by context id.
    issued: HashMap<u64, (Instant, Vec<ReadTx>)>,
    /// Readers whose read index is known, waiting for apply to reach it.
    ready: Vec<(u64, Vec<ReadTx>)>,
    next_ctx: u64,
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
    pub(super) fn new(timeout: Duration) -> Self {
        Reads {
            unissued: Vec::new(),
            issued: HashMap::new(),
            ready: Vec::new(),
            next_ctx: 1,
            timeout,
        }
    }

    /// Covers every waiting reader with one ReadIndex request.
    pub(super) fn issue(&mut self, node: &mut RawNode<RaftLogStore>) {
        if self.unissued.is_empty() {
            return;
        }
        let ctx = self.next_ctx;
        self.next_ctx += 1;
        let readers = std::mem::take(&mut self.unissued);
        self.issued.insert(ctx, (Instant::now(), readers));
        node.read_index(ctx.to_le_bytes().to_vec());
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
    /// reach its read index.
    pub(super) fn take_read_states(&mut self, states: Vec<ReadState>) {
        for rs in states {
            let ctx = rs
                .request_ctx
                .as_slice()
                .try_into()
                .map(u64::from_le_bytes)
                .unwrap_or(0);
            if let Some((_, readers)) = self.issued.remove(&ctx) {
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
