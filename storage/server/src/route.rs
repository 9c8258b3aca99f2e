//! The name of a request's route, shared by metrics labels and span names.
//!
//! Routes are named by their template (`PUT /v1/kv/{key}`) or gRPC method
//! (`/strata.v1.KV/Put`), never by a client's raw path, so a client cannot
//! make the set of names grow: a request no route matched is `unmatched`.

use axum::extract::{MatchedPath, Request};
use axum::http::header;
use prometheus_client::encoding::EncodeLabelValue;

/// Which front end took a request.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum Protocol {
    rest,
    grpc,
}

/// What a request is, before it is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub protocol: Protocol,
    pub name: String,
}

/// The prefix of the internal raft transport's methods, which are neither
/// counted nor traced as API requests.
pub const RAFT_TRANSPORT: &str = "/strata.v1.Raft/";

impl Route {
    /// The route of `req`, read once the router matched it.
    pub fn of(req: &Request) -> Route {
        let grpc = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/grpc"));
        let matched = req.extensions().get::<MatchedPath>();
        let name = match (grpc, matched) {
            (true, Some(_)) => req.uri().path().to_string(),
            // The documented template: `/v1/kv/{key}`, not the router's
            // `/v1/kv/{*key}`.
            (false, Some(p)) => format!("{} {}", req.method(), p.as_str().replace("{*", "{")),
            (_, None) => UNMATCHED.to_string(),
        };
        let protocol = if grpc { Protocol::grpc } else { Protocol::rest };
        Route { protocol, name }
    }

    /// Whether `req` belongs to the internal raft transport.
    pub fn is_raft_transport(req: &Request) -> bool {
        req.uri().path().starts_with(RAFT_TRANSPORT)
    }

    /// Whether `req` calls the API: a gRPC method or a REST route under
    /// `/v1/`, not the console's files, `/metrics` or `/openapi.json`.
    pub fn is_api_call(req: &Request) -> bool {
        let path = req.uri().path();
        path.starts_with("/v1/")
            || (path.starts_with("/strata.") && !path.starts_with(RAFT_TRANSPORT))
    }

    /// Whether `req` is a health probe (`/health/…`, gRPC health): Envoy
    /// sends several a second to every node, which are counted but not
    /// traced, or they would bury the requests in a trace viewer.
    pub fn is_health_probe(req: &Request) -> bool {
        let path = req.uri().path();
        path.starts_with(HEALTH) || path.starts_with(GRPC_HEALTH)
    }
}

/// The prefixes of the health probes' paths, REST and gRPC.
const HEALTH: &str = "/health/";
const GRPC_HEALTH: &str = "/grpc.health.v1.Health/";

/// The name of a request no route matched.
pub const UNMATCHED: &str = "unmatched";
