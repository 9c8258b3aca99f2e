//! What a requested log compaction reports: the applied state it made
//! durable (the snapshot the node would send a follower starts from
//! there), and where the raft log begins afterwards.

/// The outcome of [`PeerHandle::compact_log`](crate::PeerHandle::compact_log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogCompaction {
    /// The applied index made durable in the engine: the raft log up to it
    /// is no longer needed to recover this node.
    pub durable_index: u64,
    /// The first index the log kept before, and keeps now. The log keeps
    /// what a follower being caught up still needs, so `first_index_after`
    /// may stop short of `durable_index`.
    pub first_index_before: u64,
    pub first_index_after: u64,
}
