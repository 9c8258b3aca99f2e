//! Membership changes: add a learner, promote it, remove a member. Each is
//! one raft configuration change, proposed on the leader (a follower
//! forwards the request once) and answered after it is applied.

use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::{
    AddMemberRequest, Member, MembersResponse, PromoteMemberRequest, RemoveMemberRequest,
    TransferLeaderRequest,
};
use strata_raft::{
    ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2, Members, PeerStatus,
};
use tonic::transport::Channel;

use crate::core::{Core, Hop, Route};
use crate::error::ApiError;

/// Pause before proposing a change again that raft did not take.
const RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

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

    /// The voter that stays in the configuration: when the change removes
    /// `leader`, the voter to hand leadership to first.
    fn successor(&self, leader: u64, st: &PeerStatus) -> Option<u64> {
        let removed = match self {
            Change::Remove { id } | Change::Replace { old: id, .. } => *id,
            Change::Add { .. } | Change::Promote { .. } => return None,
        };
        if removed != leader {
            return None;
        }
        st.voters.iter().copied().find(|&v| v != leader)
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
    /// The members as configured, with their voting rights from raft.
    pub fn members(&self) -> Vec<Member> {
        let st = self.peer().status();
        self.channels()
            .members()
            .iter()
            .map(|(&id, address)| Member {
                id,
                address: address.clone(),
                voter: st.voters.contains(&id),
                leaving: st.leaving.contains(&id),
            })
            .collect()
    }

    /// Applies one membership change and returns the members afterwards.
    pub async fn change_members(
        &self,
        change: Change,
        hop: Hop,
    ) -> Result<MembersResponse, ApiError> {
        // Checked on the leader only: a follower's view of the
        // configuration may lag the leader's by a moment.
        let ch = match self.route(hop)? {
            Route::Leader(ch) => ch,
            Route::Here => {
                let ranges = self.groups().ids().len();
                if ranges > 1 {
                    return Err(ApiError::invalid(format!(
                        "the cluster serves its keys from {ranges} ranges, and members are \
                         added, promoted or removed only while it has one: each range has its \
                         own members, and moving ranges between nodes is not built yet"
                    )));
                }
                let st = self.peer().status();
                change.validate(&st)?;
                let Some(successor) = change.successor(self.id(), &st) else {
                    return self.apply_change(change).await;
                };
                // A leader must not remove itself: raft-rs would lead a
                // group it is no longer part of. Hand leadership to a voter
                // that stays, then let that node apply the change.
                let req = TransferLeaderRequest {
                    target_id: successor,
                    range: 0,
                };
                self.transfer_leader(req, Hop::Client).await?;
                match self.route(Hop::Client)? {
                    Route::Leader(ch) => ch,
                    Route::Here => {
                        return Err(ApiError::unavailable(
                            "leadership came back to the node being removed; retry",
                        ));
                    }
                }
            }
        };
        self.forward_change(ch, change).await
    }

    /// Proposes the change here, on the leader, and waits until it is applied.
    async fn apply_change(&self, change: Change) -> Result<MembersResponse, ApiError> {
        let deadline = tokio::time::Instant::now() + self.request_timeout();
        let outcome = loop {
            let wait = self.peer().change_members(change.conf_change());
            match tokio::time::timeout_at(deadline, wait).await {
                // Not applied (a new leader has not yet applied its log, or
                // an earlier change is still pending): safe to try again.
                Ok(Err(strata_raft::ProposeError::Dropped(_)))
                    if tokio::time::Instant::now() + RETRY_PAUSE < deadline =>
                {
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                outcome => break outcome,
            }
        };
        match outcome {
            Ok(Ok(index)) => {
                // The status the answer lists is published after the
                // apply that resolved the wait: list the new configuration,
                // not the one before it.
                while self.peer().status().applied_index < index
                    && tokio::time::Instant::now() < deadline
                {
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
                Ok(MembersResponse {
                    members: self.members(),
                })
            }
            Ok(Err(e)) => Err(ApiError::from_propose(e, true)),
            Err(_) => Err(ApiError::from_propose(
                strata_raft::ProposeError::Timeout,
                true,
            )),
        }
    }

    /// Sends the change to the leader at `leader`, marked as forwarded.
    async fn forward_change(
        &self,
        leader: Channel,
        change: Change,
    ) -> Result<MembersResponse, ApiError> {
        let promote = |ch, r| async move { ClusterClient::new(ch).promote_member(r).await };
        match change {
            Change::Add { id, address } => {
                let add = |ch, r| async move { ClusterClient::new(ch).add_member(r).await };
                self.forward(leader, AddMemberRequest { id, address }, add)
                    .await
            }
            Change::Promote { id } => {
                let req = PromoteMemberRequest { id, replace_id: 0 };
                self.forward(leader, req, promote).await
            }
            Change::Replace { old, id } => {
                let req = PromoteMemberRequest {
                    id,
                    replace_id: old,
                };
                self.forward(leader, req, promote).await
            }
            Change::Remove { id } => {
                let remove = |ch, r| async move { ClusterClient::new(ch).remove_member(r).await };
                self.forward(leader, RemoveMemberRequest { id }, remove)
                    .await
            }
        }
    }
}
