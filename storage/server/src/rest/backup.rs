//! `GET /v1/backup`: a backup (`crate::backup`) as one octet stream.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use super::AppState;
use super::responses::ReadErrors;
use crate::error::ApiError;

/// Back up every key (the backup format)
///
/// Every key and value as of one linearizable read, in the backup format
/// that `strata snapshot status|restore` read: a header with the raft
/// index whose state it holds, the pairs in key order, and a trailer with
/// their count and a SHA-256 of everything before it. If the copy fails
/// midway the stream ends early, and the file does not read.
#[utoipa::path(
    get,
    path = "/v1/backup",
    operation_id = "backup",
    tag = "kv",
    responses(
        (status = 200, description = "The backup.", content((Vec<u8> = "application/octet-stream"))),
        ReadErrors,
    ),
)]
pub async fn backup(State(s): State<AppState>) -> Result<Response, ApiError> {
    let chunks = crate::backup::start(&s.core).await?;
    // A failed copy ends the body early: the file's trailer is missing.
    let body =
        Body::from_stream(ReceiverStream::new(chunks).map(|c| c.map_err(std::io::Error::other)));
    let mut resp = body.into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    resp.headers_mut().insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"strata.backup\""),
    );
    Ok(resp)
}
