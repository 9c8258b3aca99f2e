//! [`LogWriter`]: the disk side of the raft log. It takes [`LogWrite`]s,
//! the records the in-memory log ([`RaftLogStore`](super::RaftLogStore))
//! gathered, frames them, writes them into the newest segment and makes
//! them durable with one `fdatasync` per call, however many writes the call
//! carries (group commit).
//!
//! The writer owns everything about the files: the segments, which entries
//! each segment holds (so that a compaction can delete the segments it made
//! dead) and the state the log had on disk after the last call, which a
//! new segment's header restates. It is its own value so that it can run
//! on a thread of its own (`io`), apart from the raft thread that fills the
//! in-memory log, and a slow disk does not stop raft.

use std::collections::BTreeMap;

use protobuf::Message as _;
use raft::eraftpb::{ConfState, Entry, HardState};

use super::record::{self, RecordKind};
use super::segment::Segments;
use crate::error::LogError;
use crate::identity::Identity;

/// One part of a [`LogWrite`], in log order.
#[derive(Debug, Clone)]
pub(crate) enum Part {
    /// Records already framed (hard state, configuration, compaction,
    /// snapshot: all small).
    Framed(Vec<u8>),
    /// Entries, framed by the writer into records of at most the write's
    /// record bound, so that the raft thread never copies or checksums
    /// their bytes.
    Entries(Vec<Entry>),
}

/// What the in-memory log handed over for the disk: its records since the
/// last write, in order, and the state the log is in once they are durable.
#[derive(Debug, Clone)]
pub struct LogWrite {
    pub(crate) parts: Vec<Part>,
    /// The highest entry index among the parts; 0 if none.
    pub(crate) max_index: u64,
    /// The log's state once these records are durable: what a segment
    /// started after them restates.
    pub(crate) restated: Restated,
    /// The first index the log keeps after a compaction among the parts:
    /// sealed segments holding only entries before it are deleted once the
    /// write is durable.
    pub(crate) compacted_to: Option<u64>,
    /// The most bytes of encoded entries one Entries record holds.
    pub(crate) max_entries_record_bytes: usize,
    /// Entries and their payload bytes, for the metrics.
    pub(crate) entries: u64,
    pub(crate) entry_bytes: u64,
    /// Records, after the records, that the member is proven (see
    /// [`Identity`]).
    pub(crate) prove_identity: bool,
}

impl LogWrite {
    /// How many entries it writes.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// The payload bytes of the entries it writes.
    pub fn entry_bytes(&self) -> u64 {
        self.entry_bytes
    }

    /// Frames every part, in order, onto `out`.
    fn frame(&self, out: &mut Vec<u8>) {
        for part in &self.parts {
            match part {
                Part::Framed(bytes) => out.extend_from_slice(bytes),
                Part::Entries(entries) => {
                    record::encode_entries_records(entries, self.max_entries_record_bytes, out);
                }
            }
        }
    }
}

/// What a segment's header records: the state replay has reached when the
/// segment starts. It must be the state on disk before the records that
/// follow, not the state in memory, which may already include them: a
/// header restating, say, a new commit index ahead of the entries it
/// covers would leave that commit index beyond the log if a crash kept the
/// header but not the entries, and raft refuses to start from such a log.
#[derive(Debug, Clone, Default)]
pub(crate) struct Restated {
    pub(crate) hard_state: HardState,
    pub(crate) conf_state: ConfState,
    pub(crate) base_index: u64,
    pub(crate) base_term: u64,
}

impl Restated {
    /// The records that open a new segment.
    fn header(&self) -> Vec<u8> {
        let mut header = Vec::new();
        let hs = self
            .hard_state
            .write_to_bytes()
            .expect("hard state encodes");
        record::encode(RecordKind::HardState, &hs, &mut header);
        let cs = self
            .conf_state
            .write_to_bytes()
            .expect("conf state encodes");
        record::encode(RecordKind::ConfState, &cs, &mut header);
        if self.base_index > 0 {
            record::encode(
                RecordKind::Compacted,
                &super::store::encode_compacted(self.base_index, self.base_term),
                &mut header,
            );
        }
        header
    }
}

/// The disk side of one group's raft log.
pub struct LogWriter {
    segments: Segments,
    /// Highest entry index written into each segment.
    segment_max_index: BTreeMap<u64, u64>,
    /// The state on disk as of the end of the last write.
    durable: Restated,
    /// The member's identity, stored beside the segments; written here,
    /// off the raft thread, because proving it takes an fsync.
    identity: Option<Identity>,
}

impl LogWriter {
    pub(crate) fn new(
        segments: Segments,
        segment_max_index: BTreeMap<u64, u64>,
        durable: Restated,
    ) -> Self {
        LogWriter {
            segments,
            segment_max_index,
            durable,
            identity: None,
        }
    }

    /// Gives the writer the member's identity, which a write with
    /// `prove_identity` proves.
    pub(crate) fn set_identity(&mut self, identity: Identity) {
        self.identity = Some(identity);
    }

    /// Writes `writes` in order and makes them durable with one fsync;
    /// then deletes the sealed segments a compaction among them made dead,
    /// and, if one of them asks, records durably that the member is proven.
    /// Returns whether it synced records (false when the writes held none).
    ///
    /// A failed write, fsync, roll, removal or identity write poisons the
    /// writer: this call returns the I/O error and every later one
    /// [`LogError::Poisoned`], because what reached the disk is no longer
    /// known.
    pub fn write(&mut self, writes: &[LogWrite]) -> Result<bool, LogError> {
        let synced = self.write_records(writes)?;
        if writes.iter().any(|w| w.prove_identity)
            && let Some(identity) = &mut self.identity
        {
            self.segments.guarded(|_| identity.prove())?;
        }
        Ok(synced)
    }

    fn write_records(&mut self, writes: &[LogWrite]) -> Result<bool, LogError> {
        let mut framed = Vec::new();
        for w in writes {
            w.frame(&mut framed);
        }
        let Some(last) = writes.last() else {
            return Ok(false);
        };
        if framed.is_empty() {
            return Ok(false);
        }
        if self.segments.would_roll(framed.len()) {
            self.segments.roll()?;
            // A new segment starts with everything needed to replay it.
            let header = self.durable.header();
            self.segments.write(&header)?;
        }
        self.segments.write(&framed)?;
        self.segments.sync()?;
        let max_index = writes.iter().map(|w| w.max_index).max().unwrap_or(0);
        let max = self
            .segment_max_index
            .entry(self.segments.current_seq())
            .or_insert(0);
        *max = (*max).max(max_index);
        self.durable = last.restated.clone();
        if let Some(first_kept) = writes.iter().filter_map(|w| w.compacted_to).max() {
            self.remove_dead_segments(first_kept)?;
        }
        Ok(true)
    }

    /// The segment being written.
    #[cfg(test)]
    pub(crate) fn current_segment_seq(&self) -> u64 {
        self.segments.current_seq()
    }

    /// Deletes the sealed segments whose entries all lie before
    /// `first_kept`.
    fn remove_dead_segments(&mut self, first_kept: u64) -> Result<(), LogError> {
        let current = self.segments.current_seq();
        let dead: Vec<u64> = self
            .segment_max_index
            .iter()
            .filter(|&(&seq, &max)| seq != current && max < first_kept)
            .map(|(&seq, _)| seq)
            .collect();
        self.segments.remove(&dead)?;
        for seq in dead {
            self.segment_max_index.remove(&seq);
        }
        Ok(())
    }
}
