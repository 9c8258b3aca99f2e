//! Answers of the KV routes: `/v1/kv`, `/v1/batch` and `/v1/cas`.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Serialize;
use strata_proto::v1 as pb;
use utoipa::ToSchema;

use crate::rest::encoding::Encoding;

/// Which node answered and at which raft position. In REST these fields are
/// flattened into the top level of every KV result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResponseHeader {
    /// Id of the node that answered.
    pub node_id: u64,
    /// Raft term of the answering node when the request completed.
    pub term: u64,
    /// Raft log index at which a write was applied, or the applied index a
    /// read was served at.
    pub index: u64,
    /// Id of the node holding leadership, when known; 0 when no leader is
    /// known.
    pub leader_id: u64,
    /// Present (`true`) when the write carried an `x-strata-request-id`
    /// the group had already applied: the answer is that first write's,
    /// `index` where it was applied, and nothing was applied again.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[schema(nullable = false)]
    pub replayed: bool,
}

impl From<Option<pb::ResponseHeader>> for ResponseHeader {
    fn from(h: Option<pb::ResponseHeader>) -> Self {
        let h = h.unwrap_or_default();
        ResponseHeader {
            node_id: h.node_id,
            term: h.term,
            index: h.index,
            leader_id: h.leader_id,
            replayed: h.replayed,
        }
    }
}

/// Result of PUT /v1/kv/{key} and POST /v1/batch.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteResult {
    /// For a put under a lease (`?lease=` or `?ttl=`): the lease's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub lease: Option<u64>,
    #[serde(flatten)]
    pub header: ResponseHeader,
}

/// A value as raw bytes: the body of GET /v1/kv/{key} unless the request
/// asks for JSON, and of a PUT that is not JSON.
#[derive(Debug, ToSchema)]
#[schema(value_type = String, content_media_type = "application/octet-stream")]
pub struct RawValue(pub Bytes);

impl IntoResponse for RawValue {
    fn into_response(self) -> Response {
        let mut r = self.0.into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        r
    }
}

/// JSON form of GET /v1/kv/{key} (request sent with `Accept:
/// application/json`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GetResult {
    /// The key, in `encoding`.
    pub key: String,
    /// The value, in `encoding`.
    pub value: String,
    /// The raft index of the write that created the key (the first put
    /// since it last did not exist).
    pub create_index: u64,
    /// The raft index of the write that last put it.
    pub mod_index: u64,
    /// The lease the key is under; 0 for none.
    pub lease: u64,
    /// `base64` when the request asked for it or when the key or value is
    /// not valid UTF-8; then every byte string in the response is base64.
    pub encoding: Encoding,
    #[serde(flatten)]
    pub header: ResponseHeader,
}

/// Result of DELETE /v1/kv/{key}.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteResult {
    /// Whether the key existed before the delete.
    pub deleted: bool,
    #[serde(flatten)]
    pub header: ResponseHeader,
}

/// One pair of a scan result.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyValue {
    /// The key, in the result's `encoding`.
    pub key: String,
    /// The value, in the result's `encoding`; absent when `keys_only=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub value: Option<String>,
    /// The raft index of the write that created the key.
    pub create_index: u64,
    /// The raft index of the write that last put it.
    pub mod_index: u64,
    /// The lease the key is under; 0 for none.
    pub lease: u64,
}

/// Result of GET /v1/kv (scan).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanResult {
    /// Pairs in ascending byte order of key.
    #[schema(max_items = 1000)]
    pub kvs: Vec<KeyValue>,
    /// Opaque token (base64url) to continue after the last returned key,
    /// reading the same state; null when the scan is complete.
    #[schema(required, pattern = "^[A-Za-z0-9_-]*={0,2}$")]
    pub next_page_token: Option<String>,
    /// Encoding of every key and value in `kvs`.
    pub encoding: Encoding,
    #[serde(flatten)]
    pub header: ResponseHeader,
}

/// Result of POST /v1/cas. Returned with 200 whether or not the comparison
/// succeeded.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CasResult {
    /// Whether the comparison held and the write was applied.
    pub succeeded: bool,
    /// The value before the operation (in `encoding`); null when the key did
    /// not exist.
    #[schema(required)]
    pub current: Option<String>,
    /// Encoding of `current`.
    pub encoding: Encoding,
    #[serde(flatten)]
    pub header: ResponseHeader,
}
