//! The snapshot thread, simulated: the jobs a driver queues are run by the
//! simulation itself at a step boundary, each after a seeded delay and in
//! queue order (like the one real worker thread), so a run never depends
//! on thread timing.
//!
//! A build is `StateMachine::checkpoint` with one hop more: the simulated
//! engine lives on an in-memory file system, so its checkpoint is copied
//! out to the real outgoing snapshot directory, where the transport and
//! the receiver's install read it as they do in a real node.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use crossbeam_channel::Receiver;
use rand::Rng;
use rand::rngs::StdRng;
use strata_engine::{Engine, FaultFs, FileSystem, Options};

use super::node::GROUP;
use crate::mailbox::Shared;
use crate::snapshot::{Job, JobDone, SnapshotDirs, seal};
use crate::state_machine::{SnapshotInfo, StateMachine};

/// The longest a job takes, in simulated milliseconds.
const MAX_JOB_MS: u64 = 6;

/// Where a checkpoint is written inside the engine's file system before it
/// is copied out.
const SCRATCH: &str = "/checkpoint";

pub struct Worker {
    jobs: Receiver<Job>,
    /// Jobs taken from the driver, with the millisecond they finish at.
    queued: VecDeque<(u64, Job)>,
    next_name: u64,
}

impl Worker {
    pub fn new(jobs: Receiver<Job>) -> Self {
        Worker {
            jobs,
            queued: VecDeque::new(),
            next_name: 0,
        }
    }

    /// Takes newly queued jobs and runs those that finish by `now`; the
    /// caller hands the results to the driver.
    pub fn run_due(
        &mut self,
        rng: &mut StdRng,
        now: u64,
        fs: &FaultFs,
        shared: &Shared,
    ) -> Vec<JobDone> {
        while let Ok(job) = self.jobs.try_recv() {
            let after = self.queued.back().map_or(now, |(at, _)| *at);
            let at = after.max(now + rng.random_range(0..=MAX_JOB_MS));
            self.queued.push_back((at, job));
        }
        let mut done = Vec::new();
        while self.queued.front().is_some_and(|(at, _)| *at <= now) {
            let Some((_, job)) = self.queued.pop_front() else {
                break;
            };
            done.push(match job {
                Job::Build => self.build(fs, &shared.state_machine, &shared.snapshot_dirs),
                Job::Durable { index } => JobDone::Durable {
                    index,
                    result: shared.state_machine.make_durable(),
                },
            });
        }
        done
    }

    fn build(&mut self, fs: &FaultFs, sm: &StateMachine, dirs: &SnapshotDirs) -> JobDone {
        self.next_name += 1;
        let name = format!("out-{}", self.next_name);
        let dir = dirs
            .outgoing(&name)
            .expect("the name of an outgoing snapshot");
        let result = checkpoint(fs, sm, &dir);
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        JobDone::Built { name, result }
    }
}

/// Checkpoints the engine into `dir` on the real file system and says what
/// the copy holds, read back from the copy as `StateMachine::checkpoint`
/// does.
fn checkpoint(fs: &FaultFs, sm: &StateMachine, dir: &Path) -> Result<SnapshotInfo, String> {
    let scratch = Path::new(SCRATCH);
    // A failed build may have left files behind; a checkpoint needs an
    // empty directory.
    for name in fs.list_dir(scratch).unwrap_or_default() {
        let _ = fs.remove_file(&scratch.join(name));
    }
    sm.engine()
        .checkpoint(scratch)
        .map_err(|e| format!("checkpoint: {e}"))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    for name in fs.list_dir(scratch).map_err(|e| e.to_string())? {
        let from = scratch.join(&name);
        let bytes = fs.read_all(&from).map_err(|e| e.to_string())?;
        std::fs::write(dir.join(&name), bytes).map_err(|e| format!("copying {name}: {e}"))?;
        fs.remove_file(&from).map_err(|e| e.to_string())?;
    }
    let copy = Engine::open(dir, Options::default()).map_err(|e| e.to_string())?;
    let view = StateMachine::new(Arc::new(copy), GROUP);
    let info = view.describe().map_err(|e| e.to_string())?;
    drop(view);
    seal(dir, info)
}
