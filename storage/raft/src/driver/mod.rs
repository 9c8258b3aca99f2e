//! The driver thread of one peer: owns the `RawNode`, turns mailbox inputs
//! into raft steps, and handles each Ready (send, hand its records to the
//! log's I/O queue, apply, answer waiters). It never waits for a disk: the
//! raft log is written and synced on an I/O thread (`log::io`), and what
//! must follow durability waits in `persist` until the write is reported;
//! nor for an engine write stall: committed entries the engine would make
//! wait stay queued for a later round (`apply`), so ticks and heartbeats
//! go on through both.
//!
//! Everything that arrives while the thread is busy is drained in one go
//! before the next Ready, and writes that queue while one is being synced
//! share the next fsync, so concurrent proposals share one sync.
//!
//! This file is the loop and the order of a round. What a round does is in
//! the modules beside it: `recovery` (start), `amnesia` (incoming raft
//! messages screened before they are stepped), `vouching` (what the stamps
//! of batches say: a member's new life, and when an unproven member may
//! vote), `proposals`, `reads` (with `lease`), `membership` and
//! `leadership` (the requests), `persist` (writes in flight and what waits
//! for them), `apply` (committed entries and their waiters), `flow` (the
//! bytes of appends in flight to each follower), `snapshots` (snapshots and
//! log compaction), `failure` (the storage failure policy), `stop` (the
//! answers at stop), `publish` (status and events), `stalls` (the
//! thread's stalls, said in the log) and `slow_work` (a slow log write or
//! apply, said in the log).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, TryRecvError};
use raft::RawNode;

use crate::append_times::AppendTimes;
use crate::applier::Applier;
use crate::clock::Clock;
use crate::config::{PeerConfig, ReadMode};
use crate::error::{StartError, StorageFailure};
use crate::events::EventLog;
use crate::log::io::LogIo;
use crate::log::{LogWriter, RaftLogStore};
use crate::logger::raft_logger;
use crate::mailbox::{ConfTx, Inbox, Input, Shared};
use crate::members::Members;
use crate::metrics::RaftMetrics;
use crate::snapshot::{Job, SnapshotDirs};
use crate::stamp::Stamps;
use crate::state_machine::StateMachine;
use crate::status::PeerStatus;
use crate::trace;
use crate::transport::Transport;

mod amnesia;
mod apply;
mod failure;
mod flow;
mod leadership;
mod lease;
mod membership;
mod persist;
mod proposals;
mod publish;
mod read_ids;
mod reads;
mod recovery;
mod slow_work;
mod snapshots;
mod stalls;
mod stop;
mod vouching;

/// What does a driver's work off its thread: the raft log's I/O (made
/// from the log's writer once recovery is done with it) and applying
/// committed entries.
pub(crate) struct Workers {
    pub(crate) log_io: LogIoStart,
    pub(crate) applier: Box<dyn Applier>,
}

/// Makes a peer's log I/O from its raft log's writer.
pub(crate) type LogIoStart = Box<dyn FnOnce(LogWriter) -> Result<Box<dyn LogIo>, StartError>>;

/// The most inputs taken from each channel before the next Ready, bounding
/// one round's work.
const MAX_INPUTS_PER_ROUND: usize = 8192;

pub(crate) struct Driver {
    id: u64,
    group_id: u64,
    node: RawNode<RaftLogStore>,
    /// Where the raft log's writes go (an I/O thread in a running peer).
    io: Box<dyn LogIo>,
    /// The writes handed to `io` and not yet reported durable.
    persisting: persist::Persisting,
    /// Where committed entries are applied (a thread in a running peer).
    applier: Box<dyn Applier>,
    state_machine: Arc<StateMachine>,
    inbox: Inbox,
    transport: Box<dyn Transport>,
    tick: Duration,
    /// Proposals taken from the inbox since the last round; `round` steps
    /// them into raft together.
    queued: Vec<proposals::Queued>,
    /// Committed entries raft handed out, not yet applied (the engine
    /// would have made the write wait), oldest first; see `apply`.
    unapplied: apply::Unapplied,
    /// Proposals waiting for the entry at their index to be applied.
    proposals: BTreeMap<u64, proposals::Pending>,
    /// The bytes in flight to each follower, bounded.
    flow: flow::Flow,
    max_size_per_msg_bytes: u64,
    /// Bounds on proposals: see `PeerConfig`.
    max_uncommitted_bytes: u64,
    max_entry_bytes: usize,
    /// Configuration changes waiting for the entry at their index.
    conf_waiters: BTreeMap<u64, ConfTx>,
    /// Readers, from arrival to answer.
    reads: reads::Reads,
    /// The leader's lease, in `ReadMode::Lease`.
    lease: Option<lease::Lease>,
    /// What the lease is measured on.
    clock: Clock,
    election_ticks: usize,
    /// The first storage failure; set, the peer is inert.
    failure: Option<StorageFailure>,
    last_status: PeerStatus,
    dirs: SnapshotDirs,
    jobs: crossbeam_channel::Sender<Job>,
    /// The applied index when the snapshot being built was asked for.
    snapshot_building: Option<u64>,
    durable_pending: bool,
    /// Requested log compactions, answered when the durable job that
    /// serves them ends.
    log_compactions: snapshots::LogCompactions,
    compact_log_entries: u64,
    compact_log_bytes: u64,
    compact_keep_entries: u64,
    members: Members,
    events: EventLog,
    /// When this leader's log reached each last index (members' lag in time).
    append_times: AppendTimes,
    metrics: RaftMetrics,
    /// This member's incarnation and whether it is proven.
    /// This member's incarnation (see `crate::identity`).
    incarnation: u64,
    /// What batches sent are stamped with, and what the stamps received
    /// made of the others.
    stamps: Arc<Stamps>,
    vouching: vouching::Vouching,
    stalls: stalls::Stalls,
    slow_work: slow_work::SlowWork,
}

impl Driver {
    /// Recovers the peer's state and makes its driver, with `workers` for
    /// the work done off its thread.
    pub(crate) fn new(
        config: &PeerConfig,
        state_machine: Arc<StateMachine>,
        inbox: Inbox,
        transport: Box<dyn Transport>,
        dirs: SnapshotDirs,
        jobs: crossbeam_channel::Sender<Job>,
        workers: Workers,
    ) -> Result<Self, StartError> {
        let (mut store, applied, identity) = recovery::recover(config, &state_machine, &dirs)?;
        let (incarnation, proven) = (identity.incarnation(), identity.is_proven());
        let mut writer = store
            .take_writer()
            .ok_or_else(|| StartError::Config("the raft log's writer is taken".into()))?;
        // Proving the identity takes an fsync: the writer does it, off the
        // raft thread.
        writer.set_identity(identity);
        let io = (workers.log_io)(writer)?;
        let raft_config = raft::Config {
            id: config.id,
            election_tick: config.election_ticks,
            heartbeat_tick: config.heartbeat_ticks,
            applied,
            check_quorum: true,
            pre_vote: true,
            // Every ReadIndex request takes a heartbeat round; the lease is
            // the driver's own (`lease`): raft-rs's `LeaseBased` answers at
            // once and checks no time.
            read_only_option: raft::ReadOnlyOption::Safe,
            max_inflight_msgs: config.max_inflight_msgs,
            max_size_per_msg: config.max_size_per_msg_bytes,
            max_uncommitted_size: config.max_uncommitted_bytes,
            max_committed_size_per_ready: config.max_committed_bytes_per_ready,
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
            metrics: RaftMetrics::default(),
            id: config.id,
            group_id: config.group_id,
            node,
            io,
            persisting: persist::Persisting::default(),
            applier: workers.applier,
            state_machine,
            inbox,
            transport,
            tick: config.tick,
            queued: Vec::new(),
            unapplied: apply::Unapplied::new(config.max_committed_bytes_per_ready, applied),
            proposals: BTreeMap::new(),
            flow: flow::Flow::new(config.max_inflight_bytes, config.max_inflight_msgs),
            max_size_per_msg_bytes: config.max_size_per_msg_bytes,
            max_uncommitted_bytes: config.max_uncommitted_bytes,
            max_entry_bytes: config.max_entry_bytes,
            conf_waiters: BTreeMap::new(),
            reads: reads::Reads::new(
                config.id,
                config
                    .read_timeout
                    .as_nanos()
                    .div_ceil(config.tick.as_nanos().max(1)) as u64,
            ),
            lease: (config.read_mode == ReadMode::Lease).then(|| {
                lease::Lease::new(lease::lease_duration(config.election_ticks, config.tick))
            }),
            clock: Clock::Monotonic,
            election_ticks: config.election_ticks,
            failure: None,
            last_status: publish::blank_status(config.id, config.group_id),
            dirs,
            jobs,
            snapshot_building: None,
            durable_pending: false,
            log_compactions: snapshots::LogCompactions::default(),
            compact_log_entries: config.compact_log_entries,
            compact_log_bytes: config.compact_log_bytes,
            compact_keep_entries: config.compact_keep_entries,
            members: config.members.clone(),
            events: EventLog::default(),
            append_times: AppendTimes::default(),
            stamps: Arc::new(Stamps::new(incarnation, proven)),
            vouching: vouching::Vouching::new(proven),
            stalls: stalls::Stalls::new(config.tick, config.election_ticks),
            slow_work: slow_work::SlowWork::default(),
            incarnation,
        };
        driver.last_status = driver.compute_status();
        Ok(driver)
    }

    /// One logical clock tick. A peer whose storage failed does not tick
    /// raft, so it never campaigns; it still answers votes and appends.
    /// Reads time out on the same clock.
    pub(crate) fn tick(&mut self) {
        if self.failure.is_none() {
            self.node.tick();
        }
        self.flow.tick();
        self.reads.tick();
    }

    /// Everything the loop does after taking inputs: take the snapshot
    /// outcomes left in `shared`, step the proposals taken, issue reads,
    /// handle Ready and apply the committed entries the engine takes without
    /// stalling, publish the status.
    pub(crate) fn round(&mut self, shared: &Shared) {
        for (to, ok) in shared.take_snapshot_reports() {
            self.on_snapshot_report(to, ok);
        }
        self.propose_queued();
        if self.failure.is_none() {
            self.vouch();
        }
        self.issue_reads();
        // A failed peer is inert: it neither persists nor sends anything
        // (a follower's acknowledgement or a leader's own vote would promise
        // durability it no longer has), and the others carry on without it.
        if self.failure.is_none() {
            self.on_ready();
        }
        self.publish(shared);
    }

    /// Measures the lease on `clock` (the simulation's).
    #[cfg(test)]
    pub(crate) fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
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
            // Raft's own inputs first, then client requests: a backlog of
            // requests must not delay the messages that keep the group's
            // leader in office. A closed channel stops the driver (it holds
            // a sender of each itself, so neither closes while it runs).
            let first = crossbeam_channel::select_biased! {
                recv(self.inbox.raft) -> input => input.map(Some),
                recv(self.inbox.requests) -> input => input.map(Some),
                default(wait) => Ok(None),
            };
            let busy_from = Instant::now();
            match first {
                Ok(Some(input)) => {
                    self.handle(input);
                    let raft = self.inbox.raft.clone();
                    let requests = self.inbox.requests.clone();
                    if !self.drain(&raft) || !self.drain(&requests) {
                        break;
                    }
                }
                Ok(None) => {}
                Err(_) => break,
            }
            if shared.stop_requested() {
                break;
            }
            let now = Instant::now();
            if now >= next_tick {
                self.note_stall(stalls::Stall::LateTick(now - next_tick));
                self.tick();
                next_tick = now + self.tick;
            }
            self.round(&shared);
            self.note_stall(stalls::Stall::Round(busy_from.elapsed()));
        }
        self.stop(&shared);
    }

    fn note_slow_work(&mut self, work: slow_work::Work) {
        let line = self.slow_work.note(work, Instant::now());
        self.warn_timing(line);
    }

    fn note_stall(&mut self, stall: stalls::Stall) {
        let line = self.stalls.note(stall, Instant::now());
        self.warn_timing(line);
    }

    /// Logs a line about where the driver's time went, with its role and term.
    fn warn_timing(&self, line: Option<String>) {
        if let Some(line) = line {
            tracing::warn!(
                role = ?self.node.raft.state,
                term = self.node.raft.term,
                "{line}"
            );
        }
    }

    /// Handles what waits in `channel`, up to a round's worth; false if
    /// the channel is closed.
    fn drain(&mut self, channel: &Receiver<Input>) -> bool {
        for _ in 0..MAX_INPUTS_PER_ROUND {
            match channel.try_recv() {
                Ok(input) => self.handle(input),
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
        true
    }

    pub(crate) fn handle(&mut self, input: Input) {
        match input {
            Input::Propose {
                request_id,
                data,
                tx,
            } => self.propose(request_id, data, tx),
            Input::Read { tx } => self.read(tx),
            Input::Step(..) if self.failure.is_some() => {}
            Input::Step(m, stamp) => {
                if m.to != self.id {
                    tracing::warn!(to = m.to, "dropping raft message addressed to another peer");
                    return;
                }
                if !self.snapshot_was_received(&m) {
                    return;
                }
                self.note_stamp(m.from, stamp);
                self.step_screened(m, stamp);
            }
            Input::Unreachable(id) => self.node.report_unreachable(id),
            Input::TransferLeader { to, tx } => {
                let _ = tx.send(self.transfer_leader(to));
            }
            Input::HandOver { tx } => {
                let _ = tx.send(self.hand_over());
            }
            Input::Job(done) => self.on_job(done),
            Input::ChangeMembers { change, tx } => self.propose_conf_change(change, tx),
            Input::CompactLog { tx } => self.request_log_compaction(tx),
            // What it woke the driver for is taken by the round.
            Input::Wake => {}
        }
    }

    fn on_ready(&mut self) {
        self.take_persisted();
        while self.failure.is_none() && self.node.has_ready() {
            let mut ready = self.node.ready();
            if let Some(ss) = ready.ss() {
                self.on_soft_state(ss);
            }
            // A leader may send before its own append is durable (raft
            // counts its own vote only after persistence).
            self.send(ready.take_messages());
            let mut installed = None;
            if !ready.snapshot().is_empty() {
                let meta = ready.snapshot().get_metadata().clone();
                // A snapshot is installed in order: the entries committed
                // before it are applied first, whatever the engine's state.
                self.apply_queued(true);
                if self.failure.is_some() {
                    return;
                }
                match self.install_snapshot(&meta) {
                    Ok(dir) => {
                        self.installed_up_to(meta.index);
                        installed = Some(dir);
                    }
                    Err(failure) => {
                        self.fail_storage(failure);
                        return;
                    }
                }
            }
            self.take_read_states(ready.take_read_states());
            // Committed entries are durable here already (raft hands out
            // only persisted ones): applying them before this Ready's
            // records are written answers their writers one fsync sooner.
            self.take_committed(ready.take_committed_entries());
            self.apply_queued(false);
            let store = self.node.mut_store();
            store.append(ready.entries());
            if let Some(hs) = ready.hs() {
                store.set_hard_state(hs);
            }
            let write = store.take_write();
            if write.is_none() && self.persisting.is_empty() {
                // Nothing to make durable and nothing in flight: the Ready
                // is done now.
                self.send(ready.take_persisted_messages());
                let mut light = self.node.advance_append(ready);
                self.tell_raft_applied();
                if let Some(commit) = light.commit_index() {
                    self.node.mut_store().set_commit(commit);
                }
                self.send(light.take_messages());
                self.take_committed(light.take_committed_entries());
                self.apply_queued(false);
                self.tell_raft_applied();
                continue;
            }
            // Answers that promise durability wait for the write; the rest
            // leave now (see `persist`).
            let (waiting, now): (Vec<_>, Vec<_>) = ready
                .take_persisted_messages()
                .into_iter()
                .partition(persist::waits_for_persistence);
            self.send(now);
            // Each traced entry's `raft.append` span covers the write and
            // the fsync, on the leader and on every follower alike.
            let tail = persist::ReadyTail {
                number: ready.number(),
                messages: waiting,
                spans: trace::spans(ready.entries(), "raft.append"),
                installed: installed.take(),
            };
            self.node.advance_append_async(ready);
            self.persist_async(write, tail);
            // An inline writer is done already; a thread may be too.
            self.take_persisted();
            // Raft learns how far the engine got only between Readies; its
            // applied index is never ahead of the engine's.
            self.tell_raft_applied();
        }
        if self.failure.is_some() {
            return;
        }
        // Entries held back by an engine that would have made the write
        // wait are tried again every round, Ready or not.
        self.apply_queued(false);
        self.tell_raft_applied();
        self.maintain_log();
    }
}
