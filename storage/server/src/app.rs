//! One router for the node's single port: REST, the public gRPC services,
//! the internal raft transport, gRPC health and reflection.

use std::convert::Infallible;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, header};
use axum::response::{IntoResponse, Response};
use tonic::server::NamedService;
use tower::{Service, ServiceExt};

use crate::error::ApiError;

/// Mounts a tonic service at `/{package.Service}/*`.
pub fn with_grpc<S>(router: Router, svc: S) -> Router
where
    S: Service<Request<tonic::body::Body>, Error = Infallible>
        + NamedService
        + Clone
        + Send
        + Sync
        + 'static,
    S::Response: IntoResponse,
    S::Future: Send + 'static,
{
    router.route_service(
        &format!("/{}/{{*rest}}", S::NAME),
        svc.map_request(|req: Request<Body>| req.map(tonic::body::Body::new)),
    )
}

/// Unknown routes: a gRPC client gets UNIMPLEMENTED, anyone else a JSON 404.
pub async fn fallback(req: Request<Body>) -> Response {
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
