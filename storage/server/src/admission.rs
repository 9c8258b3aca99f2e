//! Admission of writes: a budget of bytes that the write requests a node
//! has taken and not yet answered may hold, charged before their bodies are
//! read.
//!
//! Without it a node takes every write it is sent. Under many large batches
//! it parsed bodies and held entries worth hundreds of MiB: the raft thread
//! starved for CPU and disk, followers fell behind, the leader lost its
//! quorum again and again, and the writes that waited longest were
//! answered "outcome unknown". A write that finds the budget spent is
//! refused at once as `OVERLOADED` (REST 503, gRPC RESOURCE_EXHAUSTED, both
//! marked `x-strata-retryable`): it was never parsed, let alone proposed, so
//! it certainly was not applied, and refusing it costs no more than
//! receiving its bytes.
//!
//! A write is refused the same way while the node's storage engine is
//! behind on its background work (L0 at its slowdown trigger, or every
//! frozen memtable slot taken): taken then, it would wait in the apply
//! behind a write stall, long enough to be answered "outcome unknown",
//! and the stall would stop the raft thread's hand-over of committed
//! entries on a follower. Refusing it gives the compactions time to catch
//! up before writers must stop.
//!
//! A write's cost is its body's declared length (REST `Content-Length`) or
//! its gRPC message's length (the 5-byte prefix, read ahead of the rest);
//! a REST body of unknown length costs the largest a request may be. The
//! permit is held until the answer, so the budget also bounds what the
//! leader has proposed and not yet answered.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, Version};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

use crate::deadline;
use crate::error::{ApiError, ErrorCode};

/// The gRPC methods that write.
const GRPC_WRITES: [&str; 4] = [
    "/strata.v1.KV/Put",
    "/strata.v1.KV/Delete",
    "/strata.v1.KV/Batch",
    "/strata.v1.KV/CompareAndSwap",
];

/// A gRPC message's prefix: a compression flag and a 4-byte length.
const GRPC_PREFIX_BYTES: usize = 5;

/// Says why the storage is behind, if it is.
pub type Behind = Arc<dyn Fn() -> Option<String> + Send + Sync>;

pub struct WriteBudget {
    permits: Arc<Semaphore>,
    capacity: u32,
    /// What a body of unknown length costs: the largest a request may be.
    unknown_length_bytes: usize,
    behind: Option<Behind>,
    /// A write's time, counted from when it is admitted (see
    /// `crate::deadline`); none when `None`.
    request_timeout: Option<Duration>,
}

impl WriteBudget {
    /// A budget of `bytes` (at least one byte, at most what a semaphore and
    /// one acquisition can count).
    pub fn new(bytes: usize, unknown_length_bytes: usize) -> Self {
        let capacity = bytes.clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize)) as u32;
        WriteBudget {
            permits: Arc::new(Semaphore::new(capacity as usize)),
            capacity,
            unknown_length_bytes,
            behind: None,
            request_timeout: None,
        }
    }

    /// Gives each admitted write `request_timeout` from its admission (or
    /// less, if its caller waits less) to be answered.
    pub fn with_deadlines(mut self, request_timeout: Duration) -> Self {
        self.request_timeout = Some(request_timeout);
        self
    }

    /// Refuses every write while `behind` says the storage is behind.
    pub fn refusing_while(mut self, behind: Behind) -> Self {
        self.behind = Some(behind);
        self
    }

    /// Takes `bytes` of the budget until the permit is dropped, or refuses
    /// the write. A write larger than the whole budget takes all of it, so
    /// that it is admitted when nothing else is in flight rather than never.
    pub fn admit(&self, bytes: usize) -> Result<OwnedSemaphorePermit, ApiError> {
        if let Some(why) = self.behind.as_ref().and_then(|behind| behind()) {
            return Err(ApiError::new(
                ErrorCode::Overloaded,
                format!(
                    "this node's storage engine is behind on its flushes and compactions \
                     ({why}); not applied, retry"
                ),
            ));
        }
        let cost = bytes.clamp(1, self.capacity as usize) as u32;
        match self.permits.clone().try_acquire_many_owned(cost) {
            Ok(permit) => Ok(permit),
            Err(TryAcquireError::NoPermits) => Err(ApiError::new(
                ErrorCode::Overloaded,
                format!(
                    "this node holds {} of its {} bytes of writes in flight and this one \
                     needs {cost}; not applied, retry",
                    self.in_flight(),
                    self.capacity
                ),
            )),
            Err(TryAcquireError::Closed) => Err(ApiError::unavailable("the node is shutting down")),
        }
    }

    /// Bytes of the budget taken now.
    pub fn in_flight(&self) -> usize {
        self.capacity as usize - self.permits.available_permits()
    }
}

/// What kind of request, for admission.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    RestWrite,
    GrpcWrite,
    /// Reads, cluster routes, the raft transport: not charged.
    Other,
}

fn kind(method: &Method, path: &str) -> Kind {
    if GRPC_WRITES.contains(&path) {
        return Kind::GrpcWrite;
    }
    let kv = path.starts_with("/v1/kv/") && (method == Method::PUT || method == Method::DELETE);
    let json = (path == "/v1/batch" || path == "/v1/cas") && method == Method::POST;
    if kv || json {
        Kind::RestWrite
    } else {
        Kind::Other
    }
}

/// Middleware: charges each write to the budget before its body is read,
/// answers `OVERLOADED` when it does not fit, and holds the charge until
/// the answer.
pub async fn admit(State(budget): State<Arc<WriteBudget>>, req: Request, next: Next) -> Response {
    let (req, cost) = match kind(req.method(), req.uri().path()) {
        Kind::Other => return next.run(req).await,
        Kind::RestWrite => {
            let declared = http_body::Body::size_hint(req.body()).exact();
            let cost = declared.map_or(budget.unknown_length_bytes, |n| n as usize);
            (req, cost)
        }
        Kind::GrpcWrite => read_grpc_length(req).await,
    };
    match budget.admit(cost) {
        Ok(_permit) => match budget.request_timeout {
            Some(timeout) => {
                let time = deadline::budget(req.headers(), timeout);
                let grpc = GRPC_WRITES.contains(&req.uri().path());
                deadline::run(time, next.run(req), |e| in_protocol(e, grpc)).await
            }
            None => next.run(req).await,
        },
        Err(refusal) => {
            let answer = refuse(refusal, &req);
            if req.version() < Version::HTTP_2 {
                drain(req.into_body()).await;
            }
            answer
        }
    }
}

/// Reads a refused HTTP/1 request's body to its end, keeping nothing. An
/// answer sent while an HTTP/1 client is still sending reaches it as a
/// broken connection rather than as the refusal, which a client must take
/// as "outcome unknown"; receiving the bytes costs far less than parsing
/// and holding them. HTTP/2 (the gateway's connections, gRPC) needs none of
/// it: the answer ends the stream and the rest of the body is refused with
/// it, so the refusal reaches the gateway at once. Draining there cost
/// each refused 15 MiB write a second or two on a busy node, and the
/// gateway, retrying refusals, reached its route timeout with a retry in
/// flight and answered "outcome unknown".
pub(crate) async fn drain(body: Body) {
    let mut stream = body.into_data_stream();
    while let Some(Ok(_)) = stream.next().await {}
}

/// The refusal in the request's own protocol.
fn refuse(refusal: ApiError, req: &Request) -> Response {
    in_protocol(refusal, GRPC_WRITES.contains(&req.uri().path()))
}

fn in_protocol(error: ApiError, grpc: bool) -> Response {
    if grpc {
        tonic::Status::from(error)
            .into_http::<Body>()
            .into_response()
    } else {
        error.into_response()
    }
}

/// Reads the body until the first gRPC message's length is known; returns
/// the request with its body whole again and the message's bytes (1 when
/// the body ends or fails first, which tonic then reports).
async fn read_grpc_length(req: Request) -> (Request, usize) {
    let (parts, body) = req.into_parts();
    let mut stream = body.into_data_stream();
    let mut head: Vec<Bytes> = Vec::new();
    let mut failed = None;
    while head.iter().map(Bytes::len).sum::<usize>() < GRPC_PREFIX_BYTES {
        match stream.next().await {
            Some(Ok(chunk)) => head.push(chunk),
            Some(Err(e)) => {
                failed = Some(e);
                break;
            }
            None => break,
        }
    }
    let prefix: Vec<u8> = head
        .iter()
        .flat_map(|b| b.iter().copied())
        .take(GRPC_PREFIX_BYTES)
        .collect();
    let cost = match prefix[..] {
        [_, a, b, c, d] => u32::from_be_bytes([a, b, c, d]) as usize + GRPC_PREFIX_BYTES,
        _ => 1,
    };
    let rest = futures::stream::iter(head.into_iter().map(Ok))
        .chain(futures::stream::iter(failed.map(Err)))
        .chain(stream);
    (Request::from_parts(parts, Body::from_stream(rest)), cost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_admitted_while_they_fit_and_refused_as_overloaded_after() {
        // Proves: the budget admits writes while their bytes fit, refuses the
        // next as OVERLOADED (retryable: never proposed), and admits again
        // once an admitted write is answered (its permit dropped).
        let budget = WriteBudget::new(100, 100);
        let first = budget.admit(60).unwrap();
        let _second = budget.admit(40).unwrap();
        let refused = budget.admit(1).unwrap_err();
        assert_eq!(refused.code, ErrorCode::Overloaded);
        assert!(refused.retryable());
        assert!(
            refused.message.contains("100 of its 100 bytes"),
            "{}",
            refused.message
        );
        drop(first);
        assert_eq!(budget.in_flight(), 40);
        let _third = budget.admit(60).unwrap();
    }

    #[test]
    fn writes_are_refused_as_overloaded_while_the_storage_is_behind() {
        // Proves: while the storage says it is behind, a write that fits
        // the budget is refused as OVERLOADED (not applied) with the reason,
        // and takes nothing of the budget; once it has caught up, writes
        // are admitted again.
        use std::sync::atomic::{AtomicBool, Ordering};
        let behind = Arc::new(AtomicBool::new(true));
        let flag = behind.clone();
        let budget = WriteBudget::new(100, 100).refusing_while(Arc::new(move || {
            flag.load(Ordering::Relaxed)
                .then(|| "L0 holds 8 tables".to_string())
        }));
        let refused = budget.admit(10).unwrap_err();
        assert_eq!(refused.code, ErrorCode::Overloaded);
        assert!(
            refused.message.contains("L0 holds 8 tables"),
            "{}",
            refused.message
        );
        assert_eq!(budget.in_flight(), 0);
        behind.store(false, Ordering::Relaxed);
        let _permit = budget.admit(10).expect("admitted once caught up");
    }

    #[test]
    fn a_write_larger_than_the_budget_is_admitted_alone() {
        // Proves: a write over the whole budget is not refused forever: it
        // takes all of it when nothing else is in flight, and only then.
        let budget = WriteBudget::new(100, 100);
        let small = budget.admit(1).unwrap();
        assert_eq!(budget.admit(500).unwrap_err().code, ErrorCode::Overloaded);
        drop(small);
        let large = budget.admit(500).unwrap();
        assert_eq!(budget.in_flight(), 100);
        drop(large);
        assert_eq!(budget.in_flight(), 0);
    }

    #[test]
    fn only_writes_are_charged() {
        // Proves: the writes of both front ends are charged, and reads,
        // cluster routes and the raft transport are not.
        assert_eq!(kind(&Method::PUT, "/v1/kv/a/b"), Kind::RestWrite);
        assert_eq!(kind(&Method::DELETE, "/v1/kv/a"), Kind::RestWrite);
        assert_eq!(kind(&Method::POST, "/v1/batch"), Kind::RestWrite);
        assert_eq!(kind(&Method::POST, "/v1/cas"), Kind::RestWrite);
        assert_eq!(kind(&Method::GET, "/v1/kv/a"), Kind::Other);
        assert_eq!(kind(&Method::GET, "/v1/kv"), Kind::Other);
        assert_eq!(kind(&Method::POST, "/v1/cluster/members"), Kind::Other);
        for path in GRPC_WRITES {
            assert_eq!(kind(&Method::POST, path), Kind::GrpcWrite);
        }
        assert_eq!(kind(&Method::POST, "/strata.v1.KV/Get"), Kind::Other);
        assert_eq!(kind(&Method::POST, "/strata.v1.Raft/Stream"), Kind::Other);
    }

    #[tokio::test]
    async fn a_grpc_write_costs_its_message_and_keeps_its_body() {
        // Proves: the cost of a gRPC write is read from its message prefix,
        // even split over chunks, and the body passed on is the whole body.
        let mut message = vec![0u8, 0, 0, 1, 0];
        message.extend(vec![7u8; 256]);
        let chunks = vec![
            Ok::<_, std::io::Error>(Bytes::copy_from_slice(&message[..2])),
            Ok(Bytes::copy_from_slice(&message[2..])),
        ];
        let req = Request::builder()
            .method(Method::POST)
            .uri("/strata.v1.KV/Put")
            .body(Body::from_stream(futures::stream::iter(chunks)))
            .unwrap();
        let (req, cost) = read_grpc_length(req).await;
        assert_eq!(cost, 256 + GRPC_PREFIX_BYTES);
        let body = axum::body::to_bytes(req.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(body[..], message[..]);
    }
}
