//! The change history that watchers read: every put, and every delete of a
//! key that existed, written beside the data in the same atomic engine
//! write, keyed by the raft index that applied it and its place within that
//! entry (`keys::history_key`). So the history is exactly the committed
//! order, the same on every replica, survives restarts, and travels inside
//! snapshots.
//!
//! A replica keeps the changes of its last `history_entries` raft indexes
//! (none at all, and writes none, when that is 0).
//! Older ones are deleted a bounded number at a time by later apply rounds
//! (`stage_trim`); the meta key `history_from` names the oldest index whose
//! changes are all still held, and a read from before it is refused as
//! [`HistoryError::Compacted`], never answered with a gap.

use std::ops::Bound;

use strata_engine::{EngineError, ReadPoint, WriteBatch};

use super::StateMachine;
use crate::keys;

/// How many raft indexes of history a replica keeps by default.
pub const DEFAULT_HISTORY_ENTRIES: u64 = 100_000;
/// The fewest old changes one apply round deletes when any are due.
const TRIM_MIN_CHANGES: usize = 1024;
/// The most bytes of old changes one apply round reads to delete them.
const TRIM_PIECE_BYTES: usize = 4 << 20;

/// What a change did to its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Put,
    Delete,
    /// Not a change of a key: the group was split at `key` (the value is the
    /// new group's id, 8 bytes big-endian), so the keys from there on are
    /// another group's from this index on, and their changes after it are
    /// in that group's history.
    Split,
}

/// One put or delete in the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The raft index of the entry that applied it.
    pub index: u64,
    /// Its place among that entry's changes, from 0.
    pub seq: u32,
    pub kind: ChangeKind,
    pub key: Vec<u8>,
    /// The value put; empty for a delete.
    pub value: Vec<u8>,
}

/// The next change a reader of the history has not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct HistoryPosition {
    pub index: u64,
    pub seq: u32,
}

impl HistoryPosition {
    /// The first change of raft index `index`.
    pub fn at(index: u64) -> Self {
        HistoryPosition { index, seq: 0 }
    }
}

/// One read of the history.
#[derive(Debug)]
pub struct HistoryPage {
    pub changes: Vec<Change>,
    /// Where the next read starts.
    pub next: HistoryPosition,
    /// The applied index of the state read. When the page is `complete`,
    /// the reader has every change through it.
    pub applied: u64,
    /// Whether the page holds every change from its start through
    /// `applied` (else it stopped at its limit).
    pub complete: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The changes asked for are no longer held here.
    #[error(
        "the changes before raft index {oldest} are no longer held; the oldest index that can be read is {oldest}"
    )]
    Compacted { oldest: u64 },
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// The trimming position, known once the first round has read it.
#[derive(Debug, Default)]
pub(super) struct Trim {
    /// The oldest raft index whose changes are all held.
    from: Option<u64>,
    /// The first history key that may still be held below `from`; before
    /// it, everything was deleted (`None`: the group's first).
    cursor: Option<Vec<u8>>,
}

/// What a round's trimming will have done once its write lands.
pub(super) struct TrimDone {
    from: u64,
    cursor: Option<Vec<u8>>,
}

/// A change as stored: kind, key length, key, value.
fn encode(kind: ChangeKind, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(5 + key.len() + value.len());
    v.push(match kind {
        ChangeKind::Put => 1,
        ChangeKind::Delete => 2,
        ChangeKind::Split => 3,
    });
    v.extend_from_slice(&(key.len() as u32).to_be_bytes());
    v.extend_from_slice(key);
    v.extend_from_slice(value);
    v
}

fn decode(engine_key: &[u8], stored: &[u8]) -> Result<Change, EngineError> {
    let corrupt = |why: &str| EngineError::Corruption {
        context: format!("history record {engine_key:02x?}: {why}"),
    };
    let (index, seq) = keys::history_position(engine_key).ok_or_else(|| corrupt("bad key"))?;
    let kind = match stored.first() {
        Some(1) => ChangeKind::Put,
        Some(2) => ChangeKind::Delete,
        Some(3) => ChangeKind::Split,
        _ => return Err(corrupt("unknown kind")),
    };
    let key_len = stored
        .get(1..5)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
        .ok_or_else(|| corrupt("too short"))? as usize;
    let key = stored
        .get(5..5 + key_len)
        .ok_or_else(|| corrupt("key cut short"))?;
    Ok(Change {
        index,
        seq,
        kind,
        key: key.to_vec(),
        value: stored[5 + key_len..].to_vec(),
    })
}

fn decode_index(what: &str, v: &[u8]) -> Result<u64, EngineError> {
    v.try_into()
        .map(u64::from_be_bytes)
        .map_err(|_| EngineError::Corruption {
            context: format!("{what} has {} bytes", v.len()),
        })
}

/// The changes of one apply round, numbered within each entry.
pub(super) struct Recorder<'a> {
    batch: &'a mut WriteBatch,
    group: u64,
    /// Whether changes are recorded at all.
    on: bool,
    index: u64,
    seq: u32,
    /// How many changes this round recorded.
    pub(super) count: usize,
}

impl<'a> Recorder<'a> {
    pub(super) fn new(batch: &'a mut WriteBatch, group: u64, on: bool) -> Self {
        Recorder {
            batch,
            group,
            on,
            index: 0,
            seq: 0,
            count: 0,
        }
    }

    /// Whether changes are recorded at all.
    pub(super) fn is_on(&self) -> bool {
        self.on
    }

    /// The write batch the changes go into, for the data beside them.
    pub(super) fn batch(&mut self) -> &mut WriteBatch {
        self.batch
    }

    /// Records a change made by the entry at `index`.
    pub(super) fn record(&mut self, index: u64, kind: ChangeKind, key: &[u8], value: &[u8]) {
        if !self.on {
            return;
        }
        if index != self.index {
            self.index = index;
            self.seq = 0;
        }
        self.batch.put(
            &keys::history_key(self.group, index, self.seq),
            &encode(kind, key, value),
        );
        self.seq += 1;
        self.count += 1;
    }
}

impl StateMachine {
    /// The oldest raft index whose changes are all held, as stored; `None`
    /// for a replica that has not recorded one yet.
    fn stored_history_from(&self, view: Option<&ReadPoint>) -> Result<Option<u64>, EngineError> {
        let v = match view {
            Some(view) => view.get(&self.history_from_key)?,
            None => self.engine.get(&self.history_from_key)?,
        };
        v.map(|v| decode_index("history start", &v)).transpose()
    }

    /// Deletes, into `batch`, held changes older than the last
    /// `history_entries` indexes as of `last` (the round's last index), at
    /// least `TRIM_MIN_CHANGES` and twice the `added` ones of this round
    /// when so many are due. Returns what to remember once the batch is
    /// written.
    pub(super) fn stage_trim(
        &self,
        batch: &mut WriteBatch,
        last: u64,
        added: usize,
    ) -> Result<Option<TrimDone>, EngineError> {
        let trim = self.trim.lock();
        let from = match trim.from {
            Some(from) => from,
            None => match self.stored_history_from(None)? {
                Some(from) => from,
                // A replica with no history yet holds none before the
                // first entry this round could apply.
                None => {
                    let from = self.applied_index()? + 1;
                    batch.put(&self.history_from_key, &from.to_be_bytes());
                    from
                }
            },
        };
        let keep_from = (last + 1).saturating_sub(self.history_entries);
        if from >= keep_from {
            return Ok(Some(TrimDone {
                from,
                cursor: trim.cursor.clone(),
            }));
        }
        let lo = trim
            .cursor
            .clone()
            .unwrap_or_else(|| keys::history_key(self.group, 0, 0));
        let hi = keys::history_key(self.group, keep_from, 0);
        let limit = TRIM_MIN_CHANGES.max(2 * added);
        let old = self.engine.scan_bytes(
            Bound::Included(&lo[..]),
            Bound::Excluded(&hi[..]),
            limit,
            TRIM_PIECE_BYTES,
        )?;
        for (k, _) in &old {
            batch.delete(k);
        }
        // Everything below `hi` is gone when the scan ended before its
        // limits; else only up to the last index it reached, whose changes
        // past the cursor are deleted by the next round.
        let reached_end = old.len() < limit
            && old.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>() < TRIM_PIECE_BYTES;
        let (new_from, cursor) = match old.last() {
            Some((k, _)) if !reached_end => {
                let (index, _) = keys::history_position(k).unwrap_or((from, 0));
                let mut next = k.clone();
                next.push(0);
                ((index + 1).max(from), Some(next))
            }
            _ => (keep_from, Some(hi)),
        };
        batch.put(&self.history_from_key, &new_from.to_be_bytes());
        Ok(Some(TrimDone {
            from: new_from,
            cursor,
        }))
    }

    /// Remembers a round's trimming once its write landed.
    pub(super) fn trimmed(&self, done: Option<TrimDone>) {
        if let Some(done) = done {
            let mut trim = self.trim.lock();
            trim.from = Some(done.from);
            trim.cursor = done.cursor;
        }
    }

    /// Forgets the trimming position (after the history was replaced by a
    /// snapshot's): the next round reads it from the engine.
    pub(super) fn reset_trim(&self) {
        *self.trim.lock() = Trim::default();
    }

    /// The oldest raft index whose changes this replica holds, and its
    /// applied index.
    pub fn history_bounds(&self) -> Result<(u64, u64), EngineError> {
        let view = self.read_view();
        let applied = self.applied_in(&view)?;
        let oldest = self
            .stored_history_from(Some(&view))?
            .unwrap_or(applied + 1);
        Ok((oldest, applied))
    }

    /// The applied index of the state `view` reads.
    pub fn applied_in(&self, view: &ReadPoint) -> Result<u64, EngineError> {
        view.get(&self.applied_key)?
            .map(|v| decode_index("applied index", &v))
            .transpose()
            .map(Option::unwrap_or_default)
    }

    /// Up to `limit` changes from `from` on, in commit order, read from one
    /// state (during a snapshot install: the state before it); the page
    /// ends early with the change that brings its keys and values to
    /// `max_bytes`.
    pub fn history(
        &self,
        from: HistoryPosition,
        limit: usize,
        max_bytes: usize,
    ) -> Result<HistoryPage, HistoryError> {
        let view = self.read_view();
        let applied = self.applied_in(&view)?;
        let oldest = self
            .stored_history_from(Some(&view))?
            .unwrap_or(applied + 1);
        if from.index < oldest {
            return Err(HistoryError::Compacted { oldest });
        }
        let lo = keys::history_key(self.group, from.index, from.seq);
        let hi = keys::history_end(self.group);
        let limit = limit.max(1);
        let pairs = view.scan_bytes(
            Bound::Included(&lo[..]),
            Bound::Excluded(&hi[..]),
            limit,
            max_bytes,
        )?;
        let complete = pairs.len() < limit
            && pairs.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>() < max_bytes;
        let changes = pairs
            .iter()
            .map(|(k, v)| decode(k, v))
            .collect::<Result<Vec<_>, _>>()?;
        let next = match changes.last() {
            Some(last) if !complete => HistoryPosition {
                index: last.index,
                seq: last.seq + 1,
            },
            _ => from.max(HistoryPosition::at(applied + 1)),
        };
        Ok(HistoryPage {
            changes,
            next,
            applied,
            complete,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use strata_engine::{Engine, Options};

    use super::*;
    use crate::command::{Command, Op, Proposal};
    use crate::state_machine::Committed;

    fn open(dir: &std::path::Path, entries: u64) -> StateMachine {
        StateMachine::new(Arc::new(Engine::open(dir, Options::default()).unwrap()), 1)
            .with_history(entries)
    }

    fn entry(index: u64, command: Command) -> Committed {
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

    fn summary(page: &HistoryPage) -> Vec<(u64, u32, ChangeKind, String)> {
        page.changes
            .iter()
            .map(|c| {
                (
                    c.index,
                    c.seq,
                    c.kind,
                    String::from_utf8_lossy(&c.key).into_owned(),
                )
            })
            .collect()
    }

    // Proves that the history holds, in commit order, every put and every
    // delete of a key that existed, numbered within each entry; that a
    // delete of an absent key and a failed swap leave nothing; and that a
    // page cut at its limit resumes exactly where it stopped.
    #[test]
    fn history_holds_every_change_in_commit_order() {
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path(), 1000);
        sm.apply(&[
            entry(1, put("a", "1")),
            entry(2, Command::Delete { key: "zz".into() }),
            entry(
                3,
                Command::Batch(vec![
                    Op::Put {
                        key: "b".into(),
                        value: "2".into(),
                    },
                    Op::Delete { key: "a".into() },
                    Op::Delete { key: "nope".into() },
                ]),
            ),
        ])
        .unwrap();
        sm.apply(&[
            entry(
                4,
                Command::Cas {
                    key: "b".into(),
                    expected: Some("wrong".into()),
                    value: None,
                },
            ),
            entry(
                5,
                Command::Cas {
                    key: "b".into(),
                    expected: Some("2".into()),
                    value: None,
                },
            ),
        ])
        .unwrap();
        let all = sm.history(HistoryPosition::at(1), 100, usize::MAX).unwrap();
        assert!(all.complete);
        assert_eq!(all.applied, 5);
        assert_eq!(all.next, HistoryPosition::at(6));
        use ChangeKind::*;
        assert_eq!(
            summary(&all),
            vec![
                (1, 0, Put, "a".into()),
                (3, 0, Put, "b".into()),
                (3, 1, Delete, "a".into()),
                (5, 0, Delete, "b".into()),
            ]
        );
        assert_eq!(all.changes[1].value, b"2");
        let first = sm.history(HistoryPosition::at(1), 2, usize::MAX).unwrap();
        assert!(!first.complete);
        assert_eq!(first.next, HistoryPosition { index: 3, seq: 1 });
        let rest = sm.history(first.next, 100, usize::MAX).unwrap();
        assert_eq!(summary(&rest), summary(&all)[2..].to_vec());
    }

    // Proves that a replica keeps only its last `history_entries` indexes,
    // that a read from before them is refused with the oldest index held,
    // and that the changes from it on are all there.
    #[test]
    fn old_history_is_trimmed_and_a_read_before_it_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path(), 10);
        for i in 1..=50u64 {
            sm.apply(&[entry(i, put(&format!("k{i}"), "v"))]).unwrap();
        }
        match sm.history(HistoryPosition::at(1), 100, usize::MAX) {
            Err(HistoryError::Compacted { oldest }) => assert_eq!(oldest, 41),
            other => panic!("read from a trimmed index: {other:?}"),
        }
        let page = sm
            .history(HistoryPosition::at(41), 100, usize::MAX)
            .unwrap();
        let indexes: Vec<u64> = page.changes.iter().map(|c| c.index).collect();
        assert_eq!(indexes, (41..=50).collect::<Vec<_>>());
        assert_eq!(sm.history_bounds().unwrap(), (41, 50));
        // Nothing below the oldest index is left in the engine.
        let left = sm
            .engine()
            .scan(
                Bound::Included(&keys::history_key(1, 0, 0)[..]),
                Bound::Excluded(&keys::history_key(1, 41, 0)[..]),
                100,
            )
            .unwrap();
        assert!(left.is_empty(), "{} old changes left", left.len());
    }

    // Proves that a round adding more changes than one trim deletes still
    // never declares an index held whose changes were partly deleted, and
    // that the backlog is gone after later rounds.
    #[test]
    fn trimming_a_large_backlog_never_exposes_a_partial_index() {
        let dir = tempfile::tempdir().unwrap();
        let sm = open(dir.path(), 2);
        let wide = |i: u64| {
            Command::Batch(
                (0..1500)
                    .map(|k| Op::Put {
                        key: format!("{i}-{k:05}").into(),
                        value: "v".into(),
                    })
                    .collect(),
            )
        };
        for i in 1..=3u64 {
            sm.apply(&[entry(i, wide(i))]).unwrap();
        }
        for i in 4..=8u64 {
            sm.apply(&[entry(i, put("x", "y"))]).unwrap();
            let (oldest, _) = sm.history_bounds().unwrap();
            let page = sm
                .history(HistoryPosition::at(oldest), 10_000, usize::MAX)
                .unwrap();
            if let Some(first) = page.changes.first() {
                assert_eq!(first.seq, 0, "index {} is held only in part", first.index);
            }
        }
        assert_eq!(sm.history_bounds().unwrap(), (7, 8));
    }

    // Proves that a replica told to keep no history writes none, drops what
    // it held, and says so.
    #[test]
    fn a_replica_without_history_writes_none_and_drops_what_it_held() {
        let dir = tempfile::tempdir().unwrap();
        {
            let sm = open(dir.path(), 100);
            sm.apply(&[entry(1, put("a", "1"))]).unwrap();
            sm.make_durable().unwrap();
        }
        let sm = open(dir.path(), 0);
        assert!(!sm.keeps_history());
        sm.apply(&[entry(2, put("b", "2"))]).unwrap();
        assert_eq!(sm.get(b"b").unwrap(), Some(b"2".to_vec()));
        let (lo, hi) = (keys::history_key(1, 0, 0), keys::history_end(1));
        let held = sm
            .engine()
            .scan(Bound::Included(&lo[..]), Bound::Excluded(&hi[..]), 10)
            .unwrap();
        assert!(held.is_empty(), "{} changes held", held.len());
        assert_eq!(sm.history_bounds().unwrap(), (3, 2));
    }

    // Proves that the history survives a restart of the engine, with its
    // trimming position.
    #[test]
    fn history_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let sm = open(dir.path(), 3);
            for i in 1..=5u64 {
                sm.apply(&[entry(i, put("k", &i.to_string()))]).unwrap();
            }
            sm.make_durable().unwrap();
        }
        let sm = open(dir.path(), 3);
        assert_eq!(sm.history_bounds().unwrap(), (3, 5));
        let page = sm.history(HistoryPosition::at(3), 10, usize::MAX).unwrap();
        let values: Vec<&[u8]> = page.changes.iter().map(|c| &c.value[..]).collect();
        assert_eq!(values, vec![b"3", b"4", b"5"]);
    }
}
