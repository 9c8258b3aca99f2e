//! Invariants checked after every simulated millisecond.

use std::collections::{BTreeMap, HashMap};

use raft::{GetEntriesContext, StateRole, Storage};

use super::node::SimNode;

#[derive(Default)]
pub struct Invariants {
    /// The leader seen for each term.
    leaders: HashMap<u64, u64>,
    /// Term and data of every committed entry any node reported.
    committed: BTreeMap<u64, (u64, Vec<u8>)>,
}

impl Invariants {
    /// At most one leader per term; every node's committed prefix agrees.
    pub fn check(&mut self, nodes: &[SimNode]) -> Result<(), String> {
        for n in nodes {
            let Some((driver, _)) = &n.live else { continue };
            let raft = &driver.raw().raft;
            if raft.state == StateRole::Leader {
                let first = *self.leaders.entry(raft.term).or_insert(n.id);
                if first != n.id {
                    return Err(format!(
                        "two leaders in term {}: {first} and {}",
                        raft.term, n.id
                    ));
                }
            }
            let store = driver.raw().store();
            let commit = raft.raft_log.committed;
            let from = store.first_index();
            for index in from..=commit.min(store.last_index()) {
                let e = store
                    .entries(index, index + 1, None, GetEntriesContext::empty(false))
                    .map_err(|e| {
                        format!("node {} cannot read committed entry {index}: {e}", n.id)
                    })?;
                let got = (e[0].term, e[0].data.to_vec());
                match self.committed.get(&index) {
                    Some(seen) if *seen != got => {
                        return Err(format!(
                            "node {} committed entry {index} (term {}) that differs from term {}",
                            n.id, got.0, seen.0
                        ));
                    }
                    Some(_) => {}
                    None => {
                        self.committed.insert(index, got);
                    }
                }
            }
        }
        Ok(())
    }
}
