//! Applying a transaction (`crate::txn`): its compares decide the branch,
//! whose operations then run in order against the state the entry is
//! applied to, each seeing the writes of the ones before it and of the
//! earlier commands of the same apply round.

use std::collections::BTreeMap;
use std::ops::Bound;

use strata_engine::EngineError;

use super::lease::LeaseRound;
use super::{Overlay, StateMachine, Versioned, VersionedPair, history};
use crate::command::ApplyResult;
use crate::keys;
use crate::txn::{MAX_RANGE_BYTES, MAX_RANGE_KEYS, Txn, TxnOp, TxnOpResult, TxnResult};

impl StateMachine {
    /// Runs `txn`; a put of the branch that runs under a lease that does
    /// not exist fails the whole transaction before anything is applied.
    pub(super) fn apply_txn(
        &self,
        changes: &mut history::Recorder<'_>,
        overlay: &mut Overlay,
        leases: &mut LeaseRound,
        index: u64,
        txn: &Txn,
    ) -> Result<ApplyResult, EngineError> {
        let mut succeeded = true;
        for compare in &txn.compares {
            if !compare.holds(self.read(overlay, &compare.key)?.as_ref()) {
                succeeded = false;
                break;
            }
        }
        let branch = if succeeded {
            &txn.success
        } else {
            &txn.failure
        };
        for op in branch {
            if let TxnOp::Put { lease, .. } = op
                && *lease != 0
                && self.lease_in_round(leases, *lease)?.is_none()
            {
                return Ok(ApplyResult::LeaseNotFound { id: *lease });
            }
        }
        let mut results = Vec::with_capacity(branch.len());
        // What the branch's ranges may still return, together.
        let mut range_budget = MAX_RANGE_BYTES;
        for op in branch {
            results.push(match op {
                TxnOp::Put { key, value, lease } => {
                    self.stage_put(changes, overlay, leases, index, key, value, *lease)?;
                    TxnOpResult::Put
                }
                TxnOp::Delete { key } => TxnOpResult::Delete {
                    existed: self.stage_delete(changes, overlay, index, key, true)?,
                },
                TxnOp::Get { key } => TxnOpResult::Get {
                    found: self.read(overlay, key)?,
                },
                TxnOp::Range { start, end, limit } => {
                    let (pairs, more) = self.range(overlay, start, end, *limit, range_budget)?;
                    let used: usize = pairs.iter().map(|(k, v)| k.len() + v.value.len()).sum();
                    range_budget = range_budget.saturating_sub(used);
                    TxnOpResult::Range { pairs, more }
                }
            });
        }
        Ok(ApplyResult::Txn(TxnResult { succeeded, results }))
    }

    /// The user keys in `[start, end)` (`end` empty: to the end) as this
    /// round's writes so far left them: at most `limit` of them (0 or more
    /// than [`MAX_RANGE_KEYS`]: that many) and about `max_bytes` of keys
    /// and values, and whether keys were left out. "Left out" may also be said when
    /// the only keys past the last one returned are ones this round
    /// deleted.
    fn range(
        &self,
        overlay: &Overlay,
        start: &[u8],
        end: &[u8],
        limit: u32,
        max_bytes: usize,
    ) -> Result<(Vec<VersionedPair>, bool), EngineError> {
        let limit = if limit == 0 || limit > MAX_RANGE_KEYS {
            MAX_RANGE_KEYS
        } else {
            limit
        } as usize;
        let in_range = |k: &[u8]| k >= start && (end.is_empty() || k < end);
        let written: Vec<(&Vec<u8>, &Option<Versioned>)> =
            overlay.iter().filter(|(k, _)| in_range(k)).collect();
        // Enough stored keys that, after this round's deletes, `limit`
        // remain (or the range's end is reached).
        let space = self.space()?;
        let lo = keys::data_key(space, start);
        let hi = if end.is_empty() {
            keys::data_end(space)
        } else {
            keys::data_key(space, end)
        };
        let want = limit + written.len();
        let stored = self.engine.scan_bytes(
            Bound::Included(&lo[..]),
            Bound::Excluded(&hi[..]),
            want,
            max_bytes.max(1),
        )?;
        let stopped_early = stored.len() == want
            || stored.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>() >= max_bytes;
        let mut merged = BTreeMap::new();
        for (k, v) in stored {
            let user = keys::user_key(&k).to_vec();
            let record = Versioned::decode(&user, v)?;
            merged.insert(user, record);
        }
        // Past the last stored key read, the state is known only where
        // the engine was not read: leave those keys out.
        let horizon = stopped_early
            .then(|| merged.keys().next_back().cloned())
            .flatten();
        for (k, v) in written {
            if horizon.as_ref().is_some_and(|h| k > h) {
                continue;
            }
            match v {
                Some(v) => merged.insert(k.clone(), v.clone()),
                None => merged.remove(k),
            };
        }
        let total = merged.len();
        let mut pairs = Vec::with_capacity(total.min(limit));
        let mut bytes = 0;
        for (k, v) in merged {
            if pairs.len() == limit || bytes >= max_bytes {
                break;
            }
            bytes += k.len() + v.value.len();
            pairs.push((k, v));
        }
        let more = stopped_early || pairs.len() < total;
        Ok((pairs, more))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use strata_engine::{Engine, Options};

    use super::*;
    use crate::command::{Command, Op, Proposal};
    use crate::state_machine::Committed;
    use crate::txn::{Compare, CompareOp, CompareTarget};

    fn open(dir: &std::path::Path) -> StateMachine {
        StateMachine::new(Arc::new(Engine::open(dir, Options::default()).unwrap()), 1)
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

    fn put(k: &str, v: &str) -> TxnOp {
        TxnOp::Put {
            key: k.into(),
            value: v.into(),
            lease: 0,
        }
    }

    fn txn_result(applied: &crate::state_machine::Applied) -> &TxnResult {
        match &applied.result {
            ApplyResult::Txn(r) => r,
            other => panic!("not a transaction's answer: {other:?}"),
        }
    }

    #[test]
    fn keys_carry_the_index_that_created_them_and_the_one_that_last_put_them() {
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path());
        let put = |k: &str, v: &str| Command::Put {
            key: k.into(),
            value: v.into(),
        };
        sm.apply(&[committed(3, put("a", "1")), committed(4, put("a", "2"))])
            .unwrap();
        sm.apply(&[committed(7, put("a", "3"))]).unwrap();
        let a = sm.get_versioned(b"a").unwrap().unwrap();
        assert_eq!(
            (a.create_index, a.mod_index, a.value),
            (3, 7, b"3".to_vec())
        );
        // Deleted and put again: created anew.
        sm.apply(&[
            committed(8, Command::Delete { key: "a".into() }),
            committed(9, put("a", "4")),
        ])
        .unwrap();
        let a = sm.get_versioned(b"a").unwrap().unwrap();
        assert_eq!((a.create_index, a.mod_index), (9, 9));
        let view = sm.read_view();
        let scanned = sm.scan_versioned_at(&view, b"", None, 10).unwrap();
        assert_eq!(scanned, vec![(b"a".to_vec(), a)]);
        assert_eq!(sm.get(b"a").unwrap(), Some(b"4".to_vec()));
    }

    #[test]
    fn a_transaction_runs_the_branch_its_compares_choose_and_reads_its_own_writes() {
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path());
        sm.apply(&[committed(
            1,
            Command::Batch(vec![
                Op::Put {
                    key: "acct/a".into(),
                    value: "10".into(),
                },
                Op::Put {
                    key: "acct/b".into(),
                    value: "5".into(),
                },
            ]),
        )])
        .unwrap();
        let transfer = |from_mod: u64| {
            Command::Txn(Txn {
                compares: vec![
                    Compare {
                        key: "acct/a".into(),
                        target: CompareTarget::ModIndex(CompareOp::Equal, from_mod),
                    },
                    Compare {
                        key: "acct/c".into(),
                        target: CompareTarget::Exists(false),
                    },
                ],
                success: vec![
                    put("acct/a", "7"),
                    put("acct/c", "3"),
                    TxnOp::Range {
                        start: "acct/".into(),
                        end: "acct0".into(),
                        limit: 0,
                    },
                ],
                failure: vec![TxnOp::Get {
                    key: "acct/a".into(),
                }],
            })
        };
        // A stale mod index: the failure branch runs, and writes nothing.
        let out = sm.apply(&[committed(2, transfer(9))]).unwrap();
        let r = txn_result(&out[0]);
        assert!(!r.succeeded);
        let TxnOpResult::Get { found: Some(a) } = &r.results[0] else {
            panic!("{r:?}")
        };
        assert_eq!((a.value.as_slice(), a.mod_index), (&b"10"[..], 1));
        assert_eq!(sm.get(b"acct/c").unwrap(), None);

        let out = sm.apply(&[committed(3, transfer(1))]).unwrap();
        let r = txn_result(&out[0]);
        assert!(r.succeeded);
        let TxnOpResult::Range { pairs, more } = &r.results[2] else {
            panic!("{r:?}")
        };
        let seen: Vec<(&[u8], &[u8], u64, u64)> = pairs
            .iter()
            .map(|(k, v)| (&k[..], &v.value[..], v.create_index, v.mod_index))
            .collect();
        assert_eq!(
            seen,
            vec![
                (&b"acct/a"[..], &b"7"[..], 1, 3),
                (&b"acct/b"[..], &b"5"[..], 1, 1),
                (&b"acct/c"[..], &b"3"[..], 3, 3),
            ]
        );
        assert!(!more);
        // The same transaction again: acct/c exists now.
        let out = sm.apply(&[committed(4, transfer(3))]).unwrap();
        assert!(!txn_result(&out[0]).succeeded);
    }

    #[test]
    fn a_range_sees_the_rounds_earlier_writes_and_says_when_its_limit_cut_it() {
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path());
        let stored: Vec<Op> = (0..10)
            .map(|i| Op::Put {
                key: format!("k{i}").into_bytes(),
                value: b"s".to_vec(),
            })
            .collect();
        sm.apply(&[committed(1, Command::Batch(stored))]).unwrap();
        let range = |limit| {
            Command::Txn(Txn {
                success: vec![TxnOp::Range {
                    start: "k".into(),
                    end: Vec::new(),
                    limit,
                }],
                ..Txn::default()
            })
        };
        // One round: deletes of k0..k3 and a put of k05 before the range.
        let mut round = vec![committed(
            2,
            Command::Batch(
                (0..4)
                    .map(|i| Op::Delete {
                        key: format!("k{i}").into_bytes(),
                    })
                    .chain([Op::Put {
                        key: b"k05".to_vec(),
                        value: b"o".to_vec(),
                    }])
                    .collect(),
            ),
        )];
        round.push(committed(3, range(3)));
        round.push(committed(4, range(0)));
        let out = sm.apply(&round).unwrap();
        let keys_of = |r: &TxnResult| match &r.results[0] {
            TxnOpResult::Range { pairs, more } => (
                pairs
                    .iter()
                    .map(|(k, _)| String::from_utf8(k.clone()).unwrap())
                    .collect::<Vec<_>>(),
                *more,
            ),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            keys_of(txn_result(&out[1])),
            (vec!["k05".into(), "k4".into(), "k5".into()], true)
        );
        let (all, more) = keys_of(txn_result(&out[2]));
        assert_eq!(all, ["k05", "k4", "k5", "k6", "k7", "k8", "k9"]);
        assert!(!more);
    }

    #[test]
    fn the_ranges_of_one_transaction_share_one_byte_budget() {
        // Proves: a transaction of many ranges over large values returns
        // about MAX_RANGE_BYTES in all (the later ranges empty, each saying
        // there is more), not that much per range.
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path());
        let big: Vec<Op> = (0..8)
            .map(|i| Op::Put {
                key: format!("b{i}").into_bytes(),
                value: vec![b'x'; 1 << 20],
            })
            .collect();
        sm.apply(&[committed(1, Command::Batch(big))]).unwrap();
        let whole = TxnOp::Range {
            start: "b".into(),
            end: "c".into(),
            limit: 0,
        };
        let txn = Command::Txn(Txn {
            success: vec![whole; 10],
            ..Txn::default()
        });
        let out = sm.apply(&[committed(2, txn)]).unwrap();
        let mut total = 0;
        for r in &txn_result(&out[0]).results {
            let TxnOpResult::Range { pairs, more } = r else {
                panic!("{r:?}")
            };
            total += pairs.iter().map(|(_, v)| v.value.len()).sum::<usize>();
            assert!(*more, "every range was cut: 8 MiB is more than the budget");
        }
        assert!(
            total <= MAX_RANGE_BYTES + (1 << 20),
            "the ranges returned {total} bytes"
        );
        assert!(
            total >= 3 << 20,
            "the first range returned too little: {total}"
        );
    }
}
