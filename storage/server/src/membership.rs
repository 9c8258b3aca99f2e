//! Membership changes: add a learner, promote it, remove a member. Each is
//! one raft configuration change, proposed on the leader (a follower
//! forwards the request once) and answered after it is applied.

use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::{
    AddMemberRequest, MembersResponse, PromoteMemberRequest, RemoveMemberRequest,
};
use strata_raft::{
    ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2, Members, PeerStatus,
};

use crate::core::{Core, Hop, Route};
use crate::error::ApiError;
use crate::grpc::cluster::members;

/// A requested change, checked against the current configuration.
pub enum Change {
    Add {
        id: u64,
        address: String,
    },
    Promote {
        id: u64,
    },
    /// Promote the learner `id` and remove the voter `old` in one joint
    /// configuration change.
    Replace {
        old: u64,
        id: u64,
    },
    Remove {
        id: u64,
    },
}

impl Change {
    fn validate(&self, st: &PeerStatus) -> Result<(), ApiError> {
        let is_member = |id: &u64| st.voters.contains(id) || st.learners.contains(id);
        match self {
            Change::Add { id, address } => {
                if *id == 0 {
                    return Err(ApiError::invalid("member id 0 is reserved"));
                }
                if !address.contains(':') {
                    return Err(ApiError::invalid(format!(
                        "address `{address}` is not host:port"
                    )));
                }
                if is_member(id) {
                    return Err(ApiError::invalid(format!("node {id} is already a member")));
                }
            }
            Change::Promote { id } => {
                if !st.learners.contains(id) {
                    return Err(ApiError::invalid(format!("node {id} is not a learner")));
                }
            }
            Change::Replace { old, id } => {
                if !st.learners.contains(id) {
                    return Err(ApiError::invalid(format!("node {id} is not a learner")));
                }
                if !st.voters.contains(old) {
                    return Err(ApiError::not_found(format!("node {old} is not a voter")));
                }
            }
            Change::Remove { id } => {
                if !is_member(id) {
                    return Err(ApiError::not_found(format!("node {id} is not a member")));
                }
                if st.voters == [*id] {
                    return Err(ApiError::invalid("cannot remove the last voter"));
                }
            }
        }
        Ok(())
    }

    fn conf_change(&self) -> ConfChangeV2 {
        let single = |change_type, node_id| {
            let mut c = ConfChangeSingle::default();
            c.set_change_type(change_type);
            c.node_id = node_id;
            c
        };
        let changes = match self {
            Change::Add { id, .. } => vec![single(ConfChangeType::AddLearnerNode, *id)],
            Change::Promote { id } => vec![single(ConfChangeType::AddNode, *id)],
            Change::Replace { old, id } => vec![
                single(ConfChangeType::AddNode, *id),
                single(ConfChangeType::RemoveNode, *old),
            ],
            Change::Remove { id } => vec![single(ConfChangeType::RemoveNode, *id)],
        };
        let mut cc = ConfChangeV2::default();
        if changes.len() > 1 {
            // Joint consensus, left automatically once it is applied.
            cc.set_transition(ConfChangeTransition::Auto);
        }
        cc.set_changes(changes.into());
        if let Change::Add { id, address } = self {
            cc.context = Members::encode(&[(*id, address.clone())].into_iter().collect()).into();
        }
        cc
    }
}

impl Core {
    /// Applies one membership change and returns the members afterwards.
    pub async fn change_members(
        &self,
        change: Change,
        hop: Hop,
    ) -> Result<MembersResponse, ApiError> {
        // Checked on the leader only: a follower's view of the
        // configuration may lag the leader's by a moment.
        match self.route(hop)? {
            Route::Leader(ch) => {
                let mut client = ClusterClient::new(ch);
                let result = match change {
                    Change::Add { id, address } => {
                        client
                            .add_member(self.forward_request(AddMemberRequest { id, address }))
                            .await
                    }
                    Change::Promote { id } => {
                        let req = PromoteMemberRequest { id, replace_id: 0 };
                        client.promote_member(self.forward_request(req)).await
                    }
                    Change::Replace { old, id } => {
                        let req = PromoteMemberRequest {
                            id,
                            replace_id: old,
                        };
                        client.promote_member(self.forward_request(req)).await
                    }
                    Change::Remove { id } => {
                        client
                            .remove_member(self.forward_request(RemoveMemberRequest { id }))
                            .await
                    }
                };
                result
                    .map(|r| r.into_inner())
                    .map_err(|s| crate::core::forward_error(&s))
            }
            Route::Here => {
                change.validate(&self.peer().status())?;
                let wait = self.peer().change_members(change.conf_change());
                match tokio::time::timeout(self.request_timeout(), wait).await {
                    Ok(Ok(_)) => Ok(MembersResponse {
                        members: members(self),
                    }),
                    Ok(Err(e)) => Err(ApiError::from_propose(e, true)),
                    Err(_) => Err(ApiError::from_propose(
                        strata_raft::ProposeError::Timeout,
                        true,
                    )),
                }
            }
        }
    }
}
