//! The placement loop's decisions for one round (see the crate's docs).

use std::collections::{BTreeMap, BTreeSet};

use crate::action::Action;
use crate::view::ClusterView;

/// How the placement loop decides.
#[derive(Debug, Clone, Copy)]
pub struct Planner {
    /// Replicas each range should have.
    pub replication: usize,
    /// How far from the mean a node's count may be before the loop moves
    /// something (0.05: within 5 % either way, or one off when the mean is
    /// small).
    pub tolerance: f64,
    /// The most actions one round asks for: a bound on the data moving at
    /// once.
    pub max_actions: usize,
}

impl Default for Planner {
    fn default() -> Self {
        Planner {
            replication: 3,
            tolerance: 0.05,
            max_actions: 64,
        }
    }
}

/// Counts per node, as a round changes them.
struct Load(BTreeMap<u64, usize>);

impl Load {
    fn get(&self, node: u64) -> usize {
        self.0.get(&node).copied().unwrap_or(0)
    }

    fn add(&mut self, node: u64, by: isize) {
        if let Some(c) = self.0.get_mut(&node) {
            *c = c.saturating_add_signed(by);
        }
    }

    /// The nodes, least loaded first (ties by id, so every round decides
    /// the same on the same view).
    fn ascending(&self) -> Vec<u64> {
        let mut nodes: Vec<u64> = self.0.keys().copied().collect();
        nodes.sort_by_key(|&n| (self.get(n), n));
        nodes
    }

    /// Whether a node holding `most` and one holding `least` are further
    /// apart than `tolerance` allows: one is off the mean by more than
    /// the tolerance, or, where the tolerance is less than one (a small
    /// mean: 5 % of 2 leaderships), the two are more than one apart.
    fn uneven(&self, most: usize, least: usize, tolerance: f64) -> bool {
        if most <= least + 1 {
            return false;
        }
        self.mean() * tolerance < 1.0 || self.over(most, tolerance) || under(self, least, tolerance)
    }

    fn mean(&self) -> f64 {
        let total: usize = self.0.values().sum();
        total as f64 / self.0.len().max(1) as f64
    }

    /// Whether `count` is above what the mean allows.
    fn over(&self, count: usize, tolerance: f64) -> bool {
        let total: usize = self.0.values().sum();
        let mean = total as f64 / self.0.len().max(1) as f64;
        count as f64 > (mean * (1.0 + tolerance)).max(mean.floor() + 1.0)
    }
}

impl Planner {
    /// The actions of one round on `view`, at most `max_actions`: repairs
    /// first, then replica moves, then leadership moves. A range gets at
    /// most one change (or one move: add, then remove) per round.
    pub fn plan(&self, view: &ClusterView) -> Vec<Action> {
        let mut out = Vec::new();
        let mut touched = BTreeSet::new();
        let mut replicas = Load(view.replicas_per_node());
        self.repair(view, &mut replicas, &mut touched, &mut out);
        self.balance_replicas(view, &mut replicas, &mut touched, &mut out);
        self.balance_leaders(view, &touched, &mut out);
        out
    }

    fn full(&self, out: &[Action]) -> bool {
        out.len() >= self.max_actions
    }

    /// Ranges short of live replicas get one on the least loaded live node;
    /// replicas on gone nodes, and any beyond the replication factor, go.
    fn repair(
        &self,
        view: &ClusterView,
        replicas: &mut Load,
        touched: &mut BTreeSet<u64>,
        out: &mut Vec<Action>,
    ) {
        for (&range, state) in &view.ranges {
            if self.full(out) {
                return;
            }
            let live = state.replicas.intersection(&view.nodes).count();
            let gone = state.replicas.iter().find(|n| !view.nodes.contains(n));
            if live < self.replication {
                let target = replicas
                    .ascending()
                    .into_iter()
                    .find(|n| !state.replicas.contains(n));
                if let Some(node) = target {
                    out.push(Action::AddReplica { range, node });
                    replicas.add(node, 1);
                    touched.insert(range);
                }
            } else if let Some(&node) = gone {
                out.push(Action::RemoveReplica { range, node });
                touched.insert(range);
            } else if live > self.replication {
                // The most loaded replica that does not lead.
                let extra = state
                    .replicas
                    .iter()
                    .copied()
                    .filter(|&n| n != state.leader)
                    .max_by_key(|&n| (replicas.get(n), n));
                if let Some(node) = extra {
                    out.push(Action::RemoveReplica { range, node });
                    replicas.add(node, -1);
                    touched.insert(range);
                }
            }
        }
    }

    /// Moves replicas from the most loaded nodes to the least loaded until
    /// every node is within the tolerance (or no move narrows the gap).
    fn balance_replicas(
        &self,
        view: &ClusterView,
        replicas: &mut Load,
        touched: &mut BTreeSet<u64>,
        out: &mut Vec<Action>,
    ) {
        // Each node's ranges, as the round started.
        let mut held: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for (&range, state) in &view.ranges {
            for &node in &state.replicas {
                held.entry(node).or_default().push(range);
            }
        }
        let mut stuck = BTreeSet::new();
        while !self.full(out) && out.len() + 2 <= self.max_actions {
            let order = replicas.ascending();
            let Some(&from) = order.iter().rev().find(|n| !stuck.contains(*n)) else {
                return;
            };
            let from_count = replicas.get(from);
            let least = order.first().map_or(0, |&n| replicas.get(n));
            if !replicas.uneven(from_count, least, self.tolerance) {
                return;
            }
            // A range here (not its leader's replica, not changed this
            // round) that the least loaded node that can take it lacks.
            let candidate = held.get(&from).into_iter().flatten().find_map(|&range| {
                let state = &view.ranges[&range];
                if touched.contains(&range) || state.leader == from {
                    return None;
                }
                order
                    .iter()
                    .take_while(|&&n| replicas.get(n) + 1 < from_count)
                    .find(|n| !state.replicas.contains(n))
                    .map(|&to| (range, to))
            });
            match candidate {
                Some((range, to)) => {
                    out.push(Action::AddReplica { range, node: to });
                    out.push(Action::RemoveReplica { range, node: from });
                    replicas.add(to, 1);
                    replicas.add(from, -1);
                    touched.insert(range);
                }
                None => {
                    stuck.insert(from);
                }
            }
        }
    }

    /// Moves leaderships from the nodes leading the most to replicas on
    /// nodes leading fewer, until every node is within the tolerance (or no
    /// transfer narrows the gap).
    fn balance_leaders(&self, view: &ClusterView, touched: &BTreeSet<u64>, out: &mut Vec<Action>) {
        let mut leaders = Load(view.leaders_per_node());
        let mut led: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for (&range, state) in &view.ranges {
            led.entry(state.leader).or_default().push(range);
        }
        let mut moved = BTreeSet::new();
        let mut stuck = BTreeSet::new();
        while !self.full(out) {
            let order = leaders.ascending();
            let Some(&from) = order.iter().rev().find(|n| !stuck.contains(*n)) else {
                return;
            };
            let from_count = leaders.get(from);
            let least = order.first().map_or(0, |&n| leaders.get(n));
            if !leaders.uneven(from_count, least, self.tolerance) {
                return;
            }
            let candidate = led.get(&from).into_iter().flatten().find_map(|&range| {
                if touched.contains(&range) || moved.contains(&range) {
                    return None;
                }
                view.ranges[&range]
                    .replicas
                    .iter()
                    .copied()
                    .filter(|&n| n != from && view.nodes.contains(&n))
                    .filter(|&n| leaders.get(n) + 1 < from_count)
                    .min_by_key(|&n| (leaders.get(n), n))
                    .map(|to| (range, to))
            });
            match candidate {
                Some((range, to)) => {
                    out.push(Action::TransferLeader { range, to });
                    leaders.add(to, 1);
                    leaders.add(from, -1);
                    moved.insert(range);
                }
                None => {
                    stuck.insert(from);
                }
            }
        }
    }
}

/// Whether `count` is below what the mean allows.
fn under(load: &Load, count: usize, tolerance: f64) -> bool {
    let mean = load.mean();
    (count as f64) < (mean * (1.0 - tolerance)).min(mean.ceil() - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::RangeState;

    fn view(leaders: &[u64]) -> ClusterView {
        ClusterView {
            nodes: [1, 2, 3].into(),
            ranges: leaders
                .iter()
                .enumerate()
                .map(|(i, &leader)| {
                    let state = RangeState {
                        replicas: [1, 2, 3].into(),
                        leader,
                        bytes: 1,
                    };
                    (i as u64 + 1, state)
                })
                .collect(),
        }
    }

    // Six ranges on three nodes: 3, 2 and 1 leaderships are each within
    // one of the mean, yet one move makes them 2, 2 and 2.
    #[test]
    fn a_small_cluster_evens_leaders_out_to_one_apart() {
        let planner = Planner::default();
        let moves = planner.plan(&view(&[1, 1, 1, 2, 2, 3]));
        assert_eq!(moves.len(), 1, "{moves:?}");
        assert!(
            matches!(moves[0], Action::TransferLeader { to: 3, .. }),
            "{moves:?}"
        );
        assert!(planner.plan(&view(&[1, 1, 2, 2, 3, 3])).is_empty());
        assert!(planner.plan(&view(&[1, 1, 2, 3])).is_empty());
    }
}
