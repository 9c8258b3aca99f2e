//! Leases in the replicated state: each lease's TTL (`l | group | id`) and
//! the keys put under it (`k | group | id | key`). Granting and revoking
//! are entries like any write, so every replica holds the same leases and
//! deletes the same keys at the same index; when a lease runs out is
//! decided by the leader alone (`strata_server::lessor`), which then
//! proposes its revoke.
//!
//! A key put under a lease records its id; putting it again under another
//! lease, or none, moves it (the old lease's list keeps a stale entry that
//! its revoke skips, since the key's record names another lease).

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

use strata_engine::{EngineError, ReadPoint, WriteBatch};

use super::{Overlay, SCAN_BATCH_KEYS, StateMachine, history};
use crate::command::ApplyResult;
use crate::keys;

/// The largest lease id: the largest integer a JSON number carries exactly
/// (2^53 - 1), so that every client reads ids as they are.
pub const MAX_LEASE_ID: u64 = (1 << 53) - 1;
/// The most bytes of lease key lists one read holds.
const LIST_PIECE_BYTES: usize = 1 << 20;

/// The lease changes of one apply round, which later commands in it must
/// see: each lease granted (`Some(ttl)`) or revoked (`None`), and the keys
/// put under a lease.
#[derive(Default)]
pub(super) struct LeaseRound {
    leases: HashMap<u64, Option<u64>>,
    attached: HashMap<u64, Vec<Vec<u8>>>,
}

impl LeaseRound {
    /// Notes that `key` was put under lease `id`.
    pub(super) fn attach(&mut self, id: u64, key: &[u8]) {
        self.attached.entry(id).or_default().push(key.to_vec());
    }

    /// Every key this round put under a lease.
    pub(super) fn attached_keys(&self) -> impl Iterator<Item = &[u8]> {
        self.attached.values().flatten().map(Vec::as_slice)
    }
}

fn ttl_of(id: u64, stored: &[u8]) -> Result<u64, EngineError> {
    stored
        .try_into()
        .map(u64::from_be_bytes)
        .map_err(|_| EngineError::Corruption {
            context: format!("lease {id} record is {} bytes", stored.len()),
        })
}

impl StateMachine {
    /// Lease `id`'s TTL in ms as this round left it, if it exists.
    pub(super) fn lease_in_round(
        &self,
        round: &LeaseRound,
        id: u64,
    ) -> Result<Option<u64>, EngineError> {
        if let Some(ttl) = round.leases.get(&id) {
            return Ok(*ttl);
        }
        self.engine
            .get(&keys::lease_key(self.group, id))?
            .map(|v| ttl_of(id, &v))
            .transpose()
    }

    /// The id a lease granted at raft index `index` without one gets: the
    /// smallest free id from `index` on (the same on every replica).
    pub(super) fn free_lease_id(&self, round: &LeaseRound, index: u64) -> Result<u64, EngineError> {
        let mut id = index.min(MAX_LEASE_ID);
        while self.lease_in_round(round, id)?.is_some() {
            id += 1;
        }
        Ok(id)
    }

    /// Grants lease `id` of `ttl_ms`, unless it exists.
    pub(super) fn stage_grant(
        &self,
        batch: &mut WriteBatch,
        round: &mut LeaseRound,
        id: u64,
        ttl_ms: u64,
    ) -> Result<ApplyResult, EngineError> {
        if self.lease_in_round(round, id)?.is_some() {
            return Ok(ApplyResult::LeaseExists { id });
        }
        batch.put(&keys::lease_key(self.group, id), &ttl_ms.to_be_bytes());
        round.leases.insert(id, Some(ttl_ms));
        Ok(ApplyResult::LeaseGranted { id, ttl_ms })
    }

    /// Ends lease `id`: deletes every key still under it (each delete in
    /// the history, so watchers see it), its key list and its record.
    pub(super) fn stage_revoke(
        &self,
        changes: &mut history::Recorder<'_>,
        overlay: &mut Overlay,
        round: &mut LeaseRound,
        index: u64,
        id: u64,
    ) -> Result<ApplyResult, EngineError> {
        if self.lease_in_round(round, id)?.is_none() {
            return Ok(ApplyResult::LeaseNotFound { id });
        }
        let mut listed: BTreeSet<Vec<u8>> = self.listed_keys(id)?.into_iter().collect();
        listed.extend(round.attached.remove(&id).unwrap_or_default());
        let mut deleted = 0u64;
        for key in listed {
            changes
                .batch()
                .delete(&keys::lease_member_key(self.group, id, &key));
            if self.read(overlay, &key)?.is_some_and(|v| v.lease == id) {
                self.stage_delete(changes, overlay, index, &key, false)?;
                deleted += 1;
            }
        }
        changes.batch().delete(&keys::lease_key(self.group, id));
        round.leases.insert(id, None);
        Ok(ApplyResult::LeaseRevoked { keys: deleted })
    }

    /// Hands every engine pair in `[lo, hi)` to `each`, read a page at a
    /// time.
    fn each_pair(
        &self,
        (mut from, hi): (Vec<u8>, Vec<u8>),
        mut each: impl FnMut(&[u8], &[u8]) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        loop {
            let page = self.engine.scan_bytes(
                Bound::Included(&from[..]),
                Bound::Excluded(&hi[..]),
                SCAN_BATCH_KEYS,
                LIST_PIECE_BYTES,
            )?;
            let Some((last, _)) = page.last() else {
                return Ok(());
            };
            from = last.clone();
            from.push(0);
            for (k, v) in &page {
                each(k, v)?;
            }
        }
    }

    /// The keys listed under lease `id` in the engine, some perhaps moved
    /// to another lease since.
    fn listed_keys(&self, id: u64) -> Result<Vec<Vec<u8>>, EngineError> {
        let mut out = Vec::new();
        self.each_pair(keys::lease_members_range(self.group, id), |k, _| {
            out.push(keys::lease_member(k).to_vec());
            Ok(())
        })?;
        Ok(out)
    }

    /// Every lease the group holds, with its TTL in ms, by id.
    pub fn leases(&self) -> Result<Vec<(u64, u64)>, EngineError> {
        let mut out = Vec::new();
        self.each_pair(keys::lease_range(self.group), |k, v| {
            if let Some(id) = keys::lease_id(k) {
                out.push((id, ttl_of(id, v)?));
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Up to `limit` leases with their TTLs in ms as of `view`, ids after
    /// `after` (all, for `None`), ascending.
    pub fn leases_at(
        &self,
        view: &ReadPoint,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, u64)>, EngineError> {
        let (lo, hi) = keys::lease_range(self.group);
        let from = match after {
            Some(id) => match id.checked_add(1) {
                Some(next) => keys::lease_key(self.group, next),
                None => return Ok(Vec::new()),
            },
            None => lo,
        };
        view.scan(Bound::Included(&from[..]), Bound::Excluded(&hi[..]), limit)?
            .into_iter()
            .filter_map(|(k, v)| keys::lease_id(&k).map(|id| (id, v)))
            .map(|(id, v)| Ok((id, ttl_of(id, &v)?)))
            .collect()
    }

    /// Lease `id`'s TTL in ms, if it exists.
    pub fn lease(&self, id: u64) -> Result<Option<u64>, EngineError> {
        self.lease_in_round(&LeaseRound::default(), id)
    }

    /// The keys under lease `id` now, in key order.
    pub fn lease_keys(&self, id: u64) -> Result<Vec<Vec<u8>>, EngineError> {
        let mut out = Vec::new();
        for key in self.listed_keys(id)? {
            if self.get_versioned(&key)?.is_some_and(|v| v.lease == id) {
                out.push(key);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use strata_engine::{Engine, Options};

    use super::*;
    use crate::command::{Command, Proposal};
    use crate::state_machine::{ChangeKind, Committed};

    fn open(dir: &std::path::Path) -> StateMachine {
        let sm = StateMachine::new(Arc::new(Engine::open(dir, Options::default()).unwrap()), 1);
        sm.check_value_format().unwrap();
        sm
    }

    fn committed(index: u64, command: Command) -> Committed {
        Committed {
            index,
            proposal: Some(Proposal {
                request_id: index,
                command,
                dedupe: None,
            }),
            ..Default::default()
        }
    }

    fn leased(key: &str, lease: u64) -> Command {
        Command::PutLeased {
            key: key.into(),
            value: b"v".to_vec(),
            lease,
        }
    }

    #[test]
    fn a_revoke_deletes_the_keys_still_under_the_lease_and_no_others() {
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path());
        let out = sm
            .apply(&[
                committed(
                    1,
                    Command::LeaseGrant {
                        id: 7,
                        ttl_ms: 5000,
                    },
                ),
                committed(2, leased("a", 7)),
                committed(3, leased("b", 7)),
                committed(4, leased("moved", 7)),
            ])
            .unwrap();
        assert_eq!(
            out[0].result,
            ApplyResult::LeaseGranted {
                id: 7,
                ttl_ms: 5000
            }
        );
        // Later rounds: one key moves off the lease, one is put under it in
        // the same round as the revoke.
        sm.apply(&[committed(
            5,
            Command::Put {
                key: "moved".into(),
                value: b"kept".to_vec(),
            },
        )])
        .unwrap();
        assert_eq!(sm.lease_keys(7).unwrap(), [b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(sm.get_versioned(b"a").unwrap().unwrap().lease, 7);
        let out = sm
            .apply(&[
                committed(6, leased("c", 7)),
                committed(7, Command::LeaseRevoke { id: 7 }),
                committed(8, leased("d", 7)),
            ])
            .unwrap();
        assert_eq!(out[1].result, ApplyResult::LeaseRevoked { keys: 3 });
        assert_eq!(out[2].result, ApplyResult::LeaseNotFound { id: 7 });
        for gone in ["a", "b", "c", "d"] {
            assert_eq!(sm.get(gone.as_bytes()).unwrap(), None, "{gone}");
        }
        assert_eq!(sm.get(b"moved").unwrap(), Some(b"kept".to_vec()));
        assert_eq!(sm.lease(7).unwrap(), None);
        assert!(sm.listed_keys(7).unwrap().is_empty(), "the key list stays");
        // The deletes are changes watchers see.
        let page = sm
            .history(
                crate::state_machine::HistoryPosition::at(1),
                100,
                usize::MAX,
            )
            .unwrap();
        let deletes: Vec<&[u8]> = page
            .changes
            .iter()
            .filter(|c| c.kind == ChangeKind::Delete)
            .map(|c| c.key.as_slice())
            .collect();
        assert_eq!(deletes, [&b"a"[..], b"b", b"c"]);
    }

    #[test]
    fn a_put_with_a_ttl_grants_its_own_lease_and_ids_do_not_collide() {
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path());
        let grant = |id| Command::LeaseGrant { id, ttl_ms: 1000 };
        let out = sm
            .apply(&[
                committed(
                    9,
                    Command::PutWithTtl {
                        key: "session".into(),
                        value: b"s".to_vec(),
                        ttl_ms: 3000,
                    },
                ),
                committed(10, grant(0)),
                committed(11, grant(9)),
                committed(12, grant(13)),
                committed(13, grant(0)),
            ])
            .unwrap();
        let got: Vec<&ApplyResult> = out.iter().map(|a| &a.result).collect();
        assert_eq!(
            got,
            [
                &ApplyResult::LeaseGranted {
                    id: 9,
                    ttl_ms: 3000
                },
                &ApplyResult::LeaseGranted {
                    id: 10,
                    ttl_ms: 1000
                },
                &ApplyResult::LeaseExists { id: 9 },
                &ApplyResult::LeaseGranted {
                    id: 13,
                    ttl_ms: 1000
                },
                // 13 is taken: the next free id.
                &ApplyResult::LeaseGranted {
                    id: 14,
                    ttl_ms: 1000
                },
            ]
        );
        assert_eq!(sm.get_versioned(b"session").unwrap().unwrap().lease, 9);
        assert_eq!(
            sm.leases().unwrap(),
            [(9, 3000), (10, 1000), (13, 1000), (14, 1000)]
        );
        let out = sm.apply(&[committed(15, leased("x", 404))]).unwrap();
        assert_eq!(out[0].result, ApplyResult::LeaseNotFound { id: 404 });
        assert_eq!(sm.get(b"x").unwrap(), None, "a put under no lease applied");
    }
}
