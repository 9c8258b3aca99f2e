//! What the placement loop sees of the cluster: the live nodes, and each
//! range's replicas, leader and size.

use std::collections::{BTreeMap, BTreeSet};

/// One range: the nodes holding a replica, the one leading it, its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeState {
    pub replicas: BTreeSet<u64>,
    pub leader: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterView {
    /// The nodes that are members and alive.
    pub nodes: BTreeSet<u64>,
    pub ranges: BTreeMap<u64, RangeState>,
}

impl ClusterView {
    /// How many replicas each live node holds (0 for one that holds none).
    pub fn replicas_per_node(&self) -> BTreeMap<u64, usize> {
        let mut count: BTreeMap<u64, usize> = self.nodes.iter().map(|&n| (n, 0)).collect();
        for range in self.ranges.values() {
            for node in &range.replicas {
                if let Some(c) = count.get_mut(node) {
                    *c += 1;
                }
            }
        }
        count
    }

    /// How many ranges each live node leads.
    pub fn leaders_per_node(&self) -> BTreeMap<u64, usize> {
        let mut count: BTreeMap<u64, usize> = self.nodes.iter().map(|&n| (n, 0)).collect();
        for range in self.ranges.values() {
            if let Some(c) = count.get_mut(&range.leader) {
                *c += 1;
            }
        }
        count
    }
}
