//! Applying committed entries: decode them, apply them to the state machine
//! in one batch (configuration changes with the member directory), and
//! answer the proposals and configuration changes waiting for them. A
//! waiter whose index was filled by another leader's entry is told its
//! request was dropped.
//!
//! The raft thread never waits for the engine. Committed entries queue up
//! in order (`Unapplied`) and are applied only while the engine takes a
//! write without making it wait (`StateMachine::apply_would_wait`); while
//! flushes or compactions lag behind, the entries stay queued and the
//! thread goes on ticking, sending heartbeats and appending, so a slow
//! engine costs the group no election. Raft's applied index follows the
//! engine's, so the proposals and readers waiting for an index are
//! answered only once it is applied, and the log is compacted only behind
//! it. The queue counts against the leader's budget of entries not yet
//! applied (see `proposals`), and past that budget (on a follower, which
//! takes no proposals) the thread waits for the engine as before, so the
//! queue stays bounded.

use std::collections::VecDeque;

use protobuf::Message as _;
use raft::eraftpb::{ConfChange, ConfChangeV2, Entry, EntryType};

use super::Driver;
use crate::command::Proposal;
use crate::error::{ProposeError, StorageFailure};
use crate::members::Members;
use crate::state_machine::{Applied, Committed};
use crate::trace;

/// Committed entries not yet applied, oldest first, with their bytes, and
/// how far the engine has applied.
pub(super) struct Unapplied {
    entries: VecDeque<Entry>,
    bytes: u64,
    /// The bytes one engine write applies at most (at least one entry).
    max_batch_bytes: u64,
    /// The index of the last entry the engine holds. Raft learns it only
    /// between Readies (`tell_raft_applied`): raft-rs may append an entry
    /// when told (a leader leaving a joint configuration), which it must
    /// not do while a Ready is being handled.
    applied: u64,
}

impl Unapplied {
    /// An empty queue behind an engine that has applied up to `applied`.
    pub(super) fn new(max_batch_bytes: u64, applied: u64) -> Self {
        Unapplied {
            entries: VecDeque::new(),
            bytes: 0,
            max_batch_bytes,
            applied,
        }
    }

    /// The bytes of the entries waiting.
    pub(super) fn bytes(&self) -> u64 {
        self.bytes
    }

    fn push(&mut self, entries: Vec<Entry>) {
        for entry in entries {
            self.bytes += entry_bytes(&entry);
            self.entries.push_back(entry);
        }
    }

    /// The oldest entries, up to a batch's worth of bytes.
    fn next_batch(&mut self) -> Vec<Entry> {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while let Some(entry) = self.entries.front() {
            let size = entry_bytes(entry);
            if !batch.is_empty() && bytes + size > self.max_batch_bytes {
                break;
            }
            bytes += size;
            self.bytes -= size;
            batch.extend(self.entries.pop_front());
        }
        batch
    }
}

fn entry_bytes(entry: &Entry) -> u64 {
    (entry.data.len() + entry.context.len()) as u64
}

impl Driver {
    /// Queues the committed entries raft handed out; `apply_queued`
    /// applies them in order.
    pub(super) fn take_committed(&mut self, entries: Vec<Entry>) {
        self.unapplied.push(entries);
    }

    /// Applies the queued committed entries, in order and in batches,
    /// while the engine takes them without waiting (or whatever it takes,
    /// if `wait`: before a snapshot is installed, or at stop); then answers
    /// the readers whose read index the engine reached.
    pub(super) fn apply_queued(&mut self, wait: bool) {
        while self.failure.is_none() && !self.unapplied.entries.is_empty() {
            // A follower's queue is not bounded by the proposals it takes
            // (it takes none): past the leader's budget it waits for the
            // engine as it did before entries were held back, trading
            // heartbeats for memory.
            let over_budget = self.unapplied.bytes > self.max_uncommitted_bytes;
            if !wait && !over_budget && self.state_machine.apply_would_wait() {
                break;
            }
            let batch = self.unapplied.next_batch();
            let last = batch.last().map_or(0, |e| e.index);
            self.apply(batch);
            if self.failure.is_some() {
                break;
            }
            self.unapplied.applied = last;
        }
        self.reads.answer(self.unapplied.applied);
    }

    /// The engine now holds the snapshot at `index`.
    pub(super) fn installed_up_to(&mut self, index: u64) {
        self.unapplied.applied = index;
    }

    /// Tells raft how far the engine has applied; called only between
    /// Readies (see `Unapplied::applied`). Raft takes no applied index past
    /// what it knows persisted: a snapshot installed in a Ready whose write
    /// is still in flight is told once that write is durable.
    pub(super) fn tell_raft_applied(&mut self) {
        let log = &self.node.raft.raft_log;
        let applied = self.unapplied.applied.min(log.committed).min(log.persisted);
        if applied > log.applied {
            self.node.advance_apply_to(applied);
        }
    }

    fn apply(&mut self, entries: Vec<Entry>) {
        if entries.is_empty() || self.failure.is_some() {
            return;
        }
        let mut batch = Vec::with_capacity(entries.len());
        let mut applied_conf = Vec::new();
        for entry in &entries {
            let proposal = match entry.get_entry_type() {
                EntryType::EntryNormal if entry.data.is_empty() => None,
                EntryType::EntryNormal => match Proposal::decode(&entry.data) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        self.fail_storage(StorageFailure::failed(format!(
                            "entry {} does not decode: {e}",
                            entry.index
                        )));
                        return;
                    }
                },
                EntryType::EntryConfChange | EntryType::EntryConfChangeV2 => {
                    let cs = if entry.get_entry_type() == EntryType::EntryConfChange {
                        self.apply_encoded_conf_change::<ConfChange>(entry)
                    } else {
                        self.apply_encoded_conf_change::<ConfChangeV2>(entry)
                    };
                    let Some((cs, rejected)) = cs else { return };
                    applied_conf.push((entry.index, rejected));
                    batch.push(Committed {
                        index: entry.index,
                        proposal: None,
                        conf_state: Some(cs.write_to_bytes().expect("conf state encodes")),
                        members: Some(Members::encode(&self.members.all())),
                    });
                    continue;
                }
            };
            batch.push(Committed {
                index: entry.index,
                proposal,
                conf_state: None,
                members: None,
            });
        }
        let last = entries.last().map_or(0, |e| e.index);
        let traced = trace::spans(&entries, "raft.apply");
        let applied = self.state_machine.apply(&batch);
        drop(traced);
        match applied {
            Ok(results) => {
                self.metrics.applied_entries.inc_by(entries.len() as u64);
                self.answer_conf_changes(last, &applied_conf);
                self.answer_proposals(last, results);
            }
            Err(e) => {
                let err = ProposeError::Storage(StorageFailure::from(&e));
                self.fail_storage(StorageFailure::new(
                    e.is_no_space(),
                    format!("applying up to {last}: {e}"),
                ));
                self.fail_all_waiters(err);
            }
        }
    }

    /// Answers the configuration changes waiting at or below `last`;
    /// `applied_conf` holds the changes this batch applied, each with raft's
    /// reason if it rejected it.
    fn answer_conf_changes(&mut self, last: u64, applied_conf: &[(u64, Option<String>)]) {
        let done: Vec<u64> = self.conf_waiters.range(..=last).map(|(i, _)| *i).collect();
        for index in done {
            let Some(tx) = self.conf_waiters.remove(&index) else {
                continue;
            };
            let outcome = match applied_conf.iter().find(|(i, _)| *i == index) {
                Some((_, None)) => Ok(index),
                Some((_, Some(why))) => Err(ProposeError::Invalid(format!(
                    "raft rejected the configuration change: {why}"
                ))),
                None => Err(ProposeError::Dropped(format!(
                    "entry {index} was replaced by another leader's entry"
                ))),
            };
            let _ = tx.send(outcome);
        }
    }

    /// Answers the proposals waiting at or below `last` with their results;
    /// a proposal is recognised by its request id at its index.
    fn answer_proposals(&mut self, last: u64, results: Vec<Applied>) {
        let mut results = results.into_iter().peekable();
        let done: Vec<u64> = self.proposals.range(..=last).map(|(i, _)| *i).collect();
        for index in done {
            let Some(p) = self.proposals.remove(&index) else {
                continue;
            };
            while results.peek().is_some_and(|r| r.index < index) {
                results.next();
            }
            let outcome = match results.peek() {
                Some(r) if r.index == index && r.request_id == p.request_id => {
                    let waited = p.proposed_at.elapsed().as_secs_f64();
                    self.metrics.commit_seconds.observe(waited);
                    Ok((index, r.result.clone()))
                }
                _ => Err(ProposeError::Dropped(format!(
                    "entry {index} was replaced by another leader's entry"
                ))),
            };
            let _ = p.tx.send(outcome);
        }
    }
}
