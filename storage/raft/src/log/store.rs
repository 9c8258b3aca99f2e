//! [`RaftLogStore`]: raft-rs's `Storage` backed by the segment files.
//!
//! Every mutation is framed into a pending buffer; [`RaftLogStore::persist`]
//! writes the buffer and issues one `fdatasync`, so all entries and the hard
//! state of one Ready share a single sync (group commit).

use std::path::Path;

use protobuf::Message as _;
use raft::eraftpb::{ConfState, Entry, HardState, Snapshot};
use raft::{GetEntriesContext, RaftState, Storage, StorageError};

use super::record::{self, RecordKind};
use super::segment::{OwnedRecord, Segments};
use crate::error::LogError;

/// Default size at which a new segment is started.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;

/// The durable raft log of one group.
pub struct RaftLogStore {
    segments: Segments,
    pending: Vec<u8>,
    /// Entries from `first_index` on, contiguous.
    entries: Vec<Entry>,
    first_index: u64,
    /// Index and term of the last entry before `first_index` (0, 0 at the start).
    base_index: u64,
    base_term: u64,
    hard_state: HardState,
    conf_state: ConfState,
}

fn corrupt(dir: &Path, reason: impl Into<String>) -> LogError {
    LogError::Corruption {
        path: dir.to_path_buf(),
        offset: 0,
        reason: reason.into(),
    }
}

impl RaftLogStore {
    /// Opens the log in `dir`. When the log is empty and `bootstrap_voters` is
    /// not, the initial configuration is written and synced: every member of a
    /// bootstrapped cluster starts from the same state.
    pub fn open(
        dir: &Path,
        max_segment_bytes: u64,
        bootstrap_voters: &[u64],
    ) -> Result<Self, LogError> {
        let (segments, records) = Segments::open(dir, max_segment_bytes)?;
        let is_new = records.is_empty();
        let mut store = RaftLogStore {
            segments,
            pending: Vec::new(),
            entries: Vec::new(),
            first_index: 1,
            base_index: 0,
            base_term: 0,
            hard_state: HardState::default(),
            conf_state: ConfState::default(),
        };
        for rec in records {
            store.replay(dir, rec)?;
        }
        if is_new && !bootstrap_voters.is_empty() {
            let mut cs = ConfState::default();
            cs.set_voters(bootstrap_voters.to_vec());
            store.set_conf_state(&cs);
            store.persist()?;
        }
        Ok(store)
    }

    fn replay(&mut self, dir: &Path, rec: OwnedRecord) -> Result<(), LogError> {
        match rec.kind {
            RecordKind::HardState => {
                self.hard_state = HardState::parse_from_bytes(&rec.payload)
                    .map_err(|e| corrupt(dir, format!("hard state: {e}")))?;
            }
            RecordKind::ConfState => {
                self.conf_state = ConfState::parse_from_bytes(&rec.payload)
                    .map_err(|e| corrupt(dir, format!("conf state: {e}")))?;
            }
            RecordKind::Entries => {
                let entries = decode_entries(&rec.payload).map_err(|r| corrupt(dir, r))?;
                if let Some(first) = entries.first() {
                    if first.index < self.first_index || first.index > self.last_index_inner() + 1 {
                        return Err(corrupt(
                            dir,
                            format!(
                                "entries start at {} but the log holds [{}, {}]",
                                first.index,
                                self.first_index,
                                self.last_index_inner()
                            ),
                        ));
                    }
                    self.truncate_from(first.index);
                    self.entries.extend(entries);
                }
            }
        }
        Ok(())
    }

    fn last_index_inner(&self) -> u64 {
        self.first_index + self.entries.len() as u64 - 1
    }

    fn truncate_from(&mut self, index: u64) {
        let keep = (index - self.first_index) as usize;
        self.entries.truncate(keep);
    }

    /// Appends entries, replacing any existing entries at or after the first
    /// new index (a conflict raft resolved in the leader's favour).
    pub fn append(&mut self, entries: &[Entry]) {
        let Some(first) = entries.first() else { return };
        assert!(
            first.index >= self.first_index && first.index <= self.last_index_inner() + 1,
            "append at {} leaves a gap in [{}, {}]",
            first.index,
            self.first_index,
            self.last_index_inner()
        );
        for pair in entries.windows(2) {
            assert_eq!(pair[0].index + 1, pair[1].index, "entries not contiguous");
        }
        self.truncate_from(first.index);
        self.entries.extend_from_slice(entries);
        let payload = encode_entries(entries);
        record::encode(RecordKind::Entries, &payload, &mut self.pending);
    }

    /// Records a new hard state.
    pub fn set_hard_state(&mut self, hs: &HardState) {
        if *hs == self.hard_state {
            return;
        }
        self.hard_state = hs.clone();
        let payload = hs.write_to_bytes().expect("hard state encodes");
        record::encode(RecordKind::HardState, &payload, &mut self.pending);
    }

    /// Records a new commit index.
    pub fn set_commit(&mut self, commit: u64) {
        let mut hs = self.hard_state.clone();
        hs.set_commit(commit);
        self.set_hard_state(&hs);
    }

    /// Records a new configuration.
    pub fn set_conf_state(&mut self, cs: &ConfState) {
        self.conf_state = cs.clone();
        let payload = cs.write_to_bytes().expect("conf state encodes");
        record::encode(RecordKind::ConfState, &payload, &mut self.pending);
    }

    /// Whether anything is waiting for [`persist`](Self::persist).
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Writes every pending record and fsyncs once. Returns whether it
    /// synced (nothing was pending otherwise).
    pub fn persist(&mut self) -> Result<bool, LogError> {
        if self.pending.is_empty() {
            return Ok(false);
        }
        self.segments.write(&self.pending)?;
        self.segments.sync()?;
        self.pending.clear();
        Ok(true)
    }

    pub fn hard_state(&self) -> &HardState {
        &self.hard_state
    }

    pub fn conf_state(&self) -> &ConfState {
        &self.conf_state
    }

    /// The index of the last entry (0 for an empty log).
    pub fn last_index(&self) -> u64 {
        self.last_index_inner()
    }
}

fn encode_entries(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let bytes = e.write_to_bytes().expect("entry encodes");
        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&bytes);
    }
    out
}

fn decode_entries(mut buf: &[u8]) -> Result<Vec<Entry>, String> {
    let mut out: Vec<Entry> = Vec::new();
    while !buf.is_empty() {
        if buf.len() < 4 {
            return Err("entry length cut short".into());
        }
        let len = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        let body = buf.get(4..4 + len).ok_or("entry body cut short")?;
        let entry = Entry::parse_from_bytes(body).map_err(|e| format!("entry: {e}"))?;
        if let Some(prev) = out.last()
            && prev.index + 1 != entry.index
        {
            return Err(format!("entry {} follows {}", entry.index, prev.index));
        }
        out.push(entry);
        buf = &buf[4 + len..];
    }
    Ok(out)
}

impl Storage for RaftLogStore {
    fn initial_state(&self) -> raft::Result<RaftState> {
        Ok(RaftState::new(
            self.hard_state.clone(),
            self.conf_state.clone(),
        ))
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        _context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        if low < self.first_index {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if high > self.last_index_inner() + 1 {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        let lo = (low - self.first_index) as usize;
        let hi = (high - self.first_index) as usize;
        let max_size = max_size.into().unwrap_or(u64::MAX);
        let mut size = 0u64;
        let mut out = Vec::with_capacity(hi - lo);
        for e in &self.entries[lo..hi] {
            size += u64::from(e.compute_size());
            if !out.is_empty() && size > max_size {
                break;
            }
            out.push(e.clone());
        }
        Ok(out)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        if idx == self.base_index {
            return Ok(self.base_term);
        }
        if idx < self.first_index {
            return Err(raft::Error::Store(StorageError::Compacted));
        }
        if idx > self.last_index_inner() {
            return Err(raft::Error::Store(StorageError::Unavailable));
        }
        Ok(self.entries[(idx - self.first_index) as usize].term)
    }

    fn first_index(&self) -> raft::Result<u64> {
        Ok(self.first_index)
    }

    fn last_index(&self) -> raft::Result<u64> {
        Ok(self.last_index_inner())
    }

    fn snapshot(&self, _request_index: u64, _to: u64) -> raft::Result<Snapshot> {
        // The log is never compacted yet, so raft never needs a snapshot to
        // catch a follower up; an empty one at the base is always valid.
        let mut snap = Snapshot::default();
        let meta = snap.mut_metadata();
        meta.index = self.base_index;
        meta.term = self.base_term;
        meta.set_conf_state(self.conf_state.clone());
        Ok(snap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u64, term: u64, data: &[u8]) -> Entry {
        Entry {
            index,
            term,
            data: data.to_vec().into(),
            ..Default::default()
        }
    }

    #[test]
    fn bootstrap_writes_voters_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = RaftLogStore::open(dir.path(), 1 << 20, &[1, 2, 3]).unwrap();
        assert_eq!(store.conf_state().voters, vec![1, 2, 3]);
        drop(store);
        // Reopening with other voters must not rewrite the configuration.
        let store = RaftLogStore::open(dir.path(), 1 << 20, &[9]).unwrap();
        assert_eq!(store.conf_state().voters, vec![1, 2, 3]);
    }

    #[test]
    fn persisted_entries_and_hard_state_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = RaftLogStore::open(dir.path(), 1 << 20, &[1]).unwrap();
        store.append(&[entry(1, 1, b"a"), entry(2, 1, b"b"), entry(3, 1, b"c")]);
        let hs = HardState {
            term: 1,
            vote: 1,
            commit: 2,
            ..Default::default()
        };
        store.set_hard_state(&hs);
        store.persist().unwrap();
        // Unpersisted records are lost at a crash.
        store.append(&[entry(4, 1, b"d")]);
        drop(store);
        let store = RaftLogStore::open(dir.path(), 1 << 20, &[1]).unwrap();
        assert_eq!(store.last_index(), 3);
        assert_eq!(store.hard_state(), &hs);
        let got = store
            .entries(1, 4, None, GetEntriesContext::empty(false))
            .unwrap();
        assert_eq!(
            got.iter().map(|e| e.data.to_vec()).collect::<Vec<_>>(),
            vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
        );
    }

    #[test]
    fn conflicting_append_replaces_the_suffix_durably() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = RaftLogStore::open(dir.path(), 1 << 20, &[1]).unwrap();
        store.append(&[entry(1, 1, b"a"), entry(2, 1, b"b"), entry(3, 1, b"c")]);
        store.persist().unwrap();
        store.append(&[entry(2, 2, b"B")]);
        store.persist().unwrap();
        drop(store);
        let store = RaftLogStore::open(dir.path(), 1 << 20, &[1]).unwrap();
        assert_eq!(store.last_index(), 2);
        assert_eq!(store.term(2).unwrap(), 2);
        assert!(matches!(
            store.term(3),
            Err(raft::Error::Store(StorageError::Unavailable))
        ));
    }

    #[test]
    fn entries_respects_max_size_but_returns_at_least_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = RaftLogStore::open(dir.path(), 1 << 20, &[1]).unwrap();
        store.append(&[entry(1, 1, &[0; 100]), entry(2, 1, &[0; 100])]);
        let got = store
            .entries(1, 3, 1, GetEntriesContext::empty(false))
            .unwrap();
        assert_eq!(got.len(), 1);
        assert!(matches!(
            store.entries(0, 2, None, GetEntriesContext::empty(false)),
            Err(raft::Error::Store(StorageError::Compacted))
        ));
    }
}
