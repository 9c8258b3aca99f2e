//! What the driver answers when it stops. Committed entries still held
//! back from a stalled engine are applied first and answered with their
//! results. A request it never stepped into
//! raft was certainly not applied, so it is answered `Stopped`, which
//! callers may retry: proposals still queued for the next round, and every
//! request still in the inbox. A proposal or configuration change already
//! stepped in may be on the followers by now, and the next leader may
//! commit it: its outcome is unknown (`StoppedInFlight`), and retrying it
//! could apply it twice. Reads change nothing and are always safe to retry.
//!
//! The request channel is closed first, so that nothing posted later waits
//! in it unanswered (a bounded channel keeps what it holds while any
//! handle lives); a request posted afterwards is refused `Stopped` at once.

use super::Driver;
use crate::error::ProposeError;
use crate::mailbox::{Input, Shared};

impl Driver {
    /// Closes the request channel and answers every request and waiter.
    pub(super) fn stop(&mut self, shared: &Shared) {
        shared.close_requests();
        // Entries committed but held back from a stalled engine are applied
        // now, waiting for it, so that their writers learn their results.
        self.apply_queued(true);
        for input in self.inbox.requests.try_iter() {
            refuse(input);
        }
        for q in std::mem::take(&mut self.queued) {
            q.fail(ProposeError::Stopped);
        }
        for (_, p) in std::mem::take(&mut self.proposals) {
            let _ = p.tx.send(Err(ProposeError::StoppedInFlight));
        }
        for (_, tx) in std::mem::take(&mut self.conf_waiters) {
            let _ = tx.send(Err(ProposeError::StoppedInFlight));
        }
        self.reads.fail_all(&ProposeError::Stopped);
    }
}

/// Answers a request the driver never took: nothing was done for it.
fn refuse(input: Input) {
    let stopped = ProposeError::Stopped;
    match input {
        Input::Propose { tx, .. } => {
            let _ = tx.send(Err(stopped));
        }
        Input::Read { tx } => {
            let _ = tx.send(Err(stopped));
        }
        Input::TransferLeader { tx, .. } => {
            let _ = tx.send(Err(stopped));
        }
        Input::HandOver { tx } => {
            let _ = tx.send(Err(stopped));
        }
        Input::ChangeMembers { tx, .. } => {
            let _ = tx.send(Err(stopped));
        }
        Input::CompactLog { tx } => {
            let _ = tx.send(Err(stopped));
        }
        // Raft's own inputs come on the other channel; no one waits on them.
        Input::Step(..) | Input::Unreachable(_) | Input::Wake | Input::Job(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use raft::eraftpb::Message;
    use strata_engine::{Engine, Options, WalMode};
    use tokio::sync::oneshot;

    use crate::command::Command;
    use crate::config::PeerConfig;
    use crate::driver::Driver;
    use crate::error::ProposeError;
    use crate::mailbox::{Input, Shared, mailbox};
    use crate::snapshot::SnapshotDirs;
    use crate::state_machine::StateMachine;
    use crate::transport::Transport;

    struct NoNetwork;

    impl Transport for NoNetwork {
        fn send(&self, _: Vec<Message>) {}
    }

    /// The driver of the only member of a group, once it leads.
    fn sole_leader(dir: &std::path::Path) -> (Driver, Arc<Shared>) {
        let engine = Engine::open(
            dir.join("engine"),
            Options {
                wal: WalMode::NoSync,
                ..Options::default()
            },
        )
        .expect("engine");
        let sm = Arc::new(StateMachine::new(Arc::new(engine), 1));
        let mut config = PeerConfig::new(1, 1, vec![1], dir.join("raft"));
        config.snapshot_root = dir.join("snapshots");
        let dirs = SnapshotDirs::new(config.snapshot_root.clone()).expect("snapshot dirs");
        let (senders, inbox) = mailbox(16, 16);
        let (jobs, _jobs) = crossbeam_channel::bounded(4);
        let mut driver = Driver::new(
            &config,
            sm.clone(),
            inbox,
            Box::new(NoNetwork),
            dirs.clone(),
            jobs,
            crate::driver::Workers {
                log_io: Box::new(|w| {
                    Ok(Box::new(crate::log::io::InlineIo::new(w))
                        as Box<dyn crate::log::io::LogIo>)
                }),
                applier: Box::new(crate::applier::InlineApplier::new(sm.clone())),
            },
        )
        .expect("driver");
        let shared = Arc::new(Shared::new(
            senders,
            driver.status(),
            sm,
            dirs,
            driver.metrics().clone(),
            driver.stamps(),
        ));
        driver.raw_mut().campaign().expect("campaign");
        for _ in 0..10 {
            driver.round(&shared);
        }
        assert_eq!(driver.status().leader_id, 1, "the sole member leads");
        (driver, shared)
    }

    fn propose(
        driver: &mut Driver,
        request_id: u64,
    ) -> oneshot::Receiver<Result<(u64, crate::ApplyResult), ProposeError>> {
        let (tx, rx) = oneshot::channel();
        driver.handle(Input::propose(
            request_id,
            Command::Delete { key: b"k".to_vec() },
            None,
            tx,
        ));
        rx
    }

    // Proves the answers at stop: a proposal stepped into raft (its entry
    // appended, maybe already sent) is answered "outcome unknown"; one
    // still queued, one still in the inbox and a read are answered
    // "stopped", which callers may retry because nothing was proposed for
    // them; and a request posted after the stop is refused at once rather
    // than left waiting in the channel.
    #[test]
    fn stop_answers_stepped_proposals_unknown_and_the_rest_stopped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut driver, shared) = sole_leader(dir.path());
        let mut stepped = propose(&mut driver, 1);
        driver.propose_queued();
        let mut queued = propose(&mut driver, 2);
        let (read_tx, mut read) = oneshot::channel();
        driver.handle(Input::Read { tx: read_tx });
        let (tx, mut in_inbox) = oneshot::channel();
        shared
            .submit(Input::propose(
                3,
                Command::Delete { key: b"k".to_vec() },
                None,
                tx,
            ))
            .expect("the inbox takes it");

        driver.stop(&shared);
        assert!(
            matches!(stepped.try_recv(), Ok(Err(ProposeError::StoppedInFlight))),
            "a stepped proposal"
        );
        assert!(
            matches!(queued.try_recv(), Ok(Err(ProposeError::Stopped))),
            "a queued proposal"
        );
        assert!(
            matches!(in_inbox.try_recv(), Ok(Err(ProposeError::Stopped))),
            "a proposal in the inbox"
        );
        assert!(
            matches!(read.try_recv(), Ok(Err(ProposeError::Stopped))),
            "a read"
        );
        let (tx, _rx) = oneshot::channel();
        let late = shared.submit(Input::Read { tx });
        assert!(
            matches!(late, Err(ProposeError::Stopped)),
            "a later request"
        );
    }
}
