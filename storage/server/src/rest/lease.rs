//! REST handlers of `/v1/leases`: grant, keep alive, inspect, list and
//! revoke leases (see `strata.v1.Lease`). A key is put under a lease with
//! `PUT /v1/kv/{key}?lease=ID`, or under a lease of its own with `?ttl=`.

use axum::Json;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use strata_proto::v1::{
    LeaseKeepAliveRequest, LeaseListRequest, LeaseRevokeRequest, LeaseTimeToLiveRequest,
};

use super::AppState;
use super::body::{content_type, json_bytes};
use super::kv::{request_id, tag};
use super::model::kv::ResponseHeader;
use super::model::lease::{
    GrantJson, LeaseList, LeaseQuery, LeaseResult, LeaseStatus, RevokeResult, TimeToLiveResult,
};
use super::parse;
use super::responses::{Conflict, Decimal, JsonBodyErrors, NotFound, ReadErrors, WriteErrors};
use crate::core::Hop;
use crate::error::ApiError;

const REQUEST_ID_PARAM: &str = "The client's id for this request (printable ASCII, at most 128 bytes): a retry with the same id gets the first answer and is never applied twice.";

fn lease_id(raw: &str) -> Result<u64, ApiError> {
    raw.parse()
        .map_err(|_| ApiError::invalid(format!("lease id `{raw}` is not a number")))
}

/// Grant a lease
///
/// Keys put under it (`PUT /v1/kv/{key}?lease=ID`, a transaction's put with
/// `lease`) are deleted when it ends: when it is revoked, or when the
/// leader has answered no keep-alive for it for its TTL. A new leader
/// counts every TTL afresh from when it took office, so a lease never ends
/// early across a leader change (it may end up to an election late).
#[utoipa::path(
    post,
    path = "/v1/leases",
    operation_id = "grantLease",
    tag = "leases",
    params(("x-strata-request-id" = Option<String>, Header, max_length = 128, description = REQUEST_ID_PARAM)),
    request_body(content((GrantJson = "application/json"))),
    responses(
        (status = 200, description = "Granted at `index`; its TTL runs from now.", body = LeaseResult, headers(
            ("x-strata-node" = inline(Decimal), description = "Id of the node that answered."),
            ("x-strata-leader" = inline(Decimal), description = "Id of the leader, when known."),
        )),
        (status = 409, response = Conflict),
        WriteErrors,
        JsonBodyErrors,
    ),
)]
pub async fn grant(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = json_bytes(&headers, body)?;
    let mut req = parse::lease_grant_request(content_type(&headers), &body)?;
    req.request_id = request_id(&headers)?;
    let resp = s.core.lease_grant(req, Hop::Client).await?;
    let header = ResponseHeader::from(resp.header);
    let body = LeaseResult {
        id: resp.id,
        ttl_ms: resp.ttl_ms,
        header,
    };
    Ok(tag(Json(body).into_response(), &header, false))
}

/// Keep a lease alive
///
/// Its TTL starts again now. 404 when the lease has ended (its keys are
/// gone): grant a new one.
#[utoipa::path(
    post,
    path = "/v1/leases/{id}/keepalive",
    operation_id = "keepLeaseAlive",
    tag = "leases",
    params(("id" = String, Path, description = "Lease id.", pattern = "^[0-9]+$")),
    responses(
        (status = 200, description = "The TTL runs again from now.", body = LeaseResult, headers(
            ("x-strata-node" = inline(Decimal), description = "Id of the node that answered."),
            ("x-strata-leader" = inline(Decimal), description = "Id of the leader, when known."),
        )),
        (status = 404, response = NotFound),
        ReadErrors,
    ),
)]
pub async fn keep_alive(
    State(s): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = lease_id(&id)?;
    let resp = s
        .core
        .lease_keep_alive(LeaseKeepAliveRequest { id }, Hop::Client)
        .await?;
    if resp.ttl_ms == 0 {
        return Err(crate::core::lease_not_found(id));
    }
    let header = ResponseHeader::from(resp.header);
    let body = LeaseResult {
        id,
        ttl_ms: resp.ttl_ms,
        header,
    };
    Ok(tag(Json(body).into_response(), &header, false))
}

/// A lease's time to live
#[utoipa::path(
    get,
    path = "/v1/leases/{id}",
    operation_id = "getLease",
    tag = "leases",
    params(("id" = String, Path, description = "Lease id.", pattern = "^[0-9]+$"), LeaseQuery),
    responses(
        (status = 200, description = "The lease, by the leader's clock.", body = TimeToLiveResult, headers(
            ("x-strata-node" = inline(Decimal), description = "Id of the node that answered."),
            ("x-strata-leader" = inline(Decimal), description = "Id of the leader, when known."),
        )),
        (status = 404, response = NotFound),
        ReadErrors,
    ),
)]
pub async fn time_to_live(
    State(s): State<AppState>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Response, ApiError> {
    let id = lease_id(&id)?;
    let q: LeaseQuery = parse::query(uri.query().unwrap_or_default())?;
    let keys = q.keys.unwrap_or(false);
    let resp = s
        .core
        .lease_time_to_live(LeaseTimeToLiveRequest { id, keys }, Hop::Client)
        .await?;
    let header = ResponseHeader::from(resp.header);
    let encoding = q
        .encoding
        .unwrap_or_default()
        .for_output(resp.keys.iter().map(|k| k.as_ref()));
    let body = TimeToLiveResult {
        id,
        ttl_ms: resp.ttl_ms,
        remaining_ms: resp.remaining_ms,
        keys: keys.then(|| resp.keys.iter().map(|k| encoding.encode(k)).collect()),
        encoding,
        header,
    };
    Ok(tag(Json(body).into_response(), &header, false))
}

/// List leases
#[utoipa::path(
    get,
    path = "/v1/leases",
    operation_id = "listLeases",
    tag = "leases",
    responses(
        (status = 200, description = "Every lease, by the leader's clock.", body = LeaseList, headers(
            ("x-strata-node" = inline(Decimal), description = "Id of the node that answered."),
            ("x-strata-leader" = inline(Decimal), description = "Id of the leader, when known."),
        )),
        ReadErrors,
    ),
)]
pub async fn list(State(s): State<AppState>) -> Result<Response, ApiError> {
    let resp = s.core.lease_list(LeaseListRequest {}, Hop::Client).await?;
    let header = ResponseHeader::from(resp.header);
    let body = LeaseList {
        leases: resp
            .leases
            .into_iter()
            .map(|l| LeaseStatus {
                id: l.id,
                ttl_ms: l.ttl_ms,
                remaining_ms: l.remaining_ms,
            })
            .collect(),
        header,
    };
    Ok(tag(Json(body).into_response(), &header, false))
}

/// Revoke a lease
///
/// Ends it now: every key under it is deleted in the same write (watchers
/// see the deletes).
#[utoipa::path(
    delete,
    path = "/v1/leases/{id}",
    operation_id = "revokeLease",
    tag = "leases",
    params(
        ("id" = String, Path, description = "Lease id.", pattern = "^[0-9]+$"),
        ("x-strata-request-id" = Option<String>, Header, max_length = 128, description = REQUEST_ID_PARAM),
    ),
    responses(
        (status = 200, description = "Revoked at `index`.", body = RevokeResult, headers(
            ("x-strata-node" = inline(Decimal), description = "Id of the node that answered."),
            ("x-strata-leader" = inline(Decimal), description = "Id of the leader, when known."),
        )),
        (status = 404, response = NotFound),
        WriteErrors,
    ),
)]
pub async fn revoke(
    State(s): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let req = LeaseRevokeRequest {
        id: lease_id(&id)?,
        request_id: request_id(&headers)?,
    };
    let resp = s.core.lease_revoke(req, Hop::Client).await?;
    let header = ResponseHeader::from(resp.header);
    let body = RevokeResult {
        keys_deleted: resp.keys_deleted,
        header,
    };
    Ok(tag(Json(body).into_response(), &header, false))
}
