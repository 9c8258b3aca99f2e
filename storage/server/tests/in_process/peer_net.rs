//! The raft transport's control lane on threads of its own: a node hears its
//! peers while every worker of its request runtime is busy.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use strata_proto::v1::RaftBatch;
use strata_proto::v1::raft_client::RaftClient;
use strata_raft::{Message, MessageType, PeerHandle, RaftEventKind, Role};
use strata_server::NodeConfig;
use strata_server::node::Node;
use strata_server::peer_net::peer_channel;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

/// How long the request runtime's only worker stays busy.
const BUSY_FOR: Duration = Duration::from_secs(3);
/// How soon the peer's message must have been stepped.
const HEARD_WITHIN: Duration = Duration::from_secs(1);

fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A runtime for a node's requests with one worker, which a test can keep
/// busy.
fn request_runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// Keeps every worker of `requests` (it has one) busy for `BUSY_FOR`, from
/// the moment this returns.
fn keep_busy(requests: &Runtime) -> Instant {
    let (busy_tx, busy) = std::sync::mpsc::channel();
    requests.spawn(async move {
        busy_tx.send(()).unwrap();
        std::thread::sleep(BUSY_FOR);
    });
    busy.recv().unwrap();
    Instant::now()
}

/// Node `config.id` served on `listener` by `requests`, until `stop` is sent.
fn serve(
    requests: &Runtime,
    listener: std::net::TcpListener,
    config: NodeConfig,
) -> (PeerHandle, oneshot::Sender<()>) {
    requests.block_on(async {
        listener.set_nonblocking(true).unwrap();
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        let node = Node::start(config).await.unwrap();
        let raft = node.raft();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(node.serve(listener, async move {
            let _ = stopped.await;
        }));
        (raft, stop)
    })
}

fn bind() -> (std::net::TcpListener, SocketAddr) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    (listener, address)
}

#[test]
fn a_peer_is_heard_while_every_request_worker_is_busy() {
    // Proves: a raft message that a peer sends on a new control-lane
    // connection is accepted, read and stepped while the node's request
    // runtime cannot run a single task. Before the lane had threads of its
    // own, the message waited for the runtime (here 3 s); heartbeats that
    // wait like that start elections against a leader that is alive.
    let dir = tempfile::tempdir().unwrap();
    let requests = request_runtime();
    let (listener, address) = bind();
    let (raft, stop) = serve(
        &requests,
        listener,
        NodeConfig::single(1, address, dir.path().into()),
    );
    wait_until("the node leads", Duration::from_secs(10), || {
        raft.status().role == Role::Leader
    });
    let term = raft.status().term;

    // The request runtime's only worker computes, as a worker decoding a
    // 15 MiB request does, only longer.
    let busy_since = keep_busy(&requests);

    // A peer that leads a later term says so with a heartbeat.
    let mut heartbeat = Message {
        from: 2,
        to: 1,
        term: term + 10,
        ..Message::default()
    };
    heartbeat.set_msg_type(MessageType::MsgHeartbeat);
    let peer_side = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    peer_side.block_on(async {
        let channel = peer_channel(&address.to_string(), None).unwrap();
        let sent = tokio::time::timeout(
            HEARD_WITHIN,
            RaftClient::new(channel).send(RaftBatch {
                group_id: 1,
                from_node: 2,
                to_node: 1,
                messages: vec![strata_raft::encode_message(&heartbeat).into()],
                ..RaftBatch::default()
            }),
        )
        .await;
        assert!(
            matches!(sent, Ok(Ok(_))),
            "the node did not take the batch within {HEARD_WITHIN:?} of its runtime going busy: {sent:?}"
        );
    });
    wait_until("the heartbeat is stepped", HEARD_WITHIN, || {
        raft.status().term >= term + 10
    });
    assert!(
        busy_since.elapsed() < BUSY_FOR,
        "the request runtime was free again before the check ended"
    );

    let _ = stop.send(());
    drop(peer_side);
    requests.shutdown_timeout(Duration::from_secs(10));
}

#[test]
fn a_group_holds_no_election_while_a_members_request_workers_are_busy() {
    // Proves, both ways: a leader whose request runtime cannot run a task
    // still sends heartbeats and hears the answers, and a follower in that
    // state still hears them and answers; neither member starts an
    // election, and the term and leader stay. The election timeout here
    // (300-600 ms) is a tenth of the time the runtime stays busy.
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let (listeners, addresses): (Vec<_>, Vec<_>) = (0..2).map(|_| bind()).unzip();
    let peers: Vec<(u64, String)> = addresses
        .iter()
        .enumerate()
        .map(|(i, a)| (i as u64 + 1, a.to_string()))
        .collect();
    let runtimes = [request_runtime(), request_runtime()];
    let mut nodes = Vec::new();
    for (i, listener) in listeners.into_iter().enumerate() {
        let mut config = NodeConfig::single(i as u64 + 1, addresses[i], dirs[i].path().into());
        config.peers = peers.clone();
        config.timing.election_ticks = 30;
        config.timing.heartbeat_ticks = 3;
        nodes.push(serve(&runtimes[i], listener, config));
    }
    let leader_known = || {
        let (a, b) = (nodes[0].0.status(), nodes[1].0.status());
        (a.leader_id != 0 && a.leader_id == b.leader_id && a.term == b.term).then_some(a)
    };
    wait_until(
        "both members know one leader",
        Duration::from_secs(10),
        || leader_known().is_some(),
    );
    let before = leader_known().unwrap();
    let leader = before.leader_id as usize - 1;
    let mut events: Vec<_> = nodes.iter().map(|(raft, _)| raft.subscribe()).collect();

    for (busy, role) in [(leader, "leader"), (1 - leader, "follower")] {
        let since = keep_busy(&runtimes[busy]);
        std::thread::sleep(BUSY_FOR + Duration::from_millis(500));
        assert!(since.elapsed() > BUSY_FOR);
        for (i, events) in events.iter_mut().enumerate() {
            while let Ok(event) = events.try_recv() {
                assert_ne!(
                    event.kind,
                    RaftEventKind::ElectionStarted,
                    "node {} started an election while the {role}'s request workers were busy: {event:?}",
                    i + 1
                );
            }
        }
        let after = leader_known().expect("one leader after the busy time");
        assert_eq!(
            (after.leader_id, after.term),
            (before.leader_id, before.term),
            "leadership changed while the {role}'s request workers were busy"
        );
    }

    for ((_, stop), requests) in nodes.into_iter().zip(runtimes) {
        let _ = stop.send(());
        requests.shutdown_timeout(Duration::from_secs(10));
    }
}
