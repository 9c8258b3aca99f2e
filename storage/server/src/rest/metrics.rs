//! `GET /metrics`: every metric of this node for Prometheus.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use super::AppState;
use crate::metrics::CONTENT_TYPE;

/// Every metric of this node, in the OpenMetrics text format
///
/// Names start with `strata_` (API, raft, engine, process); see
/// `docs/operations.md` for the list. Prometheus scrapes it as is.
#[utoipa::path(
    get,
    path = "/metrics",
    operation_id = "metrics",
    tag = "meta",
    responses(
        (status = 200, description = "The metrics.", content_type = "application/openmetrics-text", body = String),
    ),
)]
pub async fn scrape(State(s): State<AppState>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], s.metrics.encode())
}
