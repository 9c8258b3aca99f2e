//! A write the gateway sends again under its request id.
//!
//! The gateway retries a write that carries `x-strata-request-id` after an
//! attempt whose outcome it does not know (a reset after the request went
//! out, a 504, its own per-try timeout), and numbers the attempts in
//! `x-envoy-attempt-count`. Such an attempt may have been applied: its
//! entry can sit in an isolated leader's log and commit once the partition
//! heals. A later attempt that this node refuses without proposing it (no
//! leader known, not the leader, stopping, overloaded, a storage failure)
//! proves only that *this* attempt applied nothing; answered as it stands
//! (503 "retry"), it would tell the client the write was not applied. So
//! for such an attempt every refusal that means "not applied" is answered
//! `OUTCOME_UNKNOWN` instead, which the gateway retries under the same id
//! and the client resends to learn the outcome (a replay of the first
//! attempt's answer, or the write applied now).
//!
//! The middleware marks the request's task; the error's rendering
//! ([`settle`], called by both protocols' conversions) does the rest, so a
//! refusal made anywhere inside (admission, routing, forwarding, raft) is
//! covered.

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;

use crate::error::{ApiError, ErrorCode};
use crate::rest::kv::REQUEST_ID_HEADER;

/// The gateway's number of this attempt, 1 for the first.
pub const ATTEMPT_COUNT_HEADER: &str = "x-envoy-attempt-count";

/// A write sent again under its request id.
#[derive(Debug, Clone)]
struct Retry {
    request_id: String,
    attempt: u32,
}

tokio::task_local! {
    static RETRY: Retry;
}

/// The retry `headers` describe: a request id and an attempt count above 1.
fn retry_of(headers: &HeaderMap) -> Option<Retry> {
    let request_id = headers.get(REQUEST_ID_HEADER)?.to_str().ok()?;
    let attempt: u32 = headers
        .get(ATTEMPT_COUNT_HEADER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (attempt > 1 && !request_id.is_empty()).then(|| Retry {
        request_id: request_id.to_string(),
        attempt,
    })
}

/// Middleware: runs a retried write's handling marked as such.
pub async fn mark(req: Request, next: Next) -> Response {
    match retry_of(req.headers()) {
        Some(retry) => RETRY.scope(retry, next.run(req)).await,
        None => next.run(req).await,
    }
}

/// Whether `code` refuses a request without applying it, for reasons of
/// this node's state rather than of the request: what a retry may get
/// although an earlier attempt was applied.
fn not_applied_here(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::Unavailable
            | ErrorCode::Overloaded
            | ErrorCode::StorageFull
            | ErrorCode::StorageFailed
    )
}

/// `error` as the answer to the current request: for a retried write, a
/// refusal that says "not applied" becomes `OUTCOME_UNKNOWN`, because an
/// earlier attempt may have been applied.
pub fn settle(error: ApiError) -> ApiError {
    if !not_applied_here(error.code) {
        return error;
    }
    match RETRY.try_with(Retry::clone) {
        Ok(retry) => unknown_after(error, &retry),
        Err(_) => error,
    }
}

fn unknown_after(refusal: ApiError, retry: &Retry) -> ApiError {
    ApiError {
        code: ErrorCode::OutcomeUnknown,
        message: format!(
            "attempt {} of request id {:?} was refused here ({}: {}), but an earlier attempt \
             may have been applied: the outcome is unknown; send the write again under the same \
             id to learn it",
            retry.attempt,
            retry.request_id,
            refusal.code.as_str(),
            refusal.message
        ),
        ..refusal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_a_second_or_later_attempt_with_a_request_id_is_a_retry() {
        let id = (REQUEST_ID_HEADER, "w-1");
        assert!(retry_of(&headers(&[id, (ATTEMPT_COUNT_HEADER, "2")])).is_some());
        assert_eq!(
            retry_of(&headers(&[id, (ATTEMPT_COUNT_HEADER, "12")]))
                .unwrap()
                .attempt,
            12
        );
        for not in [
            headers(&[id]),
            headers(&[id, (ATTEMPT_COUNT_HEADER, "1")]),
            headers(&[id, (ATTEMPT_COUNT_HEADER, "two")]),
            headers(&[(ATTEMPT_COUNT_HEADER, "3")]),
            headers(&[(REQUEST_ID_HEADER, ""), (ATTEMPT_COUNT_HEADER, "3")]),
        ] {
            assert!(retry_of(&not).is_none(), "{not:?}");
        }
    }

    #[tokio::test]
    async fn a_retry_refused_here_is_an_unknown_outcome_and_nothing_else_changes() {
        let retry = Retry {
            request_id: "w-1".into(),
            attempt: 2,
        };
        let refusals = [
            ApiError::unavailable("no leader is known; retry shortly").with_leader(3, None),
            ApiError::new(ErrorCode::Overloaded, "busy"),
            ApiError::new(ErrorCode::StorageFull, "full"),
            ApiError::new(ErrorCode::StorageFailed, "failed"),
        ];
        let answers = [
            ApiError::invalid("bad key"),
            ApiError::not_found("no such key"),
            ApiError::new(ErrorCode::PermissionDenied, "read role"),
            ApiError::new(ErrorCode::OutcomeUnknown, "timed out"),
        ];
        RETRY
            .scope(retry, async {
                for e in refusals.clone() {
                    let settled = settle(e.clone());
                    assert_eq!(settled.code, ErrorCode::OutcomeUnknown, "{e}");
                    assert!(settled.message.contains("w-1"), "{settled}");
                    assert!(settled.message.contains(&e.message), "{settled}");
                    assert_eq!(settled.leader_id, e.leader_id);
                }
                for e in answers.clone() {
                    assert_eq!(settle(e.clone()).code, e.code, "{e}");
                }
            })
            .await;
        for e in refusals {
            assert_eq!(settle(e.clone()).code, e.code, "outside a retry: {e}");
        }
    }
}
