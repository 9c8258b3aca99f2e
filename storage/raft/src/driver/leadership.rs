//! Leadership in the driver: handing it over on request (to a given voter,
//! or to the most caught-up one when the leader is about to stop), and
//! answering the requests a change of role or leader leaves without an
//! answer.

use std::cmp::Reverse;

use raft::{SoftState, StateRole};

use super::Driver;
use crate::error::ProposeError;
use crate::status::{HandOver, Role};

impl Driver {
    pub(super) fn transfer_leader(&mut self, to: u64) -> Result<(), ProposeError> {
        if let Some(refusal) = self.storage_refusal() {
            return Err(refusal);
        }
        let raft = &self.node.raft;
        if raft.state != StateRole::Leader {
            return Err(ProposeError::NotLeader {
                leader_id: raft.leader_id,
            });
        }
        if !raft.prs().conf().voters().ids().contains(to) {
            return Err(ProposeError::Invalid(format!("node {to} is not a voter")));
        }
        if self.awaits_vouching(to) {
            return Err(ProposeError::Invalid(format!(
                "node {to} came back with an empty log and is still being caught up: it may not \
                 campaign until this leader vouches for it"
            )));
        }
        if to != self.id {
            self.node.transfer_leader(to);
        }
        Ok(())
    }

    /// Starts handing leadership to the voter whose log matches this
    /// leader's furthest (among those recently heard from and allowed to
    /// campaign, if any are), so that it can take over at once, as a leader
    /// does before it stops.
    /// `None` when this node does not lead or is the only voter.
    pub(super) fn hand_over(&mut self) -> Result<Option<HandOver>, ProposeError> {
        if let Some(refusal) = self.storage_refusal() {
            return Err(refusal);
        }
        let raft = &self.node.raft;
        if raft.state != StateRole::Leader {
            return Ok(None);
        }
        let voters = raft.prs().conf().voters().ids();
        let best = raft
            .prs()
            .iter()
            .filter(|(id, _)| **id != self.id && voters.contains(**id))
            .max_by_key(|(id, pr)| {
                (
                    !self.awaits_vouching(**id),
                    pr.recent_active,
                    pr.matched,
                    Reverse(**id),
                )
            })
            .map(|(id, pr)| HandOver {
                to: *id,
                match_index: pr.matched,
                last_index: raft.raft_log.last_index(),
            });
        if let Some(h) = best {
            self.node.transfer_leader(h.to);
        }
        Ok(best)
    }

    /// Called with a Ready's new soft state, before anything else of it.
    pub(super) fn on_soft_state(&mut self, ss: &SoftState) {
        if ss.raft_state != StateRole::Leader && self.last_status.role == Role::Leader {
            // Entries this node appended may still be committed by the
            // next leader or overwritten: say so now rather than at the
            // request timeout.
            for (_, p) in std::mem::take(&mut self.proposals) {
                let _ = p.tx.send(Err(ProposeError::LeadershipLost));
            }
            for (_, tx) in std::mem::take(&mut self.conf_waiters) {
                let _ = tx.send(Err(ProposeError::LeadershipLost));
            }
        }
        if ss.raft_state != StateRole::Leader
            && let Some(lease) = &mut self.lease
        {
            lease.end();
        }
        if ss.leader_id != self.last_status.leader_id {
            self.reads.drop_issued();
        }
    }
}
