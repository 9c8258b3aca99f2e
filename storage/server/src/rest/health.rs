//! Health endpoints used by Envoy's active health checks and orchestrators.
//!
//! - `/health/leader`: 200 only on the leader whose storage is healthy;
//! - `/health/ready`: 200 when a leader is known, storage is healthy and
//!   the node is not stuck behind a snapshot it had no space to stage;
//! - `/health/live`: 200 while storage is healthy.
//!
//! A node that is stopping (draining) fails `leader` and `ready`, so
//! health checks take it out of rotation, but stays live.

use axum::Json;
use axum::extract::State;
use strata_proto::v1::NodeStatus;

use super::AppState;
use super::model::cluster::Role;
use super::model::health::{Check, HealthStatus};
use super::responses::Unavailable;
use crate::error::{ApiError, ErrorCode};

/// The node's status if it takes requests: the 503 to answer when its
/// storage failed or it is stopping.
fn serving_status(s: &AppState) -> Result<NodeStatus, ApiError> {
    let st = healthy_status(s)?;
    if s.core.peer().draining() {
        return Err(ApiError::unavailable(format!(
            "node {} is shutting down",
            st.id
        )));
    }
    Ok(st)
}

/// The node's own status, or the 503 to answer when its storage failed.
fn healthy_status(s: &AppState) -> Result<NodeStatus, ApiError> {
    let st = s.core.local_status();
    if st.healthy {
        Ok(st)
    } else {
        Err(ApiError::new(
            ErrorCode::Unavailable,
            format!("storage unhealthy: {}", st.error),
        ))
    }
}

/// 200 only on the leader whose storage is healthy and that is not stopping
///
/// Envoy's leader-only cluster health-checks this path.
#[utoipa::path(
    get,
    path = "/health/leader",
    operation_id = "healthLeader",
    tag = "health",
    responses(
        (status = 200, description = "This node is the leader.", body = HealthStatus),
        (status = 503, response = Unavailable),
    ),
)]
pub async fn leader(State(s): State<AppState>) -> Result<Json<HealthStatus>, ApiError> {
    let st = serving_status(&s)?;
    if st.leader_id != st.id {
        let role = Role::from_proto(st.role).as_str();
        return Err(ApiError::unavailable(format!("node {} is a {role}", st.id))
            .with_leader(st.leader_id, None));
    }
    Ok(Json(HealthStatus {
        status: Check::Leader,
        node_id: st.id,
        leader_id: None,
    }))
}

/// 200 when the node knows a leader, its storage is healthy and it is not
/// stopping
#[utoipa::path(
    get,
    path = "/health/ready",
    operation_id = "healthReady",
    tag = "health",
    responses(
        (status = 200, description = "Ready.", body = HealthStatus),
        (status = 503, response = Unavailable),
    ),
)]
pub async fn ready(State(s): State<AppState>) -> Result<Json<HealthStatus>, ApiError> {
    let st = serving_status(&s)?;
    if st.leader_id == 0 {
        return Err(ApiError::unavailable("no leader is known"));
    }
    if let Some(why) = s.core.peer().snapshot_dirs().staging_refused() {
        return Err(ApiError::unavailable(format!(
            "node {} cannot catch up with the leader: {why}",
            st.id
        )));
    }
    Ok(Json(HealthStatus {
        status: Check::Ready,
        node_id: st.id,
        leader_id: Some(st.leader_id),
    }))
}

/// 200 while the process runs and its storage is healthy
#[utoipa::path(
    get,
    path = "/health/live",
    operation_id = "healthLive",
    tag = "health",
    responses(
        (status = 200, description = "Live.", body = HealthStatus),
        (status = 503, response = Unavailable),
    ),
)]
pub async fn live(State(s): State<AppState>) -> Result<Json<HealthStatus>, ApiError> {
    let st = healthy_status(&s)?;
    Ok(Json(HealthStatus {
        status: Check::Live,
        node_id: st.id,
        leader_id: None,
    }))
}
