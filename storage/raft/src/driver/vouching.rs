//! A member's lives, and when one whose log was created empty may vote.
//!
//! Each batch of raft messages carries a [`Stamp`]. What the driver does
//! with the stamps:
//!
//! - **A new life resets what the leader counted.** The leader remembers
//!   the incarnation each member last sent. A member whose disk was
//!   emptied comes back under its old id with a new incarnation; its
//!   leader then drops what it counted as that member's (raft's `matched`,
//!   which only ever grows) and probes it like a member just added, so it
//!   stops counting acknowledgements the member no longer holds, and the
//!   member is caught up instead of refused forever.
//! - **An unproven member does not vote or campaign** (`amnesia` refuses
//!   its votes; [`Driver::withhold_campaign`] drops its vote requests),
//!   except in a fresh group, where it and the candidate both hold only
//!   the bootstrap state. A candidate's own vote counts too: a wiped member
//!   that campaigned could win with two lagging ones and its own vote.
//! - **A leader vouches for an unproven member** once the member holds
//!   the leader's log up to an entry the leader appended after it first
//!   heard from that life, and that entry has committed. Why that is
//!   enough: every entry committed with an acknowledgement of the member's
//!   earlier life was committed before the member came back. Those of
//!   earlier terms are in the leader's log (no unproven vote elected it);
//!   those of its own term are below the point where it first heard the
//!   new life. And the entry's commit, by a majority in the leader's term
//!   after the member came back, shows that no later leader had been
//!   elected by then, so none had committed entries the member once
//!   acknowledged. The member holds every such entry, and proves itself
//!   when a stamp vouches for it (see [`crate::identity`]).
//! - **A leader proves itself** once an entry of its own term commits: it
//!   was elected by voters whose logs it holds.
//! - **So does a member that voted for a group's first leader**: it
//!   follows, in the term it voted in, the leader it voted for, and that
//!   leader's first entry of the term sits right after the bootstrap state.
//!   That leader was elected with nothing but the bootstrap state, by a
//!   majority holding only that, so nothing had committed before; and this
//!   life of the member cast the vote, so it began before that election.
//!   Without this, a group whose first leader stopped before vouching for
//!   anyone could not elect another.
//! - **And so does that first leader itself**, once its first entry of
//!   the term sits right after the bootstrap state, whether or not it sees
//!   the entry commit: the same argument holds (it voted for itself). A
//!   first leader that stepped down before an entry of its term committed
//!   had otherwise left its voters the only proven members, and a group of
//!   three with one proven member elects no one (docs/reliability.md,
//!   finding 11).
//!
//! The leader appends an empty entry to serve as the point after which it
//! heard from unproven members: one for all those it heard from in a round.

use std::collections::BTreeMap;

use raft::StateRole;
use raft::eraftpb::{Entry, Message, MessageType};

use super::Driver;
use crate::log::store::BOOTSTRAP_INDEX;
use crate::stamp::{Known, Stamp};

/// Where a leader stands with an unproven member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Floor {
    /// Heard from; the entry marking it is not appended yet.
    Heard,
    /// The member is vouched for once it holds this entry and the entry
    /// has committed.
    At(u64),
}

/// The driver's side of stamps.
#[derive(Debug, Default)]
pub(super) struct Vouching {
    /// What the transport stamps batches with.
    known: Known,
    /// Unproven members not yet vouched for, while leading.
    floors: BTreeMap<u64, Floor>,
    /// The term `floors` and the vouches belong to, while leading.
    led_term: Option<u64>,
}

impl Vouching {
    pub(super) fn new(proven: bool) -> Self {
        Vouching {
            known: Known {
                proven,
                ..Known::default()
            },
            ..Vouching::default()
        }
    }

    /// Forgets what leading meant once the term changed or leadership was
    /// lost: a new leader starts its own count.
    fn follow(&mut self, role: StateRole, term: u64) {
        let leading = (role == StateRole::Leader).then_some(term);
        if leading != self.led_term {
            self.floors.clear();
            self.known.vouched.clear();
            self.led_term = leading;
        }
    }
}

impl Driver {
    /// Whether this member holds everything it ever acknowledged.
    pub(crate) fn is_proven(&self) -> bool {
        self.vouching.known.proven
    }

    /// Whether this leader heard `id` say it is unproven and has not
    /// vouched for it yet: it may not campaign, so leadership is not
    /// handed to it.
    pub(super) fn awaits_vouching(&self, id: u64) -> bool {
        self.vouching.floors.contains_key(&id)
    }

    /// Takes what the stamp of a batch from `from` says, before its
    /// messages are screened and stepped.
    pub(super) fn note_stamp(&mut self, from: u64, stamp: Stamp) {
        let raft = &self.node.raft;
        self.vouching.follow(raft.state, raft.term);
        if stamp.incarnation != 0 {
            let before = self
                .vouching
                .known
                .incarnations
                .insert(from, stamp.incarnation);
            if before.is_some_and(|b| b != stamp.incarnation) {
                self.on_new_life(from);
            }
            if stamp.proven {
                self.vouching.floors.remove(&from);
            } else if self.vouching.led_term.is_some()
                && !self.vouching.known.vouched.contains(&from)
            {
                self.vouching.floors.entry(from).or_insert(Floor::Heard);
            }
        }
        if stamp.vouched && !self.is_proven() && stamp.to_incarnation == self.incarnation {
            self.prove(&format!("node {from}, leading, vouched for it"));
        }
    }

    /// `from` came back with a new incarnation: nothing it acknowledged
    /// before counts any more.
    fn on_new_life(&mut self, from: u64) {
        self.vouching.known.vouched.remove(&from);
        self.vouching.floors.remove(&from);
        let raft = &mut self.node.raft;
        if raft.state != StateRole::Leader {
            return;
        }
        let next = raft.raft_log.last_index() + 1;
        let Some(pr) = raft.mut_prs().get_mut(from) else {
            return;
        };
        tracing::warn!(
            member = from,
            counted = pr.matched,
            "member {from} came back with an empty log (a new incarnation): what it acknowledged \
             before no longer counts, and it is caught up like a new member"
        );
        pr.matched = 0;
        pr.become_probe();
        pr.next_idx = next;
    }

    /// Once a round: proves this member if it follows the first leader it
    /// voted for; while leading, proves it once its term's entry commits,
    /// marks where unproven members were heard from, and vouches for those
    /// that got past it; then publishes the stamps.
    pub(super) fn vouch(&mut self) {
        let raft = &self.node.raft;
        self.vouching.follow(raft.state, raft.term);
        // The first entry after the bootstrap state is of this term: the
        // leader of this term appended it with nothing before it, so it was
        // elected with nothing but the bootstrap state.
        let first_leader_term = raft.raft_log.term(BOOTSTRAP_INDEX + 1).ok() == Some(raft.term);
        if !self.is_proven()
            && first_leader_term
            && raft.state == StateRole::Follower
            && raft.vote != 0
            && raft.leader_id == raft.vote
        {
            let why = format!(
                "it voted for node {}, elected in term {} with nothing but the bootstrap state",
                raft.vote, raft.term
            );
            self.prove(&why);
        } else if !self.is_proven() && first_leader_term && raft.state == StateRole::Leader {
            let why = format!(
                "it was elected in term {} with nothing but the bootstrap state",
                raft.term
            );
            self.prove(&why);
        }
        let raft = &self.node.raft;
        if self.vouching.led_term.is_some() {
            let committed = raft.raft_log.committed;
            if !self.is_proven() && raft.raft_log.term(committed).ok() == Some(raft.term) {
                self.prove("it leads and an entry of its term committed");
            }
            if self.vouching.floors.values().any(|f| *f == Floor::Heard) {
                self.append_floor();
            }
            let raft = &self.node.raft;
            let committed = raft.raft_log.committed;
            let mut vouched = Vec::new();
            for (&id, floor) in &self.vouching.floors {
                if let Floor::At(at) = *floor
                    && committed >= at
                    && raft.prs().get(id).is_some_and(|pr| pr.matched >= at)
                {
                    vouched.push(id);
                }
            }
            for id in vouched {
                tracing::info!(
                    member = id,
                    "vouching for member {id}: it holds every entry it could have acknowledged \
                     in an earlier life"
                );
                self.vouching.floors.remove(&id);
                self.vouching.known.vouched.insert(id);
            }
        }
        self.stamps.publish(&self.vouching.known);
    }

    /// Appends an empty entry after which every member heard so far was
    /// heard; on refusal (a transfer under way) it is tried next round.
    fn append_floor(&mut self) {
        self.limit_flow(None, 0);
        let mut m = Message::default();
        m.set_msg_type(MessageType::MsgPropose);
        m.from = self.id;
        m.set_entries(vec![Entry::default()].into());
        if self.node.raft.step(m).is_err() {
            return;
        }
        let at = self.node.raft.raft_log.last_index();
        for floor in self.vouching.floors.values_mut() {
            if *floor == Floor::Heard {
                *floor = Floor::At(at);
            }
        }
    }

    /// This member may vote from now on; the log's writer records it
    /// durably with the next write, off this thread. Until then a crash
    /// forgets it, which only costs a restarted member the wait for a
    /// leader to vouch for it again.
    fn prove(&mut self, why: &str) {
        if self.failure.is_some() {
            return;
        }
        tracing::info!("this member is proven: {why}; it votes from now on");
        self.vouching.known.proven = true;
        self.stamps.publish(&self.vouching.known);
        self.node.mut_store().request_prove();
        self.persist_pending();
    }

    /// Drops the vote requests of an unproven member past the bootstrap
    /// state: it may not campaign (see the module's notes).
    pub(super) fn withhold_campaign(&self, messages: &mut Vec<Message>) {
        if self.is_proven() || self.node.raft.raft_log.last_index() <= BOOTSTRAP_INDEX {
            return;
        }
        let before = messages.len();
        messages.retain(|m| {
            !matches!(
                m.get_msg_type(),
                MessageType::MsgRequestVote | MessageType::MsgRequestPreVote
            )
        });
        if messages.len() != before {
            tracing::info!(
                "not campaigning: this member's log was created empty and no leader has vouched \
                 for it yet"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_again_starts_a_new_count() {
        let mut v = Vouching::new(true);
        v.follow(StateRole::Leader, 7);
        v.floors.insert(2, Floor::At(40));
        v.known.vouched.insert(3);
        v.follow(StateRole::Leader, 7);
        assert_eq!(v.floors.len(), 1, "the same term keeps its count");
        v.follow(StateRole::Follower, 8);
        assert!(v.floors.is_empty() && v.known.vouched.is_empty());
        v.floors.insert(2, Floor::Heard);
        v.follow(StateRole::Leader, 9);
        assert!(v.floors.is_empty(), "a new term counts anew");
    }
}
