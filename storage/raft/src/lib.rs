//! Replication for Strata: a raft group member built on raft-rs.
//!
//! A [`Peer`] owns one raft group's `RawNode` on a dedicated thread. The
//! raft log ([`log::RaftLogStore`]) is the node's write-ahead log; committed
//! commands are applied to the engine by the [`StateMachine`]. The network
//! is behind the [`Transport`] trait, so this crate never opens a socket.

#![forbid(unsafe_code)]

pub mod command;
mod config;
mod driver;
pub mod error;
mod events;
mod fail_stop;
pub mod keys;
pub mod log;
mod logger;
mod mailbox;
pub mod members;
mod peer;
#[cfg(test)]
mod sim;
pub mod snapshot;
pub mod state_machine;
mod status;
mod transport;

pub use command::{ApplyResult, Command, Op};
pub use config::PeerConfig;
pub use error::{LogError, ProposeError, StartError, StorageFailure, StorageFailureKind};
pub use members::Members;
pub use peer::{Peer, PeerHandle};
pub use raft::ReadOnlyOption;
pub use raft::eraftpb::{
    ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2, Message, MessageType,
};
pub use snapshot::SnapshotDirs;
pub use state_machine::{KvPair, SnapshotInfo, StateMachine};
pub use status::{PeerStatus, RaftEvent, RaftEventKind, Role};
pub use transport::Transport;

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
