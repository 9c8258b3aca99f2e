//! `strata.v1.KV` over the service core.

use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use strata_proto::v1::kv_server::Kv;
use strata_proto::v1::*;
use strata_raft::ChangeKind as Kind;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use super::hop;
use crate::core::Core;
use crate::watch::{WatchMessage, WatchSpec, Watches};

pub struct KvService {
    core: Arc<Core>,
    watches: Arc<Watches>,
}

impl KvService {
    pub fn new(core: Arc<Core>, watches: Arc<Watches>) -> Self {
        KvService { core, watches }
    }
}

/// A watch's message as the gRPC stream sends it.
fn watch_response(node_id: u64, m: WatchMessage) -> WatchResponse {
    let index = m.index();
    let events = match m {
        WatchMessage::Changes { changes, .. } => changes
            .into_iter()
            .map(|c| WatchEvent {
                kind: match c.kind {
                    Kind::Put => ChangeKind::Put,
                    Kind::Delete => ChangeKind::Delete,
                } as i32,
                key: c.key.into(),
                value: c.value.into(),
                index: c.index,
            })
            .collect(),
        WatchMessage::Progress { .. } => Vec::new(),
    };
    WatchResponse {
        node_id,
        events,
        index,
    }
}

#[tonic::async_trait]
impl Kv for KvService {
    type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchResponse, Status>> + Send>>;

    async fn watch(
        &self,
        req: Request<WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let spec = WatchSpec::from_request(req.get_ref())?;
        let stream = self.watches.start(spec)?;
        let node_id = stream.node_id;
        let messages = ReceiverStream::new(stream.messages)
            .map(move |m| m.map(|m| watch_response(node_id, m)).map_err(Status::from));
        Ok(Response::new(Box::pin(messages)))
    }

    async fn put(&self, req: Request<PutRequest>) -> Result<Response<PutResponse>, Status> {
        let hop = hop(&req);
        Ok(Response::new(self.core.put(req.into_inner(), hop).await?))
    }

    async fn get(&self, req: Request<GetRequest>) -> Result<Response<GetResponse>, Status> {
        Ok(Response::new(self.core.get(req.into_inner()).await?))
    }

    async fn delete(
        &self,
        req: Request<DeleteRequest>,
    ) -> Result<Response<DeleteResponse>, Status> {
        let hop = hop(&req);
        Ok(Response::new(
            self.core.delete(req.into_inner(), hop).await?,
        ))
    }

    async fn scan(&self, req: Request<ScanRequest>) -> Result<Response<ScanResponse>, Status> {
        Ok(Response::new(self.core.scan(req.into_inner()).await?))
    }

    async fn batch(&self, req: Request<BatchRequest>) -> Result<Response<BatchResponse>, Status> {
        let hop = hop(&req);
        Ok(Response::new(self.core.batch(req.into_inner(), hop).await?))
    }

    async fn compare_and_swap(
        &self,
        req: Request<CompareAndSwapRequest>,
    ) -> Result<Response<CompareAndSwapResponse>, Status> {
        let hop = hop(&req);
        Ok(Response::new(
            self.core.compare_and_swap(req.into_inner(), hop).await?,
        ))
    }
}
