//! Health endpoints used by Envoy's active health checks and orchestrators.
//!
//! - `/health/leader`: 200 only on the leader whose storage is healthy;
//! - `/health/ready`: 200 when a leader is known and storage is healthy;
//! - `/health/live`: 200 while storage is healthy.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use strata_proto::v1::NodeStatus;

use super::AppState;
use super::cluster::role_name;
use crate::error::{ApiError, ErrorCode};

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

pub async fn leader(State(s): State<AppState>) -> Result<Response, ApiError> {
    let st = healthy_status(&s)?;
    if st.leader_id != st.id {
        return Err(
            ApiError::unavailable(format!("node {} is a {}", st.id, role_name(st.role)))
                .with_leader(st.leader_id, None),
        );
    }
    Ok(Json(json!({ "status": "leader", "node_id": st.id })).into_response())
}

pub async fn ready(State(s): State<AppState>) -> Result<Response, ApiError> {
    let st = healthy_status(&s)?;
    if st.leader_id == 0 {
        return Err(ApiError::unavailable("no leader is known"));
    }
    Ok(
        Json(json!({ "status": "ready", "node_id": st.id, "leader_id": st.leader_id }))
            .into_response(),
    )
}

pub async fn live(State(s): State<AppState>) -> Result<Response, ApiError> {
    let st = healthy_status(&s)?;
    Ok(Json(json!({ "status": "live", "node_id": st.id })).into_response())
}
