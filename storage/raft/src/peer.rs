//! [`Peer`]: starts a raft group member, and [`PeerHandle`], how the rest of
//! the node talks to it.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;

use raft::eraftpb::Message;
use tokio::sync::{broadcast, oneshot};
use tracing::Instrument;

use crate::applier::ApplyThread;
use crate::command::{ApplyResult, Command, Dedupe};
use crate::driver::{Driver, LogIoStart, Workers};
use crate::error::{ProposeError, StartError};
use crate::fail_stop::fail_stop;
use crate::log::io::{IoThread, LogIo};
use crate::log_compaction::LogCompaction;
use crate::mailbox::Input;
use crate::metrics::RaftMetrics;
use crate::snapshot::{SnapshotDirs, spawn_worker};
use crate::stamp::Stamp;
use crate::state_machine::StateMachine;
use crate::status::{HandOver, PeerStatus, RaftEvent, RaftEventKind};
use crate::trace::TraceParent;
use crate::transport::Transport;

use crate::config::PeerConfig;
use crate::mailbox::{Shared, mailbox};

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

impl Peer {
    /// Opens the raft log, recovers the state machine's position and starts
    /// the driver thread.
    pub fn start(
        config: PeerConfig,
        state_machine: Arc<StateMachine>,
        transport: impl Transport,
    ) -> Result<Peer, StartError> {
        let (senders, inbox) = mailbox(config.inbox_capacity, config.raft_inbox_capacity);
        let dirs = SnapshotDirs::new(config.snapshot_root.clone()).map_err(|e| {
            StartError::Config(format!(
                "snapshot directory {}: {e}",
                config.snapshot_root.display()
            ))
        })?;
        // A small queue: at most one build and one durability job are in flight.
        let (jobs_tx, jobs_rx) = crossbeam_channel::bounded(4);
        let wake = senders.raft();
        let io_name = format!("raft-io-{}-{}", config.group_id, config.id);
        let applier = ApplyThread::spawn(
            format!("raft-apply-{}-{}", config.group_id, config.id),
            state_machine.clone(),
            {
                let wake = wake.clone();
                move || {
                    let _ = wake.try_send(Input::Wake);
                }
            },
        )
        .map_err(|e| StartError::Config(format!("cannot start raft apply thread: {e}")))?;
        let log_io: LogIoStart = Box::new(move |writer| {
            // The driver takes the outcomes in its next round; a full raft
            // channel means one is coming anyway.
            let io = IoThread::spawn(io_name, writer, move || {
                let _ = wake.try_send(Input::Wake);
            })
            .map_err(|e| StartError::Config(format!("cannot start raft log thread: {e}")))?;
            Ok(Box::new(io) as Box<dyn LogIo>)
        });
        let driver = Driver::new(
            &config,
            state_machine.clone(),
            inbox,
            Box::new(transport),
            dirs.clone(),
            jobs_tx,
            Workers {
                log_io,
                applier: Box::new(applier),
            },
        )?;
        let worker = spawn_worker(
            format!("snap-{}-{}", config.group_id, config.id),
            state_machine.clone(),
            dirs.clone(),
            {
                let raft = senders.raft();
                move |done| raft.send(Input::Job(done)).is_ok()
            },
            jobs_rx,
        )
        .map_err(|e| StartError::Config(format!("cannot start snapshot thread: {e}")))?;
        let shared = Arc::new(Shared::new(
            senders,
            driver.status(),
            state_machine,
            dirs,
            driver.metrics().clone(),
            driver.stamps(),
        ));
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
        self.handle.inner.stop();
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
    /// Proposes a command and waits until it is applied on this node.
    /// Returns the log index it was applied at and its result.
    ///
    /// The caller bounds the wait; a caller that gives up must report the
    /// outcome as unknown.
    ///
    /// It runs inside a `raft.propose` span; in a sampled trace the entry
    /// carries that span, so every member's append and apply spans join it.
    pub async fn propose(&self, command: Command) -> Result<(u64, ApplyResult), ProposeError> {
        self.propose_once(command, None).await
    }

    /// [`propose`](Self::propose), carrying the client's request id when
    /// the write has one: a write whose id the group already applied is
    /// answered `ApplyResult::Replayed` (or `IdReused`) and not applied
    /// again.
    pub async fn propose_once(
        &self,
        command: Command,
        dedupe: Option<Dedupe>,
    ) -> Result<(u64, ApplyResult), ProposeError> {
        let span = tracing::info_span!("raft", otel.name = "raft.propose");
        self.propose_in(command, dedupe).instrument(span).await
    }

    async fn propose_in(
        &self,
        command: Command,
        dedupe: Option<Dedupe>,
    ) -> Result<(u64, ApplyResult), ProposeError> {
        if self.inner.draining() {
            return Err(ProposeError::Stopped);
        }
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
        let request_id = self.inner.next_request_id();
        // Encoded here, on the caller's thread, not the raft thread's.
        let trace = TraceParent::current();
        self.inner.submit(Input::propose_once(
            request_id,
            command,
            dedupe,
            trace.as_ref(),
            tx,
        ))?;
        // A stopping driver answers every request posted before it closed
        // its channel; an answer channel closed unanswered means the driver
        // is gone without having taken it, so nothing was proposed.
        rx.await.map_err(|_| ProposeError::Stopped)?
    }

    /// Refuses every later proposal and read at once with
    /// [`ProposeError::Stopped`] (nothing done: safe to send to another
    /// node), as a node about to stop does; requests taken before carry on.
    pub fn drain(&self) {
        self.inner.drain();
    }

    pub fn draining(&self) -> bool {
        self.inner.draining()
    }

    /// Requests taken and not yet answered: the proposals, configuration
    /// changes and reads the driver holds, and the client requests it has
    /// not taken yet.
    pub fn requests_in_flight(&self) -> usize {
        self.inner.requests_in_flight.load(Ordering::Relaxed) + self.inner.requests_waiting()
    }

    /// If this node leads and another voter exists, starts handing
    /// leadership to the voter whose log matches furthest and says which;
    /// the caller watches [`status`](Self::status) for the outcome.
    pub async fn hand_over_leadership(&self) -> Result<Option<HandOver>, ProposeError> {
        let (tx, rx) = oneshot::channel();
        self.inner.submit(Input::HandOver { tx })?;
        rx.await.map_err(|_| ProposeError::Stopped)?
    }

    /// Waits until this node has applied everything committed before the
    /// call (a ReadIndex round), so a read of local state afterwards is
    /// linearizable. Returns the applied index. Runs inside a
    /// `raft.read_index` span, and its time is counted.
    pub async fn read_index(&self) -> Result<u64, ProposeError> {
        let span = tracing::info_span!("raft", otel.name = "raft.read_index");
        let started = std::time::Instant::now();
        let index = self.read_index_in().instrument(span).await?;
        let waited = started.elapsed().as_secs_f64();
        self.inner.metrics.read_index_seconds.observe(waited);
        Ok(index)
    }

    async fn read_index_in(&self) -> Result<u64, ProposeError> {
        if self.inner.draining() {
            return Err(ProposeError::Stopped);
        }
        let status = self.status();
        if let Some(f) = status.failure {
            return Err(ProposeError::Storage(f));
        }
        if status.leader_id == 0 {
            return Err(ProposeError::NotLeader { leader_id: 0 });
        }
        let (tx, rx) = oneshot::channel();
        self.inner.submit(Input::Read { tx })?;
        rx.await.map_err(|_| ProposeError::Stopped)?
    }

    /// Asks the leader to hand leadership to `to`. Returns once the request
    /// is started; the caller watches [`status`](Self::status) for the outcome.
    pub async fn transfer_leader(&self, to: u64) -> Result<(), ProposeError> {
        let (tx, rx) = oneshot::channel();
        self.inner.submit(Input::TransferLeader { to, tx })?;
        rx.await.map_err(|_| ProposeError::Stopped)?
    }

    /// Proposes a configuration change and waits until it is applied here.
    /// Returns its log index.
    pub async fn change_members(
        &self,
        change: raft::eraftpb::ConfChangeV2,
    ) -> Result<u64, ProposeError> {
        let (tx, rx) = oneshot::channel();
        self.inner.submit(Input::ChangeMembers { change, tx })?;
        rx.await.map_err(|_| ProposeError::Stopped)?
    }

    /// Makes everything applied so far durable in the engine and drops the
    /// raft log up to it, now rather than when the log has grown past
    /// `compact_log_entries`: what an operator asks for to take a snapshot.
    /// The log keeps what a follower being caught up still needs.
    pub async fn compact_log(&self) -> Result<LogCompaction, ProposeError> {
        let (tx, rx) = oneshot::channel();
        self.inner.submit(Input::CompactLog { tx })?;
        rx.await.map_err(|_| ProposeError::Stopped)?
    }

    /// Hands a message from the network to the peer, with the stamp of
    /// the batch it came in.
    pub fn step(&self, message: Message, stamp: Stamp) {
        // A full raft channel drops the message; raft retransmits. Client
        // requests wait elsewhere and cannot fill it.
        self.inner.offer(Input::Step(message, stamp));
    }

    /// The stamp for a batch of this peer's messages to member `to`.
    pub fn stamp_to(&self, to: u64) -> Stamp {
        Stamp {
            cluster_id: self.state_machine().cluster_id().unwrap_or(0),
            ..self.inner.stamps.to(to)
        }
    }

    /// Tells raft how sending a snapshot to `to` ended. Never waits, so
    /// async code may call it.
    pub fn report_snapshot(&self, to: u64, ok: bool) {
        // Must not be lost (raft waits for it before sending more to
        // `to`), so it is not a message on the raft channel, which drops
        // what does not fit.
        self.inner.report_snapshot(to, ok);
    }

    /// Where this peer's snapshots live (for the transport).
    pub fn snapshot_dirs(&self) -> &SnapshotDirs {
        &self.inner.snapshot_dirs
    }

    /// Reports a snapshot the transport received whole, verified and
    /// staged, just before it steps the snapshot's message: counted and
    /// published as `snapshot_received` (`detail` says which). The driver
    /// reports `snapshot_installed` once it installs it, which it may not
    /// (a snapshot overtaken by the log is dropped), hence two events.
    pub fn snapshot_received(&self, detail: String) {
        let event = RaftEvent::now(RaftEventKind::SnapshotReceived, &self.status(), 0, detail);
        self.inner.metrics.event(event.kind);
        // No subscriber is no error: the event is counted anyway.
        let _ = self.inner.events.send(event);
    }

    /// Tells raft that a peer could not be reached, so it stops pipelining to it.
    pub fn report_unreachable(&self, peer_id: u64) {
        self.inner.offer(Input::Unreachable(peer_id));
    }

    pub fn status(&self) -> PeerStatus {
        self.inner.status.read().clone()
    }

    pub fn subscribe(&self) -> broadcast::Receiver<RaftEvent> {
        self.inner.events.subscribe()
    }

    /// What this peer counts, for the node's `/metrics`.
    pub fn metrics(&self) -> &RaftMetrics {
        &self.inner.metrics
    }

    /// How many times this peer has fsynced its raft log since it started.
    pub fn log_sync_count(&self) -> u64 {
        self.inner.metrics.log_syncs.get()
    }

    pub fn state_machine(&self) -> &Arc<StateMachine> {
        &self.inner.state_machine
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use strata_engine::{Engine, Options};

    use super::*;
    use crate::mailbox::Inbox;
    use crate::status::Role;

    /// A peer's handle whose driver takes nothing: its inbox fills up.
    struct IdlePeer {
        handle: PeerHandle,
        inbox: Inbox,
        _dir: tempfile::TempDir,
    }

    impl IdlePeer {
        /// A leader (as its status says) whose channels hold `capacity`
        /// inputs each.
        fn new(capacity: usize) -> Self {
            let dir = tempfile::tempdir().expect("tempdir");
            let engine =
                Engine::open(dir.path().join("engine"), Options::default()).expect("engine");
            let sm = Arc::new(StateMachine::new(Arc::new(engine), 1));
            let dirs = SnapshotDirs::new(dir.path().join("snapshots")).expect("snapshot dirs");
            let (senders, inbox) = mailbox(capacity, capacity);
            let status = PeerStatus {
                id: 1,
                group_id: 1,
                role: Role::Leader,
                term: 2,
                leader_id: 1,
                commit_index: 0,
                applied_index: 0,
                last_index: 0,
                first_index: 0,
                log_bytes: 0,
                voters: vec![1, 2, 3],
                learners: Vec::new(),
                leaving: Vec::new(),
                failure: None,
                proven: true,
            };
            let handle = PeerHandle {
                inner: Arc::new(Shared::new(
                    senders,
                    status,
                    sm,
                    dirs,
                    RaftMetrics::default(),
                    Arc::new(crate::stamp::Stamps::new(1, true)),
                )),
            };
            IdlePeer {
                handle,
                inbox,
                _dir: dir,
            }
        }

        /// Everything the driver would take now.
        fn taken(&self) -> Vec<Input> {
            let raft = self.inbox.raft.try_iter();
            raft.chain(self.inbox.requests.try_iter()).collect()
        }

        /// Posts proposals until the inbox refuses one; returns how many
        /// it took.
        fn fill_with_proposals(&self) -> usize {
            for taken in 0.. {
                let (tx, _rx) = oneshot::channel();
                let posted = self.handle.inner.submit(Input::propose(
                    taken as u64,
                    Command::Delete { key: b"k".to_vec() },
                    None,
                    tx,
                ));
                match posted {
                    Ok(()) => {}
                    Err(ProposeError::Dropped(_)) => return taken,
                    Err(e) => panic!("proposal {taken}: {e}"),
                }
            }
            unreachable!()
        }
    }

    fn append_from(from: u64) -> Message {
        let mut m = Message::default();
        m.set_msg_type(raft::eraftpb::MessageType::MsgAppend);
        m.from = from;
        m.to = 1;
        m.term = 2;
        m
    }

    // Proves that a burst of client proposals that fills the inbox cannot
    // crowd out the other members' raft messages: the proposals beyond
    // the inbox's capacity are refused as retryable (503), and a message
    // stepped afterwards still reaches the driver.
    #[test]
    fn raft_message_reaches_the_driver_past_an_inbox_full_of_proposals() {
        let peer = IdlePeer::new(8);
        assert_eq!(peer.fill_with_proposals(), 8);
        peer.handle.step(append_from(2), Stamp::default());
        let steps = peer
            .taken()
            .into_iter()
            .filter(|i| matches!(i, Input::Step(m, _) if m.from == 2))
            .count();
        assert_eq!(steps, 1, "the append from node 2 was dropped");
    }

    // Proves that reporting a snapshot's outcome never blocks its caller
    // (a tokio task in the server) on a full inbox, and that the report
    // still reaches the driver.
    #[test]
    fn snapshot_report_does_not_block_on_a_full_inbox() {
        let peer = IdlePeer::new(8);
        peer.fill_with_proposals();
        for _ in 0..64 {
            peer.handle.step(append_from(2), Stamp::default());
        }
        let (done_tx, done) = std::sync::mpsc::channel();
        let handle = peer.handle.clone();
        std::thread::spawn(move || {
            handle.report_snapshot(3, true);
            let _ = done_tx.send(());
        });
        assert!(
            done.recv_timeout(Duration::from_secs(2)).is_ok(),
            "report_snapshot blocked on a full inbox"
        );
        assert_eq!(
            peer.handle.inner.take_snapshot_reports(),
            vec![(3, true)],
            "the report was lost"
        );
    }

    // Proves that a snapshot the transport received is counted under its
    // own kind and published to the event stream with this peer's status,
    // apart from the snapshots it installs.
    #[test]
    fn a_received_snapshot_is_counted_and_published() {
        let peer = IdlePeer::new(8);
        let mut events = peer.handle.subscribe();
        peer.handle
            .snapshot_received("index 9 term 2 from node 3".into());
        let e = events.try_recv().expect("no event published");
        assert_eq!(e.kind, RaftEventKind::SnapshotReceived);
        assert_eq!((e.node_id, e.term, e.leader_id), (1, 2, 1));
        assert_eq!(e.detail, "index 9 term 2 from node 3");
        let count = |kind| {
            peer.handle
                .metrics()
                .events
                .get_or_create(&crate::metrics::EventLabels { kind })
                .get()
        };
        assert_eq!(count(crate::metrics::EventKind::snapshot_received), 1);
        assert_eq!(count(crate::metrics::EventKind::snapshot_installed), 0);
    }
}
