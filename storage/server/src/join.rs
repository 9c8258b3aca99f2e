//! `--join`: ask the running cluster to add this node as a learner. The
//! request goes to any configured member (which forwards it to the leader);
//! the node then catches up by snapshot and waits to be promoted.

use std::sync::Arc;
use std::time::Duration;

use strata_proto::v1::AddMemberRequest;
use strata_proto::v1::cluster_client::ClusterClient;

use crate::core::Core;

const ATTEMPTS: usize = 120;
const PAUSE: Duration = Duration::from_millis(500);

pub async fn join(core: Arc<Core>, advertise: String) {
    let id = core.id();
    for _ in 0..ATTEMPTS {
        let st = core.peer().status();
        if st.voters.contains(&id) || st.learners.contains(&id) {
            tracing::info!(id, "member of the cluster");
            return;
        }
        for (peer, _) in core.channels().members() {
            let Some(channel) = core.channels().channel(peer) else {
                continue;
            };
            let mut req = tonic::Request::new(AddMemberRequest {
                id,
                address: advertise.clone(),
                range: 0,
            });
            // Adding a member needs the admin role: the node's own token.
            if let Some(value) = core.own_credential()
                && let Ok(value) = tonic::metadata::MetadataValue::try_from(value.as_bytes())
            {
                req.metadata_mut().insert("authorization", value);
            }
            match ClusterClient::new(channel).add_member(req).await {
                Ok(_) => {
                    tracing::info!(id, via = peer, "added to the cluster as a learner");
                    return;
                }
                Err(s) if s.message().contains("already a member") => return,
                Err(s) => tracing::debug!(via = peer, error = %s, "join attempt failed"),
            }
        }
        tokio::time::sleep(PAUSE).await;
    }
    tracing::error!(
        id,
        "could not join the cluster through any configured member"
    );
}
