//! An OTLP/gRPC trace receiver, on the published `opentelemetry-proto`
//! service, that keeps every span it is sent: what a test needs to see the
//! spans Envoy and the nodes export, as a collector would get them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Result;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A span as received, with the resource it came from.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    /// The exporter's `service.name`.
    pub service: String,
    /// The exporter's `strata.node_id`, for a node.
    pub node_id: Option<i64>,
    pub span: Span,
}

impl ReceivedSpan {
    pub fn trace_id(&self) -> &[u8] {
        &self.span.trace_id
    }
}

/// The spans received, or only their number.
#[derive(Default, Clone)]
struct Store {
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
    count: Arc<AtomicU64>,
    keep: bool,
}

#[tonic::async_trait]
impl TraceService for Store {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let request = request.into_inner();
        let n: usize = request
            .resource_spans
            .iter()
            .flat_map(|rs| &rs.scope_spans)
            .map(|ss| ss.spans.len())
            .sum();
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        if !self.keep {
            return Ok(tonic::Response::new(ExportTraceServiceResponse::default()));
        }
        let mut kept = self.spans.lock();
        for rs in request.resource_spans {
            let attrs = rs.resource.map(|r| r.attributes).unwrap_or_default();
            let service = attrs
                .iter()
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                    Value::StringValue(s) => Some(s.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            let node_id =
                attrs
                    .iter()
                    .find(|kv| kv.key == "strata.node_id")
                    .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
                        Value::IntValue(i) => Some(*i),
                        _ => None,
                    });
            for ss in rs.scope_spans {
                for span in ss.spans {
                    kept.push(ReceivedSpan {
                        service: service.clone(),
                        node_id,
                        span,
                    });
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// A receiver listening on 127.0.0.1; it stops when dropped.
pub struct Receiver {
    addr: SocketAddr,
    store: Store,
    task: JoinHandle<()>,
}

impl Receiver {
    /// Starts listening on a free port of 127.0.0.1, keeping every span.
    pub async fn start() -> Result<Receiver> {
        Self::bind("127.0.0.1:0", true).await
    }

    /// Starts listening on `addr`; keeps the spans, or (`keep` false, as a
    /// sink for benchmarks) only counts them.
    pub async fn bind(addr: &str, keep: bool) -> Result<Receiver> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let store = Store {
            keep,
            ..Store::default()
        };
        let service = TraceServiceServer::new(store.clone());
        let task = tokio::spawn(async move {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            if let Err(e) = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(incoming)
                .await
            {
                eprintln!("OTLP receiver stopped: {e}");
            }
        });
        Ok(Receiver { addr, store, task })
    }

    /// `host:port` to give exporters.
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    /// Every span received so far (none when not keeping them).
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.store.spans.lock().clone()
    }

    /// How many spans were received.
    pub fn count(&self) -> u64 {
        self.store.count.load(Ordering::Relaxed)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}
