//! The request and answer of `POST /v1/cluster/snapshot`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Body of POST /v1/cluster/snapshot.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotRequest {
    /// The members to snapshot; every member when absent or empty.
    #[serde(default)]
    pub node_ids: Vec<u64>,
}

/// How a snapshot request ended on one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SnapshotOutcome {
    /// The applied state is durable and the raft log was dropped up to it.
    Done,
    /// Still running when the answer was due; it goes on.
    Running,
    /// The node could not be asked, or its storage refused: see `error`.
    Failed,
}

/// What a snapshot request did on one member.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeSnapshot {
    pub id: u64,
    pub outcome: SnapshotOutcome,
    /// How long the node worked before answering.
    pub duration_ms: u64,
    /// The applied index made durable (0 unless `done`).
    pub durable_index: u64,
    /// The first index of the node's raft log before the request (0 unless `done`).
    pub first_index_before: u64,
    /// The first index of the node's raft log after it: the log keeps what a
    /// follower being caught up still needs, so this may stop short of
    /// `durable_index + 1` (0 unless `done`).
    pub first_index_after: u64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
}

/// Result of POST /v1/cluster/snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SnapshotResult {
    pub nodes: Vec<NodeSnapshot>,
}
