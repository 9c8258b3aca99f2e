//! Persistence in flight. Each Ready's records go to the log's I/O queue
//! (`log::io`) and the driver goes on to the next round; what may happen
//! only once they are durable waits here, in Ready order, until the queue
//! reports them written: the answers that promise durability (a follower's
//! acknowledgement of appended entries, every vote and pre-vote: the
//! sender counts on the entries or the vote surviving a crash), raft's own
//! record of what is persisted (a leader counts its own vote for an entry
//! only then, so nothing commits on a quorum that does not include a disk
//! which has the entry), the end of a snapshot install, and the entries'
//! `raft.append` spans.
//!
//! raft-rs holds back every message of a member that does not lead until
//! its Ready is persisted; the driver holds back only those and a
//! candidate's vote requests, and sends the others at once, as etcd's raft
//! does with asynchronous storage writes. A heartbeat's answer
//! promises nothing about the disk (at most it names a term not yet
//! durable, and forgetting a term at a crash is harmless while every vote
//! is durable), so a follower whose disk stalls still answers its leader,
//! which keeps the leader's quorum check and ReadIndex rounds going.
//!
//! A Ready with nothing to write while earlier writes are in flight joins
//! the newest of them: raft hears that all Readies up to its number are
//! persisted, and its messages leave, only when that write is durable.
//! With nothing in flight, such a Ready is finished at once, as before.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;

use raft::eraftpb::{Message, MessageType};

use super::Driver;
use super::slow_work::Work;
use crate::error::StorageFailure;
use crate::log::LogWrite;

/// One write submitted and not yet reported durable, with what waits for
/// it.
pub(super) struct InFlight {
    /// The newest Ready it covers, if it covers one (a compaction's write
    /// does not): raft hears that number persisted.
    number: Option<u64>,
    /// Messages raft sends only once the Ready is persisted.
    messages: Vec<Message>,
    /// The `raft.append` spans of its traced entries; they end with it.
    spans: Vec<tracing::Span>,
    /// A snapshot installed in its Ready: the staged copy, removed once the
    /// raft log records the snapshot.
    installed: Option<PathBuf>,
    entries: u64,
    entry_bytes: u64,
}

/// The writes in flight, oldest first.
#[derive(Default)]
pub(super) struct Persisting {
    queue: VecDeque<InFlight>,
}

impl Persisting {
    pub(super) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

/// Whether `m` may leave only once the Ready that made it is persisted:
/// an answer to an append (which says the entries are held) or to a vote
/// or pre-vote (a vote must survive a crash), and a candidate's own vote
/// and pre-vote requests (raft-rs makes a candidate that wins leader on
/// the assumption that its whole log was durable when it asked).
pub(super) fn waits_for_persistence(m: &Message) -> bool {
    matches!(
        m.get_msg_type(),
        MessageType::MsgAppendResponse
            | MessageType::MsgRequestVoteResponse
            | MessageType::MsgRequestPreVoteResponse
            | MessageType::MsgRequestVote
            | MessageType::MsgRequestPreVote
    )
}

/// What one Ready leaves to do once it is persisted.
pub(super) struct ReadyTail {
    pub(super) number: u64,
    pub(super) messages: Vec<Message>,
    pub(super) spans: Vec<tracing::Span>,
    pub(super) installed: Option<PathBuf>,
}

impl Driver {
    /// Hands `write` (if any) to the I/O queue with what waits for it, or,
    /// when the Ready wrote nothing, joins it to the newest write in
    /// flight. There must be one or the other.
    pub(super) fn persist_async(&mut self, write: Option<LogWrite>, tail: ReadyTail) {
        match write {
            Some(write) => {
                self.persisting.queue.push_back(InFlight {
                    number: Some(tail.number),
                    messages: tail.messages,
                    spans: tail.spans,
                    installed: tail.installed,
                    entries: write.entries(),
                    entry_bytes: write.entry_bytes(),
                });
                self.io.submit(write);
            }
            None => {
                let newest = self
                    .persisting
                    .queue
                    .back_mut()
                    .expect("a Ready without a write joins one in flight");
                debug_assert!(tail.installed.is_none(), "an install always writes");
                newest.number = Some(tail.number);
                newest.messages.extend(tail.messages);
                newest.spans.extend(tail.spans);
            }
        }
    }

    /// Hands the pending records that belong to no Ready (a compaction's)
    /// to the I/O queue.
    pub(super) fn persist_pending(&mut self) {
        if let Some(write) = self.node.mut_store().take_write() {
            self.persisting.queue.push_back(InFlight {
                number: None,
                messages: Vec::new(),
                spans: Vec::new(),
                installed: None,
                entries: write.entries(),
                entry_bytes: write.entry_bytes(),
            });
            self.io.submit(write);
        }
    }

    /// Takes the outcomes of the writes finished since the last call, in
    /// order: for each durable one, sends the messages that waited for it,
    /// tells raft, ends the install and the spans; a failed one fails the
    /// log. Called only between Readies.
    pub(super) fn take_persisted(&mut self) {
        let mut outcomes = Vec::new();
        self.io.take_finished(&mut outcomes);
        for outcome in outcomes {
            if self.failure.is_some() {
                // What is in flight will never be acknowledged.
                self.persisting.queue.clear();
                return;
            }
            let done = self
                .persisting
                .queue
                .pop_front()
                .expect("an outcome answers a write in flight");
            let finished = match outcome {
                Ok(f) => f,
                Err(e) => {
                    self.fail_log(&e);
                    self.persisting.queue.clear();
                    return;
                }
            };
            if finished.synced {
                let m = &self.metrics;
                m.append_seconds.observe(finished.seconds);
                m.log_syncs.inc();
                self.note_slow_work(Work::LogWrite(Duration::from_secs_f64(finished.seconds)));
            }
            self.metrics.appended_entries.inc_by(done.entries);
            self.metrics.appended_bytes.inc_by(done.entry_bytes);
            drop(done.spans);
            if let Some(dir) = &done.installed {
                // The raft log now records the snapshot: the engine no
                // longer needs the marker nor the staged copy.
                if let Err(e) = self.state_machine.finish_install() {
                    self.fail_storage(StorageFailure::new(
                        e.is_no_space(),
                        format!("clearing the install marker: {e}"),
                    ));
                    return;
                }
                let _ = std::fs::remove_dir_all(dir);
            }
            self.send(done.messages);
            if let Some(number) = done.number {
                self.node.on_persist_ready(number);
            }
        }
    }
}
