//! Seeding an empty group with a state taken elsewhere (a backup): its
//! leases and keys, each key with the indexes that created and last put
//! it and its lease, written as they were, and then the raft index that
//! state is as of, with the configuration and members of the group that
//! starts from it. The group's history of changes starts after that
//! index, so a watch from before it is told it was compacted.

use std::collections::BTreeMap;

use protobuf::Message as _;
use raft::eraftpb::ConfState;
use strata_engine::{EngineError, WriteBatch};

use super::{StateMachine, Versioned, record};
use crate::keys;
use crate::members::Members;

/// Bytes of keys and values one seeding write holds, about.
const PIECE_BYTES: usize = 4 << 20;

/// Writes a state into an empty group, in pieces; nothing of it counts
/// until [`finish`](Seeder::finish) records the applied index.
pub struct Seeder<'a> {
    sm: &'a StateMachine,
    batch: WriteBatch,
    bytes: usize,
    keys: u64,
    leases: u64,
}

impl StateMachine {
    /// A seeder for this group, which must hold nothing: no applied
    /// index, no configuration, no key.
    pub fn seeder(&self) -> Result<Seeder<'_>, EngineError> {
        let holds =
            self.applied_index()? != 0 || self.conf_state()?.is_some() || self.count_keys()? != 0;
        if holds {
            return Err(EngineError::Corruption {
                context: format!(
                    "group {} holds data already; it is seeded empty",
                    self.group
                ),
            });
        }
        Ok(Seeder {
            sm: self,
            batch: WriteBatch::default(),
            bytes: 0,
            keys: 0,
            leases: 0,
        })
    }
}

impl Seeder<'_> {
    /// Lease `id` of `ttl_ms`.
    pub fn lease(&mut self, id: u64, ttl_ms: u64) -> Result<(), EngineError> {
        self.batch
            .put(&keys::lease_key(self.sm.group, id), &ttl_ms.to_be_bytes());
        self.leases += 1;
        self.grown(24)
    }

    /// `key` as `record` says: its value, indexes and lease (which must be
    /// one of the leases seeded).
    pub fn key(&mut self, key: &[u8], record: &Versioned) -> Result<(), EngineError> {
        self.batch
            .put(&keys::data_key(self.sm.space()?, key), &record.encode());
        if record.lease != 0 {
            self.batch.put(
                &keys::lease_member_key(self.sm.group, record.lease, key),
                b"",
            );
        }
        self.keys += 1;
        self.grown(2 * key.len() + record.value.len() + 64)
    }

    fn grown(&mut self, bytes: usize) -> Result<(), EngineError> {
        self.bytes += bytes;
        if self.bytes >= PIECE_BYTES {
            // Keys written without an apply round (see `recent_keys`).
            self.sm.forget_recent_keys();
            self.sm.engine.write(&std::mem::take(&mut self.batch))?;
            self.bytes = 0;
        }
        Ok(())
    }

    /// Records that the group holds its state as of raft `index`, with
    /// `members` (id to address) its voters, and makes it all durable.
    /// Returns the keys and leases seeded.
    pub fn finish(
        mut self,
        index: u64,
        members: &BTreeMap<u64, String>,
    ) -> Result<(u64, u64), EngineError> {
        let sm = self.sm;
        let mut conf = ConfState::default();
        conf.set_voters(members.keys().copied().collect());
        let conf = conf.write_to_bytes().expect("a configuration encodes");
        self.batch.put(&sm.applied_key, &index.to_be_bytes());
        self.batch.put(&sm.conf_key, &conf);
        self.batch.put(&sm.members_key, &Members::encode(members));
        // The changes up to `index` are not held: a watch from before it
        // is told so.
        self.batch
            .put(&sm.history_from_key, &(index + 1).to_be_bytes());
        self.batch.put(&sm.value_format_key, &[record::FORMAT]);
        sm.forget_recent_keys();
        sm.engine.write(&self.batch)?;
        sm.make_durable()?;
        sm.applied_tx.send_replace(index);
        Ok((self.keys, self.leases))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use strata_engine::{Engine, Options};

    use super::*;
    use crate::command::{ApplyResult, Command, Proposal};
    use crate::state_machine::Committed;

    fn open(dir: &std::path::Path) -> StateMachine {
        StateMachine::new(Arc::new(Engine::open(dir, Options::default()).unwrap()), 1)
    }

    fn record(value: &str, create_index: u64, mod_index: u64, lease: u64) -> Versioned {
        Versioned {
            value: value.into(),
            create_index,
            mod_index,
            lease,
        }
    }

    #[test]
    fn a_seeded_group_holds_its_keys_indexes_and_leases_and_goes_on_from_there() {
        // Proves: seeded keys read back with their indexes and lease; the
        // applied index is the seed's; a revoke of the seeded lease deletes
        // exactly its seeded keys; the next put keeps a key's create index;
        // the state survives a reopen; a group that holds data is refused.
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path());
        let mut seed = sm.seeder().unwrap();
        seed.lease(7, 60_000).unwrap();
        seed.key(b"a", &record("1", 10, 12, 0)).unwrap();
        seed.key(b"b", &record("2", 20, 20, 7)).unwrap();
        seed.key(b"c", &record("3", 30, 31, 7)).unwrap();
        let members = BTreeMap::from([(1, "a:1".to_string()), (2, "b:2".to_string())]);
        assert_eq!(seed.finish(40, &members).unwrap(), (3, 1));
        drop(sm);

        let sm = open(dir.path());
        sm.check_value_format().unwrap();
        assert_eq!(sm.applied_index().unwrap(), 40);
        let conf = ConfState::parse_from_bytes(&sm.conf_state().unwrap().unwrap()).unwrap();
        assert_eq!(conf.voters, vec![1, 2]);
        assert_eq!(
            Members::decode(&sm.members().unwrap().unwrap()).unwrap(),
            members
        );
        assert_eq!(
            sm.get_versioned(b"a").unwrap(),
            Some(record("1", 10, 12, 0))
        );
        assert_eq!(sm.lease(7).unwrap(), Some(60_000));
        assert_eq!(
            sm.lease_keys(7).unwrap(),
            vec![b"b".to_vec(), b"c".to_vec()]
        );
        assert!(sm.seeder().is_err(), "a group that holds data is refused");

        let committed = |index, command| Committed {
            index,
            proposal: Some(Proposal {
                request_id: index,
                command,
                dedupe: None,
            }),
            ..Default::default()
        };
        let out = sm
            .apply(&[
                committed(
                    41,
                    Command::Put {
                        key: b"a".to_vec(),
                        value: b"new".to_vec(),
                    },
                ),
                committed(42, Command::LeaseRevoke { id: 7 }),
            ])
            .unwrap();
        assert_eq!(out[1].result, ApplyResult::LeaseRevoked { keys: 2 });
        assert_eq!(
            sm.get_versioned(b"a").unwrap(),
            Some(record("new", 10, 41, 0))
        );
        assert_eq!(sm.get(b"b").unwrap(), None);
        assert_eq!(sm.get(b"c").unwrap(), None);
    }
}
