//! Leadership transfer: the leader asks raft to hand leadership to a member
//! and answers once that member leads (a follower forwards the request once).

use std::time::Duration;

use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::{TransferLeaderRequest, TransferLeaderResponse};

use super::{Core, Hop, Route};
use crate::error::ApiError;
use strata_raft::PeerHandle;

/// How often the leader's status is checked while leadership moves.
const POLL: Duration = Duration::from_millis(5);

impl Core {
    /// Hands the leadership of `req.range` (the first range when 0) to
    /// `target` and waits until it leads.
    pub async fn transfer_leader(
        &self,
        req: TransferLeaderRequest,
        hop: Hop,
    ) -> Result<TransferLeaderResponse, ApiError> {
        let target = req.target_id;
        if !self.channels.members().contains_key(&target) {
            return Err(ApiError::invalid(format!("node {target} is not a member")));
        }
        let group = self.range_by_id(req.range)?;
        match self.route_in(&group, hop)? {
            Route::Leader(leader) => {
                let transfer =
                    |ch, r| async move { ClusterClient::new(ch).transfer_leader(r).await };
                self.forward(leader, req, transfer).await
            }
            Route::Here => {
                group
                    .transfer_leader(target)
                    .await
                    .map_err(|e| self.propose_error(e, false))?;
                self.await_leader(&group, target).await
            }
        }
    }

    /// The group serving range `id` here (the first for 0); NOT_FOUND when
    /// this node hosts no such range.
    pub(crate) fn range_by_id(&self, id: u64) -> Result<PeerHandle, ApiError> {
        if id == 0 {
            return Ok(self.groups.first().clone());
        }
        self.groups
            .get(id)
            .ok_or_else(|| ApiError::not_found(format!("node {} hosts no range {id}", self.id)))
    }

    /// Polls this node's status of `group` until `target` leads it, for at
    /// most the request timeout; a refusal names whoever leads instead.
    async fn await_leader(
        &self,
        group: &PeerHandle,
        target: u64,
    ) -> Result<TransferLeaderResponse, ApiError> {
        let deadline = tokio::time::Instant::now() + self.timing.request_timeout();
        loop {
            let st = group.status();
            if st.leader_id == target {
                return Ok(TransferLeaderResponse {
                    leader_id: target,
                    term: st.term,
                    range: st.group_id,
                });
            }
            if tokio::time::Instant::now() > deadline {
                return Err(ApiError::unavailable(format!(
                    "leadership of range {} did not move to node {target} in time; the leader is {}",
                    st.group_id, st.leader_id
                ))
                .with_leader(st.leader_id, self.channels.address(st.leader_id)));
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
