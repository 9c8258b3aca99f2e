//! The narrow file-system interface all engine I/O goes through.
//!
//! [`StdFs`] is the real thing; [`FaultFs`] keeps files in memory, tracks what
//! has been fsynced, and can simulate a crash or inject write and fsync
//! failures, so that crash tests run in-process and deterministically.

mod fault;
mod std_fs;

use std::any::Any;
use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;

pub use fault::FaultFs;
pub use std_fs::StdFs;

/// Held for as long as a directory is open; dropping it releases the lock.
pub type FileLock = Box<dyn Any + Send + Sync>;

/// File-system operations the engine needs, and nothing more.
///
/// Durability contract: data appended to a file is durable once
/// [`WritableFile::sync`] returns; a created, renamed or removed directory
/// entry is durable once [`FileSystem::sync_dir`] on its parent returns.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Creates `dir` and its parents if missing.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Creates `path` (truncating an existing file) for appending.
    fn create(&self, path: &Path) -> io::Result<Arc<dyn WritableFile>>;
    /// Opens `path` for positional reads.
    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>>;
    /// Names of the entries directly inside `dir`.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Whether `path` exists.
    fn exists(&self, path: &Path) -> io::Result<bool>;
    /// Removes the file at `path`.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Atomically replaces `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes `to` a second name for the file at `from`.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the entries of `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Takes an exclusive lock on `path` (creating it), failing if held.
    fn lock(&self, path: &Path) -> io::Result<FileLock>;

    /// Reads a whole file.
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        let file = self.open(path)?;
        let len =
            usize::try_from(file.size_bytes()).map_err(|_| io::Error::other("file too large"))?;
        let mut buf = vec![0; len];
        file.read_exact_at(0, &mut buf)?;
        Ok(buf)
    }
}

/// An append-only file. Methods take `&self` so that one thread can fsync
/// while another appends (group commit).
pub trait WritableFile: Send + Sync {
    /// Appends `data` (hands it to the OS; not yet durable).
    fn append(&self, data: &[u8]) -> io::Result<()>;
    /// Makes everything appended so far durable.
    fn sync(&self) -> io::Result<()>;
}

/// A file read at explicit offsets.
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` from `offset`; fails if the file is too short.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Length of the file.
    fn size_bytes(&self) -> u64;
}
