//! One span per API request, continuing the caller's trace. (Not for the
//! raft transport, health probes, nor the gateway's endpoint discovery.)
//!
//! The span is named after the request's route and takes the W3C
//! `traceparent` the caller sent (Envoy's tracer, a client, or a follower
//! forwarding to the leader) as its parent, so a request's spans on every
//! node join one trace. Its `trace_id` and `span_id` fields are recorded
//! whenever the request belongs to a trace, so every log line written
//! inside the request names them: the exported span's ids when the node
//! exports traces, else the caller's trace id and a span id of the node's
//! own, which a forward to the leader passes on, so the leader's lines name
//! the same trace. A request that arrives without a `traceparent` on a node
//! that does not export belongs to no trace and its lines carry no ids.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, TraceContextExt};
use opentelemetry_http::HeaderExtractor;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tracing::Instrument;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::route::Route;
use crate::slow_requests::{Answered, SlowRequests};

tokio::task_local! {
    /// The trace context of the request being served when no OpenTelemetry
    /// layer records its span (the node does not export): the caller's
    /// trace id and the span id this node gave the request.
    static UNEXPORTED: SpanContext;
}

/// Middleware: serves the request inside its span, and notes it in `slow`
/// if it took the node's slow-request threshold.
pub async fn trace_request(
    State(slow): State<Arc<SlowRequests>>,
    req: Request,
    next: Next,
) -> Response {
    // Nor is the gateway's endpoint discovery: one stream per Envoy, open
    // as long as the node runs, would be one span as long.
    if Route::is_raft_transport(&req)
        || Route::is_health_probe(&req)
        || req.uri().path().starts_with(crate::eds::PATH)
    {
        return next.run(req).await;
    }
    let route = Route::of(&req);
    // Only API calls are kept among the slow requests, not the console's
    // files or a scrape.
    let slow = Route::is_api_call(&req).then_some(slow);
    // W3C trace context is the one format spoken, whether or not the node
    // exports: read with the propagator itself, not the global one, which
    // is whatever the process installed.
    let parent = TraceContextPropagator::new().extract(&HeaderExtractor(req.headers()));
    let span = tracing::info_span!(
        "request",
        otel.name = %route.name,
        otel.kind = "server",
        rpc.system = if route.protocol == crate::route::Protocol::grpc { "grpc" } else { "http" },
        trace_id = Empty,
        span_id = Empty,
    );
    // Fails only when no OpenTelemetry layer is installed.
    let _ = span.set_parent(parent.clone());
    let exported = span.context().span().span_context().clone();
    if exported.is_valid() {
        record_ids(&span, &exported);
        return serve(req, next, span, Served::new(route, slow, exported)).await;
    }
    let caller = parent.span().span_context().clone();
    if !caller.is_valid() {
        return serve(req, next, span, Served::new(route, slow, caller)).await;
    }
    let own = SpanContext::new(
        caller.trace_id(),
        RandomIdGenerator::default().new_span_id(),
        caller.trace_flags(),
        false,
        caller.trace_state().clone(),
    );
    record_ids(&span, &own);
    let served = Served::new(route, slow, own.clone());
    UNEXPORTED.scope(own, serve(req, next, span, served)).await
}

/// What is noted of a request once answered, besides its answer.
struct Served {
    route: Route,
    /// Where to note the request if it was slow (`None`: not an API call).
    slow: Option<Arc<SlowRequests>>,
    /// The trace it belongs to (invalid when none).
    trace: SpanContext,
}

impl Served {
    fn new(route: Route, slow: Option<Arc<SlowRequests>>, trace: SpanContext) -> Self {
        Served { route, slow, trace }
    }
}

fn record_ids(span: &tracing::Span, ids: &SpanContext) {
    span.record("trace_id", tracing::field::display(ids.trace_id()));
    span.record("span_id", tracing::field::display(ids.span_id()));
}

/// Runs the rest of the stack inside `span`, says at debug level, in the
/// span, how the request was answered (an access log for whoever turns it
/// on: `STRATA_LOG=info,strata_server::request_span=debug`), and notes it
/// among the slow requests if it was.
async fn serve(req: Request, next: Next, span: tracing::Span, served: Served) -> Response {
    let started = Instant::now();
    let response = next.run(req).instrument(span.clone()).await;
    let elapsed = started.elapsed();
    let grpc_status = response
        .headers()
        .get("grpc-status")
        .and_then(|v| v.to_str().ok());
    span.in_scope(|| {
        tracing::debug!(
            status = response.status().as_u16(),
            grpc_status,
            elapsed_us = elapsed.as_micros() as u64,
            "request answered"
        )
    });
    if let Some(slow) = &served.slow {
        slow.note(Answered {
            route: &served.route,
            status: response.status().as_u16(),
            grpc_status,
            elapsed,
            trace: Some(&served.trace),
        });
    }
    response
}

/// Writes the current request's trace context into `metadata` as
/// `traceparent`, for a call to another node: the current span's when the
/// node exports, else the one the request was given without export.
pub fn inject_current(metadata: &mut MetadataMap) {
    let mut context = tracing::Span::current().context();
    if !context.span().span_context().is_valid() {
        let Ok(own) = UNEXPORTED.try_with(SpanContext::clone) else {
            return;
        };
        context = opentelemetry::Context::new().with_remote_span_context(own);
    }
    TraceContextPropagator::new().inject_context(&context, &mut MetadataInjector(metadata));
}

/// Writes propagation headers into gRPC metadata.
struct MetadataInjector<'a>(&'a mut MetadataMap);

impl opentelemetry::propagation::Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            MetadataKey::from_bytes(key.as_bytes()),
            MetadataValue::try_from(value.as_str()),
        ) {
            self.0.insert(key, value);
        }
    }
}
