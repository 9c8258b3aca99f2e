//! REST handlers of `/v1/kv`, `/v1/batch` and `/v1/cas`. Requests are read
//! by the pure functions in [`parse`](super::parse); these handlers only call
//! the service core and render its answer.

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::json;
use strata_proto::v1::ResponseHeader;

use super::AppState;
use super::body::{body_bytes, content_type, json_bytes, wants_json};
use super::encoding::encode_page_token;
use super::parse;
use crate::core::Hop;
use crate::error::{ApiError, LEADER_HEADER};

fn with_header(mut body: serde_json::Value, h: Option<ResponseHeader>) -> serde_json::Value {
    let h = h.unwrap_or_default();
    body["node_id"] = h.node_id.into();
    body["term"] = h.term.into();
    body["index"] = h.index.into();
    body["leader_id"] = h.leader_id.into();
    body
}

/// Adds `x-strata-node` / `x-strata-leader` (and the stale marker) to a response.
fn tag(mut resp: Response, h: Option<&ResponseHeader>, stale: bool) -> Response {
    if let Some(h) = h {
        let headers = resp.headers_mut();
        headers.insert("x-strata-node", HeaderValue::from(h.node_id));
        if h.leader_id != 0 {
            headers.insert(LEADER_HEADER, HeaderValue::from(h.leader_id));
        }
        if stale {
            headers.insert("x-strata-consistency", HeaderValue::from_static("stale"));
        }
    }
    resp
}

pub async fn put(
    State(s): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let req = parse::put_request(uri.path(), content_type(&headers), body_bytes(body)?)?;
    let resp = s.core.put(req, Hop::Client).await?;
    let h = resp.header;
    Ok(tag(
        Json(with_header(json!({}), h)).into_response(),
        h.as_ref(),
        false,
    ))
}

pub async fn get(
    State(s): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (req, format) = parse::get_request(uri.path(), uri.query().unwrap_or_default())?;
    let key = req.key.clone();
    let resp = s.core.get(req).await?;
    let h = resp.header;
    if !resp.found {
        return Ok(tag(
            ApiError::not_found("key not found").into_response(),
            h.as_ref(),
            format.stale,
        ));
    }
    let out = if wants_json(&headers) || format.encoding.is_some() {
        let items: [&[u8]; 2] = [&key, &resp.value];
        let enc = format
            .encoding
            .unwrap_or_default()
            .for_output(items.into_iter());
        let body =
            json!({ "key": enc.encode(&key), "value": enc.encode(&resp.value), "encoding": enc });
        Json(with_header(body, h)).into_response()
    } else {
        let mut r = resp.value.into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        r
    };
    Ok(tag(out, h.as_ref(), format.stale))
}

pub async fn delete(State(s): State<AppState>, uri: Uri) -> Result<Response, ApiError> {
    let req = parse::delete_request(uri.path())?;
    let resp = s.core.delete(req, Hop::Client).await?;
    let h = resp.header;
    Ok(tag(
        Json(with_header(json!({ "deleted": resp.deleted }), h)).into_response(),
        h.as_ref(),
        false,
    ))
}

/// `/v1/kv/` with nothing after it.
pub async fn empty_key() -> ApiError {
    ApiError::invalid("key must not be empty")
}

pub async fn scan(State(s): State<AppState>, uri: Uri) -> Result<Response, ApiError> {
    let (req, format) = parse::scan_request(uri.query().unwrap_or_default())?;
    let keys_only = req.keys_only;
    let resp = s.core.scan(req).await?;
    let h = resp.header;
    let enc = format.encoding.unwrap_or_default().for_output(
        resp.kvs
            .iter()
            .flat_map(|kv| [kv.key.as_ref(), kv.value.as_ref()]),
    );
    let kvs: Vec<serde_json::Value> = resp
        .kvs
        .iter()
        .map(|kv| {
            if keys_only {
                json!({ "key": enc.encode(&kv.key) })
            } else {
                json!({ "key": enc.encode(&kv.key), "value": enc.encode(&kv.value) })
            }
        })
        .collect();
    let body = json!({
        "kvs": kvs,
        "next_page_token": encode_page_token(&resp.next_page_token),
        "encoding": enc,
    });
    Ok(tag(
        Json(with_header(body, h)).into_response(),
        h.as_ref(),
        format.stale,
    ))
}

pub async fn batch(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = json_bytes(&headers, body)?;
    let req = parse::batch_request(content_type(&headers), &body)?;
    let resp = s.core.batch(req, Hop::Client).await?;
    let h = resp.header;
    Ok(tag(
        Json(with_header(json!({}), h)).into_response(),
        h.as_ref(),
        false,
    ))
}

pub async fn cas(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = json_bytes(&headers, body)?;
    let (req, encoding) = parse::cas_request(content_type(&headers), &body)?;
    let resp = s.core.compare_and_swap(req, Hop::Client).await?;
    let h = resp.header;
    let current: Option<&[u8]> = resp.current.as_deref();
    let enc = encoding.for_output(current.into_iter());
    let body = json!({
        "succeeded": resp.succeeded,
        "current": current.map(|c| enc.encode(c)),
        "encoding": enc,
    });
    Ok(tag(
        Json(with_header(body, h)).into_response(),
        h.as_ref(),
        false,
    ))
}
