//! The peer's mailbox. Everything that reaches the driver thread is an
//! [`Input`], on one of two bounded channels: client requests from the
//! handles on one, and on the other what keeps raft itself going (messages
//! from the other members, news from the transport and the snapshot
//! thread). The driver takes the second first, and a burst of client
//! requests can fill only the first: client load never crowds out the
//! appends, votes and heartbeats that keep the group's leader in office.
//! [`Shared`] holds the sending ends beside what the driver publishes for
//! the handles.
//!
//! How an input is posted says what a full channel means for it:
//! [`Shared::submit`] refuses a request as retryable (nothing was
//! proposed), and [`Shared::offer`] drops what raft will send again. What
//! must not be lost but comes from async code, which must never wait for
//! room (a snapshot send's outcome, a stop request), is left in `Shared`
//! for the driver's next round, and the driver is woken. Only the
//! snapshot thread, a plain thread, waits for room.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use parking_lot::{Mutex, RwLock};
use raft::eraftpb::{ConfChangeV2, Message};
use tokio::sync::{broadcast, oneshot};

use crate::command::{ApplyResult, Command, Dedupe, Proposal};
use crate::error::ProposeError;
use crate::log_compaction::LogCompaction;
use crate::metrics::RaftMetrics;
use crate::snapshot::{JobDone, SnapshotDirs};
use crate::stamp::{Stamp, Stamps};
use crate::state_machine::StateMachine;
use crate::status::{HandOver, PeerStatus, RaftEvent};
use crate::trace::TraceParent;

/// Where a proposal's outcome goes: the index it was applied at and its
/// result.
pub(crate) type ProposeTx = oneshot::Sender<Result<(u64, ApplyResult), ProposeError>>;
/// Where a read's outcome goes: the applied index it may read at.
pub(crate) type ReadTx = oneshot::Sender<Result<u64, ProposeError>>;
/// Where a configuration change's outcome goes: its log index.
pub(crate) type ConfTx = oneshot::Sender<Result<u64, ProposeError>>;
/// Where a requested log compaction's outcome goes.
pub(crate) type CompactLogTx = oneshot::Sender<Result<LogCompaction, ProposeError>>;

/// Inputs to the driver. Client requests (`Propose`, `Read`,
/// `TransferLeader`, `HandOver`, `ChangeMembers`, `CompactLog`) come on the request channel,
/// everything else on the raft channel.
pub(crate) enum Input {
    /// A client's write, already encoded as its entry (by the proposer,
    /// on its own thread: copying a 15 MiB batch is no work for the raft
    /// thread, which would hold heartbeats up meanwhile).
    Propose {
        request_id: u64,
        data: Vec<u8>,
        tx: ProposeTx,
    },
    Read {
        tx: ReadTx,
    },
    /// A raft message and the stamp of the batch it came in.
    Step(Message, Stamp),
    Unreachable(u64),
    TransferLeader {
        to: u64,
        tx: oneshot::Sender<Result<(), ProposeError>>,
    },
    /// Hand leadership to the most caught-up voter (the leader is stopping).
    HandOver {
        tx: oneshot::Sender<Result<Option<HandOver>, ProposeError>>,
    },
    /// Something was left in `Shared` for the driver's next round.
    Wake,
    /// The snapshot thread finished a job.
    Job(JobDone),
    /// Propose a configuration change (leader only); answered once applied.
    ChangeMembers {
        change: ConfChangeV2,
        tx: ConfTx,
    },
    /// Make the applied state durable now and drop the raft log up to it
    /// (an operator's request; the peer also does it by itself).
    CompactLog {
        tx: CompactLogTx,
    },
}

impl Input {
    /// A proposal of `command`, encoded here with the sampled `trace` it
    /// was proposed in, which its entry carries.
    #[cfg(test)]
    pub(crate) fn propose(
        request_id: u64,
        command: Command,
        trace: Option<&TraceParent>,
        tx: ProposeTx,
    ) -> Input {
        Input::propose_once(request_id, command, None, trace, tx)
    }

    /// [`propose`](Self::propose), carrying the client's request id when
    /// there is one (see `state_machine::dedupe`).
    pub(crate) fn propose_once(
        request_id: u64,
        command: Command,
        dedupe: Option<Dedupe>,
        trace: Option<&TraceParent>,
        tx: ProposeTx,
    ) -> Input {
        let data = Proposal {
            request_id,
            command,
            dedupe,
        }
        .encode_traced(trace);
        Input::Propose {
            request_id,
            data,
            tx,
        }
    }
}

/// The sending ends of a peer's two channels.
pub(crate) struct Senders {
    requests: Sender<Input>,
    raft: Sender<Input>,
}

/// The driver's ends of a peer's two channels.
pub(crate) struct Inbox {
    /// Client requests.
    pub(crate) requests: Receiver<Input>,
    /// Raft messages and what else keeps raft going; taken first.
    pub(crate) raft: Receiver<Input>,
}

/// Makes a peer's channels: client requests wait in one of
/// `request_capacity`, raft messages in one of `raft_capacity`.
pub(crate) fn mailbox(request_capacity: usize, raft_capacity: usize) -> (Senders, Inbox) {
    let (requests_tx, requests) = crossbeam_channel::bounded(request_capacity);
    let (raft_tx, raft) = crossbeam_channel::bounded(raft_capacity);
    let senders = Senders {
        requests: requests_tx,
        raft: raft_tx,
    };
    (senders, Inbox { requests, raft })
}

impl Senders {
    /// Where the snapshot thread hands in finished jobs (it may wait for
    /// room: it is a plain thread).
    pub(crate) fn raft(&self) -> Sender<Input> {
        self.raft.clone()
    }
}

/// What the driver and the handles of one peer share.
pub(crate) struct Shared {
    senders: Senders,
    pub(crate) status: RwLock<PeerStatus>,
    pub(crate) events: broadcast::Sender<RaftEvent>,
    pub(crate) state_machine: Arc<StateMachine>,
    pub(crate) snapshot_dirs: SnapshotDirs,
    /// The driver's counters (the same families it updates).
    pub(crate) metrics: RaftMetrics,
    /// What the transport stamps batches with.
    pub(crate) stamps: Arc<Stamps>,
    next_request_id: AtomicU64,
    /// How the latest snapshot send to each member ended, until the
    /// driver takes it: raft waits for it before sending that member more.
    snapshot_reports: Mutex<BTreeMap<u64, bool>>,
    /// Set once the peer is dropped: the driver stops.
    stopping: AtomicBool,
    /// Set, under the write lock, once the stopping driver takes no more
    /// requests: a request posted afterwards is refused at once instead of
    /// waiting unanswered in the channel (a bounded channel keeps what it
    /// holds while any handle lives). Posting holds the read lock.
    closed: RwLock<bool>,
    /// Set when the node is about to stop: new proposals and reads are
    /// refused.
    draining: AtomicBool,
    /// Proposals, configuration changes and reads the driver has taken
    /// and not yet answered, as of its last round.
    pub(crate) requests_in_flight: AtomicUsize,
}

impl Shared {
    pub(crate) fn new(
        senders: Senders,
        status: PeerStatus,
        state_machine: Arc<StateMachine>,
        snapshot_dirs: SnapshotDirs,
        metrics: RaftMetrics,
        stamps: Arc<Stamps>,
    ) -> Self {
        let (events, _) = broadcast::channel(256);
        Shared {
            senders,
            status: RwLock::new(status),
            events,
            state_machine,
            snapshot_dirs,
            metrics,
            stamps,
            // Request ids only need to be unique per proposer and restart:
            // start from a random point so a restarted node does not reuse
            // old ids.
            next_request_id: AtomicU64::new(rand::random::<u64>() >> 1),
            snapshot_reports: Mutex::new(BTreeMap::new()),
            stopping: AtomicBool::new(false),
            closed: RwLock::new(false),
            draining: AtomicBool::new(false),
            requests_in_flight: AtomicUsize::new(0),
        }
    }

    /// Posts a client request someone waits on: a full request channel
    /// turns it away as retryable, since nothing was proposed.
    pub(crate) fn submit(&self, input: Input) -> Result<(), ProposeError> {
        let closed = self.closed.read();
        if *closed {
            return Err(ProposeError::Stopped);
        }
        match self.senders.requests.try_send(input) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(ProposeError::Dropped("raft inbox is full".into())),
            Err(TrySendError::Disconnected(_)) => Err(ProposeError::Stopped),
        }
    }

    /// Posts a raft input that may be lost: a full raft channel drops it.
    pub(crate) fn offer(&self, input: Input) {
        let _ = self.senders.raft.try_send(input);
    }

    /// Wakes the driver to look at what was left here. A full raft
    /// channel drops the wake-up, but then the driver has inputs to take
    /// and a round follows them.
    fn wake(&self) {
        self.offer(Input::Wake);
    }

    /// Leaves how sending a snapshot to `to` ended for the driver's next
    /// round, without waiting. Only the latest outcome per member is kept:
    /// one send to a member is in flight at a time.
    pub(crate) fn report_snapshot(&self, to: u64, ok: bool) {
        self.snapshot_reports.lock().insert(to, ok);
        self.wake();
    }

    /// The snapshot outcomes left since the last call.
    pub(crate) fn take_snapshot_reports(&self) -> Vec<(u64, bool)> {
        std::mem::take(&mut *self.snapshot_reports.lock())
            .into_iter()
            .collect()
    }

    /// Asks the driver to stop, without waiting.
    pub(crate) fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        self.wake();
    }

    pub(crate) fn stop_requested(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Refuses every later request (see `closed`); once it returns, nothing
    /// more reaches the request channel.
    pub(crate) fn close_requests(&self) {
        *self.closed.write() = true;
    }

    /// From now on, proposals and reads are refused before they reach
    /// the driver.
    pub(crate) fn drain(&self) {
        self.draining.store(true, Ordering::Release);
    }

    pub(crate) fn draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// Client requests posted and not yet taken by the driver.
    pub(crate) fn requests_waiting(&self) -> usize {
        self.senders.requests.len()
    }

    /// A request id not used before by this peer.
    pub(crate) fn next_request_id(&self) -> u64 {
        self.next_request_id.fetch_add(1, Ordering::Relaxed)
    }
}
