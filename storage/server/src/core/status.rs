//! This node's own view of its raft group, as `Cluster/LocalStatus`, the
//! health routes and the cluster-wide status report it.

use strata_proto::v1 as pb;

use super::Core;
use crate::error::ApiError;

impl Core {
    /// This node's own view of its group; unhealthy when its raft storage
    /// failed or its engine refuses writes.
    pub fn local_status(&self) -> pb::NodeStatus {
        let st = self.peer.status();
        let role = match st.role {
            strata_raft::Role::Leader => pb::Role::Leader,
            strata_raft::Role::Follower => pb::Role::Follower,
            strata_raft::Role::Candidate => pb::Role::Candidate,
            strata_raft::Role::Learner => pb::Role::Learner,
        };
        let engine_health = self.peer.state_machine().engine().health();
        let error = match (&st.failure, &engine_health) {
            (Some(f), _) => f.reason.clone(),
            (None, Err(e)) => e.to_string(),
            (None, Ok(())) => String::new(),
        };
        pb::NodeStatus {
            id: self.id,
            address: self
                .channels
                .address(self.id)
                .unwrap_or_default()
                .to_string(),
            role: role as i32,
            term: st.term,
            commit_index: st.commit_index,
            applied_index: st.applied_index,
            healthy: error.is_empty(),
            leader_id: st.leader_id,
            group_id: st.group_id,
            error,
            proven: st.proven,
            leaving: st.leaving.contains(&self.id),
            cluster_id: self.peer.state_machine().cluster_id().unwrap_or(0),
        }
    }

    /// Refuses to speak for the cluster once this node has applied a
    /// configuration that leaves it out: it was removed, hears of no change
    /// after that one, and would go on showing its last view. UNAVAILABLE,
    /// so a client (or the gateway) asks another node. A node that has
    /// applied no configuration yet (one joining) is not refused.
    pub fn refuse_if_removed(&self) -> Result<(), ApiError> {
        let st = self.peer.status();
        if st.voters.is_empty() && st.learners.is_empty() {
            return Ok(());
        }
        if st.voters.contains(&self.id) || st.learners.contains(&self.id) {
            return Ok(());
        }
        Err(ApiError::unavailable(format!(
            "node {} was removed from the cluster (the configuration it applied last has voters \
             {:?} and learners {:?}), so its view of the cluster is out of date; ask another node",
            self.id, st.voters, st.learners
        )))
    }
}
