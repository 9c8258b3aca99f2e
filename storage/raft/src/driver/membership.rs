//! Configuration changes in the driver: proposing one (a learner is made a
//! voter only once it has caught up), applying one (and the member
//! directory with it), and what a leader does when a change removes it.

use raft::eraftpb::{ConfChangeType, ConfChangeV2, ConfState, Entry};
use raft::{ProgressState, StateRole};

use super::Driver;
use crate::error::{ProposeError, StorageFailure};
use crate::mailbox::ConfTx;
use crate::members::Members;
use crate::status::RaftEventKind;

/// How many committed entries a learner may still lack when it is made a
/// voter: about what is in flight to a follower that keeps up under load.
pub(super) const PROMOTION_LAG_ENTRIES: u64 = 64;

impl Driver {
    pub(super) fn propose_conf_change(&mut self, change: ConfChangeV2, tx: ConfTx) {
        if let Some(refusal) = self.refusal() {
            let _ = tx.send(Err(refusal));
            return;
        }
        if removes(&change, self.id) && self.node.raft.state == StateRole::Leader {
            let _ = tx.send(Err(ProposeError::Invalid(format!(
                "node {} leads the group and cannot remove itself; transfer leadership first",
                self.id
            ))));
            return;
        }
        if let Some(refusal) = self.promotion_refusal(&change) {
            let _ = tx.send(Err(refusal));
            return;
        }
        if self.node.raft.has_pending_conf() {
            // raft-rs would append an empty entry in its place.
            let _ = tx.send(Err(ProposeError::Dropped(
                "an earlier configuration change is not applied yet".into(),
            )));
            return;
        }
        let before = self.node.raft.raft_log.last_index();
        match self.node.propose_conf_change(Vec::new(), change) {
            Ok(()) if self.node.raft.raft_log.last_index() > before => {
                self.conf_waiters
                    .insert(self.node.raft.raft_log.last_index(), tx);
            }
            Ok(()) => {
                let _ = tx.send(Err(ProposeError::Dropped(
                    "the change was not appended".into(),
                )));
            }
            Err(e) => {
                let _ = tx.send(Err(ProposeError::Dropped(e.to_string())));
            }
        }
    }

    /// Why a change that makes a learner a voter must wait, if it must: a
    /// voter that lags counts towards every quorum, so promoting a learner
    /// still far behind (or waiting for a snapshot) can stall commits as
    /// soon as one other voter fails. It waits until the leader replicates
    /// to it entry by entry and it holds all but the last
    /// [`PROMOTION_LAG_ENTRIES`] committed entries. The refusal is
    /// `Dropped` (nothing was proposed), so the caller may try again.
    fn promotion_refusal(&self, change: &ConfChangeV2) -> Option<ProposeError> {
        let raft = &self.node.raft;
        if raft.state != StateRole::Leader {
            return None;
        }
        let learners = raft.prs().conf().to_conf_state().learners;
        let committed = raft.raft_log.committed;
        change
            .changes
            .iter()
            .filter(|c| c.get_change_type() == ConfChangeType::AddNode)
            .filter(|c| learners.contains(&c.node_id))
            .find_map(|c| {
                let pr = raft.prs().get(c.node_id)?;
                let caught_up = pr.state == ProgressState::Replicate
                    && pr.matched + PROMOTION_LAG_ENTRIES >= committed;
                (!caught_up).then(|| {
                    ProposeError::Dropped(format!(
                        "learner {} has not caught up (it holds entries up to {} of {} \
                         committed{}); it can be promoted once it has",
                        c.node_id,
                        pr.matched,
                        committed,
                        if pr.state == ProgressState::Snapshot {
                            ", and waits for a snapshot"
                        } else {
                            ""
                        }
                    ))
                })
            })
    }

    /// Decodes and applies a configuration change entry and returns the
    /// configuration afterwards, with raft's reason when it rejected the
    /// change (then the configuration is unchanged); a change that does not
    /// decode fails the peer (the log holds something we did not write).
    pub(super) fn apply_encoded_conf_change<C>(
        &mut self,
        entry: &Entry,
    ) -> Option<(ConfState, Option<String>)>
    where
        C: protobuf::Message + raft_proto::ConfChangeI,
    {
        let mut cc = C::new();
        if let Err(e) = cc.merge_from_bytes(&entry.data) {
            self.fail_storage(StorageFailure::failed(format!(
                "conf change {} does not decode: {e}",
                entry.index
            )));
            return None;
        }
        let v2 = cc.as_v2();
        let addresses = Members::decode(&v2.context).unwrap_or_default();
        match self.node.apply_conf_change(&cc) {
            Ok(cs) => {
                for change in &v2.changes {
                    let added = matches!(
                        change.get_change_type(),
                        ConfChangeType::AddNode | ConfChangeType::AddLearnerNode
                    );
                    if let (true, Some(addr)) = (added, addresses.get(&change.node_id)) {
                        self.members.insert(change.node_id, addr.clone());
                    }
                }
                // A voter removed by a joint change keeps voting in the
                // outgoing configuration until the group leaves it: its
                // address goes only once no configuration names it.
                let named: Vec<u64> = [
                    &cs.voters,
                    &cs.voters_outgoing,
                    &cs.learners,
                    &cs.learners_next,
                ]
                .into_iter()
                .flatten()
                .copied()
                .collect();
                for id in self.members.all().into_keys() {
                    if !named.contains(&id) {
                        self.members.remove(id);
                    }
                }
                self.step_down_if_removed();
                self.node.mut_store().set_conf_state(&cs);
                self.events.note(
                    RaftEventKind::MembershipChanged,
                    format!("voters {:?} learners {:?}", cs.voters, cs.learners),
                );
                Some((cs, None))
            }
            Err(e) => {
                // Every member rejects it alike: the configuration stays.
                tracing::warn!(error = %e, index = entry.index, "conf change rejected");
                Some((self.node.store().conf_state().clone(), Some(e.to_string())))
            }
        }
    }

    /// A leader the configuration no longer names stops leading at once
    /// (raft-rs keeps no progress for it and must not act as its leader);
    /// the remaining voters elect a new one. Membership changes hand
    /// leadership over before removing the leader, so this is the rare
    /// case of a change proposed by an earlier leader.
    fn step_down_if_removed(&mut self) {
        let raft = &mut self.node.raft;
        if raft.state == StateRole::Leader && raft.prs().get(self.id).is_none() {
            tracing::warn!(
                id = self.id,
                "removed from the configuration while leading; stepping down"
            );
            let term = raft.term;
            raft.become_follower(term, raft::INVALID_ID);
        }
    }
}

/// Whether the change removes (or demotes) member `id`.
fn removes(change: &ConfChangeV2, id: u64) -> bool {
    change.changes.iter().any(|c| {
        c.node_id == id
            && matches!(
                c.get_change_type(),
                ConfChangeType::RemoveNode | ConfChangeType::AddLearnerNode
            )
    })
}
