//! [`Peer`]: starts a raft group member, and [`PeerHandle`], how the rest of
//! the node talks to it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Sender, TrySendError};
use parking_lot::RwLock;
use raft::eraftpb::Message;
use strata_fs::{FileSystem, StdFs};
use tokio::sync::{broadcast, oneshot};

use crate::command::{ApplyResult, Command};
use crate::driver::{Driver, Input};
use crate::error::{ProposeError, StartError};
use crate::members::Members;
use crate::snapshot::{SnapshotDirs, spawn_worker};
use crate::state_machine::StateMachine;
use crate::status::{PeerStatus, RaftEvent};
use crate::transport::Transport;

/// How a peer is set up.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    pub id: u64,
    pub group_id: u64,
    /// The voters of a brand-new group. Ignored once the log has a
    /// configuration.
    pub bootstrap_voters: Vec<u64>,
    /// Where the raft log lives.
    pub log_dir: PathBuf,
    /// The file system the raft log is on: the real one, or a simulated
    /// one that tests can crash.
    pub log_fs: Arc<dyn FileSystem>,
    pub max_segment_bytes: u64,
    /// The logical clock: one raft tick.
    pub tick: Duration,
    /// Election timeout in ticks; the effective timeout is randomized in
    /// `[election_ticks, 2 * election_ticks)`.
    pub election_ticks: usize,
    pub heartbeat_ticks: usize,
    /// Bounded inbox; a full inbox turns proposals away as retryable.
    pub inbox_capacity: usize,
    /// How long a ReadIndex request may wait for its answer before the peer
    /// gives up on it (a lost message, a partition).
    pub read_timeout: Duration,
    pub max_inflight_msgs: usize,
    pub max_size_per_msg_bytes: u64,
    /// Where snapshots are built and staged.
    pub snapshot_root: PathBuf,
    /// Compact the raft log once this many applied entries are in it.
    pub compact_log_entries: u64,
    /// Entries kept behind the applied index at compaction, so a follower
    /// that is only a little behind catches up without a snapshot.
    pub compact_keep_entries: u64,
    /// Compact the raft log also once its entries weigh this many bytes
    /// (large batches reach it long before the entry count); such a
    /// compaction keeps at most half of it.
    pub compact_log_bytes: u64,
    /// The member directory; filled from storage at start and kept current
    /// as configuration changes apply.
    pub members: Members,
    /// How ReadIndex confirms leadership: `Safe` asks a quorum (one
    /// heartbeat round per batch of reads); `LeaseBased` trusts the leader
    /// lease that check-quorum maintains, which assumes clocks advance at
    /// nearly the same rate on every node.
    pub read_only_option: raft::ReadOnlyOption,
}

impl PeerConfig {
    pub fn new(id: u64, group_id: u64, bootstrap_voters: Vec<u64>, log_dir: PathBuf) -> Self {
        let snapshot_root = log_dir.join("snapshots");
        PeerConfig {
            snapshot_root,
            compact_log_entries: 20_000,
            compact_keep_entries: 5_000,
            compact_log_bytes: 64 << 20,
            members: Members::default(),
            read_only_option: raft::ReadOnlyOption::Safe,
            id,
            group_id,
            bootstrap_voters,
            log_dir,
            log_fs: Arc::new(StdFs),
            max_segment_bytes: crate::log::DEFAULT_SEGMENT_BYTES,
            tick: Duration::from_millis(10),
            election_ticks: 10,
            heartbeat_ticks: 2,
            inbox_capacity: 16 * 1024,
            read_timeout: Duration::from_secs(2),
            max_inflight_msgs: 256,
            max_size_per_msg_bytes: 1 << 20,
        }
    }
}

/// A running raft peer. Dropping it stops the driver thread.
pub struct Peer {
    handle: PeerHandle,
    thread: Option<JoinHandle<()>>,
    worker: Option<JoinHandle<()>>,
}

/// The cloneable front of a peer.
#[derive(Clone)]
pub struct PeerHandle {
    inner: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) inbox: Sender<Input>,
    pub(crate) status: RwLock<PeerStatus>,
    pub(crate) events: broadcast::Sender<RaftEvent>,
    pub(crate) state_machine: Arc<StateMachine>,
    pub(crate) snapshot_dirs: SnapshotDirs,
    /// How many times the raft log was fsynced.
    pub(crate) log_syncs: AtomicU64,
    next_request_id: AtomicU64,
}

impl Shared {
    pub(crate) fn new(
        inbox: Sender<Input>,
        status: PeerStatus,
        state_machine: Arc<StateMachine>,
        snapshot_dirs: SnapshotDirs,
    ) -> Self {
        let (events, _) = broadcast::channel(256);
        Shared {
            inbox,
            status: RwLock::new(status),
            events,
            state_machine,
            snapshot_dirs,
            log_syncs: AtomicU64::new(0),
            // Request ids only need to be unique per proposer and restart:
            // start from a random point so a restarted node does not reuse
            // old ids.
            next_request_id: AtomicU64::new(rand::random::<u64>() >> 1),
        }
    }
}

impl Peer {
    /// Opens the raft log, recovers the state machine's position and starts
    /// the driver thread.
    pub fn start(
        config: PeerConfig,
        state_machine: Arc<StateMachine>,
        transport: impl Transport,
    ) -> Result<Peer, StartError> {
        let (tx, rx) = crossbeam_channel::bounded(config.inbox_capacity);
        let dirs = SnapshotDirs::new(config.snapshot_root.clone()).map_err(|e| {
            StartError::Config(format!(
                "snapshot directory {}: {e}",
                config.snapshot_root.display()
            ))
        })?;
        // A small queue: at most one build and one durability job are in flight.
        let (jobs_tx, jobs_rx) = crossbeam_channel::bounded(4);
        let driver = Driver::new(
            &config,
            state_machine.clone(),
            rx,
            Box::new(transport),
            dirs.clone(),
            jobs_tx,
        )?;
        let worker = spawn_worker(
            format!("snap-{}-{}", config.group_id, config.id),
            state_machine.clone(),
            dirs.clone(),
            tx.clone(),
            jobs_rx,
        )
        .map_err(|e| StartError::Config(format!("cannot start snapshot thread: {e}")))?;
        let shared = Arc::new(Shared::new(tx, driver.status(), state_machine, dirs));
        let handle = PeerHandle { inner: shared };
        let thread_handle = handle.clone();
        let thread = std::thread::Builder::new()
            .name(format!("raft-{}-{}", config.group_id, config.id))
            .spawn(move || fail_stop("raft driver", || driver.run(thread_handle.inner)))
            .map_err(|e| StartError::Config(format!("cannot start raft thread: {e}")))?;
        Ok(Peer {
            handle,
            thread: Some(thread),
            worker: Some(worker),
        })
    }

    pub fn handle(&self) -> PeerHandle {
        self.handle.clone()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.handle.inner.inbox.send(Input::Shutdown);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The driver is gone, so the job queue is closed and the worker ends.
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

impl PeerHandle {
    fn submit(&self, input: Input) -> Result<(), ProposeError> {
        match self.inner.inbox.try_send(input) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(ProposeError::Dropped("raft inbox is full".into())),
            Err(TrySendError::Disconnected(_)) => Err(ProposeError::Stopped),
        }
    }

    /// Proposes a command and waits until it is applied on this node.
    /// Returns the log index it was applied at and its result.
    ///
    /// The caller bounds the wait; a caller that gives up must report the
    /// outcome as unknown.
    pub async fn propose(&self, command: Command) -> Result<(u64, ApplyResult), ProposeError> {
        let status = self.status();
        if let Some(f) = status.failure {
            return Err(ProposeError::Storage(f));
        }
        if status.leader_id != status.id {
            return Err(ProposeError::NotLeader {
                leader_id: status.leader_id,
            });
        }
        let (tx, rx) = oneshot::channel();
        let request_id = self.inner.next_request_id.fetch_add(1, Ordering::Relaxed);
        self.submit(Input::Propose {
            request_id,
            command,
            tx,
        })?;
        rx.await.map_err(|_| ProposeError::Stopped)?
    }

    /// Waits until this node has applied everything committed before the
    /// call (a ReadIndex round), so a read of local state afterwards is
    /// linearizable. Returns the applied index.
    pub async fn read_index(&self) -> Result<u64, ProposeError> {
        let status = self.status();
        if let Some(f) = status.failure {
            return Err(ProposeError::Storage(f));
        }
        if status.leader_id == 0 {
            return Err(ProposeError::NotLeader { leader_id: 0 });
        }
        let (tx, rx) = oneshot::channel();
        self.submit(Input::Read { tx })?;
        rx.await.map_err(|_| ProposeError::Stopped)?
    }

    /// Asks the leader to hand leadership to `to`. Returns once the request
    /// is started; the caller watches [`status`](Self::status) for the outcome.
    pub async fn transfer_leader(&self, to: u64) -> Result<(), ProposeError> {
        let (tx, rx) = oneshot::channel();
        self.submit(Input::TransferLeader { to, tx })?;
        rx.await.map_err(|_| ProposeError::Stopped)?
    }

    /// Proposes a configuration change and waits until it is applied here.
    /// Returns its log index.
    pub async fn change_members(
        &self,
        change: raft::eraftpb::ConfChangeV2,
    ) -> Result<u64, ProposeError> {
        let (tx, rx) = oneshot::channel();
        self.submit(Input::ChangeMembers { change, tx })?;
        rx.await.map_err(|_| ProposeError::Stopped)?
    }

    /// Hands a message from the network to the peer.
    pub fn step(&self, message: Message) {
        // A full inbox drops the message; raft retransmits.
        let _ = self.inner.inbox.try_send(Input::Step(message));
    }

    /// Tells raft how sending a snapshot to `to` ended.
    pub fn report_snapshot(&self, to: u64, ok: bool) {
        // Must not be lost: raft waits for it before sending more to `to`.
        let _ = self.inner.inbox.send(Input::ReportSnapshot { to, ok });
    }

    /// Where this peer's snapshots live (for the transport).
    pub fn snapshot_dirs(&self) -> &SnapshotDirs {
        &self.inner.snapshot_dirs
    }

    /// Tells raft that a peer could not be reached, so it stops pipelining to it.
    pub fn report_unreachable(&self, peer_id: u64) {
        let _ = self.inner.inbox.try_send(Input::Unreachable(peer_id));
    }

    pub fn status(&self) -> PeerStatus {
        self.inner.status.read().clone()
    }

    pub fn subscribe(&self) -> broadcast::Receiver<RaftEvent> {
        self.inner.events.subscribe()
    }

    /// How many times this peer has fsynced its raft log since it started.
    pub fn log_sync_count(&self) -> u64 {
        self.inner.log_syncs.load(Ordering::Relaxed)
    }

    pub fn state_machine(&self) -> &Arc<StateMachine> {
        &self.inner.state_machine
    }
}

/// Runs `f`; a panic in it ends the process. A replica whose raft thread
/// died must not keep a port open that looks alive but never answers.
pub(crate) fn fail_stop(what: &str, f: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        tracing::error!("{what} thread panicked; aborting the process");
        std::process::abort();
    }
}
