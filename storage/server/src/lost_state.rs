//! A node that lost its data. Its raft peer finds out when the leader
//! counts it as holding entries its log does not have (its disk was emptied
//! or replaced) and fails with lost state. Nothing the node does by itself
//! can repair that: it must be removed from the cluster and started again
//! empty with `--join`. So the node stops, with the peer's message as its
//! error, and a supervisor that restarts it sees the same message each time
//! instead of a node that looks alive but never catches up.

use std::time::Duration;

use strata_raft::{PeerHandle, StorageFailure};

/// How often the peer's status is looked at.
const POLL_PERIOD: Duration = Duration::from_millis(100);

/// Resolves with the failure once the peer reports lost state; never on a
/// peer that has not lost any.
pub async fn lost_state(peer: PeerHandle) -> StorageFailure {
    loop {
        if let Some(failure) = peer.status().lost_state() {
            return failure.clone();
        }
        tokio::time::sleep(POLL_PERIOD).await;
    }
}
