//! Blocking work on a member's raft thread, and the elections it costs: a
//! three-member group run in process, each member's engine on a file
//! system that can hold the creation of every table (`.sst`) back while a
//! gate is closed. With the gate closed the engine's background thread
//! cannot flush: frozen memtables pile up and the engine makes writers
//! wait, and a flush asked for does not finish. A leader's raft thread
//! must keep ticking and sending heartbeats through such a stall, so that
//! the followers do not elect another leader.

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
    Command, Message, MessageType, Peer, PeerConfig, PeerHandle, RaftEvent, RaftEventKind,
    StateMachine, Transport,
};
use tokio::sync::broadcast;

/// The real file system, except that creating a table waits while the
/// gate is closed: a disk too slow for the engine's flushes.
#[derive(Debug, Default)]
struct GatedFs {
    closed: AtomicBool,
}

impl GatedFs {
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
        StdFs.create(path)
    }
    fn open_append(&self, path: &Path) -> io::Result<Arc<dyn WritableFile>> {
        StdFs.open_append(path)
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
struct Network {
    members: Arc<RwLock<HashMap<u64, PeerHandle>>>,
    /// The id of the member whose messages are lost both ways; 0 for none.
    cut_off: Arc<AtomicU64>,
    /// Snapshots handed to their target so far.
    snapshots: Arc<AtomicU64>,
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
            if m.get_msg_type() != MessageType::MsgSnapshot {
                to.step(m);
                continue;
            }
            let target = m.to;
            match stage_snapshot(from, to, &m) {
                Ok(()) => {
                    self.snapshots.fetch_add(1, Ordering::Relaxed);
                    to.step(m);
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
const TICK: Duration = Duration::from_millis(10);
const ELECTION_TICKS: usize = 20;

/// Held by each test for its whole run: the tests count elections, and
/// three groups starving each other of the CPU could cause some.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Starts members 1, 2 and 3, each on an engine of its own gated file
/// system, with memtables small enough that a few writes fill them and
/// room for one frozen memtable only, so that one table the background
/// cannot write stalls the engine.
fn start_group(
    dir: &Path,
    net: &Network,
    tune: impl Fn(&mut PeerConfig),
) -> Vec<(Peer, Arc<GatedFs>)> {
    let members: Vec<(Peer, Arc<GatedFs>)> = (1..=3)
        .map(|id| {
            let fs = Arc::new(GatedFs::default());
            let engine = Engine::open_with_fs(
                fs.clone(),
                &dir.join(format!("engine-{id}")),
                Options {
                    wal: WalMode::Disabled,
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
async fn leader(members: &[(Peer, Arc<GatedFs>)]) -> usize {
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
struct Elections(Vec<broadcast::Receiver<RaftEvent>>);

impl Elections {
    fn watch<'a>(members: impl IntoIterator<Item = &'a (Peer, Arc<GatedFs>)>) -> Self {
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
    async fn settle_and_count(&mut self) -> (usize, usize) {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_engine_write_stall_causes_no_election() {
    // Proves that a leader whose engine stalls writes for many election
    // timeouts keeps its office: its raft thread goes on ticking and
    // sending heartbeats while the committed entries wait for the engine,
    // so the followers hold no election; the writes taken meanwhile are all
    // answered, applied, once the engine takes writes again, and a read
    // taken during the stall is served only once the leader has applied
    // what was committed when it was taken.
    const WRITES: usize = 64;
    const WRITERS: usize = 4;
    const VALUE: usize = 2 << 10;
    const STALL: Duration = Duration::from_secs(3);
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Network::default();
    let members = start_group(dir.path(), &net, |_| {});
    let at = leader(&members).await;
    let leader = members[at].0.handle();
    leader
        .propose(Command::Put {
            key: b"first".to_vec(),
            value: b"1".to_vec(),
        })
        .await
        .expect("a first write commits");
    let mut watch = Elections::watch(&members);

    members[at].1.closed.store(true, Ordering::Release);
    // Writers one after the other, so that they reach the engine in many
    // small batches: each fills the memtable a little more, and one of them
    // finds it full with the frozen one not yet flushed.
    let writes: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let leader = leader.clone();
            tokio::spawn(async move {
                let mut outcomes = Vec::with_capacity(WRITES / WRITERS);
                for i in (writer..WRITES).step_by(WRITERS) {
                    let outcome = leader
                        .propose(Command::Put {
                            key: format!("k{i:04}").into_bytes(),
                            value: vec![b'v'; VALUE],
                        })
                        .await;
                    outcomes.push(outcome);
                }
                outcomes
            })
        })
        .collect();
    // A linearizable read taken during the stall must wait for the leader
    // to apply up to its read index: committed writes are held back, so
    // answering it now could miss them.
    tokio::time::sleep(STALL / 2).await;
    let committed_before_read = leader.status().commit_index;
    let read = tokio::spawn({
        let leader = leader.clone();
        async move { leader.read_index().await }
    });
    tokio::time::sleep(STALL / 2).await;
    let waiting = writes.iter().filter(|w| !w.is_finished()).count();
    let read_waiting = !read.is_finished();
    let status = leader.status();
    members[at].1.closed.store(false, Ordering::Release);
    assert!(
        waiting > 0,
        "every writer was done while the leader's engine could not flush: \
         the engine never stalled"
    );

    let mut outcomes = Vec::with_capacity(WRITES);
    for w in writes {
        let answered: Vec<_> = tokio::time::timeout(Duration::from_secs(20), w)
            .await
            .expect("every write is answered once the engine takes writes")
            .expect("the task ran");
        outcomes.extend(answered);
    }
    let (elections, leader_changes) = watch.settle_and_count().await;
    let timeout = TICK * ELECTION_TICKS as u32;
    eprintln!(
        "leader engine stalled for {STALL:?} ({} election timeouts): {elections} election(s), \
         {leader_changes} leader change(s)",
        STALL.as_millis() / timeout.as_millis()
    );
    assert_eq!(
        (elections, leader_changes),
        (0, 0),
        "{elections} election(s) and {leader_changes} leader change(s) while the leader's \
         engine stalled writes for {STALL:?} ({} election timeouts); {waiting} of {WRITERS} \
         writers were waiting",
        STALL.as_millis() / timeout.as_millis()
    );
    assert_eq!(
        leader.status().leader_id,
        leader.status().id,
        "the leader kept its office"
    );
    for (i, outcome) in outcomes.iter().enumerate() {
        assert!(outcome.is_ok(), "write {i}: {outcome:?}");
    }
    assert!(
        status.applied_index < status.commit_index,
        "the stalled leader applied all it committed: {status:?}"
    );
    assert!(
        read_waiting,
        "a read was answered while committed writes were held back from the engine"
    );
    let read_at = tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("the read is answered once the engine takes writes")
        .expect("the task ran")
        .expect("the read is served");
    assert!(
        read_at >= committed_before_read,
        "the read was served at {read_at}, before the index {committed_before_read} \
         committed when it was taken"
    );
    let held = leader
        .state_machine()
        .scan(b"k", Some(b"l"), WRITES + 1)
        .expect("scan");
    assert_eq!(held.len(), WRITES, "every write is applied on the leader");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_snapshot_install_stall_causes_no_election() {
    // Proves that a follower whose snapshot install takes many election
    // timeouts (its engine cannot flush, and an install makes its data
    // durable before it returns) costs the group no election: the install
    // runs on that follower's raft thread, which stops ticking with it, so
    // the follower never campaigns, and the leader keeps its quorum with
    // the other follower. Once the engine flushes again the install ends
    // and the follower holds every write.
    const WRITES: usize = 200;
    const STALL: Duration = Duration::from_secs(3);
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Network::default();
    let members = start_group(dir.path(), &net, |c| {
        c.compact_log_entries = 40;
        c.compact_keep_entries = 5;
    });
    let at = leader(&members).await;
    let leader = members[at].0.handle();
    let behind = (at + 1) % members.len();
    let follower = members[behind].0.handle();
    net.cut_off.store(follower.status().id, Ordering::Relaxed);
    for i in 0..WRITES {
        leader
            .propose(Command::Put {
                key: format!("k{i:04}").into_bytes(),
                value: vec![b'v'; 64],
            })
            .await
            .expect("writes commit without the cut-off member");
    }
    // The leader compacts its log behind a flush, off its raft thread;
    // give it time, so that only a snapshot can catch the follower up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The member cut off has been pre-voting alone and has no leader; it
    // learns of the leader again when it is reconnected, which is no
    // election. The two others tell whether the group held one.
    let mut watch = Elections::watch(
        members
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != behind)
            .map(|(_, m)| m),
    );
    let mut events = follower.subscribe();

    members[behind].1.closed.store(true, Ordering::Release);
    net.cut_off.store(0, Ordering::Relaxed);
    tokio::time::sleep(STALL).await;
    let installed_during_stall = std::iter::from_fn(|| events.try_recv().ok())
        .any(|e| e.kind == RaftEventKind::SnapshotInstalled);
    let delivered_during_stall = net.snapshots.load(Ordering::Relaxed);
    members[behind].1.closed.store(false, Ordering::Release);

    let commit = leader.status().commit_index;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut installed = false;
    while follower.status().applied_index < commit {
        assert!(
            Instant::now() < deadline,
            "the follower never caught up: {:?}",
            follower.status()
        );
        installed |= std::iter::from_fn(|| events.try_recv().ok())
            .any(|e| e.kind == RaftEventKind::SnapshotInstalled);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    installed |= std::iter::from_fn(|| events.try_recv().ok())
        .any(|e| e.kind == RaftEventKind::SnapshotInstalled);
    let (elections, leader_changes) = watch.settle_and_count().await;
    let timeout = TICK * ELECTION_TICKS as u32;
    eprintln!(
        "follower install stalled for {STALL:?} ({} election timeouts): {elections} election(s), \
         {leader_changes} leader change(s)",
        STALL.as_millis() / timeout.as_millis()
    );
    assert!(
        delivered_during_stall > 0,
        "no snapshot reached the follower while its engine could not flush"
    );
    assert!(
        !installed_during_stall,
        "the install finished while the follower's engine could not flush"
    );
    assert!(installed, "the follower caught up without a snapshot");
    assert_eq!(
        (elections, leader_changes),
        (0, 0),
        "{elections} election(s) and {leader_changes} leader change(s) while a follower's \
         snapshot install stalled for {STALL:?}"
    );
    let held = follower
        .state_machine()
        .scan(b"k", Some(b"l"), WRITES + 1)
        .expect("scan");
    assert_eq!(held.len(), WRITES, "the follower holds every write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_engine_write_stall_causes_no_election() {
    // Proves that when both followers' engines stall writes (a slow disk
    // shared by the machines, say) for many election timeouts, the
    // followers keep acknowledging appends: the leader keeps its quorum
    // and goes on committing, applying and answering writes, no election
    // is held, and the followers apply everything once their engines take
    // writes again.
    const WRITES: usize = 64;
    const WRITERS: usize = 4;
    const VALUE: usize = 2 << 10;
    const STALL: Duration = Duration::from_secs(3);
    let _alone = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Network::default();
    let members = start_group(dir.path(), &net, |_| {});
    let at = leader(&members).await;
    let leader = members[at].0.handle();
    let mut watch = Elections::watch(&members);
    let followers: Vec<usize> = (0..members.len()).filter(|&i| i != at).collect();
    for &f in &followers {
        members[f].1.closed.store(true, Ordering::Release);
    }
    let writes: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let leader = leader.clone();
            tokio::spawn(async move {
                let mut outcomes = Vec::with_capacity(WRITES / WRITERS);
                for i in (writer..WRITES).step_by(WRITERS) {
                    let outcome = leader
                        .propose(Command::Put {
                            key: format!("k{i:04}").into_bytes(),
                            value: vec![b'v'; VALUE],
                        })
                        .await;
                    outcomes.push(outcome);
                }
                outcomes
            })
        })
        .collect();
    tokio::time::sleep(STALL).await;
    let done = writes.iter().filter(|w| w.is_finished()).count();
    let stalled: Vec<u64> = followers
        .iter()
        .map(|&f| members[f].0.handle().state_machine().engine().stats())
        .map(|s| s.immutable_memtables as u64)
        .collect();
    for &f in &followers {
        members[f].1.closed.store(false, Ordering::Release);
    }
    let mut outcomes = Vec::with_capacity(WRITES);
    for w in writes {
        let answered: Vec<_> = tokio::time::timeout(Duration::from_secs(20), w)
            .await
            .expect("every write is answered")
            .expect("the task ran");
        outcomes.extend(answered);
    }
    let (elections, leader_changes) = watch.settle_and_count().await;
    let timeout = TICK * ELECTION_TICKS as u32;
    eprintln!(
        "followers' engines stalled for {STALL:?} ({} election timeouts): {elections} election(s), \
         {leader_changes} leader change(s)",
        STALL.as_millis() / timeout.as_millis()
    );
    assert!(
        stalled.iter().all(|&frozen| frozen > 0),
        "a follower's engine never held a frozen memtable it could not flush: {stalled:?}"
    );
    assert_eq!(
        (elections, leader_changes),
        (0, 0),
        "{elections} election(s) and {leader_changes} leader change(s) while the followers' \
         engines stalled writes for {STALL:?}"
    );
    assert_eq!(
        done, WRITERS,
        "the leader stopped answering writes while only its followers' engines stalled"
    );
    for (i, outcome) in outcomes.iter().enumerate() {
        assert!(outcome.is_ok(), "write {i}: {outcome:?}");
    }
    let commit = leader.status().commit_index;
    let deadline = Instant::now() + Duration::from_secs(20);
    for &f in &followers {
        let follower = members[f].0.handle();
        while follower.status().applied_index < commit {
            assert!(
                Instant::now() < deadline,
                "a follower never applied what was committed: {:?}",
                follower.status()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let held = follower
            .state_machine()
            .scan(b"k", Some(b"l"), WRITES + 1)
            .expect("scan");
        assert_eq!(held.len(), WRITES, "the follower holds every write");
    }
}
