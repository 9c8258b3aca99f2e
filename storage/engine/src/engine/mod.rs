//! The engine: ties the WAL, memtables, tables, manifest and background
//! work together behind the public API.
//!
//! Locks, in the order they may be taken: `write` → `wal_sync` → `wal_tail`;
//! `versions` → `view`; `write` → `view`. `bg` and `poison` are leaves.

mod background;
mod backpressure;
mod checkpoint;
mod open;
mod read;
mod read_point;
mod write;

pub use read_point::ReadPoint;

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};

use crate::WriteBatch;
use crate::error::{EngineError, Result};
use crate::events::{EngineEvent, EventBus};
use crate::fs::{FileLock, FileSystem, StdFs, WritableFile};
use crate::key::SeqNo;
use crate::log::LogWriter;
use crate::manifest::{ManifestState, ManifestWriter};
use crate::memtable::{Memtable, MemtableWriter};
use crate::options::Options;
use crate::sstable::BlockCache;
use crate::stats::{Counters, EngineStats, LevelStats};
use crate::version::Version;

/// A key and its value, as returned by [`Engine::scan`].
pub type KvPair = (Vec<u8>, Vec<u8>);

/// A durable, ordered key-value store on one directory.
///
/// `Send + Sync`: share it as `Arc<Engine>`. Dropping it stops the
/// background threads; [`Engine::close`] also syncs the WAL first.
pub struct Engine {
    inner: Arc<Inner>,
    workers: Vec<JoinHandle<()>>,
}

/// A memtable waiting to be flushed.
pub(crate) struct Frozen {
    pub(crate) mem: Arc<Memtable>,
    /// WAL segment started when this memtable was frozen: once it is
    /// flushed, segments below this number are obsolete.
    pub(crate) next_log_number: u64,
    /// Last sequence number written before the freeze.
    pub(crate) last_seq: SeqNo,
}

/// Everything a read needs, swapped atomically as a unit.
#[derive(Clone)]
pub(crate) struct ReadView {
    pub(crate) mem: Arc<Memtable>,
    /// Oldest first.
    pub(crate) imms: Vec<Arc<Frozen>>,
    pub(crate) version: Arc<Version>,
}

/// State owned by the (serialised) write path.
pub(crate) struct WriteState {
    pub(crate) mem: MemtableWriter,
    /// `None` when the WAL is disabled.
    pub(crate) wal: Option<LogWriter>,
    pub(crate) wal_number: u64,
    pub(crate) last_seq: SeqNo,
    pub(crate) scratch: Vec<u8>,
}

/// The newest appended WAL position; read by whoever fsyncs next.
pub(crate) struct WalTail {
    pub(crate) file: Arc<dyn WritableFile>,
    pub(crate) number: u64,
    pub(crate) end: u64,
    pub(crate) last_seq: SeqNo,
}

/// The durable WAL position: `(segment number, byte offset)`.
pub(crate) struct SyncState {
    pub(crate) synced: (u64, u64),
}

/// The manifest and the authoritative level layout.
pub(crate) struct VersionSet {
    pub(crate) manifest: ManifestWriter,
    pub(crate) state: ManifestState,
    pub(crate) version: Arc<Version>,
}

#[derive(Default)]
pub(crate) struct BgState {
    pub(crate) shutdown: bool,
    pub(crate) wake_flush: bool,
    pub(crate) wake_compaction: bool,
    /// Compactions of L0 asked for since open (`Engine::compact`).
    pub(crate) compactions_asked: u64,
    /// Of those, how many a compaction step has answered: every request up
    /// to this one saw a step whose view was read after it was made.
    pub(crate) compactions_answered: u64,
}

pub(crate) struct PoisonCause {
    pub(crate) no_space: bool,
    pub(crate) reason: String,
}

pub(crate) struct Inner {
    pub(crate) fs: Arc<dyn FileSystem>,
    pub(crate) dir: PathBuf,
    pub(crate) opts: Options,
    pub(crate) _lock: FileLock,
    pub(crate) write: Mutex<WriteState>,
    pub(crate) stall: Condvar,
    pub(crate) wal_sync: Mutex<SyncState>,
    pub(crate) wal_tail: Mutex<Option<WalTail>>,
    /// Highest sequence number readers may see: acknowledged (and, in
    /// `WalMode::Sync`, durable) writes only.
    pub(crate) visible_seq: AtomicU64,
    pub(crate) view: RwLock<Arc<ReadView>>,
    pub(crate) versions: Mutex<VersionSet>,
    pub(crate) next_file_number: AtomicU64,
    pub(crate) poisoned: AtomicBool,
    pub(crate) poison_cause: Mutex<Option<PoisonCause>>,
    pub(crate) bg: Mutex<BgState>,
    pub(crate) bg_wake: Condvar,
    pub(crate) bg_done: Condvar,
    pub(crate) flush_count: AtomicU64,
    pub(crate) compaction_count: AtomicU64,
    pub(crate) read_points: read_point::ReadPointList,
    pub(crate) events: EventBus,
    pub(crate) counters: Counters,
    pub(crate) block_cache: Option<Arc<BlockCache>>,
}

impl Inner {
    /// Records the first failure; every later write is refused.
    pub(crate) fn poison(&self, err: &EngineError) {
        {
            let mut cause = self.poison_cause.lock();
            if cause.is_none() {
                *cause = Some(PoisonCause {
                    no_space: matches!(err, EngineError::NoSpace { .. }),
                    reason: err.to_string(),
                });
            }
        }
        self.poisoned.store(true, Ordering::Release);
        self.stall.notify_all();
        self.bg_done.notify_all();
    }

    /// Poisons the engine with `err` and returns it.
    pub(crate) fn fail<T>(&self, err: EngineError) -> Result<T> {
        self.poison(&err);
        Err(err)
    }

    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    /// `Ok` unless an earlier failure poisoned the engine.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if !self.is_poisoned() {
            return Ok(());
        }
        let reason = self
            .poison_cause
            .lock()
            .as_ref()
            .map_or_else(String::new, |c| c.reason.clone());
        Err(EngineError::Poisoned { reason })
    }

    pub(crate) fn health(&self) -> Result<()> {
        match &*self.poison_cause.lock() {
            None => Ok(()),
            Some(c) if c.no_space => Err(EngineError::NoSpace {
                context: c.reason.clone(),
            }),
            Some(c) => Err(EngineError::Poisoned {
                reason: c.reason.clone(),
            }),
        }
    }

    pub(crate) fn read_view(&self) -> Arc<ReadView> {
        Arc::clone(&self.view.read())
    }

    /// Wakes the background threads.
    pub(crate) fn wake_background(&self) {
        let mut bg = self.bg.lock();
        bg.wake_flush = true;
        bg.wake_compaction = true;
        self.bg_wake.notify_all();
    }

    pub(crate) fn stats(&self) -> EngineStats {
        let view = self.read_view();
        let levels = view
            .version
            .levels
            .iter()
            .enumerate()
            .map(|(level, files)| LevelStats {
                level,
                file_count: files.len(),
                size_bytes: files.iter().map(|f| f.meta.size_bytes).sum(),
            })
            .collect();
        let mut stats = EngineStats {
            levels,
            memtable_bytes: view.mem.memory_usage_bytes() as u64,
            immutable_memtables: view.imms.len(),
            immutable_memtable_bytes: view
                .imms
                .iter()
                .map(|f| f.mem.memory_usage_bytes() as u64)
                .sum(),
            flush_count: self.flush_count.load(Ordering::Relaxed),
            compaction_count: self.compaction_count.load(Ordering::Relaxed),
            last_seq: self.visible_seq.load(Ordering::Acquire),
            events_dropped: self.events.dropped(),
            ..EngineStats::default()
        };
        self.counters.fill(&mut stats);
        if let Some(cache) = &self.block_cache {
            (stats.block_cache_hits, stats.block_cache_misses) = cache.hits_and_misses();
        }
        stats
    }
}

impl Engine {
    /// Opens (creating if needed) the engine in `dir` on the real file system.
    pub fn open(dir: impl AsRef<Path>, opts: Options) -> Result<Engine, EngineError> {
        Engine::open_with_fs(Arc::new(StdFs), dir.as_ref(), opts)
    }

    /// Opens the engine in `dir` on `fs`, recovering from the WAL and manifest.
    pub fn open_with_fs(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        opts: Options,
    ) -> Result<Engine, EngineError> {
        let inner = Arc::new(open::recover(fs, dir, opts)?);
        let mut engine = Engine {
            inner,
            workers: Vec::new(),
        };
        for work in [background::Work::Flush, background::Work::Compaction] {
            let worker_inner = Arc::clone(&engine.inner);
            // On failure the engine drops here, stopping a thread started.
            let worker = std::thread::Builder::new()
                .name(work.thread_name().to_string())
                .spawn(move || background::run(&worker_inner, work))
                .map_err(|e| EngineError::io("starting a background thread", e))?;
            engine.workers.push(worker);
        }
        Ok(engine)
    }

    /// Writes `key -> value`; returns the write's sequence number.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<SeqNo, EngineError> {
        let mut batch = WriteBatch::new();
        batch.put(key, value);
        self.write(&batch)
    }

    /// Deletes `key`; returns the write's sequence number.
    pub fn delete(&self, key: &[u8]) -> Result<SeqNo, EngineError> {
        let mut batch = WriteBatch::new();
        batch.delete(key);
        self.write(&batch)
    }

    /// Applies `batch` atomically; returns the sequence number of its last
    /// operation (an empty batch writes nothing and returns the last
    /// sequence number in use).
    pub fn write(&self, batch: &WriteBatch) -> Result<SeqNo, EngineError> {
        self.inner.write(batch)
    }

    /// Whether a write now would wait for the background threads to flush
    /// or compact (a write stall): a caller that must not block, such as a
    /// raft thread that has heartbeats to send, can hold its writes back
    /// and ask again later. Asking wakes the background threads.
    pub fn write_would_wait(&self) -> bool {
        self.inner.write_would_wait()
    }

    /// Why the background work is behind, if it is: L0 has reached the
    /// slowdown trigger or every frozen memtable slot is taken, the states
    /// that come before writers must stop. A server can refuse new writes
    /// meanwhile, rather than take writes it cannot finish in time.
    pub fn background_behind(&self) -> Option<String> {
        self.inner.background_behind()
    }

    /// The current value of `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        self.inner.get(key)
    }

    /// Up to `limit` pairs with keys in `(start, end)`, ascending.
    pub fn scan(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
    ) -> Result<Vec<KvPair>, EngineError> {
        self.inner.scan(start, end, limit, usize::MAX)
    }

    /// Up to `limit` pairs with keys in `(start, end)`, ascending, ending
    /// with the pair that brings the bytes of the keys and values returned
    /// to `max_bytes` or past it (so at least one pair when any is in the
    /// range). For callers that copy a range in pieces whose values may be
    /// large: a count of keys alone does not bound what a piece weighs.
    pub fn scan_bytes(
        &self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        limit: usize,
        max_bytes: usize,
    ) -> Result<Vec<KvPair>, EngineError> {
        self.inner.scan(start, end, limit, max_bytes)
    }

    /// Up to `limit` pairs whose keys start with `prefix`, ascending.
    pub fn scan_prefix(&self, prefix: &[u8], limit: usize) -> Result<Vec<KvPair>, EngineError> {
        self.read_point().scan_prefix(prefix, limit)
    }

    /// A consistent read view at the newest visible write; it stays fixed
    /// while later writes, flushes and compactions go on.
    pub fn read_point(&self) -> ReadPoint {
        ReadPoint::new(&self.inner)
    }

    /// Subscribes to flush, compaction and stall events. The channel holds
    /// up to `capacity` events; when it is full, new events for this
    /// subscriber are dropped (counted in `EngineStats::events_dropped`):
    /// the engine never waits for a subscriber. Drop the receiver to
    /// unsubscribe.
    pub fn subscribe(&self, capacity: usize) -> std::sync::mpsc::Receiver<EngineEvent> {
        self.inner.events.subscribe(capacity)
    }

    /// Writes the memtable to a table; durable when it returns.
    pub fn flush(&self) -> Result<(), EngineError> {
        self.inner.flush()
    }

    /// Flushes, then merges all of L0 into L1 and waits for it.
    pub fn compact(&self) -> Result<(), EngineError> {
        self.inner.flush()?;
        self.inner.compact_l0()
    }

    /// Makes every acknowledged write durable (a no-op without a WAL).
    pub fn sync_wal(&self) -> Result<(), EngineError> {
        self.inner.sync_wal()
    }

    /// Writes a consistent, openable copy of the engine into `dir`, which
    /// must be absent or empty. Tables are hard-linked.
    pub fn checkpoint(&self, dir: &Path) -> Result<(), EngineError> {
        self.inner.checkpoint(dir)
    }

    /// `Err(NoSpace)` or `Err(Poisoned)` once a write or fsync has failed.
    pub fn health(&self) -> Result<(), EngineError> {
        self.inner.health()
    }

    /// Sizes and counters.
    pub fn stats(&self) -> EngineStats {
        self.inner.stats()
    }

    /// The options it was opened with (its limits: memtable size, when
    /// level 0 slows and stops writers).
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// Syncs the WAL and stops the background threads.
    pub fn close(mut self) -> Result<(), EngineError> {
        let synced = self.inner.sync_wal();
        self.stop_worker();
        synced
    }

    fn stop_worker(&mut self) {
        self.inner.bg.lock().shutdown = true;
        self.inner.bg_wake.notify_all();
        for worker in self.workers.drain(..) {
            // A panicking worker has already poisoned nothing we can fix
            // here; the panic is surfaced by the thread's own message.
            let _ = worker.join();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop_worker();
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
    }
}
