//! Request-body and query helpers that turn every extraction failure into an
//! [`ApiError`] with the `{"code","message"}` shape.

use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::http::{HeaderMap, StatusCode, header};
use bytes::Bytes;
use serde::de::DeserializeOwned;

use super::parse;
use crate::error::{ApiError, ErrorCode};

pub fn body_bytes(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|rej| {
        if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large("request body is larger than the configured limit")
        } else {
            ApiError::invalid(format!("cannot read request body: {rej}"))
        }
    })
}

/// Bodies from this size on are parsed on tokio's blocking pool.
const PARSE_OFF_THE_RUNTIME_BYTES: usize = 256 << 10;

/// Runs `parse` on `body`: inline for a small body, on tokio's blocking
/// pool for a large one. Parsing 16 MiB of JSON takes a runtime worker for
/// hundreds of milliseconds in a debug build (tens in a release one), and
/// the raft transport runs on the same workers: a leader parsing a few such
/// bodies sent its heartbeats, and read its followers' answers, late enough
/// to step down for want of a quorum.
pub async fn parse_off_the_runtime<T: Send + 'static>(
    body: Bytes,
    parse: impl FnOnce(Bytes) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    if body.len() < PARSE_OFF_THE_RUNTIME_BYTES {
        return parse(body);
    }
    tokio::task::spawn_blocking(move || parse(body))
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, format!("parsing the body: {e}")))?
}

/// The `Content-Type` header, when it is present and readable as text.
pub fn content_type(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
}

pub fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"))
}

/// The body of a JSON-only endpoint, still undecoded. The media type is
/// checked first, so a wrong one is reported even when the body could not
/// be read.
pub fn json_bytes(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Bytes, ApiError> {
    parse::require_json(content_type(headers))?;
    body_bytes(body)
}

/// Parses a JSON body of a JSON-only endpoint.
pub fn json_body<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let body = json_bytes(headers, body)?;
    parse::json(content_type(headers), &body)
}

/// A JSON body whose every field is optional: an empty body is the
/// defaults, anything else is parsed like [`json_body`].
pub fn optional_json_body<T: DeserializeOwned + Default>(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    if body.as_ref().is_ok_and(|b| b.is_empty()) {
        return Ok(T::default());
    }
    json_body(headers, body)
}

pub fn query<T>(q: Result<axum::extract::Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|q| q.0)
        .map_err(|e| ApiError::invalid(format!("bad query: {}", e.body_text())))
}
