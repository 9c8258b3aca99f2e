//! The error answers the OpenAPI document names by reference, and the sets
//! of them each kind of route can give. Every one carries an
//! [`ErrorBody`]; their descriptions say which codes they stand for.

use std::collections::BTreeMap;

use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr, Response};
use utoipa::{IntoResponses, PartialSchema, ToResponse, ToSchema};

use crate::error::ErrorBody;

/// INVALID_ARGUMENT: empty key, bad query, malformed JSON, bad base64 or
/// conflicting parameters.
#[derive(ToResponse)]
pub struct BadRequest(pub ErrorBody);

/// NOT_FOUND.
#[derive(ToResponse)]
pub struct NotFound(pub ErrorBody);

/// ALREADY_EXISTS: a lease with the id asked for exists.
#[derive(ToResponse)]
pub struct Conflict(pub ErrorBody);

/// PAYLOAD_TOO_LARGE: key over 4 KiB, value over 1 MiB, or body too large
/// (limits configurable).
#[derive(ToResponse)]
pub struct PayloadTooLarge(pub ErrorBody);

/// UNSUPPORTED_MEDIA_TYPE: this JSON endpoint was called with a non-JSON
/// Content-Type.
#[derive(ToResponse)]
pub struct UnsupportedMediaType(pub ErrorBody);

/// STORAGE_FAILED (the engine is poisoned after an I/O failure and refuses
/// writes until restart) or INTERNAL.
#[derive(ToResponse)]
pub struct Internal(pub ErrorBody);

/// UNAVAILABLE: no leader, or not attempted; or, on a write, OVERLOADED:
/// the node's budget of writes in flight is spent and it refused the write
/// before reading it. Both always mean "not applied, safe to retry".
#[derive(ToResponse)]
#[response(headers(
    ("retry-after-ms" = inline(Decimal), description = "Suggested delay before retrying, in milliseconds."),
    ("x-strata-retryable" = inline(True), description = "`true`: the request was not applied and is safe to retry (Envoy retries on it).")
))]
pub struct Unavailable(pub ErrorBody);

/// OUTCOME_UNKNOWN: the write reached raft but its outcome was not learned:
/// not confirmed in time, leadership lost, or the node stopped while it
/// waited. It may or may not have been applied (the next leader may commit
/// it). Do not blindly retry non-idempotent operations.
#[derive(ToResponse)]
pub struct OutcomeUnknown(pub ErrorBody);

/// Disk full (STORAGE_FULL). On a write the node failed while applying a
/// committed entry, so the write may be committed on the other replicas:
/// treat it as outcome unknown.
#[derive(ToResponse)]
pub struct StorageFull(pub ErrorBody);

/// PAGE_TOKEN_EXPIRED: the view of the data a scan's pages are read from
/// is no longer kept (it is kept on the node that served the first page,
/// for a minute after each page): start the scan again.
#[derive(ToResponse)]
pub struct PageTokenExpired(pub ErrorBody);

/// COMPACTED: a watch asked for changes from a raft index this node's
/// history no longer holds; the body's `oldest_index` is the oldest it
/// does. Read the current state and watch from its index.
#[derive(ToResponse)]
pub struct Compacted(pub ErrorBody);

/// UNAUTHENTICATED: the route needs a role that requests without a token
/// do not have here (`--anonymous-role`), or the token was refused
/// (expired, changed, or not signed by a key the node trusts). Send
/// `authorization: Bearer <token>`.
#[derive(ToResponse)]
#[response(headers(
    ("www-authenticate" = String, description = "`Bearer realm=\"strata\"`.")
))]
pub struct Unauthorized(pub ErrorBody);

/// PERMISSION_DENIED: the token's role does not allow this route (reads
/// need `read`, writes `write`, cluster changes and backups `admin`).
#[derive(ToResponse)]
pub struct Forbidden(pub ErrorBody);

/// The answers of a route the caller's role may not allow, keyed by
/// status.
pub fn auth_errors() -> Errors {
    [by_ref::<Unauthorized>(401), by_ref::<Forbidden>(403)].into()
}

/// Every error response, for the document's components.
pub fn all() -> Vec<(String, RefOr<Response>)> {
    [
        BadRequest::response(),
        NotFound::response(),
        Conflict::response(),
        PayloadTooLarge::response(),
        UnsupportedMediaType::response(),
        Internal::response(),
        Unavailable::response(),
        OutcomeUnknown::response(),
        StorageFull::response(),
        PageTokenExpired::response(),
        Compacted::response(),
        Unauthorized::response(),
        Forbidden::response(),
    ]
    .into_iter()
    .map(|(name, response)| (name.to_string(), response))
    .collect()
}

/// The error answers of a route, keyed by status.
type Errors = BTreeMap<String, RefOr<Response>>;

/// Error answer `R` under `status`, by reference to its component.
fn by_ref<R: ToResponse<'static>>(status: u16) -> (String, RefOr<Response>) {
    (
        status.to_string(),
        Ref::from_response_name(R::response().0).into(),
    )
}

/// `errors` with `more` added.
fn with(mut errors: Errors, more: impl IntoIterator<Item = (String, RefOr<Response>)>) -> Errors {
    errors.extend(more);
    errors
}

/// What a route that only reports this node's or the cluster's state can
/// fail with.
pub struct StatusErrors;

impl IntoResponses for StatusErrors {
    fn responses() -> Errors {
        [by_ref::<Internal>(500), by_ref::<Unavailable>(503)].into()
    }
}

/// What a membership change can fail with: what a status route can, a
/// refused request, and a change proposed but not confirmed in time.
pub struct ChangeErrors;

impl IntoResponses for ChangeErrors {
    fn responses() -> Errors {
        with(
            StatusErrors::responses(),
            [by_ref::<BadRequest>(400), by_ref::<OutcomeUnknown>(504)],
        )
    }
}

/// What a read can fail with: what a membership change can, and a key too
/// large.
pub struct ReadErrors;

impl IntoResponses for ReadErrors {
    fn responses() -> Errors {
        with(ChangeErrors::responses(), [by_ref::<PayloadTooLarge>(413)])
    }
}

/// What a scan can fail with: what a read can, and a page token whose view
/// is gone.
pub struct ScanErrors;

impl IntoResponses for ScanErrors {
    fn responses() -> Errors {
        with(ReadErrors::responses(), [by_ref::<PageTokenExpired>(410)])
    }
}

/// What starting a watch can fail with: bad input, a node that cannot
/// serve it (stopping, or serving too many), a failed engine, and a start
/// index no longer held.
pub struct WatchErrors;

impl IntoResponses for WatchErrors {
    fn responses() -> Errors {
        with(
            StatusErrors::responses(),
            [by_ref::<BadRequest>(400), by_ref::<Compacted>(410)],
        )
    }
}

/// What a write to a key can fail with: what a read can, and a full disk.
pub struct WriteErrors;

impl IntoResponses for WriteErrors {
    fn responses() -> Errors {
        with(ReadErrors::responses(), [by_ref::<StorageFull>(507)])
    }
}

/// What a JSON-only endpoint adds: a body of the wrong type or size.
pub struct JsonBodyErrors;

impl IntoResponses for JsonBodyErrors {
    fn responses() -> Errors {
        [
            by_ref::<PayloadTooLarge>(413),
            by_ref::<UnsupportedMediaType>(415),
        ]
        .into()
    }
}

/// A header holding a decimal number (a node id, a delay).
pub struct Decimal;

impl PartialSchema for Decimal {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some("^[0-9]+$"))
            .into()
    }
}

impl ToSchema for Decimal {}

/// A header that is present only with the value `true`.
pub struct True;

impl PartialSchema for True {
    fn schema() -> RefOr<Schema> {
        only("true")
    }
}

impl ToSchema for True {}

/// A header that is present only with the value `stale`.
pub struct Stale;

impl PartialSchema for Stale {
    fn schema() -> RefOr<Schema> {
        only("stale")
    }
}

impl ToSchema for Stale {}

/// A string that can only be `value`.
fn only(value: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some([value]))
        .into()
}
