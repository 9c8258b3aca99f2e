//! Naming the cluster: the first leader of a cluster without an id
//! proposes a random one (`Command::ClusterId`); the first such entry
//! applied names it for good (`strata_raft` `state_machine/cluster_id.rs`).
//! A cluster restored from a backup starts without one, so its first
//! leader names it anew and its members refuse the old cluster's.

use std::time::Duration;

use strata_raft::{ApplyResult, Command, PeerHandle, Role};
use tokio::sync::watch;

/// How often a node looks whether it should name the cluster.
const CHECK_EVERY: Duration = Duration::from_millis(200);

/// Runs until the cluster has an id (named by this node or learned from
/// the log) or until `stopping`.
pub fn spawn(
    peer: PeerHandle,
    request_timeout: Duration,
    mut stopping: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = crate::ticker::every(CHECK_EVERY);
        while crate::ticker::next(&mut tick, &mut stopping).await {
            match peer.state_machine().cluster_id() {
                Ok(0) => {}
                Ok(_) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "reading the cluster id");
                    continue;
                }
            }
            let st = peer.status();
            if st.role != Role::Leader || st.leader_id != st.id {
                continue;
            }
            // Never 0, which means "unknown".
            let id = rand::random::<u64>().max(1);
            match tokio::time::timeout(request_timeout, peer.propose(Command::ClusterId { id }))
                .await
            {
                Ok(Ok((index, ApplyResult::ClusterId { id }))) => {
                    tracing::info!(cluster_id = %format!("{id:016x}"), index, "the cluster is named");
                    return;
                }
                Ok(Ok((_, other))) => tracing::warn!(?other, "naming the cluster"),
                Ok(Err(e)) => tracing::debug!(error = %e, "naming the cluster"),
                Err(_) => tracing::debug!("naming the cluster timed out"),
            }
        }
    })
}
