//! Leaders spread across the nodes. Each range elects its own leader, and
//! elections land where they land: after a restart or a split one node may
//! lead most ranges, and carry most of the writes. The first range's
//! leader looks at who leads each range every `--balance-every-ms` and
//! moves leaderships (raft leader transfers, one range at a time) from
//! nodes that lead more than their share to live nodes that lead fewer,
//! as the placement planner (`strata_placement`) decides. Replicas do not
//! move: every member holds a replica of every range until ranges have
//! members of their own.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use strata_placement::{Action, ClusterView, Planner, RangeState};
use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::{Role, StatusResponse, TransferLeaderRequest, TransferLeaderResponse};
use strata_raft::Role as RaftRole;
use tokio::sync::watch;

use crate::core::{Core, Hop};
use crate::error::ApiError;
use crate::member_status::gather;

/// The most leaderships one round moves: each move stops the range's
/// writes for a moment, so a round moves few and the next looks again.
const MOVES_PER_ROUND: usize = 2;

/// Runs until `stopping`; does nothing while `every` is zero.
pub fn spawn(
    core: Arc<Core>,
    every: Duration,
    mut stopping: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if every.is_zero() {
            return;
        }
        let mut tick = crate::ticker::every(every);
        while crate::ticker::next(&mut tick, &mut stopping).await {
            let st = core.peer().status();
            if st.role != RaftRole::Leader || st.leader_id != st.id || core.peer().draining() {
                continue;
            }
            let status = gather(&core).await;
            for action in plan(&status) {
                let Action::TransferLeader { range, to } = action else {
                    continue;
                };
                if *stopping.borrow() {
                    return;
                }
                let from = leader_of(&status, range);
                match transfer(&core, from, range, to).await {
                    Ok(r) => tracing::info!(
                        range,
                        from,
                        to,
                        term = r.term,
                        "moved a range's leadership to even out the leaders per node"
                    ),
                    Err(e) => tracing::warn!(
                        range,
                        from,
                        to,
                        error = %e,
                        "moving a range's leadership to even out the leaders per node"
                    ),
                }
            }
        }
    })
}

/// Asks `from`, the leader of `range`, to hand it to `to`: here, or with
/// `Cluster/LocalTransferLeader` (which the node only does if it leads the
/// range, sending nothing on). The call carries no caller's credential:
/// members' own calls are not checked, and never routed by the gateway.
async fn transfer(
    core: &Core,
    from: u64,
    range: u64,
    to: u64,
) -> Result<TransferLeaderResponse, ApiError> {
    let req = TransferLeaderRequest {
        target_id: to,
        range,
    };
    if from == core.id() {
        return core.transfer_leader(req, Hop::Forwarded).await;
    }
    let channel = core
        .channels()
        .channel(from)
        .ok_or_else(|| ApiError::unavailable(format!("no channel to node {from}")))?;
    let mut call = tonic::Request::new(req);
    call.set_timeout(core.request_timeout());
    ClusterClient::new(channel)
        .local_transfer_leader(call)
        .await
        .map(tonic::Response::into_inner)
        .map_err(|s| ApiError::from_status(&s))
}

fn leader_of(status: &StatusResponse, range: u64) -> u64 {
    status
        .ranges
        .iter()
        .find(|r| r.id == range)
        .map_or(0, |r| r.leader_id)
}

/// The leader moves that would even out `status`'s leaders per node,
/// among the members that are up (answered, healthy, vouched for and not
/// being removed). A range moves only to a live voter of its own.
fn plan(status: &StatusResponse) -> Vec<Action> {
    let nodes: BTreeSet<u64> = status
        .nodes
        .iter()
        .filter(|n| n.healthy && n.proven && !n.leaving && n.role != Role::Unknown as i32)
        .map(|n| n.id)
        .collect();
    let ranges: BTreeMap<u64, RangeState> = status
        .ranges
        .iter()
        .map(|r| {
            let state = RangeState {
                replicas: r.voters.iter().copied().collect(),
                leader: r.leader_id,
                bytes: 0,
            };
            (r.id, state)
        })
        .collect();
    let replication = ranges.values().map(|r| r.replicas.len()).max().unwrap_or(0);
    let planner = Planner {
        replication,
        max_actions: MOVES_PER_ROUND,
        ..Planner::default()
    };
    planner
        .plan(&ClusterView { nodes, ranges })
        .into_iter()
        .filter(|a| match *a {
            Action::TransferLeader { range, to } => status
                .ranges
                .iter()
                .any(|r| r.id == range && r.voters.contains(&to)),
            // Replicas stay where they are: every member holds every range.
            Action::AddReplica { .. } | Action::RemoveReplica { .. } => false,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use strata_proto::v1::{NodeStatus, RangeStatus};

    use super::*;

    fn node(id: u64) -> NodeStatus {
        NodeStatus {
            id,
            role: Role::Follower as i32,
            healthy: true,
            proven: true,
            ..Default::default()
        }
    }

    fn range(id: u64, leader: u64) -> RangeStatus {
        RangeStatus {
            id,
            voters: vec![1, 2, 3],
            leader_id: leader,
            ..Default::default()
        }
    }

    fn status(nodes: Vec<NodeStatus>, leaders: &[u64]) -> StatusResponse {
        StatusResponse {
            nodes,
            ranges: leaders
                .iter()
                .enumerate()
                .map(|(i, &l)| range(i as u64 + 1, l))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn leaders_piled_on_one_node_move_to_the_others() {
        let st = status(vec![node(1), node(2), node(3)], &[1, 1, 1, 1, 1, 1]);
        let moves = plan(&st);
        assert_eq!(moves.len(), MOVES_PER_ROUND, "{moves:?}");
        for m in &moves {
            assert!(
                matches!(m, Action::TransferLeader { to, .. } if *to != 1),
                "{moves:?}"
            );
        }
    }

    #[test]
    fn balanced_leaders_stay_where_they_are() {
        let st = status(vec![node(1), node(2), node(3)], &[1, 2, 3, 1, 2, 3]);
        assert!(plan(&st).is_empty());
        let st = status(vec![node(1), node(2), node(3)], &[1, 1, 2, 3]);
        assert!(plan(&st).is_empty(), "one apart is balanced");
        let st = status(vec![node(1), node(2), node(3)], &[1, 1, 2]);
        assert_eq!(
            plan(&st),
            [Action::TransferLeader { range: 1, to: 3 }],
            "two apart is not"
        );
    }

    #[test]
    fn no_leadership_goes_to_a_node_that_is_down_unproven_or_leaving() {
        let mut down = node(2);
        down.healthy = false;
        down.role = Role::Unknown as i32;
        let mut unproven = node(3);
        unproven.proven = false;
        let st = status(vec![node(1), down, unproven], &[1, 1, 1, 1, 1, 1]);
        assert!(plan(&st).is_empty(), "{:?}", plan(&st));
        let mut leaving = node(3);
        leaving.leaving = true;
        let st = status(vec![node(1), node(2), leaving], &[1, 1, 1, 1, 1, 1]);
        let moves = plan(&st);
        assert!(!moves.is_empty());
        assert!(
            moves
                .iter()
                .all(|m| matches!(m, Action::TransferLeader { to: 2, .. })),
            "{moves:?}"
        );
    }

    #[test]
    fn a_range_moves_only_to_a_voter_of_its_own() {
        let mut st = status(vec![node(1), node(2), node(3)], &[1, 1, 1, 1]);
        for r in &mut st.ranges {
            r.voters = vec![1, 2];
        }
        let moves = plan(&st);
        assert!(
            moves
                .iter()
                .all(|m| matches!(m, Action::TransferLeader { to: 2, .. })),
            "{moves:?}"
        );
    }
}
