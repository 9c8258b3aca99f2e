//! `strata.v1.Lease` over the service core.

use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use strata_proto::v1::lease_server::Lease;
use strata_proto::v1::*;
use tonic::{Request, Response, Status, Streaming};

use super::hop;
use super::kv::request_id;
use crate::core::{Core, Hop};

pub struct LeaseService {
    core: Arc<Core>,
}

impl LeaseService {
    pub fn new(core: Arc<Core>) -> Self {
        LeaseService { core }
    }
}

#[tonic::async_trait]
impl Lease for LeaseService {
    type KeepAliveStream =
        Pin<Box<dyn Stream<Item = Result<LeaseKeepAliveResponse, Status>> + Send>>;

    async fn grant(
        &self,
        req: Request<LeaseGrantRequest>,
    ) -> Result<Response<LeaseGrantResponse>, Status> {
        let hop = hop(&req);
        let id = request_id(&req, &req.get_ref().request_id);
        let body = LeaseGrantRequest {
            request_id: id,
            ..req.into_inner()
        };
        Ok(Response::new(self.core.lease_grant(body, hop).await?))
    }

    async fn revoke(
        &self,
        req: Request<LeaseRevokeRequest>,
    ) -> Result<Response<LeaseRevokeResponse>, Status> {
        let hop = hop(&req);
        let id = request_id(&req, &req.get_ref().request_id);
        let body = LeaseRevokeRequest {
            request_id: id,
            ..req.into_inner()
        };
        Ok(Response::new(self.core.lease_revoke(body, hop).await?))
    }

    async fn keep_alive_once(
        &self,
        req: Request<LeaseKeepAliveRequest>,
    ) -> Result<Response<LeaseKeepAliveResponse>, Status> {
        let hop = hop(&req);
        Ok(Response::new(
            self.core.lease_keep_alive(req.into_inner(), hop).await?,
        ))
    }

    /// Each request on the stream is one keep-alive, answered in order; the
    /// stream ends with the first error (the client opens another).
    async fn keep_alive(
        &self,
        req: Request<Streaming<LeaseKeepAliveRequest>>,
    ) -> Result<Response<Self::KeepAliveStream>, Status> {
        let core = self.core.clone();
        // The stream is read after this returns, outside the request's
        // scope: each keep-alive a follower sends on to the leader carries
        // the caller's credential from here.
        let credential = crate::auth::credential::current();
        let answers = req.into_inner().then(move |r| {
            let core = core.clone();
            let credential = credential.as_deref().cloned();
            async move {
                let r = r?;
                let kept = core.lease_keep_alive(r, Hop::Client);
                Ok(crate::auth::credential::scope(credential, kept).await?)
            }
        });
        Ok(Response::new(Box::pin(answers)))
    }

    async fn time_to_live(
        &self,
        req: Request<LeaseTimeToLiveRequest>,
    ) -> Result<Response<LeaseTimeToLiveResponse>, Status> {
        let hop = hop(&req);
        Ok(Response::new(
            self.core.lease_time_to_live(req.into_inner(), hop).await?,
        ))
    }

    async fn list(
        &self,
        req: Request<LeaseListRequest>,
    ) -> Result<Response<LeaseListResponse>, Status> {
        let hop = hop(&req);
        Ok(Response::new(
            self.core.lease_list(req.into_inner(), hop).await?,
        ))
    }
}
