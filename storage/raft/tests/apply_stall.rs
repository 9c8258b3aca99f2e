//! A three-member group run in process whose leader's engine stalls its
//! writes: its background thread cannot write a table (the file system
//! holds the creation of every `.sst` back while a gate is closed), so
//! frozen memtables pile up and the engine makes writers wait. The leader's
//! raft thread must keep ticking and sending heartbeats through such a
//! stall, so that the followers do not elect another leader.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use strata_engine::{Engine, Options, WalMode};
use strata_fs::{FileLock, FileSystem, RandomAccessFile, StdFs, WritableFile};
use strata_raft::{Command, Message, Peer, PeerConfig, PeerHandle, StateMachine, Transport};

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

/// Hands each message straight to its target.
#[derive(Clone, Default)]
struct Network {
    members: Arc<RwLock<HashMap<u64, PeerHandle>>>,
}

impl Transport for Network {
    fn send(&self, messages: Vec<Message>) {
        let members = self.members.read();
        for m in messages {
            if let Some(to) = members.get(&m.to) {
                to.step(m);
            }
        }
    }
}

const TICK: Duration = Duration::from_millis(5);
const ELECTION_TICKS: usize = 10;

/// Starts members 1, 2 and 3, each on an engine of its own gated file
/// system, with memtables small enough that a few writes fill them and
/// room for one frozen memtable only, so that one table the background
/// cannot write stalls the engine.
fn start_group(dir: &Path, net: &Network) -> Vec<(Peer, Arc<GatedFs>)> {
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

/// Waits until one member leads and returns its position.
async fn leader(members: &[(Peer, Arc<GatedFs>)]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(at) = members.iter().position(|(p, _)| {
            let s = p.handle().status();
            s.leader_id == s.id
        }) {
            return at;
        }
        assert!(Instant::now() < deadline, "no leader elected");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The highest term any member reached: each election raises it by one
/// (pre-vote keeps a failed campaign from raising it).
fn highest_term(members: &[(Peer, Arc<GatedFs>)]) -> u64 {
    members
        .iter()
        .map(|(p, _)| p.handle().status().term)
        .max()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_engine_write_stall_causes_no_election() {
    // Proves that a leader whose engine stalls writes for many election
    // timeouts keeps its office: its raft thread goes on ticking and
    // sending heartbeats while the committed entries wait for the engine,
    // so the followers hold no election; the writes taken meanwhile are all
    // answered, applied, once the engine takes writes again.
    const WRITES: usize = 64;
    const WRITERS: usize = 4;
    const VALUE: usize = 2 << 10;
    const STALL: Duration = Duration::from_secs(2);
    let dir = tempfile::tempdir().expect("tempdir");
    let net = Network::default();
    let members = start_group(dir.path(), &net);
    let at = leader(&members).await;
    let leader = members[at].0.handle();
    leader
        .propose(Command::Put {
            key: b"first".to_vec(),
            value: b"1".to_vec(),
        })
        .await
        .expect("a first write commits");
    let term = highest_term(&members);

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
    tokio::time::sleep(STALL).await;
    let waiting = writes.iter().filter(|w| !w.is_finished()).count();
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
    let elections = highest_term(&members) - term;
    let timeout = TICK * ELECTION_TICKS as u32;
    assert_eq!(
        elections,
        0,
        "{elections} election(s) while the leader's engine stalled writes for \
         {STALL:?} ({} election timeouts); {waiting} of {WRITERS} writers were waiting",
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
    let held = leader
        .state_machine()
        .scan(b"k", Some(b"l"), WRITES + 1)
        .expect("scan");
    assert_eq!(held.len(), WRITES, "every write is applied on the leader");
}
