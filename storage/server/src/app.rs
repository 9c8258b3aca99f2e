//! One router for the node's single port: REST, the public gRPC services,
//! the internal raft transport, gRPC health and reflection.

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, header};
use axum::response::{IntoResponse, Response};
use envoy_types::pb::envoy::service::endpoint::v3::endpoint_discovery_service_server::EndpointDiscoveryServiceServer;
use strata_proto::v1::cluster_server::ClusterServer;
use strata_proto::v1::kv_server::KvServer;
use strata_proto::v1::lease_server::LeaseServer;
use strata_proto::v1::raft_server::RaftServer;
use tonic::server::NamedService;
use tower::{Service, ServiceExt};

use crate::admission::{self, WriteBudget};
use crate::auth::{self, Guard};
use crate::core::Core;
use crate::eds::EdsService;
use crate::error::ApiError;
use crate::grpc::cluster::ClusterService;
use crate::grpc::kv::KvService;
use crate::grpc::lease::LeaseService;
use crate::grpc::one_message::{OneMessage, Requests};
use crate::grpc::raft::RaftService;
use crate::metrics::track;
use crate::request_span::trace_request;
use crate::rest::{self, AppState};

/// Largest message of the internal raft transport (a batch of entries or a
/// snapshot chunk), either way.
const MAX_RAFT_MESSAGE_BYTES: usize = 64 << 20;

/// gRPC reflection for the public services (and health), so tools like
/// grpcurl need no `.proto` files. The internal raft service is not listed.
fn reflection() -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(strata_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .with_service_name("strata.v1.KV")
        .with_service_name("strata.v1.Cluster")
        .with_service_name("grpc.health.v1.Health")
}

/// The raft service alone, as the raft network threads serve it to peers'
/// control-lane connections (`peer_net`).
pub fn peer_router(raft: RaftService) -> Router {
    with_raft(Router::new(), raft)
}

/// Mounts the internal raft service on `router`, with its message limits.
fn with_raft(router: Router, raft: RaftService) -> Router {
    with_grpc(
        router,
        RaftServer::new(raft)
            .max_decoding_message_size(MAX_RAFT_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_RAFT_MESSAGE_BYTES),
        Requests::OneExcept(&["Stream", "InstallSnapshot"]),
    )
}

/// The node's budget of writes in flight (`crate::admission`), shared by
/// every front end that writes: REST and gRPC here, RESP (`crate::resp`).
pub fn write_budget(core: &Core) -> Arc<WriteBudget> {
    let limits = core.limits();
    let state_machine = core.peer().state_machine().clone();
    Arc::new(
        WriteBudget::new(limits.max_write_bytes_in_flight, limits.max_request_bytes)
            .stalling_while(
                Arc::new(move || state_machine.engine_behind()),
                Duration::from_millis(limits.write_stall_wait_ms),
            )
            .with_deadlines(core.timing().request_timeout()),
    )
}

/// The node's whole API on one router: REST, `strata.v1.KV` and
/// `strata.v1.Cluster` over the service core, the internal raft transport
/// `raft`, the gateway's endpoint discovery `eds` (internal too), gRPC
/// health and reflection, the console's bundle when `console_dir` names
/// one, and a fallback for anything else.
pub async fn router(
    state: AppState,
    raft: RaftService,
    eds: EdsService,
    console_dir: Option<&Path>,
    guard: Arc<Guard>,
    budget: Arc<WriteBudget>,
) -> anyhow::Result<Router> {
    let core = state.core.clone();
    let watches = state.watches.clone();
    let metrics = state.metrics.clone();
    let stats = state.stats.clone();
    let slow_requests = stats.slow_requests();
    let max_msg = core.limits().max_request_bytes;
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter.set_serving::<KvServer<KvService>>().await;
    let mut app = rest::router(state);
    app = with_grpc(
        app,
        KvServer::new(KvService::new(core.clone(), watches))
            .max_decoding_message_size(max_msg)
            .max_encoding_message_size(max_msg),
        Requests::One,
    );
    app = with_grpc(
        app,
        LeaseServer::new(LeaseService::new(core.clone())),
        Requests::OneExcept(&["KeepAlive"]),
    );
    app = with_grpc(
        app,
        ClusterServer::new(ClusterService::new(core, stats)),
        Requests::One,
    );
    app = with_raft(app, raft);
    app = with_grpc(app, EndpointDiscoveryServiceServer::new(eds), Requests::Any);
    app = with_grpc(app, health_service, Requests::One);
    app = with_grpc(app, reflection().build_v1()?, Requests::Any);
    app = with_grpc(app, reflection().build_v1alpha()?, Requests::Any);
    if let Some(dir) = console_dir {
        app = app.merge(crate::console::router(dir)?);
    }
    // A caller's role is checked first (`crate::auth`). A write the gateway
    // sends again under its request id is marked (`crate::retried`), so
    // that a refusal made anywhere after is answered as an unknown outcome.
    // Writes are then charged before anything reads their bodies, and given
    // their time from then (`crate::deadline`). Outside that,
    // every answer is counted and traced, a refusal's and the fallback's
    // included; the span encloses the counting.
    Ok(app
        .fallback(fallback)
        .layer(axum::middleware::from_fn_with_state(
            budget,
            admission::admit,
        ))
        .layer(axum::middleware::from_fn(crate::retried::mark))
        .layer(axum::middleware::from_fn_with_state(guard, auth::guard))
        .layer(axum::middleware::from_fn_with_state(metrics, track))
        .layer(axum::middleware::from_fn_with_state(
            slow_requests,
            trace_request,
        )))
}

/// Mounts a tonic service at `/{package.Service}/*`; methods that take one
/// request message refuse a call that carries more.
pub(crate) fn with_grpc<S, B: 'static>(router: Router, svc: S, requests: Requests) -> Router
where
    S: Service<Request<tonic::body::Body>, Response = http::Response<B>, Error = Infallible>
        + NamedService
        + Clone
        + Send
        + Sync
        + 'static,
    http::Response<B>: IntoResponse,
    S::Future: Send + 'static,
{
    router.route_service(
        &format!("/{}/{{*rest}}", S::NAME),
        svc.map_request(move |req: Request<Body>| {
            if requests.one_for(req.uri().path()) {
                req.map(|b| tonic::body::Body::new(OneMessage::new(b)))
            } else {
                req.map(tonic::body::Body::new)
            }
        })
        .map_response(malformed_request_is_invalid_argument),
    )
}

/// tonic answers a request body it cannot decode with INTERNAL; to the
/// client that is bad input, which the API reports as INVALID_ARGUMENT.
/// Only tonic's own decoding errors carry these messages.
fn malformed_request_is_invalid_argument<B>(mut resp: http::Response<B>) -> http::Response<B> {
    let headers = resp.headers_mut();
    let internal = headers.get("grpc-status").is_some_and(|v| v == "13");
    let decoding = headers
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|m| {
            m.starts_with("failed%20to%20decode")
                || m.starts_with("Unexpected%20EOF%20decoding%20stream")
                || m.starts_with("Missing%20request%20message")
                || m.contains("compressed-flag%20but%20no%20grpc-encoding")
        });
    if internal && decoding {
        headers.insert("grpc-status", http::HeaderValue::from_static("3"));
    }
    resp
}

/// Unknown routes: a gRPC client gets UNIMPLEMENTED, anyone else a JSON 404.
async fn fallback(req: Request<Body>) -> Response {
    let is_grpc = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/grpc"));
    if is_grpc {
        return tonic::Status::unimplemented(format!("no such method: {}", req.uri().path()))
            .into_http::<Body>()
            .into_response();
    }
    ApiError::not_found(format!(
        "no route for {} {}",
        req.method(),
        req.uri().path()
    ))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grpc_error(status: &str, message: &'static str) -> http::Response<()> {
        let mut r = http::Response::new(());
        r.headers_mut()
            .insert("grpc-status", http::HeaderValue::from_str(status).unwrap());
        r.headers_mut()
            .insert("grpc-message", http::HeaderValue::from_static(message));
        r
    }

    #[test]
    fn undecodable_requests_become_invalid_argument_and_nothing_else_changes() {
        let r = malformed_request_is_invalid_argument(grpc_error(
            "13",
            "failed%20to%20decode%20Protobuf%20message",
        ));
        assert_eq!(r.headers()["grpc-status"], "3");
        let r = malformed_request_is_invalid_argument(grpc_error(
            "13",
            "Unexpected%20EOF%20decoding%20stream.",
        ));
        assert_eq!(r.headers()["grpc-status"], "3", "a truncated stream");
        let r =
            malformed_request_is_invalid_argument(grpc_error("13", "Missing%20request%20message."));
        assert_eq!(r.headers()["grpc-status"], "3", "an empty body");
        let r = malformed_request_is_invalid_argument(grpc_error("13", "storage%20failed"));
        assert_eq!(
            r.headers()["grpc-status"],
            "13",
            "our own INTERNAL errors stay INTERNAL"
        );
        let r = malformed_request_is_invalid_argument(grpc_error("14", "failed%20to%20decode"));
        assert_eq!(r.headers()["grpc-status"], "14");
    }
}
