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
//!
//! Two refinements serve the raft simulation. [`FaultFs::crash_reordered`]
//! lets unsynced bytes come back the way a page cache writes them back: any
//! seeded subset of pages, a lost page reading as zeros, and a file length
//! anywhere between the synced one and the written one, chosen for each
//! file on its own. [`FaultFs::hold_syncs`] stretches a stretch of work
//! inside a slow fsync: its syncs return at once and its writes go on, but
//! until [`FaultFs::release_syncs`] none of it has happened as far as a
//! crash is concerned.

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
    /// The file's length when syncs began to be held, once it has been
    /// appended to since: a crash before the release sees no more.
    len_at_hold: Option<usize>,
    /// The length `preallocate` gave the file: past `data`, it reads as
    /// zeros up to here.
    allocated: usize,
    /// The allocated length the last sync made durable; a crash leaves the
    /// file at least this long, zeros past what survived of `data`.
    allocated_synced: usize,
}

impl Content {
    /// The file's length: what was appended, or more if it was allocated.
    fn len(&self) -> usize {
        self.data.len().max(self.allocated)
    }

    /// `survivor` padded with zeros to the durable allocated length, as the
    /// allocated blocks of a file read after a crash.
    fn allocated_after_crash(&self, mut survivor: Vec<u8>) -> Vec<u8> {
        if survivor.len() < self.allocated_synced {
            survivor.resize(self.allocated_synced, 0);
        }
        survivor
    }

    /// What a crash leaves of this file, keeping `keep` of its unsynced bytes.
    fn after_crash(&self, keep: usize) -> Vec<u8> {
        if let Some(durable) = &self.durable_before_truncate {
            return self.allocated_after_crash(durable.clone());
        }
        self.allocated_after_crash(
            self.data[..self.synced_len + keep.min(self.unsynced_len())].to_vec(),
        )
    }

    /// What a crash can find written: nothing appended while syncs are held.
    fn written_len(&self) -> usize {
        self.len_at_hold.unwrap_or(self.data.len())
    }

    fn unsynced_len(&self) -> usize {
        self.written_len() - self.synced_len
    }

    /// What a crash leaves of this file when its unsynced pages were
    /// written back in any order: `coin` draws the surviving length (the
    /// size reached the disk or not) and, page by page, whether each dirty
    /// page did; a page that did not reads as zeros, as a page never
    /// written does. A pending truncation brings back the old bytes whole.
    fn after_reordered_crash(&self, page_bytes: usize, coin: &mut dyn FnMut() -> u64) -> Vec<u8> {
        if let Some(durable) = &self.durable_before_truncate {
            return self.allocated_after_crash(durable.clone());
        }
        let unsynced = self.unsynced_len();
        if unsynced == 0 {
            return self.allocated_after_crash(self.data[..self.synced_len].to_vec());
        }
        let len = self.synced_len + (coin() % (unsynced as u64 + 1)) as usize;
        let mut data = self.data[..len].to_vec();
        let mut page = self.synced_len / page_bytes * page_bytes;
        while page < len {
            let end = (page + page_bytes).min(len);
            if coin().is_multiple_of(2) {
                data[page.max(self.synced_len)..end].fill(0);
            }
            page += page_bytes;
        }
        self.allocated_after_crash(data)
    }
}

/// A sync made while syncs are held, with what it covered when it was made.
#[derive(Debug)]
enum HeldSync {
    /// A file's sync and the file's length then.
    File(Node, usize),
    /// A directory's sync: each entry it knew of, live and durable then.
    /// Its release changes only the entries no other thread's sync has
    /// made durable since, so it never undoes newer work.
    Dir {
        entries: Vec<HeldEntry>,
        subdirs: Vec<PathBuf>,
    },
}

/// One directory entry as a held directory sync found it.
#[derive(Debug)]
struct HeldEntry {
    path: PathBuf,
    live: Option<Node>,
    durable: Option<Node>,
}

fn same(a: Option<&Node>, b: Option<&Node>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
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
    /// While `Some`, syncs are recorded here instead of made durable.
    held: Option<Vec<HeldSync>>,
    /// The thread that held syncs, and how many of the held ones it made:
    /// what it waits for, whatever other threads (an engine's background
    /// work) happen to sync meanwhile.
    holder: Option<std::thread::ThreadId>,
    holder_syncs: usize,
    /// The files appended to while syncs are held.
    appended_while_held: Vec<Node>,
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
    /// Records a held sync; false if syncs are not held.
    fn hold(&mut self, sync: HeldSync) -> bool {
        let Some(held) = &mut self.held else {
            return false;
        };
        held.push(sync);
        if self.holder == Some(std::thread::current().id()) {
            self.holder_syncs += 1;
        }
        true
    }

    /// Makes a directory's entries durable as they are listed in `files`
    /// and `subdirs` (its live entries when the sync was made).
    fn make_dir_durable(&mut self, dir: &Path, files: Vec<(PathBuf, Node)>, subdirs: Vec<PathBuf>) {
        self.durable.retain(|p, _| p.parent() != Some(dir));
        self.durable.extend(files);
        self.durable_dirs.extend(subdirs);
    }

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

    /// Like [`FaultFs::crash`], but the unsynced bytes of each durable file
    /// survive as pages of `page_bytes` written back in any order: `coin`
    /// decides, file by file (in path order, so a seeded `coin` replays),
    /// how long the file is and which of its dirty pages reached the disk;
    /// the others read as zeros. Syncs still held are lost.
    pub fn crash_reordered(&self, page_bytes: usize, mut coin: impl FnMut() -> u64) -> FaultFs {
        assert!(page_bytes > 0, "a page holds at least one byte");
        let copy = self
            .durable_copy_with(|_, content| content.after_reordered_crash(page_bytes, &mut coin));
        self.state.lock().crashed = true;
        copy
    }

    /// From now on the work done is inside a slow fsync: a sync (of a file
    /// or a directory, by any thread) succeeds at once but makes nothing
    /// durable until [`FaultFs::release_syncs`], and what is written
    /// meanwhile comes after that fsync. A crash before the release finds
    /// every file as it was when the hold began (its unsynced bytes as any
    /// crash finds them) and loses what the held syncs covered.
    pub fn hold_syncs(&self) {
        let mut state = self.state.lock();
        if state.held.is_none() {
            state.held = Some(Vec::new());
            state.holder = Some(std::thread::current().id());
            state.holder_syncs = 0;
        }
    }

    /// How many syncs the thread that held them made since: what that
    /// thread waits for (other threads' syncs are held but not counted, so
    /// the count does not depend on their timing).
    pub fn held_syncs(&self) -> usize {
        let state = self.state.lock();
        if state.held.is_some() {
            state.holder_syncs
        } else {
            0
        }
    }

    /// Completes the held syncs in the order they were made, each covering
    /// what it covered when it was made, and stops holding syncs.
    pub fn release_syncs(&self) {
        let mut state = self.state.lock();
        if state.crashed {
            return;
        }
        for node in std::mem::take(&mut state.appended_while_held) {
            node.lock().len_at_hold = None;
        }
        state.holder = None;
        state.holder_syncs = 0;
        for sync in state.held.take().unwrap_or_default() {
            match sync {
                HeldSync::File(node, len) => {
                    // Truncation is refused while syncs are held, so a
                    // pending one predates this sync, which covers it.
                    let mut content = node.lock();
                    content.synced_len = content.synced_len.max(len);
                    content.durable_before_truncate = None;
                }
                HeldSync::Dir { entries, subdirs } => {
                    for e in entries {
                        if !same(state.durable.get(&e.path), e.durable.as_ref()) {
                            continue;
                        }
                        match e.live {
                            Some(node) => state.durable.insert(e.path, node),
                            None => state.durable.remove(&e.path),
                        };
                    }
                    state.durable_dirs.extend(subdirs);
                }
            }
        }
    }

    /// What a crash right now would leave, without crashing this instance:
    /// lets one test try many variations of the same on-disk state.
    pub fn durable_copy(&self) -> FaultFs {
        self.durable_copy_keeping(|_, _| 0)
    }

    fn durable_copy_keeping(&self, keep: impl Fn(&Path, usize) -> usize) -> FaultFs {
        self.durable_copy_with(|path, content| {
            content.after_crash(keep(path, content.unsynced_len()))
        })
    }

    /// The durable entries, each file's bytes as `survivor` says a crash
    /// leaves them (called once per file, in path order).
    fn durable_copy_with(&self, mut survivor: impl FnMut(&Path, &Content) -> Vec<u8>) -> FaultFs {
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
                let data = survivor(path, &node.lock());
                Arc::new(Mutex::new(Content {
                    synced_len: data.len(),
                    data,
                    ..Content::default()
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
        self.state.lock().live.get(path).map(|n| {
            let content = n.lock();
            let mut data = content.data.clone();
            data.resize(content.len(), 0);
            data
        })
    }

    /// Replaces a file's contents, durably, as a disk error or an attacker
    /// would. For corruption tests; the file's directory must exist.
    pub fn overwrite(&self, path: &Path, data: Vec<u8>) {
        let mut state = self.state.lock();
        let node = Arc::new(Mutex::new(Content {
            synced_len: data.len(),
            data,
            ..Content::default()
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
