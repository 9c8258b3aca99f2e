//! An OTLP/gRPC trace receiver, on the published `opentelemetry-proto`
//! service, that keeps every span it is sent: what a test needs to see the
//! spans Envoy and the nodes export, as a collector would get them.

use std::net::SocketAddr;
use std::sync::Arc;

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

#[derive(Default, Clone)]
struct Store(Arc<Mutex<Vec<ReceivedSpan>>>);

#[tonic::async_trait]
impl TraceService for Store {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut kept = self.0.lock();
        for rs in request.into_inner().resource_spans {
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
    /// Starts listening on a free port.
    pub async fn start() -> Result<Receiver> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let store = Store::default();
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

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.store.0.lock().clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}
