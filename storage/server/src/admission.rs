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
//! While the node's storage engine is behind on its background work (L0 at
//! its slowdown trigger, or every frozen memtable slot taken), a write
//! waits here, before anything of it is read or proposed, for the engine to
//! catch up: at most `stall_wait` (`--write-stall-wait-ms`), and never more
//! than half its time. Only a write still waiting then is refused the same
//! way, naming what is behind. Taken while the engine is behind, a write
//! would wait in the apply behind a write stall, long enough to be answered
//! "outcome unknown", and the stall would stop the raft thread's hand-over
//! of committed entries on a follower; held here, it gives the compactions
//! time to catch up, and a burst that outruns the flushes for a moment
//! (16 KiB values from 16 clients filled both memtable slots within
//! seconds) is answered late instead of refused. The writers wait in
//! arrival order, and one at a time looks at the engine.
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
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::time::Instant;

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

/// How often the writer at the head of the queue looks at the engine again
/// while it is behind.
const STALL_POLL: Duration = Duration::from_millis(5);

/// Says why the storage is behind, if it is.
pub type Behind = Arc<dyn Fn() -> Option<String> + Send + Sync>;

pub struct WriteBudget {
    permits: Arc<Semaphore>,
    capacity: u32,
    /// What a body of unknown length costs: the largest a request may be.
    unknown_length_bytes: usize,
    behind: Option<Behind>,
    /// The longest a write waits for the storage to catch up.
    stall_wait: Duration,
    /// The writers waiting for it, in arrival order: the one holding the
    /// lock looks at the engine.
    stalled: Mutex<()>,
    /// A write's time, counted from when the node took it (see
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
            stall_wait: Duration::ZERO,
            stalled: Mutex::new(()),
            request_timeout: None,
        }
    }

    /// Gives each admitted write `request_timeout` from its admission (or
    /// less, if its caller waits less) to be answered.
    pub fn with_deadlines(mut self, request_timeout: Duration) -> Self {
        self.request_timeout = Some(request_timeout);
        self
    }

    /// Holds every write while `behind` says the storage is behind, for at
    /// most `stall_wait`, and refuses it if the storage is still behind
    /// then.
    pub fn stalling_while(mut self, behind: Behind, stall_wait: Duration) -> Self {
        self.behind = Some(behind);
        self.stall_wait = stall_wait;
        self
    }

    /// Waits until the storage is not behind, for at most `limit` from
    /// `taken`; says why if it still is.
    async fn caught_up(&self, taken: Instant, limit: Duration) -> Result<(), String> {
        let Some(behind) = &self.behind else {
            return Ok(());
        };
        let Some(mut why) = behind() else {
            return Ok(());
        };
        let until = taken + limit;
        let Ok(_turn) = tokio::time::timeout_at(until, self.stalled.lock()).await else {
            return Err(why);
        };
        loop {
            match behind() {
                None => return Ok(()),
                Some(now_why) => why = now_why,
            }
            let now = Instant::now();
            if now >= until {
                return Err(why);
            }
            tokio::time::sleep(STALL_POLL.min(until - now)).await;
        }
    }

    /// Takes `bytes` of the budget until the permit is dropped, or refuses
    /// the write; waits first while the storage is behind, for at most
    /// `stall_wait` from `taken` and never past `limit` from it. A write
    /// larger than the whole budget takes all of it, so that it is admitted
    /// when nothing else is in flight rather than never.
    pub async fn admit(
        &self,
        bytes: usize,
        taken: Instant,
        limit: Duration,
    ) -> Result<OwnedSemaphorePermit, ApiError> {
        if let Err(why) = self.caught_up(taken, self.stall_wait.min(limit)).await {
            return Err(ApiError::new(
                ErrorCode::Overloaded,
                format!(
                    "this node's storage engine is behind on its flushes and compactions \
                     ({why}); not applied, retry"
                ),
            ));
        }
        self.take(bytes)
    }

    /// Takes `bytes` of the budget at once, or refuses the write.
    fn take(&self, bytes: usize) -> Result<OwnedSemaphorePermit, ApiError> {
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
    let taken = Instant::now();
    let time = budget
        .request_timeout
        .map(|timeout| deadline::budget(req.headers(), timeout));
    // A write that used half its time before it could be proposed is
    // refused anyway (`crate::deadline`): it waits no longer than that.
    let limit = time.map_or(Duration::MAX, |t| t / 2);
    match budget.admit(cost, taken, limit).await {
        Ok(_permit) => match time {
            Some(time) => {
                let grpc = GRPC_WRITES.contains(&req.uri().path());
                deadline::run(taken, time, next.run(req), |e| in_protocol(e, grpc)).await
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

    /// Admits a write taken now, with no deadline of its own.
    async fn admit(budget: &WriteBudget, bytes: usize) -> Result<OwnedSemaphorePermit, ApiError> {
        budget.admit(bytes, Instant::now(), Duration::MAX).await
    }

    /// A budget of 100 bytes whose storage is behind while `behind` is set.
    fn stalling(stall_wait: Duration) -> (WriteBudget, Arc<std::sync::atomic::AtomicBool>) {
        use std::sync::atomic::{AtomicBool, Ordering};
        let behind = Arc::new(AtomicBool::new(true));
        let flag = behind.clone();
        let budget = WriteBudget::new(100, 100).stalling_while(
            Arc::new(move || {
                flag.load(Ordering::Relaxed)
                    .then(|| "L0 holds 8 tables".to_string())
            }),
            stall_wait,
        );
        (budget, behind)
    }

    #[tokio::test]
    async fn writes_are_admitted_while_they_fit_and_refused_as_overloaded_after() {
        // Proves: the budget admits writes while their bytes fit, refuses the
        // next as OVERLOADED (retryable: never proposed), and admits again
        // once an admitted write is answered (its permit dropped).
        let budget = WriteBudget::new(100, 100);
        let first = admit(&budget, 60).await.unwrap();
        let _second = admit(&budget, 40).await.unwrap();
        let refused = admit(&budget, 1).await.unwrap_err();
        assert_eq!(refused.code, ErrorCode::Overloaded);
        assert!(refused.retryable());
        assert!(
            refused.message.contains("100 of its 100 bytes"),
            "{}",
            refused.message
        );
        drop(first);
        assert_eq!(budget.in_flight(), 40);
        let _third = admit(&budget, 60).await.unwrap();
    }

    #[tokio::test]
    async fn writes_are_refused_as_overloaded_while_the_storage_stays_behind() {
        // Proves: while the storage says it is behind, a write that fits
        // the budget waits its `stall_wait` and is then refused as
        // OVERLOADED (not applied) with the reason, taking nothing of the
        // budget; once it has caught up, writes are admitted at once.
        use std::sync::atomic::Ordering;
        let wait = Duration::from_millis(100);
        let (budget, behind) = stalling(wait);
        let started = Instant::now();
        let refused = admit(&budget, 10).await.unwrap_err();
        assert!(
            started.elapsed() >= wait,
            "refused after {:?}",
            started.elapsed()
        );
        assert_eq!(refused.code, ErrorCode::Overloaded);
        assert!(
            refused.message.contains("L0 holds 8 tables"),
            "{}",
            refused.message
        );
        assert_eq!(budget.in_flight(), 0);
        behind.store(false, Ordering::Relaxed);
        let _permit = admit(&budget, 10).await.expect("admitted once caught up");
    }

    #[tokio::test]
    async fn a_write_waits_for_the_storage_to_catch_up_instead_of_being_refused() {
        // Proves: writes that arrive while the storage is behind are held,
        // not refused, and are admitted, all of them, once it catches up
        // within their wait.
        use std::sync::atomic::Ordering;
        let (budget, behind) = stalling(Duration::from_secs(10));
        let budget = Arc::new(budget);
        let writers: Vec<_> = (0..3)
            .map(|_| {
                let budget = budget.clone();
                tokio::spawn(async move { admit(&budget, 10).await.map(drop) })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(
            writers.iter().all(|w| !w.is_finished()),
            "held while behind"
        );
        behind.store(false, Ordering::Relaxed);
        for w in writers {
            let admitted = tokio::time::timeout(Duration::from_secs(1), w)
                .await
                .expect("admitted soon after the storage caught up")
                .unwrap();
            assert!(admitted.is_ok(), "{admitted:?}");
        }
    }

    #[tokio::test]
    async fn a_write_waits_for_the_storage_no_longer_than_half_its_time() {
        // Proves: the wait is cut at the limit the write's own time sets
        // (half of it: past that it would not be proposed anyway), however
        // long `stall_wait` is.
        let (budget, _behind) = stalling(Duration::from_secs(10));
        let started = Instant::now();
        let refused = budget
            .admit(10, started, Duration::from_millis(80))
            .await
            .unwrap_err();
        let took = started.elapsed();
        assert_eq!(refused.code, ErrorCode::Overloaded);
        assert!(
            took >= Duration::from_millis(80) && took < Duration::from_secs(2),
            "{took:?}"
        );
    }

    #[tokio::test]
    async fn a_write_larger_than_the_budget_is_admitted_alone() {
        // Proves: a write over the whole budget is not refused forever: it
        // takes all of it when nothing else is in flight, and only then.
        let budget = WriteBudget::new(100, 100);
        let small = admit(&budget, 1).await.unwrap();
        assert_eq!(
            admit(&budget, 500).await.unwrap_err().code,
            ErrorCode::Overloaded
        );
        drop(small);
        let large = admit(&budget, 500).await.unwrap();
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
