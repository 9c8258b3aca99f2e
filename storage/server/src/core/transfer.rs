//! Leadership transfer: the leader asks raft to hand leadership to a member
//! and answers once that member leads (a follower forwards the request once).

use std::time::Duration;

use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::{TransferLeaderRequest, TransferLeaderResponse};

use super::{Core, Hop, Route};
use crate::error::ApiError;

/// How often the leader's status is checked while leadership moves.
const POLL: Duration = Duration::from_millis(5);

impl Core {
    /// Hands leadership to `target` and waits until it leads.
    pub async fn transfer_leader(
        &self,
        req: TransferLeaderRequest,
        hop: Hop,
    ) -> Result<TransferLeaderResponse, ApiError> {
        let target = req.target_id;
        if !self.channels.members().contains_key(&target) {
            return Err(ApiError::invalid(format!("node {target} is not a member")));
        }
        match self.route(hop)? {
            Route::Leader(leader) => {
                let transfer =
                    |ch, r| async move { ClusterClient::new(ch).transfer_leader(r).await };
                self.forward(leader, req, transfer).await
            }
            Route::Here => {
                self.peer
                    .transfer_leader(target)
                    .await
                    .map_err(|e| self.propose_error(e, false))?;
                self.await_leader(target).await
            }
        }
    }

    /// Polls this node's status until `target` leads, for at most the
    /// request timeout; a refusal names whoever leads instead.
    async fn await_leader(&self, target: u64) -> Result<TransferLeaderResponse, ApiError> {
        let deadline = tokio::time::Instant::now() + self.timing.request_timeout();
        loop {
            let st = self.peer.status();
            if st.leader_id == target {
                return Ok(TransferLeaderResponse {
                    leader_id: target,
                    term: st.term,
                });
            }
            if tokio::time::Instant::now() > deadline {
                return Err(ApiError::unavailable(format!(
                    "leadership did not move to node {target} in time; the leader is {}",
                    st.leader_id
                ))
                .with_leader(st.leader_id, self.channels.address(st.leader_id)));
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
