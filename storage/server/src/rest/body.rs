//! Request-body and query helpers that turn every extraction failure into an
//! [`ApiError`] with the `{"code","message"}` shape.

use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::http::{HeaderMap, StatusCode, header};
use bytes::Bytes;
use serde::de::DeserializeOwned;

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

pub fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            let mime = v
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            mime == "application/json"
                || (mime.starts_with("application/") && mime.ends_with("+json"))
        })
        .unwrap_or(false)
}

pub fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"))
}

/// Parses a JSON body of a JSON-only endpoint.
pub fn json_body<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    if !is_json(headers) {
        return Err(ApiError::new(
            crate::error::ErrorCode::UnsupportedMediaType,
            "this endpoint takes Content-Type: application/json",
        ));
    }
    let body = body_bytes(body)?;
    serde_json::from_slice(&body).map_err(|e| ApiError::invalid(format!("malformed JSON: {e}")))
}

pub fn query<T>(q: Result<axum::extract::Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|q| q.0)
        .map_err(|e| ApiError::invalid(format!("bad query: {}", e.body_text())))
}
