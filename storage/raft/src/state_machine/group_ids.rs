//! Group ids: the first group keeps the cluster's counter of raft group
//! ids, and a split names its new group with one taken from it
//! (`Command::NewGroupId`), so no two groups are ever given the same id.
//! The counter is replicated state like the data: every replica gives the
//! same id at the same index, and a snapshot carries it.

use strata_engine::{EngineError, WriteBatch};

use super::StateMachine;
use crate::command::ApplyResult;

/// The counter as a round's earlier entries moved it.
#[derive(Default)]
pub(super) struct GroupIdRound(Option<u64>);

impl StateMachine {
    /// The next id the counter gives: above the group's own, and above
    /// every id it gave.
    pub fn next_group_id(&self) -> Result<u64, EngineError> {
        let floor = self.group.saturating_add(1);
        match self.engine.get(&self.next_group_key)? {
            None => Ok(floor),
            Some(v) => {
                let stored = v
                    .as_slice()
                    .try_into()
                    .map(u64::from_be_bytes)
                    .map_err(|_| EngineError::Corruption {
                        context: format!(
                            "next group id of group {} has {} bytes",
                            self.group,
                            v.len()
                        ),
                    })?;
                Ok(stored.max(floor))
            }
        }
    }

    /// Stages, into `batch`, taking the next group id.
    pub(super) fn stage_new_group_id(
        &self,
        batch: &mut WriteBatch,
        round: &mut GroupIdRound,
    ) -> Result<ApplyResult, EngineError> {
        let id = match round.0 {
            Some(next) => next,
            None => self.next_group_id()?,
        };
        let Some(next) = id.checked_add(1) else {
            return Ok(ApplyResult::SplitRefused {
                why: "every group id is taken".into(),
            });
        };
        batch.put(&self.next_group_key, &next.to_be_bytes());
        round.0 = Some(next);
        Ok(ApplyResult::GroupId { id })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use strata_engine::{Engine, Options};

    use crate::command::{ApplyResult, Command};
    use crate::state_machine::StateMachine;
    use crate::state_machine::split::tests::committed;

    #[test]
    fn ids_are_given_once_in_order_within_a_round_and_after_a_restart() {
        // Proves: the first id is the one after the group's own; two taken
        // in one apply round differ; the counter survives a reopen.
        let dir = tempfile::tempdir().unwrap();
        let open = || {
            let engine = Arc::new(Engine::open(dir.path(), Options::default()).unwrap());
            StateMachine::new(engine, 1)
        };
        let sm = open();
        let applied = sm
            .apply(&[
                committed(1, Command::NewGroupId),
                committed(2, Command::NewGroupId),
            ])
            .unwrap();
        let ids: Vec<_> = applied.iter().map(|a| a.result.clone()).collect();
        assert_eq!(
            ids,
            [
                ApplyResult::GroupId { id: 2 },
                ApplyResult::GroupId { id: 3 }
            ]
        );
        drop(sm);
        let sm = open();
        let again = sm.apply(&[committed(3, Command::NewGroupId)]).unwrap();
        assert_eq!(again[0].result, ApplyResult::GroupId { id: 4 });
    }
}
