//! The simulated raft log disk queue: a member's log writes, as its I/O
//! thread does them, on the simulation's clock. The driver submits writes
//! and goes on; the simulation starts a group of the queued writes when the
//! disk is free, writes it with the member's syncs held, and finishes it
//! (its syncs made durable, its outcomes reported) after a seeded fsync
//! time. A crash before then keeps the group's bytes only as a crash keeps
//! unsynced pages, and loses the writes still queued.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use strata_engine::FaultFs;

use crate::error::LogError;
use crate::log::io::{Finished, LogIo, Outcome};
use crate::log::{LogWrite, LogWriter};

/// A group of writes on the disk, its fsync under way.
struct UnderWay {
    writes: usize,
    /// The simulated millisecond its fsync finishes at.
    until_ms: u64,
    result: Result<bool, LogError>,
}

/// One life's log disk queue, shared by its driver ([`SimIo`]) and the
/// simulation.
pub struct IoQueue {
    writer: LogWriter,
    queued: VecDeque<LogWrite>,
    under_way: Option<UnderWay>,
    finished: Vec<Outcome>,
}

impl IoQueue {
    /// Starts the queued writes as one group at `now`, if the disk is free
    /// and anything waits, with syncs held on `fs` until the group
    /// finishes `fsync_ms()` later (drawn only if a group starts). Returns
    /// the fsync time drawn.
    pub fn start(&mut self, fs: &FaultFs, now: u64, fsync_ms: impl FnOnce() -> u64) -> Option<u64> {
        if self.under_way.is_some() || self.queued.is_empty() {
            return None;
        }
        let group: Vec<LogWrite> = self.queued.drain(..).collect();
        fs.hold_syncs();
        let result = self.writer.write(&group);
        let ms = fsync_ms();
        self.under_way = Some(UnderWay {
            writes: group.len(),
            until_ms: now + ms,
            result,
        });
        Some(ms)
    }

    /// Finishes the group under way if its fsync is done at `now`: its
    /// syncs become durable and its outcomes are reported. Returns whether
    /// it finished one.
    pub fn finish_due(&mut self, fs: &FaultFs, now: u64) -> bool {
        if self.under_way.as_ref().is_none_or(|u| u.until_ms > now) {
            return false;
        }
        let u = self.under_way.take().expect("a group under way");
        fs.release_syncs();
        let seconds = 0.0;
        match u.result {
            Ok(synced) => {
                for i in 0..u.writes {
                    self.finished.push(Ok(Finished {
                        synced: synced && i + 1 == u.writes,
                        seconds,
                    }));
                }
            }
            Err(e) => {
                let reason = e.to_string();
                self.finished.push(Err(e));
                for _ in 1..u.writes {
                    self.finished.push(Err(LogError::Poisoned {
                        reason: reason.clone(),
                    }));
                }
            }
        }
        true
    }

    /// Whether a group's fsync is under way.
    pub fn syncing(&self) -> bool {
        self.under_way.is_some()
    }

    /// The group under way never finishes (a disk that hangs).
    pub fn hang(&mut self) {
        if let Some(u) = &mut self.under_way {
            u.until_ms = u64::MAX;
        }
    }
}

/// The driver's end of a member's [`IoQueue`].
#[derive(Clone)]
pub struct SimIo(pub Arc<Mutex<IoQueue>>);

impl SimIo {
    pub fn new(writer: LogWriter) -> Self {
        SimIo(Arc::new(Mutex::new(IoQueue {
            writer,
            queued: VecDeque::new(),
            under_way: None,
            finished: Vec::new(),
        })))
    }
}

impl LogIo for SimIo {
    fn submit(&mut self, write: LogWrite) {
        self.0.lock().queued.push_back(write);
    }

    fn take_finished(&mut self, out: &mut Vec<Outcome>) {
        out.append(&mut self.0.lock().finished);
    }
}
