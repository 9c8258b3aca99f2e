//! REST handlers of `/v1/cluster/*`, including the server-sent event stream
//! the console listens to.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde_json::{Value, json};
use strata_proto::v1::{NodeStatus, Role, StatusResponse, TransferLeaderRequest};
use strata_raft::RaftEvent;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::AppState;
use crate::cluster::gather;
use crate::membership::Change;

/// Status events go out at least this often even when nothing changed.
const STATUS_EVERY: Duration = Duration::from_secs(1);

pub fn role_name(role: i32) -> &'static str {
    match Role::try_from(role).unwrap_or(Role::Unknown) {
        Role::Leader => "leader",
        Role::Follower => "follower",
        Role::Candidate => "candidate",
        Role::Learner => "learner",
        Role::Unknown => "unknown",
    }
}

fn node_json(n: &NodeStatus) -> Value {
    let mut v = json!({
        "id": n.id,
        "address": n.address,
        "role": role_name(n.role),
        "term": n.term,
        "commit_index": n.commit_index,
        "applied_index": n.applied_index,
        "healthy": n.healthy,
        "leader_id": n.leader_id,
    });
    if !n.error.is_empty() {
        v["error"] = n.error.clone().into();
    }
    v
}

pub fn status_json(s: &StatusResponse) -> Value {
    json!({
        "leader_id": s.leader_id,
        "term": s.term,
        "nodes": s.nodes.iter().map(node_json).collect::<Vec<_>>(),
    })
}

fn event_json(e: &RaftEvent) -> Value {
    json!({
        "kind": e.kind.as_str(),
        "node_id": e.node_id,
        "term": e.term,
        "leader_id": e.leader_id,
        "role": e.role.as_str(),
        "at_ms": e.at_ms,
        "duration_ms": e.duration_ms,
        "detail": e.detail,
    })
}

pub async fn status(State(s): State<AppState>) -> Json<Value> {
    Json(status_json(&gather(&s.core).await))
}

fn members_json(members: &[strata_proto::v1::Member]) -> Json<Value> {
    let members: Vec<Value> = members
        .iter()
        .map(|m| json!({ "id": m.id, "address": m.address, "voter": m.voter }))
        .collect();
    Json(json!({ "members": members }))
}

pub async fn members(State(s): State<AppState>) -> Json<Value> {
    members_json(&s.core.members())
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddMemberJson {
    id: u64,
    address: String,
}

/// `POST /v1/cluster/members`: add a learner.
pub async fn add_member(
    State(s): State<AppState>,
    headers: axum::http::HeaderMap,
    body: Result<bytes::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Json<Value>, crate::error::ApiError> {
    let j: AddMemberJson = super::body::json_body(&headers, body)?;
    let change = Change::Add {
        id: j.id,
        address: j.address,
    };
    let resp = s
        .core
        .change_members(change, crate::core::Hop::Client)
        .await?;
    Ok(members_json(&resp.members))
}

fn member_id(raw: &str) -> Result<u64, crate::error::ApiError> {
    raw.parse()
        .map_err(|_| crate::error::ApiError::invalid(format!("member id `{raw}` is not a number")))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromoteQuery {
    replace: Option<String>,
}

/// `POST /v1/cluster/members/{id}/promote[?replace=OLD]`: make a learner a
/// voter, optionally removing the voter OLD in the same joint change.
pub async fn promote_member(
    State(s): State<AppState>,
    axum::extract::Path(id): axum::extract::Path<String>,
    q: Result<axum::extract::Query<PromoteQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, crate::error::ApiError> {
    let id = member_id(&id)?;
    let change = match super::body::query(q)?.replace {
        Some(old) => Change::Replace {
            old: member_id(&old)?,
            id,
        },
        None => Change::Promote { id },
    };
    let resp = s
        .core
        .change_members(change, crate::core::Hop::Client)
        .await?;
    Ok(members_json(&resp.members))
}

/// `DELETE /v1/cluster/members/{id}`.
pub async fn remove_member(
    State(s): State<AppState>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<Json<Value>, crate::error::ApiError> {
    let change = Change::Remove {
        id: member_id(&id)?,
    };
    let resp = s
        .core
        .change_members(change, crate::core::Hop::Client)
        .await?;
    Ok(members_json(&resp.members))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferJson {
    target_id: u64,
}

pub async fn transfer_leader(
    State(s): State<AppState>,
    headers: axum::http::HeaderMap,
    body: Result<bytes::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Json<Value>, crate::error::ApiError> {
    let j: TransferJson = super::body::json_body(&headers, body)?;
    let resp = s
        .core
        .transfer_leader(
            TransferLeaderRequest {
                target_id: j.target_id,
            },
            crate::core::Hop::Client,
        )
        .await?;
    Ok(Json(
        json!({ "leader_id": resp.leader_id, "term": resp.term }),
    ))
}

pub async fn events(
    State(s): State<AppState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let (tx, rx) = mpsc::channel::<Event>(64);
    let mut status_rx = s.cluster.clone();
    let mut raft_rx = s.core.peer().subscribe();
    tokio::spawn(async move {
        let status_event = |st: &StatusResponse| {
            Event::default()
                .event("status")
                .data(status_json(st).to_string())
        };
        let initial = status_event(&status_rx.borrow_and_update());
        if tx.send(initial).await.is_err() {
            return;
        }
        let mut every = tokio::time::interval(STATUS_EVERY);
        every.tick().await;
        loop {
            let event = tokio::select! {
                changed = status_rx.changed() => {
                    if changed.is_err() { return; }
                    status_event(&status_rx.borrow_and_update())
                }
                ev = raft_rx.recv() => match ev {
                    Ok(e) => Event::default().event("raft").data(event_json(&e).to_string()),
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = every.tick() => status_event(&status_rx.borrow()),
            };
            if tx.send(event).await.is_err() {
                return;
            }
        }
    });
    let stream = futures::StreamExt::map(ReceiverStream::new(rx), Ok);
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(10)))
}
