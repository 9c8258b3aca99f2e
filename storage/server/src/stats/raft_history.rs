//! The raft peer's latest events, kept for the stats: the event stream
//! shows a browser what happens while it listens, these show what happened
//! before, on every member (who led when, why each election started).

use std::collections::VecDeque;

use parking_lot::Mutex;
use strata_proto::v1::RaftActivity;
use strata_raft::RaftEvent;

/// How many events are kept; older ones fall off. An election costs each
/// member two to four (election, role and leader changes).
pub const KEPT: usize = 64;

/// A bounded list of the peer's latest events, oldest first.
#[derive(Default)]
pub struct RaftHistory {
    recent: Mutex<VecDeque<RaftActivity>>,
}

impl RaftHistory {
    /// Records `event` as the peer publishes it.
    pub fn record(&self, event: &RaftEvent) {
        let mut recent = self.recent.lock();
        if recent.len() == KEPT {
            recent.pop_front();
        }
        recent.push_back(activity(event));
    }

    /// What is kept, oldest first.
    pub fn recent(&self) -> Vec<RaftActivity> {
        self.recent.lock().iter().cloned().collect()
    }
}

fn activity(e: &RaftEvent) -> RaftActivity {
    RaftActivity {
        kind: e.kind.as_str().into(),
        term: e.term,
        leader_id: e.leader_id,
        role: e.role.as_str().into(),
        at_ms: e.at_ms,
        duration_ms: e.duration_ms,
        detail: e.detail.clone(),
        election_reason: e
            .election
            .map(|s| s.reason.as_str().to_string())
            .unwrap_or_default(),
        pre_vote: e.election.is_some_and(|s| s.pre_vote),
    }
}

#[cfg(test)]
mod tests {
    use strata_raft::{ElectionReason, ElectionStart, RaftEventKind, Role};

    use super::*;

    fn event(kind: RaftEventKind, term: u64) -> RaftEvent {
        RaftEvent {
            kind,
            node_id: 2,
            group_id: 1,
            term,
            leader_id: 0,
            role: Role::Candidate,
            at_ms: 1_000 + term,
            duration_ms: 0,
            detail: String::new(),
            election: None,
        }
    }

    #[test]
    fn keeps_the_latest_events_in_order_with_why_elections_started() {
        // Proves the list is bounded and drops the oldest first, and that an
        // election keeps its reason and pre-vote while other kinds have none.
        let history = RaftHistory::default();
        for term in 0..(KEPT as u64 + 3) {
            history.record(&event(RaftEventKind::RoleChanged, term));
        }
        let mut started = event(RaftEventKind::ElectionStarted, 99);
        started.election = Some(ElectionStart {
            reason: ElectionReason::LeaderLost,
            pre_vote: true,
        });
        history.record(&started);
        let recent = history.recent();
        assert_eq!(recent.len(), KEPT);
        assert_eq!(recent[0].term, 4, "the oldest fell off");
        assert_eq!(recent[0].kind, "role_changed");
        assert_eq!(recent[0].election_reason, "");
        let last = recent.last().unwrap();
        assert_eq!(
            (
                last.kind.as_str(),
                last.election_reason.as_str(),
                last.pre_vote
            ),
            ("election_started", "leader_lost", true)
        );
        assert_eq!(last.role, "candidate");
    }
}
