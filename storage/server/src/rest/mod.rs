//! The REST front end (see `proto/openapi.json`), over the same service core
//! as gRPC.

pub mod body;
pub mod cluster;
pub mod encoding;
pub mod health;
pub mod kv;
pub mod parse;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, delete, get, post};
use strata_proto::v1::StatusResponse;
use tokio::sync::watch;

use crate::core::Core;
use crate::error::{ApiError, ErrorCode};

/// The OpenAPI document describing this REST API, kept in the repository.
pub const OPENAPI_JSON: &str = include_str!("../../../../proto/openapi.json");

/// What every REST handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub core: Arc<Core>,
    /// The latest cluster-wide status, refreshed in the background.
    pub cluster: watch::Receiver<StatusResponse>,
}

async fn openapi() -> Response {
    let mut r = OPENAPI_JSON.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        "method not allowed on this route",
    )
}

/// Every REST route. Unknown routes are handled by the caller's fallback,
/// because gRPC services share the router.
pub fn router(state: AppState) -> Router {
    let max_body = state.core.limits().max_request_bytes;
    Router::new()
        .route("/v1/kv", get(kv::scan))
        .route("/v1/kv/", any(kv::empty_key))
        .route(
            "/v1/kv/{*key}",
            get(kv::get).put(kv::put).delete(kv::delete),
        )
        .route("/v1/batch", post(kv::batch))
        .route("/v1/cas", post(kv::cas))
        .route("/v1/cluster/status", get(cluster::status))
        .route(
            "/v1/cluster/members",
            get(cluster::members).post(cluster::add_member),
        )
        .route("/v1/cluster/members/{id}", delete(cluster::remove_member))
        .route(
            "/v1/cluster/members/{id}/promote",
            post(cluster::promote_member),
        )
        .route("/v1/cluster/events", get(cluster::events))
        .route("/v1/cluster/leader", post(cluster::transfer_leader))
        .route("/health/leader", get(health::leader))
        .route("/health/ready", get(health::ready))
        .route("/health/live", get(health::live))
        .route("/openapi.json", get(openapi))
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state)
}
