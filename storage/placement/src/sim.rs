//! The placement loop against a simulated cluster: each round's actions
//! applied to the view as the ranges' raft groups would carry them out
//! (a replica added holds the range's bytes, a transfer moves the
//! leadership, a range whose leader is gone elects one of its live
//! replicas), until a round asks for nothing.

use std::collections::{BTreeMap, BTreeSet};

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

use crate::action::Action;
use crate::plan::Planner;
use crate::view::{ClusterView, RangeState};

const MIB: u64 = 1 << 20;

/// What a run of the loop did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Rounds that asked for something.
    pub rounds: usize,
    pub replicas_added: usize,
    pub replicas_removed: usize,
    pub leader_transfers: usize,
    /// Bytes copied to new replicas.
    pub bytes_moved: u64,
    /// Whether the last round asked for nothing (else `max_rounds` ran out).
    pub settled: bool,
}

/// The least, the most and the mean of some per-node counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub min: usize,
    pub max: usize,
    pub mean: f64,
}

impl Spread {
    pub fn of(counts: &BTreeMap<u64, usize>) -> Spread {
        let min = counts.values().copied().min().unwrap_or(0);
        let max = counts.values().copied().max().unwrap_or(0);
        let mean = counts.values().sum::<usize>() as f64 / counts.len().max(1) as f64;
        Spread { min, max, mean }
    }

    /// The largest distance from the mean, as a fraction of it.
    pub fn deviation(&self) -> f64 {
        if self.mean == 0.0 {
            return 0.0;
        }
        ((self.max as f64 - self.mean).max(self.mean - self.min as f64)) / self.mean
    }
}

/// Applies `action` to `view`; the bytes it copied.
pub fn apply(view: &mut ClusterView, action: Action) -> u64 {
    match action {
        Action::AddReplica { range, node } => view
            .ranges
            .get_mut(&range)
            .filter(|state| !state.replicas.contains(&node))
            .map_or(0, |state| {
                state.replicas.insert(node);
                state.bytes
            }),
        Action::RemoveReplica { range, node } => {
            if let Some(state) = view.ranges.get_mut(&range) {
                state.replicas.remove(&node);
            }
            0
        }
        Action::TransferLeader { range, to } => {
            if let Some(state) = view.ranges.get_mut(&range)
                && state.replicas.contains(&to)
            {
                state.leader = to;
            }
            0
        }
    }
}

/// Every range whose leader is not a live replica elects the first live
/// one, as its raft group would.
pub fn elect(view: &mut ClusterView) {
    for state in view.ranges.values_mut() {
        let leads = view.nodes.contains(&state.leader) && state.replicas.contains(&state.leader);
        if !leads && let Some(&node) = state.replicas.iter().find(|n| view.nodes.contains(n)) {
            state.leader = node;
        }
    }
}

/// Runs the loop on `view` until a round asks for nothing, or for
/// `max_rounds`.
pub fn run(planner: &Planner, view: &mut ClusterView, max_rounds: usize) -> Outcome {
    let mut outcome = Outcome::default();
    for _ in 0..max_rounds {
        elect(view);
        let actions = planner.plan(view);
        if actions.is_empty() {
            outcome.settled = true;
            return outcome;
        }
        outcome.rounds += 1;
        for action in actions {
            match action {
                Action::AddReplica { .. } => outcome.replicas_added += 1,
                Action::RemoveReplica { .. } => outcome.replicas_removed += 1,
                Action::TransferLeader { .. } => outcome.leader_transfers += 1,
            }
            outcome.bytes_moved += apply(view, action);
        }
    }
    outcome
}

/// `ranges` ranges of 3 replicas over nodes 1..=`nodes`, placed at
/// random with nodes 1..=`crowded` twice as likely (a skewed start), each
/// of 1 to 64 MiB, led by a random replica; the same for the same `seed`.
pub fn random_cluster(nodes: u64, ranges: u64, crowded: u64, seed: u64) -> ClusterView {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut weighted: Vec<u64> = (1..=nodes).collect();
    weighted.extend(1..=crowded);
    let mut view = ClusterView {
        nodes: (1..=nodes).collect(),
        ranges: BTreeMap::new(),
    };
    for id in 1..=ranges {
        let mut replicas = BTreeSet::new();
        while replicas.len() < 3 {
            replicas.insert(*weighted.choose(&mut rng).unwrap_or(&1));
        }
        let leader = *replicas.iter().next().unwrap_or(&1);
        let leader = **replicas
            .iter()
            .collect::<Vec<_>>()
            .choose(&mut rng)
            .unwrap_or(&&leader);
        let bytes = rng.random_range(1..=64) * MIB;
        view.ranges.insert(
            id,
            RangeState {
                replicas,
                leader,
                bytes,
            },
        );
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(nodes: u64, ranges: u64, crowded: u64, seed: u64) -> ClusterView {
        random_cluster(nodes, ranges, crowded, seed)
    }

    fn total_bytes(view: &ClusterView) -> u64 {
        view.ranges.values().map(|r| r.bytes).sum()
    }

    fn assert_balanced(view: &ClusterView, within: f64) {
        let replicas = Spread::of(&view.replicas_per_node());
        let leaders = Spread::of(&view.leaders_per_node());
        assert!(
            replicas.deviation() <= within,
            "replicas per node {replicas:?}"
        );
        assert!(
            leaders.deviation() <= within,
            "leaders per node {leaders:?}"
        );
        for (id, range) in &view.ranges {
            assert_eq!(range.replicas.len(), 3, "range {id}: {range:?}");
            assert!(range.replicas.is_subset(&view.nodes), "range {id}");
            assert!(range.replicas.contains(&range.leader), "range {id}");
        }
    }

    #[test]
    fn a_hundred_nodes_with_ten_thousand_skewed_ranges_balance_within_ten_percent() {
        // Proves: from a skewed start (a fifth of the nodes twice as
        // likely to hold a replica), the loop settles with every node's
        // replicas and leaderships within 10 % of the mean, every range
        // with 3 replicas on live nodes, led by one of them.
        let mut view = cluster(100, 10_000, 20, 1);
        let before = Spread::of(&view.replicas_per_node());
        assert!(before.deviation() > 0.3, "the start is skewed: {before:?}");
        let outcome = run(&Planner::default(), &mut view, 10_000);
        assert!(outcome.settled, "{outcome:?}");
        assert_balanced(&view, 0.10);
    }

    #[test]
    fn a_node_that_joins_draws_about_its_share_and_no_more() {
        // Proves: on a balanced cluster of 100 nodes, a node joining gets
        // its share of the replicas (the mean, within 10 %), and the
        // replicas added and the data copied are within 1.2 times that
        // share: few moves among the other nodes.
        let planner = Planner::default();
        let mut view = cluster(100, 10_000, 0, 2);
        assert!(run(&planner, &mut view, 10_000).settled);
        view.nodes.insert(101);
        let outcome = run(&planner, &mut view, 10_000);
        assert!(outcome.settled, "{outcome:?}");
        assert_balanced(&view, 0.10);
        let share = total_bytes(&view) * 3 / 101;
        assert!(
            outcome.bytes_moved <= share * 12 / 10,
            "copied {} MiB for a share of {} MiB",
            outcome.bytes_moved / MIB,
            share / MIB
        );
        let joined = view.replicas_per_node()[&101];
        assert!(
            outcome.replicas_added <= joined * 12 / 10,
            "{} replicas added for {joined} on the new node: {outcome:?}",
            outcome.replicas_added
        );
    }

    #[test]
    fn a_node_that_leaves_moves_only_what_it_held() {
        // Proves: when a node of 100 is gone, exactly the ranges that had a
        // replica there get a new one (their count of additions), the copy
        // is their bytes and no more, and the cluster is balanced again.
        let planner = Planner::default();
        let mut view = cluster(100, 10_000, 0, 3);
        assert!(run(&planner, &mut view, 10_000).settled);
        let held: Vec<u64> = view
            .ranges
            .iter()
            .filter(|(_, r)| r.replicas.contains(&42))
            .map(|(&id, _)| id)
            .collect();
        let held_bytes: u64 = held.iter().map(|id| view.ranges[id].bytes).sum();
        view.nodes.remove(&42);
        let outcome = run(&planner, &mut view, 10_000);
        assert!(outcome.settled, "{outcome:?}");
        assert_balanced(&view, 0.10);
        assert!(
            outcome.replicas_added <= held.len() * 11 / 10,
            "{} additions for {} ranges that held a replica there",
            outcome.replicas_added,
            held.len()
        );
        assert!(
            outcome.bytes_moved <= held_bytes * 12 / 10,
            "copied {} MiB for {} MiB held there",
            outcome.bytes_moved / MIB,
            held_bytes / MIB
        );
    }

    #[test]
    fn a_balanced_cluster_asks_for_nothing_and_a_round_is_bounded() {
        // Proves: once settled, a round on the same view asks for nothing;
        // every round asks for at most max_actions.
        let planner = Planner {
            max_actions: 16,
            ..Planner::default()
        };
        let mut view = cluster(20, 500, 5, 4);
        for _ in 0..10_000 {
            elect(&mut view);
            let actions = planner.plan(&view);
            assert!(actions.len() <= 16, "{}", actions.len());
            if actions.is_empty() {
                assert!(planner.plan(&view).is_empty());
                assert_balanced(&view, 0.10);
                return;
            }
            for a in actions {
                apply(&mut view, a);
            }
        }
        panic!("did not settle in 10,000 rounds");
    }
}
