//! An in-memory [`FileSystem`](crate::FileSystem) that knows what has been
//! fsynced.
//!
//! Model: a file's bytes are appended, and a file remembers how many of them
//! its last `sync` covered. A truncation below that point is not durable
//! until the next `sync` either: until then the file also remembers the
//! bytes a crash would bring back. Directory entries (of files and of
//! directories) exist in a live namespace and a durable one; `sync_dir`
//! copies a directory's live entries into the durable namespace.
//! [`FaultFs::crash`] returns a new file system holding only the durable
//! entries reachable through durable directories, each file cut back to
//! what was synced, and makes the old instance refuse every call, as if the
//! process died. Root directories (a path without a parent) always survive.

mod file_system;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

#[derive(Debug, Default)]
struct Content {
    data: Vec<u8>,
    /// How many bytes of `data` the last sync made durable.
    synced_len: usize,
    /// The durable bytes while a truncation below `synced_len` waits for a
    /// sync: a crash before that sync brings them back.
    durable_before_truncate: Option<Vec<u8>>,
}

impl Content {
    /// What a crash leaves of this file, keeping `keep` of its unsynced bytes.
    fn after_crash(&self, keep: usize) -> Vec<u8> {
        if let Some(durable) = &self.durable_before_truncate {
            return durable.clone();
        }
        let unsynced = self.data.len() - self.synced_len;
        self.data[..self.synced_len + keep.min(unsynced)].to_vec()
    }

    fn unsynced_len(&self) -> usize {
        self.data.len() - self.synced_len
    }
}

type Node = Arc<Mutex<Content>>;

#[derive(Debug, Default)]
struct State {
    crashed: bool,
    dirs: BTreeSet<PathBuf>,
    durable_dirs: BTreeSet<PathBuf>,
    live: BTreeMap<PathBuf, Node>,
    durable: BTreeMap<PathBuf, Node>,
    locked: BTreeSet<PathBuf>,
    fail_next_write: Option<io::ErrorKind>,
    /// How many syncs still succeed before one fails, and with what.
    fail_sync: Option<(u64, io::ErrorKind)>,
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

/// A directory without a parent (`/`, or the empty relative root) exists
/// before any test starts and cannot be lost.
fn is_root(dir: &Path) -> bool {
    dir.parent().is_none()
}

impl State {
    /// The injected failure of the sync being made now, if any.
    fn take_sync_failure(&mut self) -> Option<io::ErrorKind> {
        match self.fail_sync.take() {
            Some((0, kind)) => Some(kind),
            Some((skip, kind)) => {
                self.fail_sync = Some((skip - 1, kind));
                None
            }
            None => None,
        }
    }
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
        // A directory survives when its own entry and every one above it
        // were synced. Sorted paths list a parent before its children.
        let mut dirs: BTreeSet<PathBuf> =
            state.dirs.iter().filter(|d| is_root(d)).cloned().collect();
        for dir in &state.durable_dirs {
            if dir.parent().is_some_and(|p| dirs.contains(p)) {
                dirs.insert(dir.clone());
            }
        }
        let mut copies: HashMap<*const Mutex<Content>, Node> = HashMap::new();
        let mut files = BTreeMap::new();
        for (path, node) in &state.durable {
            if !path.parent().is_some_and(|p| dirs.contains(p)) {
                continue;
            }
            let copy = copies.entry(Arc::as_ptr(node)).or_insert_with(|| {
                let content = node.lock();
                let data = content.after_crash(keep(path, content.unsynced_len()));
                Arc::new(Mutex::new(Content {
                    synced_len: data.len(),
                    data,
                    durable_before_truncate: None,
                }))
            });
            files.insert(path.clone(), Arc::clone(copy));
        }
        let fresh = State {
            durable_dirs: dirs.clone(),
            dirs,
            live: files.clone(),
            durable: files,
            ..State::default()
        };
        FaultFs {
            state: Arc::new(Mutex::new(fresh)),
        }
    }

    /// Makes the next append (or truncation) fail with `kind`.
    pub fn fail_next_write(&self, kind: io::ErrorKind) {
        self.state.lock().fail_next_write = Some(kind);
    }

    /// Makes the next file or directory sync fail with `kind`.
    pub fn fail_next_sync(&self, kind: io::ErrorKind) {
        self.fail_sync_after(0, kind);
    }

    /// Lets `skip` more file or directory syncs succeed, then makes the
    /// next one fail with `kind`: reaches a sync in the middle of a
    /// sequence (say the directory sync after a file's own).
    pub fn fail_sync_after(&self, skip: u64, kind: io::ErrorKind) {
        self.state.lock().fail_sync = Some((skip, kind));
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
    /// would. For corruption tests; the file's directory must exist.
    pub fn overwrite(&self, path: &Path, data: Vec<u8>) {
        let mut state = self.state.lock();
        let node = Arc::new(Mutex::new(Content {
            synced_len: data.len(),
            data,
            durable_before_truncate: None,
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
