//! The cluster-wide view: every member's own status, gathered by asking each
//! peer, and a watch that keeps it fresh for event-stream subscribers.

use std::sync::Arc;
use std::time::Duration;

use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::{LocalStatusRequest, NodeStatus, Role, StatusResponse};
use tokio::sync::{broadcast, watch};

use crate::core::Core;

const PEER_STATUS_TIMEOUT: Duration = Duration::from_millis(300);

/// Asks every member for its status; unreachable members are reported
/// unhealthy with the reason.
pub async fn gather(core: &Core) -> StatusResponse {
    let local = core.local_status();
    let mut asks = Vec::new();
    for (id, address) in core.peers().members() {
        if id == core.id() {
            continue;
        }
        let channel = core.peers().channel(id);
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
    // The leader of the highest term any reachable member reports.
    let (term, leader_id) = nodes
        .iter()
        .filter(|n| n.healthy || n.term > 0)
        .map(|n| (n.term, n.leader_id))
        .max()
        .unwrap_or((0, 0));
    StatusResponse {
        leader_id,
        term,
        nodes,
    }
}

/// Keeps a fresh cluster status for subscribers: refreshed every `period`,
/// and at once whenever the local peer reports a raft event (a leader
/// change), so watchers see elections without waiting for the next tick.
pub fn spawn_watch(core: Arc<Core>, period: Duration) -> watch::Receiver<StatusResponse> {
    let (tx, rx) = watch::channel(StatusResponse::default());
    let mut events = core.peer().subscribe();
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticker.tick() => {}
                ev = events.recv() => {
                    if matches!(ev, Err(broadcast::error::RecvError::Closed)) {
                        break;
                    }
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
    rx
}
