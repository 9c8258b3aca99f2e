//! Request-body and query helpers that turn every extraction failure into an
//! [`ApiError`] with the `{"code","message"}` shape.

use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::http::{HeaderMap, StatusCode, header};
use bytes::Bytes;
use serde::de::DeserializeOwned;

use super::parse;
use crate::error::ApiError;

pub fn body_bytes(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|rej| {
        if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large("request body is larger than the configured limit")
        } else {
            ApiError::invalid(format!("cannot read request body: {rej}"))
        }
    })
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

pub fn query<T>(q: Result<axum::extract::Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|q| q.0)
        .map_err(|e| ApiError::invalid(format!("bad query: {}", e.body_text())))
}
