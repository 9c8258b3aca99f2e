//! The one error type of the API edge. It maps to an HTTP response
//! (`{"code","message"}` with the right status) and to a `tonic::Status`, so
//! REST and gRPC report every failure the same way.
//!
//! `Unavailable` and `Overloaded` always mean "nothing was applied, safe to
//! retry": they are the only errors the gateway retries for non-idempotent
//! requests. `Overloaded` is the leader turning a write away before
//! proposing it because its write budget is spent: REST 503 like
//! `Unavailable`, but gRPC RESOURCE_EXHAUSTED, which clients do not retry
//! at once by default.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use strata_raft::{ProposeError, StorageFailure, StorageFailureKind};
use tonic::Code;
use tonic::metadata::MetadataValue;
use utoipa::ToSchema;

/// Header set on every error that is safe to retry.
pub const RETRYABLE_HEADER: &str = "x-strata-retryable";
/// Header set on the errors the gateway may retry at once, on another
/// node if need be: UNAVAILABLE (no leader yet, not the leader, stopping).
/// Not on OVERLOADED: retried at once it only adds load, and the gateway's
/// retries of refused 15 MiB writes used its whole route timeout, which
/// then fell with a try in flight ("outcome unknown"). A client retries
/// OVERLOADED itself, after a pause.
pub const GATEWAY_RETRY_HEADER: &str = "x-strata-gateway-retry";
/// Header naming the leader, when known.
pub const LEADER_HEADER: &str = "x-strata-leader";
/// Suggested retry delay for retryable errors.
pub const RETRY_AFTER_MS: u64 = 50;

/// Machine-readable code of every API failure. The OpenAPI document
/// describes it with each code's HTTP status and gRPC code, taken from
/// [`ErrorCode::http_status`] and [`ErrorCode::grpc_code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    InvalidArgument,
    NotFound,
    /// A lease with the id asked for exists already.
    AlreadyExists,
    MethodNotAllowed,
    PayloadTooLarge,
    UnsupportedMediaType,
    Unavailable,
    Overloaded,
    OutcomeUnknown,
    StorageFull,
    StorageFailed,
    Internal,
    /// A scan's page token names a view of the data the node no longer
    /// keeps (see `crate::scan_views`): start the scan again.
    PageTokenExpired,
    /// A watch asked for changes from a raft index older than the oldest
    /// this node's history holds (`oldest_index`), or fell so far behind
    /// that its next change was trimmed away.
    Compacted,
    /// The request carries no credential where one is needed, or one that
    /// was refused (a token expired, changed, or not signed by a key the
    /// node trusts).
    Unauthenticated,
    /// The caller's role does not allow the request.
    PermissionDenied,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::AlreadyExists => "ALREADY_EXISTS",
            ErrorCode::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorCode::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ErrorCode::Unavailable => "UNAVAILABLE",
            ErrorCode::Overloaded => "OVERLOADED",
            ErrorCode::OutcomeUnknown => "OUTCOME_UNKNOWN",
            ErrorCode::StorageFull => "STORAGE_FULL",
            ErrorCode::StorageFailed => "STORAGE_FAILED",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::PageTokenExpired => "PAGE_TOKEN_EXPIRED",
            ErrorCode::Compacted => "COMPACTED",
            ErrorCode::Unauthenticated => "UNAUTHENTICATED",
            ErrorCode::PermissionDenied => "PERMISSION_DENIED",
        }
    }

    pub fn http_status(self) -> StatusCode {
        match self {
            ErrorCode::InvalidArgument => StatusCode::BAD_REQUEST,
            ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::AlreadyExists => StatusCode::CONFLICT,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::Unavailable | ErrorCode::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::OutcomeUnknown => StatusCode::GATEWAY_TIMEOUT,
            ErrorCode::StorageFull => StatusCode::INSUFFICIENT_STORAGE,
            ErrorCode::StorageFailed | ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::PageTokenExpired | ErrorCode::Compacted => StatusCode::GONE,
            ErrorCode::Unauthenticated => StatusCode::UNAUTHORIZED,
            ErrorCode::PermissionDenied => StatusCode::FORBIDDEN,
        }
    }

    pub fn grpc_code(self) -> Code {
        match self {
            ErrorCode::InvalidArgument
            | ErrorCode::PayloadTooLarge
            | ErrorCode::UnsupportedMediaType => Code::InvalidArgument,
            ErrorCode::NotFound => Code::NotFound,
            ErrorCode::AlreadyExists => Code::AlreadyExists,
            ErrorCode::MethodNotAllowed => Code::Unimplemented,
            ErrorCode::Unavailable => Code::Unavailable,
            ErrorCode::OutcomeUnknown => Code::DeadlineExceeded,
            ErrorCode::StorageFull | ErrorCode::Overloaded => Code::ResourceExhausted,
            ErrorCode::StorageFailed | ErrorCode::Internal => Code::Internal,
            ErrorCode::PageTokenExpired => Code::FailedPrecondition,
            ErrorCode::Compacted => Code::OutOfRange,
            ErrorCode::Unauthenticated => Code::Unauthenticated,
            ErrorCode::PermissionDenied => Code::PermissionDenied,
        }
    }

    /// The code of a status a leader answered; `retryable` says whether it
    /// was marked `x-strata-retryable` (which tells an overloaded leader's
    /// RESOURCE_EXHAUSTED from a full disk's).
    fn from_grpc(code: Code, retryable: bool) -> Self {
        match code {
            Code::InvalidArgument => ErrorCode::InvalidArgument,
            Code::OutOfRange => ErrorCode::Compacted,
            Code::NotFound => ErrorCode::NotFound,
            Code::AlreadyExists => ErrorCode::AlreadyExists,
            Code::Unimplemented => ErrorCode::MethodNotAllowed,
            Code::Unavailable => ErrorCode::Unavailable,
            Code::DeadlineExceeded | Code::Cancelled => ErrorCode::OutcomeUnknown,
            Code::ResourceExhausted if retryable => ErrorCode::Overloaded,
            Code::ResourceExhausted => ErrorCode::StorageFull,
            Code::FailedPrecondition => ErrorCode::PageTokenExpired,
            Code::Unauthenticated => ErrorCode::Unauthenticated,
            Code::PermissionDenied => ErrorCode::PermissionDenied,
            _ => ErrorCode::Internal,
        }
    }
}

/// An API failure: what went wrong, and who leads, when that helps.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub leader_id: Option<u64>,
    pub leader_address: Option<String>,
    /// With COMPACTED: the oldest raft index a watch can start from here.
    pub oldest_index: Option<u64>,
}

/// gRPC metadata carrying [`ApiError::oldest_index`].
pub const OLDEST_INDEX_HEADER: &str = "x-strata-oldest-index";

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            leader_id: None,
            leader_address: None,
            oldest_index: None,
        }
    }

    /// COMPACTED: changes before raft index `oldest` are no longer held.
    pub fn compacted(oldest: u64, message: impl Into<String>) -> Self {
        ApiError {
            oldest_index: Some(oldest),
            ..Self::new(ErrorCode::Compacted, message)
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::PayloadTooLarge, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unavailable, message)
    }

    pub fn with_leader(mut self, id: u64, address: Option<String>) -> Self {
        if id != 0 {
            self.leader_id = Some(id);
            self.leader_address = address;
        }
        self
    }

    /// Maps a replication failure. `write` says whether the request was a
    /// write, for which a timeout leaves the outcome unknown.
    pub fn from_propose(e: ProposeError, write: bool) -> Self {
        match e {
            ProposeError::NotLeader { leader_id: 0 } => {
                Self::unavailable("no leader is known; retry shortly")
            }
            ProposeError::NotLeader { leader_id } => Self::unavailable(format!(
                "node {leader_id} leads; this node cannot serve the request"
            ))
            .with_leader(leader_id, None),
            ProposeError::Dropped(why) => Self::unavailable(format!("not applied: {why}; retry")),
            ProposeError::Timeout if write => Self::new(
                ErrorCode::OutcomeUnknown,
                "the write was proposed but not confirmed in time; it may or may not be applied",
            ),
            ProposeError::Timeout => Self::unavailable("the read did not complete in time; retry"),
            ProposeError::LeadershipLost => Self::new(
                ErrorCode::OutcomeUnknown,
                "this node stopped leading while the write was in flight; it may or may not be applied",
            ),
            ProposeError::Storage(failure) => Self::storage(&failure),
            ProposeError::Invalid(why) => Self::invalid(why),
            ProposeError::Stopped => Self::unavailable("the node is shutting down"),
            ProposeError::StoppedInFlight => Self::new(
                ErrorCode::OutcomeUnknown,
                "the node stopped while the write was in flight; it may or may not be applied",
            ),
        }
    }

    /// Maps a node's storage failure: `STORAGE_FULL` for a full device,
    /// `STORAGE_FAILED` for anything else (lost state included: the node
    /// stops on it).
    pub fn storage(failure: &StorageFailure) -> Self {
        let code = match failure.kind {
            StorageFailureKind::Full => ErrorCode::StorageFull,
            StorageFailureKind::Failed | StorageFailureKind::LostState => ErrorCode::StorageFailed,
        };
        Self::new(code, failure.to_string())
    }

    /// Maps an error a leader returned to a forwarded request.
    pub fn from_status(status: &tonic::Status) -> Self {
        let retryable = status
            .metadata()
            .get(RETRYABLE_HEADER)
            .is_some_and(|v| v == "true");
        let code = ErrorCode::from_grpc(status.code(), retryable);
        let leader_id = status
            .metadata()
            .get(LEADER_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        ApiError {
            code,
            message: status.message().to_string(),
            leader_id,
            leader_address: None,
            oldest_index: None,
        }
    }

    pub fn retryable(&self) -> bool {
        matches!(self.code, ErrorCode::Unavailable | ErrorCode::Overloaded)
    }

    /// Whether the gateway may retry it at once (see [`GATEWAY_RETRY_HEADER`]).
    pub fn gateway_retries(&self) -> bool {
        self.code == ErrorCode::Unavailable
    }
}

/// The body of every non-2xx response from a node.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = Error)]
pub struct ErrorBody {
    pub code: ErrorCode,
    /// Human-readable explanation.
    pub message: String,
    /// The leader's node id, when known (mostly on UNAVAILABLE).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub leader_id: Option<u64>,
    /// The leader's API address `host:port`, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub leader_address: Option<String>,
    /// With COMPACTED: the oldest raft index a watch can start from on
    /// the node that answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub oldest_index: Option<u64>,
}

impl From<ApiError> for ErrorBody {
    fn from(e: ApiError) -> Self {
        ErrorBody {
            code: e.code,
            message: e.message,
            leader_id: e.leader_id,
            leader_address: e.leader_address,
            oldest_index: e.oldest_index,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        // A retried write's refusal may be an unknown outcome (`crate::retried`).
        let e = crate::retried::settle(self);
        let retryable = e.retryable();
        let gateway_retries = e.gateway_retries();
        let status = e.code.http_status();
        let leader_id = e.leader_id;
        let mut resp = (status, axum::Json(ErrorBody::from(e))).into_response();
        let headers = resp.headers_mut();
        if retryable {
            headers.insert(RETRYABLE_HEADER, HeaderValue::from_static("true"));
            headers.insert("retry-after-ms", HeaderValue::from(RETRY_AFTER_MS));
        }
        if gateway_retries {
            headers.insert(GATEWAY_RETRY_HEADER, HeaderValue::from_static("true"));
        }
        if let Some(id) = leader_id {
            headers.insert(LEADER_HEADER, HeaderValue::from(id));
        }
        resp
    }
}

impl From<ApiError> for tonic::Status {
    fn from(e: ApiError) -> Self {
        // A retried write's refusal may be an unknown outcome (`crate::retried`).
        let e = crate::retried::settle(e);
        let mut status = tonic::Status::new(e.code.grpc_code(), e.message.clone());
        let md = status.metadata_mut();
        if e.retryable() {
            md.insert(RETRYABLE_HEADER, MetadataValue::from_static("true"));
        }
        if e.gateway_retries() {
            md.insert(GATEWAY_RETRY_HEADER, MetadataValue::from_static("true"));
        }
        if let Some(id) = e.leader_id
            && let Ok(v) = MetadataValue::try_from(id.to_string())
        {
            md.insert(LEADER_HEADER, v);
        }
        if let Some(oldest) = e.oldest_index
            && let Ok(v) = MetadataValue::try_from(oldest.to_string())
        {
            md.insert(OLDEST_INDEX_HEADER, v);
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unavailable_is_retryable_on_both_edges() {
        let e = ApiError::from_propose(ProposeError::NotLeader { leader_id: 0 }, true);
        let resp = e.clone().into_response();
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(resp.headers()[RETRYABLE_HEADER], "true");
        let status = tonic::Status::from(e);
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(status.metadata().get(RETRYABLE_HEADER).unwrap(), "true");
        assert_eq!(status.metadata().get(GATEWAY_RETRY_HEADER).unwrap(), "true");
    }

    #[test]
    fn overloaded_is_retryable_by_the_client_but_not_by_the_gateway() {
        let e = ApiError::new(ErrorCode::Overloaded, "budget spent");
        let resp = e.clone().into_response();
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(resp.headers()[RETRYABLE_HEADER], "true");
        assert!(resp.headers().get(GATEWAY_RETRY_HEADER).is_none());
        let status = tonic::Status::from(e);
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert_eq!(status.metadata().get(RETRYABLE_HEADER).unwrap(), "true");
        assert!(status.metadata().get(GATEWAY_RETRY_HEADER).is_none());
    }

    #[test]
    fn write_timeout_is_outcome_unknown_and_not_retryable() {
        let e = ApiError::from_propose(ProposeError::Timeout, true);
        assert_eq!(e.code, ErrorCode::OutcomeUnknown);
        let resp = e.into_response();
        assert_eq!(resp.status(), StatusCode::GATEWAY_TIMEOUT);
        assert!(resp.headers().get(RETRYABLE_HEADER).is_none());
    }

    #[test]
    fn a_stop_answers_unknown_for_writes_in_raft_and_retryable_for_the_rest() {
        // Proves the two answers of a stopping node: a write it had stepped
        // into raft is OUTCOME_UNKNOWN on both edges (504, DEADLINE_EXCEEDED,
        // not retryable), since the next leader may commit it; a request
        // that never reached raft is UNAVAILABLE and retryable.
        let in_flight = ApiError::from_propose(ProposeError::StoppedInFlight, true);
        assert_eq!(in_flight.code, ErrorCode::OutcomeUnknown);
        let status = tonic::Status::from(in_flight.clone());
        assert_eq!(status.code(), Code::DeadlineExceeded);
        assert!(status.metadata().get(RETRYABLE_HEADER).is_none());
        let resp = in_flight.into_response();
        assert_eq!(resp.status(), StatusCode::GATEWAY_TIMEOUT);
        assert!(resp.headers().get(RETRYABLE_HEADER).is_none());

        let never_proposed = ApiError::from_propose(ProposeError::Stopped, true);
        assert_eq!(never_proposed.code, ErrorCode::Unavailable);
        let resp = never_proposed.into_response();
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(resp.headers()[RETRYABLE_HEADER], "true");
    }

    #[test]
    fn storage_failures_keep_full_apart_from_failed() {
        // Proves a full device maps to STORAGE_FULL and any other storage
        // failure (lost state too) to STORAGE_FAILED, with the same messages
        // as before the failure was typed.
        let full = ApiError::from_propose(
            ProposeError::Storage(StorageFailure::new(true, "no space left on device")),
            true,
        );
        assert_eq!(full.code, ErrorCode::StorageFull);
        assert_eq!(full.message, "storage full: no space left on device");
        let failed = ApiError::storage(&StorageFailure::failed("fsync: I/O error"));
        assert_eq!(failed.code, ErrorCode::StorageFailed);
        assert_eq!(failed.message, "storage failed: fsync: I/O error");
        let lost = ApiError::storage(&StorageFailure::lost_state("log ends at 5"));
        assert_eq!(lost.code, ErrorCode::StorageFailed);
        assert_eq!(lost.message, "lost state: log ends at 5");
    }

    #[test]
    fn error_codes_on_the_wire_are_their_names() {
        // Proves: the JSON name of every code (the one the OpenAPI document
        // lists) is the name `as_str` gives it, and the error body carries
        // the leader only when one is known.
        let schema = serde_json::to_value(<ErrorCode as utoipa::PartialSchema>::schema()).unwrap();
        let names = schema["enum"].as_array().expect("an enum of names");
        assert!(names.len() >= 10, "{schema}");
        for name in names {
            let code: ErrorCode = serde_json::from_value(name.clone()).unwrap();
            assert_eq!(name, code.as_str());
        }
        let body = |e: ApiError| serde_json::to_value(ErrorBody::from(e)).unwrap();
        assert_eq!(
            body(ApiError::invalid("empty key")),
            serde_json::json!({"code": "INVALID_ARGUMENT", "message": "empty key"})
        );
        assert_eq!(
            body(ApiError::unavailable("x").with_leader(2, Some("h:1".into()))),
            serde_json::json!({"code": "UNAVAILABLE", "message": "x", "leader_id": 2, "leader_address": "h:1"})
        );
    }

    #[test]
    fn overloaded_is_retryable_and_survives_a_forward() {
        // Proves: a write refused by the write budget is 503 marked
        // retryable over REST and RESOURCE_EXHAUSTED marked retryable over
        // gRPC, and a follower that forwarded it reports it as OVERLOADED,
        // not as the full disk that RESOURCE_EXHAUSTED alone means.
        let e = ApiError::new(ErrorCode::Overloaded, "budget spent");
        let resp = e.clone().into_response();
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(resp.headers()[RETRYABLE_HEADER], "true");
        let status = tonic::Status::from(e);
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert_eq!(status.metadata().get(RETRYABLE_HEADER).unwrap(), "true");
        assert_eq!(ApiError::from_status(&status).code, ErrorCode::Overloaded);
        let full = tonic::Status::from(ApiError::new(ErrorCode::StorageFull, "disk full"));
        assert_eq!(ApiError::from_status(&full).code, ErrorCode::StorageFull);
    }

    #[test]
    fn forwarded_status_keeps_code_and_leader() {
        let original = ApiError::unavailable("x").with_leader(3, None);
        let back = ApiError::from_status(&tonic::Status::from(original));
        assert_eq!(back.code, ErrorCode::Unavailable);
        assert_eq!(back.leader_id, Some(3));
    }
}
