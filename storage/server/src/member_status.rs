//! The cluster-wide view: every member's own status, gathered by asking each
//! peer, and a watch that keeps it fresh for event-stream subscribers.

use std::sync::Arc;
use std::time::Duration;

use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::{LocalStatusRequest, NodeStatus, RangeStatus, Role, StatusResponse};
use strata_raft::{KeySpan, PeerHandle};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use crate::core::Core;

const PEER_STATUS_TIMEOUT: Duration = Duration::from_millis(300);

/// Asks every member for its status; unreachable members are reported
/// unhealthy with the reason.
pub async fn gather(core: &Core) -> StatusResponse {
    let local = core.local_status();
    let group_id = local.group_id;
    let mut asks = Vec::new();
    for (id, address) in core.channels().members() {
        if id == core.id() {
            continue;
        }
        let channel = core.channels().channel(id);
        let address = address.clone();
        asks.push(async move {
            let unreachable = |error: String| NodeStatus {
                id,
                address: address.clone(),
                role: Role::Unknown as i32,
                healthy: false,
                error,
                ..Default::default()
            };
            let Some(channel) = channel else {
                return unreachable("no channel".into());
            };
            let mut req = tonic::Request::new(LocalStatusRequest {});
            req.set_timeout(PEER_STATUS_TIMEOUT);
            match tokio::time::timeout(
                PEER_STATUS_TIMEOUT,
                ClusterClient::new(channel).local_status(req),
            )
            .await
            {
                Ok(Ok(resp)) => resp.into_inner(),
                Ok(Err(status)) => unreachable(format!("unreachable: {}", status.message())),
                Err(_) => unreachable("unreachable: timed out".into()),
            }
        });
    }
    let mut nodes = futures::future::join_all(asks).await;
    nodes.push(local);
    nodes.sort_by_key(|n| n.id);
    let (term, leader_id) = leader_of(&nodes);
    let ranges = ranges(core, group_id, leader_id, term);
    StatusResponse {
        leader_id,
        term,
        cluster_id: local_cluster_id(&nodes, core.id()),
        nodes,
        ranges,
    }
}

/// The ranges this node serves, in key order, each with its raft group's
/// voters and learners as this node's replica of it has them (none while
/// it knows none: a node that has just joined, not yet caught up, does not
/// call every member a learner). The first group's leader and term are the
/// cluster's (`leader_id`, `term`, from every member's account); another
/// group's are as this node's replica knows them.
fn ranges(core: &Core, first: u64, leader_id: u64, term: u64) -> Vec<RangeStatus> {
    core.groups()
        .spans()
        .into_iter()
        .map(|(span, group)| {
            let mut range = range_status(span, &group);
            if range.id == first {
                (range.leader_id, range.term) = (leader_id, term);
            }
            range
        })
        .collect()
}

/// Range `span` of `group`, as this node's replica of the group knows it.
pub(crate) fn range_status(span: KeySpan, group: &PeerHandle) -> RangeStatus {
    let st = group.status();
    let sorted = |mut ids: Vec<u64>| {
        ids.sort_unstable();
        ids
    };
    RangeStatus {
        id: st.group_id,
        start: span.start.into(),
        end: span.end.unwrap_or_default().into(),
        voters: sorted(st.voters),
        learners: sorted(st.learners),
        leader_id: st.leader_id,
        term: st.term,
    }
}

/// The cluster id the answering node `id` knows.
fn local_cluster_id(nodes: &[NodeStatus], id: u64) -> u64 {
    nodes
        .iter()
        .find(|n| n.id == id)
        .map_or(0, |n| n.cluster_id)
}

/// Replaces this node's entry in `status` with `local` and recomputes the
/// leader; returns whether anything changed.
fn with_local(status: &mut StatusResponse, local: NodeStatus) -> bool {
    let before = status.clone();
    let first = local.group_id;
    status.cluster_id = local.cluster_id;
    match status.nodes.iter_mut().find(|n| n.id == local.id) {
        Some(n) => *n = local,
        None => {
            status.nodes.push(local);
            status.nodes.sort_by_key(|n| n.id);
        }
    }
    let (term, leader_id) = leader_of(&status.nodes);
    status.term = term;
    status.leader_id = leader_id;
    // The first group's range follows its leader.
    for range in status.ranges.iter_mut().filter(|r| r.id == first) {
        range.term = term;
        range.leader_id = leader_id;
    }
    *status != before
}

/// The leader of the highest term any reachable member reports.
fn leader_of(nodes: &[NodeStatus]) -> (u64, u64) {
    nodes
        .iter()
        .filter(|n| n.healthy || n.term > 0)
        .map(|n| (n.term, n.leader_id))
        .max()
        .unwrap_or((0, 0))
}

/// Keeps a fresh cluster status for subscribers: refreshed every `period`,
/// and at once whenever the local peer reports a raft event (a leader
/// change), so watchers see elections without waiting for the next tick.
/// The task ends once `stopping` turns true (or its sender is gone), which
/// also ends every event stream reading the status.
pub fn spawn_watch(
    core: Arc<Core>,
    period: Duration,
    mut stopping: watch::Receiver<bool>,
) -> (watch::Receiver<StatusResponse>, JoinHandle<()>) {
    let (tx, rx) = watch::channel(StatusResponse::default());
    let mut events = core.peer().subscribe();
    let task = tokio::spawn(async move {
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                _ = stopping.wait_for(|stop| *stop) => break,
                ev = events.recv() => {
                    if matches!(ev, Err(broadcast::error::RecvError::Closed)) {
                        break;
                    }
                    // This node's own view changed (e.g. a new leader):
                    // show it at once, before asking the peers, which can
                    // take a while when one of them is down.
                    let local = core.local_status();
                    tx.send_if_modified(|old| with_local(old, local));
                }
            }
            let status = gather(&core).await;
            tx.send_if_modified(|old| {
                if *old == status {
                    return false;
                }
                *old = status;
                true
            });
            if tx.is_closed() {
                break;
            }
        }
    });
    (rx, task)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: u64, term: u64, leader_id: u64) -> NodeStatus {
        NodeStatus {
            id,
            term,
            leader_id,
            healthy: true,
            group_id: 1,
            ..Default::default()
        }
    }

    #[test]
    fn a_local_leader_change_shows_without_asking_peers() {
        let mut st = StatusResponse {
            leader_id: 1,
            term: 6,
            nodes: vec![node(1, 6, 1), node(2, 6, 1), node(3, 6, 1)],
            cluster_id: 0,
            ranges: vec![RangeStatus {
                id: 1,
                voters: vec![1, 2, 3],
                leader_id: 1,
                term: 6,
                ..Default::default()
            }],
        };
        assert!(with_local(&mut st, node(2, 7, 2)));
        assert_eq!((st.term, st.leader_id), (7, 2));
        assert_eq!(
            (st.ranges[0].term, st.ranges[0].leader_id),
            (7, 2),
            "the range's leader too"
        );
        assert!(!with_local(&mut st, node(2, 7, 2)), "no change, no update");
    }
}
