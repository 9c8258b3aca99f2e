//! `strata.v1.Cluster`.

use std::sync::Arc;

use strata_proto::v1::cluster_server::Cluster;
use strata_proto::v1::*;
use tonic::{Request, Response, Status};

use super::hop;
use crate::core::Core;
use crate::member_status::gather;
use crate::membership::Change;

pub struct ClusterService {
    core: Arc<Core>,
}

impl ClusterService {
    pub fn new(core: Arc<Core>) -> Self {
        ClusterService { core }
    }
}

#[tonic::async_trait]
impl Cluster for ClusterService {
    async fn status(
        &self,
        _req: Request<StatusRequest>,
    ) -> Result<Response<StatusResponse>, Status> {
        Ok(Response::new(gather(&self.core).await))
    }

    async fn local_status(
        &self,
        _req: Request<LocalStatusRequest>,
    ) -> Result<Response<NodeStatus>, Status> {
        Ok(Response::new(self.core.local_status()))
    }

    async fn transfer_leader(
        &self,
        req: Request<TransferLeaderRequest>,
    ) -> Result<Response<TransferLeaderResponse>, Status> {
        let hop = hop(&req);
        Ok(Response::new(
            self.core.transfer_leader(req.into_inner(), hop).await?,
        ))
    }

    async fn add_member(
        &self,
        req: Request<AddMemberRequest>,
    ) -> Result<Response<MembersResponse>, Status> {
        let hop = hop(&req);
        let AddMemberRequest { id, address } = req.into_inner();
        Ok(Response::new(
            self.core
                .change_members(Change::Add { id, address }, hop)
                .await?,
        ))
    }

    async fn promote_member(
        &self,
        req: Request<PromoteMemberRequest>,
    ) -> Result<Response<MembersResponse>, Status> {
        let hop = hop(&req);
        let PromoteMemberRequest { id, replace_id } = req.into_inner();
        let change = match replace_id {
            0 => Change::Promote { id },
            old => Change::Replace { old, id },
        };
        Ok(Response::new(self.core.change_members(change, hop).await?))
    }

    async fn remove_member(
        &self,
        req: Request<RemoveMemberRequest>,
    ) -> Result<Response<MembersResponse>, Status> {
        let hop = hop(&req);
        let id = req.into_inner().id;
        Ok(Response::new(
            self.core.change_members(Change::Remove { id }, hop).await?,
        ))
    }

    async fn members(
        &self,
        _req: Request<MembersRequest>,
    ) -> Result<Response<MembersResponse>, Status> {
        Ok(Response::new(MembersResponse {
            members: self.core.members(),
        }))
    }
}
