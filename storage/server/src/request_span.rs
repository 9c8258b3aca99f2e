//! One span per API request, continuing the caller's trace.
//!
//! The span is named after the request's route and takes the W3C
//! `traceparent` the caller sent (Envoy's tracer, a client, or a follower
//! forwarding to the leader) as its parent, so a request's spans on every
//! node join one trace. Its `trace_id` and `span_id` fields are recorded
//! when a trace is being kept, so every log line written inside the
//! request names them.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::global;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_http::HeaderExtractor;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tracing::Instrument;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::route::Route;

/// Middleware: serves the request inside its span.
pub async fn trace_request(req: Request, next: Next) -> Response {
    if Route::is_raft_transport(&req) {
        return next.run(req).await;
    }
    let route = Route::of(&req);
    let parent = global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(req.headers())));
    let span = tracing::info_span!(
        "request",
        otel.name = %route.name,
        otel.kind = "server",
        rpc.system = if route.protocol == crate::route::Protocol::grpc { "grpc" } else { "http" },
        trace_id = Empty,
        span_id = Empty,
    );
    // Fails only when no OpenTelemetry layer is installed: then there is no
    // trace to continue.
    let _ = span.set_parent(parent);
    let context = span.context();
    let ids = context.span().span_context().clone();
    if ids.is_valid() {
        span.record("trace_id", tracing::field::display(ids.trace_id()));
        span.record("span_id", tracing::field::display(ids.span_id()));
    }
    next.run(req).instrument(span).await
}

/// Writes the current span's trace context into `metadata` as
/// `traceparent`, for a call to another node.
pub fn inject_current(metadata: &mut MetadataMap) {
    let context = tracing::Span::current().context();
    if !context.span().span_context().is_valid() {
        return;
    }
    global::get_text_map_propagator(|p| {
        p.inject_context(&context, &mut MetadataInjector(metadata))
    });
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
