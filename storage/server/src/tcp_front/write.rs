//! How the protocol front ends run a write they have read whole: admitted
//! as a REST or gRPC write is (its bytes charged to the node's budget,
//! held while the storage is behind), given the node's request time from
//! when it was read, and run with the caller's credential in scope (a
//! follower forwarding it to the leader sends it along).

use std::future::Future;

use axum::http::{HeaderMap, HeaderValue};
use tokio::time::Instant;

use crate::admission::WriteBudget;
use crate::auth::credential;
use crate::core::Core;
use crate::deadline;
use crate::error::ApiError;

pub async fn admitted<T>(
    core: &Core,
    budget: &WriteBudget,
    headers: &HeaderMap,
    bytes: usize,
    credential: Option<HeaderValue>,
    write: impl Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    let taken = Instant::now();
    let time = deadline::budget(headers, core.request_timeout());
    let _permit = budget.admit(bytes, taken, time / 2).await?;
    let run = credential::scope(credential, write);
    deadline::run(taken, time, run, Err).await
}
