//! A leader's bytes in flight to each follower, bounded.
//!
//! raft-rs bounds what a leader sends a follower without an answer by a
//! count of messages (`max_inflight_msgs`), and each message by a size
//! that a single entry may exceed (an append carries at least one). With
//! entries of 15 MiB that is gigabytes: queued in the leader's transport,
//! and, once delivered, in the follower's inbox, for a follower that is
//! slow or stalled. raft-rs also frees one message of a full window at
//! every heartbeat answer, so a follower whose disk stalls but which still
//! answers heartbeats is sent another append every heartbeat.
//!
//! Before raft steps anything that may make it send appends (a proposal,
//! a message from a peer), `Flow` narrows each follower's window to the
//! messages that fit the follower's budget of bytes (`max_inflight_bytes`),
//! counting what it sent and what the follower acknowledged itself; the
//! heaviest an append can be is taken as the larger of raft's message size
//! and the largest entry in the log. A follower is thus never sent more
//! than its budget plus one append, and always at least one append when
//! nothing is in flight to it, however large the entry. The count is per
//! stream: when the transport reports a follower unreachable (its stream
//! failed or had no room for long), raft probes it again and what was in
//! flight is taken as lost with the stream, so a follower whose stream
//! fails while its window is full may be sent up to one budget more.
//!
//! An append lost on the way is never acknowledged: raft learns of the gap
//! only from the next append (the follower rejects it), which a full
//! window would hold back. So while a follower acknowledges nothing, its
//! oldest append is taken as lost every `STALE_TICKS`, which lets one more
//! through: a follower whose disk stalls for a long time is sent one
//! append more every five seconds, not every heartbeat.

use std::collections::{HashMap, VecDeque};

use raft::eraftpb::{Message, MessageType};
use raft::{ProgressState, Raft};

use super::Driver;
use crate::log::RaftLogStore;

/// Ticks without an acknowledgement after which the oldest append in
/// flight to a follower is taken as lost (five seconds at the default
/// tick).
const STALE_TICKS: u32 = 500;

/// The appends in flight to one follower.
#[derive(Debug, Default)]
struct InFlight {
    /// Sent and not yet acknowledged, oldest first: the last index each
    /// carries and its entries' payload bytes.
    appends: VecDeque<(u64, u64)>,
    bytes: u64,
    /// Ticks since the follower last acknowledged an append while one was
    /// in flight.
    idle_ticks: u32,
    /// The window last given to raft, if narrowed.
    cap: Option<usize>,
    /// Whether raft was replicating to the follower when last looked at.
    replicating: bool,
}

impl InFlight {
    fn acknowledge(&mut self, index: u64) -> usize {
        let mut freed = 0;
        while let Some(&(last, bytes)) = self.appends.front() {
            if last > index {
                break;
            }
            self.appends.pop_front();
            self.bytes -= bytes;
            freed += 1;
        }
        if freed > 0 {
            self.idle_ticks = 0;
        }
        freed
    }

    /// Takes the oldest append as lost.
    fn give_up_oldest(&mut self) {
        if let Some((_, bytes)) = self.appends.pop_front() {
            self.bytes -= bytes;
        }
        self.idle_ticks = 0;
    }

    fn forget(&mut self) {
        self.appends.clear();
        self.bytes = 0;
        self.idle_ticks = 0;
    }
}

/// The bytes in flight to each follower of a leader, and the windows that
/// bound them.
#[derive(Debug)]
pub(super) struct Flow {
    budget_bytes: u64,
    max_msgs: usize,
    followers: HashMap<u64, InFlight>,
}

/// Payload bytes of an append's entries.
fn append_bytes(m: &Message) -> u64 {
    m.get_entries()
        .iter()
        .map(|e| (e.data.len() + e.context.len()) as u64)
        .sum()
}

impl Flow {
    pub(super) fn new(budget_bytes: u64, max_msgs: usize) -> Self {
        Flow {
            budget_bytes,
            max_msgs,
            followers: HashMap::new(),
        }
    }

    /// Bytes in flight to `follower`.
    #[cfg(test)]
    pub(super) fn bytes_to(&self, follower: u64) -> u64 {
        self.followers.get(&follower).map_or(0, |f| f.bytes)
    }

    /// Drops the appends to followers in raft's Probe state that would
    /// take their bytes in flight past the budget while something is in
    /// flight already. raft-rs sends a probed follower one append per
    /// heartbeat answer, whatever the window, and the same entries again
    /// each time; one held back here goes at a later answer, once the
    /// follower acknowledged (or an append was taken as lost).
    pub(super) fn admit(&self, messages: &mut Vec<Message>, probing: impl Fn(u64) -> bool) {
        messages.retain(|m| {
            if m.get_msg_type() != MessageType::MsgAppend || m.get_entries().is_empty() {
                return true;
            }
            let Some(f) = self.followers.get(&m.to) else {
                return true;
            };
            f.bytes == 0 || f.bytes + append_bytes(m) <= self.budget_bytes || !probing(m.to)
        });
    }

    /// Notes the appends among messages being sent.
    pub(super) fn sent(&mut self, messages: &[Message]) {
        for m in messages {
            if m.get_msg_type() != MessageType::MsgAppend || m.get_entries().is_empty() {
                continue;
            }
            let last = m.get_entries().last().map_or(0, |e| e.index);
            let bytes = append_bytes(m);
            let f = self.followers.entry(m.to).or_default();
            f.appends.push_back((last, bytes));
            f.bytes += bytes;
        }
    }

    pub(super) fn tick(&mut self) {
        for f in self.followers.values_mut() {
            if f.appends.is_empty() {
                continue;
            }
            f.idle_ticks += 1;
            if f.idle_ticks >= STALE_TICKS {
                f.give_up_oldest();
            }
        }
    }

    /// Sets each follower's window before raft steps `incoming` (or a
    /// proposal, for `None`), given that one append weighs at most
    /// `largest_append_bytes`. Only a leader has followers to bound; any
    /// other role forgets them.
    pub(super) fn limit(
        &mut self,
        raft: &mut Raft<RaftLogStore>,
        incoming: Option<&Message>,
        largest_append_bytes: u64,
    ) {
        if raft.state != raft::StateRole::Leader {
            self.followers.clear();
            return;
        }
        // What `incoming` frees of raft's own window once stepped: the
        // appends it acknowledges, or (a heartbeat answer to a full
        // window) one message, which raft frees to make progress.
        let mut freed_by = None;
        if let Some(m) = incoming {
            let f = self.followers.entry(m.from).or_default();
            match m.get_msg_type() {
                MessageType::MsgAppendResponse if m.reject => f.forget(),
                MessageType::MsgAppendResponse => freed_by = Some((m.from, f.acknowledge(m.index))),
                MessageType::MsgHeartbeatResponse => {
                    let full = raft
                        .prs()
                        .get(m.from)
                        .is_some_and(|pr| pr.state == ProgressState::Replicate && pr.ins.full());
                    freed_by = Some((m.from, usize::from(full)));
                }
                _ => {}
            }
        }
        let largest = largest_append_bytes.max(1);
        let this = raft.id;
        let progress: Vec<(u64, ProgressState, usize)> = raft
            .prs()
            .iter()
            .filter(|(id, _)| **id != this)
            .map(|(id, pr)| (*id, pr.state, pr.ins.count()))
            .collect();
        self.followers
            .retain(|id, _| progress.iter().any(|(p, _, _)| p == id));
        for (id, state, count) in progress {
            let f = self.followers.entry(id).or_default();
            // Outside `Replicate` raft sends one append at a time, and its
            // window starts empty when it replicates again. What was in
            // flight when raft left `Replicate` was on a stream that failed
            // (reported unreachable) or was refused: forgotten. Appends sent
            // while probing stay counted, and `admit` holds back those past
            // the budget.
            let in_window = match state {
                ProgressState::Replicate => {
                    let freed = match freed_by {
                        Some((from, freed)) if from == id => freed,
                        _ => 0,
                    };
                    count.saturating_sub(freed)
                }
                ProgressState::Probe => {
                    if f.replicating {
                        f.forget();
                    }
                    0
                }
                ProgressState::Snapshot => {
                    f.forget();
                    0
                }
            };
            f.replicating = state == ProgressState::Replicate;
            let room = self.budget_bytes.saturating_sub(f.bytes);
            let more = if room == 0 {
                0
            } else {
                ((room / largest) as usize).max(1)
            };
            let cap = (in_window + more).min(self.max_msgs);
            if f.cap != Some(cap) {
                raft.adjust_max_inflight_msgs(id, cap);
                f.cap = Some(cap);
            }
        }
    }
}

impl Driver {
    /// Narrows the followers' windows before raft steps `incoming` (or a
    /// proposal whose largest entry weighs `proposed_bytes`).
    pub(super) fn limit_flow(&mut self, incoming: Option<&Message>, proposed_bytes: u64) {
        let largest = self
            .max_size_per_msg_bytes
            .max(self.node.mut_store().largest_entry_bytes())
            .max(proposed_bytes);
        self.flow.limit(&mut self.node.raft, incoming, largest);
    }
}

#[cfg(test)]
mod tests {
    use raft::eraftpb::Entry;

    use super::*;

    fn append(to: u64, first: u64, sizes: &[usize]) -> Message {
        let mut m = Message::default();
        m.set_msg_type(MessageType::MsgAppend);
        m.to = to;
        m.set_entries(
            sizes
                .iter()
                .enumerate()
                .map(|(i, size)| Entry {
                    index: first + i as u64,
                    data: vec![0; *size].into(),
                    ..Default::default()
                })
                .collect::<Vec<_>>()
                .into(),
        );
        m
    }

    #[test]
    fn acknowledgements_free_the_appends_they_cover() {
        // Proves the accounting: an answer frees exactly the appends whose
        // last entry it covers, a rejection forgets them all, and appends
        // not answered for STALE_TICKS are taken as lost one at a time.
        let mut flow = Flow::new(100, 256);
        flow.sent(&[
            append(2, 1, &[10, 10]),
            append(2, 3, &[30]),
            append(3, 1, &[5]),
            append(3, 2, &[7]),
        ]);
        assert_eq!((flow.bytes_to(2), flow.bytes_to(3)), (50, 12));
        let f = flow.followers.get_mut(&2).unwrap();
        assert_eq!(
            f.acknowledge(1),
            0,
            "an answer inside an append frees nothing"
        );
        assert_eq!(f.acknowledge(2), 1);
        assert_eq!(flow.bytes_to(2), 30);
        flow.followers.get_mut(&2).unwrap().forget();
        assert_eq!(flow.bytes_to(2), 0);
        for _ in 0..STALE_TICKS - 1 {
            flow.tick();
        }
        assert_eq!(flow.bytes_to(3), 12);
        flow.tick();
        assert_eq!(
            flow.bytes_to(3),
            7,
            "unanswered for STALE_TICKS: the oldest is lost"
        );
        for _ in 0..STALE_TICKS {
            flow.tick();
        }
        assert_eq!(flow.bytes_to(3), 0);
    }

    #[test]
    fn empty_appends_are_not_in_flight() {
        // Proves that an append carrying no entries (a commit index or a
        // probe) counts for nothing.
        let mut flow = Flow::new(100, 256);
        flow.sent(&[append(2, 1, &[])]);
        assert_eq!(flow.bytes_to(2), 0);
    }

    #[test]
    fn a_probed_follower_is_sent_past_its_budget_only_when_nothing_is_in_flight() {
        // Proves `admit`: appends to a follower being probed pass while
        // they fit the budget or nothing is in flight, and are held back
        // otherwise; appends without entries, and appends to a follower
        // raft replicates to (bounded by its window), always pass.
        let mut flow = Flow::new(100, 256);
        let probing = |id| id == 2;
        let mut first = vec![append(2, 1, &[150])];
        flow.admit(&mut first, probing);
        assert_eq!(
            first.len(),
            1,
            "nothing in flight: one append passes, however large"
        );
        flow.sent(&first);
        let mut again = vec![
            append(2, 1, &[150]),
            append(2, 2, &[]),
            append(3, 1, &[150]),
        ];
        flow.admit(&mut again, probing);
        let kept: Vec<_> = again
            .iter()
            .map(|m| (m.to, m.get_entries().len()))
            .collect();
        assert_eq!(
            kept,
            [(2, 0), (3, 1)],
            "the second large append to 2 is held back"
        );
        flow.followers.get_mut(&2).unwrap().acknowledge(1);
        let mut after = vec![append(2, 2, &[60])];
        flow.admit(&mut after, probing);
        assert_eq!(after.len(), 1, "acknowledged: the next one passes");
    }
}
