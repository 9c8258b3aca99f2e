//! Snapshots on disk, and the thread that makes them.
//!
//! An outgoing snapshot is an engine checkpoint in `<root>/out-<n>`, built
//! off the raft thread; raft's `Snapshot.data` carries only its name. An
//! incoming one is staged by the transport in `<root>/in-<index>-<term>`
//! before raft sees the message, and installed from there.
//!
//! The same thread also makes applied state durable before the raft log is
//! compacted, so the log never drops an entry the engine could still lose.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::Receiver;

use crate::fail_stop::fail_stop;
use crate::state_machine::{SnapshotInfo, StateMachine};

/// Where a peer keeps its snapshots. Shared with the transport.
#[derive(Debug, Clone)]
pub struct SnapshotDirs {
    root: PathBuf,
    next: Arc<AtomicU64>,
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
            if name.starts_with("out-") || name.ends_with(".partial") {
                fs::remove_dir_all(entry.path())?;
            }
        }
        Ok(SnapshotDirs {
            root,
            next: Arc::new(AtomicU64::new(1)),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn new_outgoing_name(&self) -> String {
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

    /// Where the snapshot at `index`/`term` is staged when received.
    pub fn incoming(&self, index: u64, term: u64) -> PathBuf {
        self.root.join(format!("in-{index}-{term}"))
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

    /// Removes outgoing snapshots other than `keep`.
    pub fn prune_outgoing(&self, keep: &str) {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("out-") && name != keep {
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

/// Work for the snapshot thread.
pub(crate) enum Job {
    /// Checkpoint the engine into a new outgoing snapshot.
    Build,
    /// Make everything applied up to `index` durable in the engine.
    Durable { index: u64 },
}

/// What the snapshot thread reports back to the driver.
pub(crate) enum JobDone {
    Built {
        name: String,
        result: Result<SnapshotInfo, String>,
    },
    Durable {
        index: u64,
        result: Result<(), strata_engine::EngineError>,
    },
}

/// Starts the snapshot thread. It ends when `jobs` is closed or `report`
/// says nobody listens any more. The thread knows nothing of the driver's
/// mailbox: `report` hands each finished job back however the caller wants.
pub(crate) fn spawn_worker(
    name: String,
    state_machine: Arc<StateMachine>,
    dirs: SnapshotDirs,
    report: impl Fn(JobDone) -> bool + Send + 'static,
    jobs: Receiver<Job>,
) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name).spawn(move || {
        fail_stop("snapshot", || {
            run_jobs(&state_machine, &dirs, &report, jobs)
        })
    })
}

fn run_jobs(
    state_machine: &StateMachine,
    dirs: &SnapshotDirs,
    report: &dyn Fn(JobDone) -> bool,
    jobs: Receiver<Job>,
) {
    for job in jobs {
        let done = match job {
            Job::Build => {
                let name = dirs.new_outgoing_name();
                let dir = dirs.root.join(&name);
                let result = state_machine.checkpoint(&dir).map_err(|e| e.to_string());
                if result.is_err() {
                    let _ = fs::remove_dir_all(&dir);
                }
                JobDone::Built { name, result }
            }
            Job::Durable { index } => JobDone::Durable {
                index,
                result: state_machine.make_durable(),
            },
        };
        if !report(done) {
            break;
        }
    }
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
}
