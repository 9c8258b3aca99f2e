//! What the placement loop asks of a range's raft group.

/// One change to one range. A replica move is an [`Action::AddReplica`]
/// (a learner that catches up, then is promoted) and, once that is done,
/// an [`Action::RemoveReplica`] of the old one, so the range never has
/// fewer replicas than it should.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    AddReplica { range: u64, node: u64 },
    RemoveReplica { range: u64, node: u64 },
    TransferLeader { range: u64, to: u64 },
}
