//! Storage I/O shared by the engine and the raft log.
//!
//! Every file either of them touches goes through the narrow [`FileSystem`]
//! trait: [`StdFs`] is the real thing, [`FaultFs`] keeps files in memory,
//! knows what has been fsynced, and can simulate a crash or inject write and
//! fsync failures, so that crash tests run in-process and deterministically.
//! Both write-ahead logs (the engine's WAL and manifest, and the raft log)
//! frame their records the same way ([`log`]), and both tell a full disk
//! from other failures with [`is_no_space`].
//!
//! Byte layouts and the fsync protocol are in `storage/docs/format.md`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod fault;
mod file_system;
pub mod log;
mod no_space;
mod std_fs;

pub use fault::FaultFs;
pub use file_system::{FileLock, FileSystem, RandomAccessFile, WritableFile};
pub use no_space::is_no_space;
pub use std_fs::StdFs;
