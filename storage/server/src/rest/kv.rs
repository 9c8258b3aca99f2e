//! REST handlers of `/v1/kv`, `/v1/batch` and `/v1/cas`. Requests are read
//! by the pure functions in [`parse`](super::parse); these handlers only call
//! the service core and render its answer as the types of
//! [`model::kv`](super::model::kv). Their `#[utoipa::path]` attributes are
//! their part of the OpenAPI document.

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use utoipa::IntoParams;

use super::AppState;
use super::body::{body_bytes, content_type, json_bytes, parse_off_the_runtime, wants_json};
use super::encoding::encode_page_token;
use super::model::kv::{
    CasResult, DeleteResult, GetResult, KeyValue, RawValue, ResponseHeader, ScanResult, WriteResult,
};
use super::model::kv_request::{BatchJson, CasJson, PutJson, PutQuery, ReadQuery, ScanQuery};
use super::parse;
use super::responses::{
    Decimal, JsonBodyErrors, NotFound, ReadErrors, ScanErrors, Stale, WriteErrors,
};
use crate::core::Hop;
use crate::error::{ApiError, LEADER_HEADER};

/// The key of `/v1/kv/{key}`. The route takes the rest of the path as it
/// is, so the key is read from the URI (percent-decoded to raw bytes) rather
/// than extracted as text.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct KeyPath {
    /// The key: the rest of the path after `/v1/kv/` (it may contain `/`),
    /// percent-decoded to bytes. Non-empty, at most 4 KiB.
    #[param(min_length = 1)]
    pub key: String,
}

/// The header that carries a write's client request id.
pub const REQUEST_ID_HEADER: &str = "x-strata-request-id";

/// A write's client request id from its `x-strata-request-id` header
/// (empty: none); checked by the service core.
pub(super) fn request_id(headers: &HeaderMap) -> Result<String, ApiError> {
    match headers.get(REQUEST_ID_HEADER) {
        None => Ok(String::new()),
        Some(v) => v.to_str().map(str::to_string).map_err(|_| {
            ApiError::invalid("x-strata-request-id must be printable ASCII without spaces")
        }),
    }
}

/// The raw value's headers naming the raft indexes that created the key
/// and last put it.
pub const CREATE_INDEX_HEADER: &str = "x-strata-create-index";
pub const MOD_INDEX_HEADER: &str = "x-strata-mod-index";

/// Adds `x-strata-node` / `x-strata-leader` (and the stale marker) to a response.
pub(super) fn tag(mut resp: Response, h: &ResponseHeader, stale: bool) -> Response {
    let headers = resp.headers_mut();
    headers.insert("x-strata-node", HeaderValue::from(h.node_id));
    if h.leader_id != 0 {
        headers.insert(LEADER_HEADER, HeaderValue::from(h.leader_id));
    }
    if stale {
        headers.insert("x-strata-consistency", HeaderValue::from_static("stale"));
    }
    resp
}

/// Store a value under a key
///
/// The body is the value. Any Content-Type except application/json stores
/// the body bytes as they are (the value may be empty). With `Content-Type:
/// application/json` the body is a PutJsonRequest.
#[utoipa::path(
    put,
    path = "/v1/kv/{*key}",
    operation_id = "putKey",
    tag = "kv",
    params(KeyPath, PutQuery, ("x-strata-request-id" = Option<String>, Header, max_length = 128, description = "The client's id for this write (printable ASCII, at most 128 bytes). A retry with the same id, while the group remembers it (10 minutes by default), gets the first attempt's answer (`replayed: true`) and is never applied twice; another write under a remembered id is 400 INVALID_ARGUMENT. Through the gateway, a write carrying one is also retried after a 504.")),
    request_body(content(
        (inline(RawValue) = "application/octet-stream"),
        (String = "text/plain"),
        (PutJson = "application/json"),
    )),
    responses(
        (status = 200, description = "Applied at `index`.", body = WriteResult, headers(
            ("x-strata-node" = inline(Decimal), description = "Id of the node that answered."),
            ("x-strata-leader" = inline(Decimal), description = "Id of the leader, when known."),
        )),
        (status = 404, response = NotFound),
        WriteErrors,
    ),
)]
pub async fn put(
    State(s): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let (path, query, ct) = (
        uri.path().to_string(),
        uri.query().unwrap_or_default().to_string(),
        content_type(&headers).map(str::to_string),
    );
    let request_id = request_id(&headers)?;
    let mut req = parse_off_the_runtime(body_bytes(body)?, move |body| {
        parse::put_request(&path, &query, ct.as_deref(), body)
    })
    .await?;
    req.request_id = request_id;
    let resp = s.core.put(req, Hop::Client).await?;
    let header = ResponseHeader::from(resp.header);
    let lease = (resp.lease != 0).then_some(resp.lease);
    Ok(tag(
        Json(WriteResult { lease, header }).into_response(),
        &header,
        false,
    ))
}

/// Read a key
///
/// Returns the raw value as application/octet-stream, or a GetResult when
/// the request has `Accept: application/json`.
#[utoipa::path(
    get,
    path = "/v1/kv/{*key}",
    operation_id = "getKey",
    tag = "kv",
    params(KeyPath, ReadQuery),
    responses(
        (status = 200, description = "The value.", content(
            (inline(RawValue) = "application/octet-stream"),
            (GetResult = "application/json"),
        ), headers(
            ("x-strata-node" = inline(Decimal), description = "Id of the node that answered."),
            ("x-strata-leader" = inline(Decimal), description = "Id of the leader, when known."),
            ("x-strata-consistency" = inline(Stale), description = "`stale` when the read was served from local state."),
            ("x-strata-create-index" = inline(Decimal), description = "With a raw value: the raft index of the write that created the key."),
            ("x-strata-mod-index" = inline(Decimal), description = "With a raw value: the raft index of the write that last put the key."),
        )),
        (status = 404, response = NotFound),
        ReadErrors,
    ),
)]
pub async fn get(
    State(s): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (req, format) = parse::get_request(uri.path(), uri.query().unwrap_or_default())?;
    let key = req.key.clone();
    let resp = s.core.get(req).await?;
    let header = ResponseHeader::from(resp.header);
    if !resp.found {
        return Ok(tag(
            ApiError::not_found("key not found").into_response(),
            &header,
            format.stale,
        ));
    }
    let out = if wants_json(&headers) || format.encoding.is_some() {
        let items: [&[u8]; 2] = [&key, &resp.value];
        let encoding = format
            .encoding
            .unwrap_or_default()
            .for_output(items.into_iter());
        Json(GetResult {
            key: encoding.encode(&key),
            value: encoding.encode(&resp.value),
            create_index: resp.create_index,
            mod_index: resp.mod_index,
            lease: resp.lease,
            encoding,
            header,
        })
        .into_response()
    } else {
        let mut raw = RawValue(resp.value).into_response();
        let headers = raw.headers_mut();
        headers.insert(CREATE_INDEX_HEADER, HeaderValue::from(resp.create_index));
        headers.insert(MOD_INDEX_HEADER, HeaderValue::from(resp.mod_index));
        raw
    };
    Ok(tag(out, &header, format.stale))
}

/// Delete a key
#[utoipa::path(
    delete,
    path = "/v1/kv/{*key}",
    operation_id = "deleteKey",
    tag = "kv",
    params(KeyPath, ("x-strata-request-id" = Option<String>, Header, max_length = 128, description = "The client's id for this write (printable ASCII, at most 128 bytes). A retry with the same id, while the group remembers it (10 minutes by default), gets the first attempt's answer (`replayed: true`) and is never applied twice; another write under a remembered id is 400 INVALID_ARGUMENT. Through the gateway, a write carrying one is also retried after a 504.")),
    responses(
        (status = 200, description = "Applied at `index`; `deleted` says whether the key existed.", body = DeleteResult, headers(
            ("x-strata-node" = inline(Decimal), description = "Id of the node that answered."),
            ("x-strata-leader" = inline(Decimal), description = "Id of the leader, when known."),
        )),
        WriteErrors,
    ),
)]
pub async fn delete(
    State(s): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let mut req = parse::delete_request(uri.path())?;
    req.request_id = request_id(&headers)?;
    let resp = s.core.delete(req, Hop::Client).await?;
    let header = ResponseHeader::from(resp.header);
    let body = DeleteResult {
        deleted: resp.deleted,
        header,
    };
    Ok(tag(Json(body).into_response(), &header, false))
}

/// `/v1/kv/` with nothing after it.
pub async fn empty_key() -> ApiError {
    ApiError::invalid("key must not be empty")
}

/// Scan keys by prefix or by range
///
/// Keys in ascending byte order. Select by `prefix`, or by `start`
/// (inclusive) and `end` (exclusive); `prefix` together with `start`/`end` is
/// INVALID_ARGUMENT. Neither selects the whole key space. All pages of one
/// scan read one state: the one the first page read (its `index`), kept on
/// the node that served it for a minute after each page; a later page after
/// that is 410 PAGE_TOKEN_EXPIRED, and the scan starts again.
#[utoipa::path(
    get,
    path = "/v1/kv",
    operation_id = "scan",
    tag = "kv",
    params(ScanQuery),
    responses(
        (status = 200, description = "One page of pairs.", body = ScanResult, headers(
            ("x-strata-node" = inline(Decimal), description = "Id of the node that answered."),
            ("x-strata-leader" = inline(Decimal), description = "Id of the leader, when known."),
            ("x-strata-consistency" = inline(Stale), description = "`stale` when the read was served from local state."),
        )),
        ScanErrors,
    ),
)]
pub async fn scan(State(s): State<AppState>, uri: Uri) -> Result<Response, ApiError> {
    let (req, format) = parse::scan_request(uri.query().unwrap_or_default())?;
    let keys_only = req.keys_only;
    let resp = s.core.scan(req).await?;
    let header = ResponseHeader::from(resp.header);
    let encoding = format.encoding.unwrap_or_default().for_output(
        resp.kvs
            .iter()
            .flat_map(|kv| [kv.key.as_ref(), kv.value.as_ref()]),
    );
    let kvs = resp
        .kvs
        .iter()
        .map(|kv| KeyValue {
            key: encoding.encode(&kv.key),
            value: (!keys_only).then(|| encoding.encode(&kv.value)),
            create_index: kv.create_index,
            mod_index: kv.mod_index,
            lease: kv.lease,
        })
        .collect();
    let body = ScanResult {
        kvs,
        next_page_token: encode_page_token(&resp.next_page_token),
        encoding,
        header,
    };
    Ok(tag(Json(body).into_response(), &header, format.stale))
}

/// Apply puts and deletes atomically
#[utoipa::path(
    post,
    path = "/v1/batch",
    operation_id = "batch",
    tag = "kv",
    params(("x-strata-request-id" = Option<String>, Header, max_length = 128, description = "The client's id for this write (printable ASCII, at most 128 bytes). A retry with the same id, while the group remembers it (10 minutes by default), gets the first attempt's answer (`replayed: true`) and is never applied twice; another write under a remembered id is 400 INVALID_ARGUMENT. Through the gateway, a write carrying one is also retried after a 504.")),
    request_body(content((BatchJson = "application/json"))),
    responses(
        (status = 200, description = "All operations applied at `index`.", body = WriteResult, headers(
            ("x-strata-node" = inline(Decimal), description = "Id of the node that answered."),
            ("x-strata-leader" = inline(Decimal), description = "Id of the leader, when known."),
        )),
        WriteErrors,
        JsonBodyErrors,
    ),
)]
pub async fn batch(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = json_bytes(&headers, body)?;
    let ct = content_type(&headers).map(str::to_string);
    let mut req =
        parse_off_the_runtime(body, move |body| parse::batch_request(ct.as_deref(), &body)).await?;
    req.request_id = request_id(&headers)?;
    let header = ResponseHeader::from(s.core.batch(req, Hop::Client).await?.header);
    Ok(tag(
        Json(WriteResult {
            lease: None,
            header,
        })
        .into_response(),
        &header,
        false,
    ))
}

/// Compare and swap (or delete) one key
#[utoipa::path(
    post,
    path = "/v1/cas",
    operation_id = "compareAndSwap",
    tag = "kv",
    params(("x-strata-request-id" = Option<String>, Header, max_length = 128, description = "The client's id for this write (printable ASCII, at most 128 bytes). A retry with the same id, while the group remembers it (10 minutes by default), gets the first attempt's answer (`replayed: true`) and is never applied twice; another write under a remembered id is 400 INVALID_ARGUMENT. Through the gateway, a write carrying one is also retried after a 504.")),
    request_body(content((CasJson = "application/json"))),
    responses(
        (status = 200, description = "The comparison ran; `succeeded` says whether it held.", body = CasResult, headers(
            ("x-strata-node" = inline(Decimal), description = "Id of the node that answered."),
            ("x-strata-leader" = inline(Decimal), description = "Id of the leader, when known."),
        )),
        WriteErrors,
        JsonBodyErrors,
    ),
)]
pub async fn cas(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = json_bytes(&headers, body)?;
    let ct = content_type(&headers).map(str::to_string);
    let (mut req, encoding) =
        parse_off_the_runtime(body, move |body| parse::cas_request(ct.as_deref(), &body)).await?;
    req.request_id = request_id(&headers)?;
    let resp = s.core.compare_and_swap(req, Hop::Client).await?;
    let header = ResponseHeader::from(resp.header);
    let current: Option<&[u8]> = resp.current.as_deref();
    let encoding = encoding.for_output(current.into_iter());
    let body = CasResult {
        succeeded: resp.succeeded,
        current: current.map(|c| encoding.encode(c)),
        encoding,
        header,
    };
    Ok(tag(Json(body).into_response(), &header, false))
}
