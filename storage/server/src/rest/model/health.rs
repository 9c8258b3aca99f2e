//! Answers of the `/health` routes.

use serde::Serialize;
use utoipa::ToSchema;

/// Which check passed: `leader` for /health/leader, `ready` for
/// /health/ready, `live` for /health/live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    Leader,
    Ready,
    Live,
}

/// 200 body of the health endpoints.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HealthStatus {
    #[schema(inline)]
    pub status: Check,
    /// The answering node.
    pub node_id: u64,
    /// The leader this node knows (on /health/ready).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub leader_id: Option<u64>,
}
