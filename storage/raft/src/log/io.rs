//! Where the driver's log writes go: [`LogIo`], a queue of [`LogWrite`]s
//! that reach the disk in the order they were submitted and report back in
//! that order.
//!
//! A peer runs its writer on an [`IoThread`], so the raft thread never
//! waits for a disk: while one write is being synced it goes on ticking,
//! sending heartbeats and appends (a leader's own appends go out before
//! they are durable anyway, Raft thesis §10.2.1), and taking proposals,
//! which join the next write. Writes that queue up while one is being
//! synced are written together and share the next fsync. [`InlineIo`]
//! writes at once, on the caller's thread, for tests that drive a peer
//! round by round; the simulation has its own, whose fsyncs take seeded
//! time.

use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender, TryRecvError};

use super::writer::{LogWrite, LogWriter};
use crate::error::LogError;
use crate::fail_stop::fail_stop;

/// The most writes one fsync covers; more wait for the next.
const MAX_WRITES_PER_SYNC: usize = 1024;

/// How one submitted write ended.
#[derive(Debug)]
pub(crate) struct Finished {
    /// This write's records went out with an fsync it counts as its own
    /// (the last write of a group; false for the others and for writes
    /// with nothing to write).
    pub(crate) synced: bool,
    /// How long the write and fsync of its group took, in seconds.
    pub(crate) seconds: f64,
}

/// A write's outcome; after a failure, every later write fails too.
pub(crate) type Outcome = Result<Finished, LogError>;

/// A queue of log writes, written and reported in order.
pub(crate) trait LogIo: Send {
    /// Queues `write` behind every write submitted before it.
    fn submit(&mut self, write: LogWrite);

    /// Moves the outcomes of the writes finished since the last call onto
    /// `out`, oldest first.
    fn take_finished(&mut self, out: &mut Vec<Outcome>);
}

/// Writes `group` with one fsync and gives each write its outcome.
fn write_group(writer: &mut LogWriter, group: &[LogWrite], out: impl FnMut(Outcome)) {
    let started = Instant::now();
    let result = writer.write(group);
    report(result, started.elapsed().as_secs_f64(), group.len(), out);
}

fn report(result: Result<bool, LogError>, seconds: f64, n: usize, mut out: impl FnMut(Outcome)) {
    match result {
        Ok(synced) => {
            for i in 0..n {
                out(Ok(Finished {
                    synced: synced && i + 1 == n,
                    seconds,
                }));
            }
        }
        Err(e) => {
            let reason = e.to_string();
            out(Err(e));
            for _ in 1..n {
                out(Err(LogError::Poisoned {
                    reason: reason.clone(),
                }));
            }
        }
    }
}

/// Writes each write when it is submitted, on the caller's thread.
#[cfg(test)]
pub(crate) struct InlineIo {
    writer: LogWriter,
    finished: Vec<Outcome>,
}

#[cfg(test)]
impl InlineIo {
    pub(crate) fn new(writer: LogWriter) -> Self {
        InlineIo {
            writer,
            finished: Vec::new(),
        }
    }
}

#[cfg(test)]
impl LogIo for InlineIo {
    fn submit(&mut self, write: LogWrite) {
        let finished = &mut self.finished;
        write_group(&mut self.writer, std::slice::from_ref(&write), |o| {
            finished.push(o)
        });
    }

    fn take_finished(&mut self, out: &mut Vec<Outcome>) {
        out.append(&mut self.finished);
    }
}

/// A writer on a thread of its own.
///
/// The queues are unbounded in count but not in size: a write exists only
/// for a Ready with records, whose entries raft itself bounds (a leader's
/// uncommitted bytes, a follower's appends in flight from its leader), and
/// each outcome answers one write.
pub(crate) struct IoThread {
    writes: Option<Sender<LogWrite>>,
    finished: Receiver<Outcome>,
    thread: Option<JoinHandle<()>>,
}

impl IoThread {
    /// Starts the thread `name` writing with `writer`; `wake` is called
    /// after each group's outcomes are posted, to wake whoever takes them.
    pub(crate) fn spawn(
        name: String,
        mut writer: LogWriter,
        wake: impl Fn() + Send + 'static,
    ) -> std::io::Result<Self> {
        let (writes, queue) = crossbeam_channel::unbounded::<LogWrite>();
        let (done, finished) = crossbeam_channel::unbounded();
        let thread = std::thread::Builder::new().name(name).spawn(move || {
            fail_stop("raft log writer", || {
                // Ends when the driver drops its end, after the writes
                // already queued are done.
                while let Ok(first) = queue.recv() {
                    let mut group = vec![first];
                    while group.len() < MAX_WRITES_PER_SYNC {
                        match queue.try_recv() {
                            Ok(w) => group.push(w),
                            Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                        }
                    }
                    write_group(&mut writer, &group, |o| {
                        let _ = done.send(o);
                    });
                    wake();
                }
            })
        })?;
        Ok(IoThread {
            writes: Some(writes),
            finished,
            thread: Some(thread),
        })
    }
}

impl LogIo for IoThread {
    fn submit(&mut self, write: LogWrite) {
        if let Some(writes) = &self.writes {
            // Fails only if the thread is gone, which ends the process.
            let _ = writes.send(write);
        }
    }

    fn take_finished(&mut self, out: &mut Vec<Outcome>) {
        out.extend(self.finished.try_iter());
    }
}

impl Drop for IoThread {
    /// Lets the thread finish the writes queued, then joins it.
    fn drop(&mut self) {
        self.writes.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::{Arc, Mutex};

    use raft::eraftpb::Entry;
    use strata_fs::FaultFs;

    use super::*;
    use crate::log::RaftLogStore;

    fn open(fs: &FaultFs) -> RaftLogStore {
        RaftLogStore::open(Arc::new(fs.clone()), Path::new("/raft"), 64 << 20, &[]).expect("open")
    }

    /// A write of the one entry at `index`.
    fn write_of(store: &mut RaftLogStore, index: u64) -> LogWrite {
        store.append(&[Entry {
            index,
            term: 1,
            data: vec![7; 100].into(),
            ..Default::default()
        }]);
        store.take_write().expect("a pending write")
    }

    /// Waits for `n` outcomes.
    fn outcomes(io: &mut IoThread, n: usize) -> Vec<Outcome> {
        let mut out = Vec::new();
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while out.len() < n {
            assert!(
                Instant::now() < deadline,
                "only {} of {n} outcomes",
                out.len()
            );
            io.take_finished(&mut out);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        out
    }

    // Proves: writes are reported in the order they were submitted, and
    // those that queue while a group is being written share the next
    // fsync (the thread is held, after its first group, in its wake call).
    #[test]
    fn writes_queued_behind_a_sync_share_the_next_one() {
        let fs = FaultFs::new();
        let mut store = open(&fs);
        let writer = store.take_writer().expect("writer");
        let (held_tx, held_rx) = crossbeam_channel::bounded::<()>(0);
        let first = Arc::new(Mutex::new(true));
        let mut io = IoThread::spawn("io-test".into(), writer, move || {
            let mut first = first.lock().expect("lock");
            if std::mem::take(&mut *first) {
                // Wait until the test has queued the rest.
                let _ = held_rx.recv();
            }
        })
        .expect("spawn");
        io.submit(write_of(&mut store, 1));
        // The first group is written and the thread waits in its wake.
        let mut out = outcomes(&mut io, 1);
        let syncs_before = fs.sync_count();
        for index in 2..=6 {
            io.submit(write_of(&mut store, index));
        }
        held_tx.send(()).expect("release the thread");
        out.extend(outcomes(&mut io, 5));
        let synced: Vec<bool> = out
            .iter()
            .map(|o| o.as_ref().expect("written").synced)
            .collect();
        assert_eq!(synced, [true, false, false, false, false, true]);
        assert_eq!(
            fs.sync_count() - syncs_before,
            1,
            "one fsync for the five queued writes"
        );
        drop(io);
        let reopened = open(&fs.crash());
        assert_eq!(reopened.last_index(), 6, "every write is durable");
    }

    // Proves: a failed fsync fails its write with the I/O error and every
    // later write as poisoned, and nothing after the failure is reported
    // written.
    #[test]
    fn a_failed_sync_fails_its_write_and_every_later_one() {
        let fs = FaultFs::new();
        let mut store = open(&fs);
        let mut io = IoThread::spawn("io-test".into(), store.take_writer().expect("w"), || {})
            .expect("spawn");
        io.submit(write_of(&mut store, 1));
        assert!(outcomes(&mut io, 1)[0].is_ok());
        fs.fail_next_sync(std::io::ErrorKind::Other);
        io.submit(write_of(&mut store, 2));
        io.submit(write_of(&mut store, 3));
        let out = outcomes(&mut io, 2);
        assert!(matches!(out[0], Err(LogError::Io { .. })), "{:?}", out[0]);
        assert!(
            matches!(out[1], Err(LogError::Poisoned { .. })),
            "{:?}",
            out[1]
        );
        drop(io);
        assert_eq!(
            open(&fs.crash()).last_index(),
            1,
            "only the synced write survives"
        );
    }

    // Proves: dropping the thread's handle lets it finish the writes
    // already queued, so a stopping peer leaves them durable.
    #[test]
    fn a_dropped_thread_finishes_what_was_queued() {
        let fs = FaultFs::new();
        let mut store = open(&fs);
        let mut io = IoThread::spawn("io-test".into(), store.take_writer().expect("w"), || {})
            .expect("spawn");
        for index in 1..=20 {
            io.submit(write_of(&mut store, index));
        }
        drop(io);
        assert_eq!(open(&fs.crash()).last_index(), 20);
    }
}
