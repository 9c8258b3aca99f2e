//! The snapshot thread: builds outgoing snapshots (an engine checkpoint and
//! its manifest) and makes applied state durable before the log is
//! compacted, both off the raft thread.

use std::fs;
use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::Receiver;

use super::SnapshotDirs;
use super::manifest::Manifest;
use crate::fail_stop::fail_stop;
use crate::state_machine::{SnapshotInfo, StateMachine};

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
                let result = state_machine
                    .checkpoint(&dir)
                    .map_err(|e| e.to_string())
                    .and_then(|info| seal(&dir, info));
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

/// Writes the manifest of the checkpoint just built in `dir`, once nothing
/// will change its files any more; the sender reads it from there.
pub(crate) fn seal(dir: &std::path::Path, info: SnapshotInfo) -> Result<SnapshotInfo, String> {
    Manifest::build(dir, info.index, info.keys)
        .and_then(|m| m.write(dir))
        .map_err(|e| format!("writing the manifest of {}: {e}", dir.display()))?;
    Ok(info)
}
