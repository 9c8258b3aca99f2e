//! The REST front end, over the same service core as gRPC. Its OpenAPI
//! document (`openapi`) is derived from the routes registered in
//! [`routes`] and the types they read and answer.

pub mod backup;
pub mod body;
pub mod canary;
pub mod cluster;
pub mod encoding;
pub mod health;
pub mod kv;
pub mod lease;
pub mod metrics;
pub mod model;
pub mod openapi;
pub mod parse;
pub mod responses;
pub mod txn;
pub mod watch;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::any;
use strata_proto::v1::StatusResponse;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::core::Core;
use crate::error::{ApiError, ErrorCode};
use crate::metrics::NodeMetrics;

/// What every REST handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub core: Arc<Core>,
    /// The watches this node serves.
    pub watches: Arc<crate::watch::Watches>,
    /// The latest cluster-wide status, refreshed in the background.
    pub cluster: tokio::sync::watch::Receiver<StatusResponse>,
    pub metrics: Arc<NodeMetrics>,
    /// What this node's consistency canary has found.
    pub canary: Arc<crate::canary::CanaryState>,
    /// This node's numbers and engine, for the stats and compaction routes.
    pub stats: Arc<crate::stats::StatsSource>,
    /// Every member's stats for the event streams, while any listens.
    pub stats_feed: crate::stats::feed::StatsFeed,
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        "method not allowed on this route",
    )
}

/// Every documented route, on top of `api` (the document's shared parts):
/// the router serves exactly these, and the OpenAPI document lists exactly
/// these.
fn routes(api: utoipa::openapi::OpenApi) -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(api)
        .routes(routes!(kv::put, kv::get, kv::delete))
        .routes(routes!(kv::scan))
        .routes(routes!(kv::batch))
        .routes(routes!(kv::cas))
        .routes(routes!(txn::txn))
        .routes(routes!(lease::grant, lease::list))
        .routes(routes!(lease::time_to_live, lease::revoke))
        .routes(routes!(lease::keep_alive))
        .routes(routes!(watch::watch))
        .routes(routes!(backup::backup))
        .routes(routes!(cluster::status))
        .routes(routes!(cluster::members, cluster::add_member))
        .routes(routes!(cluster::transfer_leader))
        .routes(routes!(cluster::split_range))
        .routes(routes!(cluster::events))
        .routes(routes!(health::leader))
        .routes(routes!(health::ready))
        .routes(routes!(health::live))
        .routes(routes!(openapi::serve))
        .routes(routes!(metrics::scrape))
        .routes(routes!(cluster::remove_member))
        .routes(routes!(cluster::promote_member))
        .routes(routes!(canary::report))
        .routes(routes!(cluster::stats))
        .routes(routes!(cluster::compact))
        .routes(routes!(cluster::snapshot))
}

/// Every REST route. Unknown routes are handled by the caller's fallback,
/// because gRPC services share the router.
pub fn router(state: AppState) -> Router {
    let max_body = state.core.limits().max_request_bytes;
    let (router, _) = routes(Default::default()).split_for_parts();
    router
        .route("/v1/kv/", any(kv::empty_key))
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state)
}
