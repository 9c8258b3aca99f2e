//! Turning a peer's state changes into events for the event stream.

use std::time::Instant;

use crate::status::{PeerStatus, RaftEvent, RaftEventKind, Role};

/// Remembers what the events need between two status snapshots.
#[derive(Default)]
pub(crate) struct EventLog {
    /// Since when this peer has known no leader.
    leaderless_since: Option<Instant>,
    /// Events noted while handling a round (membership, snapshots).
    noted: Vec<(RaftEventKind, String)>,
}

impl EventLog {
    pub(crate) fn note(&mut self, kind: RaftEventKind, detail: String) {
        self.noted.push((kind, detail));
    }

    /// The events between `old` and `new`, plus whatever was noted.
    pub(crate) fn events(&mut self, old: &PeerStatus, new: &PeerStatus) -> Vec<RaftEvent> {
        let now = Instant::now();
        let event = |kind, duration_ms, detail| RaftEvent::now(kind, new, duration_ms, detail);
        let mut out = Vec::new();
        if new.role == Role::Candidate && old.role != Role::Candidate {
            out.push(event(RaftEventKind::ElectionStarted, 0, String::new()));
        }
        if new.role != old.role {
            out.push(event(
                RaftEventKind::RoleChanged,
                0,
                format!("{} -> {}", old.role.as_str(), new.role.as_str()),
            ));
        }
        if new.leader_id != old.leader_id {
            let duration_ms = if new.leader_id == 0 {
                self.leaderless_since = Some(now);
                0
            } else {
                self.leaderless_since
                    .take()
                    .map_or(0, |t| now.duration_since(t).as_millis() as u64)
            };
            out.push(event(
                RaftEventKind::LeaderChanged,
                duration_ms,
                String::new(),
            ));
        }
        if let (Some(failure), None) = (&new.failure, &old.failure) {
            out.push(event(
                RaftEventKind::StorageFailed,
                0,
                failure.reason.clone(),
            ));
        }
        for (kind, detail) in self.noted.drain(..) {
            out.push(event(kind, 0, detail));
        }
        out
    }

    pub(crate) fn has_noted(&self) -> bool {
        !self.noted.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(role: Role, leader_id: u64) -> PeerStatus {
        PeerStatus {
            id: 1,
            group_id: 1,
            role,
            term: 2,
            leader_id,
            commit_index: 0,
            applied_index: 0,
            last_index: 0,
            voters: vec![1, 2, 3],
            learners: vec![],
            failure: None,
        }
    }

    #[test]
    fn an_election_reports_start_and_how_long_it_took() {
        let mut log = EventLog::default();
        let lost = log.events(&status(Role::Follower, 2), &status(Role::Follower, 0));
        assert_eq!(lost[0].kind, RaftEventKind::LeaderChanged);
        let started = log.events(&status(Role::Follower, 0), &status(Role::Candidate, 0));
        assert_eq!(started[0].kind, RaftEventKind::ElectionStarted);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let won = log.events(&status(Role::Candidate, 0), &status(Role::Leader, 1));
        let elected = won
            .iter()
            .find(|e| e.kind == RaftEventKind::LeaderChanged)
            .unwrap();
        assert_eq!(elected.leader_id, 1);
        assert!(elected.duration_ms >= 5, "{}", elected.duration_ms);
    }

    #[test]
    fn noted_events_are_reported_once() {
        let mut log = EventLog::default();
        log.note(RaftEventKind::SnapshotInstalled, "index 9".into());
        let s = status(Role::Follower, 2);
        assert_eq!(log.events(&s, &s).len(), 1);
        assert!(log.events(&s, &s).is_empty());
    }
}
