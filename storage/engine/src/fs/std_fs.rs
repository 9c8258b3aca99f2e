//! [`FileSystem`] over `std::fs` (Unix).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct StdFs;

struct StdWritable(File);

impl WritableFile for StdWritable {
    fn append(&self, data: &[u8]) -> io::Result<()> {
        (&self.0).write_all(data)
    }

    fn sync(&self) -> io::Result<()> {
        // fdatasync also persists the file size, which is all the metadata
        // an append-only file needs.
        self.0.sync_data()
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
