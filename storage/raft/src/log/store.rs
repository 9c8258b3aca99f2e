//! [`RaftLogStore`]: raft-rs's `Storage` over the raft log, in memory, with
//! the records its changes need gathered for the disk.
//!
//! Every mutation updates the log in memory at once (raft reads it from
//! there) and adds its records to a pending list; [`RaftLogStore::take_write`]
//! hands that list over as one [`LogWrite`] for a [`LogWriter`], which
//! writes it with one `fdatasync`, so all entries and the hard state of one
//! Ready share a single sync (group commit). The driver hands its writes to
//! a writer on a thread of its own and goes on; [`RaftLogStore::persist`]
//! writes synchronously with the writer the store was opened with, for
//! start-up and for tools and tests. A hard state that changed only in its
//! commit index is not worth a sync of its own (raft keeps the commit index
//! volatile): it is framed with the next write that must be synced, so an
//! idle round of commit news costs no `fdatasync`.
//!
//! Every segment starts with the state needed to replay it (hard state,
//! configuration, compaction point), so a sealed segment whose entries were
//! all compacted away can be deleted without losing anything.
//!
//! A failed write or fsync poisons the writer: that call returns the I/O
//! error and every later one returns [`LogError::Poisoned`] until the log
//! is reopened, which recovers from what is durable. The entries in memory
//! may then be ahead of the disk, so nothing may be acknowledged from them.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use protobuf::Message as _;
use raft::Storage;
use raft::eraftpb::{ConfState, Entry, HardState, Snapshot, SnapshotMetadata};
use strata_fs::FileSystem;

use super::record::{self, RecordKind, decode_entries};
use super::segment::{OwnedRecord, Segments};
use super::writer::{LogWrite, LogWriter, Part, Restated};
use crate::error::LogError;

mod raft_storage;

/// Default size at which a new segment is started.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;

/// Default bound on the body of one Entries record.
pub const DEFAULT_ENTRIES_RECORD_BYTES: usize = 16 << 20;

/// Where a bootstrapped group's log starts: as if entries up to this index
/// (at this term) had been compacted. A member that joins later holds no
/// entries at all, so raft can only catch it up with a snapshot, which
/// carries the initial configuration the log itself never held.
pub const BOOTSTRAP_INDEX: u64 = 5;
pub const BOOTSTRAP_TERM: u64 = 5;

/// The raft log of one group, in memory, and what of it still has to reach
/// the disk.
pub struct RaftLogStore {
    /// The writer for [`persist`](Self::persist); `None` once handed to
    /// the driver's I/O thread ([`take_writer`](Self::take_writer)).
    writer: Option<LogWriter>,
    /// The most bytes of encoded entries one Entries record holds (see
    /// [`record::encode_entries_records`]).
    max_entries_record_bytes: usize,
    /// Records not yet handed to a writer, in order.
    pending: Vec<Part>,
    /// Highest entry index in `pending`, 0 if none.
    pending_max_index: u64,
    /// Entries in `pending` and their payload bytes.
    pending_entries: u64,
    pending_entry_bytes: u64,
    /// The next write records that the member is proven.
    prove_identity: bool,
    /// A compaction among `pending`: the first index kept.
    pending_compacted_to: Option<u64>,
    /// During replay: highest entry index in each segment, for the writer.
    segment_max_index: BTreeMap<u64, u64>,
    /// Entries from `first_index` on, contiguous.
    entries: Vec<Entry>,
    /// Payload bytes of `entries` (what a size-based compaction policy
    /// weighs), kept up to date by every change to `entries`.
    entries_bytes: u64,
    /// The largest payload of one entry in `entries`; `None` once an entry
    /// that may have been the largest was dropped, until asked again.
    largest_entry_bytes: Option<u64>,
    first_index: u64,
    /// Index and term of the last entry before `first_index` (0, 0 at the start).
    base_index: u64,
    base_term: u64,
    hard_state: HardState,
    /// The hard state changed only in its commit index since it was last
    /// framed into `pending`. The commit index need not be durable (after a
    /// crash raft learns it again from the leader, and `open`'s caller
    /// raises it to the applied index), so such a change rides along with
    /// the next write that must be synced instead of costing a sync itself.
    hard_state_deferred: bool,
    conf_state: ConfState,
    /// A snapshot prepared for sending (data: an opaque id), if any.
    ready_snapshot: Option<Snapshot>,
    /// Set when raft asked for a snapshot that is not ready yet.
    snapshot_wanted: Cell<bool>,
    /// During replay: the log started past its recorded base (the segments
    /// before were deleted after a compaction); a later compaction record
    /// must confirm the base.
    base_unconfirmed: bool,
    /// During replay: the base the oldest segment's header recorded, below
    /// which no entries record may start.
    recorded_base: u64,
    /// The log held no record when it was opened.
    opened_empty: bool,
}

fn corrupt(dir: &Path, reason: impl Into<String>) -> LogError {
    LogError::Corruption {
        path: dir.to_path_buf(),
        offset: 0,
        reason: reason.into(),
    }
}

pub(super) fn encode_compacted(index: u64, term: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&index.to_le_bytes());
    b[8..].copy_from_slice(&term.to_le_bytes());
    b
}

fn decode_compacted(p: &[u8]) -> Option<(u64, u64)> {
    let index = u64::from_le_bytes(p.get(..8)?.try_into().ok()?);
    let term = u64::from_le_bytes(p.get(8..16)?.try_into().ok()?);
    (p.len() == 16).then_some((index, term))
}

impl RaftLogStore {
    /// Opens the log in `dir` on `fs`. When the log is empty and
    /// `bootstrap_voters` is not, the initial configuration is written and
    /// synced: every member of a bootstrapped cluster starts from the same
    /// state.
    pub fn open(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        max_segment_bytes: u64,
        bootstrap_voters: &[u64],
    ) -> Result<Self, LogError> {
        let (segments, records) = Segments::open(fs, dir, max_segment_bytes)?;
        let is_new = records.is_empty();
        let mut store = RaftLogStore {
            writer: None,
            max_entries_record_bytes: DEFAULT_ENTRIES_RECORD_BYTES,
            pending: Vec::new(),
            pending_max_index: 0,
            pending_entries: 0,
            pending_entry_bytes: 0,
            prove_identity: false,
            pending_compacted_to: None,
            segment_max_index: BTreeMap::new(),
            entries: Vec::new(),
            entries_bytes: 0,
            largest_entry_bytes: Some(0),
            first_index: 1,
            base_index: 0,
            base_term: 0,
            hard_state: HardState::default(),
            hard_state_deferred: false,
            conf_state: ConfState::default(),
            ready_snapshot: None,
            snapshot_wanted: Cell::new(false),
            base_unconfirmed: false,
            recorded_base: 0,
            opened_empty: is_new,
        };
        for rec in records {
            store.replay(dir, rec)?;
        }
        store.writer = Some(LogWriter::new(
            segments,
            std::mem::take(&mut store.segment_max_index),
            store.restated(),
        ));
        if store.base_unconfirmed {
            return Err(corrupt(
                dir,
                format!(
                    "the log starts at {} but no compaction record covers the entries before",
                    store.first_index
                ),
            ));
        }
        if is_new && !bootstrap_voters.is_empty() {
            store.start_at(bootstrap_voters, BOOTSTRAP_INDEX, BOOTSTRAP_TERM)?;
        }
        Ok(store)
    }

    /// Creates the log of a member of a group that starts from a state
    /// taken at raft `index` (a restored backup): as if every entry up to
    /// `index` had been committed at `term` and compacted, with `voters`
    /// the configuration. The log in `dir` must hold nothing yet.
    pub fn seed(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        max_segment_bytes: u64,
        voters: &[u64],
        index: u64,
        term: u64,
    ) -> Result<Self, LogError> {
        let mut store = Self::open(fs, dir, max_segment_bytes, &[])?;
        if !store.opened_empty {
            return Err(corrupt(
                dir,
                "the log holds records already; it is seeded empty",
            ));
        }
        store.start_at(voters, index, term)?;
        Ok(store)
    }

    /// Writes and syncs a new log's start: the configuration `voters`, and
    /// every entry up to `index` compacted at `term` and committed.
    fn start_at(&mut self, voters: &[u64], index: u64, term: u64) -> Result<(), LogError> {
        let mut cs = ConfState::default();
        cs.set_voters(voters.to_vec());
        self.set_conf_state(&cs);
        self.discard_through(index, term);
        self.frame(RecordKind::Compacted, &encode_compacted(index, term));
        self.set_hard_state(&HardState {
            term,
            commit: index,
            ..Default::default()
        });
        self.persist().map(drop)
    }

    fn replay(&mut self, dir: &Path, rec: OwnedRecord) -> Result<(), LogError> {
        self.segment_max_index.entry(rec.seq).or_insert(0);
        match rec.kind {
            RecordKind::HardState => {
                self.hard_state = HardState::parse_from_bytes(&rec.payload)
                    .map_err(|e| corrupt(dir, format!("hard state: {e}")))?;
            }
            RecordKind::ConfState => {
                self.conf_state = ConfState::parse_from_bytes(&rec.payload)
                    .map_err(|e| corrupt(dir, format!("conf state: {e}")))?;
            }
            RecordKind::Compacted => {
                let (index, term) = decode_compacted(&rec.payload)
                    .ok_or_else(|| corrupt(dir, "malformed compaction record"))?;
                if index > self.base_index {
                    self.discard_through(index, term);
                    self.base_unconfirmed = false;
                } else if index == self.base_index {
                    self.base_term = term;
                    self.base_unconfirmed = false;
                }
            }
            RecordKind::Snapshot => {
                let meta = SnapshotMetadata::parse_from_bytes(&rec.payload)
                    .map_err(|e| corrupt(dir, format!("snapshot record: {e}")))?;
                self.restore(&meta);
                self.base_unconfirmed = false;
            }
            RecordKind::Entries => {
                let entries = decode_entries(&rec.payload).map_err(|r| corrupt(dir, r))?;
                if let Some(first) = entries.first() {
                    // The oldest kept segment may begin past the base its
                    // header recorded: segments before it were deleted after
                    // a compaction that a later record describes.
                    if self.entries.is_empty() && first.index > self.first_index {
                        self.recorded_base = self.base_index;
                        self.guess_base(first.index);
                    } else if self.base_unconfirmed
                        && first.index < self.first_index
                        && first.index > self.recorded_base
                    {
                        // The guess came from entries that a later leader
                        // replaced from an earlier index: the log continues
                        // from this record instead (still to be confirmed).
                        self.entries.clear();
                        self.entries_bytes = 0;
                        self.largest_entry_bytes = None;
                        self.guess_base(first.index);
                    }
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
                    let last = entries.last().map_or(0, |e| e.index);
                    let max = self.segment_max_index.entry(rec.seq).or_insert(0);
                    *max = (*max).max(last);
                    self.truncate_from(first.index);
                    self.entries_bytes += payload_bytes(&entries);
                    self.note_largest(&entries);
                    self.entries.extend(entries);
                }
            }
        }
        Ok(())
    }

    /// Takes the log to start at `first` until a compaction record confirms
    /// that everything before it was discarded.
    fn guess_base(&mut self, first: u64) {
        self.base_index = first - 1;
        self.base_term = 0;
        self.first_index = first;
        self.base_unconfirmed = true;
    }

    fn last_index_inner(&self) -> u64 {
        self.first_index + self.entries.len() as u64 - 1
    }

    fn truncate_from(&mut self, index: u64) {
        let keep = ((index - self.first_index) as usize).min(self.entries.len());
        if keep < self.entries.len() {
            self.largest_entry_bytes = None;
        }
        self.entries_bytes -= payload_bytes(&self.entries[keep..]);
        self.entries.truncate(keep);
    }

    /// Drops every entry up to and including `index` (whose term is `term`).
    fn discard_through(&mut self, index: u64, term: u64) {
        let drop = (index + 1)
            .saturating_sub(self.first_index)
            .min(self.entries.len() as u64) as usize;
        if drop > 0 {
            self.largest_entry_bytes = None;
        }
        self.entries_bytes -= payload_bytes(&self.entries[..drop]);
        self.entries.drain(..drop);
        if self.entries.first().is_some_and(|e| e.index != index + 1) {
            self.entries.clear();
            self.entries_bytes = 0;
            self.largest_entry_bytes = Some(0);
        }
        self.base_index = index;
        self.base_term = term;
        self.first_index = index + 1;
    }

    fn restore(&mut self, meta: &SnapshotMetadata) {
        self.entries.clear();
        self.entries_bytes = 0;
        self.largest_entry_bytes = Some(0);
        self.base_index = meta.index;
        self.base_term = meta.term;
        self.first_index = meta.index + 1;
        self.conf_state = meta.get_conf_state().clone();
        self.hard_state.commit = self.hard_state.commit.max(meta.index);
        self.hard_state.term = self.hard_state.term.max(meta.term);
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
        let bytes = payload_bytes(entries);
        self.entries_bytes += bytes;
        self.note_largest(entries);
        self.entries.extend_from_slice(entries);
        self.pending_max_index = self
            .pending_max_index
            .max(entries.last().map_or(0, |e| e.index));
        self.pending_entries += entries.len() as u64;
        self.pending_entry_bytes += bytes;
        self.pending.push(Part::Entries(entries.to_vec()));
    }

    /// Adds one small record to the pending list.
    fn frame(&mut self, kind: RecordKind, body: &[u8]) {
        match self.pending.last_mut() {
            Some(Part::Framed(bytes)) => record::encode(kind, body, bytes),
            _ => {
                let mut bytes = Vec::new();
                record::encode(kind, body, &mut bytes);
                self.pending.push(Part::Framed(bytes));
            }
        }
    }

    /// Bounds the entries one record holds, `bytes` of their encoding at
    /// most (tests use small bounds; the default is
    /// [`DEFAULT_ENTRIES_RECORD_BYTES`]).
    ///
    /// # Panics
    /// If `bytes` is zero or a record could not hold that much.
    pub fn set_max_entries_record_bytes(&mut self, bytes: usize) {
        assert!(
            bytes > 0 && bytes < record::MAX_RECORD_BYTES,
            "an entries record holds between 1 and {} bytes",
            record::MAX_RECORD_BYTES - 1
        );
        self.max_entries_record_bytes = bytes;
    }

    /// Records a new hard state. A new term or vote is written by the next
    /// [`persist`](Self::persist); a new commit index alone waits for the
    /// next persist that has something else to sync.
    pub fn set_hard_state(&mut self, hs: &HardState) {
        if *hs == self.hard_state {
            return;
        }
        let must_sync = hs.term != self.hard_state.term || hs.vote != self.hard_state.vote;
        self.hard_state = hs.clone();
        if must_sync {
            self.frame_hard_state();
        } else {
            self.hard_state_deferred = true;
        }
    }

    fn frame_hard_state(&mut self) {
        let payload = self
            .hard_state
            .write_to_bytes()
            .expect("hard state encodes");
        self.frame(RecordKind::HardState, &payload);
        self.hard_state_deferred = false;
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
        self.frame(RecordKind::ConfState, &payload);
    }

    /// Discards entries up to and including `index` (log compaction). Once
    /// the write carrying it is durable, the writer deletes the sealed
    /// segments that hold only discarded entries. `index` must be applied
    /// and its effects durable in the state machine.
    pub fn compact(&mut self, index: u64) {
        if index <= self.base_index {
            return;
        }
        assert!(
            index <= self.last_index_inner(),
            "compacting past the last entry"
        );
        let term = self.entries[(index - self.first_index) as usize].term;
        self.discard_through(index, term);
        self.frame(RecordKind::Compacted, &encode_compacted(index, term));
        self.pending_compacted_to = Some(self.first_index);
    }

    /// Replaces the whole log with a snapshot's position (a follower that
    /// installed a snapshot). Durable once written.
    pub fn apply_snapshot(&mut self, meta: &SnapshotMetadata) {
        self.restore(meta);
        let payload = meta.write_to_bytes().expect("snapshot metadata encodes");
        self.frame(RecordKind::Snapshot, &payload);
        self.frame_hard_state();
    }

    /// Whether records wait for a write.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Hands over every pending record as one write, in order, or `None`
    /// when nothing is pending (a deferred commit index alone is not worth
    /// a write). Writes must reach a writer in the order they were taken.
    pub fn take_write(&mut self) -> Option<LogWrite> {
        if self.pending.is_empty() && !self.prove_identity {
            return None;
        }
        if self.hard_state_deferred {
            // After the entries it may cover, so replay never sees a commit
            // index beyond the log.
            self.frame_hard_state();
        }
        Some(LogWrite {
            parts: std::mem::take(&mut self.pending),
            max_index: std::mem::take(&mut self.pending_max_index),
            restated: self.restated(),
            compacted_to: self.pending_compacted_to.take(),
            max_entries_record_bytes: self.max_entries_record_bytes,
            entries: std::mem::take(&mut self.pending_entries),
            entry_bytes: std::mem::take(&mut self.pending_entry_bytes),
            prove_identity: std::mem::take(&mut self.prove_identity),
        })
    }

    /// Makes the next write record that the member is proven.
    pub(crate) fn request_prove(&mut self) {
        self.prove_identity = true;
    }

    /// Writes every pending record with the store's own writer and fsyncs
    /// once. Returns whether it synced (nothing was pending otherwise).
    ///
    /// # Panics
    /// If the writer was taken ([`take_writer`](Self::take_writer)): from
    /// then on writes go through whoever took it.
    pub fn persist(&mut self) -> Result<bool, LogError> {
        let Some(write) = self.take_write() else {
            return Ok(false);
        };
        self.writer
            .as_mut()
            .expect("persist on a store whose writer was taken")
            .write(std::slice::from_ref(&write))
    }

    /// Takes the writer, so that writes ([`take_write`](Self::take_write))
    /// go to the disk elsewhere, such as on an I/O thread. `None` if it was
    /// taken already.
    pub fn take_writer(&mut self) -> Option<LogWriter> {
        self.writer.take()
    }

    /// The segment the store's own writer writes into.
    #[cfg(test)]
    pub(crate) fn current_segment_seq(&self) -> u64 {
        self.writer.as_ref().map_or(0, |w| w.current_segment_seq())
    }

    /// The state in memory, as a header after the pending records would
    /// restate it.
    fn restated(&self) -> Restated {
        Restated {
            hard_state: self.hard_state.clone(),
            conf_state: self.conf_state.clone(),
            base_index: self.base_index,
            base_term: self.base_term,
        }
    }

    /// Whether the log held no record when it was opened (a new member,
    /// or one whose disk was emptied).
    pub fn opened_empty(&self) -> bool {
        self.opened_empty
    }

    pub fn hard_state(&self) -> &HardState {
        &self.hard_state
    }

    pub fn conf_state(&self) -> &ConfState {
        &self.conf_state
    }

    /// The index of the last entry (the snapshot or compaction point for an
    /// empty log).
    pub fn last_index(&self) -> u64 {
        self.last_index_inner()
    }

    /// The highest index to discard so that the entries after it, through
    /// `upto`, weigh at most `budget_bytes` (`first_index - 1` when they
    /// all fit: nothing needs to go).
    pub fn discard_point_for_bytes(&self, upto: u64, budget_bytes: u64) -> u64 {
        let end = upto
            .saturating_add(1)
            .saturating_sub(self.first_index)
            .min(self.entries.len() as u64) as usize;
        let mut total = 0;
        for e in self.entries[..end].iter().rev() {
            total += payload_bytes(std::slice::from_ref(e));
            if total > budget_bytes {
                return e.index;
            }
        }
        self.first_index - 1
    }

    /// Payload bytes of the entries from `first_index` through `upto`:
    /// what compacting the log to `upto` frees.
    pub fn entries_bytes_through(&self, upto: u64) -> u64 {
        let end = upto
            .saturating_add(1)
            .saturating_sub(self.first_index)
            .min(self.entries.len() as u64) as usize;
        payload_bytes(&self.entries[..end])
    }

    /// Payload bytes of the entries the log holds (from `first_index` on).
    pub fn entries_bytes(&self) -> u64 {
        self.entries_bytes
    }

    /// The payload bytes of the largest entry the log holds: what one
    /// append carrying a single entry may weigh. Recounted only after the
    /// largest may have been dropped (a compaction or a truncation).
    pub fn largest_entry_bytes(&mut self) -> u64 {
        if let Some(largest) = self.largest_entry_bytes {
            return largest;
        }
        let largest = self
            .entries
            .iter()
            .map(|e| payload_bytes(std::slice::from_ref(e)))
            .max()
            .unwrap_or(0);
        self.largest_entry_bytes = Some(largest);
        largest
    }

    fn note_largest(&mut self, entries: &[Entry]) {
        if let Some(largest) = &mut self.largest_entry_bytes {
            for e in entries {
                *largest = (*largest).max(payload_bytes(std::slice::from_ref(e)));
            }
        }
    }

    pub fn first_index(&self) -> u64 {
        self.first_index
    }

    /// The term of an entry still in the log (or of the compaction point).
    pub fn term_of(&self, index: u64) -> Option<u64> {
        Storage::term(self, index).ok()
    }

    /// Offers a snapshot for raft to send to lagging followers.
    pub fn set_ready_snapshot(&mut self, snapshot: Snapshot) {
        self.ready_snapshot = Some(snapshot);
        self.snapshot_wanted.set(false);
    }

    /// Whether raft asked for a snapshot that is not ready; clears the flag.
    pub fn take_snapshot_request(&self) -> bool {
        self.snapshot_wanted.replace(false)
    }
}

/// What entries weigh for the size-based compaction policy: their data and
/// context (the fixed fields are small beside a write's key and value).
fn payload_bytes(entries: &[Entry]) -> u64 {
    entries
        .iter()
        .map(|e| (e.data.len() + e.context.len()) as u64)
        .sum()
}

#[cfg(test)]
mod tests;
