//! This node's own view of its raft group, as `Cluster/LocalStatus`, the
//! health routes and the cluster-wide status report it.

use strata_proto::v1 as pb;

use super::Core;

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
}
