//! `strata.v1.Cluster`.

use std::sync::Arc;

use strata_proto::v1::cluster_server::Cluster;
use strata_proto::v1::*;
use tonic::{Request, Response, Status};

use super::hop;
use crate::core::{Core, Hop};
use crate::log_snapshot;
use crate::member_status::gather;
use crate::membership::Change;
use crate::rest::model::stats::CompactionOutcome;
use crate::stats::{self, StatsSource};

pub struct ClusterService {
    core: Arc<Core>,
    stats: Arc<StatsSource>,
}

impl ClusterService {
    pub fn new(core: Arc<Core>, stats: Arc<StatsSource>) -> Self {
        ClusterService { core, stats }
    }
}

#[tonic::async_trait]
impl Cluster for ClusterService {
    async fn status(
        &self,
        _req: Request<StatusRequest>,
    ) -> Result<Response<StatusResponse>, Status> {
        self.core.refuse_if_removed()?;
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

    async fn local_transfer_leader(
        &self,
        req: Request<TransferLeaderRequest>,
    ) -> Result<Response<TransferLeaderResponse>, Status> {
        // Never sent on: a node that does not lead the range says so.
        Ok(Response::new(
            self.core
                .transfer_leader(req.into_inner(), Hop::Forwarded)
                .await?,
        ))
    }

    async fn split_range(
        &self,
        req: Request<SplitRangeRequest>,
    ) -> Result<Response<SplitRangeResponse>, Status> {
        let hop = hop(&req);
        Ok(Response::new(
            self.core.split_range(req.into_inner(), hop).await?,
        ))
    }

    async fn add_member(
        &self,
        req: Request<AddMemberRequest>,
    ) -> Result<Response<MembersResponse>, Status> {
        let hop = hop(&req);
        let AddMemberRequest { id, address, range } = req.into_inner();
        let change = Change::Add { id, address };
        Ok(Response::new(
            self.core.change_members_in(change, range, hop).await?,
        ))
    }

    async fn promote_member(
        &self,
        req: Request<PromoteMemberRequest>,
    ) -> Result<Response<MembersResponse>, Status> {
        let hop = hop(&req);
        let PromoteMemberRequest {
            id,
            replace_id,
            range,
        } = req.into_inner();
        let change = match replace_id {
            0 => Change::Promote { id },
            old => Change::Replace { old, id },
        };
        Ok(Response::new(
            self.core.change_members_in(change, range, hop).await?,
        ))
    }

    async fn remove_member(
        &self,
        req: Request<RemoveMemberRequest>,
    ) -> Result<Response<MembersResponse>, Status> {
        let hop = hop(&req);
        let RemoveMemberRequest { id, range } = req.into_inner();
        Ok(Response::new(
            self.core
                .change_members_in(Change::Remove { id }, range, hop)
                .await?,
        ))
    }

    async fn members(
        &self,
        _req: Request<MembersRequest>,
    ) -> Result<Response<MembersResponse>, Status> {
        self.core.refuse_if_removed()?;
        Ok(Response::new(MembersResponse {
            members: self.core.members(),
        }))
    }

    async fn local_stats(
        &self,
        _req: Request<LocalStatsRequest>,
    ) -> Result<Response<LocalStatsResponse>, Status> {
        Ok(Response::new(self.stats.local()))
    }

    async fn local_compact(
        &self,
        _req: Request<LocalCompactRequest>,
    ) -> Result<Response<NodeCompaction>, Status> {
        Ok(Response::new(self.stats.compact_local().await))
    }

    async fn compact(
        &self,
        req: Request<CompactRequest>,
    ) -> Result<Response<CompactResponse>, Status> {
        let ids = req.into_inner().node_ids;
        let result = stats::compact(&self.core, &self.stats, &ids).await?;
        let nodes = result
            .nodes
            .into_iter()
            .map(|n| {
                let outcome = match n.outcome {
                    CompactionOutcome::Done => node_compaction::Outcome::Done,
                    CompactionOutcome::Running => node_compaction::Outcome::Running,
                    CompactionOutcome::Failed => node_compaction::Outcome::Failed,
                };
                NodeCompaction {
                    id: n.id,
                    outcome: outcome as i32,
                    duration_ms: n.duration_ms,
                    error: n.error,
                }
            })
            .collect();
        Ok(Response::new(CompactResponse { nodes }))
    }

    async fn local_snapshot(
        &self,
        _req: Request<LocalSnapshotRequest>,
    ) -> Result<Response<NodeSnapshot>, Status> {
        Ok(Response::new(
            log_snapshot::snapshot_local(&self.core).await,
        ))
    }

    async fn snapshot(
        &self,
        req: Request<SnapshotRequest>,
    ) -> Result<Response<SnapshotResponse>, Status> {
        let ids = req.into_inner().node_ids;
        let result = log_snapshot::snapshot(&self.core, &ids).await?;
        let nodes = result
            .nodes
            .into_iter()
            .map(|n| NodeSnapshot {
                id: n.id,
                outcome: log_snapshot::outcome_to_proto(n.outcome) as i32,
                duration_ms: n.duration_ms,
                durable_index: n.durable_index,
                first_index_before: n.first_index_before,
                first_index_after: n.first_index_after,
                error: n.error,
            })
            .collect();
        Ok(Response::new(SnapshotResponse { nodes }))
    }
}
