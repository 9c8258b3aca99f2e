//! The runner's HTTP API, which the gateway routes under `/load/`:
//!
//! - `GET /load/scenarios`: the bundled scenarios and the bounds;
//! - `GET /load/run`: the current or latest run;
//! - `GET /load/run/events`: the same as server-sent events, `event: run`
//!   with the view as its data, first at once, then at every change (a
//!   start, a stop, the end, a line of k6's output) and at least every
//!   [`RUN_EVENTS_HEARTBEAT`] (the console's sign of a live stream), for as
//!   long as the client stays;
//! - `POST /load/run` `{"scenario","rate_per_s","duration_s"}`: start one;
//! - `DELETE /load/run`: stop it.
//!
//! Starting and stopping a run need a token with the admin role, checked
//! against the cluster's public keys (`--auth-jwks`), as the nodes check
//! theirs; reading is open. A runner given no keys takes anyone's runs.
//! A run acts with the credential of whoever started it: k6 sends the
//! starter's token with its requests (`STRATA_TOKEN`), so a run works
//! against a cluster whose requests without a token may do nothing.
//!
//! Errors answer `{"code","message"}` as the nodes do: 400
//! `INVALID_ARGUMENT` for a body that is not a valid request, 401
//! `UNAUTHENTICATED` / 403 `PERMISSION_DENIED` for a start or stop without
//! an admin token, 409 `CONFLICT` for a start while a run is in progress
//! (or a stop without one), 500 `INTERNAL` when k6 cannot be started.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use serde_json::json;
use strata_auth::{Role, Verifier};
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;

use super::run::{RunConflict, Runner};
use super::scenario::{MAX_DURATION_S, MAX_RATE_PER_S, RunRequest, Scenario};

/// An error answer.
struct Refusal(StatusCode, &'static str, String);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let Refusal(status, code, message) = self;
        (
            status,
            axum::Json(json!({ "code": code, "message": message })),
        )
            .into_response()
    }
}

impl From<RunConflict> for Refusal {
    fn from(e: RunConflict) -> Refusal {
        match e {
            RunConflict::Spawn { .. } => {
                Refusal(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", e.to_string())
            }
            RunConflict::AlreadyRunning(_) | RunConflict::NotRunning => {
                Refusal(StatusCode::CONFLICT, "CONFLICT", e.to_string())
            }
        }
    }
}

#[derive(Serialize)]
struct ScenarioView {
    name: String,
    description: &'static str,
}

async fn scenarios(State(runner): State<Runner>) -> impl IntoResponse {
    let list: Vec<ScenarioView> = Scenario::ALL
        .into_iter()
        .map(|s| ScenarioView {
            name: s.name(),
            description: s.description(),
        })
        .collect();
    axum::Json(json!({
        "scenarios": list,
        "max_rate_per_s": MAX_RATE_PER_S,
        "max_duration_s": MAX_DURATION_S,
        "target": runner.target(),
    }))
}

async fn view(State(runner): State<Runner>) -> impl IntoResponse {
    axum::Json(runner.view())
}

/// The longest `GET /load/run/events` stays silent: the run's view is sent
/// again after this much time without a change.
pub const RUN_EVENTS_HEARTBEAT: Duration = Duration::from_secs(5);

fn run_event(runner: &Runner) -> Event {
    Event::default()
        .event("run")
        .json_data(runner.view())
        .unwrap_or_else(|_| Event::default().event("run").data("{}"))
}

/// `GET /load/run/events`: the run's view at once, at every change and at
/// least every [`RUN_EVENTS_HEARTBEAT`]; quick changes are sent as one.
async fn events(
    State(runner): State<Runner>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let (tx, rx) = mpsc::channel::<Result<Event, Infallible>>(4);
    let mut changes = runner.changes();
    tokio::spawn(async move {
        changes.mark_unchanged();
        if tx.send(Ok(run_event(&runner))).await.is_err() {
            return;
        }
        loop {
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() { return; }
                    changes.mark_unchanged();
                }
                _ = tokio::time::sleep(RUN_EVENTS_HEARTBEAT) => {}
                // The client went away: nothing more to send.
                _ = tx.closed() => return,
            }
            if tx.send(Ok(run_event(&runner))).await.is_err() {
                return;
            }
        }
    });
    Sse::new(ReceiverStream::new(rx)).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// The verified token of the request that starts a run.
#[derive(Clone)]
struct StartedBy(String);

async fn start(
    State(runner): State<Runner>,
    started_by: Option<Extension<StartedBy>>,
    body: Bytes,
) -> Result<impl IntoResponse, Refusal> {
    let request: RunRequest = serde_json::from_slice(&body).map_err(|e| {
        Refusal(
            StatusCode::BAD_REQUEST,
            "INVALID_ARGUMENT",
            format!("the body is not a run request ({{\"scenario\",\"rate_per_s\",\"duration_s\"}}): {e}"),
        )
    })?;
    let plan = request
        .validate(runner.target())
        .map_err(|e| Refusal(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", e.to_string()))?;
    let token = started_by.map(|Extension(StartedBy(token))| token);
    Ok((StatusCode::ACCEPTED, axum::Json(runner.start(plan, token)?)))
}

async fn stop(State(runner): State<Runner>) -> Result<impl IntoResponse, Refusal> {
    Ok(axum::Json(runner.stop()?))
}

async fn not_found() -> Refusal {
    Refusal(
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
        "the load runner serves /load/scenarios, /load/run and /load/run/events".into(),
    )
}

/// Lets a start or stop through only with an admin token of `keys`.
async fn admin_only(
    State(keys): State<Arc<Verifier>>,
    mut req: Request,
    next: Next,
) -> Result<Response, Refusal> {
    if req.method() == Method::GET || req.method() == Method::HEAD {
        return Ok(next.run(req).await);
    }
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| {
            Refusal(
                StatusCode::UNAUTHORIZED,
                "UNAUTHENTICATED",
                "starting or stopping a run needs a token with the admin role \
                 (header `authorization: Bearer <token>`)"
                    .into(),
            )
        })?;
    let token = token.trim().to_string();
    let claims = keys.verify(&token).map_err(|e| {
        Refusal(
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
            format!("the token was refused: {e}"),
        )
    })?;
    if !claims.role.allows(Role::Admin) {
        return Err(Refusal(
            StatusCode::FORBIDDEN,
            "PERMISSION_DENIED",
            format!(
                "starting or stopping a run needs the admin role; the token of {:?} has {}",
                claims.sub, claims.role
            ),
        ));
    }
    req.extensions_mut().insert(StartedBy(token));
    Ok(next.run(req).await)
}

/// The runner's routes; with `keys`, starting and stopping a run need an
/// admin token they verify.
pub fn router(runner: Runner, keys: Option<Arc<Verifier>>) -> Router {
    let routes = Router::new()
        .route("/load/scenarios", get(scenarios))
        .route("/load/run", get(view).post(start).delete(stop))
        .route("/load/run/events", get(events))
        .fallback(not_found)
        .with_state(runner);
    match keys {
        Some(keys) => routes.layer(axum::middleware::from_fn_with_state(keys, admin_only)),
        None => routes,
    }
}
