//! The background threads: one flushes frozen memtables, the other runs
//! compactions. Apart, a long compaction (an L0 to L1 merge of hundreds of
//! MiB takes seconds) never holds up a flush, so writers stop only when L0
//! itself is too deep, not because the memtables could not be written out
//! behind it. Manifest edits are serialised by the version set's lock.
//! Any failure poisons the engine; the threads then idle until shutdown.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{BgState, Frozen, Inner, ReadView, VersionSet};
use crate::compaction::{CompactionTask, RateLimiter, pick_compaction, write_compaction_outputs};
use crate::error::{EngineError, Result};
use crate::events::EngineEvent;
use crate::filename::{manifest_name, table_path, wal_path};
use crate::fs::FileSystem;
use crate::iter::{InternalIterator, LevelIter, MergeIterator};
use crate::manifest::{ManifestWriter, VersionEdit};
use crate::memtable::Memtable;
use crate::options::{Options, WalMode};
use crate::sstable::{BlockCache, Table, TableBuilder};
use crate::version::{FileMeta, TableFile};

/// How long an idle thread sleeps before re-checking for work.
const IDLE_WAIT: Duration = Duration::from_millis(500);

/// What a background thread does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Work {
    Flush,
    Compaction,
}

impl Work {
    pub(crate) fn thread_name(self) -> &'static str {
        match self {
            Work::Flush => "strata-engine-flush",
            Work::Compaction => "strata-engine-compact",
        }
    }

    /// This thread's wake-up flag.
    fn woken(self, bg: &mut BgState) -> &mut bool {
        match self {
            Work::Flush => &mut bg.wake_flush,
            Work::Compaction => &mut bg.wake_compaction,
        }
    }
}

pub(crate) fn run(inner: &Inner, work: Work) {
    loop {
        if !inner.is_poisoned() {
            let done = match work {
                Work::Flush => flush_step(inner),
                Work::Compaction => compaction_step(inner),
            };
            match done {
                Ok(true) => {
                    if work == Work::Flush {
                        // L0 grew: the compaction thread may have work.
                        inner.bg.lock().wake_compaction = true;
                        inner.bg_wake.notify_all();
                    }
                    inner.bg_done.notify_all();
                    inner.stall.notify_all();
                    if inner.bg.lock().shutdown {
                        return;
                    }
                    continue;
                }
                Ok(false) => {}
                Err(e) => inner.poison(&e),
            }
        }
        let mut bg = inner.bg.lock();
        if bg.shutdown {
            return;
        }
        if !*work.woken(&mut bg) {
            inner.bg_wake.wait_for(&mut bg, IDLE_WAIT);
        }
        *work.woken(&mut bg) = false;
    }
}

/// Flushes the oldest frozen memtable; `Ok(false)` when there is none.
fn flush_step(inner: &Inner) -> Result<bool> {
    let view = inner.read_view();
    match view.imms.first() {
        Some(frozen) => {
            flush_frozen(inner, frozen)?;
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Runs one compaction (the one asked for, if any); `Ok(false)` when none
/// is due.
///
/// The requests are read before the view: a request is answered only by a
/// step whose view holds every table that existed when it was made (the
/// one its own flush wrote among them). Read the other way round, a step
/// could pick from a view older than the request and answer it without
/// touching those tables.
fn compaction_step(inner: &Inner) -> Result<bool> {
    let asked = {
        let bg = inner.bg.lock();
        (bg.compactions_asked > bg.compactions_answered).then_some(bg.compactions_asked)
    };
    let view = inner.read_view();
    let force = asked.is_some();
    let task = pick_compaction(&view.version.layout(), &inner.opts.level_limits(), force);
    let did_work = match task {
        Some(task) => {
            compact(inner, &view, &task)?;
            true
        }
        None => false,
    };
    if let Some(asked) = asked {
        let mut bg = inner.bg.lock();
        bg.compactions_answered = bg.compactions_answered.max(asked);
        inner.bg_done.notify_all();
    }
    Ok(did_work)
}

/// Writes a memtable into table `number`, fsynced; the caller syncs the
/// directory.
pub(crate) fn write_memtable_table(
    fs: &dyn FileSystem,
    dir: &std::path::Path,
    opts: &Options,
    mem: &Memtable,
    number: u64,
    cache: Option<&Arc<BlockCache>>,
) -> Result<(FileMeta, Arc<Table>)> {
    let path = table_path(dir, number);
    let context = || format!("writing {}", path.display());
    let file = fs
        .create(&path)
        .map_err(|e| EngineError::io(context(), e))?;
    let mut builder = TableBuilder::new(
        file,
        opts.block_size_bytes,
        opts.block_restart_interval,
        opts.bloom_bits_per_key,
    );
    let mut it = mem.iter();
    it.seek_to_first();
    while it.valid() {
        builder
            .add(it.key(), it.value())
            .map_err(|e| EngineError::io(context(), e))?;
        it.next();
    }
    let summary = builder
        .finish()
        .map_err(|e| EngineError::io(context(), e))?;
    let meta = FileMeta {
        number,
        size_bytes: summary.size_bytes,
        smallest: summary.smallest,
        largest: summary.largest,
    };
    let table = open_table(fs, dir, number, cache)?;
    Ok((meta, table))
}

/// Opens table `number`; a missing file is corruption (the manifest names it).
pub(crate) fn open_table(
    fs: &dyn FileSystem,
    dir: &std::path::Path,
    number: u64,
    cache: Option<&Arc<BlockCache>>,
) -> Result<Arc<Table>> {
    let path = table_path(dir, number);
    let file = fs.open(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            EngineError::corruption(format!("table {} is missing", path.display()))
        } else {
            EngineError::io(format!("opening {}", path.display()), e)
        }
    })?;
    let table = Table::open(file, path.display().to_string())?;
    Ok(Arc::new(table.with_cache(cache.cloned(), number)))
}

fn flush_frozen(inner: &Inner, frozen: &Arc<Frozen>) -> Result<()> {
    let started = Instant::now();
    inner.events.publish(EngineEvent::FlushStarted {
        memtable_bytes: frozen.mem.memory_usage_bytes() as u64,
    });
    let number = inner.next_file_number.fetch_add(1, Ordering::AcqRel);
    let (meta, table) = write_memtable_table(
        inner.fs.as_ref(),
        &inner.dir,
        &inner.opts,
        &frozen.mem,
        number,
        inner.block_cache.as_ref(),
    )?;
    inner
        .fs
        .sync_dir(&inner.dir)
        .map_err(|e| EngineError::io("syncing the directory after a flush", e))?;
    let bytes_out = meta.size_bytes;
    let edit = VersionEdit {
        log_number: Some(frozen.next_log_number),
        next_file_number: Some(inner.next_file_number.load(Ordering::Acquire)),
        last_seq: Some(frozen.last_seq),
        new_files: vec![(0, meta)],
        ..VersionEdit::default()
    };
    let mut vs = inner.versions.lock();
    log_and_apply(
        inner,
        &mut vs,
        &edit,
        HashMap::from([(number, table)]),
        |view| {
            let first = view.imms.remove(0);
            assert!(
                Arc::ptr_eq(&first, frozen),
                "frozen memtables must be flushed in order"
            );
        },
    )?;
    drop(vs);
    inner.flush_count.fetch_add(1, Ordering::Relaxed);
    inner
        .counters
        .flush_bytes_written
        .fetch_add(bytes_out, Ordering::Relaxed);
    let duration = started.elapsed();
    inner
        .counters
        .flush_micros
        .fetch_add(duration.as_micros() as u64, Ordering::Relaxed);
    inner.events.publish(EngineEvent::FlushFinished {
        table_number: number,
        bytes_out,
        duration,
    });
    if inner.opts.wal != WalMode::Disabled {
        // Best effort: a leftover segment below the log number is deleted
        // at the next open.
        let _ = inner
            .fs
            .remove_file(&wal_path(&inner.dir, frozen.mem.wal_number()));
    }
    Ok(())
}

fn compact(inner: &Inner, view: &ReadView, task: &CompactionTask) -> Result<()> {
    let find = |level: usize, metas: &[FileMeta]| -> Vec<Arc<TableFile>> {
        view.version.levels[level]
            .iter()
            .filter(|f| metas.iter().any(|m| m.number == f.meta.number))
            .cloned()
            .collect()
    };
    let started = Instant::now();
    let inputs = find(task.level, &task.inputs);
    let next_inputs = find(task.output_level(), &task.next_inputs);
    let files_in = inputs.len() + next_inputs.len();
    let bytes_in: u64 = inputs
        .iter()
        .chain(&next_inputs)
        .map(|f| f.meta.size_bytes)
        .sum();
    inner.events.publish(EngineEvent::CompactionStarted {
        level: task.level,
        output_level: task.output_level(),
        files_in,
        bytes_in,
    });
    if task.is_trivial_move() {
        return trivial_move(inner, task, bytes_in, started);
    }
    // Read once at the start: see `read_point.rs` for why a read point taken
    // later cannot need a version this compaction drops.
    let read_points = inner.read_points.sequence_numbers();
    let mut limiter = RateLimiter::new(inner.opts.compaction_rate_limit_bytes_per_sec, started);
    let mut charged = 0u64;
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    if task.level == 0 {
        children.extend(
            inputs
                .iter()
                .map(|f| Box::new(f.table.iter()) as Box<dyn InternalIterator>),
        );
    } else {
        children.push(Box::new(LevelIter::new(inputs.clone())));
    }
    children.push(Box::new(LevelIter::new(next_inputs.clone())));
    let mut merged = MergeIterator::new(children);
    let outputs = write_compaction_outputs(
        &mut merged,
        task.bottommost,
        &read_points,
        &inner.opts,
        || {
            let number = inner.next_file_number.fetch_add(1, Ordering::AcqRel);
            let path = table_path(&inner.dir, number);
            let file = inner
                .fs
                .create(&path)
                .map_err(|e| EngineError::io(format!("creating {}", path.display()), e))?;
            Ok((number, file))
        },
        |written| {
            // Charge in 64 KiB steps to keep clock reads rare.
            if written >= charged + (64 << 10) {
                let pause = limiter.charge(written - charged, Instant::now());
                charged = written;
                if !pause.is_zero() {
                    std::thread::sleep(pause);
                }
            }
        },
    )?;
    let files_out = outputs.len();
    let bytes_out: u64 = outputs.iter().map(|m| m.size_bytes).sum();
    inner
        .fs
        .sync_dir(&inner.dir)
        .map_err(|e| EngineError::io("syncing the directory after a compaction", e))?;
    let mut tables = HashMap::new();
    for meta in &outputs {
        tables.insert(
            meta.number,
            open_table(
                inner.fs.as_ref(),
                &inner.dir,
                meta.number,
                inner.block_cache.as_ref(),
            )?,
        );
    }
    let edit = VersionEdit {
        next_file_number: Some(inner.next_file_number.load(Ordering::Acquire)),
        deleted_files: inputs
            .iter()
            .map(|f| (task.level, f.meta.number))
            .chain(
                next_inputs
                    .iter()
                    .map(|f| (task.output_level(), f.meta.number)),
            )
            .collect(),
        new_files: outputs
            .into_iter()
            .map(|m| (task.output_level(), m))
            .collect(),
        ..VersionEdit::default()
    };
    let mut vs = inner.versions.lock();
    log_and_apply(inner, &mut vs, &edit, tables, |_| {})?;
    drop(vs);
    inner.compaction_count.fetch_add(1, Ordering::Relaxed);
    inner
        .counters
        .compaction_bytes_read
        .fetch_add(bytes_in, Ordering::Relaxed);
    inner
        .counters
        .compaction_bytes_written
        .fetch_add(bytes_out, Ordering::Relaxed);
    let duration = started.elapsed();
    inner
        .counters
        .compaction_micros
        .fetch_add(duration.as_micros() as u64, Ordering::Relaxed);
    inner.events.publish(EngineEvent::CompactionFinished {
        level: task.level,
        output_level: task.output_level(),
        files_in,
        bytes_in,
        files_out,
        bytes_out,
        trivial_move: false,
        duration,
    });
    for (_, number) in &edit.deleted_files {
        // Readers holding an older view keep their open handles; unlinking
        // does not disturb them. Leftovers are collected at the next open.
        let _ = inner.fs.remove_file(&table_path(&inner.dir, *number));
    }
    Ok(())
}

/// Moves the task's single input one level down by a manifest edit.
fn trivial_move(
    inner: &Inner,
    task: &CompactionTask,
    bytes_in: u64,
    started: Instant,
) -> Result<()> {
    let meta = task.inputs[0].clone();
    let edit = VersionEdit {
        deleted_files: vec![(task.level, meta.number)],
        new_files: vec![(task.output_level(), meta)],
        ..VersionEdit::default()
    };
    let mut vs = inner.versions.lock();
    // The table stays open: `log_and_apply` reuses the reader by number.
    let table = vs.version.levels[task.level]
        .iter()
        .find(|f| f.meta.number == task.inputs[0].number)
        .map(|f| (f.meta.number, Arc::clone(&f.table)));
    log_and_apply(inner, &mut vs, &edit, table.into_iter().collect(), |_| {})?;
    drop(vs);
    inner.compaction_count.fetch_add(1, Ordering::Relaxed);
    inner.events.publish(EngineEvent::CompactionFinished {
        level: task.level,
        output_level: task.output_level(),
        files_in: 1,
        bytes_in,
        files_out: 1,
        bytes_out: bytes_in,
        trivial_move: true,
        duration: started.elapsed(),
    });
    Ok(())
}

/// Size above which the manifest is rewritten as a single read point edit.
const MANIFEST_ROTATE_BYTES: u64 = 4 << 20;

/// Starts a new manifest holding the state after `edit` (already appended
/// to the old one), then deletes the old manifest.
fn rotate_manifest(inner: &Inner, vs: &mut VersionSet, edit: &VersionEdit) -> Result<()> {
    let mut state = vs.state.clone();
    if let Err(reason) = state.apply(edit) {
        return inner.fail(EngineError::corruption(format!(
            "manifest edit does not apply: {reason}"
        )));
    }
    let number = inner.next_file_number.fetch_add(1, Ordering::AcqRel);
    state.next_file_number = state
        .next_file_number
        .max(inner.next_file_number.load(Ordering::Acquire));
    let manifest =
        match ManifestWriter::create(&inner.fs, &inner.dir, number, &state.snapshot_edit()) {
            Ok(m) => m,
            Err(e) => return inner.fail(e),
        };
    let old = std::mem::replace(&mut vs.manifest, manifest);
    let _ = inner
        .fs
        .remove_file(&inner.dir.join(manifest_name(old.number())));
    Ok(())
}

/// Makes `edit` durable in the manifest, then installs the new version (and
/// whatever `update_view` changes) for readers. A manifest failure poisons
/// the engine: the in-memory state can no longer be trusted to match disk.
pub(crate) fn log_and_apply(
    inner: &Inner,
    vs: &mut VersionSet,
    edit: &VersionEdit,
    tables: HashMap<u64, Arc<Table>>,
    update_view: impl FnOnce(&mut ReadView),
) -> Result<()> {
    if let Err(e) = vs.manifest.append(edit) {
        return inner.fail(e);
    }
    if vs.manifest.size_bytes() > MANIFEST_ROTATE_BYTES {
        rotate_manifest(inner, vs, edit)?;
    }
    if let Err(reason) = vs.state.apply(edit) {
        return inner.fail(EngineError::corruption(format!(
            "manifest edit does not apply: {reason}"
        )));
    }
    let version = vs
        .version
        .apply(edit, |meta| match tables.get(&meta.number) {
            Some(table) => Ok(Arc::clone(table)),
            None => open_table(
                inner.fs.as_ref(),
                &inner.dir,
                meta.number,
                inner.block_cache.as_ref(),
            ),
        });
    let version = match version {
        Ok(v) => Arc::new(v),
        Err(e) => return inner.fail(e),
    };
    vs.version = Arc::clone(&version);
    let mut view = inner.view.write();
    let mut next = (**view).clone();
    next.version = version;
    update_view(&mut next);
    *view = Arc::new(next);
    Ok(())
}
