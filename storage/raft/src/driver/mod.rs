//! The driver thread of one peer: owns the `RawNode`, turns inbox inputs into
//! raft steps, and handles each Ready (send, persist with one fsync, apply,
//! answer waiters).
//!
//! Everything that arrives while the thread is busy (for instance in
//! `fdatasync`) is drained in one go before the next Ready, so concurrent
//! proposals share one log write and one sync.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use protobuf::Message as _;
use raft::eraftpb::{
    ConfChange, ConfChangeType, ConfChangeV2, ConfState, Entry, EntryType, Message, Snapshot,
    SnapshotMetadata,
};
use raft::{RawNode, SnapshotStatus, StateRole};
use tokio::sync::oneshot;

use crate::command::{ApplyResult, Command, Proposal};
use crate::error::{ProposeError, StartError};
use crate::events::EventLog;
use crate::log::RaftLogStore;
use crate::logger::raft_logger;
use crate::members::Members;
use crate::peer::{PeerConfig, Shared};
use crate::snapshot::{Job, JobDone, SnapshotDirs};
use crate::state_machine::{Committed, StateMachine};
use crate::status::{PeerStatus, RaftEventKind, Role};
use crate::transport::Transport;

mod membership;
mod proposals;
mod snapshots;

use snapshots::finish_interrupted_install;

/// Inputs to the driver.
pub(crate) enum Input {
    Propose {
        request_id: u64,
        command: Command,
        tx: oneshot::Sender<Result<(u64, ApplyResult), ProposeError>>,
    },
    Read {
        tx: oneshot::Sender<Result<u64, ProposeError>>,
    },
    Step(Message),
    Unreachable(u64),
    TransferLeader {
        to: u64,
        tx: oneshot::Sender<Result<(), ProposeError>>,
    },
    /// The transport finished (or failed) sending a snapshot to `to`.
    ReportSnapshot {
        to: u64,
        ok: bool,
    },
    /// The snapshot thread finished a job.
    Job(JobDone),
    /// Propose a configuration change (leader only); answered once applied.
    ChangeMembers {
        change: ConfChangeV2,
        tx: oneshot::Sender<Result<u64, ProposeError>>,
    },
    Shutdown,
}

type ProposeTx = oneshot::Sender<Result<(u64, ApplyResult), ProposeError>>;
type ReadTx = oneshot::Sender<Result<u64, ProposeError>>;

struct PendingProposal {
    request_id: u64,
    tx: ProposeTx,
}

/// The most inputs handled before the next Ready, bounding one round's work.
const MAX_INPUTS_PER_ROUND: usize = 8192;
/// A size-triggered compaction waits for at least this many applied
/// entries, so that a heavy unapplied tail cannot make it run every round.
const MIN_COMPACT_ENTRIES: u64 = 64;

pub(crate) struct Driver {
    id: u64,
    group_id: u64,
    node: RawNode<RaftLogStore>,
    state_machine: Arc<StateMachine>,
    inbox: Receiver<Input>,
    transport: Box<dyn Transport>,
    tick: Duration,
    read_timeout: Duration,
    /// Proposals taken from the inbox since the last round; `round` steps
    /// them into raft together.
    queued: Vec<proposals::Queued>,
    /// Proposals waiting for the entry at their index to be applied.
    proposals: BTreeMap<u64, PendingProposal>,
    /// Readers not yet covered by a ReadIndex request.
    reads_unissued: Vec<ReadTx>,
    /// ReadIndex requests in flight, by context id.
    reads_issued: HashMap<u64, (Instant, Vec<ReadTx>)>,
    /// Readers whose read index is known, waiting for apply to reach it.
    reads_ready: Vec<(u64, Vec<ReadTx>)>,
    next_read_ctx: u64,
    failure: Option<String>,
    /// The failure was a full device (see [`PeerStatus::disk_full`]).
    disk_full: bool,
    last_status: PeerStatus,
    dirs: SnapshotDirs,
    jobs: crossbeam_channel::Sender<Job>,
    snapshot_building: bool,
    durable_pending: bool,
    compact_log_entries: u64,
    compact_log_bytes: u64,
    compact_keep_entries: u64,
    members: Members,
    events: EventLog,
    /// Configuration changes waiting for the entry at their index.
    conf_waiters: BTreeMap<u64, oneshot::Sender<Result<u64, ProposeError>>>,
}

impl Driver {
    pub(crate) fn new(
        config: &PeerConfig,
        state_machine: Arc<StateMachine>,
        inbox: Receiver<Input>,
        transport: Box<dyn Transport>,
        dirs: SnapshotDirs,
        jobs: crossbeam_channel::Sender<Job>,
    ) -> Result<Self, StartError> {
        let mut store = RaftLogStore::open(
            config.log_fs.clone(),
            &config.log_dir,
            config.max_segment_bytes,
            &config.bootstrap_voters,
        )?;
        finish_interrupted_install(&state_machine, &mut store)?;
        // Snapshots staged but never installed (raft found them stale, or
        // the node stopped first) are of no further use.
        dirs.remove_incoming();
        if state_machine.applied_index()? == 0
            && store.first_index() > 1
            && state_machine.conf_state()?.is_none()
        {
            // A freshly bootstrapped group: the state machine starts where
            // the log does, knowing the initial configuration and members
            // (so that snapshots of it carry them).
            let cs = store
                .conf_state()
                .write_to_bytes()
                .expect("conf state encodes");
            let members = Members::encode(&config.members.all());
            state_machine.bootstrap(store.first_index() - 1, &cs, &members)?;
        }
        if let Some(stored) = state_machine.members()? {
            let map = Members::decode(&stored).map_err(StartError::Config)?;
            if !map.is_empty() {
                config.members.replace(map);
            }
        }
        let applied = state_machine.applied_index()?;
        let last = store.last_index();
        if applied > last {
            return Err(StartError::Config(format!(
                "engine applied index {applied} is beyond the raft log's last index {last}"
            )));
        }
        // Entries are applied only once committed, so an applied index above
        // the recorded commit means the commit record was not yet synced.
        if applied > store.hard_state().commit {
            store.set_commit(applied);
            store.persist()?;
        }
        let raft_config = raft::Config {
            id: config.id,
            election_tick: config.election_ticks,
            heartbeat_tick: config.heartbeat_ticks,
            applied,
            check_quorum: true,
            pre_vote: true,
            read_only_option: config.read_only_option,
            max_inflight_msgs: config.max_inflight_msgs,
            max_size_per_msg: config.max_size_per_msg_bytes,
            // A new commit index reaches the followers with the next append
            // or heartbeat (every `heartbeat_ticks`) rather than in an empty
            // append of its own: under load one is always on its way, and it
            // saves a message, an answer and a round on every node per
            // commit. Writes are answered by the leader and do not wait for
            // it; safe ReadIndex rounds carry the commit in their heartbeat.
            skip_bcast_commit: true,
            ..Default::default()
        };
        raft_config.validate()?;
        let node = RawNode::new(&raft_config, store, &raft_logger(config.id))?;
        let mut driver = Driver {
            id: config.id,
            group_id: config.group_id,
            node,
            state_machine,
            inbox,
            transport,
            tick: config.tick,
            read_timeout: config.read_timeout,
            queued: Vec::new(),
            proposals: BTreeMap::new(),
            reads_unissued: Vec::new(),
            reads_issued: HashMap::new(),
            reads_ready: Vec::new(),
            next_read_ctx: 1,
            failure: None,
            disk_full: false,
            last_status: PeerStatus {
                id: config.id,
                group_id: config.group_id,
                role: Role::Follower,
                term: 0,
                leader_id: 0,
                commit_index: 0,
                applied_index: 0,
                last_index: 0,
                voters: Vec::new(),
                learners: Vec::new(),
                failure: None,
                disk_full: false,
            },
            dirs,
            jobs,
            snapshot_building: false,
            durable_pending: false,
            compact_log_entries: config.compact_log_entries,
            compact_log_bytes: config.compact_log_bytes,
            compact_keep_entries: config.compact_keep_entries,
            members: config.members.clone(),
            events: EventLog::default(),
            conf_waiters: BTreeMap::new(),
        };
        driver.last_status = driver.compute_status();
        Ok(driver)
    }

    pub(crate) fn status(&self) -> PeerStatus {
        self.last_status.clone()
    }

    fn compute_status(&self) -> PeerStatus {
        let raft = &self.node.raft;
        let conf = raft.prs().conf();
        let mut voters: Vec<u64> = conf.voters().ids().iter().collect();
        voters.sort_unstable();
        let mut learners: Vec<u64> = conf.learners().iter().copied().collect();
        learners.sort_unstable();
        PeerStatus {
            id: self.id,
            group_id: self.group_id,
            role: Role::from_raft(raft.state, learners.contains(&self.id)),
            term: raft.term,
            leader_id: raft.leader_id,
            commit_index: raft.raft_log.committed,
            applied_index: raft.raft_log.applied,
            last_index: raft.raft_log.last_index(),
            voters,
            learners,
            failure: self.failure.clone(),
            disk_full: self.disk_full,
        }
    }

    /// One logical clock tick. A peer whose storage failed does not tick, so
    /// it never campaigns; it still answers votes and appends.
    pub(crate) fn tick(&mut self) {
        if self.failure.is_none() {
            self.node.tick();
        }
    }

    /// Everything the loop does after taking inputs: step the proposals
    /// taken, issue reads, handle Ready, publish the status.
    pub(crate) fn round(&mut self, shared: &Shared) {
        self.propose_queued();
        self.issue_reads();
        // A failed peer is inert: it neither persists nor sends anything
        // (a follower's acknowledgement or a leader's own vote would promise
        // durability it no longer has), and the others carry on without it.
        if self.failure.is_none() {
            self.on_ready(shared);
        }
        self.publish(shared);
    }

    #[cfg(test)]
    pub(crate) fn raw(&self) -> &RawNode<RaftLogStore> {
        &self.node
    }

    #[cfg(test)]
    pub(crate) fn raw_mut(&mut self) -> &mut RawNode<RaftLogStore> {
        &mut self.node
    }

    pub(crate) fn run(mut self, shared: Arc<Shared>) {
        let mut next_tick = Instant::now() + self.tick;
        loop {
            let wait = next_tick.saturating_duration_since(Instant::now());
            match self.inbox.recv_timeout(wait) {
                Ok(Input::Shutdown) => break,
                Ok(input) => {
                    self.handle(input);
                    let mut stop = false;
                    for _ in 0..MAX_INPUTS_PER_ROUND {
                        match self.inbox.try_recv() {
                            Ok(Input::Shutdown) => {
                                stop = true;
                                break;
                            }
                            Ok(input) => self.handle(input),
                            Err(_) => break,
                        }
                    }
                    if stop {
                        break;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            let now = Instant::now();
            if now >= next_tick {
                self.tick();
                next_tick = now + self.tick;
                self.expire_reads(now);
            }
            self.round(&shared);
        }
        self.fail_all_waiters(ProposeError::Stopped);
    }

    pub(crate) fn handle(&mut self, input: Input) {
        match input {
            Input::Propose {
                request_id,
                command,
                tx,
            } => self.propose(request_id, command, tx),
            Input::Read { tx } => {
                if let Some(f) = &self.failure {
                    let _ = tx.send(Err(ProposeError::Storage(f.clone())));
                } else if self.node.raft.leader_id == 0 {
                    let _ = tx.send(Err(ProposeError::NotLeader { leader_id: 0 }));
                } else {
                    self.reads_unissued.push(tx);
                }
            }
            Input::Step(_) if self.failure.is_some() => {}
            Input::Step(m) => {
                if m.to != self.id {
                    tracing::warn!(to = m.to, "dropping raft message addressed to another peer");
                    return;
                }
                if let Err(e) = self.node.step(m) {
                    tracing::debug!(error = %e, "raft step failed");
                }
            }
            Input::Unreachable(id) => self.node.report_unreachable(id),
            Input::TransferLeader { to, tx } => {
                let _ = tx.send(self.transfer_leader(to));
            }
            Input::ReportSnapshot { to, ok } => {
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
            Input::Job(done) => self.on_job(done),
            Input::ChangeMembers { change, tx } => self.propose_conf_change(change, tx),
            Input::Shutdown => {}
        }
    }

    /// Why this peer cannot take a proposal now, if it cannot.
    fn refusal(&self) -> Option<ProposeError> {
        if let Some(f) = &self.failure {
            return Some(ProposeError::Storage(f.clone()));
        }
        (self.node.raft.state != StateRole::Leader).then(|| ProposeError::NotLeader {
            leader_id: self.node.raft.leader_id,
        })
    }

    fn transfer_leader(&mut self, to: u64) -> Result<(), ProposeError> {
        if let Some(f) = &self.failure {
            return Err(ProposeError::Storage(f.clone()));
        }
        let raft = &self.node.raft;
        if raft.state != StateRole::Leader {
            return Err(ProposeError::NotLeader {
                leader_id: raft.leader_id,
            });
        }
        if !raft.prs().conf().voters().ids().contains(to) {
            return Err(ProposeError::Invalid(format!("node {to} is not a voter")));
        }
        if to != self.id {
            self.node.transfer_leader(to);
        }
        Ok(())
    }

    /// Covers every waiting reader with one ReadIndex request.
    fn issue_reads(&mut self) {
        if self.reads_unissued.is_empty() {
            return;
        }
        let ctx = self.next_read_ctx;
        self.next_read_ctx += 1;
        let readers = std::mem::take(&mut self.reads_unissued);
        self.reads_issued.insert(ctx, (Instant::now(), readers));
        self.node.read_index(ctx.to_le_bytes().to_vec());
    }

    fn expire_reads(&mut self, now: Instant) {
        let timeout = self.read_timeout;
        self.reads_issued.retain(|_, (at, readers)| {
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

    fn on_ready(&mut self, shared: &Shared) {
        while self.node.has_ready() {
            let mut ready = self.node.ready();
            if let Some(ss) = ready.ss()
                && ss.raft_state != StateRole::Leader
                && self.last_status.role == Role::Leader
            {
                // Entries this node appended may still be committed by the
                // next leader or overwritten: say so now rather than at the
                // request timeout.
                for (_, p) in std::mem::take(&mut self.proposals) {
                    let _ = p.tx.send(Err(ProposeError::LeadershipLost));
                }
                for (_, tx) in std::mem::take(&mut self.conf_waiters) {
                    let _ = tx.send(Err(ProposeError::LeadershipLost));
                }
            }
            if let Some(ss) = ready.ss()
                && ss.leader_id != self.last_status.leader_id
            {
                // ReadIndex requests in flight may have gone to the old
                // leader and will never be answered: let them retry.
                for (_, (_, readers)) in self.reads_issued.drain() {
                    for tx in readers {
                        let _ = tx.send(Err(ProposeError::Dropped("leader changed".into())));
                    }
                }
            }
            // A leader may send before its own append is durable (raft
            // counts its own vote only after persistence).
            self.transport.send(ready.take_messages());
            let mut installed = None;
            if !ready.snapshot().is_empty() {
                let meta = ready.snapshot().get_metadata().clone();
                match self.install_snapshot(&meta) {
                    Ok(dir) => installed = Some(dir),
                    Err(reason) => {
                        self.fail_storage(reason, false);
                        return;
                    }
                }
            }
            for rs in ready.take_read_states() {
                let ctx = rs
                    .request_ctx
                    .as_slice()
                    .try_into()
                    .map(u64::from_le_bytes)
                    .unwrap_or(0);
                if let Some((_, readers)) = self.reads_issued.remove(&ctx) {
                    self.reads_ready.push((rs.index, readers));
                }
            }
            let committed = ready.take_committed_entries();
            self.apply(committed);
            let store = self.node.mut_store();
            store.append(ready.entries());
            if let Some(hs) = ready.hs() {
                store.set_hard_state(hs);
            }
            match store.persist() {
                Ok(true) => {
                    shared
                        .log_syncs
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Ok(false) => {}
                Err(e) => {
                    self.fail_log(e.to_string(), e.is_no_space());
                    return;
                }
            }
            if let Some(dir) = installed {
                // The raft log now records the snapshot: the engine no
                // longer needs the marker nor the staged copy.
                if let Err(e) = self.state_machine.finish_install() {
                    self.fail_storage(format!("clearing the install marker: {e}"), e.is_no_space());
                    return;
                }
                let _ = std::fs::remove_dir_all(dir);
            }
            self.transport.send(ready.take_persisted_messages());
            let mut light = self.node.advance(ready);
            if let Some(commit) = light.commit_index() {
                self.node.mut_store().set_commit(commit);
            }
            self.transport.send(light.take_messages());
            let committed = light.take_committed_entries();
            self.apply(committed);
            self.node.advance_apply();
            self.answer_reads();
        }
        self.maintain_log();
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
                        self.fail_storage(
                            format!("entry {} does not decode: {e}", entry.index),
                            false,
                        );
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
        match self.state_machine.apply(&batch) {
            Ok(results) => {
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
                            Ok((index, r.result.clone()))
                        }
                        _ => Err(ProposeError::Dropped(format!(
                            "entry {index} was replaced by another leader's entry"
                        ))),
                    };
                    let _ = p.tx.send(outcome);
                }
            }
            Err(e) => {
                let err = ProposeError::from_engine(&e);
                self.fail_storage(format!("applying up to {last}: {e}"), e.is_no_space());
                self.fail_all_waiters(err);
            }
        }
    }

    fn answer_reads(&mut self) {
        let applied = self.node.raft.raft_log.applied;
        self.reads_ready.retain_mut(|(index, readers)| {
            if *index > applied {
                return true;
            }
            for tx in readers.drain(..) {
                let _ = tx.send(Ok(applied));
            }
            false
        });
    }

    /// The engine failed: stop applying and acknowledging, and report
    /// unhealthy until restarted. The peer goes inert (see [`Self::round`]),
    /// so a leader sends nothing more and the followers elect a successor
    /// when its heartbeats stop.
    fn fail_storage(&mut self, reason: String, disk_full: bool) {
        tracing::error!(reason, "storage failed; this peer stops acknowledging");
        self.note_failure(reason, disk_full);
    }

    /// Records the first failure; later ones are its consequences.
    fn note_failure(&mut self, reason: String, disk_full: bool) {
        if self.failure.is_none() {
            self.failure = Some(reason);
            self.disk_full = disk_full;
        }
    }

    /// The raft log failed to persist: nothing more may be acknowledged or
    /// promised to peers.
    fn fail_log(&mut self, reason: String, disk_full: bool) {
        tracing::error!(reason, "raft log write failed");
        self.note_failure(format!("raft log: {reason}"), disk_full);
        self.fail_all_waiters(ProposeError::Storage(reason));
    }

    fn fail_all_waiters(&mut self, err: ProposeError) {
        for q in std::mem::take(&mut self.queued) {
            q.fail(err.clone());
        }
        for (_, p) in std::mem::take(&mut self.proposals) {
            let _ = p.tx.send(Err(err.clone()));
        }
        for (_, tx) in std::mem::take(&mut self.conf_waiters) {
            let _ = tx.send(Err(err.clone()));
        }
        for tx in self.reads_unissued.drain(..) {
            let _ = tx.send(Err(err.clone()));
        }
        for (_, (_, readers)) in self.reads_issued.drain() {
            for tx in readers {
                let _ = tx.send(Err(err.clone()));
            }
        }
        for (_, readers) in self.reads_ready.drain(..) {
            for tx in readers {
                let _ = tx.send(Err(err.clone()));
            }
        }
    }

    fn publish(&mut self, shared: &Shared) {
        let status = self.compute_status();
        if status == self.last_status && !self.events.has_noted() {
            return;
        }
        let events = self.events.events(&self.last_status, &status);
        *shared.status.write() = status.clone();
        for e in events {
            let _ = shared.events.send(e);
        }
        self.last_status = status;
    }
}
