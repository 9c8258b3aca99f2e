//! REST handlers of `/v1/cluster/*`, including the server-sent event stream
//! the console listens to.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use bytes::Bytes;
use futures::Stream;
use serde::Deserialize;
use strata_proto::v1 as pb;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use utoipa::IntoParams;

use super::AppState;
use super::body::{json_body, optional_json_body, query};
use super::model::cluster::{
    AddMemberRequest, ClusterStatus, Members, RaftEvent, RangeStatus, SplitRangeRequest,
    SplitRangeResult, TransferLeaderRequest, TransferLeaderResult,
};
use super::model::range_event::RangeEvent;
use super::model::snapshot::{SnapshotRequest, SnapshotResult};
use super::model::stats::{ClusterStats, CompactRequest, CompactResult};
use super::responses::{BadRequest, ChangeErrors, JsonBodyErrors, NotFound, StatusErrors};
use crate::core::Hop;
use crate::error::{ApiError, ErrorCode};
use crate::member_status::gather;
use crate::membership::Change;
use crate::range_events::RangeEvents;

/// Status events go out at least this often even when nothing changed.
const STATUS_EVERY: Duration = Duration::from_secs(1);

/// Every member's view of the raft group
///
/// The answering node asks each peer with a short timeout.
#[utoipa::path(
    get,
    path = "/v1/cluster/status",
    operation_id = "clusterStatus",
    tag = "cluster",
    responses(
        (status = 200, description = "Cluster status.", body = ClusterStatus),
        StatusErrors,
    ),
)]
pub async fn status(State(s): State<AppState>) -> Result<Json<ClusterStatus>, ApiError> {
    s.core.refuse_if_removed()?;
    Ok(Json(ClusterStatus::from(&gather(&s.core).await)))
}

/// Every member's numbers: the same values its `/metrics` page shows
///
/// Requests by route and outcome with latency histograms, raft position,
/// events, commit, append and ReadIndex histograms and (on the leader)
/// every member's progress, the engine's shape and work, the process, the
/// canary, and the engine's recent flushes and compactions. Counters are
/// totals since each node started; two readings make a rate. The
/// answering node asks each member with a short timeout; one that does not
/// answer is listed with an `error`.
#[utoipa::path(
    get,
    path = "/v1/cluster/stats",
    operation_id = "clusterStats",
    tag = "cluster",
    responses(
        (status = 200, description = "Every member's stats.", body = ClusterStats),
        StatusErrors,
    ),
)]
pub async fn stats(State(s): State<AppState>) -> Result<Json<ClusterStats>, ApiError> {
    s.core.refuse_if_removed()?;
    Ok(Json(crate::stats::gather(&s.core, &s.stats).await))
}

/// Flush and compact level 0 into level 1
///
/// On the listed members (every member when `node_ids` is absent or
/// empty), in parallel: each writes its memtable to a table, then merges
/// all of level 0 into level 1. Answers once each is done, or after 3 s
/// with `running` for one still at work (it goes on; the stats show it
/// end). A request while one runs on a node joins it. Not a raft
/// operation: it changes no data, only how the node stores it.
#[utoipa::path(
    post,
    path = "/v1/cluster/compact",
    operation_id = "compact",
    tag = "cluster",
    request_body(content((CompactRequest = "application/json"))),
    responses(
        (status = 200, description = "What each member did.", body = CompactResult),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        JsonBodyErrors,
        StatusErrors,
    ),
)]
pub async fn compact(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<CompactResult>, ApiError> {
    let req: CompactRequest = optional_json_body(&headers, body)?;
    Ok(Json(
        crate::stats::compact(&s.core, &s.stats, &req.node_ids).await?,
    ))
}

/// Make applied state durable and drop the raft log up to it
///
/// On the listed members (every member when `node_ids` is absent or
/// empty), in parallel: each makes everything it has applied durable in
/// its engine and drops its raft log up to there, at once rather than
/// when the log passes `--compact-log-entries`. A follower that falls
/// behind the log is then caught up from a snapshot of that state. The
/// log keeps what a follower being caught up still needs. Answers once
/// each is done, or after 3 s with `running` (it goes on). It changes no
/// data.
#[utoipa::path(
    post,
    path = "/v1/cluster/snapshot",
    operation_id = "snapshot",
    tag = "cluster",
    request_body(content((SnapshotRequest = "application/json"))),
    responses(
        (status = 200, description = "What each member did.", body = SnapshotResult),
        (status = 400, response = BadRequest),
        (status = 404, response = NotFound),
        JsonBodyErrors,
        StatusErrors,
    ),
)]
pub async fn snapshot(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<SnapshotResult>, ApiError> {
    let req: SnapshotRequest = optional_json_body(&headers, body)?;
    Ok(Json(
        crate::log_snapshot::snapshot(&s.core, &req.node_ids).await?,
    ))
}

/// The raft configuration
#[utoipa::path(
    get,
    path = "/v1/cluster/members",
    operation_id = "clusterMembers",
    tag = "cluster",
    responses(
        (status = 200, description = "Members.", body = Members),
        StatusErrors,
    ),
)]
pub async fn members(State(s): State<AppState>) -> Result<Json<Members>, ApiError> {
    s.core.refuse_if_removed()?;
    Ok(Json(Members::from(s.core.members().as_slice())))
}

/// Add a node as a learner
///
/// Adds a node (an empty node, e.g. started with `--join`) as a learner: it
/// catches up by snapshot but does not vote until promoted. Forwarded once to
/// the leader.
#[utoipa::path(
    post,
    path = "/v1/cluster/members",
    operation_id = "addMember",
    tag = "cluster",
    request_body(content((AddMemberRequest = "application/json"))),
    responses(
        (status = 200, description = "The members after the change was applied.", body = Members),
        ChangeErrors,
        JsonBodyErrors,
    ),
)]
pub async fn add_member(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Members>, ApiError> {
    let j: AddMemberRequest = json_body(&headers, body)?;
    let change = Change::Add {
        id: j.id,
        address: j.address,
    };
    change_members(&s, change).await
}

fn member_id(raw: &str) -> Result<u64, ApiError> {
    raw.parse()
        .map_err(|_| ApiError::invalid(format!("member id `{raw}` is not a number")))
}

/// The query of `POST /v1/cluster/members/{id}/promote`.
#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PromoteQuery {
    /// A voter to remove in the same change: the group passes through joint
    /// consensus and leaves it automatically.
    #[param(pattern = "^[0-9]+$")]
    replace: Option<String>,
}

/// Make a learner a voter
#[utoipa::path(
    post,
    path = "/v1/cluster/members/{id}/promote",
    operation_id = "promoteMember",
    tag = "cluster",
    params(
        ("id" = String, Path, description = "Member id.", pattern = "^[0-9]+$"),
        PromoteQuery,
    ),
    responses(
        (status = 200, description = "The members after the change was applied.", body = Members),
        (status = 404, response = NotFound),
        ChangeErrors,
    ),
)]
pub async fn promote_member(
    State(s): State<AppState>,
    Path(id): Path<String>,
    q: Result<Query<PromoteQuery>, QueryRejection>,
) -> Result<Json<Members>, ApiError> {
    let id = member_id(&id)?;
    let change = match query(q)?.replace {
        Some(old) => Change::Replace {
            old: member_id(&old)?,
            id,
        },
        None => Change::Promote { id },
    };
    change_members(&s, change).await
}

/// Remove a voter or learner
#[utoipa::path(
    delete,
    path = "/v1/cluster/members/{id}",
    operation_id = "removeMember",
    tag = "cluster",
    params(("id" = String, Path, description = "Member id.", pattern = "^[0-9]+$")),
    responses(
        (status = 200, description = "The members after the change was applied.", body = Members),
        (status = 404, response = NotFound),
        ChangeErrors,
    ),
)]
pub async fn remove_member(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Members>, ApiError> {
    let change = Change::Remove {
        id: member_id(&id)?,
    };
    change_members(&s, change).await
}

async fn change_members(s: &AppState, change: Change) -> Result<Json<Members>, ApiError> {
    let resp = s.core.change_members(change, Hop::Client).await?;
    Ok(Json(Members::from(resp.members.as_slice())))
}

/// Hand leadership to another voter
///
/// Asks the leader of the range (a follower forwards the request once) to
/// transfer its leadership to `target_id` and waits until that node leads.
/// `range` names the range (as the status lists them); the first when
/// absent. Writes arriving during the transfer get 503 and are safe to
/// retry. 404 for a range the answering node does not host.
#[utoipa::path(
    post,
    path = "/v1/cluster/leader",
    operation_id = "transferLeader",
    tag = "cluster",
    request_body(content((TransferLeaderRequest = "application/json"))),
    responses(
        (status = 200, description = "The target leads now.", body = TransferLeaderResult),
        (status = 404, response = NotFound),
        ChangeErrors,
        JsonBodyErrors,
    ),
)]
pub async fn transfer_leader(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<TransferLeaderResult>, ApiError> {
    let j: TransferLeaderRequest = json_body(&headers, body)?;
    let req = pb::TransferLeaderRequest {
        target_id: j.target_id,
        range: j.range,
    };
    let resp = s.core.transfer_leader(req, Hop::Client).await?;
    Ok(Json(TransferLeaderResult {
        leader_id: resp.leader_id,
        term: resp.term,
        range: resp.range,
    }))
}

/// Split a range
///
/// Splits the range holding `key` in two at `key`: a new raft group, with
/// the same members, serves the keys from `key` on, and nothing is copied.
/// Answers once the new range is started on the answering node and knows a
/// leader (within the request timeout). A key a range starts at already
/// splits nothing and answers that range (`split: false`), so a retry is
/// harmless.
#[utoipa::path(
    post,
    path = "/v1/cluster/ranges/split",
    operation_id = "splitRange",
    tag = "cluster",
    request_body(content((SplitRangeRequest = "application/json"))),
    responses(
        (status = 200, description = "The range that starts at the key.", body = SplitRangeResult),
        ChangeErrors,
        JsonBodyErrors,
    ),
)]
pub async fn split_range(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<SplitRangeResult>, ApiError> {
    let j: SplitRangeRequest = json_body(&headers, body)?;
    let req = pb::SplitRangeRequest {
        key: j.encoding.decode(&j.key, "key")?.into(),
        child: 0,
    };
    let resp = s.core.split_range(req, Hop::Client).await?;
    let range = resp
        .range
        .as_ref()
        .map(RangeStatus::from)
        .ok_or_else(|| ApiError::new(ErrorCode::Internal, "a split answered no range"))?;
    Ok(Json(SplitRangeResult {
        range,
        split: resp.split,
        index: resp.index,
    }))
}

fn status_event(st: &pb::StatusResponse) -> Event {
    let data = serde_json::to_string(&ClusterStatus::from(st)).unwrap_or_default();
    Event::default().event("status").data(data)
}

fn stats_event(stats: &ClusterStats) -> Event {
    let data = serde_json::to_string(stats).unwrap_or_default();
    Event::default().event("stats").data(data)
}

fn range_event(e: &RangeEvent) -> Event {
    let data = serde_json::to_string(e).unwrap_or_default();
    Event::default().event("range").data(data)
}

fn raft_event(e: &strata_raft::RaftEvent) -> Event {
    let data = serde_json::to_string(&RaftEvent::from(e)).unwrap_or_default();
    Event::default().event("raft").data(data)
}

/// Live cluster events (Server-Sent Events)
///
/// A never-ending `text/event-stream`.
///
/// - `event: status`, `data:` a ClusterStatus: on connect, whenever any
///   field changes, and at least every 1 s.
/// - `event: raft`, `data:` a RaftEvent: elections, leader, role and term
///   changes.
/// - `event: stats`, `data:` a ClusterStats (as GET /v1/cluster/stats):
///   every member's numbers, about every 1 s from 1 s after connecting.
/// - `event: range`, `data:` a RangeEvent: a range split off another, and
///   every range's new leaders (elections, hand-overs, and the moves that
///   even out the leaders per node), as the answering node sees them.
/// - A keep-alive comment line (`: ...`) every 10 s.
#[utoipa::path(
    get,
    path = "/v1/cluster/events",
    operation_id = "clusterEvents",
    tag = "cluster",
    responses(
        (status = 200, description = "The event stream.", content((String = "text/event-stream"))),
        StatusErrors,
    ),
    extensions(
        ("x-sse-events" = json!({
            "status": "#/components/schemas/ClusterStatus",
            "raft": "#/components/schemas/RaftEvent",
            "stats": "#/components/schemas/ClusterStats",
            "range": "#/components/schemas/RangeEvent",
        })),
    ),
)]
pub async fn events(
    State(s): State<AppState>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    s.core.refuse_if_removed()?;
    let core = s.core.clone();
    let (tx, rx) = mpsc::channel::<Event>(64);
    let mut status_rx = s.cluster.clone();
    let mut raft_rx = s.core.peer().subscribe();
    let mut stats_rx = s.stats_feed.subscribe();
    let mut ranges = RangeEvents::new(s.core.groups().clone(), s.core.id());
    tokio::spawn(async move {
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
                    Ok(e) => raft_event(&e),
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = every.tick() => status_event(&status_rx.borrow()),
                range = ranges.next() => match range {
                    Some(e) => range_event(&e),
                    None => return,
                },
                changed = stats_rx.changed() => {
                    if changed.is_err() { return; }
                    let stats = stats_rx.borrow_and_update().clone();
                    match stats {
                        Some(stats) => stats_event(&stats),
                        None => continue,
                    }
                }
            };
            // A node that finds itself removed ends the stream: the
            // client's next one reaches a member.
            if core.refuse_if_removed().is_err() {
                return;
            }
            if tx.send(event).await.is_err() {
                return;
            }
        }
    });
    let stream = futures::StreamExt::map(ReceiverStream::new(rx), Ok);
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(10))))
}
