//! Snapshots on demand (`Cluster/Snapshot`, `POST /v1/cluster/snapshot`):
//! each member named makes its applied state durable in its engine and
//! drops its raft log up to it ([`PeerHandle::compact_log`]), as it does by
//! itself once the log passes `--compact-log-entries`. The snapshot a
//! lagging follower is sent is a checkpoint of that durable state.
//!
//! [`PeerHandle::compact_log`]: strata_raft::PeerHandle::compact_log

use std::time::{Duration, Instant};

use strata_proto::v1 as pb;
use strata_proto::v1::cluster_client::ClusterClient;
use strata_proto::v1::node_snapshot::Outcome;

use crate::core::Core;
use crate::error::ApiError;
use crate::rest::model::snapshot::{NodeSnapshot, SnapshotOutcome, SnapshotResult};

/// How long a snapshot request waits for a member before answering
/// "running" (well inside the gateway's 5 s per try).
const SNAPSHOT_WAIT: Duration = Duration::from_secs(3);

/// Snapshots this node; answers once done, or after [`SNAPSHOT_WAIT`]
/// with "running" (the work goes on).
pub async fn snapshot_local(core: &Core) -> pb::NodeSnapshot {
    let started = Instant::now();
    let mut answer = pb::NodeSnapshot {
        id: core.id(),
        ..Default::default()
    };
    let outcome = match tokio::time::timeout(SNAPSHOT_WAIT, core.peer().compact_log()).await {
        Ok(Ok(done)) => {
            answer.durable_index = done.durable_index;
            answer.first_index_before = done.first_index_before;
            answer.first_index_after = done.first_index_after;
            Outcome::Done
        }
        Ok(Err(e)) => {
            answer.error = e.to_string();
            Outcome::Failed
        }
        Err(_) => Outcome::Running,
    };
    answer.outcome = outcome as i32;
    answer.duration_ms = started.elapsed().as_millis() as u64;
    answer
}

/// Snapshots the members `ids` (every member when empty), in parallel. A
/// member id not in the configuration is refused before anything runs.
pub async fn snapshot(core: &Core, ids: &[u64]) -> Result<SnapshotResult, ApiError> {
    let members = core.channels().members();
    let targets: Vec<u64> = if ids.is_empty() {
        members.keys().copied().collect()
    } else {
        for id in ids {
            if !members.contains_key(id) {
                return Err(ApiError::not_found(format!("node {id} is not a member")));
            }
        }
        ids.to_vec()
    };
    let asks = targets.into_iter().map(|id| {
        let channel = core.channels().channel(id);
        async move {
            let started = Instant::now();
            let failed = |error: String| pb::NodeSnapshot {
                id,
                outcome: Outcome::Failed as i32,
                duration_ms: started.elapsed().as_millis() as u64,
                error,
                ..Default::default()
            };
            if id == core.id() {
                return snapshot_local(core).await;
            }
            let Some(channel) = channel else {
                return failed("no channel".into());
            };
            let wait = SNAPSHOT_WAIT + Duration::from_millis(500);
            let mut req = tonic::Request::new(pb::LocalSnapshotRequest {});
            req.set_timeout(wait);
            match tokio::time::timeout(wait, ClusterClient::new(channel).local_snapshot(req)).await
            {
                Ok(Ok(resp)) => resp.into_inner(),
                Ok(Err(status)) => failed(format!("unreachable: {}", status.message())),
                Err(_) => failed("unreachable: timed out".into()),
            }
        }
    });
    let mut nodes: Vec<NodeSnapshot> = futures::future::join_all(asks)
        .await
        .into_iter()
        .map(|n| NodeSnapshot {
            id: n.id,
            outcome: outcome(n.outcome()),
            duration_ms: n.duration_ms,
            durable_index: n.durable_index,
            first_index_before: n.first_index_before,
            first_index_after: n.first_index_after,
            error: n.error,
        })
        .collect();
    nodes.sort_by_key(|n| n.id);
    Ok(SnapshotResult { nodes })
}

fn outcome(o: Outcome) -> SnapshotOutcome {
    match o {
        Outcome::Done => SnapshotOutcome::Done,
        Outcome::Running => SnapshotOutcome::Running,
        Outcome::Failed | Outcome::Unknown => SnapshotOutcome::Failed,
    }
}

/// The wire form of an outcome, for `Cluster/Snapshot`.
pub fn outcome_to_proto(o: SnapshotOutcome) -> Outcome {
    match o {
        SnapshotOutcome::Done => Outcome::Done,
        SnapshotOutcome::Running => Outcome::Running,
        SnapshotOutcome::Failed => Outcome::Failed,
    }
}
