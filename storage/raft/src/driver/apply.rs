//! Applying committed entries: hand them to the applier (`applier`) in
//! order and in batches, configuration changes applied to raft as they are
//! handed over, with the proposals waiting for them, which the applier
//! answers as soon as their batch is applied (a waiter whose index was
//! filled by another leader's entry is told its request was dropped); and
//! answer the configuration changes once the applier reports the batch.
//!
//! The raft thread never applies to the engine itself: a running peer's
//! applier is a thread of its own (`ApplyThread`), so neither a large entry
//! nor an engine write stall stops the raft thread from ticking, sending
//! heartbeats and appending. Committed entries queue up in order
//! (`Unapplied`) while a batch is being applied, and the next batch is
//! handed over when it is done. Raft's applied index follows the engine's,
//! so the proposals and readers waiting for an index are answered only
//! once it is applied, and the log is compacted only behind it. The queue
//! counts against the leader's budget of entries not yet applied (see
//! `proposals`), and past that budget (on a follower, which takes no
//! proposals) the thread waits for the applier, trading heartbeats for
//! memory, so the queue stays bounded. An applier on the raft thread itself
//! (the simulation's) is handed nothing while the engine would make the
//! write wait.

use std::collections::VecDeque;
use std::time::Instant;

use protobuf::Message as _;
use raft::eraftpb::{ConfChange, ConfChangeV2, Entry, EntryType};

use super::Driver;
use super::slow_work::Work;
use crate::applier::{ApplyFailure, ApplyJob, ApplyOutcome, ConfApplied};
use crate::error::{ProposeError, StorageFailure};
use crate::members::Members;

/// A batch handed to the applier and not yet reported.
struct InFlight {
    entries: u64,
    bytes: u64,
    handed_at: Instant,
    /// The configuration changes it applies, each with raft's reason if it
    /// rejected the change.
    applied_conf: Vec<(u64, Option<String>)>,
}

/// Committed entries not yet applied, oldest first, with their bytes, and
/// how far the engine has applied.
pub(super) struct Unapplied {
    entries: VecDeque<Entry>,
    /// The bytes of the entries queued and of the batch in flight.
    bytes: u64,
    /// The bytes one engine write applies at most (at least one entry).
    max_batch_bytes: u64,
    /// The index of the last entry the engine holds. Raft learns it only
    /// between Readies (`tell_raft_applied`): raft-rs may append an entry
    /// when told (a leader leaving a joint configuration), which it must
    /// not do while a Ready is being handled.
    applied: u64,
    in_flight: Option<InFlight>,
}

impl Unapplied {
    /// An empty queue behind an engine that has applied up to `applied`.
    pub(super) fn new(max_batch_bytes: u64, applied: u64) -> Self {
        Unapplied {
            entries: VecDeque::new(),
            bytes: 0,
            max_batch_bytes,
            applied,
            in_flight: None,
        }
    }

    /// The bytes of the entries waiting or being applied.
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

    /// Takes what the applier finished, and hands it the next batch if it
    /// is free; with `wait` (before a snapshot is installed, or at stop),
    /// applies everything queued before returning. Then answers the
    /// readers whose read index the engine reached.
    pub(super) fn apply_queued(&mut self, wait: bool) {
        loop {
            self.take_applied(false);
            if self.failure.is_some() {
                break;
            }
            // A follower's queue is not bounded by the proposals it takes
            // (it takes none): past the leader's budget it waits for the
            // engine, trading heartbeats for memory.
            let over_budget = self.unapplied.bytes > self.max_uncommitted_bytes;
            if self.unapplied.in_flight.is_some() {
                if wait || over_budget {
                    self.take_applied(true);
                    continue;
                }
                break;
            }
            if self.unapplied.entries.is_empty()
                || (!wait && !over_budget && self.applier.would_wait())
            {
                break;
            }
            self.hand_over_next_batch();
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

    /// Hands the oldest queued entries to the applier, applying the
    /// configuration changes among them to raft on the way, in log order.
    fn hand_over_next_batch(&mut self) {
        let entries = self.unapplied.next_batch();
        let mut confs = Vec::new();
        let mut applied_conf = Vec::new();
        for entry in &entries {
            let cs = match entry.get_entry_type() {
                EntryType::EntryNormal => continue,
                EntryType::EntryConfChange => self.apply_encoded_conf_change::<ConfChange>(entry),
                EntryType::EntryConfChangeV2 => {
                    self.apply_encoded_conf_change::<ConfChangeV2>(entry)
                }
            };
            let Some((cs, rejected)) = cs else { return };
            applied_conf.push((entry.index, rejected));
            confs.push(ConfApplied {
                index: entry.index,
                conf_state: cs.write_to_bytes().expect("conf state encodes"),
                members: Members::encode(&self.members.all()),
            });
        }
        // The proposals waiting for these entries go with them.
        let waiters = match (entries.first(), entries.last()) {
            (Some(first), Some(last)) => {
                let later = self.proposals.split_off(&(last.index + 1));
                let upto = std::mem::replace(&mut self.proposals, later);
                debug_assert!(
                    upto.keys().next().is_none_or(|&i| i >= first.index),
                    "a proposal waits for an entry applied already"
                );
                upto.into_iter().collect()
            }
            _ => Vec::new(),
        };
        self.unapplied.in_flight = Some(InFlight {
            entries: entries.len() as u64,
            bytes: entries.iter().map(entry_bytes).sum(),
            handed_at: Instant::now(),
            applied_conf,
        });
        self.applier.submit(ApplyJob {
            entries,
            confs,
            waiters,
            commit_seconds: self.metrics.commit_seconds.clone(),
        });
    }

    /// Takes the outcomes of the batches the applier finished (with
    /// `block`, waits for the one in flight) and answers their waiters.
    fn take_applied(&mut self, block: bool) {
        let mut outcomes = Vec::new();
        let block = block && self.unapplied.in_flight.is_some();
        self.applier.take_done(&mut outcomes, block);
        for outcome in outcomes {
            let Some(done) = self.unapplied.in_flight.take() else {
                break;
            };
            self.unapplied.bytes -= done.bytes;
            self.note_slow_work(Work::Apply {
                took: done.handed_at.elapsed(),
                entries: done.entries,
                bytes: done.bytes,
            });
            self.on_applied(done, outcome);
        }
    }

    fn on_applied(&mut self, done: InFlight, outcome: ApplyOutcome) {
        match outcome {
            Ok((last, _)) => {
                // The batch's proposals were answered by the applier.
                self.metrics.applied_entries.inc_by(done.entries);
                self.answer_conf_changes(last, &done.applied_conf);
                self.unapplied.applied = last.max(self.unapplied.applied);
            }
            Err(ApplyFailure::Decode { index, reason }) => {
                self.fail_storage(StorageFailure::failed(format!(
                    "entry {index} does not decode: {reason}"
                )));
            }
            Err(ApplyFailure::Engine { last, error }) => {
                let err = ProposeError::Storage(StorageFailure::from(&error));
                self.fail_storage(StorageFailure::new(
                    error.is_no_space(),
                    format!("applying up to {last}: {error}"),
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
}
