//! The caller's credential for as long as its request is served, so that
//! a follower forwarding the request to the leader sends it along: the
//! leader checks the caller, not the follower.

use std::sync::Arc;

use axum::http::HeaderValue;

tokio::task_local! {
    static CREDENTIAL: Option<Arc<HeaderValue>>;
}

/// Runs `serve` with `credential` (the request's `authorization` header,
/// if any) as the one forwarded requests carry.
pub async fn scope<F: Future>(credential: Option<HeaderValue>, serve: F) -> F::Output {
    CREDENTIAL.scope(credential.map(Arc::new), serve).await
}

/// The `authorization` value of the request being served, if it had one.
pub fn current() -> Option<Arc<HeaderValue>> {
    CREDENTIAL.try_with(Clone::clone).ok().flatten()
}
