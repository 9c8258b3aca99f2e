//! The storage failure policy. The first failure is kept; from then on the
//! peer acknowledges nothing: it stops ticking, stepping, persisting and
//! sending (see `Driver::round`), its waiters are answered with the
//! failure, and every later request is refused with it, so a full disk
//! reads as full on every answer until a restart.

use super::Driver;
use crate::error::{LogError, ProposeError, StorageFailure};

impl Driver {
    /// The answer to any request once storage has failed.
    pub(super) fn storage_refusal(&self) -> Option<ProposeError> {
        self.failure.clone().map(ProposeError::Storage)
    }

    /// The engine failed: stop applying and acknowledging, and report
    /// unhealthy until restarted. The peer goes inert (see `Driver::round`),
    /// so a leader sends nothing more and the followers elect a successor
    /// when its heartbeats stop.
    pub(super) fn fail_storage(&mut self, failure: StorageFailure) {
        tracing::error!(
            reason = failure.reason.as_str(),
            "storage failed; this peer stops acknowledging"
        );
        self.note_failure(failure);
    }

    /// This member lost entries it had acknowledged (see `amnesia`): say
    /// so, with what to do, in one line, and go inert like any failed
    /// peer. The node stops on it (the server watches the status).
    pub(super) fn fail_lost_state(&mut self, failure: StorageFailure) {
        tracing::error!("{failure}");
        self.note_failure(failure.clone());
        self.fail_all_waiters(ProposeError::Storage(failure));
    }

    /// Records the first failure; later ones are its consequences.
    fn note_failure(&mut self, failure: StorageFailure) {
        if self.failure.is_none() {
            self.failure = Some(failure);
        }
    }

    /// The raft log failed to persist: nothing more may be acknowledged or
    /// promised to peers.
    pub(super) fn fail_log(&mut self, e: &LogError) {
        let reason = e.to_string();
        tracing::error!(reason, "raft log write failed");
        self.note_failure(StorageFailure::new(
            e.is_no_space(),
            format!("raft log: {reason}"),
        ));
        self.fail_all_waiters(ProposeError::Storage(StorageFailure::from(e)));
    }

    /// Answers every waiter (proposals, configuration changes, reads) with
    /// `err`: the peer failed or is stopping.
    pub(super) fn fail_all_waiters(&mut self, err: ProposeError) {
        for q in std::mem::take(&mut self.queued) {
            q.fail(err.clone());
        }
        for (_, p) in std::mem::take(&mut self.proposals) {
            let _ = p.tx.send(Err(err.clone()));
        }
        for (_, tx) in std::mem::take(&mut self.conf_waiters) {
            let _ = tx.send(Err(err.clone()));
        }
        self.reads.fail_all(&err);
    }
}
