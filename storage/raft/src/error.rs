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
    /// The node's storage failed; it refuses to acknowledge anything.
    #[error("storage failed: {0}")]
    Storage(String),
    /// The storage device is full.
    #[error("storage full: {0}")]
    NoSpace(String),
    /// The request cannot be carried out as asked (e.g. transferring
    /// leadership to a node that is not a voter).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The node is shutting down.
    #[error("node is shutting down")]
    Stopped,
}

impl ProposeError {
    pub(crate) fn from_engine(e: &EngineError) -> Self {
        match e {
            EngineError::NoSpace { .. } => ProposeError::NoSpace(e.to_string()),
            _ => ProposeError::Storage(e.to_string()),
        }
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
}
