//! The raft peer's position, read from its status at each scrape.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use strata_raft::{PeerHandle, Role};

use super::write::gauge;

/// Term, role and indexes under `strata_raft_`.
pub(super) struct StatusCollector {
    peer: PeerHandle,
}

impl std::fmt::Debug for StatusCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusCollector")
            .field("peer", &self.peer.status().id)
            .finish()
    }
}

impl StatusCollector {
    pub(super) fn new(peer: PeerHandle) -> Self {
        StatusCollector { peer }
    }
}

const ROLES: [Role; 4] = [Role::Leader, Role::Follower, Role::Candidate, Role::Learner];

impl Collector for StatusCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let st = self.peer.status();
        let e = &mut e;
        gauge(
            e,
            "term",
            "The peer's current raft term",
            None,
            st.term as f64,
        )?;
        gauge(
            e,
            "leader_id",
            "The leader this peer knows of; 0 when none",
            None,
            st.leader_id as f64,
        )?;
        gauge(
            e,
            "commit_index",
            "Highest log index known committed",
            None,
            st.commit_index as f64,
        )?;
        gauge(
            e,
            "applied_index",
            "Highest log index applied to the engine",
            None,
            st.applied_index as f64,
        )?;
        gauge(
            e,
            "last_index",
            "Last index in the peer's raft log",
            None,
            st.last_index as f64,
        )?;
        gauge(
            e,
            "first_index",
            "First index the peer's raft log still holds (the ones before were compacted)",
            None,
            st.first_index as f64,
        )?;
        gauge(
            e,
            "log_entry_bytes",
            "Payload bytes of the entries the peer's raft log holds in memory",
            None,
            st.log_bytes as f64,
        )?;
        gauge(
            e,
            "voters",
            "Voters in the configuration",
            None,
            st.voters.len() as f64,
        )?;
        gauge(
            e,
            "learners",
            "Learners in the configuration",
            None,
            st.learners.len() as f64,
        )?;
        gauge(
            e,
            "healthy",
            "1 while the peer's storage works, 0 once it failed",
            None,
            f64::from(u8::from(st.healthy())),
        )?;
        // One sample per role, 1 for the peer's own: the usual way to
        // export a state, so a query can select or count by role.
        let mut family = e.encode_descriptor(
            "role",
            "The peer's raft role: 1 for its current role, 0 for the others.",
            None,
            ConstGauge::new(0.0).metric_type(),
        )?;
        for role in ROLES {
            let labels = [("role", role.as_str())];
            let sample = family.encode_family(&labels)?;
            ConstGauge::new(f64::from(u8::from(role == st.role))).encode(sample)?;
        }
        Ok(())
    }
}
