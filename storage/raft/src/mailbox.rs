//! The peer's mailbox. Everything that reaches the driver thread (requests
//! from the handles, messages from the network, results from the snapshot
//! thread) is an [`Input`] on one bounded channel; [`Shared`] holds that
//! channel's sending end beside what the driver publishes for the handles.
//!
//! The channel is bounded, so how an input is posted says what a full inbox
//! means for it: [`Shared::submit`] refuses a request as retryable,
//! [`Shared::offer`] drops what raft will send again, and
//! [`Shared::deliver`] waits for room for what must not be lost.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_channel::{Sender, TrySendError};
use parking_lot::RwLock;
use raft::eraftpb::{ConfChangeV2, Message};
use tokio::sync::{broadcast, oneshot};

use crate::command::{ApplyResult, Command};
use crate::error::ProposeError;
use crate::snapshot::{JobDone, SnapshotDirs};
use crate::state_machine::StateMachine;
use crate::status::{PeerStatus, RaftEvent};

/// Where a proposal's outcome goes: the index it was applied at and its
/// result.
pub(crate) type ProposeTx = oneshot::Sender<Result<(u64, ApplyResult), ProposeError>>;
/// Where a read's outcome goes: the applied index it may read at.
pub(crate) type ReadTx = oneshot::Sender<Result<u64, ProposeError>>;
/// Where a configuration change's outcome goes: its log index.
pub(crate) type ConfTx = oneshot::Sender<Result<u64, ProposeError>>;

/// Inputs to the driver.
pub(crate) enum Input {
    Propose {
        request_id: u64,
        command: Command,
        tx: ProposeTx,
    },
    Read {
        tx: ReadTx,
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
        tx: ConfTx,
    },
    Shutdown,
}

/// What the driver and the handles of one peer share.
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

    /// Posts a request someone waits on: a full inbox turns it away as
    /// retryable, since nothing was proposed.
    pub(crate) fn submit(&self, input: Input) -> Result<(), ProposeError> {
        match self.inbox.try_send(input) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => Err(ProposeError::Dropped("raft inbox is full".into())),
            Err(TrySendError::Disconnected(_)) => Err(ProposeError::Stopped),
        }
    }

    /// Posts an input that may be lost: a full inbox drops it.
    pub(crate) fn offer(&self, input: Input) {
        let _ = self.inbox.try_send(input);
    }

    /// Posts an input that must not be lost, waiting for room.
    pub(crate) fn deliver(&self, input: Input) {
        let _ = self.inbox.send(input);
    }

    /// A request id not used before by this peer.
    pub(crate) fn next_request_id(&self) -> u64 {
        self.next_request_id.fetch_add(1, Ordering::Relaxed)
    }
}
