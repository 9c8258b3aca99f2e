//! The cluster's id: a random non-zero number its first leader proposes
//! (`Command::ClusterId`), kept by every replica from the entry that named
//! it on, and carried by every batch of raft messages, so that a member of
//! one cluster never takes part in another (a node of a cluster restored
//! from a backup, say, still listed by the old one). Until the first
//! leader's entry is applied the id is 0: unknown.

use std::sync::atomic::{AtomicU64, Ordering};

use strata_engine::{EngineError, WriteBatch};

use super::StateMachine;
use crate::command::ApplyResult;

/// The cached id's value while it has not been read from the engine.
const NOT_READ: u64 = u64::MAX;

/// The cluster id as last read or applied.
#[derive(Debug)]
pub(super) struct ClusterIdCache(AtomicU64);

impl Default for ClusterIdCache {
    fn default() -> Self {
        ClusterIdCache(AtomicU64::new(NOT_READ))
    }
}

impl ClusterIdCache {
    pub(super) fn set(&self, id: u64) {
        self.0.store(id, Ordering::Release);
    }
}

/// What one apply round decided about the id, before its batch is written.
#[derive(Debug, Default)]
pub(super) struct ClusterIdRound(Option<u64>);

fn decode(v: &[u8]) -> Result<u64, EngineError> {
    v.try_into()
        .map(u64::from_be_bytes)
        .map_err(|_| EngineError::Corruption {
            context: format!("the cluster id is {} bytes", v.len()),
        })
}

impl StateMachine {
    /// The cluster's id; 0 until its first leader named it.
    pub fn cluster_id(&self) -> Result<u64, EngineError> {
        let cached = self.cluster_id.0.load(Ordering::Acquire);
        if cached != NOT_READ {
            return Ok(cached);
        }
        let id = self.stored_cluster_id()?;
        self.cluster_id.set(id);
        Ok(id)
    }

    /// The cluster id as the engine holds it.
    pub(super) fn stored_cluster_id(&self) -> Result<u64, EngineError> {
        self.engine
            .get(&self.cluster_id_key)?
            .map_or(Ok(0), |v| decode(&v))
    }

    /// Applies a proposal of `id`: it names the cluster unless an earlier
    /// entry did (or `id` is 0); either way the answer is the id in effect.
    pub(super) fn stage_cluster_id(
        &self,
        batch: &mut WriteBatch,
        round: &mut ClusterIdRound,
        id: u64,
    ) -> Result<ApplyResult, EngineError> {
        let current = match round.0 {
            Some(current) => current,
            None => self.stored_cluster_id()?,
        };
        if current != 0 || id == 0 {
            return Ok(ApplyResult::ClusterId { id: current });
        }
        batch.put(&self.cluster_id_key, &id.to_be_bytes());
        round.0 = Some(id);
        Ok(ApplyResult::ClusterId { id })
    }

    /// Publishes the id a round named, once its batch is written.
    pub(super) fn cluster_id_applied(&self, round: ClusterIdRound) {
        if let Some(id) = round.0 {
            self.cluster_id.set(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use strata_engine::{Engine, Options};

    use crate::command::{ApplyResult, Command, Proposal};
    use crate::state_machine::{Committed, StateMachine};

    fn named(index: u64, id: u64) -> Committed {
        Committed {
            index,
            proposal: Some(Proposal {
                request_id: index,
                command: Command::ClusterId { id },
                dedupe: None,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_first_id_applied_names_the_cluster_for_good() {
        // Proves: the first non-zero id applied is the cluster's, also when
        // two leaders each proposed one (in one round or in two), and it
        // survives a reopen of the engine.
        let dir = tempfile::tempdir().unwrap();
        let open = || {
            let sm = StateMachine::new(
                Arc::new(Engine::open(dir.path(), Options::default()).unwrap()),
                1,
            );
            sm.check_value_format().unwrap();
            sm
        };
        let sm = open();
        assert_eq!(sm.cluster_id().unwrap(), 0, "unnamed at first");
        let out = sm
            .apply(&[named(1, 0), named(2, 77), named(3, 99)])
            .unwrap();
        let ids: Vec<ApplyResult> = out.into_iter().map(|a| a.result).collect();
        assert_eq!(
            ids,
            vec![
                ApplyResult::ClusterId { id: 0 },
                ApplyResult::ClusterId { id: 77 },
                ApplyResult::ClusterId { id: 77 },
            ]
        );
        assert_eq!(sm.cluster_id().unwrap(), 77);
        let again = sm.apply(&[named(4, 5)]).unwrap();
        assert_eq!(again[0].result, ApplyResult::ClusterId { id: 77 });
        sm.make_durable().unwrap();
        drop(sm);
        assert_eq!(open().cluster_id().unwrap(), 77, "kept across a reopen");
    }
}
