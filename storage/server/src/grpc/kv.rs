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
            .filter_map(|c| {
                let kind = match c.kind {
                    Kind::Put => ChangeKind::Put,
                    Kind::Delete => ChangeKind::Delete,
                    // A watch ends at a split of its range (`crate::watch`).
                    Kind::Split => return None,
                };
                Some(WatchEvent {
                    kind: kind as i32,
                    key: c.key.into(),
                    value: c.value.into(),
                    index: c.index,
                })
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

/// Metadata that carries a write's request id when its message does not.
pub const REQUEST_ID_METADATA: &str = "x-strata-request-id";

/// The request id a write's message carries, else its metadata's.
pub(crate) fn request_id<T>(req: &Request<T>, field: &str) -> String {
    if !field.is_empty() {
        return field.to_string();
    }
    req.metadata()
        .get(REQUEST_ID_METADATA)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

#[tonic::async_trait]
impl Kv for KvService {
    type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchResponse, Status>> + Send>>;
    type BackupStream = Pin<Box<dyn Stream<Item = Result<BackupChunk, Status>> + Send>>;

    async fn backup(
        &self,
        _req: Request<BackupRequest>,
    ) -> Result<Response<Self::BackupStream>, Status> {
        let chunks = crate::backup::start(&self.core).await?;
        let chunks = ReceiverStream::new(chunks)
            .map(|c| c.map(|data| BackupChunk { data }).map_err(Status::from));
        Ok(Response::new(Box::pin(chunks)))
    }

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
        let id = request_id(&req, &req.get_ref().request_id);
        let body = PutRequest {
            request_id: id,
            ..req.into_inner()
        };
        Ok(Response::new(self.core.put(body, hop).await?))
    }

    async fn get(&self, req: Request<GetRequest>) -> Result<Response<GetResponse>, Status> {
        Ok(Response::new(self.core.get(req.into_inner()).await?))
    }

    async fn delete(
        &self,
        req: Request<DeleteRequest>,
    ) -> Result<Response<DeleteResponse>, Status> {
        let hop = hop(&req);
        let id = request_id(&req, &req.get_ref().request_id);
        let body = DeleteRequest {
            request_id: id,
            ..req.into_inner()
        };
        Ok(Response::new(self.core.delete(body, hop).await?))
    }

    async fn scan(&self, req: Request<ScanRequest>) -> Result<Response<ScanResponse>, Status> {
        Ok(Response::new(self.core.scan(req.into_inner()).await?))
    }

    async fn batch(&self, req: Request<BatchRequest>) -> Result<Response<BatchResponse>, Status> {
        let hop = hop(&req);
        let id = request_id(&req, &req.get_ref().request_id);
        let body = BatchRequest {
            request_id: id,
            ..req.into_inner()
        };
        Ok(Response::new(self.core.batch(body, hop).await?))
    }

    async fn compare_and_swap(
        &self,
        req: Request<CompareAndSwapRequest>,
    ) -> Result<Response<CompareAndSwapResponse>, Status> {
        let hop = hop(&req);
        let id = request_id(&req, &req.get_ref().request_id);
        let body = CompareAndSwapRequest {
            request_id: id,
            ..req.into_inner()
        };
        Ok(Response::new(self.core.compare_and_swap(body, hop).await?))
    }

    async fn txn(&self, req: Request<TxnRequest>) -> Result<Response<TxnResponse>, Status> {
        let hop = hop(&req);
        let id = request_id(&req, &req.get_ref().request_id);
        let body = TxnRequest {
            request_id: id,
            ..req.into_inner()
        };
        Ok(Response::new(self.core.txn(body, hop).await?))
    }
}
