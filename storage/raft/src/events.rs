//! Turning a peer's state changes into events for the event stream.

use std::time::Instant;

use crate::status::{ElectionReason, ElectionStart, PeerStatus, RaftEvent, RaftEventKind, Role};

/// Remembers what the events need between two status snapshots.
#[derive(Default)]
pub(crate) struct EventLog {
    /// Since when this peer has known no leader.
    leaderless_since: Option<Instant>,
    /// Events noted while handling a round (membership, snapshots).
    noted: Vec<(RaftEventKind, String)>,
    /// The leader's `MsgTimeoutNow` was stepped since the last status: an
    /// election that starts now is a hand-over.
    transfer_received: bool,
}

impl EventLog {
    pub(crate) fn note(&mut self, kind: RaftEventKind, detail: String) {
        self.noted.push((kind, detail));
    }

    /// The leader handed leadership over to this peer.
    pub(crate) fn transfer_received(&mut self) {
        self.transfer_received = true;
    }

    /// The events between `old` and `new`, plus whatever was noted;
    /// `pre_candidate`: the peer is asking for pre-votes.
    pub(crate) fn events(
        &mut self,
        old: &PeerStatus,
        new: &PeerStatus,
        pre_candidate: bool,
    ) -> Vec<RaftEvent> {
        let now = Instant::now();
        let event = |kind, duration_ms, detail| RaftEvent::now(kind, new, duration_ms, detail);
        let mut out = Vec::new();
        let transfer = std::mem::take(&mut self.transfer_received);
        if new.role == Role::Candidate && old.role != Role::Candidate {
            let reason = if transfer {
                ElectionReason::Transfer
            } else if old.leader_id != 0 {
                ElectionReason::LeaderLost
            } else {
                ElectionReason::Timeout
            };
            let mut started = event(RaftEventKind::ElectionStarted, 0, String::new());
            started.election = Some(ElectionStart {
                reason,
                pre_vote: pre_candidate,
            });
            out.push(started);
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
            first_index: 0,
            log_bytes: 0,
            voters: vec![1, 2, 3],
            learners: vec![],
            leaving: vec![],
            failure: None,
            proven: true,
        }
    }

    #[test]
    fn an_election_reports_start_and_how_long_it_took() {
        let mut log = EventLog::default();
        let lost = log.events(
            &status(Role::Follower, 2),
            &status(Role::Follower, 0),
            false,
        );
        assert_eq!(lost[0].kind, RaftEventKind::LeaderChanged);
        let started = log.events(
            &status(Role::Follower, 0),
            &status(Role::Candidate, 0),
            true,
        );
        assert_eq!(started[0].kind, RaftEventKind::ElectionStarted);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let won = log.events(&status(Role::Candidate, 0), &status(Role::Leader, 1), false);
        let elected = won
            .iter()
            .find(|e| e.kind == RaftEventKind::LeaderChanged)
            .unwrap();
        assert_eq!(elected.leader_id, 1);
        assert!(elected.duration_ms >= 5, "{}", elected.duration_ms);
    }

    #[test]
    fn an_election_says_why_it_started() {
        // Proves each reason: a timer running out under a leader (its
        // heartbeats stopped, asking for pre-votes), with no leader known
        // (another round), and a hand-over, which is reported once and
        // only for the election that follows it.
        let reason = |log: &mut EventLog, old_leader, pre_vote| {
            let events = log.events(
                &status(Role::Follower, old_leader),
                &status(Role::Candidate, 0),
                pre_vote,
            );
            let started = events
                .iter()
                .find(|e| e.kind == RaftEventKind::ElectionStarted)
                .unwrap();
            started.election.unwrap()
        };
        let mut log = EventLog::default();
        let lost = reason(&mut log, 2, true);
        assert_eq!(
            (lost.reason, lost.pre_vote),
            (ElectionReason::LeaderLost, true)
        );
        assert_eq!(reason(&mut log, 0, true).reason, ElectionReason::Timeout);
        log.transfer_received();
        let handed = reason(&mut log, 2, false);
        assert_eq!(
            (handed.reason, handed.pre_vote),
            (ElectionReason::Transfer, false)
        );
        assert_eq!(reason(&mut log, 2, true).reason, ElectionReason::LeaderLost);
        let other = log.events(
            &status(Role::Follower, 2),
            &status(Role::Follower, 0),
            false,
        );
        assert!(other.iter().all(|e| e.election.is_none()));
    }

    #[test]
    fn noted_events_are_reported_once() {
        let mut log = EventLog::default();
        log.note(RaftEventKind::SnapshotInstalled, "index 9".into());
        let s = status(Role::Follower, 2);
        assert_eq!(log.events(&s, &s, false).len(), 1);
        assert!(log.events(&s, &s, false).is_empty());
    }
}
