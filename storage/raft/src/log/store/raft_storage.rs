//! raft-rs's view of the log: [`Storage`] over the entries a
//! [`RaftLogStore`] holds in memory, and the snapshot it has ready.

use protobuf::Message as _;
use raft::eraftpb::{ConfState, Entry, Snapshot};
use raft::{GetEntriesContext, RaftState, Storage, StorageError};

use super::RaftLogStore;

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

    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        if let Some(snap) = &self.ready_snapshot {
            let meta = snap.get_metadata();
            // A follower that installs it must be able to continue from our
            // log, and must be in its configuration: raft-rs ignores a
            // snapshot taken before its receiver was added.
            if meta.index >= request_index
                && meta.index >= self.base_index
                && includes(meta.get_conf_state(), to)
            {
                return Ok(snap.clone());
            }
        }
        self.snapshot_wanted.set(true);
        Err(raft::Error::Store(
            StorageError::SnapshotTemporarilyUnavailable,
        ))
    }
}

/// Whether `id` has a role in `cs` (raft-rs's test before it restores a
/// snapshot).
fn includes(cs: &ConfState, id: u64) -> bool {
    cs.voters
        .iter()
        .chain(&cs.learners)
        .chain(&cs.voters_outgoing)
        .any(|&v| v == id)
}
