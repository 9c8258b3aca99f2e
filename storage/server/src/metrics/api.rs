//! The API's own counters: requests by route and outcome, their latency,
//! those in flight, and writes a follower forwarded to the leader.
//!
//! Routes are labelled as `crate::route` names them, so a client cannot
//! make the label set grow. The internal raft transport is not counted
//! here; the raft families cover it.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use super::NodeMetrics;
use crate::route::{Protocol, Route, UNMATCHED};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub protocol: Protocol,
    pub route: String,
    /// The HTTP status for REST, the gRPC status name for gRPC.
    pub code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub protocol: Protocol,
    pub route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProtocolLabels {
    pub protocol: Protocol,
}

type Latency = Family<RouteLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 100 µs to about 26 s.
    Histogram::new(exponential_buckets(100e-6, 2.0, 19))
}

/// The API families.
#[derive(Clone, Debug)]
pub struct ApiMetrics {
    requests: Family<RequestLabels, Counter>,
    latency: Latency,
    in_flight: Family<ProtocolLabels, Gauge>,
    /// Writes and linearizable reads a follower sent on to the leader.
    pub forwarded: Counter,
}

impl Default for ApiMetrics {
    fn default() -> Self {
        ApiMetrics {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            in_flight: Family::default(),
            forwarded: Counter::default(),
        }
    }
}

impl ApiMetrics {
    pub(super) fn register(&self, registry: &mut Registry) {
        registry.register(
            "requests",
            "Requests answered, by protocol, route and outcome code",
            self.requests.clone(),
        );
        registry.register_with_unit(
            "request_duration",
            "Time from a request's arrival to its answer's head",
            Unit::Seconds,
            self.latency.clone(),
        );
        registry.register(
            "requests_in_flight",
            "Requests taken and not yet answered",
            self.in_flight.clone(),
        );
        registry.register(
            "forwarded",
            "Requests a follower sent on to the leader",
            self.forwarded.clone(),
        );
    }
}

/// Lowers the in-flight gauge when the request ends, answered or dropped.
struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Middleware counting every API request (see the module's notes).
pub async fn track(State(metrics): State<Arc<NodeMetrics>>, req: Request, next: Next) -> Response {
    if Route::is_raft_transport(&req) {
        return next.run(req).await;
    }
    let Route {
        protocol,
        name: route,
    } = Route::of(&req);
    let grpc = protocol == Protocol::grpc;
    let api = &metrics.api;
    let gauge = api
        .in_flight
        .get_or_create_owned(&ProtocolLabels { protocol });
    gauge.inc();
    let _in_flight = InFlight(gauge);
    let started = Instant::now();
    let response = next.run(req).await;
    let elapsed = started.elapsed().as_secs_f64();
    let (route, code) = if grpc {
        grpc_outcome(&response, route)
    } else {
        (route, response.status().as_u16().to_string())
    };
    api.latency
        .get_or_create(&RouteLabels {
            protocol,
            route: route.clone(),
        })
        .observe(elapsed);
    api.requests
        .get_or_create(&RequestLabels {
            protocol,
            route,
            code,
        })
        .inc();
    response
}

/// The gRPC status name of `response` (a status in the head means a call
/// that failed before any message, as tonic answers errors; none means OK,
/// with the status in the trailers), and the route to count it under: a
/// method the service does not have counts as `unmatched`.
fn grpc_outcome(response: &Response, route: String) -> (String, String) {
    let code = response
        .headers()
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i32>().ok())
        .map_or(tonic::Code::Ok, tonic::Code::from);
    let route = if code == tonic::Code::Unimplemented {
        UNMATCHED.to_string()
    } else {
        route
    };
    (route, format!("{code:?}"))
}
