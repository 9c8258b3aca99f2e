//! Health endpoints used by Envoy's active health checks and orchestrators.
//!
//! - `/health/leader`: 200 only on the leader whose storage is healthy;
//! - `/health/ready`: 200 when a leader is known and storage is healthy;
//! - `/health/live`: 200 while storage is healthy.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::AppState;
use super::cluster::role_name;
use crate::error::{ApiError, ErrorCode};

fn unhealthy(s: &AppState) -> Option<ApiError> {
    let st = s.core.local_status();
    (!st.healthy).then(|| {
        ApiError::new(
            ErrorCode::Unavailable,
            format!("storage unhealthy: {}", st.error),
        )
    })
}

pub async fn leader(State(s): State<AppState>) -> Response {
    if let Some(e) = unhealthy(&s) {
        return e.into_response();
    }
    let st = s.core.local_status();
    if st.leader_id == st.id {
        Json(json!({ "status": "leader", "node_id": st.id })).into_response()
    } else {
        ApiError::unavailable(format!("node {} is a {}", st.id, role_name(st.role)))
            .with_leader(st.leader_id, None)
            .into_response()
    }
}

pub async fn ready(State(s): State<AppState>) -> Response {
    if let Some(e) = unhealthy(&s) {
        return e.into_response();
    }
    let st = s.core.local_status();
    if st.leader_id == 0 {
        return ApiError::unavailable("no leader is known").into_response();
    }
    Json(json!({ "status": "ready", "node_id": st.id, "leader_id": st.leader_id })).into_response()
}

pub async fn live(State(s): State<AppState>) -> Response {
    if let Some(e) = unhealthy(&s) {
        return e.into_response();
    }
    Json(json!({ "status": "live", "node_id": s.core.id() })).into_response()
}
