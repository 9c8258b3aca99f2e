//! Snapshots on disk.
//!
//! An outgoing snapshot is an engine checkpoint in `<root>/out-<n>` with its
//! [`Manifest`], built off the raft thread (`worker`); raft's
//! `Snapshot.data` carries only its name. A transfer pins the checkpoint it
//! reads, so that a newer one does not prune it mid-stream. An incoming one
//! is staged by the transport in `<root>/in-<index>-<term>`, verified
//! against its manifest before raft sees the message, and installed from
//! there. Each transfer writes its own `.partial-<n>` copy; a verified
//! staged copy is never replaced, so a snapshot sent twice (or by two
//! transfers at once) cannot pull the files from under an install.

mod manifest;
mod worker;

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

pub use manifest::{MANIFEST_FILE, Manifest, ManifestError, ManifestFile};
#[cfg(test)]
pub(crate) use worker::seal;
pub(crate) use worker::{Job, JobDone, spawn_worker};

/// Where a peer keeps its snapshots. Shared with the transport.
#[derive(Debug, Clone)]
pub struct SnapshotDirs {
    root: PathBuf,
    next: Arc<AtomicU64>,
    outgoing: Arc<Mutex<Outgoing>>,
    /// Held while a transfer's copy becomes the staged one.
    staging: Arc<Mutex<()>>,
    /// Why the last incoming transfer was refused for a reason that lasts
    /// (no space, over the size limit), until one is staged (see
    /// [`SnapshotDirs::staging_refused`]).
    staging_refused: Arc<Mutex<Option<String>>>,
}

/// Which outgoing checkpoints transfers are reading, and which one raft
/// offers now; the others are removed once no transfer reads them.
#[derive(Debug, Default)]
struct Outgoing {
    readers: HashMap<String, usize>,
    current: Option<String>,
}

/// An outgoing checkpoint held for a transfer: it stays on disk until this
/// is dropped.
#[derive(Debug)]
pub struct OutgoingPin {
    dirs: SnapshotDirs,
    name: String,
    dir: PathBuf,
}

impl OutgoingPin {
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for OutgoingPin {
    fn drop(&mut self) {
        let mut out = self.dirs.outgoing.lock();
        let count = out
            .readers
            .get_mut(&self.name)
            .expect("a pinned checkpoint has readers");
        *count -= 1;
        if *count == 0 {
            out.readers.remove(&self.name);
            if out.current.as_deref() != Some(self.name.as_str()) {
                let _ = fs::remove_dir_all(&self.dir);
            }
        }
    }
}

impl SnapshotDirs {
    /// Uses (and creates) `root`; leftovers of earlier runs are removed,
    /// except incoming snapshots an interrupted install may still need.
    pub fn new(root: PathBuf) -> io::Result<Self> {
        fs::create_dir_all(&root)?;
        for entry in fs::read_dir(&root)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("out-") || name.contains(".partial") {
                fs::remove_dir_all(entry.path())?;
            }
        }
        Ok(SnapshotDirs {
            root,
            next: Arc::new(AtomicU64::new(1)),
            outgoing: Arc::default(),
            staging: Arc::default(),
            staging_refused: Arc::default(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn new_outgoing_name(&self) -> String {
        format!("out-{}", self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// The directory of an outgoing snapshot by the name in `Snapshot.data`;
    /// `None` for a name that is not one of ours.
    pub fn outgoing(&self, name: &str) -> Option<PathBuf> {
        let ok = name
            .strip_prefix("out-")
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
        ok.then(|| self.root.join(name))
    }

    /// Holds the outgoing checkpoint `name` for a transfer that reads it;
    /// `None` when it is not one of ours or is already gone.
    pub fn pin_outgoing(&self, name: &str) -> Option<OutgoingPin> {
        let dir = self.outgoing(name)?;
        let mut out = self.outgoing.lock();
        if !dir.join(MANIFEST_FILE).is_file() {
            return None;
        }
        *out.readers.entry(name.to_string()).or_insert(0) += 1;
        Some(OutgoingPin {
            dirs: self.clone(),
            name: name.to_string(),
            dir,
        })
    }

    /// Where the snapshot at `index`/`term` is staged when received.
    pub fn incoming(&self, index: u64, term: u64) -> PathBuf {
        self.root.join(format!("in-{index}-{term}"))
    }

    /// A fresh directory name for one transfer's partial copy of the
    /// snapshot at `index`/`term`: each transfer writes its own.
    pub fn partial_incoming(&self, index: u64, term: u64) -> PathBuf {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.root.join(format!("in-{index}-{term}.partial-{n}"))
    }

    /// Makes `copy` (a whole, verified partial copy) the staged snapshot
    /// for `index`/`term`, unless a verified one is staged already: that
    /// one stays (an install may be reading it) and `copy` is removed. An
    /// unverified leftover in its place is replaced. Returns whether `copy`
    /// was used.
    pub fn publish_incoming(&self, copy: &Path, index: u64, term: u64) -> io::Result<bool> {
        let _one_at_a_time = self.staging.lock();
        let dir = self.incoming(index, term);
        if self.verified_incoming(index, term).is_some() {
            fs::remove_dir_all(copy)?;
            return Ok(false);
        }
        match fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        fs::rename(copy, &dir)?;
        fs::File::open(&self.root)?.sync_all()?;
        Ok(true)
    }

    /// Records how the last incoming transfer ended: refused for a reason
    /// that lasts until an operator acts (`Some`, why), or staged (`None`).
    pub fn note_staging(&self, refused: Option<String>) {
        *self.staging_refused.lock() = refused;
    }

    /// Why this node could not stage the last snapshot it was sent, if the
    /// reason lasts (its disk is full, or the snapshot is over its size
    /// limit) and none was staged since: the node cannot catch up until an
    /// operator acts, and says so (`/health/ready`).
    pub fn staging_refused(&self) -> Option<String> {
        self.staging_refused.lock().clone()
    }

    /// The manifest of the snapshot staged for `index`/`term`, if the
    /// transport received and verified all of it (it stores the manifest
    /// last); `None` otherwise.
    pub fn verified_incoming(&self, index: u64, term: u64) -> Option<Manifest> {
        let dir = self.incoming(index, term);
        Manifest::read(&dir)
            .ok()
            .flatten()
            .filter(|m| m.index == index)
    }

    /// Removes every staged incoming snapshot. Called at start once an
    /// interrupted install (the only reader of one) has been finished.
    pub fn remove_incoming(&self) {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with("in-") {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }

    /// Removes staged incoming snapshots at or below index `applied`: raft
    /// never installs a snapshot the node has already applied past, so they
    /// would otherwise sit on disk until the next start.
    pub fn prune_incoming(&self, applied: u64) {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let index = name
                .to_string_lossy()
                .strip_prefix("in-")
                .and_then(|rest| rest.split('-').next()?.parse::<u64>().ok());
            if index.is_some_and(|i| i <= applied) {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }

    /// Makes `keep` the checkpoint raft offers (`""`: none) and removes the
    /// other outgoing ones, except those a transfer still reads: the last
    /// reader removes them when it ends.
    pub fn prune_outgoing(&self, keep: &str) {
        let mut out = self.outgoing.lock();
        out.current = (!keep.is_empty()).then(|| keep.to_string());
        let Ok(entries) = fs::read_dir(&self.root) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("out-") && name != keep && !out.readers.contains_key(&*name) {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// Every regular file under `dir`, as paths relative to it, in a stable
/// order: what a snapshot's checkpoint directory holds, for sending it.
pub fn list_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in fs::read_dir(dir.join(&rel))? {
            let entry = entry?;
            let path = rel.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_staged_snapshots_are_pruned_and_newer_ones_kept() {
        let root = tempfile::tempdir().unwrap();
        let dirs = SnapshotDirs::new(root.path().join("snap")).unwrap();
        for (index, term) in [(10, 2), (20, 3), (30, 3)] {
            fs::create_dir_all(dirs.incoming(index, term)).unwrap();
        }
        fs::create_dir_all(dirs.root().join("out-20")).unwrap();
        dirs.prune_incoming(20);
        assert!(!dirs.incoming(10, 2).exists());
        assert!(!dirs.incoming(20, 3).exists());
        assert!(dirs.incoming(30, 3).exists(), "not applied yet: kept");
        assert!(dirs.root().join("out-20").exists(), "outgoing untouched");
    }

    fn outgoing_checkpoint(dirs: &SnapshotDirs) -> String {
        let name = dirs.new_outgoing_name();
        let dir = dirs.outgoing(&name).unwrap();
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("000001.sst"), b"table").unwrap();
        Manifest::build(&dir, 9, 1).unwrap().write(&dir).unwrap();
        name
    }

    #[test]
    fn a_checkpoint_being_sent_outlives_a_newer_one() {
        // Proves: building a newer snapshot does not remove the checkpoint
        // a transfer is reading; the transfer's end does, unless raft still
        // offers it. A pruned checkpoint cannot be pinned.
        let root = tempfile::tempdir().unwrap();
        let dirs = SnapshotDirs::new(root.path().join("snap")).unwrap();
        let first = outgoing_checkpoint(&dirs);
        dirs.prune_outgoing(&first);
        let pin = dirs
            .pin_outgoing(&first)
            .expect("the current checkpoint pins");
        let second = outgoing_checkpoint(&dirs);
        dirs.prune_outgoing(&second);
        assert!(
            pin.dir().join("000001.sst").is_file(),
            "pruned while being sent"
        );
        drop(pin);
        assert!(!dirs.outgoing(&first).unwrap().exists(), "left behind");
        assert!(dirs.pin_outgoing(&first).is_none());

        let pin = dirs.pin_outgoing(&second).unwrap();
        drop(pin);
        assert!(
            dirs.outgoing(&second).unwrap().exists(),
            "still offered: kept"
        );
    }
}
