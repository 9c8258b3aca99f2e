//! Client request ids: a write that carries one (`Dedupe`) is applied once.
//! The state machine records its answer under the id, beside the first key
//! the write names (`keys::anchored_request_key`; a write that names no key,
//! under the group, `keys::request_key`), in the same atomic write as the
//! write's data; a later entry with the same id and first key, while the
//! record lasts, is not applied but answered with the recorded answer
//! (`ApplyResult::Replayed`), and one whose write differs (another digest)
//! is refused (`ApplyResult::IdReused`). So a client that got "outcome
//! unknown" retries with the same id and learns the outcome, never applying
//! its write twice. Because the record sits beside the key, a split
//! (`split.rs`) gives it to the group that serves the key from then on,
//! with no copy, and a snapshot of that group carries it.
//!
//! A record lasts `keep_ms` from its entry's `at_ms`, both chosen by the
//! proposing leader and carried in the entry, so every replica keeps and
//! forgets it at the same entry. Time here is the group's request clock:
//! the largest `at_ms` any applied entry carried (meta key
//! `request_clock_ms`), which only moves forward. Records are queued by
//! expiry (`keys::request_expiry_key`) and forgotten a bounded number per
//! apply round once the clock passes them. A queued record whose key a
//! split gave to another group is left to that group: a group split off
//! another sweeps its span's records once its clock passes the last moment
//! any record it inherited can expire (meta item
//! `requests_inherited_until`: the split's clock plus
//! [`MAX_REQUEST_KEEP_MS`], the longest a record is kept).

use std::collections::HashMap;
use std::ops::Bound;

use strata_engine::{EngineError, WriteBatch};

use super::StateMachine;
use crate::command::{ApplyResult, Dedupe};
use crate::keys;
use crate::range::KeySpan;
use crate::txn::TxnResult;

/// The most expired records one apply round forgets.
const FORGET_PER_ROUND: usize = 256;
/// Every this many rounds the expiry queue is read from its start again
/// (see [`ForgetCursor`]).
const RESCAN_EVERY_ROUNDS: u32 = 1024;
/// The longest a request record is kept, whatever the write asked: a day.
pub const MAX_REQUEST_KEEP_MS: u64 = 86_400_000;

/// Where the next round reads the expiry queue: just after the last record
/// forgotten, so that the deletions behind it (tombstones until compaction
/// drops them) are not read again every round. A record whose expiry sorts
/// before the cursor (a leader whose clock ran behind, a shorter
/// `--request-id-ttl-s`) is found when the queue is read from its start
/// again, every [`RESCAN_EVERY_ROUNDS`] rounds and after every restart or
/// snapshot install. Forgetting is only cleanup: an expired record is
/// answered as absent whether or not it was forgotten (`recall`), so when
/// each replica forgets it changes no answer.
#[derive(Default)]
pub(super) struct ForgetCursor {
    after: Option<Vec<u8>>,
    rounds: u32,
    /// Until when records inherited in a split may live (`None` inside:
    /// none are left to sweep; outside: not read yet).
    inherited_until: Option<Option<u64>>,
    /// Where the sweep of inherited records reads next.
    sweep_after: Option<Vec<u8>>,
}

/// What a write carrying a request id was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Remembered {
    expires_at_ms: u64,
    index: u64,
    digest: u64,
    /// `None` in the group's record of a write whose answer is kept beside
    /// its first key: the group's record then only tells another write
    /// under the same id (`IdReused`).
    result: Option<ApplyResult>,
}

/// The request records of one apply round, written or forgotten in it (by
/// engine key), and the request clock as it moves.
#[derive(Default)]
pub(super) struct Requests {
    records: HashMap<Vec<u8>, Option<Remembered>>,
    clock: Option<u64>,
    clock_moved: bool,
}

fn corrupt(what: &str) -> EngineError {
    EngineError::Corruption {
        context: format!("request record: {what}"),
    }
}

impl Remembered {
    fn encode(&self) -> Result<Vec<u8>, EngineError> {
        let mut v = Vec::with_capacity(32);
        v.extend_from_slice(&self.expires_at_ms.to_be_bytes());
        v.extend_from_slice(&self.index.to_be_bytes());
        v.extend_from_slice(&self.digest.to_be_bytes());
        let Some(result) = &self.result else {
            v.push(0);
            return Ok(v);
        };
        match result {
            ApplyResult::Written => v.push(1),
            ApplyResult::Deleted { existed } => {
                v.push(2);
                v.push(u8::from(*existed));
            }
            ApplyResult::Cas { succeeded, current } => {
                v.push(3);
                v.push(u8::from(*succeeded));
                if let Some(c) = current {
                    v.push(1);
                    v.extend_from_slice(c);
                } else {
                    v.push(0);
                }
            }
            ApplyResult::Txn(result) => {
                v.push(4);
                result.encode_into(&mut v);
            }
            ApplyResult::LeaseGranted { id, ttl_ms } => {
                v.push(5);
                v.extend_from_slice(&id.to_be_bytes());
                v.extend_from_slice(&ttl_ms.to_be_bytes());
            }
            ApplyResult::LeaseRevoked { keys } => {
                v.push(6);
                v.extend_from_slice(&keys.to_be_bytes());
            }
            ApplyResult::LeaseNotFound { id } => {
                v.push(7);
                v.extend_from_slice(&id.to_be_bytes());
            }
            ApplyResult::LeaseExists { id } => {
                v.push(8);
                v.extend_from_slice(&id.to_be_bytes());
            }
            ApplyResult::ClusterId { id } => {
                v.push(9);
                v.extend_from_slice(&id.to_be_bytes());
            }
            ApplyResult::Split { child } => {
                v.push(10);
                v.extend_from_slice(&child.to_be_bytes());
            }
            ApplyResult::SplitRefused { why } => {
                v.push(11);
                v.extend_from_slice(why.as_bytes());
            }
            ApplyResult::GroupId { id } => {
                v.push(12);
                v.extend_from_slice(&id.to_be_bytes());
            }
            ApplyResult::IdReused { .. }
            | ApplyResult::Replayed { .. }
            | ApplyResult::KeyNotInRange { .. } => {
                return Err(corrupt("an answer that applied nothing is not recorded"));
            }
        }
        Ok(v)
    }

    fn decode(v: &[u8]) -> Result<Remembered, EngineError> {
        let u64_at = |at: usize| {
            v.get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_be_bytes)
                .ok_or_else(|| corrupt("cut short"))
        };
        let result = match v.get(24).copied().ok_or_else(|| corrupt("cut short"))? {
            0 => None,
            tag => Some(Self::decode_result(tag, v)?),
        };
        Ok(Remembered {
            expires_at_ms: u64_at(0)?,
            index: u64_at(8)?,
            digest: u64_at(16)?,
            result,
        })
    }

    fn decode_result(tag: u8, v: &[u8]) -> Result<ApplyResult, EngineError> {
        let u64_at = |at: usize| {
            v.get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_be_bytes)
                .ok_or_else(|| corrupt("cut short"))
        };
        let flag = |at: usize| v.get(at).copied().ok_or_else(|| corrupt("cut short"));
        Ok(match tag {
            1 => ApplyResult::Written,
            2 => ApplyResult::Deleted {
                existed: flag(25)? == 1,
            },
            3 => ApplyResult::Cas {
                succeeded: flag(25)? == 1,
                current: match flag(26)? {
                    0 => None,
                    _ => Some(v[27..].to_vec()),
                },
            },
            4 => ApplyResult::Txn(
                TxnResult::decode(v.get(25..).unwrap_or_default())
                    .map_err(|e| corrupt(&e.to_string()))?,
            ),
            5 => ApplyResult::LeaseGranted {
                id: u64_at(25)?,
                ttl_ms: u64_at(33)?,
            },
            6 => ApplyResult::LeaseRevoked { keys: u64_at(25)? },
            7 => ApplyResult::LeaseNotFound { id: u64_at(25)? },
            8 => ApplyResult::LeaseExists { id: u64_at(25)? },
            9 => ApplyResult::ClusterId { id: u64_at(25)? },
            10 => ApplyResult::Split { child: u64_at(25)? },
            11 => ApplyResult::SplitRefused {
                why: String::from_utf8_lossy(v.get(25..).unwrap_or_default()).into_owned(),
            },
            12 => ApplyResult::GroupId { id: u64_at(25)? },
            _ => return Err(corrupt("unknown answer")),
        })
    }
}

impl Requests {
    /// The request clock as the round has moved it so far, if it read it.
    pub(super) fn clock(&self) -> Option<u64> {
        self.clock
    }
}

impl StateMachine {
    /// The group's request clock before this round.
    pub(super) fn request_clock(&self) -> Result<u64, EngineError> {
        match self.engine.get(&self.request_clock_key)? {
            None => Ok(0),
            Some(v) => v
                .as_slice()
                .try_into()
                .map(u64::from_be_bytes)
                .map_err(|_| corrupt("request clock")),
        }
    }

    fn recalled(&self, round: &Requests, key: &[u8]) -> Result<Option<Remembered>, EngineError> {
        if let Some(r) = round.records.get(key) {
            return Ok(r.clone());
        }
        self.engine
            .get(key)?
            .map(|v| Remembered::decode(&v))
            .transpose()
    }

    /// What to answer a write carrying `d`, whose first key is `anchor`,
    /// instead of applying it: `None` to apply it (the id is new, or its
    /// record expired).
    ///
    /// The answer is looked up beside the write's first key, then in the
    /// group's own records: there are the answers of writes that name no
    /// key and of writes recorded before answers sat beside their keys, and
    /// a note of every other id the group recorded, so that another write
    /// under a remembered id is refused whichever keys it names.
    pub(super) fn recall(
        &self,
        round: &mut Requests,
        d: &Dedupe,
        anchor: Option<&[u8]>,
    ) -> Result<Option<ApplyResult>, EngineError> {
        let clock = match round.clock {
            Some(c) => c,
            None => self.request_clock()?,
        };
        if d.at_ms > clock {
            round.clock_moved = true;
        }
        let clock = clock.max(d.at_ms);
        round.clock = Some(clock);
        let live = |r: Option<Remembered>| r.filter(|r| r.expires_at_ms > clock);
        let beside = match anchor {
            Some(a) => {
                live(self.recalled(round, &keys::anchored_request_key(self.space()?, a, &d.id))?)
            }
            None => None,
        };
        let found = match beside {
            Some(r) => r,
            None => match live(self.recalled(round, &keys::request_key(self.group, &d.id))?) {
                Some(r) => r,
                None => return Ok(None),
            },
        };
        if found.digest != d.digest {
            return Ok(Some(ApplyResult::IdReused { index: found.index }));
        }
        // The same write, noted by the group but with no answer beside its
        // key: that cannot be while the key is in the group's span, so it
        // is applied as new rather than answered with nothing.
        let Some(result) = found.result else {
            return Ok(None);
        };
        Ok(Some(ApplyResult::Replayed {
            index: found.index,
            result: Box::new(result),
        }))
    }

    /// Records, into `batch`, that the write carrying `d`, whose first key
    /// is `anchor`, was applied at `index` with `result`: the answer beside
    /// the key, and a note of the id in the group's own records (for a
    /// write that names no key, the answer there).
    pub(super) fn remember(
        &self,
        batch: &mut WriteBatch,
        round: &mut Requests,
        d: &Dedupe,
        anchor: Option<&[u8]>,
        index: u64,
        result: &ApplyResult,
    ) -> Result<(), EngineError> {
        let answer = Remembered {
            expires_at_ms: d.at_ms.saturating_add(d.keep_ms.min(MAX_REQUEST_KEEP_MS)),
            index,
            digest: d.digest,
            result: Some(result.clone()),
        };
        let group_key = keys::request_key(self.group, &d.id);
        let at = match anchor {
            Some(a) => {
                let key = keys::anchored_request_key(self.space()?, a, &d.id);
                batch.put(&key, &answer.encode()?);
                round.records.insert(key, Some(answer.clone()));
                let note = Remembered {
                    result: None,
                    ..answer.clone()
                };
                batch.put(&group_key, &note.encode()?);
                round.records.insert(group_key, Some(note));
                keys::RequestAt::Anchored(a.to_vec())
            }
            None => {
                batch.put(&group_key, &answer.encode()?);
                round.records.insert(group_key, Some(answer.clone()));
                keys::RequestAt::Group
            }
        };
        batch.put(
            &keys::request_expiry_key(self.group, answer.expires_at_ms, &d.id),
            &at.encode(),
        );
        Ok(())
    }

    /// Forgets, into `batch`, up to `FORGET_PER_ROUND` records the request
    /// clock has passed, and stores the clock if it moved. `span` is the
    /// group's as the round left it: an answer beside a key outside it is
    /// another group's now, and stays.
    pub(super) fn forget_expired(
        &self,
        batch: &mut WriteBatch,
        round: &mut Requests,
        span: &KeySpan,
    ) -> Result<(), EngineError> {
        let Some(clock) = round.clock else {
            return Ok(());
        };
        if round.clock_moved {
            batch.put(&self.request_clock_key, &clock.to_be_bytes());
        }
        self.sweep_inherited(batch, round, span, clock)?;
        let (lo, _) = keys::request_expiry_range(self.group);
        let hi = keys::request_expiry_key(self.group, clock.saturating_add(1), b"");
        let mut cursor = self.forget_cursor.lock();
        cursor.rounds += 1;
        if cursor.rounds >= RESCAN_EVERY_ROUNDS {
            cursor.after = None;
            cursor.rounds = 0;
        }
        let from = cursor.after.clone().unwrap_or(lo);
        if from >= hi {
            return Ok(());
        }
        let due = self.engine.scan(
            Bound::Included(&from[..]),
            Bound::Excluded(&hi[..]),
            FORGET_PER_ROUND,
        )?;
        if let Some((last, _)) = due.last() {
            let mut next = last.clone();
            next.push(0);
            cursor.after = Some(next);
        }
        drop(cursor);
        let space = self.space()?;
        for (k, v) in due {
            let (expires_at_ms, id) =
                keys::request_expiry(&k).ok_or_else(|| corrupt("bad expiry key"))?;
            let mut records = vec![keys::request_key(self.group, id)];
            match keys::RequestAt::decode(&v) {
                Some(keys::RequestAt::Group) => {}
                Some(keys::RequestAt::Anchored(a)) => {
                    if span.contains(&a) {
                        records.push(keys::anchored_request_key(space, &a, id));
                    }
                }
                None => return Err(corrupt("bad expiry entry")),
            }
            for record in records {
                // The id may have been recorded again since, with a later
                // expiry.
                if self
                    .recalled(round, &record)?
                    .is_some_and(|r| r.expires_at_ms == expires_at_ms)
                {
                    batch.delete(&record);
                    round.records.insert(record, None);
                }
            }
            batch.delete(&k);
        }
        Ok(())
    }

    /// Until when records this group inherited in a split may live, if any
    /// are left to sweep.
    fn inherited_until(&self, cursor: &mut ForgetCursor) -> Result<Option<u64>, EngineError> {
        if let Some(until) = cursor.inherited_until {
            return Ok(until);
        }
        let until = match self.engine.get(&self.inherited_key)? {
            None => None,
            Some(v) => Some(
                v.as_slice()
                    .try_into()
                    .map(u64::from_be_bytes)
                    .map_err(|_| corrupt("inherited until"))?,
            ),
        };
        cursor.inherited_until = Some(until);
        Ok(until)
    }

    /// Once the clock has passed every record this group inherited in a
    /// split, deletes, into `batch`, the expired records beside its keys,
    /// `FORGET_PER_ROUND` a round, from where the last round stopped; at the
    /// end of the span the sweep is done. Its own records are among them,
    /// and go only if expired: an expired record answers as absent whether
    /// it is deleted or not, so how far each replica's sweep has gone
    /// changes no answer.
    fn sweep_inherited(
        &self,
        batch: &mut WriteBatch,
        round: &mut Requests,
        span: &KeySpan,
        clock: u64,
    ) -> Result<(), EngineError> {
        let mut cursor = self.forget_cursor.lock();
        match self.inherited_until(&mut cursor)? {
            Some(until) if clock >= until => {}
            _ => return Ok(()),
        }
        let (lo, hi) = keys::anchored_requests(self.space()?, span);
        let from = cursor.sweep_after.clone().unwrap_or(lo);
        let records = if from < hi {
            self.engine.scan(
                Bound::Included(&from[..]),
                Bound::Excluded(&hi[..]),
                FORGET_PER_ROUND,
            )?
        } else {
            Vec::new()
        };
        if records.len() < FORGET_PER_ROUND {
            batch.delete(&self.inherited_key);
            cursor.inherited_until = Some(None);
            cursor.sweep_after = None;
        } else if let Some((last, _)) = records.last() {
            let mut next = last.clone();
            next.push(0);
            cursor.sweep_after = Some(next);
        }
        drop(cursor);
        for (k, _) in records {
            if self
                .recalled(round, &k)?
                .is_some_and(|r| r.expires_at_ms <= clock)
            {
                batch.delete(&k);
                round.records.insert(k, None);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::sync::Arc;

    use strata_engine::{Engine, Options};

    use super::*;
    use crate::command::{Command, Proposal};
    use crate::state_machine::Committed;

    fn open(dir: &std::path::Path) -> StateMachine {
        StateMachine::new(Arc::new(Engine::open(dir, Options::default()).unwrap()), 1)
    }

    /// Entry `index` carrying `command` under request id `id`, proposed at
    /// `at_ms` and remembered for 1,000 ms.
    pub(in crate::state_machine) fn deduped(
        index: u64,
        id: &str,
        at_ms: u64,
        command: Command,
    ) -> Committed {
        let digest = command.digest();
        Committed {
            index,
            proposal: Some(Proposal {
                request_id: index,
                command,
                dedupe: Some(Dedupe {
                    id: id.into(),
                    at_ms,
                    keep_ms: 1000,
                    digest,
                }),
            }),
            conf_state: None,
            members: None,
        }
    }

    fn cas(expected: Option<&str>, value: &str) -> Command {
        Command::Cas {
            key: "counter".into(),
            expected: expected.map(Into::into),
            value: Some(value.into()),
        }
    }

    // Proves that a write retried with its request id, in the same round or
    // a later one, and after a restart, is answered with the first answer
    // and not applied again (a swap applied twice would fail the second
    // time and show it); that another write under the same id is refused;
    // and that the id is forgotten once the group's clock passes its
    // expiry, after which it names a new write.
    #[test]
    fn a_retried_write_is_applied_once_and_answered_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let first = ApplyResult::Cas {
            succeeded: true,
            current: None,
        };
        {
            let sm = open(dir.path());
            let out = sm
                .apply(&[
                    deduped(1, "req-1", 10_000, cas(None, "1")),
                    deduped(2, "req-1", 10_050, cas(None, "1")),
                ])
                .unwrap();
            assert_eq!(out[0].result, first);
            assert_eq!(
                out[1].result,
                ApplyResult::Replayed {
                    index: 1,
                    result: Box::new(first.clone())
                }
            );
            sm.make_durable().unwrap();
        }
        let sm = open(dir.path());
        let out = sm
            .apply(&[
                deduped(3, "req-1", 10_900, cas(None, "1")),
                deduped(4, "req-1", 10_900, cas(Some("1"), "2")),
            ])
            .unwrap();
        assert_eq!(
            out[0].result,
            ApplyResult::Replayed {
                index: 1,
                result: Box::new(first.clone())
            }
        );
        assert_eq!(out[1].result, ApplyResult::IdReused { index: 1 });
        assert_eq!(sm.get(b"counter").unwrap(), Some(b"1".to_vec()));
        // Past its expiry (10,000 + 1,000 ms) the id is forgotten, record and
        // queue entry both, and names a new write.
        let out = sm
            .apply(&[deduped(5, "req-1", 11_001, cas(Some("1"), "2"))])
            .unwrap();
        assert_eq!(
            out[0].result,
            ApplyResult::Cas {
                succeeded: true,
                current: Some(b"1".to_vec())
            }
        );
        assert_eq!(sm.get(b"counter").unwrap(), Some(b"2".to_vec()));
        let (lo, hi) = keys::request_expiry_range(1);
        let queued = sm
            .engine()
            .scan(Bound::Included(&lo[..]), Bound::Excluded(&hi[..]), 10)
            .unwrap();
        assert_eq!(queued.len(), 1, "the expired queue entry was not dropped");
    }

    // Proves that records are forgotten by the clock the entries carry, not
    // by a replica's own: a leader whose clock runs behind cannot revive an
    // id the group has already forgotten, and the clock never goes back.
    #[test]
    fn the_request_clock_only_moves_forward() {
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path());
        sm.apply(&[deduped(1, "a", 5_000, cas(None, "1"))]).unwrap();
        sm.apply(&[deduped(2, "b", 7_000, Command::Delete { key: "x".into() })])
            .unwrap();
        // A behind clock (4,000) carries "a" again: the group's clock is
        // 7,000, past a's expiry (6,000), so it is a new write.
        let out = sm
            .apply(&[deduped(3, "a", 4_000, cas(Some("1"), "2"))])
            .unwrap();
        assert_eq!(
            out[0].result,
            ApplyResult::Cas {
                succeeded: true,
                current: Some(b"1".to_vec())
            }
        );
        assert_eq!(sm.request_clock().unwrap(), 7_000);
    }

    /// The ids whose records the group still holds.
    fn held(sm: &StateMachine) -> Vec<String> {
        let (lo, hi) = keys::request_range(1);
        sm.engine
            .scan(Bound::Included(&lo[..]), Bound::Excluded(&hi[..]), 10_000)
            .unwrap()
            .into_iter()
            .map(|(k, _)| String::from_utf8(k[9..].to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn expired_records_are_forgotten_from_where_the_last_round_stopped() {
        // Proves: each round reads the expiry queue from just after the last
        // record it forgot (a record that expires behind that point is not
        // forgotten by the next round), and such a record is forgotten all
        // the same once the queue is read from its start again.
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path());
        let put = |k: &str| Command::Put {
            key: k.into(),
            value: b"v".to_vec(),
        };
        // Ten records expiring at 2,000..2,009 (at_ms + 1,000).
        let first: Vec<Committed> = (0..10)
            .map(|i| deduped(1 + i, &format!("r{i}"), 1_000 + i, put("k")))
            .collect();
        sm.apply(&first).unwrap();
        // A later clock forgets them all, and the cursor stands after them.
        sm.apply(&[deduped(11, "late", 5_000, put("k"))]).unwrap();
        assert_eq!(held(&sm), ["late"]);
        // A record from a clock far behind expires at 1,500: behind the
        // cursor, and already expired by the group's clock.
        sm.apply(&[deduped(12, "behind", 500, put("k"))]).unwrap();
        sm.apply(&[deduped(13, "next", 5_001, put("k"))]).unwrap();
        assert!(held(&sm).contains(&"behind".to_string()), "{:?}", held(&sm));
        // It is answered as absent all the same: its id is a new write.
        let out = sm
            .apply(&[deduped(14, "behind", 5_002, put("other"))])
            .unwrap();
        assert_eq!(out[0].result, ApplyResult::Written);
        // Read from the start again: the stale expiry entry goes.
        for i in 0..RESCAN_EVERY_ROUNDS as u64 {
            sm.apply(&[deduped(15 + i, &format!("n{i}"), 5_003 + i, put("k"))])
                .unwrap();
        }
        let (lo, hi) = keys::request_expiry_range(1);
        let queue: Vec<u64> = sm
            .engine
            .scan(Bound::Included(&lo[..]), Bound::Excluded(&hi[..]), 10_000)
            .unwrap()
            .into_iter()
            .map(|(k, _)| keys::request_expiry(&k).unwrap().0)
            .collect();
        assert!(queue.iter().all(|at| *at > 1_500), "{queue:?}");
    }

    #[test]
    fn another_write_under_a_remembered_id_is_refused_whichever_keys_it_names() {
        // Proves: the answer sits beside the write's first key, and the
        // group's note of the id refuses another write under it even when
        // that write names other keys; the note carries no answer.
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path());
        let put = |k: &str| Command::Put {
            key: k.into(),
            value: b"v".to_vec(),
        };
        sm.apply(&[deduped(1, "x", 1_000, put("a"))]).unwrap();
        let out = sm.apply(&[deduped(2, "x", 1_001, put("b"))]).unwrap();
        assert_eq!(out[0].result, ApplyResult::IdReused { index: 1 });
        assert_eq!(sm.get(b"b").unwrap(), None);
        let beside = sm
            .engine
            .get(&keys::anchored_request_key(1, b"a", b"x"))
            .unwrap()
            .map(|v| Remembered::decode(&v).unwrap());
        assert_eq!(beside.unwrap().result, Some(ApplyResult::Written));
        let note = sm.engine.get(&keys::request_key(1, b"x")).unwrap();
        assert_eq!(Remembered::decode(&note.unwrap()).unwrap().result, None);
    }

    #[test]
    fn records_written_before_answers_sat_beside_their_keys_still_answer() {
        // Proves: a record in the group's own table with its answer (as
        // every record was written before) answers a retry, refuses another
        // write under its id, and is forgotten at its expiry.
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path());
        let command = cas(None, "1");
        let old = Remembered {
            expires_at_ms: 2_000,
            index: 1,
            digest: command.digest(),
            result: Some(ApplyResult::Cas {
                succeeded: true,
                current: None,
            }),
        };
        let mut batch = WriteBatch::default();
        batch.put(&keys::request_key(1, b"old"), &old.encode().unwrap());
        batch.put(&keys::request_expiry_key(1, 2_000, b"old"), b"");
        sm.engine.write(&batch).unwrap();
        let out = sm
            .apply(&[
                deduped(2, "old", 1_500, command.clone()),
                deduped(3, "old", 1_500, cas(None, "2")),
            ])
            .unwrap();
        assert!(
            matches!(out[0].result, ApplyResult::Replayed { index: 1, .. }),
            "{:?}",
            out[0].result
        );
        assert_eq!(out[1].result, ApplyResult::IdReused { index: 1 });
        assert_eq!(sm.get(b"counter").unwrap(), None, "nothing applied");
        sm.apply(&[deduped(
            4,
            "later",
            2_500,
            Command::Delete { key: "z".into() },
        )])
        .unwrap();
        assert_eq!(sm.engine.get(&keys::request_key(1, b"old")).unwrap(), None);
    }

    #[test]
    fn no_record_is_kept_longer_than_a_day() {
        // Proves: a write that asks to be remembered for longer than
        // MAX_REQUEST_KEEP_MS is remembered for exactly that long.
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path());
        let command = cas(None, "1");
        let digest = command.digest();
        let entry = Committed {
            index: 1,
            proposal: Some(Proposal {
                request_id: 1,
                command,
                dedupe: Some(Dedupe {
                    id: b"long".to_vec(),
                    at_ms: 1_000,
                    keep_ms: u64::MAX,
                    digest,
                }),
            }),
            conf_state: None,
            members: None,
        };
        sm.apply(&[entry]).unwrap();
        let note = sm.engine.get(&keys::request_key(1, b"long")).unwrap();
        let note = Remembered::decode(&note.unwrap()).unwrap();
        assert_eq!(note.expires_at_ms, 1_000 + MAX_REQUEST_KEEP_MS);
    }

    #[test]
    fn every_answer_a_write_can_get_is_recorded_and_read_back() {
        let answers = [
            ApplyResult::Written,
            ApplyResult::Deleted { existed: true },
            ApplyResult::Cas {
                succeeded: false,
                current: Some(b"v".to_vec()),
            },
            ApplyResult::Txn(TxnResult {
                succeeded: true,
                results: vec![crate::txn::TxnOpResult::Put],
            }),
            ApplyResult::LeaseGranted {
                id: 7,
                ttl_ms: 3000,
            },
            ApplyResult::LeaseRevoked { keys: 12 },
            ApplyResult::LeaseNotFound { id: 9 },
            ApplyResult::LeaseExists { id: 10 },
            ApplyResult::ClusterId { id: 11 },
            ApplyResult::Split { child: 12 },
            ApplyResult::SplitRefused {
                why: "not inside".into(),
            },
        ];
        for result in answers.into_iter().map(Some).chain([None]) {
            let r = Remembered {
                expires_at_ms: 5,
                index: 6,
                digest: 7,
                result,
            };
            assert_eq!(Remembered::decode(&r.encode().unwrap()).unwrap(), r);
        }
    }
}
