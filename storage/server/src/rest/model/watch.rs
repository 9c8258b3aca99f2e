//! The query of `GET /v1/watch` and the messages of its event stream.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::rest::encoding::Encoding;

/// The query of `GET /v1/watch`. Select keys by `key`, by `prefix`, or by
/// `start` (inclusive) and `end` (exclusive); nothing selects every key.
#[derive(Deserialize, Default, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WatchQuery {
    /// One key (in `encoding`).
    pub(crate) key: Option<String>,
    /// Every key with this prefix (in `encoding`).
    pub(crate) prefix: Option<String>,
    /// Inclusive start of a range (in `encoding`).
    pub(crate) start: Option<String>,
    /// Exclusive end of a range (in `encoding`); absent or empty: the end
    /// of the key space.
    pub(crate) end: Option<String>,
    /// The first raft index whose changes to send (a replay of the history
    /// from it); absent: only changes applied after the watch starts. A
    /// `Last-Event-ID` header (an event source reconnecting) overrides it
    /// with the index after that id.
    #[param(minimum = 1)]
    pub(crate) from_index: Option<u64>,
    /// With no change to send for this long, a `progress` event; default
    /// 10000, at least 100.
    #[param(minimum = 100, default = 10000)]
    pub(crate) progress_ms: Option<u32>,
    /// Encoding of `key`, `prefix`, `start` and `end`, and of the byte
    /// strings in the events; default `utf8`. An event switches to
    /// `base64` on its own when one of its byte strings is not UTF-8.
    pub(crate) encoding: Option<Encoding>,
}

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChangeType {
    Put,
    Delete,
}

/// One put or delete.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchChange {
    #[serde(rename = "type")]
    pub kind: ChangeType,
    pub key: String,
    /// The value put; absent for a delete.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub value: Option<String>,
}

/// `event: changes`: the matching changes of one raft index, all of them,
/// in the order the entry made them. The event's `id` is the index.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchChanges {
    /// The raft index of the entry that made them.
    pub index: u64,
    /// The node serving the watch.
    pub node_id: u64,
    pub changes: Vec<WatchChange>,
    pub encoding: Encoding,
}

/// `event: progress`: every matching change through `index` has been
/// sent. The event's `id` is the index.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchProgress {
    pub index: u64,
    /// The node serving the watch.
    pub node_id: u64,
}

/// One event of the stream as an event source reads it: its name
/// (`changes`, `progress` or `ended`), its id (an index through which every
/// matching change was sent; none on `ended`) and its data, the JSON text
/// of a WatchChanges, a WatchProgress or an Error.
#[derive(Debug, Serialize, ToSchema)]
pub struct ServerSentEvent {
    pub event: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub id: Option<String>,
    pub data: String,
}
