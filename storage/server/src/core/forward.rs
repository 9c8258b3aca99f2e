//! Forwarding a request from a follower to the leader: once, marked so the
//! leader never forwards it again, and with its outcome mapped so that
//! "not applied" and "outcome unknown" stay apart.

use std::future::Future;
use std::time::Duration;

use tonic::Code;
use tonic::transport::Channel;
use tracing::Instrument;

use super::Core;
use crate::error::{ApiError, ErrorCode};

/// Metadata key marking a request a follower forwarded to the leader.
pub const FORWARDED_HEADER: &str = "x-strata-forwarded";

impl Core {
    /// Sends `body` to the leader over `leader` with `call` (one RPC of a
    /// client made on the channel it is given), marked as forwarded, and
    /// maps a failure with [`forward_error`].
    pub(crate) async fn forward<T, R, F, Fut>(
        &self,
        leader: Channel,
        body: T,
        call: F,
    ) -> Result<R, ApiError>
    where
        F: FnOnce(Channel, tonic::Request<T>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<R>, tonic::Status>>,
    {
        // A write past half its time is refused here rather than sent on;
        // one sent on is the leader's to answer, and the leader is told
        // how long this node waits (`grpc-timeout`).
        let wait = match crate::deadline::before_proposing() {
            Some(deadline) => deadline?.saturating_duration_since(tokio::time::Instant::now()),
            None => self.timing.request_timeout() + Duration::from_millis(500),
        };
        self.forwarded.inc();
        let span = tracing::info_span!(
            "forward",
            otel.name = "forward to leader",
            otel.kind = "client"
        );
        async {
            call(leader, self.forward_request(body, wait))
                .await
                .map(tonic::Response::into_inner)
                .map_err(|s| forward_error(&s))
        }
        .instrument(span)
        .await
    }

    fn forward_request<T>(&self, body: T, wait: Duration) -> tonic::Request<T> {
        let mut req = tonic::Request::new(body);
        req.metadata_mut().insert(
            FORWARDED_HEADER,
            tonic::metadata::MetadataValue::from(self.id),
        );
        crate::request_span::inject_current(req.metadata_mut());
        // The leader checks the caller, not this node.
        if let Some(credential) = crate::auth::credential::current()
            && let Ok(value) = tonic::metadata::MetadataValue::try_from(credential.as_bytes())
        {
            req.metadata_mut().insert("authorization", value);
        }
        req.set_timeout(wait);
        req
    }
}

/// Maps the outcome of a forwarded write. A status the leader produced is
/// passed on as is. A transport failure is "not applied" only when the
/// connection was never made; otherwise the leader may have applied the
/// write, so the outcome is unknown.
fn forward_error(status: &tonic::Status) -> ApiError {
    let from_leader = status
        .metadata()
        .contains_key(crate::error::RETRYABLE_HEADER)
        || !matches!(
            status.code(),
            Code::Unavailable | Code::Unknown | Code::Cancelled | Code::Internal
        );
    if from_leader {
        return ApiError::from_status(status);
    }
    if never_connected(status) {
        return ApiError::unavailable(format!("the leader is unreachable: {}", status.message()));
    }
    ApiError::new(
        ErrorCode::OutcomeUnknown,
        format!(
            "the connection to the leader failed mid-request ({}); the write may or may not be applied",
            status.message()
        ),
    )
}

/// Whether a transport failure happened before any byte of the request left.
fn never_connected(status: &tonic::Status) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        let text = e.to_string().to_ascii_lowercase();
        if text.contains("tcp connect error")
            || text.contains("(connect)")
            || text.contains("connection refused")
        {
            return true;
        }
        source = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use strata_proto::v1::PutRequest;
    use strata_proto::v1::kv_client::KvClient;

    use super::*;
    use crate::error::RETRYABLE_HEADER;

    #[tokio::test]
    async fn refused_connection_to_the_leader_is_retryable() {
        // A port nothing listens on: the request never leaves this node.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
            .unwrap()
            .connect_lazy();
        let status = KvClient::new(channel)
            .put(PutRequest::default())
            .await
            .expect_err("nothing listens there");
        assert_eq!(
            forward_error(&status).code,
            ErrorCode::Unavailable,
            "{status:?}"
        );
    }

    #[test]
    fn broken_stream_to_the_leader_is_outcome_unknown() {
        let status = tonic::Status::unavailable("connection reset");
        assert_eq!(forward_error(&status).code, ErrorCode::OutcomeUnknown);
    }

    #[test]
    fn the_leaders_own_answers_pass_through() {
        let mut status = tonic::Status::unavailable("no leader");
        status.metadata_mut().insert(
            RETRYABLE_HEADER,
            tonic::metadata::MetadataValue::from_static("true"),
        );
        assert_eq!(forward_error(&status).code, ErrorCode::Unavailable);
        let invalid = tonic::Status::invalid_argument("empty key");
        assert_eq!(forward_error(&invalid).code, ErrorCode::InvalidArgument);
    }
}
