//! A new group whose first leader steps down before any entry of its term
//! commits (docs/reliability.md, finding 11). Every member's log was
//! created empty, so every member starts unproven (`driver/vouching.rs`);
//! the members that voted for the first leader prove themselves when its
//! first entry reaches them, the others wait to be vouched for. A first
//! leader that never saw its entry commit must still count as proven, or
//! the group can deadlock: its one proven voter finds no other member
//! allowed to vote.

use raft::StateRole;
use raft::eraftpb::MessageType;

use super::net::Weather;
use super::{Sim, seeds};

impl Sim {
    fn proven(&self, i: usize) -> bool {
        self.nodes[i]
            .live
            .as_ref()
            .is_some_and(|live| live.driver.is_proven())
    }

    fn voted_for(&self, i: usize) -> u64 {
        self.nodes[i]
            .live
            .as_ref()
            .map_or(0, |live| live.driver.raw().raft.vote)
    }

    fn role(&self, i: usize) -> StateRole {
        self.nodes[i]
            .live
            .as_ref()
            .map_or(StateRole::Follower, |live| live.driver.raw().raft.state)
    }
}

/// The scenario on one seed: the group's first leader `L` is elected, its
/// first entry reaches one member that voted for it (`A`) and no other,
/// and nothing reaches `L` from then on, so it never sees the entry commit
/// and steps down (quorum not active), as a first leader on a starved host
/// did. Then the network heals (what was held back is lost) and the group
/// must elect a leader.
fn first_leader_steps_down(seed: u64) -> Result<(), String> {
    let mut sim = Sim::with_voters(seed, &[1, 2, 3]);
    sim.weather = Weather {
        drop: 0.0,
        duplicate: 0.0,
        ..sim.weather
    };
    let mut leader = None;
    for _ in 0..5_000 {
        sim.step(false, false)?;
        if let [l] = sim.leaders()[..] {
            leader = Some(l);
            break;
        }
    }
    let l = leader.ok_or("no first leader within 5 s")?;
    let lid = sim.nodes[l].id;
    let term = sim.term_of(l);
    let voters: Vec<usize> = (0..3)
        .filter(|&i| i != l && sim.voted_for(i) == lid && sim.term_of(i) == term)
        .collect();
    let &a = voters
        .first()
        .ok_or("the first leader won without another vote")?;
    let aid = sim.nodes[a].id;
    // From now on nothing reaches L, and L's appends reach only A.
    sim.net.hold(Some(Box::new(move |m| {
        m.to == lid || (m.from == lid && m.to != aid && m.get_msg_type() == MessageType::MsgAppend)
    })));
    sim.note(("first leader cut off", lid, term, aid));
    for _ in 0..2_000 {
        if sim.role(l) != StateRole::Leader && sim.proven(a) {
            break;
        }
        sim.step(false, false)?;
    }
    if sim.role(l) == StateRole::Leader {
        return Err(format!("node {lid} still leads term {term} cut off"));
    }
    if !sim.proven(a) {
        return Err(format!(
            "node {aid} voted for node {lid} and got its entry, yet is not proven"
        ));
    }
    sim.net.hold(None);
    for _ in 0..10_000 {
        if let [n] = sim.leaders()[..]
            && sim.term_of(n) > term
        {
            return Ok(());
        }
        sim.step(false, false)?;
    }
    let state: Vec<String> = (0..3)
        .map(|i| {
            format!(
                "node {}: {:?} term {} proven {}",
                sim.nodes[i].id,
                sim.role(i),
                sim.term_of(i),
                sim.proven(i)
            )
        })
        .collect();
    Err(format!(
        "no leader 10 s after node {lid}, the first leader (term {term}), stepped down: {state:?}"
    ))
}

// Proves that a group whose first leader steps down before it sees an
// entry of its term commit still elects a leader: the first leader proves
// itself when it is elected, as its voters do when its first entry
// reaches them. Before, on every seed, only the voter was proven and no
// election could succeed.
#[test]
fn a_first_leader_that_steps_down_early_leaves_an_electable_group() {
    let seeds = seeds(20);
    let failed: Vec<String> = seeds
        .iter()
        .filter_map(|&seed| {
            first_leader_steps_down(seed)
                .err()
                .map(|e| format!("seed {seed}: {e}"))
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} seeds failed:\n{}",
        failed.len(),
        seeds.len(),
        failed.join("\n")
    );
}
