//! The `envoy.service.endpoint.v3.EndpointDiscoveryService` a node serves
//! on its one port: `StreamEndpoints` (state of the world, what the
//! gateway's member clusters subscribe with) and `FetchEndpoints` (one
//! answer, for a look by hand); the delta protocol is not served.

use std::pin::Pin;
use std::sync::Arc;

use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse,
};
use envoy_types::pb::envoy::service::endpoint::v3::endpoint_discovery_service_server::EndpointDiscoveryService;
use futures::Stream;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::assignment::{Endpoints, type_url};
use super::stream::Subscription;

type Responses<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// Responses a stream may hold unsent; Envoy reads each at once, and a
/// newer one supersedes the older anyway.
const STREAM_BUFFER: usize = 4;

/// The service over the endpoints `source` keeps current.
#[derive(Clone)]
pub struct EdsService {
    endpoints: watch::Receiver<Arc<Endpoints>>,
    stopping: watch::Receiver<bool>,
}

impl EdsService {
    /// Streams end when `stopping` turns true, so that a node's graceful
    /// stop does not wait for them (Envoy then asks another node).
    pub fn new(
        endpoints: watch::Receiver<Arc<Endpoints>>,
        stopping: watch::Receiver<bool>,
    ) -> Self {
        EdsService {
            endpoints,
            stopping,
        }
    }

    /// The endpoints as of now, unless this node cannot vouch for them.
    fn current(&self) -> Result<Arc<Endpoints>, Status> {
        let current = self.endpoints.borrow().clone();
        match &current.refusal {
            Some(why) => Err(Status::unavailable(why.clone())),
            None => Ok(current),
        }
    }
}

#[tonic::async_trait]
impl EndpointDiscoveryService for EdsService {
    type StreamEndpointsStream = Responses<DiscoveryResponse>;
    type DeltaEndpointsStream = Responses<DeltaDiscoveryResponse>;

    async fn stream_endpoints(
        &self,
        request: Request<Streaming<DiscoveryRequest>>,
    ) -> Result<Response<Self::StreamEndpointsStream>, Status> {
        self.current()?;
        let mut incoming = request.into_inner();
        let mut endpoints = self.endpoints.clone();
        let mut stopping = self.stopping.clone();
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        tokio::spawn(async move {
            let mut sub = Subscription::default();
            loop {
                tokio::select! {
                    message = incoming.message() => match message {
                        Ok(Some(req)) => {
                            if let Err(e) = sub.on_request(&req) {
                                let _ = tx.send(Err(Status::invalid_argument(e.to_string()))).await;
                                return;
                            }
                        }
                        // The client went away.
                        Ok(None) => return,
                        Err(status) => {
                            tracing::debug!(%status, "EDS stream ended by the client");
                            return;
                        }
                    },
                    changed = endpoints.changed() => {
                        if changed.is_err() {
                            return;
                        }
                    }
                    _ = stopping.changed() => return,
                    _ = tx.closed() => return,
                }
                // Read after every step, so that an answer crossing a
                // change is never the last word.
                let current = endpoints.borrow_and_update().clone();
                if let Some(why) = &current.refusal {
                    let _ = tx.send(Err(Status::unavailable(why.clone()))).await;
                    return;
                }
                if let Some(resp) = sub.response(&current)
                    && tx.send(Ok(resp)).await.is_err()
                {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn delta_endpoints(
        &self,
        _request: Request<Streaming<DeltaDiscoveryRequest>>,
    ) -> Result<Response<Self::DeltaEndpointsStream>, Status> {
        Err(Status::unimplemented(
            "the delta xDS protocol is not served: subscribe with StreamEndpoints (state of the world)",
        ))
    }

    async fn fetch_endpoints(
        &self,
        request: Request<DiscoveryRequest>,
    ) -> Result<Response<DiscoveryResponse>, Status> {
        let current = self.current()?;
        let mut sub = Subscription::default();
        sub.on_request(request.get_ref())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let resp = sub.response(&current).unwrap_or_else(|| DiscoveryResponse {
            version_info: current.version.clone(),
            type_url: type_url(),
            ..Default::default()
        });
        Ok(Response::new(resp))
    }
}
