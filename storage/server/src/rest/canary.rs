//! `GET /v1/canary`: what this node's consistency canary has found.

use axum::Json;
use axum::extract::State;

use super::AppState;
use crate::canary::CanaryReport;

/// This node's consistency canary: windows checked by verdict, the last
/// check, and the latest history that was not linearizable
///
/// The canary runs only with `--canary`; otherwise `enabled` is false and
/// nothing has been checked. See `docs/operations.md`.
#[utoipa::path(
    get,
    path = "/v1/canary",
    operation_id = "canary",
    tag = "cluster",
    responses(
        (status = 200, description = "The canary's findings on this node.", body = CanaryReport),
    ),
)]
pub async fn report(State(s): State<AppState>) -> Json<CanaryReport> {
    Json(s.canary.report())
}
