//! Logs and traces for the node binary.
//!
//! Logs: `tracing` events, one line each, as text or JSON
//! (`--log-format`), filtered by `STRATA_LOG` (else `RUST_LOG`, else
//! `info,raft=warn`). Every line written inside a request that belongs to
//! a trace carries the request span's `trace_id` and `span_id` fields
//! (`request_span`), whether or not the node exports.
//!
//! Traces: exported over OTLP/gRPC when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, with the standard `OTEL_*`
//! variables (`OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`,
//! `OTEL_TRACES_SAMPLER_ARG`, ...) read by the OpenTelemetry SDK. Without an
//! endpoint no OpenTelemetry layer is installed at all: spans stay plain
//! `tracing` spans and nothing is recorded for export. W3C `traceparent` is
//! the propagation format, as Envoy's tracer sends it.

use opentelemetry::global;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, with the fields of the spans it is in.
    Json,
}

/// The default filter: the node's own events at info, raft-rs's chatter
/// only when something is wrong.
const DEFAULT_FILTER: &str = "info,raft=warn";

/// Whatever must outlive the node for its spans to reach the collector.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// Whether the standard variables ask for trace export.
pub fn export_configured() -> bool {
    [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

fn filter() -> EnvFilter {
    filter_from(
        std::env::var("STRATA_LOG").ok(),
        std::env::var(EnvFilter::DEFAULT_ENV).ok(),
    )
}

/// The filter `STRATA_LOG` says, else the one `RUST_LOG` says, else the
/// default. A variable that is empty (as a container's environment may
/// leave one) or does not parse is passed over.
fn filter_from(strata_log: Option<String>, rust_log: Option<String>) -> EnvFilter {
    [strata_log, rust_log]
        .into_iter()
        .flatten()
        .filter(|v| !v.trim().is_empty())
        .find_map(|v| EnvFilter::try_new(v).ok())
        .unwrap_or_else(|| EnvFilter::new(DEFAULT_FILTER))
}

impl Telemetry {
    /// Installs the global subscriber (and, when configured, the OTLP
    /// exporter) for node `node_id`. Must run inside the Tokio runtime: the
    /// exporter's gRPC client lives there.
    pub fn init(format: LogFormat, node_id: u64) -> anyhow::Result<Telemetry> {
        let provider = if export_configured() {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .build()?;
            let resource = Resource::builder()
                .with_service_name(
                    std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| "strata-node".into()),
                )
                .with_attribute(opentelemetry::KeyValue::new(
                    "strata.node_id",
                    node_id as i64,
                ))
                .build();
            Some(
                SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(resource)
                    .build(),
            )
        } else {
            None
        };
        global::set_text_map_propagator(TraceContextPropagator::new());
        let otel = provider.as_ref().map(|p| {
            global::set_tracer_provider(p.clone());
            tracing_opentelemetry::layer().with_tracer(p.tracer("strata-node"))
        });
        let registry = tracing_subscriber::registry().with(filter()).with(otel);
        match format {
            LogFormat::Text => registry.with(tracing_subscriber::fmt::layer()).try_init()?,
            LogFormat::Json => registry
                .with(
                    tracing_subscriber::fmt::layer()
                        .json()
                        .with_current_span(true)
                        .with_span_list(true),
                )
                .try_init()?,
        }
        if provider.is_some() {
            tracing::info!("exporting traces over OTLP");
        }
        Ok(Telemetry { provider })
    }
}

impl Drop for Telemetry {
    /// Sends the spans still buffered before the process ends.
    fn drop(&mut self) {
        if let Some(p) = self.provider.take()
            && let Err(e) = p.shutdown()
        {
            eprintln!("flushing traces at exit failed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen(strata_log: Option<&str>, rust_log: Option<&str>) -> String {
        filter_from(strata_log.map(Into::into), rust_log.map(Into::into)).to_string()
    }

    // Proves the order the docs give: STRATA_LOG over RUST_LOG over the
    // default, an empty or unreadable variable passed over.
    #[test]
    fn strata_log_wins_then_rust_log_then_the_default() {
        assert_eq!(chosen(Some("warn"), Some("debug")), "warn");
        assert_eq!(chosen(None, Some("debug")), "debug");
        assert_eq!(chosen(Some(""), Some("debug")), "debug");
        assert_eq!(chosen(Some("=[bad"), Some("debug")), "debug");
        let default = EnvFilter::new(DEFAULT_FILTER).to_string();
        assert_eq!(chosen(None, None), default);
        assert_eq!(chosen(Some(" "), None), default);
    }
}
