//! Helpers shared by the raft log's crash and failure tests: opening a log
//! on the fault-injecting file system and what recovery must reproduce.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use raft::eraftpb::{Entry, HardState};
use raft::{GetEntriesContext, Storage};
use strata_fs::{FaultFs, FileSystem};
use strata_raft::LogError;
use strata_raft::log::RaftLogStore;
use strata_raft::log::record;

/// Where every test keeps its raft log.
pub const DIR: &str = "/raft";

/// Opens the log in [`DIR`] on `fs`.
pub fn open(fs: &FaultFs, max_segment_bytes: u64) -> Result<RaftLogStore, LogError> {
    RaftLogStore::open(Arc::new(fs.clone()), Path::new(DIR), max_segment_bytes, &[])
}

/// Entries `from..=to` of `term`, each carrying a payload naming it.
pub fn entries(from: u64, to: u64, term: u64) -> Vec<Entry> {
    (from..=to)
        .map(|index| Entry {
            index,
            term,
            data: format!("entry {index} of term {term}").into_bytes().into(),
            ..Default::default()
        })
        .collect()
}

pub fn hard_state(term: u64, vote: u64, commit: u64) -> HardState {
    HardState {
        term,
        vote,
        commit,
        ..Default::default()
    }
}

/// Everything of a log that recovery must reproduce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    pub first_index: u64,
    pub last_index: u64,
    /// The term of the entry before `first_index` (the compaction or
    /// snapshot point).
    pub base_term: Option<u64>,
    /// Index, term and data of every entry held.
    pub entries: Vec<(u64, u64, String)>,
    /// Term, vote and commit.
    pub hard_state: (u64, u64, u64),
    pub voters: Vec<u64>,
}

pub fn view(store: &RaftLogStore) -> View {
    let (first, last) = (store.first_index(), store.last_index());
    let entries = store
        .entries(first, last + 1, None, GetEntriesContext::empty(false))
        .expect("entries in range");
    let hs = store.hard_state();
    View {
        first_index: first,
        last_index: last,
        base_term: store.term_of(first - 1),
        entries: entries
            .iter()
            .map(|e| {
                (
                    e.index,
                    e.term,
                    String::from_utf8_lossy(&e.data).into_owned(),
                )
            })
            .collect(),
        hard_state: (hs.term, hs.vote, hs.commit),
        voters: store.conf_state().voters.clone(),
    }
}

/// The segment files of the log and their records, by name: each file's
/// bytes up to the end of its last intact record (the newest segment's
/// space allocated ahead reads as zeros after it).
pub fn segments(fs: &FaultFs) -> std::collections::BTreeMap<String, Vec<u8>> {
    fs.list_dir(Path::new(DIR))
        .expect("log directory")
        .into_iter()
        .filter(|name| name.ends_with(".rlog"))
        .map(|name| {
            let mut bytes = fs.read_all(&Path::new(DIR).join(&name)).expect("read");
            let mut reader = record::reader(&bytes, true);
            for r in &mut reader {
                r.expect("intact records");
            }
            let valid = reader.end().expect("read to the end").valid_len as usize;
            bytes.truncate(valid);
            (name, bytes)
        })
        .collect()
}
