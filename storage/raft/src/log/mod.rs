//! The raft log on disk: segmented, checksummed, append-only files holding
//! entries, hard state and configuration. It is the node's write-ahead log.

pub mod record;
pub mod segment;
pub mod store;

pub use store::{DEFAULT_SEGMENT_BYTES, RaftLogStore};
