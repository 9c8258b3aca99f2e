//! The narrow file-system interface all storage I/O goes through.

use std::any::Any;
use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// Held for as long as a directory is open; dropping it releases the lock.
pub type FileLock = Box<dyn Any + Send + Sync>;

/// File-system operations the engine and the raft log need, and nothing more.
///
/// Durability contract: data appended to a file, and a truncation, are
/// durable once [`WritableFile::sync`] returns; a created, renamed or
/// removed directory entry (of a file or of a directory) is durable once
/// [`FileSystem::sync_dir`] on its parent returns.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Creates `dir` and its parents if missing. The new entries are not
    /// durable yet; see [`FileSystem::create_dir_durable`].
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Creates `path` (truncating an existing file) for appending.
    fn create(&self, path: &Path) -> io::Result<Arc<dyn WritableFile>>;
    /// Opens the existing file at `path` for appending after its end.
    fn open_append(&self, path: &Path) -> io::Result<Arc<dyn WritableFile>>;
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

    /// Creates `dir` and its missing parents, and makes `dir` durable in
    /// its parent (and every directory it had to create in theirs): a new
    /// directory whose entry was never synced may vanish at a crash with
    /// every file in it. The parent of `dir` is synced even when `dir`
    /// existed, because it may have been created by a run that died before
    /// syncing it.
    fn create_dir_durable(&self, dir: &Path) -> io::Result<()> {
        let mut missing = Vec::new();
        for ancestor in dir.ancestors() {
            if ancestor.parent().is_none() || self.exists(ancestor)? {
                break;
            }
            missing.push(ancestor);
        }
        self.create_dir_all(dir)?;
        // Top down, so that each directory's entry is durable before the
        // entries inside it.
        for created in missing.iter().rev() {
            if let Some(parent) = created.parent() {
                self.sync_dir(parent)?;
            }
        }
        if missing.is_empty()
            && let Some(parent) = dir.parent()
        {
            self.sync_dir(parent)?;
        }
        Ok(())
    }
}

/// An append-only file. Methods take `&self` so that one thread can fsync
/// while another appends (group commit).
pub trait WritableFile: Send + Sync {
    /// Appends `data` (hands it to the OS; not yet durable).
    fn append(&self, data: &[u8]) -> io::Result<()>;
    /// Makes everything appended so far (and any truncation) durable.
    fn sync(&self) -> io::Result<()>;
    /// Cuts the file to `len_bytes`, which must not exceed its length
    /// (how a torn tail is removed); later appends go after the cut. Not
    /// durable until the next [`WritableFile::sync`].
    fn truncate(&self, len_bytes: u64) -> io::Result<()>;

    /// Allocates the file's blocks up to `len_bytes` and makes it that long,
    /// the bytes after what was appended reading as zeros; appends still go
    /// after the last appended byte, into the allocated space. An append
    /// that grows a file makes its `fdatasync` commit the new size through
    /// the file system's journal; one into allocated space does not, which
    /// on ext4 makes the sync faster (1.5-1.6x in docs/benchmarks.md). The new length is
    /// durable with the next [`WritableFile::sync`]. May fail where the file
    /// system cannot allocate ahead; the file is then as it was.
    fn preallocate(&self, len_bytes: u64) -> io::Result<()>;
}

/// A file read at explicit offsets.
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` from `offset`; fails if the file is too short.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Length of the file.
    fn size_bytes(&self) -> u64;
}
