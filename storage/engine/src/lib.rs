//! The Strata storage engine: an LSM tree over the arena memtable.
//!
//! Writes get a sequence number, go to the write-ahead log and then to the
//! memtable (an arena skiplist); full memtables are frozen and flushed to
//! SSTables in L0 by a background thread, and another runs leveled
//! compaction (L0 by file count, L1 and deeper by size, ratio 10), rate
//! limited, keeping what live [`ReadPoint`]s need. Writers meet
//! back-pressure (slow down, then stall) instead of unbounded growth. The
//! manifest records the level layout. Reads merge memtables and tables,
//! newest first, through a shared block cache. [`Engine::subscribe`]
//! delivers flush, compaction and stall events; [`Engine::stats`] reports
//! per-level shape and amplification. All file I/O goes through
//! [`FileSystem`], so tests can simulate crashes with [`FaultFs`].
//!
//! Byte layouts and the fsync protocol are in `storage/docs/format.md`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod batch;
mod coding;
mod compaction;
mod engine;
mod error;
mod events;
mod filename;
#[doc(hidden)]
pub mod fuzzing;
mod iter;
mod key;
mod log;
mod manifest;
mod memtable;
mod options;
mod prefix;
mod sstable;
mod stats;
mod version;

/// Storage I/O lives in its own crate, shared with the raft log; the
/// engine's modules reach it as `crate::fs`.
use strata_fs as fs;

pub use batch::WriteBatch;
pub use engine::{Engine, KvPair, ReadPoint};
pub use error::EngineError;
pub use events::EngineEvent;
pub use key::SeqNo;
pub use options::{Options, WalMode};
pub use prefix::prefix_end;
pub use stats::{EngineStats, LevelStats};
pub use strata_fs::{FaultFs, FileSystem, StdFs};

/// Result type of the engine's API.
pub type Result<T, E = EngineError> = std::result::Result<T, E>;
