//! A three-member group run in process for the stall tests: each member's
//! engine and raft log on a file system whose table creation, log fsyncs
//! and identity fsyncs can be held back while a gate is closed, a network that can cut
//! one member off, and a count of the elections the members report.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use strata_engine::{Engine, Options, WalMode};
use strata_fs::{FileLock, FileSystem, RandomAccessFile, StdFs, WritableFile};
use strata_raft::snapshot::list_files;
use strata_raft::{
    Message, MessageType, Peer, PeerConfig, PeerHandle, RaftEvent, RaftEventKind, StateMachine,
    Transport,
};
use tokio::sync::broadcast;

/// The real file system, except that creating a table waits while its
/// gate is closed (a disk too slow for the engine's flushes), a raft log
/// segment's fsync waits while the log's gate is closed, and an append to
/// the engine's WAL while the WAL's gate is.
#[derive(Debug, Default)]
pub struct GatedFs {
    /// Creating a table waits while set.
    pub closed: AtomicBool,
    /// A raft log segment's fsync waits while set: a disk whose syncs
    /// stall.
    pub log_syncs_closed: Arc<AtomicBool>,
    /// An append to the engine's WAL waits while set: an engine write that
    /// takes long without being a stall (the engine would not say it
    /// waits).
    pub wal_appends_closed: Arc<AtomicBool>,
    /// The fsync of a new identity file (written when the member is
    /// proven) waits while set.
    pub identity_syncs_closed: Arc<AtomicBool>,
}

/// A file whose appends or fsyncs wait while their gate is closed.
struct GatedFile {
    file: Arc<dyn WritableFile>,
    appends: Option<Arc<AtomicBool>>,
    syncs: Option<Arc<AtomicBool>>,
}

fn wait_while(gate: &Option<Arc<AtomicBool>>) {
    while gate.as_ref().is_some_and(|g| g.load(Ordering::Acquire)) {
        std::thread::sleep(Duration::from_millis(1));
    }
}

impl WritableFile for GatedFile {
    fn append(&self, data: &[u8]) -> io::Result<()> {
        wait_while(&self.appends);
        self.file.append(data)
    }
    fn sync(&self) -> io::Result<()> {
        wait_while(&self.syncs);
        self.file.sync()
    }
    fn truncate(&self, len_bytes: u64) -> io::Result<()> {
        self.file.truncate(len_bytes)
    }
    fn preallocate(&self, len_bytes: u64) -> io::Result<()> {
        self.file.preallocate(len_bytes)
    }
}

impl GatedFs {
    fn gated(&self, path: &Path, file: Arc<dyn WritableFile>) -> Arc<dyn WritableFile> {
        if path.file_name().is_some_and(|n| n == "identity.tmp") {
            return Arc::new(GatedFile {
                file,
                appends: None,
                syncs: Some(self.identity_syncs_closed.clone()),
            });
        }
        match path.extension().and_then(|e| e.to_str()) {
            Some("rlog") => Arc::new(GatedFile {
                file,
                appends: None,
                syncs: Some(self.log_syncs_closed.clone()),
            }),
            Some("wal") => Arc::new(GatedFile {
                file,
                appends: Some(self.wal_appends_closed.clone()),
                syncs: None,
            }),
            _ => file,
        }
    }

    fn wait_for_gate(&self, path: &Path) {
        if path.extension().is_some_and(|e| e == "sst") {
            while self.closed.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

impl FileSystem for GatedFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        StdFs.create_dir_all(dir)
    }
    fn create(&self, path: &Path) -> io::Result<Arc<dyn WritableFile>> {
        self.wait_for_gate(path);
        Ok(self.gated(path, StdFs.create(path)?))
    }
    fn open_append(&self, path: &Path) -> io::Result<Arc<dyn WritableFile>> {
        Ok(self.gated(path, StdFs.open_append(path)?))
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        StdFs.open(path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        StdFs.list_dir(dir)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        StdFs.exists(path)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        StdFs.remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        StdFs.rename(from, to)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        StdFs.hard_link(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        StdFs.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        StdFs.lock(path)
    }
}

/// Hands each message straight to its target, except those to or from the
/// member cut off; a snapshot's files are staged in the target's incoming
/// directory first, as the server's snapshot stream does, and the sender
/// is told how it ended.
#[derive(Clone, Default)]
pub struct Network {
    pub members: Arc<RwLock<HashMap<u64, PeerHandle>>>,
    /// The id of the member whose messages are lost both ways; 0 for none.
    pub cut_off: Arc<AtomicU64>,
    /// Snapshots handed to their target so far.
    pub snapshots: Arc<AtomicU64>,
    /// The payload bytes of the appends handed to each member so far.
    pub append_bytes: Arc<RwLock<HashMap<u64, u64>>>,
}

impl Transport for Network {
    fn send(&self, messages: Vec<Message>) {
        let members = self.members.read();
        let cut_off = self.cut_off.load(Ordering::Relaxed);
        for m in messages {
            if cut_off != 0 && (m.to == cut_off || m.from == cut_off) {
                continue;
            }
            let (Some(from), Some(to)) = (members.get(&m.from), members.get(&m.to)) else {
                continue;
            };
            if m.get_msg_type() == MessageType::MsgAppend {
                let bytes: usize = m.get_entries().iter().map(|e| e.data.len()).sum();
                *self.append_bytes.write().entry(m.to).or_default() += bytes as u64;
            }
            let stamp = from.stamp_to(m.to);
            if m.get_msg_type() != MessageType::MsgSnapshot {
                to.step(m, stamp);
                continue;
            }
            let target = m.to;
            match stage_snapshot(from, to, &m) {
                Ok(()) => {
                    self.snapshots.fetch_add(1, Ordering::Relaxed);
                    to.step(m, stamp);
                    from.report_snapshot(target, true);
                }
                Err(e) => {
                    eprintln!("staging a snapshot for {target}: {e}");
                    from.report_snapshot(target, false);
                }
            }
        }
    }
}

/// Copies the snapshot `m` names from the sender's outgoing directory to
/// the receiver's incoming one (through a partial copy of its own, published
/// once complete, like the server).
fn stage_snapshot(from: &PeerHandle, to: &PeerHandle, m: &Message) -> io::Result<()> {
    let name = String::from_utf8_lossy(&m.get_snapshot().data).into_owned();
    let source = from
        .snapshot_dirs()
        .outgoing(&name)
        .ok_or_else(|| io::Error::other(format!("`{name}` is no outgoing snapshot")))?;
    let meta = m.get_snapshot().get_metadata();
    let dirs = to.snapshot_dirs();
    let partial = dirs.partial_incoming(meta.index, meta.term);
    for rel in list_files(&source)? {
        let path = partial.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(source.join(&rel), path)?;
    }
    // The copy carries the checkpoint's manifest, which marks it whole.
    dirs.publish_incoming(&partial, meta.index, meta.term)
        .map(|_| ())
}

/// The election timeout is 200 ms to 400 ms: long enough that a machine
/// busy with other work does not cause elections of its own, short
/// against the 3 s stalls.
pub const TICK: Duration = Duration::from_millis(10);
pub const ELECTION_TICKS: usize = 20;

/// Held by each test for its whole run: the tests count elections, and
/// three groups starving each other of the CPU could cause some.
pub static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Starts members 1, 2 and 3, each on an engine of its own gated file
/// system, with memtables small enough that a few writes fill them and
/// room for one frozen memtable only, so that one table the background
/// cannot write stalls the engine.
pub fn start_group(
    dir: &Path,
    net: &Network,
    tune: impl Fn(&mut PeerConfig),
) -> Vec<(Peer, Arc<GatedFs>)> {
    start_group_with_wal(dir, net, WalMode::Disabled, tune)
}

/// Like [`start_group`], with the engines' WAL in `wal` mode (a raft node
/// runs without one; a WAL gives an engine write a file to wait on).
pub fn start_group_with_wal(
    dir: &Path,
    net: &Network,
    wal: WalMode,
    tune: impl Fn(&mut PeerConfig),
) -> Vec<(Peer, Arc<GatedFs>)> {
    let members: Vec<(Peer, Arc<GatedFs>)> = (1..=3)
        .map(|id| {
            let fs = Arc::new(GatedFs::default());
            let engine = Engine::open_with_fs(
                fs.clone(),
                &dir.join(format!("engine-{id}")),
                Options {
                    wal,
                    memtable_size_bytes: 16 << 10,
                    max_immutable_memtables: 1,
                    ..Options::default()
                },
            )
            .expect("engine");
            let sm = Arc::new(StateMachine::new(Arc::new(engine), 1));
            let mut config = PeerConfig::new(id, 1, vec![1, 2, 3], dir.join(format!("raft-{id}")));
            config.tick = TICK;
            config.election_ticks = ELECTION_TICKS;
            // Longer than the stall: a read waits it out rather than
            // being told to retry.
            config.read_timeout = Duration::from_secs(10);
            config.log_fs = fs.clone();
            tune(&mut config);
            (
                Peer::start(config, sm, net.clone()).expect("peer starts"),
                fs,
            )
        })
        .collect();
    let mut handles = net.members.write();
    for (peer, _) in &members {
        handles.insert(peer.handle().status().id, peer.handle());
    }
    drop(handles);
    members
}

/// Waits until one member leads and every member knows it; returns its
/// position.
pub async fn leader(members: &[(Peer, Arc<GatedFs>)]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let statuses: Vec<_> = members.iter().map(|(p, _)| p.handle().status()).collect();
        let leading = statuses.iter().position(|s| s.leader_id == s.id);
        if let Some(at) = leading
            && statuses.iter().all(|s| s.leader_id == statuses[at].id)
        {
            return at;
        }
        assert!(Instant::now() < deadline, "no leader elected");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Counts what every member reports from the moment it is made: the
/// elections started (pre-vote or vote) and the leaders learned or lost.
pub struct Elections(Vec<broadcast::Receiver<RaftEvent>>);

impl Elections {
    pub fn watch<'a>(members: impl IntoIterator<Item = &'a (Peer, Arc<GatedFs>)>) -> Self {
        Elections(
            members
                .into_iter()
                .map(|(p, _)| p.handle().subscribe())
                .collect(),
        )
    }

    /// Waits five election timeouts, so that an election a stall caused
    /// has begun and been reported (a member reports its events once its
    /// thread runs again), then returns the elections started and the
    /// leader changes seen.
    pub async fn settle_and_count(&mut self) -> (usize, usize) {
        tokio::time::sleep(TICK * ELECTION_TICKS as u32 * 5).await;
        let (mut elections, mut leader_changes) = (0, 0);
        for events in &mut self.0 {
            loop {
                match events.try_recv() {
                    Ok(e) if e.kind == RaftEventKind::ElectionStarted => elections += 1,
                    Ok(e) if e.kind == RaftEventKind::LeaderChanged => leader_changes += 1,
                    Ok(_) => {}
                    Err(broadcast::error::TryRecvError::Lagged(n)) => {
                        panic!("{n} events were lost before they were counted")
                    }
                    Err(_) => break,
                }
            }
        }
        (elections, leader_changes)
    }
}

/// Waits until `follower` has applied `commit`, then checks that it holds
/// the `writes` keys the tests write under `k`.
pub async fn assert_catches_up(
    follower: &PeerHandle,
    commit: u64,
    writes: usize,
    within: Duration,
) {
    let deadline = Instant::now() + within;
    while follower.status().applied_index < commit {
        assert!(
            Instant::now() < deadline,
            "the follower never caught up: {:?}",
            follower.status()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let held = follower
        .state_machine()
        .scan(b"k", Some(b"l"), writes + 1)
        .expect("scan");
    assert_eq!(held.len(), writes, "the follower holds every write");
}
