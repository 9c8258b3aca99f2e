//! One simulated member: the real driver, raft log and state machine, with
//! the raft log and the engine on one in-memory fault-injecting file
//! system, and the log's writes queued for the simulated disk (`io`). A
//! crash keeps what was fsynced, in both, and of the rest what the disk
//! wrote back (`disk`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use raft::eraftpb::Message;
use rand::Rng;
use rand::rngs::StdRng;
use strata_engine::{Engine, FaultFs, Options, WalMode};
use tokio::sync::broadcast;

use super::Stats;
use super::disk::Disk;
use super::io::SimIo;
use super::worker::Worker;
use crate::applier::InlineApplier;
use crate::clock::Clock;
use crate::config::{PeerConfig, ReadMode};
use crate::driver::{Driver, Workers};
use crate::log::store::BOOTSTRAP_INDEX;
use crate::mailbox::{Shared, mailbox};
use crate::members::Members;
use crate::snapshot::SnapshotDirs;
use crate::state_machine::StateMachine;
use crate::status::{RaftEvent, RaftEventKind};
use crate::transport::Transport;

/// The raft group every simulated member serves.
pub const GROUP: u64 = 1;

/// Collects what a driver sends, for the simulated network to carry.
#[derive(Clone, Default)]
pub struct Outbox(Arc<Mutex<Vec<Message>>>);

impl Transport for Outbox {
    fn send(&self, messages: Vec<Message>) {
        self.0.lock().extend(messages);
    }
}

impl Outbox {
    /// Everything sent so far.
    pub fn take(&self) -> Vec<Message> {
        std::mem::take(&mut *self.0.lock())
    }
}

/// How every member of one seed keeps its raft log: small numbers, so that
/// logs are compacted, segments deleted and snapshots needed often.
#[derive(Debug, Clone, Copy)]
pub struct LogPolicy {
    pub compact_log_entries: u64,
    pub compact_keep_entries: u64,
    pub max_segment_bytes: u64,
}

/// A running member: what dies with it at a crash.
pub struct Live {
    pub driver: Driver,
    pub shared: Arc<Shared>,
    /// Its raft log's writes, queued for the disk.
    pub io: SimIo,
    pub worker: Worker,
    events: broadcast::Receiver<RaftEvent>,
}

pub struct SimNode {
    pub id: u64,
    pub live: Option<Live>,
    pub outbox: Outbox,
    pub fs: FaultFs,
    /// Where its snapshots are built and staged, on the real disk (the
    /// snapshot thread and transport use std::fs).
    snapshot_root: PathBuf,
    /// The initial voters; empty for a member that joins later, which
    /// starts with an empty log and is caught up by a snapshot.
    voters: Vec<u64>,
    pub policy: LogPolicy,
    /// Counts starts: a snapshot sent by an earlier life is not reported
    /// to this one (the real transport's task dies with the process).
    pub generation: u64,
    /// The log index of the change that made it a member (the bootstrap
    /// index for the initial voters); `None` while its addition is not
    /// known to be committed.
    pub admitted_at: Option<u64>,
    /// Keeps running after its removal is applied, as a member an operator
    /// has not stopped yet; the simulation otherwise stops it at once.
    pub kept_after_removal: bool,
    /// Its disk was replaced while it was down ([`SimNode::wipe`]): the one
    /// member allowed to report lost state.
    pub wiped: bool,
    /// A test injects disk faults into it: a storage failure is expected
    /// (the test then crashes and restarts it).
    pub disk_faults: bool,
    /// How its reads confirm leadership.
    pub read_mode: ReadMode,
    /// The simulation's clock, which its lease is measured on.
    pub clock: Clock,
    /// Stopped until this simulated millisecond: it neither ticks nor
    /// runs rounds nor finishes writes, and what is sent to it waits (a
    /// paused process).
    pub paused_until: Option<u64>,
    /// Simulated milliseconds spent paused so far: its read timeout counts
    /// ticks, which stop meanwhile.
    pub paused_ms: u64,
}

impl SimNode {
    pub fn new(id: u64, voters: Vec<u64>, root: &Path, policy: LogPolicy) -> Self {
        let admitted_at = (!voters.is_empty()).then_some(BOOTSTRAP_INDEX);
        SimNode {
            id,
            live: None,
            outbox: Outbox::default(),
            fs: FaultFs::new(),
            snapshot_root: root.join(format!("node{id}")).join("snapshots"),
            voters,
            policy,
            generation: 0,
            admitted_at,
            kept_after_removal: false,
            wiped: false,
            disk_faults: false,
            read_mode: ReadMode::Safe,
            clock: Clock::Monotonic,
            paused_until: None,
            paused_ms: 0,
        }
    }

    pub fn start(&mut self) {
        let engine = Engine::open_with_fs(
            Arc::new(self.fs.clone()),
            Path::new("/engine"),
            Options {
                wal: WalMode::NoSync,
                // The engine's background thread is a real thread, outside
                // the simulation's clock, so nothing the simulation sees may
                // depend on how far it got. The driver holds entries back
                // while the engine would make a write wait: without the L0
                // stop, only a full memtable queue stalls, which 64 MiB
                // memtables never reach here. And a snapshot holds the
                // engine's files as they are: without compactions, the
                // only background work is the flushes the snapshot thread
                // asks for and waits on, so which files a snapshot holds
                // (and a stream cut short leaves out) is the seed's. So a
                // seed replays exactly.
                l0_slowdown_trigger: usize::MAX,
                l0_stop_trigger: usize::MAX,
                l0_compaction_trigger: usize::MAX - 1,
                ..Options::default()
            },
        )
        .expect("engine opens");
        let sm = Arc::new(StateMachine::new(Arc::new(engine), GROUP));
        let mut config =
            PeerConfig::new(self.id, GROUP, self.voters.clone(), PathBuf::from("/raft"));
        config.log_fs = Arc::new(self.fs.clone());
        config.snapshot_root = self.snapshot_root.clone();
        config.compact_log_entries = self.policy.compact_log_entries;
        config.compact_keep_entries = self.policy.compact_keep_entries;
        config.max_segment_bytes = self.policy.max_segment_bytes;
        config.members = Members::default();
        config.read_mode = self.read_mode;
        let dirs = SnapshotDirs::new(config.snapshot_root.clone()).expect("snapshot dir");
        let (senders, inbox) = mailbox(1024, 1024);
        // The real peer's queue size; the simulation runs the jobs itself.
        let (jobs_tx, jobs_rx) = crossbeam_channel::bounded(4);
        let io = Arc::new(Mutex::new(None));
        let log_io = {
            let io = io.clone();
            Box::new(move |writer| {
                let queue = SimIo::new(writer);
                *io.lock() = Some(queue.clone());
                Ok(Box::new(queue) as Box<dyn crate::log::io::LogIo>)
            })
        };
        let mut driver = Driver::new(
            &config,
            sm.clone(),
            inbox,
            Box::new(self.outbox.clone()),
            dirs.clone(),
            jobs_tx,
            Workers {
                log_io,
                // Applied in the round, so that a seed replays exactly.
                applier: Box::new(InlineApplier::new(sm.clone())),
            },
        )
        .expect("driver starts");
        let io = io.lock().take();
        driver.set_clock(self.clock.clone());
        let shared = Arc::new(Shared::new(
            senders,
            driver.status(),
            sm,
            dirs,
            driver.metrics().clone(),
            driver.stamps(),
        ));
        let events = shared.events.subscribe();
        self.generation += 1;
        self.live = Some(Live {
            driver,
            shared,
            io: io.expect("the driver took its writer"),
            worker: Worker::new(jobs_rx),
            events,
        });
    }

    /// Power loss: what was not fsynced is gone, and so are the snapshot
    /// jobs that had not finished. The file system crashes first, so that
    /// nothing the dying member does afterwards reaches the disk.
    pub fn crash(&mut self) {
        self.crash_with(|fs| fs.crash());
    }

    /// Power loss on `disk`: of what was not fsynced (fsyncs under way
    /// included), each file keeps a seeded subset of its pages.
    pub fn crash_reordered(&mut self, disk: &Disk, rng: &mut StdRng) {
        self.crash_with(|fs| fs.crash_reordered(disk.page_bytes, || rng.random()));
    }

    fn crash_with(&mut self, crash: impl FnOnce(&FaultFs) -> FaultFs) {
        let Some(live) = self.live.take() else {
            return;
        };
        // The paused process is gone; the next one starts running.
        self.paused_until = None;
        self.fs = crash(&self.fs);
        drop(live);
        self.outbox.take();
    }

    /// Whether a group of its log writes is being synced.
    pub fn syncing(&self) -> bool {
        self.live.as_ref().is_some_and(|l| l.io.0.lock().syncing())
    }

    /// Its disk is replaced: the member stops and its next start finds
    /// nothing, neither raft log nor engine nor snapshots, and bootstraps
    /// as a fresh member under the same id, like a node started with its
    /// old command line on an empty data directory.
    pub fn wipe(&mut self) {
        self.live = None;
        self.outbox.take();
        self.fs = FaultFs::new();
        let _ = std::fs::remove_dir_all(&self.snapshot_root);
        self.wiped = true;
    }

    pub fn is_up(&self) -> bool {
        self.live.is_some()
    }

    /// Whether it is paused at simulated millisecond `now`.
    pub fn is_paused(&self, now: u64) -> bool {
        self.paused_until.is_some_and(|until| now < until)
    }

    /// Counts the snapshot events the driver published since the last call.
    pub fn count_events(&mut self, stats: &mut Stats) {
        let Some(live) = &mut self.live else { return };
        while let Ok(e) = live.events.try_recv() {
            match e.kind {
                RaftEventKind::SnapshotSent => stats.snapshots_sent += 1,
                RaftEventKind::SnapshotInstalled => stats.snapshots_installed += 1,
                _ => {}
            }
        }
    }
}
