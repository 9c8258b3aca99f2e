//! Incoming raft messages screened for amnesia: a member whose disk was
//! emptied or replaced comes back under its old id with a log that holds
//! nothing but the bootstrap state, yet the group still counts on what it
//! acknowledged before. Every message from another member passes here
//! before raft-rs steps it.
//!
//! Two rules:
//!
//! - **A heartbeat proves the loss.** raft-rs's leader sends each follower
//!   `commit = min(matched, committed)` in a heartbeat, and `matched` only
//!   grows from the follower's own acknowledgements of entries it had
//!   persisted. A heartbeat of the current term whose commit is beyond our
//!   last index therefore means we lost entries we acknowledged. raft-rs
//!   would panic on it (`to_commit … is out of range`); instead the member
//!   fails with [`StorageFailureKind::LostState`] and says what to do.
//!   Appends need no such check: their commit is the leader's own, which a
//!   member that merely lags is also behind, and raft-rs clamps it to the
//!   entries the append carries.
//! - **A member holding only the bootstrap state does not vote for a
//!   candidate that holds more.** It cannot tell an empty disk from a fresh
//!   start, and a wiped voter that voted could elect a candidate lacking
//!   writes that were committed with its own lost acknowledgement (in a
//!   five-member group, two wiped voters and a lagging candidate are a
//!   majority). In a fresh group every candidate is at the bootstrap index
//!   too, so elections proceed; a member that starts late votes once it
//!   has received entries. It answers with a rejection, as raft-rs would,
//!   so the candidate counts it rather than waiting out its timeout.
//!
//! [`StorageFailureKind::LostState`]: crate::StorageFailureKind::LostState

use raft::eraftpb::{Message, MessageType};

use super::Driver;
use crate::error::StorageFailure;
use crate::log::store::BOOTSTRAP_INDEX;
#[cfg(test)]
use crate::log::store::BOOTSTRAP_TERM;

/// What to do with an incoming message.
#[derive(Debug, PartialEq)]
pub(super) enum Screened {
    /// Step it into raft.
    Step,
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
    pub term: u64,
    /// The last index of raft's log (persisted or not).
    pub last_index: u64,
}

/// Decides what to do with `m`, which is addressed to this member.
pub(super) fn screen(m: &Message, local: Local) -> Screened {
    // A message from an earlier term is refused or ignored by raft-rs
    // itself, and it does not come from the current leader.
    if m.term < local.term {
        return Screened::Step;
    }
    match m.get_msg_type() {
        MessageType::MsgHeartbeat if m.commit > local.last_index => Screened::LostState {
            leader: m.from,
            term: m.term,
            commit: m.commit,
        },
        kind @ (MessageType::MsgRequestVote | MessageType::MsgRequestPreVote)
            if local.last_index <= BOOTSTRAP_INDEX && m.index > local.last_index =>
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
         term {term}) counts it as holding entries up to index {commit}: this node lost data \
         it had acknowledged (its data directory was emptied or replaced, or its disk kept \
         less than it synced). Remove it from the cluster (`strata member remove {id}`) \
         and start an empty node with `--join` under a new id"
    )
}

impl Driver {
    /// Steps `m` into raft unless screening says otherwise.
    pub(super) fn step_screened(&mut self, m: Message) {
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
            term: raft.term,
            last_index: raft.raft_log.last_index(),
        };
        match screen(&m, local) {
            Screened::Step => {
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
                    "refusing a vote: this member holds only the bootstrap state"
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
        term: BOOTSTRAP_TERM,
        last_index: BOOTSTRAP_INDEX,
    };

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
    // raft-rs would hit) is taken as proof of lost state, and that one
    // within the log is stepped.
    #[test]
    fn heartbeat_committing_beyond_the_log_proves_lost_state() {
        assert_eq!(
            screen(&heartbeat(9, 945_351), FRESH),
            Screened::LostState {
                leader: 1,
                term: 9,
                commit: 945_351
            }
        );
        assert_eq!(
            screen(&heartbeat(9, BOOTSTRAP_INDEX), FRESH),
            Screened::Step
        );
        let caught_up = Local {
            last_index: 945_351,
            ..FRESH
        };
        assert_eq!(screen(&heartbeat(9, 945_351), caught_up), Screened::Step);
    }

    // Proves that a heartbeat from an earlier term is left to raft-rs (which
    // ignores it): a deposed leader may still count a member that was since
    // removed and added back empty.
    #[test]
    fn heartbeat_from_an_earlier_term_is_not_proof() {
        let local = Local { term: 12, ..FRESH };
        assert_eq!(screen(&heartbeat(11, 900), local), Screened::Step);
    }

    // Proves that appends are stepped whatever their commit: a member that
    // merely lags receives the leader's full commit index too.
    #[test]
    fn append_with_a_commit_beyond_the_log_is_stepped() {
        let mut m = message(MessageType::MsgAppend, 1, 9);
        m.index = 900;
        m.log_term = 9;
        m.commit = 945_351;
        assert_eq!(screen(&m, FRESH), Screened::Step);
    }

    // Proves that a member holding only the bootstrap state refuses a vote
    // and a pre-vote to a candidate beyond it, in the form raft-rs uses.
    #[test]
    fn bootstrap_only_member_refuses_candidates_beyond_it() {
        let Screened::Refuse(answer) = screen(&vote(MessageType::MsgRequestVote, 9, 40), FRESH)
        else {
            panic!("a vote for a candidate beyond the bootstrap must be refused");
        };
        assert_eq!(answer.get_msg_type(), MessageType::MsgRequestVoteResponse);
        assert!(answer.reject);
        assert_eq!((answer.from, answer.to, answer.term), (3, 2, 9));

        let Screened::Refuse(answer) = screen(&vote(MessageType::MsgRequestPreVote, 9, 40), FRESH)
        else {
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
    }

    // Proves that a fresh group still elects: a candidate at the bootstrap
    // index is left to raft-rs, and so is any candidate once the member
    // holds entries of its own.
    #[test]
    fn votes_are_left_to_raft_in_a_fresh_group_and_after_entries_arrive() {
        for kind in [MessageType::MsgRequestVote, MessageType::MsgRequestPreVote] {
            assert_eq!(
                screen(&vote(kind, 6, BOOTSTRAP_INDEX), FRESH),
                Screened::Step
            );
            let with_entries = Local {
                last_index: BOOTSTRAP_INDEX + 1,
                ..FRESH
            };
            assert_eq!(screen(&vote(kind, 9, 40), with_entries), Screened::Step);
        }
    }

    // Proves that a member that joins empty (`--join`: its log starts at
    // index 0) refuses candidates beyond it too, and that a vote of an
    // earlier term is left to raft-rs, which ignores it.
    #[test]
    fn empty_joiner_refuses_and_earlier_terms_are_left_to_raft() {
        let joiner = Local {
            id: 3,
            term: 0,
            last_index: 0,
        };
        assert!(matches!(
            screen(&vote(MessageType::MsgRequestVote, 9, 40), joiner),
            Screened::Refuse(_)
        ));
        let later = Local { term: 12, ..FRESH };
        assert_eq!(
            screen(&vote(MessageType::MsgRequestVote, 9, 40), later),
            Screened::Step
        );
    }
}
