//! Checkpoints: a consistent, openable copy of the engine in another
//! directory, sharing table files through hard links.

use std::path::Path;

use super::Inner;
use crate::error::{EngineError, Result};
use crate::filename::table_path;
use crate::fs::FileSystem;
use crate::manifest::ManifestWriter;

impl Inner {
    pub(crate) fn checkpoint(&self, target: &Path) -> Result<()> {
        let not_empty = self
            .fs
            .exists(target)
            .map_err(|e| EngineError::io("checking the checkpoint directory", e))?
            && !self
                .fs
                .list_dir(target)
                .map_err(|e| EngineError::io("listing the checkpoint directory", e))?
                .is_empty();
        if not_empty {
            return Err(EngineError::InvalidArgument(format!(
                "checkpoint directory {} is not empty",
                target.display()
            )));
        }
        // Everything acknowledged so far goes into tables first.
        self.flush()?;
        self.fs
            .create_dir_durable(target)
            .map_err(|e| EngineError::io(format!("creating {}", target.display()), e))?;
        // Holding the version set keeps the layout fixed while linking;
        // compaction deletes files only after installing a newer layout.
        let vs = self.versions.lock();
        for number in vs.version.file_numbers() {
            link_or_copy(
                self.fs.as_ref(),
                &table_path(&self.dir, number),
                &table_path(target, number),
            )?;
        }
        self.fs
            .sync_dir(target)
            .map_err(|e| EngineError::io("syncing the checkpoint directory", e))?;
        let mut state = vs.state.clone();
        drop(vs);
        let manifest_number = state.next_file_number;
        state.next_file_number += 1;
        // The checkpoint has no WAL: every number from here on is free.
        state.log_number = state.next_file_number;
        ManifestWriter::create(&self.fs, target, manifest_number, &state.snapshot_edit())?;
        Ok(())
    }
}

/// Hard-links `from` to `to`, copying when linking is impossible (for
/// example across file systems).
pub(crate) fn link_or_copy(fs: &dyn FileSystem, from: &Path, to: &Path) -> Result<()> {
    if fs.hard_link(from, to).is_ok() {
        return Ok(());
    }
    let context = || format!("copying {} to {}", from.display(), to.display());
    let bytes = fs
        .read_all(from)
        .map_err(|e| EngineError::io(context(), e))?;
    let file = fs.create(to).map_err(|e| EngineError::io(context(), e))?;
    file.append(&bytes)
        .map_err(|e| EngineError::io(context(), e))?;
    file.sync().map_err(|e| EngineError::io(context(), e))
}
