//! Membership changes in the simulation, proposed the way the server's
//! `change_members` does (storage/server/src/membership.rs): a new, empty
//! node joins as a learner and is caught up (by snapshot, since its log is
//! empty); a caught-up learner is promoted, or replaces a voter in one joint
//! change that raft leaves by itself; a follower or a learner is removed.
//! Changes the driver or raft refuses (one is still pending) are simply
//! tried again later.
//!
//! One change is in flight at a time. Its fate is read from the committed
//! log, because the leader that proposed it may lose office before it can
//! tell. A node is stopped and dropped from the simulation once a
//! configuration without it was applied somewhere (so it was committed), or,
//! if it was joining, once its addition is known not to have committed.

use raft::GetEntriesContext;
use raft::eraftpb::{
    ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2, EntryType,
};
use rand::Rng;
use tokio::sync::oneshot;

use super::Sim;
use super::check::{Conf, most_applied};
use super::node::SimNode;
use crate::mailbox::Input;
use crate::members::Members;

/// Nodes in the simulation at most, joining ones included.
const MAX_NODES: usize = 5;
/// A removal keeps at least this many voters.
const MIN_VOTERS: usize = 3;

/// A proposed change whose fate is not known yet.
struct PendingChange {
    index: u64,
    term: u64,
    data: Vec<u8>,
    /// The node this change adds, if it adds one.
    joining: Option<u64>,
    /// Whether it goes through a joint configuration.
    joint: bool,
}

pub struct Membership {
    next_id: u64,
    pending: Option<PendingChange>,
}

impl Membership {
    /// `first_new_id` is the id the first added node gets.
    pub fn new(first_new_id: u64) -> Self {
        Membership {
            next_id: first_new_id,
            pending: None,
        }
    }
}

enum Change {
    Add(u64),
    Promote(u64),
    Replace { old: u64, id: u64 },
    Remove(u64),
}

impl Change {
    fn conf_change(&self) -> ConfChangeV2 {
        let single = |change_type, node_id| {
            let mut c = ConfChangeSingle::default();
            c.set_change_type(change_type);
            c.node_id = node_id;
            c
        };
        let changes = match *self {
            Change::Add(id) => vec![single(ConfChangeType::AddLearnerNode, id)],
            Change::Promote(id) => vec![single(ConfChangeType::AddNode, id)],
            Change::Replace { old, id } => vec![
                single(ConfChangeType::AddNode, id),
                single(ConfChangeType::RemoveNode, old),
            ],
            Change::Remove(id) => vec![single(ConfChangeType::RemoveNode, id)],
        };
        let mut cc = ConfChangeV2::default();
        if changes.len() > 1 {
            cc.set_transition(ConfChangeTransition::Auto);
        }
        cc.set_changes(changes.into());
        if let Change::Add(id) = *self {
            let address = [(id, format!("node{id}:7001"))].into_iter().collect();
            cc.context = Members::encode(&address).into();
        }
        cc
    }
}

fn pick(rng: &mut impl Rng, ids: &[u64]) -> Option<u64> {
    (!ids.is_empty()).then(|| ids[rng.random_range(0..ids.len())])
}

impl Sim {
    /// Proposes a membership change on the leader, unless one is in flight.
    pub(super) fn change_membership(&mut self) {
        if self.membership.pending.is_some() {
            return;
        }
        let Some(l) = self.leaders().into_iter().max_by_key(|&i| self.term_of(i)) else {
            return;
        };
        let live = self.nodes[l].live.as_ref().expect("the leader runs");
        let conf = Conf::current(live);
        if conf.is_joint() {
            return;
        }
        // Promote only learners that hold at least what the leader's log
        // no longer has, as an operator waits for catch-up.
        let first = live.driver.raw().store().first_index();
        let prs = live.driver.raw().raft.prs();
        let caught_up: Vec<u64> = conf
            .learners
            .iter()
            .copied()
            .filter(|id| prs.get(*id).is_some_and(|pr| pr.matched >= first))
            .collect();
        // The driver refuses to remove the leader (it must hand leadership
        // over first), so only followers are removed or replaced.
        let leader = self.nodes[l].id;
        let followers: Vec<u64> = conf
            .voters
            .iter()
            .copied()
            .filter(|&v| v != leader)
            .collect();
        let mut choices = Vec::new();
        if self.nodes.len() < MAX_NODES {
            choices.push(Change::Add(self.membership.next_id));
        }
        if let Some(id) = pick(&mut self.rng, &caught_up) {
            choices.push(Change::Promote(id));
            if let Some(old) = pick(&mut self.rng, &followers) {
                choices.push(Change::Replace { old, id });
            }
        }
        if conf.voters.len() > MIN_VOTERS
            && let Some(id) = pick(&mut self.rng, &followers)
        {
            choices.push(Change::Remove(id));
        }
        if let Some(id) = pick(&mut self.rng, &conf.learners) {
            choices.push(Change::Remove(id));
        }
        if choices.is_empty() {
            return;
        }
        let change = choices.swap_remove(self.rng.random_range(0..choices.len()));
        let joining = match change {
            Change::Add(id) => {
                self.membership.next_id += 1;
                let mut node = SimNode::new(id, Vec::new(), &self.root, self.policy);
                node.read_mode = self.read_mode;
                node.clock = self.clock.clone();
                node.start();
                self.nodes.push(node);
                Some(id)
            }
            _ => None,
        };
        self.note(("change", l, change.conf_change().changes.len()));
        let live = self.nodes[l].live.as_mut().expect("the leader runs");
        let before = live.driver.raw().raft.raft_log.last_index();
        // The answer is not needed: the committed log tells the outcome.
        let (tx, _rx) = oneshot::channel();
        live.driver.handle(Input::ChangeMembers {
            change: change.conf_change(),
            tx,
        });
        let raft = &live.driver.raw().raft;
        let index = raft.raft_log.last_index();
        let appended = (index > before)
            .then(|| {
                raft.raft_log
                    .entries(index, None, GetEntriesContext::empty(false))
                    .ok()
            })
            .flatten()
            .and_then(|mut es| es.pop())
            // raft-rs appends an empty entry in place of a change it refuses.
            .filter(|e| e.get_entry_type() == EntryType::EntryConfChangeV2);
        match appended {
            Some(e) => {
                self.membership.pending = Some(PendingChange {
                    index,
                    term: e.term,
                    data: e.data.to_vec(),
                    joining,
                    joint: matches!(change, Change::Replace { .. }),
                });
            }
            None => {
                if let Some(id) = joining {
                    self.retire(id);
                }
            }
        }
    }

    /// Settles the pending change once its index is committed, and drops
    /// the nodes that are no longer members.
    pub(super) fn follow_membership(&mut self) {
        if let Some(p) = &self.membership.pending
            && let Some((term, data)) = self.invariants.committed_entry(p.index)
        {
            let committed = *term == p.term && *data == p.data;
            let p = self.membership.pending.take().expect("pending");
            match (committed, p.joining) {
                (true, joining) => {
                    self.stats.membership_changes += 1;
                    self.stats.joint_changes += u64::from(p.joint);
                    if let Some(n) =
                        joining.and_then(|id| self.nodes.iter_mut().find(|n| n.id == id))
                    {
                        n.admitted_at = Some(p.index);
                    }
                }
                (false, Some(id)) => self.retire(id),
                (false, None) => {}
            }
        }
        let Some((r, applied)) = most_applied(&self.nodes) else {
            return;
        };
        let conf = Conf::current(self.nodes[r].live.as_ref().expect("running"));
        let gone: Vec<u64> = self
            .nodes
            .iter()
            .filter(|n| {
                n.admitted_at.is_some_and(|at| applied >= at)
                    && !conf.contains(n.id)
                    && !n.kept_after_removal
            })
            .map(|n| n.id)
            .collect();
        for id in gone {
            self.retire(id);
        }
    }

    /// Stops node `id` for good and forgets it.
    fn retire(&mut self, id: u64) {
        self.note(("retire", id));
        self.nodes.retain(|n| n.id != id);
    }
}
