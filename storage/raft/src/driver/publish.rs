//! Status publishing: after every round the driver computes the peer's
//! status and, when it changed or events were noted, hands it to the
//! handles together with the events the change implies, and counts the
//! requests it holds in flight.

use std::sync::atomic::Ordering;

use super::Driver;
use crate::mailbox::Shared;
use crate::metrics::{MemberLabels, RaftMetrics};
use crate::status::{PeerStatus, Role};

impl Driver {
    /// What this peer counts; `Shared` holds the same families.
    pub(crate) fn metrics(&self) -> &RaftMetrics {
        &self.metrics
    }

    /// What the transport stamps this peer's batches with.
    pub(crate) fn stamps(&self) -> std::sync::Arc<crate::stamp::Stamps> {
        self.stamps.clone()
    }

    /// The status as last published.
    pub(crate) fn status(&self) -> PeerStatus {
        self.last_status.clone()
    }

    pub(super) fn compute_status(&self) -> PeerStatus {
        let raft = &self.node.raft;
        let conf = raft.prs().conf();
        let mut voters: Vec<u64> = conf.voters().ids().iter().collect();
        voters.sort_unstable();
        let mut learners: Vec<u64> = conf.learners().iter().copied().collect();
        learners.sort_unstable();
        let cs = conf.to_conf_state();
        let mut leaving: Vec<u64> = cs
            .voters_outgoing
            .iter()
            .copied()
            .filter(|id| !cs.voters.contains(id))
            .collect();
        leaving.sort_unstable();
        PeerStatus {
            id: self.id,
            group_id: self.group_id,
            role: Role::from_raft(raft.state, learners.contains(&self.id)),
            term: raft.term,
            leader_id: raft.leader_id,
            commit_index: raft.raft_log.committed,
            applied_index: raft.raft_log.applied,
            last_index: raft.raft_log.last_index(),
            first_index: self.node.store().first_index(),
            log_bytes: self.node.store().entries_bytes(),
            voters,
            learners,
            leaving,
            failure: self.failure.clone(),
            proven: self.is_proven(),
        }
    }

    pub(super) fn publish(&mut self, shared: &Shared) {
        let requests = self.queued.len()
            + self.proposals.len()
            + self.conf_waiters.len()
            + self.reads.waiting();
        shared.requests_in_flight.store(requests, Ordering::Relaxed);
        let status = self.compute_status();
        self.publish_progress(&status);
        if status == self.last_status && !self.events.has_noted() {
            return;
        }
        let pre_candidate = self.node.raft.state == raft::StateRole::PreCandidate;
        let events = self
            .events
            .events(&self.last_status, &status, pre_candidate);
        *shared.status.write() = status.clone();
        for e in events {
            self.metrics.event(e.kind);
            if let Some(start) = e.election {
                self.metrics.election(start.reason);
            }
            let _ = shared.events.send(e);
        }
        self.last_status = status;
    }
}

impl Driver {
    /// On a leader, each other member's match index and lag; elsewhere
    /// none, since only a leader knows them. Refreshed every round, as a
    /// member catches up without the status changing.
    fn publish_progress(&mut self, status: &PeerStatus) {
        let m = &self.metrics;
        let members_changed = status.voters != self.last_status.voters
            || status.learners != self.last_status.learners;
        if status.role != Role::Leader || members_changed {
            m.member_match_index.clear();
            m.member_lag_entries.clear();
            m.member_lag_seconds.clear();
        }
        if status.role != Role::Leader {
            self.append_times.clear();
            return;
        }
        let now = self.clock.now();
        let last = status.last_index;
        self.append_times.record(last, now);
        for (&id, pr) in self.node.raft.prs().iter() {
            if id == self.id {
                continue;
            }
            let member = MemberLabels { member: id };
            m.member_match_index
                .get_or_create(&member)
                .set(pr.matched as i64);
            m.member_lag_entries
                .get_or_create(&member)
                .set(last.saturating_sub(pr.matched) as i64);
            m.member_lag_seconds
                .get_or_create(&member)
                .set(self.append_times.lag(pr.matched, now).as_secs_f64());
        }
    }
}

/// The status before the first one is computed: a follower that knows
/// nothing yet.
pub(super) fn blank_status(id: u64, group_id: u64) -> PeerStatus {
    PeerStatus {
        id,
        group_id,
        role: Role::Follower,
        term: 0,
        leader_id: 0,
        commit_index: 0,
        applied_index: 0,
        last_index: 0,
        first_index: 0,
        log_bytes: 0,
        voters: Vec::new(),
        learners: Vec::new(),
        leaving: Vec::new(),
        failure: None,
        proven: false,
    }
}
