//! Invariants checked after every simulated millisecond, and the final
//! comparison once the group has settled.

use std::collections::{BTreeMap, HashMap};

use protobuf::Message as _;
use raft::eraftpb::{ConfState, Message};
use raft::{GetEntriesContext, StateRole, Storage};

use super::node::{Live, SimNode};

/// A configuration with every list sorted, so that equal ones compare
/// equal whatever order raft-rs keeps them in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conf {
    pub voters: Vec<u64>,
    pub outgoing: Vec<u64>,
    pub learners: Vec<u64>,
    pub learners_next: Vec<u64>,
    pub auto_leave: bool,
}

impl Conf {
    pub fn of(cs: &ConfState) -> Conf {
        let sorted = |ids: &[u64]| {
            let mut v = ids.to_vec();
            v.sort_unstable();
            v
        };
        Conf {
            voters: sorted(&cs.voters),
            outgoing: sorted(&cs.voters_outgoing),
            learners: sorted(&cs.learners),
            learners_next: sorted(&cs.learners_next),
            auto_leave: cs.auto_leave,
        }
    }

    /// The configuration raft is using now (as of its applied index).
    pub fn current(live: &Live) -> Conf {
        Conf::of(&live.driver.raw().raft.prs().conf().to_conf_state())
    }

    pub fn is_joint(&self) -> bool {
        !self.outgoing.is_empty()
    }

    /// Whether `id` has any role in the configuration.
    pub fn contains(&self, id: u64) -> bool {
        [
            &self.voters,
            &self.outgoing,
            &self.learners,
            &self.learners_next,
        ]
        .iter()
        .any(|ids| ids.contains(&id))
    }
}

#[derive(Default)]
pub struct Invariants {
    /// The leader seen for each term, whatever the configuration.
    leaders: HashMap<u64, u64>,
    /// Term and data of every committed entry any node reported.
    committed: BTreeMap<u64, (u64, Vec<u8>)>,
    /// The configuration first seen at each applied index, and by whom.
    confs: BTreeMap<u64, (u64, Conf)>,
}

impl Invariants {
    /// The term and data of the entry committed at `index`, once any node
    /// has reported it.
    pub fn committed_entry(&self, index: u64) -> Option<&(u64, Vec<u8>)> {
        self.committed.get(&index)
    }

    /// No storage failure (but lost state on a wiped member, and any on a
    /// member a test injects disk faults into); at most one
    /// leader per term; every node's committed prefix agrees; nodes that
    /// applied the same index use the same configuration, and it is the
    /// one stored with their data.
    pub fn check(&mut self, nodes: &[SimNode]) -> Result<(), String> {
        for n in nodes {
            let Some(live) = &n.live else { continue };
            if let Some(f) = live.driver.status().failure
                && !(n.wiped && f.is_lost_state())
                && !n.disk_faults
            {
                return Err(format!("node {} failed: {f}", n.id));
            }
            self.check_leader(n.id, live)?;
            self.check_committed(n.id, live)?;
            self.check_conf(n.id, live)?;
        }
        Ok(())
    }

    fn check_leader(&mut self, id: u64, live: &Live) -> Result<(), String> {
        let raft = &live.driver.raw().raft;
        if raft.state == StateRole::Leader {
            let first = *self.leaders.entry(raft.term).or_insert(id);
            if first != id {
                return Err(format!(
                    "two leaders in term {}: {first} and {id}",
                    raft.term
                ));
            }
        }
        Ok(())
    }

    fn check_committed(&mut self, id: u64, live: &Live) -> Result<(), String> {
        let raft = &live.driver.raw().raft;
        let store = live.driver.raw().store();
        let commit = raft.raft_log.committed;
        for index in store.first_index()..=commit.min(store.last_index()) {
            let e = store
                .entries(index, index + 1, None, GetEntriesContext::empty(false))
                .map_err(|e| format!("node {id} cannot read committed entry {index}: {e}"))?;
            let got = (e[0].term, e[0].data.to_vec());
            match self.committed.get(&index) {
                Some(seen) if *seen != got => {
                    return Err(format!(
                        "node {id} committed entry {index} (term {}) that differs from term {}",
                        got.0, seen.0
                    ));
                }
                Some(_) => {}
                None => {
                    self.committed.insert(index, got);
                }
            }
        }
        Ok(())
    }

    fn check_conf(&mut self, id: u64, live: &Live) -> Result<(), String> {
        // The engine's applied index, which the configuration is stored
        // with: raft hears of an installed snapshot's index only once the
        // raft log records it durably, while it uses the snapshot's
        // configuration from the moment it steps the snapshot.
        let applied = live
            .shared
            .state_machine
            .applied_index()
            .map_err(|e| format!("node {id} cannot read its applied index: {e}"))?;
        let conf = Conf::current(live);
        let stored = live
            .shared
            .state_machine
            .conf_state()
            .map_err(|e| format!("node {id} cannot read its stored configuration: {e}"))?;
        if let Some(bytes) = stored {
            let cs = ConfState::parse_from_bytes(&bytes).map_err(|e| {
                format!("node {id} stored a configuration that does not decode: {e}")
            })?;
            if Conf::of(&cs) != conf {
                return Err(format!(
                    "node {id} at applied index {applied} uses {conf:?} but stored {:?}",
                    Conf::of(&cs)
                ));
            }
        }
        match self.confs.get(&applied) {
            Some((first, seen)) if *seen != conf => Err(format!(
                "at applied index {applied} node {first} used {seen:?} but node {id} uses {conf:?}"
            )),
            Some(_) => Ok(()),
            None => {
                self.confs.insert(applied, (id, conf));
                Ok(())
            }
        }
    }
}

/// A leader sends a snapshot only to a member of the snapshot's own
/// configuration: raft-rs ignores any other, and a leader that offers it
/// again on every retry never catches that member up.
pub fn snapshot_includes_target(m: &Message) -> Result<(), String> {
    let meta = m.get_snapshot().get_metadata();
    if Conf::of(meta.get_conf_state()).contains(m.to) {
        return Ok(());
    }
    Err(format!(
        "node {} sent node {} the snapshot at index {} whose configuration {:?} leaves it out",
        m.from,
        m.to,
        meta.index,
        Conf::of(meta.get_conf_state())
    ))
}

/// The node whose configuration is the newest known: the live one that
/// applied the most (any applied configuration was committed).
pub fn most_applied(nodes: &[SimNode]) -> Option<(usize, u64)> {
    nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| Some((i, n.live.as_ref()?.driver.raw().raft.raft_log.applied)))
        .max_by_key(|&(i, applied)| (applied, std::cmp::Reverse(i)))
}

/// After healing and settling: the final configuration is not joint, every
/// member of it is running, and all members applied the same index, use the
/// same configuration and hold the same data, which has every acknowledged
/// write. Nodes that are not members are left out. Returns the applied index.
pub fn compare_final(nodes: &[SimNode], acked: &BTreeMap<String, String>) -> Result<u64, String> {
    let (r, _) = most_applied(nodes).ok_or("no node is running")?;
    let conf = Conf::current(nodes[r].live.as_ref().expect("running"));
    if conf.is_joint() {
        return Err(format!("the group is still joint: {conf:?}"));
    }
    let mut states = Vec::new();
    for &id in conf.voters.iter().chain(&conf.learners) {
        let live = nodes
            .iter()
            .find(|n| n.id == id)
            .and_then(|n| n.live.as_ref())
            .ok_or_else(|| format!("member {id} of {conf:?} is not running"))?;
        let applied = live.driver.raw().raft.raft_log.applied;
        let data = live
            .shared
            .state_machine
            .scan(b"", None, usize::MAX)
            .map_err(|e| e.to_string())?;
        states.push((id, applied, Conf::current(live), data));
    }
    let Some((id0, applied0, conf0, data0)) = states.first() else {
        return Err(format!(
            "node {} applied the most but has no members: {conf:?}",
            nodes[r].id
        ));
    };
    for (id, applied, conf, data) in &states[1..] {
        if applied != applied0 || conf != conf0 || data != data0 {
            return Err(format!(
                "node {id} applied {applied} with {} keys and {conf:?}; \
                 node {id0} applied {applied0} with {} keys and {conf0:?}",
                data.len(),
                data0.len()
            ));
        }
    }
    let held: BTreeMap<&[u8], &[u8]> = data0
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    for (key, value) in acked {
        if held.get(key.as_bytes()) != Some(&value.as_bytes()) {
            return Err(format!("acknowledged write {key}={value} is lost"));
        }
    }
    Ok(*applied0)
}
