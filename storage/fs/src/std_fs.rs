//! [`FileSystem`] over `std::fs` (Unix).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use crate::{FileLock, FileSystem, RandomAccessFile, WritableFile};

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct StdFs;

struct StdWritable(File);

/// Space is allocated ahead only while the file system has this many times
/// the allocation free.
const ROOM_TO_SPARE: u64 = 4;

impl WritableFile for StdWritable {
    fn append(&self, data: &[u8]) -> io::Result<()> {
        (&self.0).write_all(data)
    }

    fn sync(&self) -> io::Result<()> {
        // fdatasync also persists the file size, which is all the metadata
        // an append-only file needs.
        self.0.sync_data()
    }

    fn preallocate(&self, len_bytes: u64) -> io::Result<()> {
        // Allocating ahead is worth it only with room to spare: on a disk
        // close to full it would take the last free space before the data
        // needs it (and a failed allocation may keep what it took).
        let more = len_bytes.saturating_sub(self.0.metadata()?.len());
        let fs = rustix::fs::fstatvfs(&self.0).map_err(io::Error::from)?;
        let free = fs.f_bavail.saturating_mul(fs.f_frsize);
        if free / ROOM_TO_SPARE < more {
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                format!("{free} bytes free: not allocating {more} more ahead"),
            ));
        }
        // Mode 0: the blocks are allocated and the size grows to
        // `len_bytes`; the cursor, where appends go, stays.
        rustix::fs::fallocate(&self.0, rustix::fs::FallocateFlags::empty(), 0, len_bytes)
            .map_err(io::Error::from)
    }

    fn truncate(&self, len_bytes: u64) -> io::Result<()> {
        let len = self.0.metadata()?.len();
        if len_bytes > len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cannot truncate a file of {len} bytes to {len_bytes}"),
            ));
        }
        self.0.set_len(len_bytes)?;
        // A file created for writing (not in append mode) writes at its
        // cursor, which must not stay beyond the cut.
        (&self.0).seek(SeekFrom::End(0))?;
        Ok(())
    }
}

struct StdReadable {
    file: File,
    len: u64,
}

impl RandomAccessFile for StdReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn size_bytes(&self) -> u64 {
        self.len
    }
}

impl FileSystem for StdFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> io::Result<Arc<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Arc::new(StdWritable(file)))
    }

    fn open_append(&self, path: &Path) -> io::Result<Arc<dyn WritableFile>> {
        // Not O_APPEND: appends go to the cursor, which `preallocate` leaves
        // before the allocated space.
        let mut file = OpenOptions::new().write(true).open(path)?;
        file.seek(SeekFrom::End(0))?;
        Ok(Arc::new(StdWritable(file)))
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        Ok(Arc::new(StdReadable { file, len }))
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            if let Ok(name) = entry?.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::hard_link(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        // The parent of a relative name like `data` is the empty path.
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        File::open(dir)?.sync_all()
    }

    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        file.try_lock().map_err(|e| match e {
            fs::TryLockError::WouldBlock => io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("{} is locked by another process", path.display()),
            ),
            fs::TryLockError::Error(e) => e,
        })?;
        Ok(Box::new(file))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that on the real file system a truncated file continues right
    // after the cut, whether it was created or reopened for appending, and
    // that a truncation cannot extend a file.
    #[test]
    fn truncate_then_append_continues_at_the_cut() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let fs = StdFs;
        let created = fs.create(&path).expect("create");
        created.append(b"hello world").expect("append");
        created.truncate(5).expect("truncate");
        created.append(b"!").expect("append");
        created.sync().expect("sync");
        assert_eq!(fs.read_all(&path).expect("read"), b"hello!");

        let reopened = fs.open_append(&path).expect("open_append");
        reopened.append(b" again").expect("append");
        reopened.truncate(7).expect("truncate");
        reopened.append(b"?").expect("append");
        assert_eq!(fs.read_all(&path).expect("read"), b"hello! ?");
        assert!(reopened.truncate(100).is_err(), "truncate must not extend");
        assert!(fs.open_append(&dir.path().join("missing")).is_err());
    }

    // Proves that on the real file system an allocated file is as long as
    // asked, reads as zeros past its appended bytes, takes appends right
    // after them (created or reopened and cut back), and that a truncation
    // into the zeros shortens it.
    #[test]
    fn appends_go_into_allocated_space() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let fs = StdFs;
        let f = fs.create(&path).expect("create");
        f.append(b"abc").expect("append");
        f.preallocate(4096).expect("preallocate");
        f.append(b"de").expect("append");
        f.sync().expect("sync");
        let bytes = fs.read_all(&path).expect("read");
        assert_eq!(bytes.len(), 4096);
        assert_eq!(&bytes[..5], b"abcde");
        assert!(bytes[5..].iter().all(|&b| b == 0));

        let reopened = fs.open_append(&path).expect("open_append");
        reopened.truncate(5).expect("cut the zeros");
        reopened.preallocate(100).expect("preallocate again");
        reopened.append(b"f").expect("append");
        reopened.truncate(50).expect("truncate into the zeros");
        let bytes = fs.read_all(&path).expect("read");
        assert_eq!(bytes.len(), 50);
        assert_eq!(&bytes[..6], b"abcdef");
    }

    // Proves that space is not allocated ahead without room to spare: the
    // request fails as "storage full" and the file stays as it was.
    #[test]
    fn allocating_ahead_needs_room_to_spare() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let f = StdFs.create(&path).expect("create");
        f.append(b"abc").expect("append");
        let free = {
            let s = rustix::fs::statvfs(dir.path()).expect("statvfs");
            s.f_bavail * s.f_frsize
        };
        let err = f
            .preallocate(free / 2)
            .expect_err("half the free space is too much");
        assert_eq!(err.kind(), io::ErrorKind::StorageFull, "{err}");
        assert_eq!(std::fs::metadata(&path).expect("metadata").len(), 3);
    }

    // Proves that a new directory chain can be created durably, including
    // a relative one whose parent is the current directory.
    #[test]
    fn create_dir_durable_syncs_real_parents() {
        let dir = tempfile::tempdir().expect("tempdir");
        let nested = dir.path().join("a/b/c");
        StdFs.create_dir_durable(&nested).expect("create");
        assert!(nested.is_dir());
        StdFs.create_dir_durable(&nested).expect("existing is fine");
        StdFs
            .sync_dir(Path::new(""))
            .expect("empty path is the cwd");
    }
}
