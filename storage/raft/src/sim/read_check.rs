//! Reads in the random workload, and what their answers must satisfy. A
//! read answered `Ok(applied)` must have applied at least every write
//! acknowledged before it was issued (committed prefixes are identical,
//! which `check` verifies, so that is linearizability for a ReadIndex
//! read); and every read is answered within the read timeout, unless its
//! member stopped (a crash or a retirement drops the answer). The timeout
//! counts the member's ticks, so time it spends paused does not count, and
//! ticks a long fsync cost it extend it.

use rand::Rng;
use tokio::sync::oneshot;

use super::{Sim, TICK_MS};
use crate::error::ProposeError;
use crate::mailbox::Input;

/// The chance of a read in a millisecond that takes writes.
pub(super) const READ_PROBABILITY: f64 = 0.1;

/// The peer's default read timeout on the simulation's clock, and the
/// ticks a reader may wait beyond it: one round before its request is
/// issued, and the tick on which it expires.
pub(super) const READ_TIMEOUT_MS: u64 = 2_000;
const SLACK_MS: u64 = 2 * TICK_MS;

/// A read not answered yet.
pub(super) struct PendingRead {
    node: u64,
    issued_ms: u64,
    /// The highest index of a write acknowledged before the read.
    must_see: u64,
    /// The member's paused milliseconds when the read was issued.
    paused_ms: u64,
    rx: oneshot::Receiver<Result<u64, ProposeError>>,
}

impl Sim {
    /// Issues a read on a random running node.
    pub(super) fn issue_read(&mut self) {
        let i = self.rng.random_range(0..self.nodes.len());
        self.issue_read_on(i);
    }

    /// Issues a read on node `i`, if it runs, for `collect_reads` to check.
    pub(super) fn issue_read_on(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        let Some(live) = &mut n.live else { return };
        let (tx, rx) = oneshot::channel();
        live.driver.handle(Input::Read { tx });
        self.reads.push(PendingRead {
            node: n.id,
            issued_ms: self.now,
            must_see: self.acked_index,
            paused_ms: n.paused_ms,
            rx,
        });
    }

    /// Checks the reads answered since the last call, and that none waits
    /// past the read timeout.
    pub(super) fn collect_reads(&mut self) -> Result<(), String> {
        let mut still = Vec::new();
        for mut r in std::mem::take(&mut self.reads) {
            match r.rx.try_recv() {
                Ok(Ok(applied)) if applied < r.must_see => {
                    return Err(format!(
                        "stale read on node {} issued at {} ms: answered at applied index \
                         {applied}, but a write at {} was acknowledged before",
                        r.node, r.issued_ms, r.must_see
                    ));
                }
                Ok(Ok(_)) => self.stats.reads += 1,
                // Refused or told to retry; or the member stopped.
                Ok(Err(_)) | Err(oneshot::error::TryRecvError::Closed) => {}
                Err(oneshot::error::TryRecvError::Empty) => {
                    let node = self.nodes.iter().find(|n| n.id == r.node);
                    let paused = node.map_or(0, |n| n.paused_ms.saturating_sub(r.paused_ms));
                    if self.now - r.issued_ms > READ_TIMEOUT_MS + SLACK_MS + paused {
                        return Err(format!(
                            "the read on node {} issued at {} ms is unanswered after the \
                             read timeout",
                            r.node, r.issued_ms
                        ));
                    }
                    still.push(r);
                }
            }
        }
        self.reads = still;
        Ok(())
    }
}
