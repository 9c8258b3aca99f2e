//! One simulated member: the real driver, raft log and state machine, with
//! the engine on an in-memory fault-injecting file system. A crash keeps
//! only what was fsynced: the raft log's current segment is cut back to its
//! last sync, and the engine loses everything it had not synced.

use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use raft::eraftpb::Message;
use strata_engine::{Engine, FaultFs, Options, WalMode};

use crate::driver::Driver;
use crate::members::Members;
use crate::peer::{PeerConfig, Shared};
use crate::snapshot::SnapshotDirs;
use crate::state_machine::StateMachine;
use crate::transport::Transport;

/// Collects what a driver sends, for the simulated network to carry.
#[derive(Clone, Default)]
pub struct Outbox(Arc<Mutex<Vec<Message>>>);

impl Transport for Outbox {
    fn send(&self, messages: Vec<Message>) {
        self.0.lock().extend(messages);
    }
}

impl Outbox {
    pub fn take(&self) -> Vec<Message> {
        std::mem::take(&mut *self.0.lock())
    }
}

pub struct SimNode {
    pub id: u64,
    pub live: Option<(Driver, Arc<Shared>)>,
    pub outbox: Outbox,
    fs: FaultFs,
    log_dir: PathBuf,
    voters: Vec<u64>,
    /// The last election timeout this simulation chose for the node.
    pub chosen_timeout: usize,
}

impl SimNode {
    pub fn new(id: u64, voters: Vec<u64>, root: &std::path::Path) -> Self {
        SimNode {
            id,
            live: None,
            outbox: Outbox::default(),
            fs: FaultFs::new(),
            log_dir: root.join(format!("node{id}")),
            voters,
            chosen_timeout: 0,
        }
    }

    pub fn start(&mut self) {
        let engine = Engine::open_with_fs(
            Arc::new(self.fs.clone()),
            std::path::Path::new("/engine"),
            Options {
                wal: WalMode::NoSync,
                ..Options::default()
            },
        )
        .expect("engine opens");
        let sm = Arc::new(StateMachine::new(Arc::new(engine), 1));
        let mut config =
            PeerConfig::new(self.id, 1, self.voters.clone(), self.log_dir.join("raft"));
        config.snapshot_root = self.log_dir.join("snapshots");
        // No compaction: every member keeps the whole log to compare.
        config.compact_log_entries = u64::MAX;
        config.members = Members::default();
        let dirs = SnapshotDirs::new(config.snapshot_root.clone()).expect("snapshot dir");
        let (tx, rx) = crossbeam_channel::bounded(1024);
        // Nobody takes snapshot jobs; with compaction off none are needed.
        let (jobs, _) = crossbeam_channel::bounded(1);
        let driver = Driver::new(
            &config,
            sm.clone(),
            rx,
            Box::new(self.outbox.clone()),
            dirs.clone(),
            jobs,
        )
        .expect("driver starts");
        let shared = Arc::new(Shared::new(tx, driver.status(), sm, dirs));
        self.chosen_timeout = 0;
        self.live = Some((driver, shared));
    }

    /// Power loss: what was not fsynced is gone.
    pub fn crash(&mut self) {
        let Some((driver, _)) = self.live.take() else {
            return;
        };
        let (tail, durable) = driver.durable_tail();
        drop(driver);
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&tail)
            .expect("segment opens");
        f.set_len(durable).expect("segment truncates");
        self.fs = self.fs.crash();
        self.outbox.take();
    }

    pub fn is_up(&self) -> bool {
        self.live.is_some()
    }
}
