//! Incoming raft messages screened for amnesia: a member whose disk was
//! emptied or replaced comes back under its old id with a log that holds
//! nothing but the bootstrap state, yet the group may still count on what
//! it acknowledged before. Every message from another member passes here
//! before raft-rs steps it, after its batch's stamp was taken
//! (`vouching`).
//!
//! Two rules:
//!
//! - **A heartbeat committing beyond the log.** raft-rs's leader sends
//!   each follower `commit = min(matched, committed)` in a heartbeat, and
//!   `matched` only grows from the follower's own acknowledgements of
//!   entries it had persisted; raft-rs would panic on a commit beyond the
//!   log (`to_commit … is out of range`). If the leader counted them from
//!   another life of this member (the batch's stamp names an incarnation
//!   other than this one's, or none), the member was wiped and came back:
//!   the heartbeat is stepped without advancing the commit, and the
//!   leader, hearing the new incarnation in the answer, starts over with
//!   it. If the leader counted them from this very life, the disk kept
//!   less than it synced: the member fails with
//!   [`StorageFailureKind::LostState`] and says what to do. Appends need
//!   no check: their commit is the leader's own, which a member that
//!   merely lags is also behind, and raft-rs clamps it to the entries the
//!   append carries.
//! - **An unproven member does not vote** (see `vouching` for when a
//!   member is proven), except in a fresh group: while it and the
//!   candidate both hold only the bootstrap state, it cannot have
//!   acknowledged anything. It answers with a rejection, as raft-rs would,
//!   so the candidate counts it rather than waiting out its timeout.
//!
//! [`StorageFailureKind::LostState`]: crate::StorageFailureKind::LostState

use raft::eraftpb::{Message, MessageType};

use super::Driver;
use crate::error::StorageFailure;
use crate::log::store::BOOTSTRAP_INDEX;
#[cfg(test)]
use crate::log::store::BOOTSTRAP_TERM;
use crate::stamp::Stamp;

/// What to do with an incoming message.
#[derive(Debug, PartialEq)]
pub(super) enum Screened {
    /// Step it into raft.
    Step,
    /// Step it with its commit lowered to the member's own: a heartbeat
    /// from a leader counting acknowledgements of another life.
    StepHoldingCommit,
    /// Do not step it; send this answer instead.
    Refuse(Message),
    /// It proves this member lost entries it acknowledged to `leader`,
    /// which counts it as holding entries up to `commit`.
    LostState { leader: u64, term: u64, commit: u64 },
}

/// The member's own state, as far as screening needs it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Local {
    pub id: u64,
    pub incarnation: u64,
    pub proven: bool,
    pub term: u64,
    /// The last index of raft's log (persisted or not).
    pub last_index: u64,
}

/// Decides what to do with `m`, which is addressed to this member and
/// came in a batch stamped `stamp`.
pub(super) fn screen(m: &Message, stamp: Stamp, local: Local) -> Screened {
    // A message from an earlier term is refused or ignored by raft-rs
    // itself, and it does not come from the current leader.
    if m.term < local.term {
        return Screened::Step;
    }
    match m.get_msg_type() {
        MessageType::MsgHeartbeat if m.commit > local.last_index => {
            // An incarnation is never 0 (0 on the wire: unknown).
            if stamp.to_incarnation == local.incarnation {
                Screened::LostState {
                    leader: m.from,
                    term: m.term,
                    commit: m.commit,
                }
            } else {
                Screened::StepHoldingCommit
            }
        }
        kind @ (MessageType::MsgRequestVote | MessageType::MsgRequestPreVote)
            if !local.proven
                && (local.last_index > BOOTSTRAP_INDEX || m.index > local.last_index) =>
        {
            Screened::Refuse(rejection(m, kind, local))
        }
        _ => Screened::Step,
    }
}

/// The rejection raft-rs itself sends: a refused vote carries the
/// candidate's term (raft-rs adopts it first), so that the candidate
/// counts it; a refused pre-vote carries the voter's own, since a pre-vote
/// never changes a term.
fn rejection(m: &Message, kind: MessageType, local: Local) -> Message {
    let mut answer = Message::default();
    let (answer_kind, term) = if kind == MessageType::MsgRequestVote {
        (MessageType::MsgRequestVoteResponse, m.term)
    } else {
        (MessageType::MsgRequestPreVoteResponse, local.term)
    };
    answer.set_msg_type(answer_kind);
    answer.from = local.id;
    answer.to = m.from;
    answer.term = term;
    answer.reject = true;
    answer
}

/// The one message an amnesiac member gives: what it found and what the
/// operator does about it.
pub(super) fn lost_state_reason(
    id: u64,
    last_index: u64,
    leader: u64,
    term: u64,
    commit: u64,
) -> String {
    format!(
        "this node's raft log ends at index {last_index}, but the leader (node {leader}, \
         term {term}) counts this very life of it as holding entries up to index {commit}: \
         it lost entries it had acknowledged while keeping its identity (its disk kept less \
         than it synced, or its raft log was replaced). Empty its data directory and start it \
         again: it comes back as a new life of member {id}, which the leader catches up, or \
         remove it (`strata member remove {id}`) and start an empty node with `--join`"
    )
}

impl Driver {
    /// Steps `m`, which came in a batch stamped `stamp`, into raft unless
    /// screening says otherwise.
    pub(super) fn step_screened(&mut self, mut m: Message, stamp: Stamp) {
        let raft = &self.node.raft;
        if super::lease::ignores_vote_at_start(
            &m,
            raft.term,
            self.reads.ticks(),
            self.election_ticks,
        ) {
            return;
        }
        let local = Local {
            id: self.id,
            incarnation: self.incarnation,
            proven: self.is_proven(),
            term: raft.term,
            last_index: raft.raft_log.last_index(),
        };
        match screen(&m, stamp, local) {
            screened @ (Screened::Step | Screened::StepHoldingCommit) => {
                if screened == Screened::StepHoldingCommit {
                    tracing::info!(
                        leader = m.from,
                        commit = m.commit,
                        last_index = local.last_index,
                        "the leader counts entries acknowledged by an earlier life of this \
                         member; its commit is not taken until it hears of this one"
                    );
                    m.commit = self.node.raft.raft_log.committed;
                }
                if m.get_msg_type() == MessageType::MsgTimeoutNow {
                    self.events.transfer_received();
                }
                self.limit_flow(Some(&m), 0);
                if let Err(e) = self.node.step(m) {
                    tracing::debug!(error = %e, "raft step failed");
                }
            }
            Screened::Refuse(answer) => {
                tracing::info!(
                    candidate = m.from,
                    candidate_index = m.index,
                    last_index = local.last_index,
                    "refusing a vote: this member's log was created empty and no leader has \
                     vouched for it yet"
                );
                self.transport.send(vec![answer]);
            }
            Screened::LostState {
                leader,
                term,
                commit,
            } => {
                let reason = lost_state_reason(self.id, local.last_index, leader, term, commit);
                self.fail_lost_state(StorageFailure::lost_state(reason));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRESH: Local = Local {
        id: 3,
        incarnation: 77,
        proven: false,
        term: BOOTSTRAP_TERM,
        last_index: BOOTSTRAP_INDEX,
    };

    /// A leader's stamp that knows this member as `to_incarnation`.
    fn knowing(to_incarnation: u64) -> Stamp {
        Stamp {
            incarnation: 5,
            proven: true,
            to_incarnation,
            vouched: false,
            cluster_id: 0,
        }
    }

    fn message(kind: MessageType, from: u64, term: u64) -> Message {
        let mut m = Message::default();
        m.set_msg_type(kind);
        m.from = from;
        m.to = FRESH.id;
        m.term = term;
        m
    }

    fn heartbeat(term: u64, commit: u64) -> Message {
        let mut m = message(MessageType::MsgHeartbeat, 1, term);
        m.commit = commit;
        m
    }

    fn vote(kind: MessageType, term: u64, index: u64) -> Message {
        let mut m = message(kind, 2, term);
        m.index = index;
        m.log_term = term - 1;
        m
    }

    // Proves that a heartbeat whose commit is beyond the log (the panic
    // raft-rs would hit) proves lost state when the leader counted this
    // very life, and that one within the log is stepped.
    #[test]
    fn heartbeat_committing_beyond_the_log_of_this_life_proves_lost_state() {
        let this_life = knowing(FRESH.incarnation);
        assert_eq!(
            screen(&heartbeat(9, 945_351), this_life, FRESH),
            Screened::LostState {
                leader: 1,
                term: 9,
                commit: 945_351
            }
        );
        assert_eq!(
            screen(&heartbeat(9, BOOTSTRAP_INDEX), this_life, FRESH),
            Screened::Step
        );
        let caught_up = Local {
            last_index: 945_351,
            ..FRESH
        };
        assert_eq!(
            screen(&heartbeat(9, 945_351), this_life, caught_up),
            Screened::Step
        );
    }

    // Proves that the same heartbeat from a leader that counted another
    // life of this member (or knows none) is stepped without its commit:
    // the member was wiped and came back, and the leader starts over once
    // it hears the new incarnation.
    #[test]
    fn heartbeat_counting_another_life_is_stepped_without_its_commit() {
        for stamp in [knowing(12), knowing(0), Stamp::default()] {
            assert_eq!(
                screen(&heartbeat(9, 945_351), stamp, FRESH),
                Screened::StepHoldingCommit,
                "{stamp:?}"
            );
        }
    }

    // Proves that a heartbeat from an earlier term is left to raft-rs (which
    // ignores it): a deposed leader may still count a member that was since
    // removed and added back empty.
    #[test]
    fn heartbeat_from_an_earlier_term_is_not_proof() {
        let local = Local { term: 12, ..FRESH };
        assert_eq!(
            screen(&heartbeat(11, 900), knowing(FRESH.incarnation), local),
            Screened::Step
        );
    }

    // Proves that appends are stepped whatever their commit: a member that
    // merely lags receives the leader's full commit index too.
    #[test]
    fn append_with_a_commit_beyond_the_log_is_stepped() {
        let mut m = message(MessageType::MsgAppend, 1, 9);
        m.index = 900;
        m.log_term = 9;
        m.commit = 945_351;
        assert_eq!(
            screen(&m, knowing(FRESH.incarnation), FRESH),
            Screened::Step
        );
    }

    // Proves that an unproven member refuses a vote and a pre-vote to a
    // candidate beyond the bootstrap state, in the form raft-rs uses, and
    // refuses every candidate once it holds entries itself (a snapshot or
    // a leader's appends do not make up for what it lost).
    #[test]
    fn unproven_member_refuses_votes() {
        let Screened::Refuse(answer) = screen(
            &vote(MessageType::MsgRequestVote, 9, 40),
            Stamp::default(),
            FRESH,
        ) else {
            panic!("a vote for a candidate beyond the bootstrap must be refused");
        };
        assert_eq!(answer.get_msg_type(), MessageType::MsgRequestVoteResponse);
        assert!(answer.reject);
        assert_eq!((answer.from, answer.to, answer.term), (3, 2, 9));

        let Screened::Refuse(answer) = screen(
            &vote(MessageType::MsgRequestPreVote, 9, 40),
            Stamp::default(),
            FRESH,
        ) else {
            panic!("a pre-vote for a candidate beyond the bootstrap must be refused");
        };
        assert_eq!(
            answer.get_msg_type(),
            MessageType::MsgRequestPreVoteResponse
        );
        assert!(answer.reject);
        assert_eq!(
            (answer.from, answer.to, answer.term),
            (3, 2, FRESH.term),
            "a pre-vote answer carries the voter's own term"
        );

        let with_entries = Local {
            last_index: 120,
            ..FRESH
        };
        for (kind, index) in [
            (MessageType::MsgRequestVote, 40),
            (MessageType::MsgRequestPreVote, 200),
        ] {
            assert!(matches!(
                screen(&vote(kind, 9, index), Stamp::default(), with_entries),
                Screened::Refuse(_)
            ));
        }
    }

    // Proves that a fresh group still elects (a candidate at the bootstrap
    // index is left to raft-rs while the member holds only that too), and
    // that a proven member's votes are raft-rs's to decide.
    #[test]
    fn votes_are_left_to_raft_in_a_fresh_group_and_once_proven() {
        for kind in [MessageType::MsgRequestVote, MessageType::MsgRequestPreVote] {
            assert_eq!(
                screen(&vote(kind, 6, BOOTSTRAP_INDEX), Stamp::default(), FRESH),
                Screened::Step
            );
            let proven = Local {
                proven: true,
                last_index: BOOTSTRAP_INDEX + 1,
                ..FRESH
            };
            assert_eq!(
                screen(&vote(kind, 9, 40), Stamp::default(), proven),
                Screened::Step
            );
        }
    }

    // Proves that a member that joins empty (`--join`: its log starts at
    // index 0) refuses candidates beyond it too, and that a vote of an
    // earlier term is left to raft-rs, which ignores it.
    #[test]
    fn empty_joiner_refuses_and_earlier_terms_are_left_to_raft() {
        let joiner = Local {
            term: 0,
            last_index: 0,
            ..FRESH
        };
        assert!(matches!(
            screen(
                &vote(MessageType::MsgRequestVote, 9, 40),
                Stamp::default(),
                joiner
            ),
            Screened::Refuse(_)
        ));
        let later = Local { term: 12, ..FRESH };
        assert_eq!(
            screen(
                &vote(MessageType::MsgRequestVote, 9, 40),
                Stamp::default(),
                later
            ),
            Screened::Step
        );
    }
}
