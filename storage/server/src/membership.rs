//! Membership changes: add a learner, promote it, remove a member. Each is
//! one raft configuration change in each range, proposed on the range's
//! leader (a follower forwards the request once) and answered after it is
//! applied in every range; the first range's leader makes the change range
//! after range.

use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::{
    AddMemberRequest, Member, MembersResponse, PromoteMemberRequest, RemoveMemberRequest,
    TransferLeaderRequest,
};
use strata_raft::{
    ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2, Members, PeerHandle,
    PeerStatus,
};
use tonic::transport::Channel;

use crate::core::{Core, Hop, Route};
use crate::error::ApiError;

/// Pause before proposing a change again that raft did not take.
const RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

/// A requested change, checked against the current configuration.
#[derive(Debug, Clone)]
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
    /// Whether `st`'s configuration is already what the change would make
    /// it.
    fn in_effect(&self, st: &PeerStatus) -> bool {
        let is_member = |id: &u64| st.voters.contains(id) || st.learners.contains(id);
        let votes = |id: &u64| st.voters.contains(id) && !st.leaving.contains(id);
        match self {
            Change::Add { id, .. } => is_member(id),
            Change::Promote { id } => votes(id),
            Change::Replace { old, id } => votes(id) && !st.voters.contains(old),
            Change::Remove { id } => !is_member(id),
        }
    }

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

    /// Applies one membership change in every range and returns the
    /// members afterwards. The first range's leader makes it, one range
    /// after another: a node joins the first range first (which tells it
    /// the ranges there are) and leaves it last, by removal or replacement
    /// (until then it is still a member: it answers for the cluster, and
    /// its address is known to send it another range's change it leads). A range where the change is in
    /// effect already is passed over, so a change that failed part of the
    /// way is finished by asking again.
    pub async fn change_members(
        &self,
        change: Change,
        hop: Hop,
    ) -> Result<MembersResponse, ApiError> {
        // Checked on the leader only: a follower's view of the
        // configuration may lag the leader's by a moment.
        if let Route::Leader(ch) = self.route(hop)? {
            return self.forward_change(ch, change, 0).await;
        }
        let mut ranges = self.groups().all();
        let first = self.peer().status().group_id;
        // The first range first, or last for a change that removes a
        // node: the node's address is the first range's to keep, and the
        // other ranges' changes may have to be sent to it (it may lead
        // one of them until it hands it over).
        let removal = matches!(change, Change::Remove { .. } | Change::Replace { .. });
        ranges.sort_by_key(|g| (g.status().group_id == first) == removal);
        let pending: Vec<_> = ranges
            .into_iter()
            .filter(|g| !change.in_effect(&g.status()))
            .collect();
        if pending.is_empty() {
            // Nothing to do anywhere: the change names a member that is
            // already so (or no member); say which.
            change.validate(&self.peer().status())?;
        }
        for group in pending {
            self.change_range_members(&group, change.clone(), Hop::Client)
                .await?;
        }
        Ok(MembersResponse {
            members: self.members(),
        })
    }

    /// Applies `change` in range `range` only (every range for 0).
    pub async fn change_members_in(
        &self,
        change: Change,
        range: u64,
        hop: Hop,
    ) -> Result<MembersResponse, ApiError> {
        if range == 0 {
            return self.change_members(change, hop).await;
        }
        let group = self.range_by_id(range)?;
        self.change_range_members(&group, change, hop).await
    }

    /// Applies `change` in `group`'s configuration, on its leader (sent on
    /// once); done at once when it is in effect there already.
    async fn change_range_members(
        &self,
        group: &PeerHandle,
        change: Change,
        hop: Hop,
    ) -> Result<MembersResponse, ApiError> {
        let range = group.status().group_id;
        let ch = match self.route_in(group, hop)? {
            Route::Leader(ch) => ch,
            Route::Here => {
                let st = group.status();
                if change.in_effect(&st) {
                    return Ok(MembersResponse {
                        members: self.members(),
                    });
                }
                change.validate(&st)?;
                let Some(successor) = change.successor(self.id(), &st) else {
                    return self.apply_change(group, change).await;
                };
                // A leader must not remove itself: raft-rs would lead a
                // group it is no longer part of. Hand leadership to a voter
                // that stays, then let that node apply the change.
                let req = TransferLeaderRequest {
                    target_id: successor,
                    range,
                };
                self.transfer_leader(req, Hop::Client).await?;
                match self.route_in(group, Hop::Client)? {
                    Route::Leader(ch) => ch,
                    Route::Here => {
                        return Err(ApiError::unavailable(
                            "leadership came back to the node being removed; retry",
                        ));
                    }
                }
            }
        };
        self.forward_change(ch, change, range).await
    }

    /// Proposes the change in `group` here, on its leader, and waits until
    /// it is applied.
    async fn apply_change(
        &self,
        group: &PeerHandle,
        change: Change,
    ) -> Result<MembersResponse, ApiError> {
        let deadline = tokio::time::Instant::now() + self.request_timeout();
        let outcome = loop {
            let wait = group.change_members(change.conf_change());
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
                while group.status().applied_index < index && tokio::time::Instant::now() < deadline
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

    /// Sends the change in `range` (every range for 0) to the leader at
    /// `leader`, marked as forwarded.
    async fn forward_change(
        &self,
        leader: Channel,
        change: Change,
        range: u64,
    ) -> Result<MembersResponse, ApiError> {
        let promote = |ch, r| async move { ClusterClient::new(ch).promote_member(r).await };
        match change {
            Change::Add { id, address } => {
                let add = |ch, r| async move { ClusterClient::new(ch).add_member(r).await };
                let req = AddMemberRequest { id, address, range };
                self.forward(leader, req, add).await
            }
            Change::Promote { id } => {
                let req = PromoteMemberRequest {
                    id,
                    replace_id: 0,
                    range,
                };
                self.forward(leader, req, promote).await
            }
            Change::Replace { old, id } => {
                let req = PromoteMemberRequest {
                    id,
                    replace_id: old,
                    range,
                };
                self.forward(leader, req, promote).await
            }
            Change::Remove { id } => {
                let remove = |ch, r| async move { ClusterClient::new(ch).remove_member(r).await };
                self.forward(leader, RemoveMemberRequest { id, range }, remove)
                    .await
            }
        }
    }
}
