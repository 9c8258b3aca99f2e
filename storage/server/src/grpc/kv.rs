//! `strata.v1.KV` over the service core.

use std::sync::Arc;

use strata_proto::v1::kv_server::Kv;
use strata_proto::v1::*;
use tonic::{Request, Response, Status};

use super::hop;
use crate::core::Core;

pub struct KvService {
    core: Arc<Core>,
}

impl KvService {
    pub fn new(core: Arc<Core>) -> Self {
        KvService { core }
    }
}

#[tonic::async_trait]
impl Kv for KvService {
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
