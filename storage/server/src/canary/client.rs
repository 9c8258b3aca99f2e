//! The canary's operations, made on the node's service core exactly as the
//! REST and gRPC handlers make a client's after parsing: validated, routed,
//! forwarded once to the leader from a follower, reads linearizable.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use strata_proto::v1::{
    BatchOp, BatchRequest, CompareAndSwapRequest, Consistency, DeleteOp, GetRequest, PutRequest,
    batch_op,
};

use super::model::{self, Op, Ret};
use crate::core::{Core, Hop};
use crate::error::{ApiError, ErrorCode};

/// How an operation ended, as far as the history is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Answered(Ret),
    /// Certainly took no effect: left out of the history.
    NotApplied,
    /// May take effect at any point after its invocation, or never.
    Unknown,
}

/// The canary's way into the service core.
pub struct Client {
    core: Arc<Core>,
    /// Past this an operation's outcome is unknown, whatever the core is
    /// still waiting for.
    timeout: Duration,
}

impl Client {
    pub fn new(core: Arc<Core>) -> Self {
        // The core answers by its own request timeout; a forwarded request
        // may take a little longer to come back.
        let timeout = core.request_timeout() * 2;
        Client { core, timeout }
    }

    /// Makes `op` on `key`.
    pub async fn call(&self, key: &[u8], op: Op) -> Outcome {
        // Forwarded to the leader, the operation carries the node's own
        // token, as a client's carries the client's.
        let answer =
            crate::auth::credential::scope(self.core.own_credential(), self.answer(key, op));
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok(ret)) => Outcome::Answered(ret),
            Ok(Err(e)) if op == Op::Read => {
                // A read that failed had no effect, whatever the reason.
                tracing::debug!(error = %e.message, "canary read failed");
                Outcome::NotApplied
            }
            Ok(Err(e)) => classify(&e),
            Err(_) if op == Op::Read => Outcome::NotApplied,
            Err(_) => Outcome::Unknown,
        }
    }

    async fn answer(&self, key: &[u8], op: Op) -> Result<Ret, ApiError> {
        let key = Bytes::copy_from_slice(key);
        match op {
            Op::Read => {
                let req = GetRequest {
                    key,
                    consistency: Consistency::Linearizable as i32,
                };
                let resp = self.core.get(req).await?;
                let value = resp.found.then(|| model::decode(&resp.value));
                Ok(Ret::Value { value })
            }
            Op::Write { value } => {
                let req = PutRequest {
                    key,
                    value: Bytes::from(model::encode(value)),
                    ..PutRequest::default()
                };
                self.core.put(req, Hop::Client).await?;
                Ok(Ret::Written)
            }
            Op::Cas { expected, value } => {
                let req = CompareAndSwapRequest {
                    key,
                    expected: expected.map(|v| Bytes::from(model::encode(v))),
                    value: Some(Bytes::from(model::encode(value))),
                    request_id: String::new(),
                };
                let resp = self.core.compare_and_swap(req, Hop::Client).await?;
                Ok(Ret::Cas {
                    succeeded: resp.succeeded,
                    previous: resp.current.map(|v| model::decode(&v)),
                })
            }
        }
    }

    /// Deletes `keys` in one batch, so a finished window leaves nothing
    /// behind; a failure only leaves them (they are reserved and small).
    pub async fn delete(&self, keys: Vec<Vec<u8>>) {
        let ops = keys
            .into_iter()
            .map(|key| BatchOp {
                op: Some(batch_op::Op::Delete(DeleteOp { key: key.into() })),
            })
            .collect();
        let batch = crate::auth::credential::scope(
            self.core.own_credential(),
            self.core.batch(
                BatchRequest {
                    ops,
                    ..Default::default()
                },
                Hop::Client,
            ),
        );
        match tokio::time::timeout(self.timeout, batch).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::debug!(error = %e.message, "deleting canary keys failed"),
            Err(_) => tracing::debug!("deleting canary keys timed out"),
        }
    }
}

/// A write's failure, by whether it can have taken effect. `Unavailable`
/// and `Overloaded` always mean nothing was applied, and a request refused
/// as malformed never reached raft; anything else may have been applied.
fn classify(e: &ApiError) -> Outcome {
    match e.code {
        ErrorCode::Unavailable
        | ErrorCode::Overloaded
        | ErrorCode::InvalidArgument
        | ErrorCode::NotFound
        | ErrorCode::AlreadyExists
        | ErrorCode::MethodNotAllowed
        | ErrorCode::PayloadTooLarge
        | ErrorCode::UnsupportedMediaType
        | ErrorCode::PageTokenExpired
        | ErrorCode::Compacted
        | ErrorCode::Unauthenticated
        | ErrorCode::PermissionDenied => Outcome::NotApplied,
        ErrorCode::OutcomeUnknown
        | ErrorCode::StorageFull
        | ErrorCode::StorageFailed
        | ErrorCode::Internal => Outcome::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_failure_is_not_applied_and_timeout_is_unknown() {
        assert_eq!(
            classify(&ApiError::unavailable("no leader")),
            Outcome::NotApplied
        );
        assert_eq!(
            classify(&ApiError::new(ErrorCode::OutcomeUnknown, "timed out")),
            Outcome::Unknown
        );
        assert_eq!(
            classify(&ApiError::new(ErrorCode::StorageFailed, "fsync")),
            Outcome::Unknown
        );
    }
}
