//! Replication for Strata: a raft group member built on raft-rs.
//!
//! A [`Peer`] owns one raft group's `RawNode` on a dedicated thread, the
//! driver. The raft log ([`log::RaftLogStore`]) is the node's write-ahead
//! log; committed commands are applied to the engine by the
//! [`StateMachine`]. The network is behind the [`Transport`] trait, so this
//! crate never opens a socket.
//!
//! # One concern, one module
//!
//! Each module below holds one concern; a change touches the module of its
//! concern and, at most, the orchestration that calls it. `peer` builds the
//! driver and starts the snapshot thread; once they run, everything reaches
//! the driver through the mailbox. So `peer` imports `driver` and
//! `snapshot`, `driver` imports `snapshot`, and neither imports `peer`;
//! the snapshot thread hands finished jobs to a callback `peer` gives it,
//! so it does not import the mailbox either: the graph has no cycle.
//!
//! - `peer`: [`Peer`] (starts the threads) and [`PeerHandle`] (the front the
//!   server calls); `config`: [`PeerConfig`].
//! - `mailbox`: `Input`, everything the driver thread takes (client
//!   requests on one channel, raft's own inputs on another, taken first),
//!   and `Shared`, the sending ends beside the status and events the
//!   driver publishes.
//! - `driver/`: the driver thread. `mod.rs` is the loop and the order of a
//!   round (inputs, proposals, reads, Ready, queued committed entries); `recovery` is what happens at
//!   start; `persist` hands each Ready's records to the log's I/O queue and
//!   holds what must follow their durability; `amnesia` screens incoming raft messages for a member that lost
//!   what it acknowledged; `proposals`, `reads`, `membership` and
//!   `leadership` take the requests (`read_ids` names the ReadIndex
//!   requests); `apply` queues committed entries, hands them in order to
//!   the applier (`applier`: a thread of the peer's own, so the driver
//!   never waits for an engine write) with their waiters, which it
//!   answers once they are applied; `flow` bounds the bytes of appends in flight to each
//!   follower; `snapshots` builds, installs and compacts (also when an
//!   operator asks, answering with a `log_compaction::LogCompaction`); `failure` is the
//!   storage failure policy; `stop` answers the waiters left at stop;
//!   `publish` computes and publishes the status.
//! - `snapshot`: snapshot directories and the snapshot thread.
//! - `log/`: the raft log: `store` in memory (raft-rs's `Storage`),
//!   `writer` on disk, `io` the I/O thread that runs the writer apart from
//!   the driver. `state_machine`, `command` (with `command_keys`: the keys
//!   a command names), `keys`:
//!   applying commands to the engine, their encoding, the engine key layout.
//!   `members`: the member directory. `range`: the span of keys a group
//!   serves; `state_machine/split` applies a split, which narrows it and
//!   starts a new group's state beside it without copying data.
//! - `status` and `events`: what a peer reports. `error`: the errors,
//!   [`StorageFailure`] among them. `fail_stop`: a panicking peer thread
//!   ends the process. `transport`, `logger`: the network and raft-rs's log
//!   boundaries. `sim/` (tests only): whole groups on a simulated network
//!   and simulated disks.
//!
//! # Where a new feature goes
//!
//! - A new kind of request: a variant of `Input`, a [`PeerHandle`] method
//!   that submits it, and a module under `driver/` that handles it
//!   (`Driver::handle` dispatches to it).
//! - Metrics: a family in `metrics::RaftMetrics` (Prometheus names and
//!   units), updated by the driver and read through [`PeerHandle::metrics`];
//!   the node registers them. Trace context: carried in the
//!   request's `Input` variant; the driver is a plain thread, so its module
//!   enters the span itself.
//! - Watch: `apply` is the one place that sees every applied entry in
//!   order; it publishes them once the applier reports the batch applied,
//!   on a bounded channel in `Shared` like the events.
//! - Leases: `driver/lease.rs` ([`ReadMode::Lease`]), measured on
//!   `clock` (which the simulation replaces); `reads` answers from it and
//!   confirms it with its ReadIndex rounds, `leadership` ends it.
//! - Multi-raft: a group is a [`Peer`]. Engine keys and raft messages
//!   already name their group and the driver holds no process-wide state,
//!   so more groups are more peers, with a router by group id in front of
//!   their handles. Each group's state machine serves only its span and
//!   refuses the rest at apply (`ApplyResult::KeyNotInRange`), so a write
//!   sent by a stale map of ranges is refused the same on every replica;
//!   `Command::Split` divides a span.

#![forbid(unsafe_code)]

mod append_times;
mod applier;
mod clock;
pub mod command;
mod command_keys;
mod config;
mod driver;
pub mod error;
mod events;
mod fail_stop;
pub mod identity;
pub mod keys;
pub mod log;
pub mod log_compaction;
mod logger;
mod mailbox;
pub mod members;
pub mod metrics;
mod peer;
pub mod range;
#[cfg(test)]
mod sim;
pub mod snapshot;
mod stamp;
pub mod state_machine;
mod status;
mod trace;
mod transport;
pub mod txn;

// The unit tests' allocator notes each thread's largest allocation, so a
// test can bound what one step of a copy holds (`state_machine::install`).
#[cfg(test)]
#[global_allocator]
static TEST_ALLOCATOR: strata_arena::LargestAllocation = strata_arena::LargestAllocation;

pub use command::{ApplyResult, Command, Dedupe, Op, Proposal};
pub use config::{PeerConfig, ReadMode};
pub use error::{LogError, ProposeError, StartError, StorageFailure, StorageFailureKind};
pub use log_compaction::LogCompaction;
pub use members::Members;
pub use metrics::RaftMetrics;
pub use peer::{Peer, PeerHandle};
pub use raft::eraftpb::{
    ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2, Entry, Message,
    MessageType,
};
pub use range::KeySpan;
pub use snapshot::SnapshotDirs;
pub use stamp::{Stamp, Stamps};
pub use state_machine::{
    Change, ChangeKind, Committed, DEFAULT_HISTORY_ENTRIES, HistoryError, HistoryPage,
    HistoryPosition, KvPair, MAX_LEASE_ID, MAX_REQUEST_KEEP_MS, SnapshotInfo, StateMachine,
    ValueFormatError, Versioned, VersionedPair,
};
pub use status::{
    ElectionReason, ElectionStart, HandOver, PeerStatus, RaftEvent, RaftEventKind, Role,
};
pub use trace::TraceParent;
pub use transport::Transport;
pub use txn::{
    Compare, CompareOp, CompareTarget, MAX_RANGE_BYTES, MAX_RANGE_KEYS, MAX_TXN_READS, Txn, TxnOp,
    TxnOpResult, TxnResult,
};

/// Encodes a raft message for the wire.
pub fn encode_message(m: &Message) -> Vec<u8> {
    use protobuf::Message as _;
    m.write_to_bytes().expect("raft message encodes")
}

/// Decodes a raft message from the wire.
pub fn decode_message(bytes: &[u8]) -> Result<Message, String> {
    use protobuf::Message as _;
    Message::parse_from_bytes(bytes).map_err(|e| e.to_string())
}
