//! A write's deadline, counted from the moment the node took the request,
//! not from the moment it proposed the write.
//!
//! A write's time goes to receiving its body, parsing it, and only then to
//! replication. Counted from the proposal, a 16 MiB write on a busy node
//! could spend a second or two arriving and then the whole request timeout
//! replicating, and the gateway, whose per-try timeout (5 s) starts about
//! when the node takes the request, answered "outcome unknown" on its own
//! while the node was still working. Counted from arrival, the node always
//! answers first, and says what it knows:
//! - a write that used more than half its time before it could be proposed
//!   is refused, not proposed (`OVERLOADED`, safe to retry): proposed that
//!   late it would most likely end "outcome unknown";
//! - a write still arriving or being parsed when its time is up is
//!   answered the same way (its handler is dropped before it proposes);
//! - a write proposed and not confirmed by the deadline is answered
//!   `OUTCOME_UNKNOWN`, as before.
//!
//! A caller may give less time than the node's request timeout: gRPC's
//! `grpc-timeout`, or the gateway's `x-envoy-expected-rq-timeout-ms` (the
//! time Envoy will wait for this try); the node then keeps a margin below
//! it, so its answer reaches the caller before the caller gives up.

use std::cell::Cell;
use std::future::Future;
use std::time::Duration;

use axum::http::HeaderMap;
use tokio::time::Instant;

use crate::error::{ApiError, ErrorCode};

/// The gateway's header: how long it waits for this try, in milliseconds.
pub const ENVOY_EXPECTED_TIMEOUT_HEADER: &str = "x-envoy-expected-rq-timeout-ms";

/// How long past the deadline the node waits for a handler that has not
/// yet proposed before it answers for it (the core answers a proposed
/// write itself at the deadline).
pub const GRACE: Duration = Duration::from_millis(200);

/// The least margin kept below a deadline the caller gave.
const MIN_MARGIN: Duration = Duration::from_millis(100);

/// One write's clock, in its task.
#[derive(Debug)]
pub struct WriteClock {
    taken: Instant,
    budget: Duration,
    proposing: Cell<bool>,
}

tokio::task_local! {
    static WRITE: WriteClock;
}

impl WriteClock {
    pub fn deadline(&self) -> Instant {
        self.taken + self.budget
    }

    /// Whether the write used more than half its time before proposing.
    fn too_late_to_propose(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.taken) > self.budget / 2
    }
}

/// The time a write is given: the node's `request_timeout`, or less when
/// the caller said it will wait less (less a margin: a tenth of what it
/// gave, at least `MIN_MARGIN`, and the `GRACE`).
pub fn budget(headers: &HeaderMap, request_timeout: Duration) -> Duration {
    let given = [
        headers
            .get("grpc-timeout")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_grpc_timeout),
        headers
            .get(ENVOY_EXPECTED_TIMEOUT_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis),
    ];
    given
        .into_iter()
        .flatten()
        .map(|d| d.saturating_sub((d / 10).max(MIN_MARGIN) + GRACE))
        .fold(request_timeout, Duration::min)
}

/// Parses gRPC's `grpc-timeout` (`TimeoutValue TimeoutUnit`: at most eight
/// digits and one of H, M, S, m, u, n).
fn parse_grpc_timeout(v: &str) -> Option<Duration> {
    let (digits, unit) = v.split_at(v.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Runs the handling of one write, `handle`, with `budget` from `taken`
/// (when the node took it); if it has neither answered nor proposed by the
/// deadline (and `GRACE`), drops it and answers `not_applied`'s rendering
/// of the refusal.
pub async fn run<R>(
    taken: Instant,
    budget: Duration,
    handle: impl Future<Output = R>,
    not_applied: impl FnOnce(ApiError) -> R,
) -> R {
    let clock = WriteClock {
        taken,
        budget,
        proposing: Cell::new(false),
    };
    WRITE
        .scope(clock, async move {
            let deadline = WRITE.with(WriteClock::deadline) + GRACE;
            match tokio::time::timeout_at(deadline, handle).await {
                Ok(answer) => answer,
                Err(_) => {
                    let error = if WRITE.with(|c| c.proposing.get()) {
                        // Not reached: the core answers a proposed write at
                        // the deadline. Should it be, the truth is this.
                        ApiError::new(
                            ErrorCode::OutcomeUnknown,
                            "the write was proposed but not confirmed in time; it may or may \
                             not be applied",
                        )
                    } else {
                        ApiError::new(
                            ErrorCode::Overloaded,
                            format!(
                                "the write did not arrive and get read within its {budget:?}; \
                                 not applied, retry"
                            ),
                        )
                    };
                    not_applied(error)
                }
            }
        })
        .await
}

/// Called just before a write is handed to raft: refuses it if it used
/// more than half its time already, else marks it proposing and returns
/// its deadline. `None` outside a write's task (the caller then counts
/// the request timeout from now).
pub fn before_proposing() -> Option<Result<Instant, ApiError>> {
    WRITE
        .try_with(|clock| {
            let now = Instant::now();
            if clock.too_late_to_propose(now) {
                return Err(ApiError::new(
                    ErrorCode::Overloaded,
                    format!(
                        "the write took {:?} of its {:?} to arrive and be read, too late to \
                         replicate in time; not applied, retry",
                        now - clock.taken,
                        clock.budget
                    ),
                ));
            }
            clock.proposing.set(true);
            Ok(clock.deadline())
        })
        .ok()
}

/// What is left of the current write's time, if this is a write's task.
pub fn remaining() -> Option<Duration> {
    WRITE
        .try_with(|clock| clock.deadline().saturating_duration_since(Instant::now()))
        .ok()
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
    fn a_caller_that_waits_less_gets_less_and_a_margin() {
        let timeout = Duration::from_secs(4);
        assert_eq!(budget(&headers(&[]), timeout), timeout);
        assert_eq!(
            budget(&headers(&[("grpc-timeout", "10S")]), timeout),
            timeout,
            "a caller that waits longer changes nothing"
        );
        assert_eq!(
            budget(&headers(&[("grpc-timeout", "2000m")]), timeout),
            Duration::from_millis(2000 - 200 - 200)
        );
        assert_eq!(
            budget(
                &headers(&[
                    ("grpc-timeout", "3S"),
                    (ENVOY_EXPECTED_TIMEOUT_HEADER, "1000")
                ]),
                timeout
            ),
            Duration::from_millis(1000 - 100 - 200),
            "the smaller of the two"
        );
        assert_eq!(
            budget(&headers(&[("grpc-timeout", "100m")]), timeout),
            Duration::ZERO
        );
        for bad in ["", "S", "12", "123456789S", "1x", "-1S", "1.5S"] {
            assert_eq!(parse_grpc_timeout(bad), None, "{bad:?}");
        }
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_grpc_timeout("7n"), Some(Duration::from_nanos(7)));
    }

    #[tokio::test]
    async fn a_write_past_half_its_time_is_not_proposed_and_one_never_read_is_cut() {
        let budget = Duration::from_secs(1);
        let early = run(
            Instant::now(),
            budget,
            async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                before_proposing().expect("in a write's task")
            },
            Err,
        )
        .await;
        assert!(early.is_ok(), "proposed in time: {early:?}");
        let late = run(
            Instant::now(),
            budget,
            async {
                tokio::time::sleep(Duration::from_millis(700)).await;
                before_proposing().expect("in a write's task")
            },
            Err,
        )
        .await
        .expect_err("too late");
        assert_eq!(late.code, ErrorCode::Overloaded);
        let started = Instant::now();
        let cut = run(
            Instant::now(),
            budget,
            async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(())
            },
            Err,
        )
        .await
        .expect_err("cut");
        assert_eq!(cut.code, ErrorCode::Overloaded);
        let took = started.elapsed();
        assert!(
            took >= budget + GRACE && took < budget * 2,
            "cut after {took:?}"
        );
        assert!(before_proposing().is_none(), "outside a write's task");
    }

    #[tokio::test]
    async fn the_time_before_the_handling_counts() {
        // Proves: a write's clock runs from when the node took it, not from
        // when its handling starts: taken 600 ms before, with 1 s in all, it
        // is past half its time and is not proposed.
        let taken = Instant::now() - Duration::from_millis(600);
        let late = run(
            taken,
            Duration::from_secs(1),
            async { before_proposing().expect("in a write's task") },
            Err,
        )
        .await
        .expect_err("too late");
        assert_eq!(late.code, ErrorCode::Overloaded);
    }
}
