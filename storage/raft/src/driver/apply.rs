//! Applying committed entries: decode them, apply them to the state machine
//! in one batch (configuration changes with the member directory), and
//! answer the proposals and configuration changes waiting for them. A
//! waiter whose index was filled by another leader's entry is told its
//! request was dropped.

use protobuf::Message as _;
use raft::eraftpb::{ConfChange, ConfChangeV2, Entry, EntryType};

use super::Driver;
use crate::command::Proposal;
use crate::error::{ProposeError, StorageFailure};
use crate::members::Members;
use crate::state_machine::{Applied, Committed};
use crate::trace;

impl Driver {
    pub(super) fn apply(&mut self, entries: Vec<Entry>) {
        if entries.is_empty() || self.failure.is_some() {
            return;
        }
        let mut batch = Vec::with_capacity(entries.len());
        let mut applied_conf = Vec::new();
        for entry in &entries {
            let proposal = match entry.get_entry_type() {
                EntryType::EntryNormal if entry.data.is_empty() => None,
                EntryType::EntryNormal => match Proposal::decode(&entry.data) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        self.fail_storage(StorageFailure::failed(format!(
                            "entry {} does not decode: {e}",
                            entry.index
                        )));
                        return;
                    }
                },
                EntryType::EntryConfChange | EntryType::EntryConfChangeV2 => {
                    let cs = if entry.get_entry_type() == EntryType::EntryConfChange {
                        self.apply_encoded_conf_change::<ConfChange>(entry)
                    } else {
                        self.apply_encoded_conf_change::<ConfChangeV2>(entry)
                    };
                    let Some((cs, rejected)) = cs else { return };
                    applied_conf.push((entry.index, rejected));
                    batch.push(Committed {
                        index: entry.index,
                        proposal: None,
                        conf_state: Some(cs.write_to_bytes().expect("conf state encodes")),
                        members: Some(Members::encode(&self.members.all())),
                    });
                    continue;
                }
            };
            batch.push(Committed {
                index: entry.index,
                proposal,
                conf_state: None,
                members: None,
            });
        }
        let last = entries.last().map_or(0, |e| e.index);
        let traced = trace::spans(&entries, "raft.apply");
        let applied = self.state_machine.apply(&batch);
        drop(traced);
        match applied {
            Ok(results) => {
                self.metrics.applied_entries.inc_by(entries.len() as u64);
                self.answer_conf_changes(last, &applied_conf);
                self.answer_proposals(last, results);
            }
            Err(e) => {
                let err = ProposeError::Storage(StorageFailure::from(&e));
                self.fail_storage(StorageFailure::new(
                    e.is_no_space(),
                    format!("applying up to {last}: {e}"),
                ));
                self.fail_all_waiters(err);
            }
        }
    }

    /// Answers the configuration changes waiting at or below `last`;
    /// `applied_conf` holds the changes this batch applied, each with raft's
    /// reason if it rejected it.
    fn answer_conf_changes(&mut self, last: u64, applied_conf: &[(u64, Option<String>)]) {
        let done: Vec<u64> = self.conf_waiters.range(..=last).map(|(i, _)| *i).collect();
        for index in done {
            let Some(tx) = self.conf_waiters.remove(&index) else {
                continue;
            };
            let outcome = match applied_conf.iter().find(|(i, _)| *i == index) {
                Some((_, None)) => Ok(index),
                Some((_, Some(why))) => Err(ProposeError::Invalid(format!(
                    "raft rejected the configuration change: {why}"
                ))),
                None => Err(ProposeError::Dropped(format!(
                    "entry {index} was replaced by another leader's entry"
                ))),
            };
            let _ = tx.send(outcome);
        }
    }

    /// Answers the proposals waiting at or below `last` with their results;
    /// a proposal is recognised by its request id at its index.
    fn answer_proposals(&mut self, last: u64, results: Vec<Applied>) {
        let mut results = results.into_iter().peekable();
        let done: Vec<u64> = self.proposals.range(..=last).map(|(i, _)| *i).collect();
        for index in done {
            let Some(p) = self.proposals.remove(&index) else {
                continue;
            };
            while results.peek().is_some_and(|r| r.index < index) {
                results.next();
            }
            let outcome = match results.peek() {
                Some(r) if r.index == index && r.request_id == p.request_id => {
                    let waited = p.proposed_at.elapsed().as_secs_f64();
                    self.metrics.commit_seconds.observe(waited);
                    Ok((index, r.result.clone()))
                }
                _ => Err(ProposeError::Dropped(format!(
                    "entry {index} was replaced by another leader's entry"
                ))),
            };
            let _ = p.tx.send(outcome);
        }
    }
}
