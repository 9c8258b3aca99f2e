//! A member that restarts after a crash resumes applying from its
//! engine's applied index, which lags its raft log (the engine writes no
//! WAL in a real node and is durable only at a flush): the configuration
//! changes it applies again must rebuild the configuration it had at each
//! index, not be applied on top of the newest one.

use raft::eraftpb::{ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2};
use tokio::sync::oneshot;

use super::Sim;
use super::check::Conf;
use super::node::SimNode;
use crate::error::ProposeError;
use crate::mailbox::Input;
use crate::members::Members;

/// A configuration change of `changes`; joint (left by itself) when there
/// are several.
pub(super) fn conf_change(changes: &[(ConfChangeType, u64)]) -> ConfChangeV2 {
    let singles: Vec<ConfChangeSingle> = changes
        .iter()
        .map(|&(kind, id)| {
            let mut c = ConfChangeSingle::default();
            c.set_change_type(kind);
            c.node_id = id;
            c
        })
        .collect();
    let mut cc = ConfChangeV2::default();
    if singles.len() > 1 {
        cc.set_transition(ConfChangeTransition::Auto);
    }
    cc.set_changes(singles.into());
    cc
}

impl Sim {
    /// The index in `nodes` of member `id`.
    pub(super) fn index_of(&self, id: u64) -> usize {
        self.nodes
            .iter()
            .position(|n| n.id == id)
            .unwrap_or_else(|| panic!("node {id} is in the simulation"))
    }

    pub(super) fn conf_of(&self, id: u64) -> Conf {
        Conf::current(self.nodes[self.index_of(id)].live.as_ref().expect("runs"))
    }

    pub(super) fn applied_of(&self, id: u64) -> u64 {
        let live = self.nodes[self.index_of(id)].live.as_ref().expect("runs");
        live.driver.raw().raft.raft_log.applied
    }

    /// Proposes `cc` on the leader `leader` and steps until it is applied;
    /// returns its index. A change refused as not applied (one still
    /// pending, a learner not yet caught up) is proposed again a tick
    /// later, as the server does.
    pub(super) fn change_applied(&mut self, leader: u64, cc: ConfChangeV2) -> u64 {
        for _ in 0..100 {
            let (tx, mut rx) = oneshot::channel();
            let i = self.index_of(leader);
            let live = self.nodes[i].live.as_mut().expect("the leader runs");
            live.driver.handle(Input::ChangeMembers {
                change: cc.clone(),
                tx,
            });
            let mut outcome = None;
            self.step_until(500, "the change is answered", |_| match rx.try_recv() {
                Err(oneshot::error::TryRecvError::Empty) => false,
                other => {
                    outcome = Some(other);
                    true
                }
            });
            match outcome {
                Some(Ok(Ok(index))) => return index,
                Some(Ok(Err(ProposeError::Dropped(_)))) => {
                    for _ in 0..super::TICK_MS {
                        self.step(false, false).expect("the invariants hold");
                    }
                }
                other => panic!("the change failed: {other:?}"),
            }
        }
        panic!("the change was refused for a second");
    }

    /// Starts member `id`, empty, and adds it as a learner through
    /// `leader`; steps until it has caught up.
    pub(super) fn learner_joined(&mut self, leader: u64, id: u64) {
        let mut joining = SimNode::new(id, Vec::new(), &self.root, self.policy);
        joining.clock = self.clock.clone();
        joining.start();
        self.nodes.push(joining);
        let mut add = conf_change(&[(ConfChangeType::AddLearnerNode, id)]);
        let address = [(id, format!("node{id}:7001"))].into_iter().collect();
        add.context = Members::encode(&address).into();
        self.change_applied(leader, add);
        self.step_until(1_000, "the learner catches up", |s| {
            s.applied_of(id) == s.applied_of(leader)
        });
    }

    /// Replaces voter `old` with learner `id` in one joint change through
    /// `leader`.
    fn replace(&mut self, leader: u64, old: u64, id: u64) -> u64 {
        let cc = conf_change(&[
            (ConfChangeType::AddNode, id),
            (ConfChangeType::RemoveNode, old),
        ]);
        self.change_applied(leader, cc)
    }
}

// Proves that a follower that crashes inside the second of two joint
// changes (each replacing a voter with a new learner), its engine having
// made neither durable, holds the configuration the others held at every
// index it applies again (the checker compares every member's
// configuration at each applied index). Its raft log records the newest
// configuration; starting raft from it and applying the older changes on
// top of it rebuilds others.
#[test]
fn member_restarted_inside_a_joint_change_rebuilds_its_configurations() {
    let mut sim = Sim::settled(32);
    let leader = sim.nodes[sim.leaders()[0]].id;
    let mut followers = sim.nodes.iter().map(|n| n.id).filter(|&id| id != leader);
    let (kept, replaced) = (
        followers.next().expect("a follower"),
        followers.next().expect("another follower"),
    );
    sim.learner_joined(leader, 4);
    let first = sim.replace(leader, replaced, 4);
    sim.step_until(500, "the group leaves the joint configuration", |s| {
        !s.conf_of(leader).is_joint()
    });
    sim.learner_joined(leader, 5);
    // The follower learns no commit beyond the second joint change, so
    // that it crashes inside it, as the leader's answer to its leave is
    // on its way.
    let second = {
        let i = sim.index_of(leader);
        let live = sim.nodes[i].live.as_ref().expect("the leader runs");
        live.driver.raw().raft.raft_log.last_index() + 1
    };
    sim.net
        .hold(Some(Box::new(move |m| m.to == kept && m.commit > second)));
    sim.replace(leader, 4, 5);
    sim.step_until(500, "the follower applies the second joint change", |s| {
        s.applied_of(kept) == second
    });
    let i = sim.index_of(kept);
    sim.nodes[i].crash();
    sim.nodes[i].start();
    let restarted_at = sim.applied_of(kept);
    assert!(
        restarted_at < first,
        "its engine kept the first joint change: the scenario needs both lost"
    );
    for _ in 0..100 {
        sim.step(false, false).unwrap_or_else(|e| {
            panic!("node {kept}, restarted at applied index {restarted_at}: {e}")
        });
    }
    sim.net.hold(None);
    let next = sim.now + 1;
    sim.net.release(next, |_| true);
    sim.step_until(500, "the follower catches up", |s| {
        s.applied_of(kept) == s.applied_of(leader)
    });
    assert_eq!(sim.conf_of(kept), sim.conf_of(leader));
}

// Proves the status names a voter that a joint change is removing as
// leaving (a voter still: it votes in the outgoing configuration) for as
// long as the group is in the joint configuration, and no longer once the
// group has left it.
#[test]
fn a_voter_removed_by_a_joint_change_is_leaving_until_the_group_leaves_it() {
    let mut sim = Sim::settled(33);
    let leader = sim.nodes[sim.leaders()[0]].id;
    let replaced = sim
        .nodes
        .iter()
        .map(|n| n.id)
        .find(|&id| id != leader)
        .expect("a follower");
    sim.learner_joined(leader, 4);
    let joint = {
        let live = sim.nodes[sim.index_of(leader)].live.as_ref().expect("runs");
        live.driver.raw().raft.raft_log.last_index() + 1
    };
    // No entry after the joint one (the leader's leave) reaches anyone, so
    // the group stays in the joint configuration.
    sim.net.hold(Some(Box::new(move |m| {
        m.from == leader && m.get_entries().iter().any(|e| e.index > joint)
    })));
    sim.replace(leader, replaced, 4);
    for _ in 0..50 {
        sim.step(false, false).expect("the invariants hold");
    }
    let status = |sim: &Sim| {
        let live = sim.nodes[sim.index_of(leader)].live.as_ref().expect("runs");
        live.driver.status()
    };
    assert!(sim.conf_of(leader).is_joint());
    let joint_status = status(&sim);
    assert_eq!(joint_status.leaving, vec![replaced]);
    assert!(joint_status.voters.contains(&replaced));
    assert!(joint_status.voters.contains(&4));

    sim.net.hold(None);
    let next = sim.now + 1;
    sim.net.release(next, |_| true);
    sim.step_until(500, "the group leaves the joint configuration", |s| {
        !s.conf_of(leader).is_joint()
    });
    for _ in 0..5 {
        sim.step(false, false).expect("the invariants hold");
    }
    let left = status(&sim);
    assert!(left.leaving.is_empty(), "{:?}", left.leaving);
    assert!(!left.voters.contains(&replaced));
}
