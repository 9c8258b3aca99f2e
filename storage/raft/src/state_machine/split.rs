//! Applying a split (`Command::Split`): the group keeps the keys before the
//! split key, and a new group serves the rest from the split's index on.
//!
//! Nothing is copied. The child's user keys stay where they are: its data
//! space is the parent's (`keys::data_key`), and only its span differs. In
//! the split's own atomic write the parent's span is narrowed and the
//! child's state is created beside it: its span, data space, applied index
//! (the split's: the child's raft log starts there, so every index the
//! child gives a key is above the ones the parent gave it), configuration
//! and members (the parent's as of the split), request clock, value format
//! and cluster id. Its history starts after the split; what came before
//! is in the parent's.
//!
//! The request records of writes the parent applied sit beside their
//! first keys (`dedupe`), so those of the child's keys are the child's
//! from the split on: a retry of such a write, sent to the child, is
//! answered there, and the child sweeps them once they have all expired.
//!
//! Leases stay with the group that granted them, and a lease's end deletes
//! only the keys in its group's span: so a split is refused while a key
//! under a lease lies past the split key (it would outlive its lease), and
//! the node takes no lease on a key outside the first group's span.

use std::ops::Bound;
use std::sync::Arc;

use strata_engine::{Engine, EngineError, WriteBatch};

use super::StateMachine;
use super::lease::LeaseRound;
use crate::command::ApplyResult;
use crate::keys;
use crate::range::KeySpan;
use crate::state_machine::dedupe::MAX_REQUEST_KEEP_MS;
use crate::state_machine::record;

/// What a round's earlier entries changed that a split in it copies.
#[derive(Default)]
pub(super) struct SplitInputs {
    /// The configuration and members as the round's entries left them
    /// (`None`: as stored).
    pub conf_state: Option<Vec<u8>>,
    pub members: Option<Vec<u8>>,
    /// The request clock as the round left it.
    pub request_clock: Option<u64>,
}

/// The term a split-off group's raft log starts at (with every entry up to
/// the split's index taken as committed in it): the same on every replica,
/// which each start the group where they applied the split.
pub const CHILD_LOG_TERM: u64 = 1;

/// Lease members read at a time while a split looks for leased keys.
const LEASED_PAGE: usize = 1024;

impl StateMachine {
    /// A key under a lease that `right` (the span a split would give
    /// away) holds, as the round left them: one put under a lease by an
    /// earlier entry of the round, or one listed under a lease in the
    /// engine whose record names that lease (a key taken off its lease
    /// earlier in the round still reads as leased: the split is then
    /// refused when it need not be, never the other way).
    fn leased_key_in(
        &self,
        round: &LeaseRound,
        right: &KeySpan,
    ) -> Result<Option<Vec<u8>>, EngineError> {
        if let Some(key) = round.attached_keys().find(|k| right.contains(k)) {
            return Ok(Some(key.to_vec()));
        }
        let (mut from, end) = keys::lease_members_all(self.group);
        loop {
            let page = self.engine.scan(
                Bound::Included(&from[..]),
                Bound::Excluded(&end[..]),
                LEASED_PAGE,
            )?;
            for (k, _) in &page {
                let key = keys::lease_member(k);
                // The list may still name a key put again since without
                // the lease: only a key whose record names it counts.
                let lease = k
                    .get(9..17)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_be_bytes);
                if right.contains(key)
                    && self
                        .get_versioned(key)?
                        .is_some_and(|v| Some(v.lease) == lease)
                {
                    return Ok(Some(key.to_vec()));
                }
            }
            match page.last() {
                Some((last, _)) if page.len() == LEASED_PAGE => {
                    from = last.clone();
                    from.push(0);
                }
                _ => return Ok(None),
            }
        }
    }

    /// Where the raft log of a group split off another starts, `(index,
    /// term)`, until the log is started there ([`clear_log_start`]
    /// (Self::clear_log_start)).
    pub fn log_start(&self) -> Result<Option<(u64, u64)>, EngineError> {
        let Some(v) = self.engine.get(&self.log_start_key)? else {
            return Ok(None);
        };
        let at = |i: usize| {
            v.get(i..i + 8)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_be_bytes)
        };
        match (at(0), at(8), v.len()) {
            (Some(index), Some(term), 16) => Ok(Some((index, term))),
            _ => Err(EngineError::Corruption {
                context: format!("log start of group {} has {} bytes", self.group, v.len()),
            }),
        }
    }

    /// Forgets where the raft log starts, once it was started there (and
    /// made durable first, so that a raft log lost later is never started
    /// again as if it held nothing).
    pub fn clear_log_start(&self) -> Result<(), EngineError> {
        let mut batch = WriteBatch::default();
        batch.delete(&self.log_start_key);
        self.engine.write(&batch)?;
        self.make_durable()
    }

    /// Every group whose state `engine` holds (an applied index, given at
    /// bootstrap, by a split or by a snapshot), ascending.
    pub fn groups_in(engine: &Arc<Engine>) -> Result<Vec<u64>, EngineError> {
        let mut groups = Vec::new();
        let mut from = keys::meta_key(0, "");
        let end = keys::meta_end();
        loop {
            let found = engine.scan(Bound::Included(&from[..]), Bound::Excluded(&end[..]), 1)?;
            let Some((key, _)) = found.first() else {
                return Ok(groups);
            };
            let group = keys::meta_group(key).ok_or_else(|| EngineError::Corruption {
                context: "a metadata key names no group".into(),
            })?;
            if StateMachine::new(Arc::clone(engine), group).applied_index()? > 0 {
                groups.push(group);
            }
            match group.checked_add(1) {
                Some(next) => from = keys::meta_key(next, ""),
                None => return Ok(groups),
            }
        }
    }

    /// Stages, into `batch`, the split of `span` (the group's, as the round
    /// left it, narrowed here) at `at` into group `child`, by the entry at
    /// `index`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn stage_split(
        &self,
        batch: &mut WriteBatch,
        span: &mut KeySpan,
        inputs: &SplitInputs,
        leases: &LeaseRound,
        index: u64,
        at: &[u8],
        child: u64,
    ) -> Result<ApplyResult, EngineError> {
        let refused = |why: String| Ok(ApplyResult::SplitRefused { why });
        if child == 0 || child == self.group {
            return refused(format!(
                "group {child} cannot be split off group {}",
                self.group
            ));
        }
        // A view of the child, for the names of its keys.
        let to = StateMachine::new(Arc::clone(&self.engine), child);
        if to.applied_index()? > 0 {
            return refused(format!("group {child} exists already"));
        }
        let Some((left, right)) = span.split_at(at) else {
            return refused(format!(
                "the split key {:?} is not strictly inside the range {span}",
                String::from_utf8_lossy(at)
            ));
        };
        if let Some(key) = self.leased_key_in(leases, &right)? {
            return refused(format!(
                "key {:?} is under a lease and lies past the split key: a lease deletes only \
                 the keys of its own range, so split where no leased key lies past, or once \
                 those leases have ended",
                String::from_utf8_lossy(&key)
            ));
        }
        let conf_state = match &inputs.conf_state {
            Some(c) => c.clone(),
            None => self.conf_state()?.unwrap_or_default(),
        };
        let members = match &inputs.members {
            Some(m) => m.clone(),
            None => self.members()?.unwrap_or_default(),
        };
        let clock = match inputs.request_clock {
            Some(c) => c,
            None => self.request_clock()?,
        };
        let cluster_id = self.stored_cluster_id()?;
        batch.put(&self.span_key, &left.encode());
        batch.put(&to.span_key, &right.encode());
        batch.put(&to.space_key, &self.space()?.to_be_bytes());
        batch.put(&to.applied_key, &index.to_be_bytes());
        batch.put(&to.conf_key, &conf_state);
        batch.put(&to.members_key, &members);
        batch.put(&to.history_from_key, &(index + 1).to_be_bytes());
        batch.put(&to.request_clock_key, &clock.to_be_bytes());
        let inherited_until = clock.saturating_add(MAX_REQUEST_KEEP_MS);
        batch.put(&to.inherited_key, &inherited_until.to_be_bytes());
        batch.put(&to.value_format_key, &[record::FORMAT]);
        let mut log_start = index.to_be_bytes().to_vec();
        log_start.extend_from_slice(&CHILD_LOG_TERM.to_be_bytes());
        batch.put(&to.log_start_key, &log_start);
        if cluster_id != 0 {
            batch.put(&to.cluster_id_key, &cluster_id.to_be_bytes());
        }
        *span = left;
        Ok(ApplyResult::Split { child })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use strata_engine::{Engine, Options};

    use crate::command::{ApplyResult, Command, Op, Proposal};
    use crate::range::KeySpan;
    use crate::snapshot::seal;
    use crate::state_machine::dedupe::tests::deduped;
    use crate::state_machine::{Committed, StateMachine};
    use crate::txn::{Txn, TxnOp};

    /// `command` committed at `index`, without a request id.
    pub(in crate::state_machine) fn committed(index: u64, command: Command) -> Committed {
        Committed {
            index,
            proposal: Some(Proposal {
                request_id: index,
                command,
                dedupe: None,
            }),
            conf_state: None,
            members: None,
        }
    }

    fn put(k: &str, v: &str) -> Command {
        Command::Put {
            key: k.into(),
            value: v.into(),
        }
    }

    fn split(at: &str, child: u64) -> Command {
        Command::Split {
            at: at.into(),
            child,
        }
    }

    fn open(dir: &Path, group: u64) -> StateMachine {
        let engine = Arc::new(Engine::open(dir, Options::default()).unwrap());
        let sm = StateMachine::new(engine, group);
        sm.check_value_format().unwrap();
        sm
    }

    fn span(start: &str, end: Option<&str>) -> KeySpan {
        KeySpan {
            start: start.into(),
            end: end.map(Into::into),
        }
    }

    fn user_keys(sm: &StateMachine) -> Vec<String> {
        sm.scan(b"", None, 1000)
            .unwrap()
            .into_iter()
            .map(|(k, _)| String::from_utf8(k).unwrap())
            .collect()
    }

    /// Group 1 holding "a" through "z", one put per index 1..=26, with a
    /// configuration and members applied at index 27; then split at "m"
    /// into group 2 at index 28.
    fn split_group(dir: &Path) -> (StateMachine, StateMachine) {
        let parent = open(dir, 1);
        let puts: Vec<Committed> = (b'a'..=b'z')
            .enumerate()
            .map(|(i, c)| committed(i as u64 + 1, put(&(c as char).to_string(), "v")))
            .collect();
        parent.apply(&puts).unwrap();
        let conf = Committed {
            index: 27,
            conf_state: Some(b"conf".to_vec()),
            members: Some(b"members".to_vec()),
            ..Default::default()
        };
        let out = parent.apply(&[conf, committed(28, split("m", 2))]).unwrap();
        assert_eq!(out[0].result, ApplyResult::Split { child: 2 });
        let child = StateMachine::new(Arc::clone(parent.engine()), 2);
        (parent, child)
    }

    #[test]
    fn a_split_gives_each_key_to_one_group_and_copies_nothing() {
        // Proves: after a split at "m" the parent serves "a" through "l"
        // and the child "m" through "z", the two spans meeting at the split
        // key; the child starts at the split's index with the parent's
        // configuration and members as the same round left them; its keys
        // keep the indexes the parent gave them, and the engine holds each
        // key once (nothing was copied).
        let dir = tempfile::tempdir().unwrap();
        let (parent, child) = split_group(dir.path());
        assert_eq!(parent.span().unwrap(), span("", Some("m")));
        assert_eq!(child.span().unwrap(), span("m", None));
        assert_eq!(child.applied_index().unwrap(), 28);
        assert_eq!(child.conf_state().unwrap().unwrap(), b"conf");
        assert_eq!(child.members().unwrap().unwrap(), b"members");
        let left = user_keys(&parent);
        let right = user_keys(&child);
        assert_eq!(left.len(), 12, "{left:?}");
        assert_eq!(right.len(), 14, "{right:?}");
        assert_eq!(left.last().unwrap(), "l");
        assert_eq!(right.first().unwrap(), "m");
        let (lo, hi) = child.data_bounds().unwrap();
        let stored = parent
            .engine()
            .scan(
                std::ops::Bound::Included(&crate::keys::data_start(1)[..]),
                std::ops::Bound::Excluded(&crate::keys::data_end(1)[..]),
                1000,
            )
            .unwrap();
        assert_eq!(stored.len(), 26, "every key is stored once");
        assert!(lo.starts_with(&crate::keys::data_start(1)) && hi > lo);
        let q = child.get_versioned(b"q").unwrap().unwrap();
        assert_eq!(q.mod_index, 17, "the index the parent gave it");
        assert_eq!(parent.describe().unwrap().keys, 12);
        assert_eq!(child.describe().unwrap().keys, 14);
        // The history of the child starts after the split.
        assert_eq!(child.history_bounds().unwrap().0, 29);
    }

    #[test]
    fn each_group_refuses_the_others_keys_and_applies_its_own() {
        // Proves: a write to a key of the other side is refused at apply,
        // whole (a batch with one key on each side applies neither) and
        // with no effect; a transaction whose range read crosses the split
        // is refused; the child's own writes get indexes above the split.
        let dir = tempfile::tempdir().unwrap();
        let (parent, child) = split_group(dir.path());
        let out = parent
            .apply(&[
                committed(29, put("q", "parent")),
                committed(
                    30,
                    Command::Batch(vec![
                        Op::Put {
                            key: "b".into(),
                            value: "both".into(),
                        },
                        Op::Put {
                            key: "x".into(),
                            value: "both".into(),
                        },
                    ]),
                ),
                committed(
                    31,
                    Command::Txn(Txn {
                        compares: vec![],
                        success: vec![TxnOp::Range {
                            start: "k".into(),
                            end: "".into(),
                            limit: 10,
                        }],
                        failure: vec![],
                    }),
                ),
                committed(32, put("c", "parent")),
            ])
            .unwrap();
        assert_eq!(
            out[0].result,
            ApplyResult::KeyNotInRange { key: "q".into() }
        );
        assert_eq!(
            out[1].result,
            ApplyResult::KeyNotInRange { key: "x".into() }
        );
        assert_eq!(
            out[2].result,
            ApplyResult::KeyNotInRange { key: "k".into() }
        );
        assert_eq!(out[3].result, ApplyResult::Written);
        assert_eq!(child.get(b"q").unwrap().unwrap(), b"v");
        assert_eq!(parent.get(b"b").unwrap().unwrap(), b"v");
        assert_eq!(parent.get(b"c").unwrap().unwrap(), b"parent");

        let out = child
            .apply(&[
                committed(29, put("q", "child")),
                committed(30, put("c", "child")),
            ])
            .unwrap();
        assert_eq!(out[0].result, ApplyResult::Written);
        assert_eq!(
            out[1].result,
            ApplyResult::KeyNotInRange { key: "c".into() }
        );
        let q = child.get_versioned(b"q").unwrap().unwrap();
        assert_eq!(
            (q.value.as_slice(), q.create_index, q.mod_index),
            (&b"child"[..], 17, 29)
        );
        assert_eq!(parent.get(b"c").unwrap().unwrap(), b"parent");
    }

    #[test]
    fn a_split_that_would_leave_a_leased_key_past_it_is_refused() {
        // Proves: a key under a lease past the split key, listed in the
        // engine or put under one earlier in the same round, has the split
        // refused, naming the key; leased keys before the split key do not;
        // once the key is put again without a lease, the split is applied;
        // a split into a group id that exists already is refused.
        let ttl = |k: &str| Command::PutWithTtl {
            key: k.into(),
            value: "v".into(),
            ttl_ms: 60_000,
        };
        let refused = |r: &ApplyResult, key: &str| matches!(r, ApplyResult::SplitRefused { why } if why.contains(&format!("{key:?}")));
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path(), 1);
        sm.apply(&[committed(1, ttl("q")), committed(2, ttl("a"))])
            .unwrap();
        let out = sm.apply(&[committed(3, split("m", 2))]).unwrap();
        assert!(refused(&out[0].result, "q"), "{:?}", out[0].result);
        let out = sm
            .apply(&[
                committed(4, put("q", "plain")),
                committed(5, ttl("r")),
                committed(6, split("m", 2)),
            ])
            .unwrap();
        assert!(refused(&out[2].result, "r"), "{:?}", out[2].result);
        sm.apply(&[committed(7, put("r", "plain"))]).unwrap();
        let out = sm.apply(&[committed(8, split("m", 2))]).unwrap();
        assert_eq!(out[0].result, ApplyResult::Split { child: 2 });
        let out = sm.apply(&[committed(9, split("f", 2))]).unwrap();
        assert!(
            matches!(&out[0].result, ApplyResult::SplitRefused { why } if why.contains("exists already")),
            "{:?}",
            out[0].result
        );
    }

    #[test]
    fn impossible_splits_are_refused_and_change_nothing() {
        // Proves: a split at the span's first key, outside the span, or
        // into the group itself or group 0 is refused and leaves the span
        // as it was; a later split of the narrowed span works.
        let dir = tempfile::tempdir().unwrap();
        let (parent, _) = split_group(dir.path());
        let out = parent
            .apply(&[
                committed(29, split("", 3)),
                committed(30, split("x", 3)),
                committed(31, split("m", 3)),
                committed(32, split("f", 1)),
                committed(33, split("f", 0)),
            ])
            .unwrap();
        for (i, o) in out.iter().enumerate() {
            assert!(
                matches!(o.result, ApplyResult::SplitRefused { .. }),
                "split {i}: {:?}",
                o.result
            );
        }
        assert_eq!(parent.span().unwrap(), span("", Some("m")));
        let out = parent.apply(&[committed(34, split("f", 3))]).unwrap();
        assert_eq!(out[0].result, ApplyResult::Split { child: 3 });
        let third = StateMachine::new(Arc::clone(parent.engine()), 3);
        assert_eq!(third.span().unwrap(), span("f", Some("m")));
        assert_eq!(user_keys(&third).len(), 7);
        assert_eq!(user_keys(&parent).len(), 5);
    }

    #[test]
    fn a_write_applied_before_a_split_is_answered_not_applied_again_by_the_child() {
        // Proves: the answer of a write applied by the parent before the
        // split goes with its key: a retry sent to the parent is refused
        // there (the key is not its), and the same retry sent to the child,
        // or to a new replica of the child made from a snapshot, is
        // answered with the first answer and not applied again.
        let dir = tempfile::tempdir().unwrap();
        let sm = open(&dir.path().join("leader"), 1);
        let swap = Command::Cas {
            key: "q".into(),
            expected: None,
            value: Some("first".into()),
        };
        sm.apply(&[deduped(1, "w", 10_000, swap.clone())]).unwrap();
        sm.apply(&[committed(2, split("m", 2))]).unwrap();
        let out = sm.apply(&[deduped(3, "w", 10_100, swap.clone())]).unwrap();
        assert_eq!(
            out[0].result,
            ApplyResult::KeyNotInRange { key: "q".into() }
        );

        let snap = dir.path().join("snap");
        let child = StateMachine::new(Arc::clone(sm.engine()), 2);
        seal(&snap, child.checkpoint(&snap).unwrap()).unwrap();
        let fresh = open(&dir.path().join("fresh"), 2);
        fresh.install(&snap, 1).unwrap();
        fresh.finish_install().unwrap();

        let first = ApplyResult::Cas {
            succeeded: true,
            current: None,
        };
        for replica in [&child, &fresh] {
            let out = replica
                .apply(&[deduped(3, "w", 10_200, swap.clone())])
                .unwrap();
            assert_eq!(
                out[0].result,
                ApplyResult::Replayed {
                    index: 1,
                    result: Box::new(first.clone())
                }
            );
            assert_eq!(replica.get(b"q").unwrap().unwrap(), b"first");
        }
    }

    #[test]
    fn the_child_forgets_the_records_it_inherited_once_all_have_expired() {
        // Proves: the parent's expiry queue forgets none of the records
        // beside the child's keys (they are the child's), and the child
        // deletes them once its clock passes the last moment any of them
        // can expire, keeping its own records that have not.
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path(), 1);
        let records: Vec<Committed> = (0..300u64)
            .map(|i| {
                deduped(
                    i + 1,
                    &format!("r{i}"),
                    1_000,
                    put(&format!("s{i:03}"), "v"),
                )
            })
            .collect();
        sm.apply(&records).unwrap();
        sm.apply(&[committed(301, split("m", 2))]).unwrap();
        let beside = |sm: &StateMachine| {
            let (lo, hi) = crate::keys::anchored_requests(1, &KeySpan::all());
            sm.engine()
                .scan(
                    std::ops::Bound::Included(&lo[..]),
                    std::ops::Bound::Excluded(&hi[..]),
                    10_000,
                )
                .unwrap()
                .len()
        };
        // The parent's clock passes every expiry: its queue empties, the
        // records beside the child's keys stay.
        sm.apply(&[deduped(302, "p", 5_000, put("a", "v"))])
            .unwrap();
        assert_eq!(beside(&sm), 301, "300 of the child's and the parent's own");
        let child = StateMachine::new(Arc::clone(sm.engine()), 2);
        let until = 1_000 + super::MAX_REQUEST_KEEP_MS;
        // Before `until` the child sweeps nothing; from it on, it sweeps
        // its span, its own live record kept.
        child
            .apply(&[deduped(302, "c", until - 1, put("t", "v"))])
            .unwrap();
        assert_eq!(beside(&sm), 302);
        for i in 0..3 {
            child
                .apply(&[deduped(
                    303 + i,
                    &format!("c{i}"),
                    until + 500,
                    put("u", "v"),
                )])
                .unwrap();
        }
        // Left: the parent's own ("p" beside "a"), and the child's own four,
        // none expired ("c" beside "t" expires at until + 999).
        assert_eq!(beside(&sm), 1 + 4, "inherited records swept");
        assert_eq!(
            sm.engine()
                .get(&crate::keys::meta_key(2, "requests_inherited_until"))
                .unwrap(),
            None,
            "the sweep is done"
        );
    }

    #[test]
    fn the_engine_lists_every_group_it_holds() {
        // Proves: the groups an engine holds are the first one and every
        // group split off, and a split's notice changes once per round
        // that split.
        let dir = tempfile::tempdir().unwrap();
        let (parent, _) = split_group(dir.path());
        assert_eq!(StateMachine::groups_in(parent.engine()).unwrap(), [1, 2]);
        let mut splits = parent.splits();
        assert!(!splits.has_changed().unwrap());
        parent.apply(&[committed(29, split("f", 7))]).unwrap();
        assert!(splits.has_changed().unwrap());
        splits.mark_unchanged();
        parent.apply(&[committed(30, put("a", "v"))]).unwrap();
        assert!(!splits.has_changed().unwrap());
        assert_eq!(StateMachine::groups_in(parent.engine()).unwrap(), [1, 2, 7]);
    }

    #[test]
    fn spans_survive_a_restart() {
        // Proves: the spans are read back from the engine after a restart,
        // not kept only in memory.
        let dir = tempfile::tempdir().unwrap();
        {
            let (parent, _) = split_group(dir.path());
            parent.make_durable().unwrap();
        }
        let parent = open(dir.path(), 1);
        let child = StateMachine::new(Arc::clone(parent.engine()), 2);
        assert_eq!(parent.span().unwrap(), span("", Some("m")));
        assert_eq!(child.span().unwrap(), span("m", None));
        assert_eq!(user_keys(&child).len(), 14);
        let out = parent.apply(&[committed(29, put("z", "late"))]).unwrap();
        assert_eq!(
            out[0].result,
            ApplyResult::KeyNotInRange { key: "z".into() }
        );
    }

    #[test]
    fn a_snapshot_of_a_child_installs_only_its_keys() {
        // Proves: a new replica of the child, on an empty node, installs a
        // snapshot of the child (an engine checkpoint that also holds the
        // parent's keys) and takes only the child's keys, its span and its
        // data space; a replica of the parent left behind before the split
        // installs the parent's snapshot and keeps the keys past the split
        // key, which are the child's.
        let dir = tempfile::tempdir().unwrap();
        let (parent, child) = split_group(&dir.path().join("leader"));
        let snap = dir.path().join("snap");
        let info = seal(&snap, child.checkpoint(&snap).unwrap()).unwrap();
        assert_eq!((info.index, info.keys), (28, 14));

        let fresh = open(&dir.path().join("fresh"), 2);
        let installed = fresh.install(&snap, 2).unwrap();
        fresh.finish_install().unwrap();
        assert_eq!((installed.index, installed.keys), (28, 14));
        assert_eq!(fresh.span().unwrap(), span("m", None));
        assert_eq!(fresh.space().unwrap(), 1);
        assert_eq!(user_keys(&fresh).len(), 14);
        let stored = fresh
            .engine()
            .scan(
                std::ops::Bound::Included(&crate::keys::data_start(1)[..]),
                std::ops::Bound::Excluded(&crate::keys::data_end(1)[..]),
                1000,
            )
            .unwrap();
        assert_eq!(stored.len(), 14, "none of the parent's keys came along");

        let behind = open(&dir.path().join("behind"), 1);
        let old: Vec<Committed> = (b'a'..=b'z')
            .enumerate()
            .map(|(i, c)| committed(i as u64 + 1, put(&(c as char).to_string(), "old")))
            .collect();
        behind.apply(&old).unwrap();
        let psnap = dir.path().join("psnap");
        seal(&psnap, parent.checkpoint(&psnap).unwrap()).unwrap();
        behind.install(&psnap, 2).unwrap();
        assert_eq!(behind.span().unwrap(), span("", Some("m")));
        assert_eq!(user_keys(&behind).len(), 12);
        assert_eq!(behind.get(b"a").unwrap().unwrap(), b"v");
        let beyond = StateMachine::new(Arc::clone(behind.engine()), 2);
        assert!(
            beyond.applied_index().unwrap() == 0,
            "no child replica here"
        );
    }
}
