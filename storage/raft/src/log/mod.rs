//! The raft log on disk: segmented, checksummed, append-only files holding
//! entries, hard state and configuration. It is the node's write-ahead log.

pub(crate) mod io;
pub mod record;
pub mod segment;
pub mod store;
pub mod writer;

pub use store::{BOOTSTRAP_INDEX, BOOTSTRAP_TERM, DEFAULT_SEGMENT_BYTES, RaftLogStore};
pub use writer::{LogWrite, LogWriter};
