//! `GET /v1/watch`: a watch (`crate::watch`) as Server-Sent Events.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt};
use serde_json::json;
use strata_raft::{Change, ChangeKind};
use tokio_stream::wrappers::ReceiverStream;

use super::AppState;
use super::encoding::Encoding;
use super::model::watch::{
    ChangeType, ServerSentEvent, WatchChange, WatchChanges, WatchProgress, WatchQuery,
};
use super::parse;
use super::responses::WatchErrors;
use crate::error::{ApiError, ErrorBody};
use crate::watch::{WatchMessage, WatchSpec};

/// The event stream's keep-alive comment, for the quiet between progress
/// events.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Watch changes to keys (Server-Sent Events)
///
/// Every put, and every delete of a key that existed, among the selected
/// keys, in commit order, from this node's applied state (any node serves
/// watches; followers from what they have applied). A never-ending
/// `text/event-stream`:
///
/// - `event: changes`, `id:` the raft index, `data:` a WatchChanges: all
///   the matching changes of that index.
/// - `event: progress`, `id:` an index, `data:` a WatchProgress: every
///   matching change through that index has been sent. Sent once the
///   replay from `from_index` is done, then after every `progress_ms`
///   without a change.
/// - `event: ended`, `data:` an Error, and the stream ends: COMPACTED when
///   the watch fell so far behind (its client not reading) that its next
///   change was trimmed from the history; UNAVAILABLE when the node stops.
///
/// Every event's `id` is an index through which everything was sent: an
/// event source that reconnects with `Last-Event-ID` (or a client that
/// asks `from_index` = that id + 1) misses nothing and sees nothing twice,
/// on any node whose history still holds it.
#[utoipa::path(
    get,
    path = "/v1/watch",
    operation_id = "watch",
    tag = "kv",
    params(WatchQuery),
    responses(
        (status = 200, description = "The event stream.", content((ServerSentEvent = "text/event-stream"))),
        WatchErrors,
    ),
    extensions(
        ("x-sse-events" = json!({
            "changes": "#/components/schemas/WatchChanges",
            "progress": "#/components/schemas/WatchProgress",
            "ended": "#/components/schemas/Error",
        })),
    ),
)]
pub async fn watch(
    State(s): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let last_event_id = headers
        .get("last-event-id")
        .map(|v| v.to_str().unwrap_or("?"));
    let (req, encoding) = parse::watch_request(uri.query().unwrap_or_default(), last_event_id)?;
    let spec = WatchSpec::from_request(&req)?;
    let stream = s.watches.start(spec)?;
    let node_id = stream.node_id;
    let encoding = encoding.unwrap_or_default();
    let events = ReceiverStream::new(stream.messages).map(move |m| Ok(event(node_id, encoding, m)));
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

/// One message of a watch as an event.
fn event(node_id: u64, encoding: Encoding, m: Result<WatchMessage, ApiError>) -> Event {
    match m {
        Ok(WatchMessage::Changes { index, changes }) => Event::default()
            .event("changes")
            .id(index.to_string())
            .data(json_text(&changes_body(node_id, encoding, index, &changes))),
        Ok(WatchMessage::Progress { index }) => Event::default()
            .event("progress")
            .id(index.to_string())
            .data(json_text(&WatchProgress { index, node_id })),
        // Not `error`: a browser's EventSource fires that name for a lost
        // connection too.
        Err(e) => Event::default()
            .event("ended")
            .data(json_text(&ErrorBody::from(e))),
    }
}

fn changes_body(node_id: u64, encoding: Encoding, index: u64, changes: &[Change]) -> WatchChanges {
    let encoding = encoding.for_output(
        changes
            .iter()
            .flat_map(|c| [c.key.as_slice(), c.value.as_slice()]),
    );
    let changes = changes
        .iter()
        .filter_map(|c| {
            let kind = match c.kind {
                ChangeKind::Put => ChangeType::Put,
                ChangeKind::Delete => ChangeType::Delete,
                // A watch ends at a split of its range (`crate::watch`).
                ChangeKind::Split => return None,
            };
            Some(WatchChange {
                kind,
                key: encoding.encode(&c.key),
                value: (c.kind == ChangeKind::Put).then(|| encoding.encode(&c.value)),
            })
        })
        .collect();
    WatchChanges {
        index,
        node_id,
        changes,
        encoding,
    }
}

fn json_text(body: &impl serde::Serialize) -> String {
    serde_json::to_string(body)
        .unwrap_or_else(|e| json!({"code": "INTERNAL", "message": e.to_string()}).to_string())
}
