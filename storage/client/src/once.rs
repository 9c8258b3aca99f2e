//! Writes applied once: a client that gives each write a request id sends
//! it again with the same id until its outcome is known. The nodes answer
//! a retry of a write they applied with its first outcome and never apply
//! it twice, so every "outcome unknown" (DEADLINE_EXCEEDED, a connection
//! lost after the request went out, an intermediary's UNAVAILABLE) becomes
//! a definite answer. The id goes in the message's `request_id` field and
//! in the `x-strata-request-id` metadata, where the gateway sees it (and
//! retries such writes itself after an unknown outcome too).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tonic::metadata::MetadataValue;
use tonic::{Code, Request, Response, Status};

/// The metadata (and REST header) that carries a write's request id.
pub const REQUEST_ID_METADATA: &str = "x-strata-request-id";
/// How long a write is sent again before its last error is returned.
pub const RETRY_LIMIT: Duration = Duration::from_secs(30);
const FIRST_PAUSE: Duration = Duration::from_millis(20);
const LONGEST_PAUSE: Duration = Duration::from_secs(1);

/// Request ids unique to this client: a random prefix and a counter.
pub(crate) struct RequestIds {
    prefix: String,
    next: AtomicU64,
}

impl RequestIds {
    pub(crate) fn new() -> Self {
        let random = RandomState::new().hash_one(std::process::id());
        RequestIds {
            prefix: format!("{random:016x}"),
            next: AtomicU64::new(1),
        }
    }

    pub(crate) fn next(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n}", self.prefix)
    }
}

/// `message` as a request carrying `request_id` in its metadata too (none
/// when it is empty).
pub fn request<T>(message: T, request_id: &str) -> Request<T> {
    let mut req = Request::new(message);
    if let Ok(v) = MetadataValue::try_from(request_id)
        && !request_id.is_empty()
    {
        req.metadata_mut().insert(REQUEST_ID_METADATA, v);
    }
    req
}

/// Whether a write that ended with `status` may be sent again under its
/// request id: anything that leaves its outcome unknown or says it was not
/// applied, not an answer about the request itself.
pub fn worth_retrying(status: &Status) -> bool {
    match status.code() {
        Code::Unavailable
        | Code::DeadlineExceeded
        | Code::Cancelled
        | Code::Unknown
        | Code::Aborted => true,
        // An overloaded leader (marked), not a full disk.
        Code::ResourceExhausted => status
            .metadata()
            .get(crate::RETRYABLE_METADATA)
            .is_some_and(|v| v == "true"),
        _ => false,
    }
}

/// Whether `status` says for certain that its attempt applied nothing: a
/// node's own refusal, marked retryable (`UNAVAILABLE`, or an overloaded
/// leader's `RESOURCE_EXHAUSTED`). A transport failure is not certain: the
/// request may have gone out before the connection broke.
fn certainly_not_applied(status: &Status) -> bool {
    matches!(status.code(), Code::Unavailable | Code::ResourceExhausted)
        && status
            .metadata()
            .get(crate::RETRYABLE_METADATA)
            .is_some_and(|v| v == "true")
}

/// Sends the write `make` builds for `request_id` until it is answered,
/// or fails in a way a retry cannot mend, or [`RETRY_LIMIT`] passes.
///
/// Once an attempt has ended without a certain answer, the write may have
/// been applied by it, so a later attempt's failure, even a refusal that
/// says "not applied", says nothing of the write: the error returned is
/// then `DEADLINE_EXCEEDED`, the outcome unknown, naming the last failure.
pub async fn send<T, Fut>(
    request_id: String,
    make: impl Fn(String) -> Fut,
) -> Result<Response<T>, Status>
where
    Fut: std::future::Future<Output = Result<Response<T>, Status>>,
{
    let deadline = tokio::time::Instant::now() + RETRY_LIMIT;
    let mut pause = FIRST_PAUSE;
    let mut uncertain = false;
    loop {
        match make(request_id.clone()).await {
            Ok(r) => return Ok(r),
            Err(status) if worth_retrying(&status) && tokio::time::Instant::now() < deadline => {
                uncertain |= !certainly_not_applied(&status);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(LONGEST_PAUSE);
            }
            Err(status) if uncertain && status.code() != Code::DeadlineExceeded => {
                return Err(Status::deadline_exceeded(format!(
                    "outcome unknown: an earlier attempt of request id {request_id:?} may have \
                     been applied; the last attempt ended {:?}: {}",
                    status.code(),
                    status.message()
                )));
            }
            Err(status) => return Err(status),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_fit_a_header() {
        let (a, b) = (RequestIds::new(), RequestIds::new());
        let ids = [a.next(), a.next(), b.next()];
        assert_ne!(ids[0], ids[1]);
        assert_ne!(ids[0], ids[2], "two clients share a prefix");
        for id in &ids {
            assert!(id.len() <= 128 && id.bytes().all(|c| c.is_ascii_graphic()));
        }
        let req = request((), &ids[0]);
        assert_eq!(req.metadata().get(REQUEST_ID_METADATA).unwrap(), &ids[0]);
        assert!(
            request((), "")
                .metadata()
                .get(REQUEST_ID_METADATA)
                .is_none()
        );
    }

    #[tokio::test]
    async fn a_write_is_sent_again_under_its_id_until_answered() {
        // Proves: unknown outcomes are retried with the same id, an answer
        // about the request itself is not.
        let tries = std::sync::Mutex::new(Vec::new());
        let answer = send("id-1".to_string(), |id| {
            let n = {
                let mut t = tries.lock().unwrap();
                t.push(id);
                t.len()
            };
            async move {
                match n {
                    1 => Err(Status::deadline_exceeded("timed out")),
                    2 => Err(Status::unknown("connection reset")),
                    _ => Ok(Response::new(n)),
                }
            }
        })
        .await
        .unwrap();
        assert_eq!(answer.into_inner(), 3);
        assert_eq!(*tries.lock().unwrap(), vec!["id-1"; 3]);
        let refused = send("id-2".to_string(), |_| async {
            Err::<Response<()>, _>(Status::invalid_argument("id names another write"))
        })
        .await
        .unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument);
    }

    fn refused_here() -> Status {
        let mut s = Status::unavailable("no leader is known; retry shortly");
        s.metadata_mut()
            .insert(crate::RETRYABLE_METADATA, "true".parse().unwrap());
        s
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_after_an_uncertain_attempt_is_an_unknown_outcome() {
        // Proves: refusals alone end in the refusal (nothing was applied),
        // but once one attempt ended uncertain, the last refusal is
        // reported as an unknown outcome, not as "not applied".
        let refused = send("id-3".to_string(), |_| async {
            Err::<Response<()>, _>(refused_here())
        })
        .await
        .unwrap_err();
        assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
        let tries = std::sync::atomic::AtomicUsize::new(0);
        let unknown = send("id-4".to_string(), |_| {
            let n = tries.fetch_add(1, Ordering::Relaxed);
            async move {
                Err::<Response<()>, _>(if n == 0 {
                    Status::deadline_exceeded("timed out")
                } else {
                    refused_here()
                })
            }
        })
        .await
        .unwrap_err();
        assert_eq!(unknown.code(), Code::DeadlineExceeded, "{unknown:?}");
        assert!(
            unknown.message().contains("no leader is known"),
            "{unknown:?}"
        );
        assert!(tries.load(Ordering::Relaxed) > 2);
    }
}
