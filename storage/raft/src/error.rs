//! Errors of the replication layer.

use std::io;
use std::path::PathBuf;

use strata_engine::EngineError;

/// An error from the raft log on disk.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("raft log I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A record failed its checksum or did not decode, and it is not the torn
    /// tail of the last segment.
    #[error("raft log corrupted in {path} at offset {offset}: {reason}")]
    Corruption {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    /// An earlier write or fsync failed; the log refuses writes until it is
    /// reopened, because it can no longer tell what reached the disk.
    #[error("raft log refuses writes after an earlier failure ({reason}); reopen it")]
    Poisoned { reason: String },
}

impl LogError {
    /// Whether the device was full (ENOSPC).
    pub fn is_no_space(&self) -> bool {
        match self {
            LogError::Io { source, .. } => strata_fs::is_no_space(source),
            LogError::Corruption { .. } | LogError::Poisoned { .. } => false,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        LogError::Io {
            path: path.into(),
            source,
        }
    }
}

/// Why a request to the replication layer did not succeed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProposeError {
    /// This node is not the leader; `leader_id` is 0 when no leader is known.
    /// Nothing was proposed, so the caller may retry elsewhere.
    #[error("not the leader (leader is {leader_id})")]
    NotLeader { leader_id: u64 },
    /// The proposal was definitely not applied (it was overwritten by another
    /// leader's entry, or the node was too busy to take it).
    #[error("proposal dropped: {0}")]
    Dropped(String),
    /// The request did not complete in time; a write may or may not have been
    /// applied.
    #[error("timed out waiting for the outcome")]
    Timeout,
    /// This node stopped leading while the write was in flight; another
    /// leader may still commit it.
    #[error("leadership was lost while the write was in flight")]
    LeadershipLost,
    /// The node's storage failed (or its device is full); it refuses to
    /// acknowledge anything.
    #[error(transparent)]
    Storage(StorageFailure),
    /// The request cannot be carried out as asked (e.g. transferring
    /// leadership to a node that is not a voter).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The node is shutting down and the request never reached raft:
    /// nothing was proposed, so it may be sent again (to another node).
    #[error("node is shutting down")]
    Stopped,
    /// The node stopped after the write was stepped into raft: its entry
    /// may already be on the followers, and the next leader may still
    /// commit it. Unlike [`Stopped`](Self::Stopped), not safe to retry.
    #[error("the node stopped while the write was in flight; it may or may not be applied")]
    StoppedInFlight,
}

/// Why a peer's storage stopped it. A peer keeps the first one and gives
/// it in every later answer, so a full disk is reported as full for as long
/// as the peer runs, not only to the request that hit it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", kind.as_str())]
pub struct StorageFailure {
    pub kind: StorageFailureKind,
    /// What failed, in words.
    pub reason: String,
}

/// The storage failures callers tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageFailureKind {
    /// The device was full (ENOSPC): the one failure that goes away by
    /// itself, so freeing space and restarting recovers.
    Full,
    /// Anything else: a write or fsync failed, or stored data does not
    /// decode.
    Failed,
    /// The raft log lacks entries this member had acknowledged to the
    /// leader: its disk was emptied or replaced, or kept less than it
    /// synced. Restarting cannot help; the member must be removed and
    /// started again empty as a new one.
    LostState,
}

impl StorageFailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StorageFailureKind::Full => "storage full",
            StorageFailureKind::Failed => "storage failed",
            StorageFailureKind::LostState => "lost state",
        }
    }
}

impl StorageFailure {
    /// A failure other than a full device.
    pub fn failed(reason: impl Into<String>) -> Self {
        StorageFailure {
            kind: StorageFailureKind::Failed,
            reason: reason.into(),
        }
    }

    /// A full device when `no_space`, any other failure otherwise.
    pub fn new(no_space: bool, reason: impl Into<String>) -> Self {
        let kind = if no_space {
            StorageFailureKind::Full
        } else {
            StorageFailureKind::Failed
        };
        StorageFailure {
            kind,
            reason: reason.into(),
        }
    }

    /// The member lost entries it had acknowledged (see
    /// [`StorageFailureKind::LostState`]).
    pub fn lost_state(reason: impl Into<String>) -> Self {
        StorageFailure {
            kind: StorageFailureKind::LostState,
            reason: reason.into(),
        }
    }

    pub fn is_full(&self) -> bool {
        self.kind == StorageFailureKind::Full
    }

    pub fn is_lost_state(&self) -> bool {
        self.kind == StorageFailureKind::LostState
    }
}

impl From<&EngineError> for StorageFailure {
    fn from(e: &EngineError) -> Self {
        StorageFailure::new(e.is_no_space(), e.to_string())
    }
}

impl From<&LogError> for StorageFailure {
    fn from(e: &LogError) -> Self {
        StorageFailure::new(e.is_no_space(), e.to_string())
    }
}

/// An error while starting a peer.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("raft: {0}")]
    Raft(#[from] raft::Error),
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error(transparent)]
    ValueFormat(#[from] crate::state_machine::ValueFormatError),
}
