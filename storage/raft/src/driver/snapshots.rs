//! Snapshots and log compaction in the driver: asking the snapshot thread
//! for work, taking its results, installing a received snapshot, and
//! hearing how sending one ended.

use protobuf::Message as _;
use raft::eraftpb::{ConfState, Message, MessageType, Snapshot, SnapshotMetadata};
use raft::{ProgressState, SnapshotStatus, StateRole};

use super::Driver;
use crate::error::{ProposeError, StorageFailure};
use crate::log_compaction::LogCompaction;
use crate::mailbox::CompactLogTx;
use crate::members::Members;
use crate::snapshot::{Job, JobDone};
use crate::status::RaftEventKind;

/// A size-triggered compaction runs only when it drops at least this many
/// entries, or a quarter of the byte budget (`compact_log_bytes`): each one
/// costs an engine flush, and a log just over its budget would otherwise
/// flush to drop one small entry every round. Either suffices, so a log of
/// few large entries is held to its budget too.
const MIN_COMPACT_ENTRIES: u64 = 64;

/// Log compactions an operator asked for ([`Input::CompactLog`]).
///
/// [`Input::CompactLog`]: crate::mailbox::Input::CompactLog
#[derive(Default)]
pub(super) struct LogCompactions {
    /// Answered when the durable job now running ends.
    running: Vec<CompactLogTx>,
    /// Arrived while a durable job ran that started before them (it may
    /// not reach what they saw applied); the next job serves them.
    queued: Vec<CompactLogTx>,
    /// The durable job running was started for `running`: its end drops
    /// the whole log it covers, not just what exceeds the usual budget.
    requested: bool,
}

impl Driver {
    /// Queues an operator's log compaction and starts it unless a durable
    /// job already runs (the next round after it ends starts it then).
    pub(super) fn request_log_compaction(&mut self, tx: CompactLogTx) {
        if let Some(failure) = &self.failure {
            let _ = tx.send(Err(ProposeError::Storage(failure.clone())));
            return;
        }
        self.log_compactions.queued.push(tx);
        // What the applier finished counts: its writers may have been
        // answered already, and the compaction must cover their writes.
        self.apply_queued(false);
        self.tell_raft_applied();
        self.start_requested_compaction();
    }

    fn start_requested_compaction(&mut self) {
        if self.durable_pending || self.log_compactions.queued.is_empty() {
            return;
        }
        let applied = self.node.raft.raft_log.applied;
        let waiters = std::mem::take(&mut self.log_compactions.queued);
        if self.jobs.send(Job::Durable { index: applied }).is_err() {
            for tx in waiters {
                let _ = tx.send(Err(ProposeError::Stopped));
            }
            return;
        }
        self.durable_pending = true;
        self.log_compactions.requested = true;
        self.log_compactions.running = waiters;
    }

    /// Starts a snapshot when raft asked for one, and compacts the log once
    /// enough applied entries piled up (after making them durable).
    pub(super) fn maintain_log(&mut self) {
        if self.failure.is_some() {
            return;
        }
        let applied = self.node.raft.raft_log.applied;
        if self.node.store().take_snapshot_request()
            && self.snapshot_building.is_none()
            && self.jobs.send(Job::Build).is_ok()
        {
            self.snapshot_building = Some(applied);
        }
        if !self.durable_pending && self.log_compaction_due(applied) {
            self.durable_pending = self.jobs.send(Job::Durable { index: applied }).is_ok();
        }
    }

    /// Whether the log policy should compact now that `applied` is
    /// applied: by entry count (`compact_log_entries` applied entries
    /// held), or by size (the log weighs its byte budget and compacting
    /// would drop enough of it). The durable point before a compaction
    /// costs an engine flush, so either way the compaction must drop
    /// entries (a threshold below what is kept would flush every round
    /// and drop nothing).
    fn log_compaction_due(&self, applied: u64) -> bool {
        let store = self.node.store();
        let first = store.first_index();
        let by_count = applied.saturating_sub(first) >= self.compact_log_entries;
        let heavy = store.entries_bytes() >= self.compact_log_bytes;
        if !by_count && !heavy {
            return false;
        }
        let point = self
            .policy_compaction_point(applied)
            .min(self.snapshot_floor());
        if point < first {
            return false;
        }
        by_count
            || point + 1 - first >= MIN_COMPACT_ENTRIES
            || store.entries_bytes_through(point) >= self.compact_log_bytes / 4
    }

    /// Where the log policy compacts to once `index` is durable: it keeps
    /// `compact_keep_entries`, but never more than half the byte budget
    /// (large entries must not keep the log heavy).
    fn policy_compaction_point(&self, index: u64) -> u64 {
        index.saturating_sub(self.compact_keep_entries).max(
            self.node
                .store()
                .discard_point_for_bytes(index, self.compact_log_bytes / 2),
        )
    }

    pub(super) fn on_job(&mut self, done: JobDone) {
        match done {
            JobDone::Built { name, result } => {
                self.snapshot_building = None;
                let info = match result {
                    Ok(info) => info,
                    Err(e) => {
                        tracing::warn!(error = %e, "building a snapshot failed");
                        return;
                    }
                };
                let store = self.node.store();
                let Some(term) = store.term_of(info.index) else {
                    // The log moved past it meanwhile; raft will ask again.
                    self.dirs.prune_outgoing("");
                    return;
                };
                let mut conf_state = ConfState::default();
                if let Err(e) = conf_state.merge_from_bytes(&info.conf_state) {
                    self.fail_storage(StorageFailure::failed(format!(
                        "snapshot configuration does not decode: {e}"
                    )));
                    return;
                }
                let mut snapshot = Snapshot {
                    data: name.clone().into_bytes().into(),
                    ..Default::default()
                };
                let meta = snapshot.mut_metadata();
                meta.index = info.index;
                meta.term = term;
                meta.set_conf_state(conf_state);
                tracing::info!(index = info.index, term, name, "snapshot ready");
                self.node.mut_store().set_ready_snapshot(snapshot);
                self.dirs.prune_outgoing(&name);
            }
            JobDone::Durable { index, result } => {
                self.durable_pending = false;
                let requested = std::mem::take(&mut self.log_compactions.requested);
                let waiters = std::mem::take(&mut self.log_compactions.running);
                if let Err(e) = result {
                    let failure = StorageFailure::new(
                        e.is_no_space(),
                        format!("making applied state durable: {e}"),
                    );
                    self.fail_storage(failure.clone());
                    let queued = std::mem::take(&mut self.log_compactions.queued);
                    for tx in waiters.into_iter().chain(queued) {
                        let _ = tx.send(Err(ProposeError::Storage(failure.clone())));
                    }
                    return;
                }
                self.dirs.prune_incoming(self.node.raft.raft_log.applied);
                // An operator's request keeps none: it asked for the log to
                // end where the durable state begins.
                let keep_from = if requested {
                    index
                } else {
                    self.policy_compaction_point(index)
                };
                let to = keep_from.min(self.snapshot_floor());
                let first_index_before = self.node.store().first_index();
                // Compacting to `to` drops every entry up to and including
                // it, so one at `first_index_before` is dropped too.
                if to >= first_index_before {
                    self.node.mut_store().compact(to);
                    self.persist_pending();
                }
                let done = LogCompaction {
                    durable_index: index,
                    first_index_before,
                    first_index_after: self.node.store().first_index(),
                };
                tracing::info!(?done, requested, "raft log compacted");
                for tx in waiters {
                    let _ = tx.send(Ok(done));
                }
                self.start_requested_compaction();
            }
        }
    }

    /// The highest index the log may be compacted to while a follower is
    /// being caught up: not past the applied index a snapshot being built
    /// started from (or its term is gone and the build is wasted), nor past
    /// the index of one being sent, nor past the entry before those a
    /// follower being probed (as after a snapshot) is sent next, while it
    /// answers. Under heavy writes with aggressive compaction, any of these
    /// would have a follower sent snapshot after snapshot, never catching
    /// up. A follower that stops answering no longer holds compaction back
    /// once the leader's quorum check marks it inactive.
    fn snapshot_floor(&self) -> u64 {
        let raft = &self.node.raft;
        if raft.state != StateRole::Leader {
            return self.snapshot_building.unwrap_or(u64::MAX);
        }
        let followers = raft
            .prs()
            .iter()
            .filter(|&(&id, _)| id != self.id)
            .filter_map(|(_, p)| match p.state {
                ProgressState::Snapshot => Some(p.pending_snapshot),
                ProgressState::Probe if p.recent_active => Some(p.next_idx.saturating_sub(1)),
                _ => None,
            });
        followers
            .chain(self.snapshot_building)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Whether `m` may be stepped: a `MsgSnapshot` only if the transport
    /// received its snapshot whole and verified it (staged with its
    /// manifest). Raft must not install a snapshot that arrived any other
    /// way, such as on the plain message stream, or before its files.
    pub(super) fn snapshot_was_received(&self, m: &Message) -> bool {
        if m.get_msg_type() != MessageType::MsgSnapshot {
            return true;
        }
        let meta = m.get_snapshot().get_metadata();
        let verified = self.dirs.verified_incoming(meta.index, meta.term).is_some();
        if !verified {
            tracing::warn!(
                from = m.from,
                index = meta.index,
                term = meta.term,
                "dropping a snapshot message without a verified transfer"
            );
        }
        verified
    }

    /// The transport finished (or failed) sending a snapshot to `to`; raft
    /// waits for this before sending `to` anything more.
    pub(super) fn on_snapshot_report(&mut self, to: u64, ok: bool) {
        let status = if ok {
            SnapshotStatus::Finish
        } else {
            SnapshotStatus::Failure
        };
        self.node.report_snapshot(to, status);
        if ok {
            self.events
                .note(RaftEventKind::SnapshotSent, format!("to node {to}"));
        }
    }

    /// Installs the staged snapshot raft wants applied; returns its staged
    /// directory for removal once the raft log records it. A full disk is
    /// reported as one, so that the node restarts itself once space is back.
    pub(super) fn install_snapshot(
        &mut self,
        meta: &SnapshotMetadata,
    ) -> Result<std::path::PathBuf, StorageFailure> {
        let dir = self.dirs.incoming(meta.index, meta.term);
        let info = self.state_machine.install(&dir, meta.term).map_err(|e| {
            // The engine's background flush may have met the full disk
            // first; the install then sees only the poisoned engine, whose
            // health still names the cause.
            let full = e.is_no_space()
                || self
                    .state_machine
                    .engine()
                    .health()
                    .is_err_and(|h| h.is_no_space());
            StorageFailure::new(
                full,
                format!(
                    "installing snapshot {} from {}: {e}",
                    meta.index,
                    dir.display()
                ),
            )
        })?;
        if info.index != meta.index {
            return Err(StorageFailure::failed(format!(
                "snapshot holds index {} but raft says {}",
                info.index, meta.index
            )));
        }
        match Members::decode(&info.members) {
            Ok(map) if !map.is_empty() => self.members.replace(map),
            Ok(_) => {}
            Err(e) => {
                return Err(StorageFailure::failed(format!(
                    "snapshot member directory: {e}"
                )));
            }
        }
        self.node.mut_store().apply_snapshot(meta);
        self.events.note(
            RaftEventKind::SnapshotInstalled,
            format!("index {} term {}", meta.index, meta.term),
        );
        tracing::info!(index = meta.index, term = meta.term, "snapshot installed");
        Ok(dir)
    }
}
