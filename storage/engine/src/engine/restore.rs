//! Restoring a checkpoint into an engine directory: how a raft follower
//! installs a snapshot it received.
//!
//! A checkpoint is a complete engine directory (tables, a manifest,
//! `CURRENT`; no WAL), so `Engine::open` on it works as is. Restoring
//! replaces the contents of an existing, closed engine directory with one.

use std::path::Path;
use std::sync::Arc;

use super::Engine;
use crate::error::{EngineError, Result};
use crate::filename::{CURRENT, LOCK, current_temp_path};
use crate::fs::{FileSystem, StdFs};

impl Engine {
    /// Replaces the engine in `dir` (closed; created if absent) with the
    /// checkpoint in `checkpoint_dir`, on the real file system.
    pub fn restore_checkpoint(checkpoint_dir: &Path, dir: &Path) -> Result<()> {
        restore_checkpoint_with_fs(Arc::new(StdFs), checkpoint_dir, dir)
    }

    /// [`Engine::restore_checkpoint`] on `fs`.
    pub fn restore_checkpoint_with_fs(
        fs: Arc<dyn FileSystem>,
        checkpoint_dir: &Path,
        dir: &Path,
    ) -> Result<()> {
        restore_checkpoint_with_fs(fs, checkpoint_dir, dir)
    }
}

/// Crash safety: `CURRENT` goes first and comes back last. A crash before
/// the final rename leaves a directory without `CURRENT`, which opens as an
/// empty engine (open deletes the leftover files), so the caller simply
/// restores again; it never leaves a mix of old and new state.
fn restore_checkpoint_with_fs(
    fs: Arc<dyn FileSystem>,
    checkpoint_dir: &Path,
    dir: &Path,
) -> Result<()> {
    let io = |what: &str, e: std::io::Error| EngineError::io(what.to_string(), e);
    let source = fs
        .list_dir(checkpoint_dir)
        .map_err(|e| io("listing the checkpoint", e))?;
    if !source.iter().any(|n| n == CURRENT) {
        return Err(EngineError::InvalidArgument(format!(
            "{} is not a checkpoint: it has no {CURRENT}",
            checkpoint_dir.display()
        )));
    }
    fs.create_dir_all(dir)
        .map_err(|e| io("creating the engine directory", e))?;
    // Fails while an engine has the directory open.
    let _lock = fs
        .lock(&dir.join(LOCK))
        .map_err(|e| io("locking the engine directory", e))?;
    let current = dir.join(CURRENT);
    if fs.exists(&current).map_err(|e| io("checking CURRENT", e))? {
        fs.remove_file(&current)
            .map_err(|e| io("removing CURRENT", e))?;
        fs.sync_dir(dir)
            .map_err(|e| io("syncing the directory", e))?;
    }
    for name in fs
        .list_dir(dir)
        .map_err(|e| io("listing the directory", e))?
    {
        if name != LOCK {
            fs.remove_file(&dir.join(&name))
                .map_err(|e| io("removing an old engine file", e))?;
        }
    }
    for name in source.iter().filter(|n| *n != CURRENT && *n != LOCK) {
        let to = dir.join(name);
        super::checkpoint::link_or_copy(fs.as_ref(), &checkpoint_dir.join(name), &to)?;
    }
    fs.sync_dir(dir)
        .map_err(|e| io("syncing the directory", e))?;
    let tmp = current_temp_path(dir);
    let bytes = fs
        .read_all(&checkpoint_dir.join(CURRENT))
        .map_err(|e| io("reading the checkpoint's CURRENT", e))?;
    let file = fs.create(&tmp).map_err(|e| io("creating CURRENT.tmp", e))?;
    file.append(&bytes)
        .and_then(|()| file.sync())
        .map_err(|e| io("writing CURRENT.tmp", e))?;
    fs.rename(&tmp, &current)
        .map_err(|e| io("installing CURRENT", e))?;
    fs.sync_dir(dir)
        .map_err(|e| io("syncing the directory", e))?;
    Ok(())
}
