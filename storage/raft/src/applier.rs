//! Where committed entries are applied to the engine: [`Applier`], which
//! takes a batch of committed entries at a time, with the proposals waiting
//! for them, reports in order how each batch ended, and then answers the
//! batch's proposals itself: a client's answer costs no wake-up of the
//! raft thread on the way (one thread hand-off less on every write).
//!
//! A peer applies on an [`ApplyThread`], so the raft thread never spends an
//! engine write on itself: decoding a large entry and copying its values
//! into the memtable takes hundreds of milliseconds on a busy machine, and
//! a raft thread doing it sends no heartbeats meanwhile; an engine write
//! stall only holds the apply thread. The driver hands over a batch and
//! goes on ticking and stepping. [`InlineApplier`] applies at once on the caller's
//! thread, as the simulation needs (it must replay exactly).

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use prometheus_client::metrics::histogram::Histogram;
use raft::eraftpb::{Entry, EntryType};
use strata_engine::EngineError;

use crate::command::Proposal;
use crate::error::{ProposeError, StorageFailure};
use crate::fail_stop::fail_stop;
use crate::mailbox::ProposeTx;
use crate::state_machine::{Applied, Committed, StateMachine};
use crate::trace;

/// The configuration a configuration change entry left, computed on the
/// raft thread when the entry was handed over (raft-rs applies it there),
/// to be stored with the data.
#[derive(Debug, Clone)]
pub(crate) struct ConfApplied {
    pub(crate) index: u64,
    pub(crate) conf_state: Vec<u8>,
    pub(crate) members: Vec<u8>,
}

/// A client's proposal stepped into raft, waiting for the entry at its
/// index to be applied; it is recognised there by its request id.
pub(crate) struct Waiter {
    pub(crate) request_id: u64,
    pub(crate) tx: ProposeTx,
    /// When it was stepped into raft, for the commit latency.
    pub(crate) proposed_at: Instant,
}

/// A batch of committed entries, consecutive and in log order.
pub(crate) struct ApplyJob {
    pub(crate) entries: Vec<Entry>,
    /// The configuration after each configuration change among them.
    pub(crate) confs: Vec<ConfApplied>,
    /// The proposals waiting for these entries, by index, answered as soon
    /// as the batch is applied, on the applier's thread: the answer does
    /// not wait for the raft thread to hear of it first.
    pub(crate) waiters: Vec<(u64, Waiter)>,
    /// Where the waiters' commit latency is observed.
    pub(crate) commit_seconds: Histogram,
}

/// Why a batch was not applied; the peer fails its storage on it.
#[derive(Debug)]
pub(crate) enum ApplyFailure {
    /// An entry does not decode: the log holds something no proposal made.
    Decode { index: u64, reason: String },
    /// The engine refused the write.
    Engine { last: u64, error: EngineError },
}

/// How one batch ended: its last index and every proposal's result.
pub(crate) type ApplyOutcome = Result<(u64, Vec<Applied>), ApplyFailure>;

/// Applies batches of committed entries in order.
pub(crate) trait Applier: Send {
    /// Queues `job` behind the batches handed over before it.
    fn submit(&mut self, job: ApplyJob);

    /// Moves the outcomes of the batches applied since the last call onto
    /// `out`, oldest first; with `block`, waits for at least one if none is
    /// there yet.
    fn take_done(&mut self, out: &mut Vec<ApplyOutcome>, block: bool);

    /// Whether handing over a batch now would make the caller wait for the
    /// engine (only an applier on the caller's own thread can).
    fn would_wait(&self) -> bool;
}

/// Applies `job` to `sm`; returns the batch's outcome, for the driver, and
/// its waiters' answers, to be sent once the driver can hear of the
/// outcome: a client answered must find the raft thread knowing its write
/// applied (a read or a log compaction it asks for next counts on it).
fn run_job(sm: &StateMachine, mut job: ApplyJob) -> (ApplyOutcome, Answers) {
    let waiters = std::mem::take(&mut job.waiters);
    let commit_seconds = job.commit_seconds.clone();
    let mut outcome = apply_job(sm, job);
    let answers = match &mut outcome {
        Ok((_, results)) => Answers::Results {
            waiters,
            results: std::mem::take(results),
            commit_seconds,
        },
        Err(failure) => Answers::Failed {
            waiters,
            error: ProposeError::Storage(match failure {
                ApplyFailure::Decode { index, reason } => {
                    StorageFailure::failed(format!("entry {index} does not decode: {reason}"))
                }
                ApplyFailure::Engine { error, .. } => StorageFailure::from(&*error),
            }),
        },
    };
    (outcome, answers)
}

/// What a batch's waiters are told.
enum Answers {
    /// Each its result if the entry at its index is its own, else that it
    /// was dropped (another leader's entry replaced it).
    Results {
        waiters: Vec<(u64, Waiter)>,
        results: Vec<Applied>,
        commit_seconds: Histogram,
    },
    /// All the storage failure the batch met.
    Failed {
        waiters: Vec<(u64, Waiter)>,
        error: ProposeError,
    },
}

impl Answers {
    fn send(self) {
        match self {
            Answers::Results {
                waiters,
                results,
                commit_seconds,
            } => answer(waiters, results, &commit_seconds),
            Answers::Failed { waiters, error } => {
                for (_, w) in waiters {
                    let _ = w.tx.send(Err(error.clone()));
                }
            }
        }
    }
}

/// Answers `waiters` (in index order) from `results` (in index order).
fn answer(waiters: Vec<(u64, Waiter)>, results: Vec<Applied>, commit_seconds: &Histogram) {
    let mut results = results.into_iter().peekable();
    for (index, w) in waiters {
        while results.peek().is_some_and(|r| r.index < index) {
            results.next();
        }
        let outcome = match results.next_if(|r| r.index == index && r.request_id == w.request_id) {
            Some(r) => {
                commit_seconds.observe(w.proposed_at.elapsed().as_secs_f64());
                Ok((index, r.result))
            }
            None => Err(ProposeError::Dropped(format!(
                "entry {index} was replaced by another leader's entry"
            ))),
        };
        let _ = w.tx.send(outcome);
    }
}

/// Decodes `job`'s entries and applies them to `sm` in one engine write.
fn apply_job(sm: &StateMachine, job: ApplyJob) -> ApplyOutcome {
    let Some(last) = job.entries.last().map(|e| e.index) else {
        return Ok((0, Vec::new()));
    };
    let mut confs = job.confs.into_iter().peekable();
    let mut batch = Vec::with_capacity(job.entries.len());
    for entry in &job.entries {
        let mut committed = Committed {
            index: entry.index,
            ..Default::default()
        };
        match entry.get_entry_type() {
            EntryType::EntryNormal if entry.data.is_empty() => {}
            EntryType::EntryNormal => match Proposal::decode(&entry.data) {
                Ok(p) => committed.proposal = Some(p),
                Err(e) => {
                    return Err(ApplyFailure::Decode {
                        index: entry.index,
                        reason: e.to_string(),
                    });
                }
            },
            EntryType::EntryConfChange | EntryType::EntryConfChangeV2 => {
                if let Some(c) = confs.next_if(|c| c.index == entry.index) {
                    committed.conf_state = Some(c.conf_state);
                    committed.members = Some(c.members);
                }
            }
        }
        batch.push(committed);
    }
    let traced = trace::spans(&job.entries, "raft.apply");
    let applied = sm.apply(&batch);
    drop(traced);
    applied
        .map(|results| (last, results))
        .map_err(|error| ApplyFailure::Engine { last, error })
}

/// Applies each batch when it is handed over, on the caller's thread.
#[cfg(test)]
pub(crate) struct InlineApplier {
    state_machine: Arc<StateMachine>,
    done: Vec<ApplyOutcome>,
}

#[cfg(test)]
impl InlineApplier {
    pub(crate) fn new(state_machine: Arc<StateMachine>) -> Self {
        InlineApplier {
            state_machine,
            done: Vec::new(),
        }
    }
}

#[cfg(test)]
impl Applier for InlineApplier {
    fn submit(&mut self, job: ApplyJob) {
        let (outcome, answers) = run_job(&self.state_machine, job);
        self.done.push(outcome);
        answers.send();
    }

    fn take_done(&mut self, out: &mut Vec<ApplyOutcome>, _block: bool) {
        out.append(&mut self.done);
    }

    fn would_wait(&self) -> bool {
        self.state_machine.apply_would_wait()
    }
}

/// An applier on a thread of its own.
///
/// The driver hands over one batch at a time (the next once the last is
/// done), each of at most a Ready's worth of committed bytes, so the queues
/// hold one job and one outcome at most.
pub(crate) struct ApplyThread {
    jobs: Option<Sender<ApplyJob>>,
    done: Receiver<ApplyOutcome>,
    thread: Option<JoinHandle<()>>,
}

impl ApplyThread {
    /// Starts the thread `name` applying to `state_machine`; `wake` is
    /// called after each outcome is posted, to wake whoever takes it.
    pub(crate) fn spawn(
        name: String,
        state_machine: Arc<StateMachine>,
        wake: impl Fn() + Send + 'static,
    ) -> std::io::Result<Self> {
        let (jobs, queue) = crossbeam_channel::bounded::<ApplyJob>(1);
        // Unbounded in type only: it holds the outcome of the one job.
        let (done_tx, done) = crossbeam_channel::unbounded();
        let thread = std::thread::Builder::new().name(name).spawn(move || {
            fail_stop("raft apply", || {
                // Ends when the driver drops its end, after the job queued.
                while let Ok(job) = queue.recv() {
                    let (outcome, answers) = run_job(&state_machine, job);
                    if done_tx.send(outcome).is_err() {
                        return;
                    }
                    wake();
                    answers.send();
                }
            })
        })?;
        Ok(ApplyThread {
            jobs: Some(jobs),
            done,
            thread: Some(thread),
        })
    }
}

impl Applier for ApplyThread {
    fn submit(&mut self, job: ApplyJob) {
        if let Some(jobs) = &self.jobs {
            // Fails only if the thread is gone, which ends the process.
            let _ = jobs.send(job);
        }
    }

    fn take_done(&mut self, out: &mut Vec<ApplyOutcome>, block: bool) {
        if block && let Ok(o) = self.done.recv() {
            out.push(o);
        }
        out.extend(self.done.try_iter());
    }

    fn would_wait(&self) -> bool {
        false
    }
}

impl Drop for ApplyThread {
    /// Lets the thread finish the job queued, then joins it.
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
