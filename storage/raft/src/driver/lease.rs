//! The leader's lease: in `ReadMode::Lease` a leader answers a read at its
//! commit index without a heartbeat round, for as long as no other member
//! can have become leader.
//!
//! Why that holds. A ReadIndex round's heartbeats are sent after the
//! moment the round is issued, and its answer comes once a quorum has
//! acknowledged them. Each follower that acknowledged reset its election
//! clock on receipt and, with check-quorum on, ignores every (pre-)vote
//! request that is not a leadership transfer until `election_ticks` of its
//! ticks have passed; its ticks are at least `tick` apart, so that lasts at
//! least `(election_ticks - 1) × tick` after the round was issued. Any
//! quorum that could elect another leader shares a member with the one
//! that acknowledged, so for that long nobody else leads, and the leader's
//! commit index covers every acknowledged write once it has committed an
//! entry of its own term. The lease is that window shortened by
//! [`CLOCK_RATE_BOUND`], on the leader's monotonic clock, counted from the
//! moment the round was issued. A driver that stops (blocked on a disk, the
//! process paused) loses its lease with time, whatever raft-rs still
//! believes, since raft-rs counts only ticks.
//!
//! What it also takes, each enforced here or in the driver:
//!
//! - A member that restarts forgets it acknowledged; it ignores vote
//!   requests for its first election timeout ([`ignores_vote_at_start`]).
//! - A transfer lets its target campaign past the others' restraint: a
//!   leader that sent `MsgTimeoutNow` in a term holds no lease for the
//!   rest of that term, even if the transfer is abandoned (the message may
//!   still arrive).
//! - The argument holds within one configuration: a round counts only if
//!   the leader had applied every configuration change in its log when it
//!   was issued, and the lease ends when another change is proposed.
//! - Every member runs with the same `tick` and `election_ticks`.
//!
//! A read the lease does not cover takes the ReadIndex round, so
//! correctness never depends on the lease being held.

use std::time::{Duration, Instant};

use raft::ProgressState;
use raft::eraftpb::{Message, MessageType};

use super::Driver;

/// How much faster one member's monotonic clock may run than another's,
/// as a fraction: far above what crystals drift (about 10⁻⁴) and what NTP
/// slews (at most 5 × 10⁻⁴). NTP steps and manual changes move the wall
/// clock, not the monotonic one.
pub(super) const CLOCK_RATE_BOUND: f64 = 0.05;

/// The lease a ReadIndex round grants, measured on the leader's clock:
/// the followers' restraint of `(election_ticks - 1)` ticks, shortened so
/// that it ends first even if the leader's clock runs slow and the
/// followers' fast by [`CLOCK_RATE_BOUND`].
pub(super) fn lease_duration(election_ticks: usize, tick: Duration) -> Duration {
    let restraint = tick * u32::try_from(election_ticks.saturating_sub(1)).unwrap_or(u32::MAX);
    restraint.mul_f64((1.0 - CLOCK_RATE_BOUND) / (1.0 + CLOCK_RATE_BOUND))
}

/// What the lease needs to know about a ReadIndex round when it is issued
/// by a leader.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Round {
    pub term: u64,
    /// The index of the leader's last configuration change.
    pub conf_index: u64,
    pub issued: Instant,
}

/// The leader's view of raft at one moment, as far as the lease needs it.
#[derive(Debug, Clone, Copy)]
pub(super) struct View {
    pub leading: bool,
    pub term: u64,
    pub committed_in_term: bool,
    pub transferring: bool,
    pub conf_index: u64,
    pub applied: u64,
}

/// The lease a leader holds, if any.
#[derive(Debug)]
pub(super) struct Lease {
    duration: Duration,
    held: Option<Held>,
    /// The last term in which this member sent a transfer's `MsgTimeoutNow`.
    transfer_term: u64,
    /// When the last round of this leader was issued.
    last_round: Option<Instant>,
    /// Whether a read was answered from the lease since that round.
    used: bool,
}

#[derive(Debug, Clone, Copy)]
struct Held {
    term: u64,
    conf_index: u64,
    expires: Instant,
}

impl Lease {
    pub(super) fn new(duration: Duration) -> Self {
        Lease {
            duration,
            held: None,
            transfer_term: 0,
            last_round: None,
            used: false,
        }
    }

    /// The round a leader issues now, if it can grant a lease: none while a
    /// configuration change is not yet applied or a transfer runs.
    pub(super) fn round(&mut self, view: View, now: Instant) -> Option<Round> {
        let can_grant = view.leading
            && view.conf_index <= view.applied
            && !view.transferring
            && self.transfer_term != view.term;
        if !can_grant {
            return None;
        }
        self.last_round = Some(now);
        self.used = false;
        Some(Round {
            term: view.term,
            conf_index: view.conf_index,
            issued: now,
        })
    }

    /// A quorum acknowledged `round`: the lease runs until the lease
    /// duration after it was issued.
    pub(super) fn confirmed(&mut self, round: Round) {
        if self.transfer_term == round.term {
            return;
        }
        let expires = round.issued + self.duration;
        match &mut self.held {
            Some(h) if h.term == round.term && h.conf_index == round.conf_index => {
                h.expires = h.expires.max(expires);
            }
            Some(h) if h.term > round.term => {}
            _ => {
                self.held = Some(Held {
                    term: round.term,
                    conf_index: round.conf_index,
                    expires,
                });
            }
        }
    }

    /// Whether a read may be answered from the lease now.
    pub(super) fn holds(&self, view: View, now: Instant) -> bool {
        self.held.is_some_and(|h| {
            view.leading
                && view.committed_in_term
                && !view.transferring
                && h.term == view.term
                && self.transfer_term != view.term
                && h.conf_index == view.conf_index
                && now < h.expires
        })
    }

    /// Notes a read answered from the lease.
    pub(super) fn used(&mut self) {
        self.used = true;
    }

    /// Whether to issue a round for the lease's sake alone: it is held and
    /// used, and half of it has passed since the last round, so that reads
    /// keep flowing without a round of their own.
    pub(super) fn wants_renewal(&self, view: View, now: Instant) -> bool {
        self.used
            && self.holds(view, now)
            && self
                .last_round
                .is_none_or(|at| now >= at + self.duration / 2)
    }

    /// This member sent a transfer's `MsgTimeoutNow` in `term`.
    pub(super) fn transfer_sent(&mut self, term: u64) {
        self.transfer_term = self.transfer_term.max(term);
        self.held = None;
    }

    /// This member stopped leading.
    pub(super) fn end(&mut self) {
        self.held = None;
        self.last_round = None;
        self.used = false;
    }
}

/// Whether a member started `ticks` ticks ago ignores vote request `m`
/// (given its own `term`): during its first election timeout it may have
/// acknowledged a leader's round in an earlier life, a promise raft-rs
/// keeps only in memory. raft-rs ignores such requests the same way while
/// it has heard from a leader lately; a transfer's campaign passes.
pub(super) fn ignores_vote_at_start(
    m: &Message,
    term: u64,
    ticks: u64,
    election_ticks: usize,
) -> bool {
    matches!(
        m.get_msg_type(),
        MessageType::MsgRequestVote | MessageType::MsgRequestPreVote
    ) && m.term > term
        && m.context.as_ref() != raft::CAMPAIGN_TRANSFER
        && ticks < election_ticks as u64
}

impl Driver {
    /// What the lease needs to know about raft now.
    pub(super) fn lease_view(&self) -> View {
        let raft = &self.node.raft;
        View {
            leading: raft.state == raft::StateRole::Leader,
            term: raft.term,
            committed_in_term: raft.commit_to_current_term(),
            transferring: raft.lead_transferee.is_some(),
            conf_index: raft.pending_conf_index,
            applied: raft.raft_log.applied,
        }
    }

    /// The read index to answer a read at from the lease, if it holds.
    pub(super) fn lease_read_index(&mut self) -> Option<u64> {
        let view = self.lease_view();
        let now = self.clock.now();
        let lease = self.lease.as_mut()?;
        if !lease.holds(view, now) {
            return None;
        }
        lease.used();
        Some(self.node.raft.raft_log.committed)
    }

    /// Sends `messages`; a transfer's `MsgTimeoutNow` among them ends the
    /// lease for the term.
    pub(super) fn send(&mut self, mut messages: Vec<Message>) {
        if messages
            .iter()
            .any(|m| m.get_msg_type() == MessageType::MsgTimeoutNow)
        {
            let term = self.node.raft.term;
            if let Some(lease) = &mut self.lease {
                lease.transfer_sent(term);
            }
        }
        self.withhold_campaign(&mut messages);
        let prs = self.node.raft.prs();
        self.flow.admit(&mut messages, |id| {
            prs.get(id)
                .is_some_and(|pr| pr.state == ProgressState::Probe)
        });
        self.flow.sent(&messages);
        self.transport.send(messages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DURATION: Duration = Duration::from_millis(80);

    fn leader(term: u64) -> View {
        View {
            leading: true,
            term,
            committed_in_term: true,
            transferring: false,
            conf_index: 5,
            applied: 10,
        }
    }

    fn held_from(start: Instant) -> Lease {
        let mut lease = Lease::new(DURATION);
        let round = lease.round(leader(3), start).expect("a round");
        lease.confirmed(round);
        lease
    }

    // Proves that the lease lasts its duration from the moment the round
    // was issued, not from its confirmation, and not an instant longer.
    #[test]
    fn lease_runs_from_the_round_issued_for_its_duration() {
        let start = Instant::now();
        let lease = held_from(start);
        let view = leader(3);
        assert!(lease.holds(view, start));
        assert!(lease.holds(view, start + DURATION - Duration::from_nanos(1)));
        assert!(!lease.holds(view, start + DURATION));
    }

    // Proves that the lease is measured on the monotonic clock the driver
    // reads: after sleeping past its duration it no longer holds. The
    // lease takes only `Instant`s, which setting the wall clock (a jump
    // back or forth, by hand or by NTP) does not move, so no wall-clock
    // jump can lengthen or shorten it; only a pause that the monotonic
    // clock does not count (a suspended host) could, and the documentation
    // says so.
    #[test]
    fn lease_expires_on_the_monotonic_clock() {
        let clock = crate::clock::Clock::Monotonic;
        let short = Duration::from_millis(20);
        let mut lease = Lease::new(short);
        let round = lease.round(leader(3), clock.now()).expect("a round");
        lease.confirmed(round);
        assert!(lease.holds(leader(3), clock.now()));
        std::thread::sleep(short);
        assert!(!lease.holds(leader(3), clock.now()));
    }

    // Proves that the lease is not used by a member that no longer leads,
    // in a later term, before the leader committed an entry of its term,
    // while a transfer runs or once a configuration change was proposed.
    #[test]
    fn lease_holds_only_for_a_settled_leader_of_its_term() {
        let start = Instant::now();
        let lease = held_from(start);
        let cases = [
            (
                "a follower",
                View {
                    leading: false,
                    ..leader(3)
                },
            ),
            ("a later term", leader(4)),
            (
                "nothing committed in the term",
                View {
                    committed_in_term: false,
                    ..leader(3)
                },
            ),
            (
                "a transfer runs",
                View {
                    transferring: true,
                    ..leader(3)
                },
            ),
            (
                "a change was proposed",
                View {
                    conf_index: 11,
                    ..leader(3)
                },
            ),
        ];
        for (what, view) in cases {
            assert!(!lease.holds(view, start), "held by {what}");
        }
    }

    // Proves that a round issued while a configuration change is not yet
    // applied, or while a transfer runs, grants no lease.
    #[test]
    fn round_grants_no_lease_across_a_change_or_a_transfer() {
        let start = Instant::now();
        let mut lease = Lease::new(DURATION);
        let pending_change = View {
            conf_index: 11,
            ..leader(3)
        };
        assert_eq!(lease.round(pending_change, start), None);
        let transferring = View {
            transferring: true,
            ..leader(3)
        };
        assert_eq!(lease.round(transferring, start), None);
        assert_eq!(
            lease.round(
                View {
                    leading: false,
                    ..leader(3)
                },
                start
            ),
            None
        );
    }

    // Proves that once a transfer's MsgTimeoutNow went out in a term, the
    // lease is gone for the rest of the term, even if the transfer is
    // abandoned and later rounds are confirmed.
    #[test]
    fn transfer_sent_ends_the_lease_for_the_term() {
        let start = Instant::now();
        let mut lease = held_from(start);
        lease.transfer_sent(3);
        assert!(!lease.holds(leader(3), start));
        assert_eq!(lease.round(leader(3), start), None);
        lease.confirmed(Round {
            term: 3,
            conf_index: 5,
            issued: start,
        });
        assert!(!lease.holds(leader(3), start));
    }

    // Proves that a confirmation of an older round does not shorten the
    // lease, and that one of an earlier term does not replace it.
    #[test]
    fn older_confirmations_do_not_shorten_the_lease() {
        let start = Instant::now();
        let mut lease = held_from(start + DURATION);
        lease.confirmed(Round {
            term: 3,
            conf_index: 5,
            issued: start,
        });
        lease.confirmed(Round {
            term: 2,
            conf_index: 5,
            issued: start + DURATION,
        });
        assert!(lease.holds(leader(3), start + DURATION + DURATION / 2));
    }

    // Proves that a lease is renewed only once it has been used and half
    // of it has passed since the last round.
    #[test]
    fn renewal_is_wanted_once_a_used_lease_is_half_gone() {
        let start = Instant::now();
        let mut lease = held_from(start);
        let half = start + DURATION / 2;
        assert!(!lease.wants_renewal(leader(3), half), "not used yet");
        lease.used();
        assert!(!lease.wants_renewal(leader(3), half - Duration::from_millis(1)));
        assert!(lease.wants_renewal(leader(3), half));
        lease.round(leader(3), half).expect("a round");
        assert!(!lease.wants_renewal(leader(3), half), "the round renews it");
    }

    // Proves the lease's length: the followers' restraint of
    // `election_ticks - 1` ticks, shortened by the clock-rate bound both
    // ways.
    #[test]
    fn lease_is_shorter_than_the_followers_restraint() {
        let tick = Duration::from_millis(10);
        let lease = lease_duration(10, tick);
        assert!(lease < tick * 9);
        let worst = lease.as_secs_f64() / (1.0 - CLOCK_RATE_BOUND);
        assert!(worst < (tick * 9).as_secs_f64() / (1.0 + CLOCK_RATE_BOUND) + 1e-9);
        assert!(lease > Duration::from_millis(80), "{lease:?}");
    }

    // Proves that a member ignores vote requests of a later term during
    // its first election timeout, except a transfer's, and votes after.
    #[test]
    fn member_ignores_votes_during_its_first_election_timeout() {
        let mut vote = Message::default();
        vote.set_msg_type(MessageType::MsgRequestPreVote);
        vote.term = 4;
        assert!(ignores_vote_at_start(&vote, 3, 0, 10));
        assert!(ignores_vote_at_start(&vote, 3, 9, 10));
        assert!(!ignores_vote_at_start(&vote, 3, 10, 10));
        let mut transfer = vote.clone();
        transfer.set_msg_type(MessageType::MsgRequestVote);
        transfer.context = raft::CAMPAIGN_TRANSFER.to_vec().into();
        assert!(!ignores_vote_at_start(&transfer, 3, 0, 10));
        let mut append = vote.clone();
        append.set_msg_type(MessageType::MsgAppend);
        assert!(!ignores_vote_at_start(&append, 3, 0, 10));
    }
}
