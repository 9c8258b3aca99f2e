//! Opening an engine directory: manifest replay, WAL replay, and a fresh
//! manifest.
//!
//! Recovery flushes whatever the WAL held into an L0 table and starts a new
//! WAL segment and a new manifest. Afterwards no old segment is needed, so
//! "only the newest segment may have a torn tail" stays true across any
//! number of crashes.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use parking_lot::{Condvar, Mutex, RwLock};

use super::background::write_memtable_table;
use super::{BgState, Inner, ReadView, SyncState, VersionSet, WalTail, WriteState};
use crate::batch::decode_batch;
use crate::error::{EngineError, Result};
use crate::filename::{FileKind, LOCK, parse_file_name, wal_path};
use crate::fs::FileSystem;
use crate::key::SeqNo;
use crate::log::{LogWriter, read_log};
use crate::manifest::{ManifestState, ManifestWriter, VersionEdit, read_current, replay};
use crate::memtable::MemtableWriter;
use crate::options::{Options, WalMode};
use crate::sstable::BlockCache;
use crate::version::Version;

pub(crate) fn recover(fs: Arc<dyn FileSystem>, dir: &Path, opts: Options) -> Result<Inner> {
    opts.validate()?;
    let dir = dir.to_path_buf();
    // Durable in its parent too: a new engine directory whose entry is lost
    // at a crash takes every synced file in it along.
    fs.create_dir_durable(&dir)
        .map_err(|e| EngineError::io(format!("creating {}", dir.display()), e))?;
    let lock = fs
        .lock(&dir.join(LOCK))
        .map_err(|e| EngineError::io(format!("locking {}", dir.display()), e))?;
    let names = fs
        .list_dir(&dir)
        .map_err(|e| EngineError::io(format!("listing {}", dir.display()), e))?;
    let files: Vec<(String, FileKind)> = names
        .into_iter()
        .filter_map(|n| parse_file_name(&n).map(|k| (n, k)))
        .collect();

    let mut state = match read_current(fs.as_ref(), &dir)? {
        Some(number) => replay(fs.as_ref(), &dir, number)?,
        None => {
            if files
                .iter()
                .any(|(_, k)| matches!(k, FileKind::Manifest(_) | FileKind::Table(_)))
            {
                return Err(EngineError::corruption(format!(
                    "{} has tables or manifests but no CURRENT",
                    dir.display()
                )));
            }
            ManifestState::default()
        }
    };
    let highest_seen = files
        .iter()
        .filter_map(|(_, k)| match k {
            FileKind::Wal(n) | FileKind::Table(n) | FileKind::Manifest(n) => Some(*n),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let next_file_number = AtomicU64::new(state.next_file_number.max(highest_seen + 1));
    let block_cache =
        (opts.block_cache_bytes > 0).then(|| Arc::new(BlockCache::new(opts.block_cache_bytes)));
    let version = Version::default().apply(&state.snapshot_edit(), |meta| {
        super::background::open_table(fs.as_ref(), &dir, meta.number, block_cache.as_ref())
    })?;

    // Replay every WAL segment the manifest still needs, oldest first.
    let mut wals: Vec<u64> = files
        .iter()
        .filter_map(|(_, k)| match k {
            FileKind::Wal(n) if *n >= state.log_number => Some(*n),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    let mut recovered = MemtableWriter::new(0, opts.arena_block_size_bytes());
    let mut last_seq = state.last_seq;
    for (i, &number) in wals.iter().enumerate() {
        let newest = i + 1 == wals.len();
        last_seq = replay_wal(fs.as_ref(), &dir, number, newest, last_seq, &mut recovered)?;
    }

    let mut edit = VersionEdit::default();
    let mut version = version;
    if !recovered.is_empty() {
        let number = next_file_number.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        let (meta, table) = write_memtable_table(
            fs.as_ref(),
            &dir,
            &opts,
            recovered.memtable(),
            number,
            block_cache.as_ref(),
        )?;
        edit.new_files.push((0, meta));
        version = version.apply(&edit, |_| Ok(Arc::clone(&table)))?;
    }
    let wal_number = next_file_number.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    let wal = match opts.wal {
        WalMode::Disabled => None,
        WalMode::Sync | WalMode::NoSync => {
            let path = wal_path(&dir, wal_number);
            let file = fs
                .create(&path)
                .map_err(|e| EngineError::io(format!("creating {}", path.display()), e))?;
            Some(LogWriter::new(file))
        }
    };
    let manifest_number = next_file_number.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    edit.log_number = Some(wal_number);
    edit.last_seq = Some(last_seq);
    edit.next_file_number = Some(next_file_number.load(std::sync::atomic::Ordering::Acquire));
    state.apply(&edit).map_err(EngineError::corruption)?;
    // Creating the manifest syncs the directory, which also makes the new
    // table and WAL segment entries durable.
    let manifest = ManifestWriter::create(&fs, &dir, manifest_number, &state.snapshot_edit())?;

    remove_obsolete_files(
        fs.as_ref(),
        &dir,
        &files,
        &version,
        wal_number,
        manifest_number,
    );

    let version = Arc::new(version);
    let mem = MemtableWriter::new(wal_number, opts.arena_block_size_bytes());
    let view = ReadView {
        mem: Arc::clone(mem.memtable()),
        imms: Vec::new(),
        version: Arc::clone(&version),
    };
    let wal_tail = wal.as_ref().map(|w| WalTail {
        file: Arc::clone(w.file()),
        number: wal_number,
        end: 0,
        last_seq,
    });
    Ok(Inner {
        fs,
        dir,
        opts,
        _lock: lock,
        write: Mutex::new(WriteState {
            mem,
            wal,
            wal_number,
            last_seq,
            scratch: Vec::new(),
        }),
        stall: Condvar::new(),
        wal_sync: Mutex::new(SyncState {
            synced: (wal_number, 0),
        }),
        wal_tail: Mutex::new(wal_tail),
        visible_seq: AtomicU64::new(last_seq),
        view: RwLock::new(Arc::new(view)),
        versions: Mutex::new(VersionSet {
            manifest,
            state,
            version,
        }),
        next_file_number,
        poisoned: AtomicBool::new(false),
        read_points: Default::default(),
        events: Default::default(),
        counters: Default::default(),
        block_cache,
        poison_cause: Mutex::new(None),
        bg: Mutex::new(BgState::default()),
        bg_wake: Condvar::new(),
        bg_done: Condvar::new(),
        flush_count: Default::default(),
        compaction_count: Default::default(),
    })
}

/// Replays one WAL segment into `mem`; returns the last sequence number.
/// Only the newest segment may end in a torn record.
fn replay_wal(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    newest: bool,
    mut last_seq: SeqNo,
    mem: &mut MemtableWriter,
) -> Result<SeqNo> {
    let path = wal_path(dir, number);
    let name = path.display().to_string();
    let bytes = fs
        .read_all(&path)
        .map_err(|e| EngineError::io(format!("reading {name}"), e))?;
    read_log(&bytes, newest, &name, |payload| {
        let (first, count, ops) =
            decode_batch(payload).map_err(|e| EngineError::corruption(format!("{name}: {e}")))?;
        if first <= last_seq {
            return Err(EngineError::corruption(format!(
                "{name}: batch starts at sequence {first}, not after {last_seq}"
            )));
        }
        let mut applied = 0u64;
        for op in ops {
            let op = op.map_err(|e| EngineError::corruption(format!("{name}: {e}")))?;
            mem.add(first + applied, op.kind, op.key, op.value);
            applied += 1;
        }
        if applied != u64::from(count) || count == 0 {
            return Err(EngineError::corruption(format!(
                "{name}: batch holds {applied} of {count} operations"
            )));
        }
        last_seq = first + applied - 1;
        Ok(())
    })?;
    Ok(last_seq)
}

/// Deletes files no longer referenced. Failures are ignored: a leftover file
/// is only wasted space and is retried at the next open.
fn remove_obsolete_files(
    fs: &dyn FileSystem,
    dir: &Path,
    files: &[(String, FileKind)],
    version: &Version,
    wal_number: u64,
    manifest_number: u64,
) {
    let live: std::collections::HashSet<u64> = version.file_numbers().collect();
    for (name, kind) in files {
        let obsolete = match kind {
            FileKind::Wal(n) => *n < wal_number,
            FileKind::Table(n) => !live.contains(n),
            FileKind::Manifest(n) => *n != manifest_number,
            FileKind::Temp => true,
            FileKind::Current | FileKind::Lock => false,
        };
        if obsolete {
            let _ = fs.remove_file(&dir.join(name));
        }
    }
}
