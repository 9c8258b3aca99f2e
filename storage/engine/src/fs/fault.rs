//! An in-memory [`FileSystem`] that knows what has been fsynced.
//!
//! Model: every file's bytes are append-only, and a file remembers how many
//! of them were covered by its last `sync`. Directory entries exist in a live
//! namespace and a durable one; `sync_dir` copies a directory's live entries
//! into the durable namespace. [`FaultFs::crash`] returns a new file system
//! holding only durable entries, each cut back to its synced length, and
//! makes the old instance refuse every call, as if the process died.
//! Directories themselves are assumed durable once created.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{FileLock, FileSystem, RandomAccessFile, WritableFile};

#[derive(Debug, Default)]
struct Content {
    data: Vec<u8>,
    synced_len: usize,
}

type Node = Arc<Mutex<Content>>;

#[derive(Debug, Default)]
struct State {
    crashed: bool,
    dirs: BTreeSet<PathBuf>,
    live: BTreeMap<PathBuf, Node>,
    durable: BTreeMap<PathBuf, Node>,
    locked: BTreeSet<PathBuf>,
    fail_next_write: Option<io::ErrorKind>,
    fail_next_sync: Option<io::ErrorKind>,
    no_space: bool,
    sync_count: u64,
}

/// In-memory, fault-injecting file system for tests. Cheap to clone; clones
/// share state.
#[derive(Clone, Debug, Default)]
pub struct FaultFs {
    state: Arc<Mutex<State>>,
}

fn crashed_error() -> io::Error {
    io::Error::other("file system has crashed")
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} not found", path.display()),
    )
}

impl FaultFs {
    /// Creates an empty file system.
    pub fn new() -> FaultFs {
        FaultFs::default()
    }

    /// Simulates power loss: returns a file system with only what was made
    /// durable, and makes this one fail every later call.
    pub fn crash(&self) -> FaultFs {
        self.crash_keeping(|_, _| 0)
    }

    /// Like [`FaultFs::crash`], but `keep(path, unsynced_len)` decides how
    /// many unsynced bytes of each durable file survive (a torn write).
    pub fn crash_keeping(&self, keep: impl Fn(&Path, usize) -> usize) -> FaultFs {
        let copy = self.durable_copy_keeping(keep);
        self.state.lock().crashed = true;
        copy
    }

    /// What a crash right now would leave, without crashing this instance:
    /// lets one test try many variations of the same on-disk state.
    pub fn durable_copy(&self) -> FaultFs {
        self.durable_copy_keeping(|_, _| 0)
    }

    fn durable_copy_keeping(&self, keep: impl Fn(&Path, usize) -> usize) -> FaultFs {
        let state = self.state.lock();
        let mut copies: HashMap<*const Mutex<Content>, Node> = HashMap::new();
        let mut files = BTreeMap::new();
        for (path, node) in &state.durable {
            let copy = copies.entry(Arc::as_ptr(node)).or_insert_with(|| {
                let content = node.lock();
                let unsynced = content.data.len() - content.synced_len;
                let len = content.synced_len + keep(path, unsynced).min(unsynced);
                Arc::new(Mutex::new(Content {
                    data: content.data[..len].to_vec(),
                    synced_len: len,
                }))
            });
            files.insert(path.clone(), Arc::clone(copy));
        }
        let fresh = State {
            dirs: state.dirs.clone(),
            live: files.clone(),
            durable: files,
            ..State::default()
        };
        FaultFs {
            state: Arc::new(Mutex::new(fresh)),
        }
    }

    /// Makes the next append fail with `kind`.
    pub fn fail_next_write(&self, kind: io::ErrorKind) {
        self.state.lock().fail_next_write = Some(kind);
    }

    /// Makes the next file or directory sync fail with `kind`.
    pub fn fail_next_sync(&self, kind: io::ErrorKind) {
        self.state.lock().fail_next_sync = Some(kind);
    }

    /// While set, every append fails with "storage full".
    pub fn set_no_space(&self, no_space: bool) {
        self.state.lock().no_space = no_space;
    }

    /// Number of successful file and directory syncs so far.
    pub fn sync_count(&self) -> u64 {
        self.state.lock().sync_count
    }

    /// Current (live) contents of a file, for tests that tamper with bytes.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        self.state
            .lock()
            .live
            .get(path)
            .map(|n| n.lock().data.clone())
    }

    /// Replaces a file's contents, durably, as a disk error or an attacker
    /// would. For corruption tests.
    pub fn overwrite(&self, path: &Path, data: Vec<u8>) {
        let mut state = self.state.lock();
        let node = Arc::new(Mutex::new(Content {
            synced_len: data.len(),
            data,
        }));
        state.live.insert(path.to_path_buf(), Arc::clone(&node));
        state.durable.insert(path.to_path_buf(), node);
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut State) -> io::Result<T>) -> io::Result<T> {
        let mut state = self.state.lock();
        if state.crashed {
            return Err(crashed_error());
        }
        f(&mut state)
    }
}

struct FaultWritable {
    fs: FaultFs,
    node: Node,
}

impl WritableFile for FaultWritable {
    fn append(&self, data: &[u8]) -> io::Result<()> {
        self.fs.with_state(|state| {
            if let Some(kind) = state.fail_next_write.take() {
                return Err(io::Error::new(kind, "injected write failure"));
            }
            if state.no_space {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "injected: no space left on device",
                ));
            }
            self.node.lock().data.extend_from_slice(data);
            Ok(())
        })
    }

    fn sync(&self) -> io::Result<()> {
        self.fs.with_state(|state| {
            if let Some(kind) = state.fail_next_sync.take() {
                return Err(io::Error::new(kind, "injected fsync failure"));
            }
            let mut content = self.node.lock();
            content.synced_len = content.data.len();
            state.sync_count += 1;
            Ok(())
        })
    }
}

struct FaultReadable {
    node: Node,
    len: u64,
}

impl RandomAccessFile for FaultReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let content = self.node.lock();
        let start =
            usize::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        let src = content
            .data
            .get(start..start.saturating_add(buf.len()))
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn size_bytes(&self) -> u64 {
        self.len
    }
}

struct FaultLock {
    fs: FaultFs,
    path: PathBuf,
}

impl Drop for FaultLock {
    fn drop(&mut self) {
        self.fs.state.lock().locked.remove(&self.path);
    }
}

impl FileSystem for FaultFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.with_state(|state| {
            for ancestor in dir.ancestors() {
                state.dirs.insert(ancestor.to_path_buf());
            }
            Ok(())
        })
    }

    fn create(&self, path: &Path) -> io::Result<Arc<dyn WritableFile>> {
        let node = self.with_state(|state| {
            let parent = path.parent().unwrap_or(Path::new(""));
            if !state.dirs.contains(parent) {
                return Err(not_found(parent));
            }
            let node = Node::default();
            state.live.insert(path.to_path_buf(), Arc::clone(&node));
            Ok(node)
        })?;
        Ok(Arc::new(FaultWritable {
            fs: self.clone(),
            node,
        }))
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.with_state(|state| {
            let node = state.live.get(path).ok_or_else(|| not_found(path))?;
            let len = node.lock().data.len() as u64;
            Ok(Arc::new(FaultReadable {
                node: Arc::clone(node),
                len,
            }) as Arc<dyn RandomAccessFile>)
        })
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.with_state(|state| {
            if !state.dirs.contains(dir) {
                return Err(not_found(dir));
            }
            let files = state.live.keys().filter(|p| p.parent() == Some(dir));
            let dirs = state.dirs.iter().filter(|p| p.parent() == Some(dir));
            Ok(files
                .chain(dirs)
                .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
                .collect())
        })
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.with_state(|state| Ok(state.live.contains_key(path) || state.dirs.contains(path)))
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.with_state(|state| {
            state
                .live
                .remove(path)
                .map(drop)
                .ok_or_else(|| not_found(path))
        })
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.with_state(|state| {
            let node = state.live.remove(from).ok_or_else(|| not_found(from))?;
            state.live.insert(to.to_path_buf(), node);
            Ok(())
        })
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.with_state(|state| {
            if state.live.contains_key(to) {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists", to.display()),
                ));
            }
            let parent = to.parent().unwrap_or(Path::new(""));
            if !state.dirs.contains(parent) {
                return Err(not_found(parent));
            }
            let node = Arc::clone(state.live.get(from).ok_or_else(|| not_found(from))?);
            state.live.insert(to.to_path_buf(), node);
            Ok(())
        })
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.with_state(|state| {
            if let Some(kind) = state.fail_next_sync.take() {
                return Err(io::Error::new(kind, "injected directory fsync failure"));
            }
            state.durable.retain(|p, _| p.parent() != Some(dir));
            let entries: Vec<_> = state
                .live
                .iter()
                .filter(|(p, _)| p.parent() == Some(dir))
                .map(|(p, n)| (p.clone(), Arc::clone(n)))
                .collect();
            state.durable.extend(entries);
            state.sync_count += 1;
            Ok(())
        })
    }

    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        self.with_state(|state| {
            if !state.locked.insert(path.to_path_buf()) {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("{} is locked", path.display()),
                ));
            }
            Ok(())
        })?;
        Ok(Box::new(FaultLock {
            fs: self.clone(),
            path: path.to_path_buf(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Proves that a crash keeps synced bytes of durable entries only.
    #[test]
    fn crash_keeps_only_synced_data_of_durable_entries() {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).expect("mkdir");
        let a = fs.create(&dir.join("a")).expect("create a");
        a.append(b"synced").expect("append");
        a.sync().expect("sync");
        a.append(b"-lost").expect("append");
        fs.sync_dir(dir).expect("sync dir");
        let b = fs.create(&dir.join("b")).expect("create b");
        b.append(b"never durable").expect("append");
        b.sync().expect("sync");

        let after = fs.crash();
        assert!(
            fs.exists(&dir.join("a")).is_err(),
            "old instance must refuse calls"
        );
        assert_eq!(
            after.read_all(&dir.join("a")).expect("a survives"),
            b"synced"
        );
        assert!(
            !after.exists(&dir.join("b")).expect("exists"),
            "entry without dir sync must vanish"
        );
    }

    // Proves that injected failures fire once and that renames need a dir sync.
    #[test]
    fn injected_failures_fire_once_and_renames_need_dir_sync() {
        let fs = FaultFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).expect("mkdir");
        let f = fs.create(&dir.join("x")).expect("create");
        fs.fail_next_write(io::ErrorKind::Other);
        assert!(f.append(b"1").is_err());
        f.append(b"1").expect("second append works");
        fs.fail_next_sync(io::ErrorKind::Other);
        assert!(f.sync().is_err());
        f.sync().expect("second sync works");
        fs.sync_dir(dir).expect("sync dir");
        fs.rename(&dir.join("x"), &dir.join("y")).expect("rename");
        let after = fs.crash();
        assert!(after.exists(&dir.join("x")).expect("exists"));
        assert!(!after.exists(&dir.join("y")).expect("exists"));
    }
}
